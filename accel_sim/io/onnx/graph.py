"""The import state: tensors, einsums and views collected node by node, and the helpers every op uses."""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto, helper, numpy_helper

from accel_sim.errors import ConfigError
from accel_sim.spec.workload import Access, Affine, Einsum, Expr, Tensor, TensorKind, View, Workload

# Element widths of ONNX element types (onnx/onnx.proto3, TensorProto.DataType). STRING has no fixed
# width; 64 bits stands for a pointer-sized handle.
ELEM_BITS: dict[int, int] = {
    TensorProto.FLOAT: 32, TensorProto.UINT8: 8, TensorProto.INT8: 8, TensorProto.UINT16: 16,
    TensorProto.INT16: 16, TensorProto.INT32: 32, TensorProto.INT64: 64, TensorProto.STRING: 64,
    TensorProto.BOOL: 8, TensorProto.FLOAT16: 16, TensorProto.DOUBLE: 64, TensorProto.UINT32: 32,
    TensorProto.UINT64: 64, TensorProto.COMPLEX64: 64, TensorProto.COMPLEX128: 128,
    TensorProto.BFLOAT16: 16, TensorProto.FLOAT8E4M3FN: 8, TensorProto.FLOAT8E4M3FNUZ: 8,
    TensorProto.FLOAT8E5M2: 8, TensorProto.FLOAT8E5M2FNUZ: 8, TensorProto.UINT4: 4, TensorProto.INT4: 4,
    TensorProto.FLOAT4E2M1: 4,
}
for _name, _bits in (("FLOAT8E8M0", 8), ("UINT2", 2), ("INT2", 2)):  # newer onnx releases only
    if hasattr(TensorProto, _name):
        ELEM_BITS[getattr(TensorProto, _name)] = _bits

# Largest initializer whose values are read as an operand (axes, k, ...): structural constants are
# tiny, weights are not, and reading a weight would break the 400 MB import budget.
MAX_CONST_ELEMENTS = 100_000
STANDARD_DOMAINS = ("", "ai.onnx")


Shape = tuple[int | str | None, ...] | None  # a dim is a size, a symbolic name or unknown; None: unknown rank


def is_static(shape: Shape) -> bool:
    """Every dim known."""
    return shape is not None and all(isinstance(d, int) for d in shape)


def value_infos(model: onnx.ModelProto) -> dict[str, tuple[Shape, int]]:
    """Name -> (shape, ONNX element type) of every initializer, graph input/output and value_info."""
    out: dict[str, tuple[Shape, int]] = {}
    for init in model.graph.initializer:
        out[init.name] = (tuple(int(d) for d in init.dims), init.data_type)
    for vi in (*model.graph.input, *model.graph.value_info, *model.graph.output):
        ttype = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        shape = None
        if ttype.HasField("shape"):
            shape = tuple(int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or None)
                          for d in ttype.shape.dim)
        if vi.name in out and not is_static(shape):
            continue
        out[vi.name] = (shape, ttype.elem_type)
    return out


class Graph:
    """Accumulates the workload while walking the nodes (private; the result is a frozen Workload)."""

    def __init__(self, path: Path, model: onnx.ModelProto, shapes: onnx.ModelProto) -> None:
        self.path = path
        # exporters name every graph alike ('main_graph', 'torch_jit'); the file name tells models apart
        self.name = path.name.removesuffix('.onnx')
        self.opset = next((o.version for o in model.opset_import if o.domain in STANDARD_DOMAINS), 1)
        self.info = value_infos(shapes)
        # folded shape arithmetic appears as initializers of `shapes`: readable as operand values
        self.initializers = {init.name: init for init in shapes.graph.initializer}
        self.kinds = _input_kinds(model)
        self.consts: dict[str, np.ndarray] = {}
        self.tensors: dict[str, Tensor] = {}
        self.einsums: list[Einsum] = []
        self.views: list[View] = []
        self.unsupported: list[str] = []
        self.unsupported_outputs: set[str] = set()
        self.einsum_names: set[str] = set()
        self.graph_inputs = [vi.name for vi in model.graph.input]

    # -- names ----------------------------------------------------------------------------------
    @staticmethod
    def node_name(node: NodeProto, index: int) -> str:
        """The node's name, or OpType_index for anonymous nodes."""
        return node.name or f"{node.op_type}_{index}"

    def einsum_name(self, base: str) -> str:
        """A unique einsum name starting with `base`."""
        name, k = base, 1
        while name in self.einsum_names:
            k += 1
            name = f"{base}#{k}"
        self.einsum_names.add(name)
        return name

    # -- tensors --------------------------------------------------------------------------------
    def shape(self, name: str, node: NodeProto, index: int) -> tuple[int, ...]:
        """Static shape of `name`, or a ConfigError naming the node that needs it."""
        if name in self.tensors:
            return self.tensors[name].shape
        shape = self.info.get(name, (None, 0))[0]
        if not is_static(shape):
            if name in self.unsupported_outputs:
                raise ConfigError(
                    f"tensor '{name}' read by {node.op_type} node '{self.node_name(node, index)}' comes from an "
                    "unsupported operator and has no static shape", file=self.path, key_path=f"graph.node[{index}]",
                    fix="export the model with standard ONNX operators so that shape inference can see through it")
            dims = ("unknown rank" if shape is None
                    else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]")
            raise ConfigError(
                f"tensor '{name}' of {node.op_type} node '{self.node_name(node, index)}' has no static shape "
                f"after ONNX shape inference ({dims})", file=self.path, key_path=f"graph.node[{index}]",
                fix="export the model with static input shapes (fixed batch and sequence length), or fix the "
                    "symbolic dimensions first (onnx.tools.update_model_dims.update_inputs_outputs_dims)")
        negative = next((d for d, size in enumerate(shape) if size < 0), None)
        if negative is not None:  # valid in no ONNX model; it would make negative sizes, bytes and MACs
            raise self.dimension_error(name, shape, negative, node, index)
        return shape

    def dimension_error(self, name: str, shape: tuple[int, ...], dim: int, node: NodeProto, index: int
                        ) -> ConfigError:
        """A ConfigError for dimension `dim` of tensor `name` (negative, or zero where work is costed), at the
        graph input that declares it or else at the node that reads it."""
        reader = f" used by {node.op_type} node '{self.node_name(node, index)}'" if index >= 0 else ""
        if name in self.graph_inputs:
            what, key_path = "graph input", f"graph.input[{self.graph_inputs.index(name)}]"
        else:
            what, key_path = "tensor", f"graph.node[{index}]"
        dims = "[" + ", ".join(str(d) for d in shape) + "]"
        return ConfigError(
            f"{what} '{name}'{reader} has shape {dims}: dimension {dim} is {shape[dim]}, and every dimension of a "
            "costed tensor must be at least 1", file=self.path, key_path=key_path,
            fix="export the model with a size of at least 1 in every dimension of its inputs (e.g. batch 1, "
                "sequence length 1), or fix the shape that produces the empty or negative dimension")

    def check_extents(self, node: NodeProto, index: int, einsums: list[Einsum]) -> None:
        """Every einsum `node` added iterates over at least one point: a zero-size operand (whose dims give the
        einsum's rank sizes) leaves nothing to cost, and the engines tile iteration spaces of at least one point."""
        for einsum in einsums:
            for access in (*einsum.inputs, einsum.output):
                shape = self.tensors[access.tensor].shape if access.tensor in self.tensors else ()
                if 0 in shape:
                    raise self.dimension_error(access.tensor, shape, shape.index(0), node, index)

    def tensor(self, name: str, node: NodeProto, index: int, kind: TensorKind | None = None) -> Tensor:
        """The Tensor called `name`, registered on first use (graph inputs, initializers, node outputs)."""
        if name in self.tensors:
            return self.tensors[name]
        shape = self.shape(name, node, index)
        elem = self.info.get(name, (None, 0))[1]
        if kind is None:
            kind = self.kinds.get(name, "activation")
            if name in self.initializers and name not in self.kinds:
                init = self.initializers[name]
                kind = "constant" if (init.data_type not in _FLOAT_TYPES or math.prod(init.dims) <= 1) else "weight"
        tensor = Tensor(name, tuple(f"d{k}" for k in range(len(shape))), shape, ELEM_BITS.get(elem, 32), kind)
        self.tensors[name] = tensor
        return tensor

    def unary(self, node: NodeProto, index: int) -> tuple[str, str, tuple[int, ...], Tensor]:
        """First input name, first output name, the input's shape and the output tensor of `node`."""
        x, y = node.input[0], node.output[0]
        return x, y, self.tensor(x, node, index).shape, self.tensor(y, node, index)

    def side_output(self, name: str, source: str, op: str, node: NodeProto, index: int) -> None:
        """A secondary output (indices, saved statistics) as a view of `source`; nothing if the output is unused."""
        if name:
            self.tensor(name, node, index)
            self.views.append(View(name, (source,), op))

    def fresh(self, base: str, shape: tuple[int, ...], bits: int) -> str:
        """A new intermediate activation tensor (cascade step) with a unique name."""
        name, k = base, 1
        while name in self.tensors or name in self.info:
            k += 1
            name = f"{base}#{k}"
        self.tensors[name] = Tensor(name, tuple(f"d{j}" for j in range(len(shape))), shape, bits)
        return name

    def register_outputs(self, node: NodeProto, index: int, *, allow_unknown: bool = False,
                         kind: TensorKind = "activation") -> list[str]:
        """Tensor entries for every (non-empty) output of `node`."""
        names = []
        for out in node.output:
            if not out:
                continue
            if allow_unknown:
                shape = self.info.get(out, (None, 0))[0]
                if not is_static(shape):
                    continue
            self.tensor(out, node, index, kind)
            names.append(out)
        return names

    def same_shape_fallback(self, node: NodeProto) -> None:
        """Give a shape-preserving node's output its input's shape when inference left it unknown.

        ONNX shape inference skips some function-defined operators (GroupNormalization-21, Mish, ...).
        """
        out, src = node.output[0] if node.output else "", node.input[0] if node.input else ""
        if (node.op_type in _SHAPE_PRESERVING and out and not is_static(self.info.get(out, (None, 0))[0])
                and is_static(self.info.get(src, (None, 0))[0])):
            self.info[out] = (self.info[src][0], self.info.get(out, (None, 0))[1] or self.info[src][1])

    def const(self, name: str) -> np.ndarray | None:
        """Values of a small constant tensor (initializer or Constant output), or None when not constant."""
        if not name:
            return None
        if name in self.consts:
            return self.consts[name]
        init = self.initializers.get(name)
        if init is None or math.prod(init.dims) > MAX_CONST_ELEMENTS or init.data_location == TensorProto.EXTERNAL:
            return None
        value = numpy_helper.to_array(init)
        self.consts[name] = value
        return value

    def add(self, base: str, output: Access, expr: Expr, ranks: list[tuple[str, int]], reduce: str = "sum") -> None:
        """Append one einsum named after `base`."""
        self.einsums.append(Einsum(self.einsum_name(base), output, expr, tuple(ranks), reduce))

    def view(self, node: NodeProto, index: int, outputs: list[str] | None = None, data_inputs: int | None = None
             ) -> None:
        """One zero-compute View per output of `node`, reading its (non-empty) inputs, or only the first
        `data_inputs` of them: a Reshape's target shape or a Slice's bounds are no data of its output."""
        kind: TensorKind = ("constant" if node.op_type == "Constant" else
                            self.kinds.get(node.output[0], "activation") if node.output else "activation")
        for name in outputs if outputs is not None else self.register_outputs(node, index, kind=kind):
            for s in node.input:   # every operand is typed, the parameters too
                if s and (s in self.info or s in self.initializers):
                    self.tensor(s, node, index)
            self.views.append(View(name, tuple(s for s in node.input[:data_inputs] if s), node.op_type.lower()))

    def workload(self) -> Workload:
        """The frozen result; unused graph inputs with static shapes are kept as tensors."""
        for name in self.graph_inputs:
            shape = self.info.get(name, (None, 0))[0]
            if name not in self.tensors and is_static(shape):
                self.tensor(name, NodeProto(), -1)
        return Workload(self.name, tuple(self.tensors.values()), tuple(self.einsums), tuple(self.views),
                        tuple(self.unsupported))


_SHAPE_PRESERVING = {
    "Relu", "Gelu", "Erf", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Sin", "Cos",
    "HardSigmoid", "HardSwish", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish", "Floor", "Ceil",
    "Sign", "Round", "ThresholdedRelu", "Shrink", "Softmax", "LogSoftmax", "Hardmax", "LayerNormalization",
    "RMSNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
    "MeanVarianceNormalization", "LRN", "CumSum", "Identity", "Dropout",
}
_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}


def _input_kinds(model: onnx.ModelProto) -> dict[str, TensorKind]:
    """Graph inputs that are stripped weights/constants (onnxgen metadata, see models/MANIFEST.md)."""
    meta = {p.key: p.value for p in model.metadata_props}
    user = meta.get("onnxgen.user_inputs")
    user_inputs = {s.strip() for s in user.split(",")} if user is not None else None
    initializers = {init.name for init in model.graph.initializer}
    kinds: dict[str, TensorKind] = {}
    for vi in model.graph.input:
        tagged = {p.key: p.value for p in vi.metadata_props}.get("onnxgen.kind")
        if tagged in ("weight", "constant"):
            kinds[vi.name] = tagged
        elif vi.name in initializers or (user_inputs is not None and vi.name not in user_inputs):
            kinds[vi.name] = "weight"
    kinds.update(_kv_caches(model, set(kinds)))
    return kinds


_PASS_THROUGH = {"Identity", "Cast", "Concat"}   # with one input: the same elements under another name
MAX_PASS_THROUGHS = 8   # between a past cache and its extending Concat (exporters leave one or two)


def _kv_caches(model: onnx.ModelProto, parameters: set[str]) -> dict[str, TensorKind]:
    """A decode step's KV cache, by what it does: a graph input (past keys or values) that a Concat extends with
    the step's new rows into a graph output (the present cache), possibly through one-input pass-throughs. The
    input, the tensors on its way and the extended cache are kind 'kv_cache', so that levels holding KV caches
    (`holds: [kv_cache]`) keep them, as the zoo's decode recipes are kept."""
    outputs = {o.name for o in model.graph.output}
    consumers: dict[str, list[NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    found: dict[str, TensorKind] = {}
    for vi in model.graph.input:
        if vi.name in parameters:
            continue
        path, frontier = [vi.name], vi.name
        while True:
            nodes = consumers.get(frontier, [])
            step = next((n for n in nodes if n.op_type in _PASS_THROUGH and len([i for i in n.input if i]) == 1), None)
            extend = next((n for n in nodes if n.op_type == "Concat" and len(n.input) > 1 and n.output[0] in outputs),
                          None)
            if extend is not None:
                found.update(dict.fromkeys([*path, extend.output[0]], "kv_cache"))
                break
            if step is None or len(path) > MAX_PASS_THROUGHS:
                break
            frontier = step.output[0]
            path.append(frontier)
    return found


Handler = Callable[[Graph, NodeProto, int], None]  # imports one node into the graph


def attrs(node: NodeProto) -> dict[str, Any]:
    """The node's attributes by name, as Python values."""
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def optional_input(node: NodeProto, k: int) -> str | None:
    """Name of input `k`, or None when it is absent or left empty."""
    return node.input[k] if len(node.input) > k and node.input[k] else None


def norm_axis(axis: int, rank: int) -> int:
    """A possibly negative ONNX axis as an index into `rank` dims."""
    return axis + rank if axis < 0 else axis


def named_ranks(prefix: str, sizes: tuple[int, ...]) -> list[tuple[str, int]]:
    """Rank names prefix0, prefix1, ... with their sizes."""
    return [(f"{prefix}{k}", s) for k, s in enumerate(sizes)]


def plain(ranks: list[tuple[str, int]]) -> tuple[Affine, ...]:
    """Each rank indexing its own dim."""
    return tuple(Affine.rank(r) for r, _ in ranks)


def bcast(name: str, shape: tuple[int, ...], ranks: list[tuple[str, int]], *, axis: int | None = None) -> Access:
    """Read `name` broadcast (numpy rules, right-aligned; or a 1-D tensor along `axis`) over `ranks`."""
    if axis is not None and len(shape) == 1 and len(ranks) > 1:
        rank, size = ranks[axis]
        return Access(name, (Affine.rank(rank) if shape[0] == size and size != 1 else Affine(),))
    offset = len(ranks) - len(shape)
    indices = []
    for j, dim in enumerate(shape):
        rank, size = ranks[offset + j]
        indices.append(Affine.rank(rank) if dim == size and dim != 1 else Affine())
    return Access(name, tuple(indices))
