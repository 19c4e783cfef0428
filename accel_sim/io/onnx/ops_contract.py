"""Contractions: MatMul, Gemm, Einsum, Conv, ConvTranspose (the only einsums with MACs).

Bias and output scaling of Conv/Gemm are separate map einsums after the contraction, so MACs stay exactly
``output elements x Cin/groups x kernel`` (Conv) and ``M x N x K`` (Gemm/MatMul). ConvTranspose is the
scatter form ``Y[n, m, s*i + d*r - pad] += X[n, c, i] * W[c, m, r]`` (MACs = input elements x Cout/groups
x kernel, every multiply the operator performs).
"""
from __future__ import annotations

from onnx import NodeProto

from accel_sim.io.onnx.graph import Graph, Handler, attrs, bcast, named_ranks, plain
from accel_sim.io.onnx.window import sliding_window, spatial_names, window_index
from accel_sim.spec.workload import Access, Affine, Call, Const, Expr

# Which inputs are (A, B) for matmul-like ops and (X, W, bias) for conv-like ops.
_MATMUL_INPUTS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
_CONV_INPUTS = {"Conv": (0, 1, 2), "ConvInteger": (0, 1, None), "QLinearConv": (0, 3, 8)}


def _matmul(g: Graph, node: NodeProto, index: int) -> None:
    ia, ib = _MATMUL_INPUTS[node.op_type]
    a_name, b_name, y = node.input[ia], node.input[ib], node.output[0]
    a, b = g.tensor(a_name, node, index).shape, g.tensor(b_name, node, index).shape
    yshape = g.tensor(y, node, index).shape
    k = a[-1]
    has_m, has_n = len(a) > 1, len(b) > 1
    batch = yshape[: len(yshape) - has_m - has_n]
    ranks = named_ranks("b", batch) + ([("m", a[-2])] if has_m else []) + ([("n", b[-1])] if has_n else []) + [("k", k)]
    batch_ranks = ranks[: len(batch)]
    a_idx = bcast(a_name, a[:-2], batch_ranks).indices + ((Affine.rank("m"),) if has_m else ()) + (Affine.rank("k"),)
    b_idx = (bcast(b_name, b[:-2], batch_ranks).indices if has_n else ()) + (Affine.rank("k"),) \
        + ((Affine.rank("n"),) if has_n else ())
    out = Access(y, plain(ranks[:-1]))
    g.add(g.node_name(node, index), out, Call("mul", (Access(a_name, a_idx), Access(b_name, b_idx))), ranks)


def _gemm(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    a_name, b_name, y = node.input[0], node.input[1], node.output[0]
    a, b = g.tensor(a_name, node, index).shape, g.tensor(b_name, node, index).shape
    yt = g.tensor(y, node, index)
    ta, tb = at.get("transA", 0), at.get("transB", 0)
    m, k = (a[1], a[0]) if ta else (a[0], a[1])
    n = b[0] if tb else b[1]
    ranks = [("m", m), ("n", n), ("k", k)]
    mk = (Affine.rank("k"), Affine.rank("m")) if ta else (Affine.rank("m"), Affine.rank("k"))
    kn = (Affine.rank("n"), Affine.rank("k")) if tb else (Affine.rank("k"), Affine.rank("n"))
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
    name = g.node_name(node, index)
    acc = y if bias is None and alpha == 1.0 else g.fresh(f"{y}.matmul", (m, n), yt.bits)
    g.add(name, Access(acc, (Affine.rank("m"), Affine.rank("n"))),
          Call("mul", (Access(a_name, mk), Access(b_name, kn))), ranks)
    if acc != y:
        _epilogue(g, f"{name}.bias", y, acc, bias and bcast(bias, g.tensor(bias, node, index).shape, ranks[:2]),
                  alpha, beta, ranks[:2])


def _epilogue(g: Graph, name: str, y: str, acc: str, bias: Access | None, alpha: float, beta: float,
              ranks: list[tuple[str, int]]) -> None:
    """Y = alpha * acc + beta * bias as one map einsum (scales left out when they are 1)."""
    expr: Expr = Access(acc, plain(ranks))
    if alpha != 1.0:
        expr = Call("mul", (Const(alpha), expr))
    if bias is not None:
        expr = Call("add", (expr, bias if beta == 1.0 else Call("mul", (Const(beta), bias))))
    g.add(name, Access(y, plain(ranks)), expr, ranks)


def _einsum(g: Graph, node: NodeProto, index: int) -> None:
    equation = attrs(node)["equation"].decode().replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    shapes = [g.tensor(n, node, index).shape for n in node.input]
    yshape = g.tensor(node.output[0], node, index).shape
    ell = max((len(s) - len(t.replace("...", "")) for s, t in zip(shapes, terms) if "..." in t), default=0)

    def letters(term: str, rank: int) -> list[str]:
        if "..." not in term:
            return list(term)
        head, tail = term.split("...")
        return list(head) + [f"e{j}" for j in range(ell - (rank - len(head) - len(tail)), ell)] + list(tail)

    operand_ranks = [letters(t, len(s)) for t, s in zip(terms, shapes)]
    if not rhs and "->" not in equation:
        counts: dict[str, int] = {}
        for rs in operand_ranks:
            for r in rs:
                counts[r] = counts.get(r, 0) + 1
        rhs_ranks = [f"e{j}" for j in range(ell)] + sorted(r for r, c in counts.items()
                                                               if c == 1 and not r.startswith("e"))
    else:
        rhs_ranks = letters(rhs, len(yshape))
    sizes: dict[str, int] = {}
    for rs, s in zip(operand_ranks, shapes):
        for r, d in zip(rs, s):
            sizes[r] = max(sizes.get(r, 1), d)
    accesses = [Access(n, tuple(Affine.rank(r) if d == sizes[r] and d != 1 else Affine() for r, d in zip(rs, s)))
                for n, rs, s in zip(node.input, operand_ranks, shapes)]
    name, bits = g.node_name(node, index), g.tensors[node.output[0]].bits
    # Left-to-right pairwise contraction: each step keeps the ranks still needed later, so every
    # step is a plain two-operand contraction (one MAC per iteration point).
    expr: Expr = accesses[0]
    live = list(operand_ranks[0])
    for step, (acc, rs) in enumerate(zip(accesses[1:], operand_ranks[1:]), start=1):
        later = set(rhs_ranks).union(*(set(o) for o in operand_ranks[step + 1:]))
        union = list(dict.fromkeys(live + rs))
        keep = [r for r in union if r in later]
        is_last = step == len(accesses) - 1
        target = node.output[0] if is_last else g.fresh(f"{node.output[0]}.step{step}",
                                                         tuple(sizes[r] for r in keep), bits)
        out_ranks = rhs_ranks if is_last else keep
        g.add(f"{name}.{step}" if len(accesses) > 2 else name, Access(target, tuple(Affine.rank(r) for r in out_ranks)),
              Call("mul", (expr, acc)), [(r, sizes[r]) for r in union])
        expr, live = Access(target, tuple(Affine.rank(r) for r in keep)), keep
    if len(accesses) == 1:
        g.add(name, Access(node.output[0], tuple(Affine.rank(r) for r in rhs_ranks)), expr,
              [(r, sizes[r]) for r in operand_ranks[0]])


def _conv(g: Graph, node: NodeProto, index: int) -> None:
    ix, iw, ib = _CONV_INPUTS[node.op_type]
    at = attrs(node)
    x, w, y = node.input[ix], node.input[iw], node.output[0]
    xs, ws = g.tensor(x, node, index).shape, g.tensor(w, node, index).shape
    yt = g.tensor(y, node, index)
    groups = int(at.get("group", 1))
    spatial = len(xs) - 2
    win = sliding_window(at, xs[2:], yt.shape[2:], tuple(ws[2:]))
    outs, kers = spatial_names(spatial)
    cg, mg = ws[1], ws[0] // groups
    ranks = [("n", xs[0])] + ([("g", groups)] if groups > 1 else []) + [("m", mg), ("c", cg)] \
        + list(zip(outs, yt.shape[2:])) + list(zip(kers, win.kernel))
    grouped = (lambda size, r: Affine((("g", size), (r, 1)))) if groups > 1 else (lambda size, r: Affine.rank(r))
    taps = tuple(window_index(o, r, s, d, p)
                 for o, r, s, d, p in zip(outs, kers, win.strides, win.dilations, win.pad_begin))
    x_acc = Access(x, (Affine.rank("n"), grouped(cg, "c")) + taps)
    w_acc = Access(w, (grouped(mg, "m"), Affine.rank("c")) + tuple(Affine.rank(r) for r in kers))
    out_ix = (Affine.rank("n"), grouped(mg, "m")) + tuple(Affine.rank(o) for o in outs)
    bias = node.input[ib] if ib is not None and len(node.input) > ib and node.input[ib] else None
    name = g.node_name(node, index)
    acc = y if bias is None else g.fresh(f"{y}.conv", yt.shape, yt.bits)
    g.add(name, Access(acc, out_ix), Call("mul", (x_acc, w_acc)), ranks)
    if bias is not None:
        g.tensor(bias, node, index)
        out_ranks = named_ranks("d", yt.shape)
        _epilogue(g, f"{name}.bias", y, acc, Access(bias, (Affine.rank("d1"),)), 1.0, 1.0, out_ranks)


def _conv_transpose(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, w, y = node.input[0], node.input[1], node.output[0]
    xs, ws = g.tensor(x, node, index).shape, g.tensor(w, node, index).shape
    yt = g.tensor(y, node, index)
    groups = int(at.get("group", 1))
    spatial = len(xs) - 2
    kernel = tuple(ws[2:])
    strides = tuple(at.get("strides", [1] * spatial))
    dilations = tuple(at.get("dilations", [1] * spatial))
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # ONNX ConvTranspose spec: total_padding = stride*(in-1) + output_padding + ((k-1)*d+1) - out
        out_pad = tuple(at.get("output_padding", [0] * spatial))
        total = [s * (i - 1) + op + (k - 1) * d + 1 - o for s, i, op, k, d, o
                 in zip(strides, xs[2:], out_pad, kernel, dilations, yt.shape[2:])]
        pads = tuple(t - t // 2 if auto_pad == "SAME_UPPER" else t // 2 for t in total)
    else:
        pads = tuple(at.get("pads", [0] * 2 * spatial)[:spatial])
    ins, kers = spatial_names(spatial)
    cg, mg = xs[1] // groups, ws[1]
    ranks = [("n", xs[0])] + ([("g", groups)] if groups > 1 else []) + [("m", mg), ("c", cg)] \
        + list(zip(ins, xs[2:])) + list(zip(kers, kernel))
    grouped = (lambda size, r: Affine((("g", size), (r, 1)))) if groups > 1 else (lambda size, r: Affine.rank(r))
    x_acc = Access(x, (Affine.rank("n"), grouped(cg, "c")) + tuple(Affine.rank(i) for i in ins))
    w_acc = Access(w, (grouped(cg, "c"), Affine.rank("m")) + tuple(Affine.rank(r) for r in kers))
    out_ix = (Affine.rank("n"), grouped(mg, "m")) + tuple(
        window_index(i, r, s, d, p) for i, r, s, d, p in zip(ins, kers, strides, dilations, pads))
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    name = g.node_name(node, index)
    acc = y if bias is None else g.fresh(f"{y}.convT", yt.shape, yt.bits)
    g.add(name, Access(acc, out_ix), Call("mul", (x_acc, w_acc)), ranks)
    if bias is not None:
        g.tensor(bias, node, index)
        _epilogue(g, f"{name}.bias", y, acc, Access(bias, (Affine.rank("d1"),)), 1.0, 1.0, named_ranks("d", yt.shape))


HANDLERS: dict[str, Handler] = {
    **{op: _matmul for op in _MATMUL_INPUTS},
    **{op: _conv for op in _CONV_INPUTS},
    "Gemm": _gemm, "Einsum": _einsum, "ConvTranspose": _conv_transpose,
}
