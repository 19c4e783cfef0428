"""Elementwise map ops: one table, ONNX op -> expression over numpy-broadcast operands (0 MACs)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from onnx import NodeProto

from accel_sim.io.onnx.graph import Graph, Handler, attrs, bcast, named_ranks, norm_axis, plain
from accel_sim.spec.workload import Access, Call, Const, Expr

_ZERO, _ONE = Const(0.0), Const(1.0)
MapBuilder = Callable[[list[Expr], dict[str, Any]], Expr]


def _call(op: str) -> MapBuilder:
    return lambda a, at: Call(op, tuple(a))


def _fold(op: str, args: list[Expr]) -> Expr:
    expr = args[0]
    for arg in args[1:]:
        expr = Call(op, (expr, arg))
    return expr if len(args) > 1 else Call("copy", (expr,))


def _softplus(x: Expr) -> Expr:
    return Call("log", (Call("add", (Call("exp", (x,)), _ONE)),))


def _hard_sigmoid(x: Expr, alpha: float, beta: float) -> Expr:
    return Call("clip", (Call("add", (Call("mul", (Const(alpha), x)), Const(beta))), _ZERO, _ONE))


def _elu(x: Expr, alpha: float) -> Expr:
    negative = Call("mul", (Const(alpha), Call("sub", (Call("exp", (x,)), _ONE))))
    return Call("where", (Call("gt", (x, _ZERO)), x, negative))


def _clip(a: list[Expr], at: dict[str, Any]) -> Expr:
    low = a[1] if len(a) > 1 and a[1] is not None else Const(at.get("min", -math.inf))
    high = a[2] if len(a) > 2 and a[2] is not None else Const(at.get("max", math.inf))
    return Call("clip", (a[0], low, high))


# Defaults are the ONNX operator spec's (onnx/docs/Operators.md).
_MAP: dict[str, MapBuilder] = {
    **{op: _call(name) for op, name in {
        "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Mod": "mod",
        "Where": "where", "Equal": "eq", "Less": "lt", "Greater": "gt", "And": "and", "Or": "or",
        "Not": "not", "Relu": "relu", "Gelu": "gelu", "Erf": "erf", "Tanh": "tanh", "Sigmoid": "sigmoid",
        "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Reciprocal": "recip", "Neg": "neg", "Abs": "abs",
        "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
        "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
        "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Round": "round", "IsNaN": "isnan", "IsInf": "isinf",
        "BitwiseAnd": "bitand", "BitwiseOr": "bitor", "BitwiseXor": "bitxor", "BitwiseNot": "bitnot",
        "Max": "max", "Min": "min",
    }.items()},
    "Sum": lambda a, at: _fold("add", a),
    "Mean": lambda a, at: Call("mul", (_fold("add", a), Const(1.0 / len(a)))),
    "LessOrEqual": lambda a, at: Call("not", (Call("gt", (a[0], a[1])),)),
    "GreaterOrEqual": lambda a, at: Call("not", (Call("lt", (a[0], a[1])),)),
    "Xor": lambda a, at: Call("sub", (Call("or", (a[0], a[1])), Call("and", (a[0], a[1])))),
    "Clip": _clip,
    "HardSigmoid": lambda a, at: _hard_sigmoid(a[0], at.get("alpha", 0.2), at.get("beta", 0.5)),
    "HardSwish": lambda a, at: Call("mul", (a[0], _hard_sigmoid(a[0], 1.0 / 6.0, 0.5))),
    "LeakyRelu": lambda a, at: Call("where", (Call("gt", (a[0], _ZERO)), a[0],
                                               Call("mul", (Const(at.get("alpha", 0.01)), a[0])))),
    "PRelu": lambda a, at: Call("where", (Call("gt", (a[0], _ZERO)), a[0], Call("mul", (a[1], a[0])))),
    "Elu": lambda a, at: _elu(a[0], at.get("alpha", 1.0)),
    "Selu": lambda a, at: Call("mul", (Const(at.get("gamma", 1.05070102214813232421875)),
                                        _elu(a[0], at.get("alpha", 1.67326319217681884765625)))),
    "Celu": lambda a, at: Call("add", (Call("relu", (a[0],)), Call("min", (_ZERO, Call("mul", (
        Const(at.get("alpha", 1.0)), Call("sub", (Call("exp", (Call("div", (a[0], Const(at.get("alpha", 1.0)))),)),
                                                  _ONE)))))))),
    "Softplus": lambda a, at: _softplus(a[0]),
    "Softsign": lambda a, at: Call("div", (a[0], Call("add", (_ONE, Call("abs", (a[0],)))))),
    "Mish": lambda a, at: Call("mul", (a[0], Call("tanh", (_softplus(a[0]),)))),
    "ThresholdedRelu": lambda a, at: Call("where", (Call("gt", (a[0], Const(at.get("alpha", 1.0)))), a[0], _ZERO)),
    "Shrink": lambda a, at: Call("where", (
        Call("lt", (a[0], Const(-at.get("lambd", 0.5)))), Call("add", (a[0], Const(at.get("bias", 0.0)))),
        Call("where", (Call("gt", (a[0], Const(at.get("lambd", 0.5)))), Call("sub", (a[0], Const(at.get("bias", 0.0)))),
                       _ZERO)))),
    "QuantizeLinear": lambda a, at: Call("add", (Call("round", (Call("div", (a[0], a[1])),)), a[2]))
    if len(a) > 2 and a[2] is not None else Call("round", (Call("div", (a[0], a[1])),)),
    "DequantizeLinear": lambda a, at: Call("mul", (Call("sub", (a[0], a[2])), a[1]))
    if len(a) > 2 and a[2] is not None else Call("mul", (a[0], a[1])),
}
# Per-axis operands (1-D, aligned with the `axis` attribute instead of right-aligned).
_PER_AXIS = {"QuantizeLinear", "DequantizeLinear"}


def _map_node(g: Graph, node: NodeProto, index: int) -> None:
    at = attrs(node)
    out = node.output[0]
    shape = g.tensor(out, node, index).shape
    ranks = named_ranks("d", shape)
    axis = norm_axis(at.get("axis", 1), len(shape)) if node.op_type in _PER_AXIS else None
    args: list[Expr] = []
    for name in node.input:
        if not name:
            args.append(None)  # type: ignore[arg-type]  # optional input left out; builders test for it
            continue
        t = g.tensor(name, node, index)
        args.append(bcast(name, t.shape, ranks, axis=axis))
    g.add(g.node_name(node, index), Access(out, plain(ranks)), _MAP[node.op_type](args, at), ranks)
    for extra in node.output[1:]:
        g.side_output(extra, node.input[0], node.op_type.lower(), node, index)


HANDLERS: dict[str, Handler] = {op: _map_node for op in _MAP}
