"""Contractions: MatMul, Gemm, Einsum, Conv, ConvTranspose (the only einsums with MACs).

Bias and output scaling of Conv/Gemm are separate map einsums after the contraction, so MACs stay exactly
``output elements x Cin/groups x kernel`` (Conv) and ``M x N x K`` (Gemm/MatMul). ConvTranspose is the
scatter form ``Y[n, m, s*i + d*r - pad] += X[n, c, i] * W[c, m, r]`` (MACs = input elements x Cout/groups
x kernel, every multiply the operator performs).
"""
from __future__ import annotations

from onnx import NodeProto

from accel_sim.errors import ConfigError
from accel_sim.io.onnx.graph import Graph, Handler, attrs, bcast, named_ranks, optional_input, plain
from accel_sim.io.onnx.window import sliding_window, spatial_names
from accel_sim.spec.workload import Access, Affine, Call, Const, Expr

# Which inputs are (A, B) for matmul-like ops and (X, W, bias) for conv-like ops.
_MATMUL_INPUTS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
_CONV_INPUTS = {"Conv": (0, 1, 2), "ConvInteger": (0, 1, None), "QLinearConv": (0, 3, 8), "ConvTranspose": (0, 1, 2)}


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
    bias = optional_input(node, 2)
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
    """Conv: Y[n, g*M'+m, p] += X[n, g*C'+c, stride*p + dil*r - pad] * W[g*M'+m, c, r] over output positions p;
    ConvTranspose scatters instead: Y[n, g*M'+m, stride*i + dil*r - pad] += X[n, g*C'+c, i] * W[g*C'+c, m, r]."""
    ix, iw, ib = _CONV_INPUTS[node.op_type]
    transposed = node.op_type == "ConvTranspose"
    at = attrs(node)
    x, w, y = node.input[ix], node.input[iw], node.output[0]
    xs, ws = g.tensor(x, node, index).shape, g.tensor(w, node, index).shape
    yt = g.tensor(y, node, index)
    groups = int(at.get("group", 1))
    _check_groups(g, node, index, groups, xs, ws, transposed)
    win = sliding_window(at, xs[2:], yt.shape[2:], tuple(ws[2:]), transposed=transposed)
    pos, kers = spatial_names(len(xs) - 2)
    cg, mg = (xs[1] // groups, ws[1]) if transposed else (ws[1], ws[0] // groups)
    ranks = [("n", xs[0])] + ([("g", groups)] if groups > 1 else []) + [("m", mg), ("c", cg)] \
        + list(zip(pos, xs[2:] if transposed else yt.shape[2:])) + list(zip(kers, win.kernel))
    grouped = (lambda size, r: Affine((("g", size), (r, 1)))) if groups > 1 else (lambda size, r: Affine.rank(r))
    n, c, m = Affine.rank("n"), grouped(cg, "c"), grouped(mg, "m")
    at_pos, taps = tuple(Affine.rank(p) for p in pos), win.taps(pos, kers)
    kernel_ix = tuple(Affine.rank(r) for r in kers)
    x_acc = Access(x, (n, c) + (at_pos if transposed else taps))
    w_acc = Access(w, ((c, Affine.rank("m")) if transposed else (m, Affine.rank("c"))) + kernel_ix)
    bias = optional_input(node, ib) if ib is not None else None
    name = g.node_name(node, index)
    acc = y if bias is None else g.fresh(f"{y}.{'convT' if transposed else 'conv'}", yt.shape, yt.bits)
    g.add(name, Access(acc, (n, m) + (taps if transposed else at_pos)), Call("mul", (x_acc, w_acc)), ranks)
    if bias is not None:
        g.tensor(bias, node, index)
        _epilogue(g, f"{name}.bias", y, acc, Access(bias, (Affine.rank("d1"),)), 1.0, 1.0, named_ranks("d", yt.shape))


def _check_groups(g: Graph, node: NodeProto, index: int, groups: int, xs: tuple[int, ...], ws: tuple[int, ...],
                  transposed: bool) -> None:
    """The ONNX spec's channel rules, which onnx.checker does not enforce: group >= 1 divides the input channels
    C and the output channels M, and W is [M, C/group, k...] (Conv) or [C, M/group, k...] (ConvTranspose)."""
    c, m = xs[1], ws[1] * groups if transposed else ws[0]
    weight_dim, wanted = (0, c) if transposed else (1, c // groups if groups >= 1 else c)
    if groups < 1:
        problem = f"group is {groups}"
    elif c % groups or m % groups:
        problem = f"group {groups} must divide both the input's {c} channels and the weight's {m} output channels"
    elif ws[weight_dim] != wanted:
        expected = "the input's channels" if transposed else f"the input's channels / group = {c} / {groups}"
        problem = f"the weight {list(ws)} has {ws[weight_dim]} in dimension {weight_dim}, not {expected} = {wanted}"
    else:
        return
    layout = "[C, M/group, kernel...]" if transposed else "[M, C/group, kernel...]"
    raise ConfigError(f"{node.op_type} node '{g.node_name(node, index)}' on input {list(xs)}: {problem}",
                      file=g.path, key_path=f"graph.node[{index}]",
                      fix=f"give a group of at least 1 that divides both channel counts, and a weight of shape {layout}"
                          " (the ONNX spec's layout); re-export the model if the exporter wrote these")


HANDLERS: dict[str, Handler] = {
    **{op: _matmul for op in _MATMUL_INPUTS},
    **{op: _conv for op in _CONV_INPUTS},
    "Gemm": _gemm, "Einsum": _einsum,
}
