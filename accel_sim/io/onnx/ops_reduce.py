"""Reductions, arg/top-k selection, running sums, pooling, and the normalisation and softmax cascades.

Normalisations and Softmax are short cascades of reductions and map ops (mean = sum of x/N, variance =
sum of square(x - mean)/N); they contain no contraction, so their MACs are 0.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import NodeProto

from accel_sim.errors import ConfigError
from accel_sim.io.onnx.graph import (
    ELEM_BITS,
    Graph,
    Handler,
    attrs,
    bcast,
    named_ranks,
    norm_axis,
    optional_input,
    plain,
)
from accel_sim.io.onnx.window import Window, sliding_window, spatial_names
from accel_sim.spec.workload import Access, Affine, Call, Const, Expr, Tensor, View


def _reduce_into(g: Graph, name: str, out: str, src_expr: Callable[[list[tuple[str, int]]], Expr],
                 in_shape: tuple[int, ...], axes: set[int], keepdims: bool, reduce: str) -> None:
    """out = reduce over `axes` of src_expr(ranks), the input iteration space named r0, r1, ..."""
    ranks = named_ranks("r", in_shape)
    out_ix = tuple(Affine() if j in axes else Affine.rank(r) for j, (r, _) in enumerate(ranks)
                   if keepdims or j not in axes)
    g.add(name, Access(out, out_ix), src_expr(ranks), ranks, reduce)


def _keep_shape(shape: tuple[int, ...], axes: set[int]) -> tuple[int, ...]:
    return tuple(1 if j in axes else d for j, d in enumerate(shape))


def _reduce_axes(g: Graph, node: NodeProto, at: dict[str, Any], in_shape: tuple[int, ...],
                 out_shape: tuple[int, ...]) -> set[int] | None:
    """Reduced axes from the attribute (old opsets) or the constant second input; None means identity."""
    rank = len(in_shape)
    axes: list[int] | None = list(at["axes"]) if "axes" in at else None
    if axes is None and len(node.input) > 1 and node.input[1]:
        value = g.const(node.input[1])
        if value is None:  # computed axes: recover them from the shapes (shape inference knew them)
            if len(out_shape) == rank:
                return {j for j in range(rank) if in_shape[j] != out_shape[j]} or set(range(rank))
            return set(range(rank)) if not out_shape else _dropped_axes(in_shape, out_shape)
        axes = [int(v) for v in np.ravel(value)]
    if not axes:
        return None if at.get("noop_with_empty_axes", 0) else set(range(rank))
    return {norm_axis(a, rank) for a in axes}


def _dropped_axes(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> set[int]:
    kept, j = set(), 0
    for i, d in enumerate(in_shape):
        if j < len(out_shape) and out_shape[j] == d and len(in_shape) - i > len(out_shape) - j - 1:
            kept.add(i)
            j += 1
    return set(range(len(in_shape))) - kept


# ONNX Reduce* -> (reduce op, expression applied to the input, map op applied to the result)
_REDUCE: dict[str, tuple[str, Callable[[Expr, int], Expr], str | None]] = {
    "ReduceSum": ("sum", lambda x, n: x, None),
    "ReduceMean": ("sum", lambda x, n: Call("mul", (x, Const(1.0 / n))), None),
    "ReduceMax": ("max", lambda x, n: x, None),
    "ReduceMin": ("min", lambda x, n: x, None),
    "ReduceProd": ("prod", lambda x, n: x, None),
    "ReduceL1": ("sum", lambda x, n: Call("abs", (x,)), None),
    "ReduceL2": ("sum", lambda x, n: Call("square", (x,)), "sqrt"),
    "ReduceSumSquare": ("sum", lambda x, n: Call("square", (x,)), None),
    "ReduceLogSum": ("sum", lambda x, n: x, "log"),
    "ReduceLogSumExp": ("sum", lambda x, n: Call("exp", (x,)), "log"),
}


def _reduce(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    axes = _reduce_axes(g, node, at, xs, yt.shape)
    if axes is None:
        g.views.append(View(y, (x,), "identity"))
        return
    reduce, pre, post = _REDUCE[node.op_type]
    n = math.prod(xs[j] for j in axes)
    keep = bool(at.get("keepdims", 1))
    name = g.node_name(node, index)
    target = y if post is None else g.fresh(f"{y}.{reduce}", yt.shape, yt.bits)
    _reduce_into(g, name, target, lambda r: pre(Access(x, plain(r)), n), xs, axes, keep, reduce)
    if post is not None:
        ranks = named_ranks("d", yt.shape)
        g.add(f"{name}.{post}", Access(y, plain(ranks)), Call(post, (Access(target, plain(ranks)),)), ranks)


def _arg_reduce(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, y, xs, _ = g.unary(node, index)
    axis = norm_axis(at.get("axis", 0), len(xs))
    reduce = "max" if node.op_type == "ArgMax" else "min"
    _reduce_into(g, g.node_name(node, index), y, lambda r: Access(x, plain(r)), xs, {axis},
                 bool(at.get("keepdims", 1)), reduce)


def _topk(g: Graph, node: NodeProto, index: int) -> None:
    """Values[.., t, ..] = max over the axis, for each of the k slots t (a k-pass selection)."""
    at = attrs(node)
    x, values, xs, vt = g.unary(node, index)
    axis = norm_axis(at.get("axis", -1), len(xs))
    largest = at.get("largest", 1)
    ranks = named_ranks("r", xs)
    iter_ranks = ranks + [("t", vt.shape[axis])]
    out_ix = tuple(Affine.rank("t") if j == axis else Affine.rank(r) for j, (r, _) in enumerate(ranks))
    g.add(g.node_name(node, index), Access(values, out_ix), Access(x, plain(ranks)), iter_ranks,
          "max" if largest else "min")
    if len(node.output) > 1:
        g.side_output(node.output[1], x, "topk_indices", node, index)


def _cumsum(g: Graph, node: NodeProto, index: int) -> None:
    """Y[a] = Y[a-1] + X[a] as a running reduction (exclusive reads X[a-1]; reverse walks a backwards)."""
    at = attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    g.tensors[y] = Tensor(y, tuple(f"d{k}" for k in range(len(xs))), xs,
                          ELEM_BITS.get(g.info.get(y, (None, 1))[1], 32), "activation", init=0.0)
    value = g.const(node.input[1])
    if value is None:
        raise ConfigError(f"CumSum node '{g.node_name(node, index)}' has a computed axis", file=g.path,
                          key_path=f"graph.node[{index}]", fix="export the model with a constant CumSum axis")
    axis = norm_axis(int(np.ravel(value)[0]), len(xs))
    ranks = named_ranks("d", xs)
    rank, size = ranks[axis]
    reverse, exclusive = bool(at.get("reverse", 0)), bool(at.get("exclusive", 0))
    sign, base = (-1, size - 1) if reverse else (1, 0)

    def at_step(shift: int) -> tuple[Affine, ...]:
        return tuple(Affine(((rank, sign),), base - sign * shift) if j == axis else Affine.rank(r)
                     for j, (r, _) in enumerate(ranks))

    src = Access(x, at_step(1) if exclusive else at_step(0))
    g.add(g.node_name(node, index), Access(y, at_step(0)), Call("add", (Access(y, at_step(1)), src)), ranks)


def _softmax_axes(g: Graph, at: dict[str, Any], rank: int) -> set[int]:
    if g.opset < 13:  # opsets 1-12 flatten the input to 2-D at `axis` (default 1)
        return set(range(norm_axis(at.get("axis", 1), rank), rank))
    return {norm_axis(at.get("axis", -1), rank)}


def _softmax(g: Graph, node: NodeProto, index: int) -> None:
    """max-reduce, exp(x - max), sum-reduce, divide (LogSoftmax: x - max - log(sum); Hardmax: x == max)."""
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    axes = _softmax_axes(g, at, len(xs))
    name, kept = g.node_name(node, index), _keep_shape(xs, axes)
    ranks = named_ranks("d", xs)
    xa = Access(x, plain(ranks))
    mx = g.fresh(f"{y}.max", kept, yt.bits)
    _reduce_into(g, f"{name}.max", mx, lambda r: Access(x, plain(r)), xs, axes, True, "max")
    mxa = bcast(mx, kept, ranks)
    if node.op_type == "Hardmax":
        g.add(f"{name}.eq", Access(y, plain(ranks)), Call("eq", (xa, mxa)), ranks)
        return
    ex = g.fresh(f"{y}.exp", xs, yt.bits)
    g.add(f"{name}.exp", Access(ex, plain(ranks)), Call("exp", (Call("sub", (xa, mxa)),)), ranks)
    sm = g.fresh(f"{y}.sum", kept, yt.bits)
    _reduce_into(g, f"{name}.sum", sm, lambda r: Access(ex, plain(r)), xs, axes, True, "sum")
    sma = bcast(sm, kept, ranks)
    if node.op_type == "Softmax":
        g.add(f"{name}.div", Access(y, plain(ranks)), Call("div", (Access(ex, plain(ranks)), sma)), ranks)
    else:
        g.add(f"{name}.log", Access(y, plain(ranks)),
              Call("sub", (Call("sub", (xa, mxa)), Call("log", (sma,)))), ranks)


def _normalize(g: Graph, name: str, x: str, y: str, xs: tuple[int, ...], axes: set[int], bits: int,
               eps: float, scale: Access | None, bias: Access | None, *, center: bool = True) -> list[str]:
    """mean = sum(x/N); var = sum(square(x - mean)/N); y = (x - mean) * rsqrt(var + eps) * scale + bias."""
    ranks = named_ranks("d", xs)
    kept = _keep_shape(xs, axes)
    n = math.prod(xs[j] for j in axes)
    centered: Expr = Access(x, plain(ranks))
    stats = []
    if center:
        mean = g.fresh(f"{y}.mean", kept, bits)
        _reduce_into(g, f"{name}.mean", mean, lambda r: Call("mul", (Access(x, plain(r)), Const(1.0 / n))),
                     xs, axes, True, "sum")
        centered = Call("sub", (centered, bcast(mean, kept, ranks)))
        stats.append(mean)

    var = g.fresh(f"{y}.var", kept, bits)
    mean_in = (lambda r: Call("sub", (Access(x, plain(r)), bcast(stats[0], kept, r)))) if center \
        else (lambda r: Access(x, plain(r)))
    _reduce_into(g, f"{name}.var", var, lambda r: Call("mul", (Call("square", (mean_in(r),)), Const(1.0 / n))),
                 xs, axes, True, "sum")
    expr: Expr = Call("mul", (centered, Call("rsqrt", (Call("add", (bcast(var, kept, ranks), Const(eps))),))))
    if scale is not None:
        expr = Call("mul", (expr, scale))
    if bias is not None:
        expr = Call("add", (expr, bias))
    g.add(f"{name}.norm", Access(y, plain(ranks)), expr, ranks)
    return stats + [var]


def _layer_norm(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    ranks = named_ranks("d", xs)
    axes = set(range(norm_axis(at.get("axis", -1), len(xs)), len(xs)))
    operands = [optional_input(node, k) for k in (1, 2)]
    scale, bias = (bcast(n, g.tensor(n, node, index).shape, ranks) if n else None for n in operands)
    center = node.op_type == "LayerNormalization"
    stats = _normalize(g, g.node_name(node, index), x, y, xs, axes, yt.bits, float(at.get("epsilon", 1e-5)),
                       scale, bias, center=center)
    for out, stat in zip(node.output[1:], stats):  # training outputs Mean / InvStdDev
        g.side_output(out, stat, "norm_stat", node, index)


def _channel_norm(g: Graph, node: NodeProto, index: int) -> None:
    """BatchNormalization (inference form) and InstanceNormalization, parameters per channel (dim 1)."""
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    ranks = named_ranks("d", xs)
    params = [bcast(n, g.tensor(n, node, index).shape, ranks, axis=1) for n in node.input[1:] if n]
    eps = float(at.get("epsilon", 1e-5))
    name = g.node_name(node, index)
    if node.op_type == "InstanceNormalization":
        _normalize(g, name, x, y, xs, set(range(2, len(xs))), yt.bits, eps, params[0], params[1])
        return
    scale, bias, mean, var = params
    inv = Call("rsqrt", (Call("add", (var, Const(eps))),))
    expr = Call("add", (Call("mul", (Call("mul", (Call("sub", (Access(x, plain(ranks)), mean)), inv)), scale)), bias))
    g.add(name, Access(y, plain(ranks)), expr, ranks)
    for out, src in zip(node.output[1:], node.input[3:5]):  # training-mode running statistics
        g.side_output(out, src, "norm_stat", node, index)


def _group_norm(g: Graph, node: NodeProto, index: int) -> None:
    """Statistics over (channels of a group, spatial): X viewed as [n, g, c', ...] with channel g*C/G + c'."""
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    groups = int(at["num_groups"])
    cg = xs[1] // groups
    eps = float(at.get("epsilon", 1e-5))
    name = g.node_name(node, index)
    spatial = named_ranks("s", xs[2:])
    ranks = [("n", xs[0]), ("g", groups), ("c", cg)] + spatial
    x_acc = Access(x, (Affine.rank("n"), Affine((("g", cg), ("c", 1)))) + plain(spatial))
    stat_ix = (Affine.rank("n"), Affine.rank("g"))
    n = cg * math.prod(xs[2:])
    mean = g.fresh(f"{y}.mean", (xs[0], groups), yt.bits)
    var = g.fresh(f"{y}.var", (xs[0], groups), yt.bits)
    g.add(f"{name}.mean", Access(mean, stat_ix), Call("mul", (x_acc, Const(1.0 / n))), ranks)
    centered = Call("sub", (x_acc, Access(mean, stat_ix)))
    g.add(f"{name}.var", Access(var, stat_ix), Call("mul", (Call("square", (centered,)), Const(1.0 / n))), ranks)
    expr: Expr = Call("mul", (centered, Call("rsqrt", (Call("add", (Access(var, stat_ix), Const(eps))),))))
    for k, op in ((1, "mul"), (2, "add")):
        pname = optional_input(node, k)
        if pname:
            ps = g.tensor(pname, node, index).shape
            index_ = Affine.rank("g") if ps[0] == groups and groups != xs[1] else Affine((("g", cg), ("c", 1)))
            expr = Call(op, (expr, Access(pname, (index_,))))
    g.add(f"{name}.norm", Access(y, (Affine.rank("n"), Affine((("g", cg), ("c", 1)))) + plain(spatial)), expr, ranks)


def _lp_norm(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    axes = {norm_axis(at.get("axis", -1), len(xs))}
    p = float(at.get("p", 2))
    kept, ranks, name = _keep_shape(xs, axes), named_ranks("d", xs), g.node_name(node, index)
    norm = g.fresh(f"{y}.norm", kept, yt.bits)
    _reduce_into(g, f"{name}.sum", norm, lambda r: Call("pow", (Call("abs", (Access(x, plain(r)),)), Const(p))),
                 xs, axes, True, "sum")
    g.add(f"{name}.div", Access(y, plain(ranks)),
          Call("div", (Access(x, plain(ranks)), Call("pow", (bcast(norm, kept, ranks), Const(1.0 / p))))), ranks)


def _mvn(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    axes = {norm_axis(a, len(xs)) for a in at.get("axes", [0, 2, 3])}
    _normalize(g, g.node_name(node, index), x, y, xs, axes, yt.bits, 1e-9, None, None)


def _pool(g: Graph, node: NodeProto, index: int) -> None:
    """Window reduction: Y[n, c, p, q] = reduce_{r, s} X[n, c, stride*p + dil*r - pad, ...]."""
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    name = g.node_name(node, index)
    spatial = len(xs) - 2
    if node.op_type.startswith("Global"):
        win = Window(tuple(xs[2:]), (1,) * spatial, (1,) * spatial, (0,) * spatial)
    else:
        win = sliding_window(at, xs[2:], yt.shape[2:], tuple(at["kernel_shape"]))
    outs, kers = spatial_names(spatial)
    ranks = [("n", xs[0]), ("c", xs[1])] + list(zip(outs, yt.shape[2:])) + list(zip(kers, win.kernel))
    x_acc = Access(x, (Affine.rank("n"), Affine.rank("c")) + win.taps(outs, kers))
    out_ix = (Affine.rank("n"), Affine.rank("c")) + tuple(Affine.rank(o) for o in outs)
    kind = node.op_type.removeprefix("Global")
    if kind == "MaxPool":
        g.add(name, Access(y, out_ix), x_acc, ranks, "max")
    elif kind == "AveragePool":
        # count_include_pad=0 divides border windows by fewer taps; a constant 1/K is exact inside
        g.add(name, Access(y, out_ix), Call("mul", (x_acc, Const(1.0 / math.prod(win.kernel)))), ranks)
    else:  # LpPool: (sum |x|^p)^(1/p)
        p = float(at.get("p", 2))
        acc = g.fresh(f"{y}.sum", yt.shape, yt.bits)
        g.add(f"{name}.sum", Access(acc, out_ix), Call("pow", (Call("abs", (x_acc,)), Const(p))), ranks)
        out_ranks = named_ranks("d", yt.shape)
        g.add(f"{name}.root", Access(y, plain(out_ranks)),
              Call("pow", (Access(acc, plain(out_ranks)), Const(1.0 / p))), out_ranks)
    if len(node.output) > 1:
        g.side_output(node.output[1], x, "maxpool_indices", node, index)


def _lrn(g: Graph, node: NodeProto, index: int) -> None:
    """S = sum of squares over a channel window; y = x / (bias + alpha/size * S)^beta (ONNX LRN spec)."""
    at = attrs(node)
    x, y, xs, yt = g.unary(node, index)
    size = int(at["size"])
    name = g.node_name(node, index)
    ranks = named_ranks("d", xs)
    window = ranks + [("w", size)]
    src = tuple(Affine((("d1", 1), ("w", 1)), -((size - 1) // 2)) if j == 1 else Affine.rank(r)
                for j, (r, _) in enumerate(ranks))
    sq = g.fresh(f"{y}.sqsum", xs, yt.bits)
    g.add(f"{name}.sqsum", Access(sq, plain(ranks)), Call("square", (Access(x, src),)), window)
    denom = Call("pow", (Call("add", (Const(at.get("bias", 1.0)), Call("mul", (
        Const(at.get("alpha", 1e-4) / size), Access(sq, plain(ranks)))))), Const(at.get("beta", 0.75))))
    g.add(f"{name}.div", Access(y, plain(ranks)), Call("div", (Access(x, plain(ranks)), denom)), ranks)


HANDLERS: dict[str, Handler] = {
    **{op: _reduce for op in _REDUCE},
    **{op: _pool for op in ("MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool",
                            "GlobalLpPool")},
    **{op: _softmax for op in ("Softmax", "LogSoftmax", "Hardmax")},
    **{op: _layer_norm for op in ("LayerNormalization", "RMSNormalization")},
    **{op: _channel_norm for op in ("BatchNormalization", "InstanceNormalization")},
    **{op: _arg_reduce for op in ("ArgMax", "ArgMin")},
    "TopK": _topk, "CumSum": _cumsum, "GroupNormalization": _group_norm, "LpNormalization": _lp_norm,
    "MeanVarianceNormalization": _mvn, "LRN": _lrn,
}
