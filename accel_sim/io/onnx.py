"""ONNX models -> accel-sim workloads: compute nodes become einsums, data movement becomes views.

Only shapes are read: weights stay on disk (``load_external_data=False``) and an initializer's values
are read only when it is small and an operand value is needed (reduction axes, CumSum axis). Every
static shape comes from ``onnx.shape_inference.infer_shapes(strict_mode=False, data_prop=True)``.

Choices worth knowing:
* Bias and output scaling of Conv/Gemm are separate map einsums after the contraction, so MACs stay
  exactly ``output elements x Cin/groups x kernel`` (Conv) and ``M x N x K`` (Gemm/MatMul).
* Normalisations and Softmax are short cascades of reductions and map ops (mean = sum of x/N,
  variance = sum of square(x - mean)/N); they contain no contraction, so their MACs are 0.
* ConvTranspose is the scatter form ``Y[n, m, s*i + d*r - pad] += X[n, c, i] * W[c, m, r]``
  (MACs = input elements x Cout/groups x kernel, every multiply the operator performs).
* Data-dependent dimensions (NonZero's count) take their upper bound, the input's element count,
  so that downstream nodes get static shapes; the workload then describes the worst case.
"""
from __future__ import annotations

import math
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.inliner
from onnx import NodeProto, TensorProto, helper, numpy_helper

from accel_sim.errors import ConfigError
from accel_sim.spec.workload import Access, Affine, Call, Const, Einsum, Expr, Tensor, TensorKind, View, Workload

# Element widths of ONNX element types (onnx/onnx.proto3, TensorProto.DataType). STRING has no fixed
# width; 64 bits stands for a pointer-sized handle.
_ELEM_BITS: dict[int, int] = {
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
        _ELEM_BITS[getattr(TensorProto, _name)] = _bits

# Largest initializer whose values are read as an operand (axes, k, ...): structural constants are
# tiny, weights are not, and reading a weight would break the 400 MB import budget.
_MAX_CONST_ELEMENTS = 100_000
_STANDARD_DOMAINS = ("", "ai.onnx")
_UNSUPPORTED_FIX = ("rerun without --strict to import the rest (the node is then listed as unsupported), "
                    "or export the model with standard ONNX operators (ai.onnx domain, no custom or fused ops)")


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------
def load_onnx(path: str | Path, *, strict: bool = False) -> Workload:
    """Import an ONNX model as a Workload (einsums + views); unsupported ops are listed or, if strict, raise."""
    path = Path(path)
    model = read_model(path)
    graph = _Graph(path, model, _inferred(model, path))
    for index, node in enumerate(model.graph.node):
        handler = _HANDLERS.get(node.op_type) if node.domain in _STANDARD_DOMAINS else None
        if handler is None:
            if strict:
                raise ConfigError(
                    f"unsupported ONNX operator {node.op_type} (domain '{node.domain or 'ai.onnx'}') "
                    f"at node '{graph.node_name(node, index)}'",
                    fix=_UNSUPPORTED_FIX, file=path, key_path=f"graph.node[{index}]")
            graph.unsupported.append(f"{node.op_type} '{graph.node_name(node, index)}'")
            graph.unsupported_outputs.update(node.output)
            graph.register_outputs(node, index, allow_unknown=True)
            continue
        graph.same_shape_fallback(node)
        handler(graph, node, index)
    return graph.workload()


def import_summary(workload: Workload) -> dict[str, Any]:
    """Counts of an imported workload: einsums, views, MACs, ops, weight bytes and unsupported ops."""
    return {
        "name": workload.name,
        "einsums": len(workload.einsums),
        "views": len(workload.views),
        "tensors": len(workload.tensors),
        "macs": workload.total_macs,
        "ops": workload.total_ops,
        "weight_bytes": sum(t.bytes for t in workload.tensors if t.kind == "weight"),
        "unsupported": list(workload.unsupported),
    }


# ---------------------------------------------------------------------------------------------
# Reading, checking, shape inference
# ---------------------------------------------------------------------------------------------
def read_model(path: Path) -> onnx.ModelProto:
    """The model with every large tensor's values left in the file; checked by onnx.checker."""
    fix = "give the path of an .onnx file written by onnx.save or torch.onnx.export (re-export it if it is truncated)"
    if not path.is_file():
        raise ConfigError("the ONNX file does not exist", file=path, fix="check the path")
    try:
        stripped = _without_large_payloads(path)
        model = onnx.ModelProto.FromString(stripped)
    except Exception as exc:  # _WireError, protobuf's DecodeError, RuntimeWarning or ValueError depending on the bytes
        raise ConfigError(f"not a readable ONNX model ({type(exc).__name__}: {exc})", file=path, fix=fix) from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node:
        raise ConfigError("not a readable ONNX model (no IR version or no graph nodes)", file=path, fix=fix)
    checkable, locations = _checkable(stripped)
    _check_external_locations(path, locations)
    try:
        onnx.checker.check_model(checkable)
    except (onnx.checker.ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"the ONNX model fails onnx.checker: {first}", file=path,
                          fix="re-export the model or repair it so that onnx.checker.check_model passes") from None
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    return model


# ---------------------------------------------------------------------------------------------
# Protobuf wire format: the model's bytes with large tensor payloads left out, read through mmap
# ---------------------------------------------------------------------------------------------
# Length-delimited fields that can hold tensors, by message (field numbers of onnx/onnx.proto, onnx 1.23):
# ModelProto.graph 7, .functions 25; GraphProto.node 1, .initializer 5; FunctionProto.node 7;
# NodeProto.attribute 5; AttributeProto.t 5, .g 6, .tensors 10, .graphs 11. Every other field is copied
# as it is (sparse initializers included: they keep their values).
_TENSOR_FIELDS: dict[str, dict[int, str]] = {
    "model": {7: "graph", 25: "function"},
    "graph": {1: "node", 5: "tensor"},
    "function": {7: "node"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph"},
}
# TensorProto fields (onnx.proto): dims 1, data_type 2, segment 3, name 8, external_data 13, data_location 14, and
# the value fields float_data 4, int32_data 5, string_data 6, int64_data 7, raw_data 9, double_data 10,
# uint64_data 11.
_DIMS, _DATA_TYPE, _SEGMENT, _NAME, _EXTERNAL_DATA, _DATA_LOCATION = 1, 2, 3, 8, 13, 14
_VALUE_FIELDS = {4, 5, 6, 7, 9, 10, 11}
_RAW_DATA, _FLOAT_DATA, _DOUBLE_DATA = 9, 4, 10
_EXTERNAL_FLAG = bytes((_DATA_LOCATION << 3, TensorProto.EXTERNAL))  # data_location: EXTERNAL, as protobuf writes it
# A tensor up to _INLINE_LIMIT_BYTES keeps its values (shape, axes, pads operands are far smaller) until the
# kept tensors add up to _INLINE_BUDGET_BYTES; after that only tensors up to _TIGHT_LIMIT_BYTES do (128 int64,
# more than any shape operand), so that no model, however many mid-sized tensors it has, breaks the 400 MB budget.
_INLINE_LIMIT_BYTES = 64 * 1024
_INLINE_BUDGET_BYTES = 64 * 2**20
_TIGHT_LIMIT_BYTES = 1024
_STRIPPED_KEY = "accel_sim.values"  # external_data entry that marks a payload left in the model file


class _WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise _WireError(f"a varint runs past byte {end}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _WireError(f"a varint at byte {pos} is longer than 10 bytes")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field_bytes(field: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _encode_varint(field << 3 | 2) + _encode_varint(len(payload)) + payload


def _fields(buf: Any, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, field start, value start, field end) of each field of buf[start:end]."""
    pos = start
    while pos < end:
        at = pos
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            body, (_, pos) = pos, _varint(buf, pos, end)
        elif wire in (1, 5):
            body, pos = pos, pos + (8 if wire == 1 else 4)
        elif wire == 2:
            length, body = _varint(buf, pos, end)
            pos = body + length
        else:
            raise _WireError(f"wire type {wire} (field {field}) at byte {at}")
        if field == 0 or pos > end:
            raise _WireError(f"field {field} at byte {at} runs past byte {end} (truncated file?)")
        yield field, wire, at, body, pos


TensorRewrite = Callable[[Any, int, int], "bytes | None"]


def _rewrite(buf: Any, start: int, end: int, kind: str, tensor: TensorRewrite, skip: Callable[[int, int], bool]
             ) -> bytes | None:
    """The `kind` message buf[start:end] with `tensor` applied to each tensor inside; None when unchanged."""
    if skip(start, end):
        return None
    children = _TENSOR_FIELDS[kind]
    parts: list[bytes] = []
    copied = start
    for field, wire, at, body, field_end in _fields(buf, start, end):
        child = children.get(field) if wire == 2 else None
        if child is None:
            continue
        new = tensor(buf, body, field_end) if child == "tensor" else _rewrite(buf, body, field_end, child, tensor, skip)
        if new is not None:
            parts += [buf[copied:at], _field_bytes(field, new)]
            copied = field_end
    if not parts:
        return None
    parts.append(buf[copied:end])
    return b"".join(parts)


class _PayloadStripper:
    """Rewrites large tensors as external data pointing back into the model file (values never read)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.kept_bytes = 0

    def __call__(self, buf: Any, start: int, end: int) -> bytes | None:
        size = end - start
        if size <= (_INLINE_LIMIT_BYTES if self.kept_bytes < _INLINE_BUDGET_BYTES else _TIGHT_LIMIT_BYTES):
            self.kept_bytes += size
            return None
        kept: list[bytes] = []
        values: dict[int, tuple[int, int, int, int]] = {}  # field -> (wire, first value start, its end, count)
        data_type, external = 0, False
        for field, wire, at, body, field_end in _fields(buf, start, end):
            if field in _VALUE_FIELDS:
                first = values.get(field)
                values[field] = (wire, body, field_end, 1) if first is None else (*first[:3], first[3] + 1)
                continue
            if wire == 0 and field in (_DATA_TYPE, _DATA_LOCATION):
                value = _varint(buf, body, field_end)[0]
                data_type = value if field == _DATA_TYPE else data_type
                external = external or (field == _DATA_LOCATION and value == TensorProto.EXTERNAL)
            kept.append(buf[at:field_end])
        if external or len(values) != 1:  # already external, or malformed: leave it to the checker
            self.kept_bytes += size
            return None
        (field, (wire, body, body_end, count)), = values.items()
        entries = {"location": self.location}
        # raw_data, and packed float/double data, lie in the file as the tensor's little-endian values
        raw = field == _RAW_DATA or (field, data_type) in ((_FLOAT_DATA, TensorProto.FLOAT),
                                                            (_DOUBLE_DATA, TensorProto.DOUBLE))
        if raw and wire == 2 and count == 1:
            entries |= {"offset": str(body), "length": str(body_end - body)}
        entries[_STRIPPED_KEY] = "left in the model file"
        kept += [_field_bytes(_EXTERNAL_DATA, _field_bytes(1, k.encode()) + _field_bytes(2, v.encode()))
                 for k, v in entries.items()]
        kept.append(_EXTERNAL_FLAG)
        return b"".join(kept)


def _without_large_payloads(path: Path) -> bytes:
    """The model file's bytes, each large tensor's values replaced by an external-data reference to them."""
    if path.stat().st_size == 0:
        return b""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        end = len(buf)
        new = _rewrite(buf, 0, end, "model", _PayloadStripper(path.name),
                       lambda s, e: e - s <= _TIGHT_LIMIT_BYTES and s > 0)
        return buf[:] if new is None else new


def _checkable(stripped: bytes) -> tuple[bytes, list[tuple[str, str]]]:
    """A copy for onnx.checker with each external tensor shape-less and value-less, and the (tensor name,
    location) of every external-data reference that was in the file.

    The checker resolves external locations against the working folder for in-memory models; the model's
    own references are resolved by _check_external_locations against the model's folder instead.
    """
    locations: list[tuple[str, str]] = []

    def placeholder(buf: Any, start: int, end: int) -> bytes | None:
        if buf.find(_EXTERNAL_FLAG, start, end) < 0:
            return None
        kept, entries, external, name = [], {}, False, ""
        for field, wire, at, body, field_end in _fields(buf, start, end):
            if field == _DATA_LOCATION and wire == 0:
                external = _varint(buf, body, field_end)[0] == TensorProto.EXTERNAL
            elif field == _EXTERNAL_DATA and wire == 2:
                entry = onnx.StringStringEntryProto.FromString(buf[body:field_end])
                entries[entry.key] = entry.value
            elif field not in _VALUE_FIELDS and field not in (_DIMS, _SEGMENT):
                if field == _NAME and wire == 2:
                    name = buf[body:field_end].decode(errors="replace")
                kept.append(buf[at:field_end])
        if not external:
            return None
        if _STRIPPED_KEY not in entries:
            locations.append((name, entries.get("location", "")))
        # zero elements need no value field (onnx checker), so the copy carries no data
        return b"".join(kept) + bytes((_DIMS << 3, 0))

    new = _rewrite(stripped, 0, len(stripped), "model", placeholder,
                   lambda s, e: stripped.find(_EXTERNAL_FLAG, s, e) < 0)
    return (stripped if new is None else new), locations


def _check_external_locations(path: Path, locations: list[tuple[str, str]]) -> None:
    """Each external-data location is a relative path to a regular file inside the model's folder
    (onnx.checker's rule for a model checked by path)."""
    for name, location in locations:
        normal = os.path.normpath(location) if location else ""
        if not normal or os.path.isabs(normal) or normal == os.pardir or normal.startswith(os.pardir + os.sep):
            problem = "should be a relative path inside the model's folder"
        elif not (path.parent / normal).is_file():
            problem = "is not a file beside the model"
        else:
            continue
        raise ConfigError(f"the ONNX model fails onnx.checker: external data of tensor '{name}' at "
                          f"'{location}' {problem}", file=path,
                          fix="keep the external-data files where onnx.save wrote them, next to the .onnx file")


def _infer(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:  # InferenceError and protobuf errors alike
        raise ConfigError(f"ONNX shape inference failed: {str(exc).strip().splitlines()[0]}", file=path,
                          fix="re-export the model so that onnx.shape_inference.infer_shapes succeeds") from None


def _inferred(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """Shape-inferred model; NonZero counts get their upper bound so later shapes are static."""
    inferred = _infer(model, path)
    info = _value_infos(inferred)
    bounded = False
    for node in inferred.graph.node:
        if node.op_type != "NonZero" or node.domain not in _STANDARD_DOMAINS:
            continue
        shape = info.get(node.input[0], (None, 0))[0]
        out_shape = info.get(node.output[0], (None, 0))[0]
        if not _static(shape) or _static(out_shape):
            continue
        bound = helper.make_tensor_value_info(node.output[0], TensorProto.INT64, [len(shape), math.prod(shape)])
        model.graph.value_info.append(bound)
        bounded = True
    if bounded:
        inferred = _infer(model, path)
        info = _value_infos(inferred)
    if all(_static(info.get(o, (None, 0))[0]) for node in model.graph.node for o in node.output if o):
        return inferred
    folded = _fold_shape_arithmetic(model, info)
    return _infer(folded, path) if folded is not None else inferred


# Never evaluated while folding: random or data-producing ops, and ops with subgraphs.
_NO_FOLD = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial",
            "If", "Loop", "Scan"}


def _fold_shape_arithmetic(model: onnx.ModelProto, info: dict[str, tuple[Shape, int]]) -> onnx.ModelProto | None:
    """A copy of `model` where shape arithmetic on small constants (TorchScript's Shape->Gather->Div->Concat
    chains) is replaced by initializers, so that shape inference sees through it; None if nothing folds.

    The copy only feeds shape inference: every node of the original is still imported.
    """
    from onnx.reference import ReferenceEvaluator

    values: dict[str, np.ndarray] = {}
    for init in model.graph.initializer:
        if math.prod(init.dims) <= _MAX_CONST_ELEMENTS and init.data_location != TensorProto.EXTERNAL:
            values[init.name] = numpy_helper.to_array(init)
    folded: set[int] = set()
    opsets = {o.domain or "": o.version for o in model.opset_import}
    for index, node in enumerate(model.graph.node):
        if node.domain not in _STANDARD_DOMAINS or node.op_type in _NO_FOLD:
            continue
        shape = info.get(node.input[0], (None, 0))[0] if node.input else None
        if node.op_type in ("Shape", "Size") and _static(shape):
            at = _attrs(node)
            dims = np.array(shape, dtype=np.int64)
            outputs = [dims[at.get("start", 0): at.get("end", len(dims))] if node.op_type == "Shape"
                       else np.array(int(np.prod(dims)), dtype=np.int64)]
        elif all(not name or name in values for name in node.input) and (node.input or node.op_type == "Constant"):
            try:
                outputs = ReferenceEvaluator(node, opsets=opsets).run(
                    None, {name: values[name] for name in node.input if name})
            except Exception:  # an op the reference cannot run: leave it to shape inference
                continue
        else:
            continue
        if any(np.asarray(v).size > _MAX_CONST_ELEMENTS for v in outputs):
            continue
        values.update({name: np.asarray(v) for name, v in zip(node.output, outputs) if name})
        folded.add(index)
    if not folded:
        return None
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(n for k, n in enumerate(model.graph.node) if k not in folded)
    for k in sorted(folded):
        for name in model.graph.node[k].output:
            if name:
                copy.graph.initializer.append(numpy_helper.from_array(values[name], name))
    return copy


Shape = tuple[int | str | None, ...] | None  # a dim is a size, a symbolic name or unknown; None: unknown rank


def _static(shape: Shape) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _value_infos(model: onnx.ModelProto) -> dict[str, tuple[Shape, int]]:
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
        if vi.name in out and not _static(shape):
            continue
        out[vi.name] = (shape, ttype.elem_type)
    return out


# ---------------------------------------------------------------------------------------------
# The import state: tensors, einsums and views collected node by node
# ---------------------------------------------------------------------------------------------
class _Graph:
    """Accumulates the workload while walking the nodes (private; the result is a frozen Workload)."""

    def __init__(self, path: Path, model: onnx.ModelProto, shapes: onnx.ModelProto) -> None:
        self.path = path
        self.name = model.graph.name or path.stem
        self.opset = next((o.version for o in model.opset_import if o.domain in _STANDARD_DOMAINS), 1)
        self.info = _value_infos(shapes)
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
        if not _static(shape):
            if name in self.unsupported_outputs:
                raise ConfigError(
                    f"tensor '{name}' read by {node.op_type} node '{self.node_name(node, index)}' comes from an "
                    "unsupported operator and has no static shape", file=self.path, key_path=f"graph.node[{index}]",
                    fix="export the model with standard ONNX operators so that shape inference can see through it")
            dims = "unknown rank" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
            raise ConfigError(
                f"tensor '{name}' of {node.op_type} node '{self.node_name(node, index)}' has no static shape "
                f"after ONNX shape inference ({dims})", file=self.path, key_path=f"graph.node[{index}]",
                fix="export the model with static input shapes (fixed batch and sequence length), or fix the "
                    "symbolic dimensions first (onnx.tools.update_model_dims.update_inputs_outputs_dims)")
        return shape

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
        tensor = Tensor(name, tuple(f"d{k}" for k in range(len(shape))), shape, _ELEM_BITS.get(elem, 32), kind)
        self.tensors[name] = tensor
        return tensor

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
                if not _static(shape):
                    continue
            self.tensor(out, node, index, kind)
            names.append(out)
        return names

    def same_shape_fallback(self, node: NodeProto) -> None:
        """Give a shape-preserving node's output its input's shape when inference left it unknown.

        ONNX shape inference skips some function-defined operators (GroupNormalization-21, Mish, ...).
        """
        out, src = node.output[0] if node.output else "", node.input[0] if node.input else ""
        if (node.op_type in _SHAPE_PRESERVING and out and not _static(self.info.get(out, (None, 0))[0])
                and _static(self.info.get(src, (None, 0))[0])):
            self.info[out] = (self.info[src][0], self.info.get(out, (None, 0))[1] or self.info[src][1])

    def const(self, name: str) -> np.ndarray | None:
        """Values of a small constant tensor (initializer or Constant output), or None when not constant."""
        if not name:
            return None
        if name in self.consts:
            return self.consts[name]
        init = self.initializers.get(name)
        if init is None or math.prod(init.dims) > _MAX_CONST_ELEMENTS or init.data_location == TensorProto.EXTERNAL:
            return None
        value = numpy_helper.to_array(init)
        self.consts[name] = value
        return value

    def add(self, base: str, output: Access, expr: Expr, ranks: list[tuple[str, int]], reduce: str = "sum") -> None:
        """Append one einsum named after `base`."""
        self.einsums.append(Einsum(self.einsum_name(base), output, expr, tuple(ranks), reduce))

    def view(self, node: NodeProto, index: int, outputs: list[str] | None = None) -> None:
        """One zero-compute View per output of `node`, reading all its (non-empty) inputs."""
        kind: TensorKind = "constant" if node.op_type == "Constant" else "activation"
        for name in outputs if outputs is not None else self.register_outputs(node, index, kind=kind):
            sources = tuple(s for s in node.input if s)
            for s in sources:
                if s in self.info or s in self.initializers:
                    self.tensor(s, node, index)
            self.views.append(View(name, sources, node.op_type.lower()))

    def workload(self) -> Workload:
        """The frozen result; unused graph inputs with static shapes are kept as tensors."""
        for name in self.graph_inputs:
            shape = self.info.get(name, (None, 0))[0]
            if name not in self.tensors and _static(shape):
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
    return kinds


def _attrs(node: NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _ranks(prefix: str, sizes: tuple[int, ...]) -> list[tuple[str, int]]:
    return [(f"{prefix}{k}", s) for k, s in enumerate(sizes)]


def _plain(ranks: list[tuple[str, int]]) -> tuple[Affine, ...]:
    return tuple(Affine.rank(r) for r, _ in ranks)


def _bcast(name: str, shape: tuple[int, ...], ranks: list[tuple[str, int]], *, axis: int | None = None) -> Access:
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


# ---------------------------------------------------------------------------------------------
# Elementwise map ops: one table, ONNX op -> expression over broadcast operands
# ---------------------------------------------------------------------------------------------
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
    return Call("where", (Call("gt", (x, _ZERO)), x, Call("mul", (Const(alpha), Call("sub", (Call("exp", (x,)), _ONE))))))


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


def _map_node(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    out = node.output[0]
    shape = g.tensor(out, node, index).shape
    ranks = _ranks("d", shape)
    axis = _axis(at.get("axis", 1), len(shape)) if node.op_type in _PER_AXIS else None
    args: list[Expr] = []
    for name in node.input:
        if not name:
            args.append(None)  # type: ignore[arg-type]  # optional input left out; builders test for it
            continue
        t = g.tensor(name, node, index)
        args.append(_bcast(name, t.shape, ranks, axis=axis))
    g.add(g.node_name(node, index), Access(out, _plain(ranks)), _MAP[node.op_type](args, at), ranks)
    for extra in node.output[1:]:
        if extra:
            g.tensor(extra, node, index)
            g.views.append(View(extra, (node.input[0],), node.op_type.lower()))


# ---------------------------------------------------------------------------------------------
# Contractions: MatMul, Gemm, Einsum, Conv, ConvTranspose
# ---------------------------------------------------------------------------------------------
# Which inputs are (A, B) for matmul-like ops and (X, W, bias) for conv-like ops.
_MATMUL_INPUTS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
_CONV_INPUTS = {"Conv": (0, 1, 2), "ConvInteger": (0, 1, None), "QLinearConv": (0, 3, 8)}


def _matmul(g: _Graph, node: NodeProto, index: int) -> None:
    ia, ib = _MATMUL_INPUTS[node.op_type]
    a_name, b_name, y = node.input[ia], node.input[ib], node.output[0]
    a, b = g.tensor(a_name, node, index).shape, g.tensor(b_name, node, index).shape
    yshape = g.tensor(y, node, index).shape
    k = a[-1]
    has_m, has_n = len(a) > 1, len(b) > 1
    batch = yshape[: len(yshape) - has_m - has_n]
    ranks = _ranks("b", batch) + ([("m", a[-2])] if has_m else []) + ([("n", b[-1])] if has_n else []) + [("k", k)]
    batch_ranks = ranks[: len(batch)]
    a_idx = _bcast(a_name, a[:-2], batch_ranks).indices + ((Affine.rank("m"),) if has_m else ()) + (Affine.rank("k"),)
    b_idx = (_bcast(b_name, b[:-2], batch_ranks).indices if has_n else ()) + (Affine.rank("k"),) \
        + ((Affine.rank("n"),) if has_n else ())
    out = Access(y, _plain(ranks[:-1]))
    g.add(g.node_name(node, index), out, Call("mul", (Access(a_name, a_idx), Access(b_name, b_idx))), ranks)


def _gemm(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
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
        _epilogue(g, f"{name}.bias", y, acc, bias and _bcast(bias, g.tensor(bias, node, index).shape, ranks[:2]),
                  alpha, beta, ranks[:2])


def _epilogue(g: _Graph, name: str, y: str, acc: str, bias: Access | None, alpha: float, beta: float,
              ranks: list[tuple[str, int]]) -> None:
    """Y = alpha * acc + beta * bias as one map einsum (scales left out when they are 1)."""
    expr: Expr = Access(acc, _plain(ranks))
    if alpha != 1.0:
        expr = Call("mul", (Const(alpha), expr))
    if bias is not None:
        expr = Call("add", (expr, bias if beta == 1.0 else Call("mul", (Const(beta), bias))))
    g.add(name, Access(y, _plain(ranks)), expr, ranks)


def _einsum(g: _Graph, node: NodeProto, index: int) -> None:
    equation = _attrs(node)["equation"].decode().replace(" ", "")
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


def _spatial_names(k: int) -> tuple[list[str], list[str]]:
    if k == 1:
        return ["p"], ["r"]
    if k == 2:
        return ["p", "q"], ["r", "s"]
    return [f"p{j}" for j in range(k)], [f"r{j}" for j in range(k)]


@dataclass(frozen=True)
class _Window:
    """Sliding-window geometry of a conv or pool along the spatial dims."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pad_begin: tuple[int, ...]


def _window(at: dict[str, Any], in_spatial: tuple[int, ...], out_spatial: tuple[int, ...],
            kernel: tuple[int, ...]) -> _Window:
    k = len(in_spatial)
    strides = tuple(at.get("strides", [1] * k))
    dilations = tuple(at.get("dilations", [1] * k))
    auto_pad = at.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (o - 1) * s + (kk - 1) * d + 1 - i)
                 for i, o, s, kk, d in zip(in_spatial, out_spatial, strides, kernel, dilations)]
        begin = tuple(t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total)
    elif auto_pad == "VALID":
        begin = (0,) * k
    else:
        begin = tuple(at.get("pads", [0] * 2 * k)[:k])
    return _Window(kernel, strides, dilations, begin)


def _window_index(out_rank: str, kernel_rank: str, stride: int, dilation: int, pad: int) -> Affine:
    return Affine(((out_rank, stride), (kernel_rank, dilation)), -pad)


def _conv(g: _Graph, node: NodeProto, index: int) -> None:
    ix, iw, ib = _CONV_INPUTS[node.op_type]
    at = _attrs(node)
    x, w, y = node.input[ix], node.input[iw], node.output[0]
    xs, ws = g.tensor(x, node, index).shape, g.tensor(w, node, index).shape
    yt = g.tensor(y, node, index)
    groups = int(at.get("group", 1))
    spatial = len(xs) - 2
    win = _window(at, xs[2:], yt.shape[2:], tuple(ws[2:]))
    outs, kers = _spatial_names(spatial)
    cg, mg = ws[1], ws[0] // groups
    ranks = [("n", xs[0])] + ([("g", groups)] if groups > 1 else []) + [("m", mg), ("c", cg)] \
        + list(zip(outs, yt.shape[2:])) + list(zip(kers, win.kernel))
    grouped = (lambda size, r: Affine((("g", size), (r, 1)))) if groups > 1 else (lambda size, r: Affine.rank(r))
    taps = tuple(_window_index(o, r, s, d, p)
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
        out_ranks = _ranks("d", yt.shape)
        _epilogue(g, f"{name}.bias", y, acc, Access(bias, (Affine.rank("d1"),)), 1.0, 1.0, out_ranks)


def _conv_transpose(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
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
    ins, kers = _spatial_names(spatial)
    cg, mg = xs[1] // groups, ws[1]
    ranks = [("n", xs[0])] + ([("g", groups)] if groups > 1 else []) + [("m", mg), ("c", cg)] \
        + list(zip(ins, xs[2:])) + list(zip(kers, kernel))
    grouped = (lambda size, r: Affine((("g", size), (r, 1)))) if groups > 1 else (lambda size, r: Affine.rank(r))
    x_acc = Access(x, (Affine.rank("n"), grouped(cg, "c")) + tuple(Affine.rank(i) for i in ins))
    w_acc = Access(w, (grouped(cg, "c"), Affine.rank("m")) + tuple(Affine.rank(r) for r in kers))
    out_ix = (Affine.rank("n"), grouped(mg, "m")) + tuple(
        _window_index(i, r, s, d, p) for i, r, s, d, p in zip(ins, kers, strides, dilations, pads))
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    name = g.node_name(node, index)
    acc = y if bias is None else g.fresh(f"{y}.convT", yt.shape, yt.bits)
    g.add(name, Access(acc, out_ix), Call("mul", (x_acc, w_acc)), ranks)
    if bias is not None:
        g.tensor(bias, node, index)
        _epilogue(g, f"{name}.bias", y, acc, Access(bias, (Affine.rank("d1"),)), 1.0, 1.0, _ranks("d", yt.shape))


# ---------------------------------------------------------------------------------------------
# Reductions, pooling, normalisation and softmax cascades
# ---------------------------------------------------------------------------------------------
def _reduce_into(g: _Graph, name: str, out: str, src_expr: Callable[[list[tuple[str, int]]], Expr],
                 in_shape: tuple[int, ...], axes: set[int], keepdims: bool, reduce: str) -> None:
    """out = reduce over `axes` of src_expr(ranks), the input iteration space named r0, r1, ..."""
    ranks = _ranks("r", in_shape)
    out_ix = tuple(Affine() if j in axes else Affine.rank(r) for j, (r, _) in enumerate(ranks)
                   if keepdims or j not in axes)
    g.add(name, Access(out, out_ix), src_expr(ranks), ranks, reduce)


def _keep_shape(shape: tuple[int, ...], axes: set[int]) -> tuple[int, ...]:
    return tuple(1 if j in axes else d for j, d in enumerate(shape))


def _reduce_axes(g: _Graph, node: NodeProto, at: dict[str, Any], in_shape: tuple[int, ...],
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
    return {_axis(a, rank) for a in axes}


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


def _reduce(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    axes = _reduce_axes(g, node, at, xs, yt.shape)
    if axes is None:
        g.views.append(View(y, (x,), "identity"))
        return
    reduce, pre, post = _REDUCE[node.op_type]
    n = math.prod(xs[j] for j in axes)
    keep = bool(at.get("keepdims", 1))
    name = g.node_name(node, index)
    target = y if post is None else g.fresh(f"{y}.{reduce}", yt.shape, yt.bits)
    _reduce_into(g, name, target, lambda r: pre(Access(x, _plain(r)), n), xs, axes, keep, reduce)
    if post is not None:
        ranks = _ranks("d", yt.shape)
        g.add(f"{name}.{post}", Access(y, _plain(ranks)), Call(post, (Access(target, _plain(ranks)),)), ranks)


def _arg_reduce(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    g.tensor(y, node, index)
    axis = _axis(at.get("axis", 0), len(xs))
    reduce = "max" if node.op_type == "ArgMax" else "min"
    _reduce_into(g, g.node_name(node, index), y, lambda r: Access(x, _plain(r)), xs, {axis},
                 bool(at.get("keepdims", 1)), reduce)


def _topk(g: _Graph, node: NodeProto, index: int) -> None:
    """Values[.., t, ..] = max over the axis, for each of the k slots t (a k-pass selection)."""
    at = _attrs(node)
    x, values = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    vt = g.tensor(values, node, index)
    axis = _axis(at.get("axis", -1), len(xs))
    largest = at.get("largest", 1)
    ranks = _ranks("r", xs)
    iter_ranks = ranks + [("t", vt.shape[axis])]
    out_ix = tuple(Affine.rank("t") if j == axis else Affine.rank(r) for j, (r, _) in enumerate(ranks))
    g.add(g.node_name(node, index), Access(values, out_ix), Access(x, _plain(ranks)), iter_ranks,
          "max" if largest else "min")
    if len(node.output) > 1 and node.output[1]:
        g.tensor(node.output[1], node, index)
        g.views.append(View(node.output[1], (x,), "topk_indices"))


def _cumsum(g: _Graph, node: NodeProto, index: int) -> None:
    """Y[a] = Y[a-1] + X[a] as a running reduction (exclusive reads X[a-1]; reverse walks a backwards)."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    g.tensors[y] = Tensor(y, tuple(f"d{k}" for k in range(len(xs))), xs,
                          _ELEM_BITS.get(g.info.get(y, (None, 1))[1], 32), "activation", init=0.0)
    value = g.const(node.input[1])
    if value is None:
        raise ConfigError(f"CumSum node '{g.node_name(node, index)}' has a computed axis", file=g.path,
                          key_path=f"graph.node[{index}]", fix="export the model with a constant CumSum axis")
    axis = _axis(int(np.ravel(value)[0]), len(xs))
    ranks = _ranks("d", xs)
    rank, size = ranks[axis]
    reverse, exclusive = bool(at.get("reverse", 0)), bool(at.get("exclusive", 0))
    sign, base = (-1, size - 1) if reverse else (1, 0)

    def at_step(shift: int) -> tuple[Affine, ...]:
        return tuple(Affine(((rank, sign),), base - sign * shift) if j == axis else Affine.rank(r)
                     for j, (r, _) in enumerate(ranks))

    src = Access(x, at_step(1) if exclusive else at_step(0))
    g.add(g.node_name(node, index), Access(y, at_step(0)), Call("add", (Access(y, at_step(1)), src)), ranks)


def _softmax_axes(g: _Graph, at: dict[str, Any], rank: int) -> set[int]:
    if g.opset < 13:  # opsets 1-12 flatten the input to 2-D at `axis` (default 1)
        return set(range(_axis(at.get("axis", 1), rank), rank))
    return {_axis(at.get("axis", -1), rank)}


def _softmax(g: _Graph, node: NodeProto, index: int) -> None:
    """max-reduce, exp(x - max), sum-reduce, divide (LogSoftmax: x - max - log(sum); Hardmax: x == max)."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    axes = _softmax_axes(g, at, len(xs))
    name, kept = g.node_name(node, index), _keep_shape(xs, axes)
    ranks = _ranks("d", xs)
    xa = Access(x, _plain(ranks))
    mx = g.fresh(f"{y}.max", kept, yt.bits)
    _reduce_into(g, f"{name}.max", mx, lambda r: Access(x, _plain(r)), xs, axes, True, "max")
    mxa = _bcast(mx, kept, ranks)
    if node.op_type == "Hardmax":
        g.add(f"{name}.eq", Access(y, _plain(ranks)), Call("eq", (xa, mxa)), ranks)
        return
    ex = g.fresh(f"{y}.exp", xs, yt.bits)
    g.add(f"{name}.exp", Access(ex, _plain(ranks)), Call("exp", (Call("sub", (xa, mxa)),)), ranks)
    sm = g.fresh(f"{y}.sum", kept, yt.bits)
    _reduce_into(g, f"{name}.sum", sm, lambda r: Access(ex, _plain(r)), xs, axes, True, "sum")
    sma = _bcast(sm, kept, ranks)
    if node.op_type == "Softmax":
        g.add(f"{name}.div", Access(y, _plain(ranks)), Call("div", (Access(ex, _plain(ranks)), sma)), ranks)
    else:
        g.add(f"{name}.log", Access(y, _plain(ranks)),
              Call("sub", (Call("sub", (xa, mxa)), Call("log", (sma,)))), ranks)


def _normalize(g: _Graph, name: str, x: str, y: str, xs: tuple[int, ...], axes: set[int], bits: int,
               eps: float, scale: Access | None, bias: Access | None, *, center: bool = True) -> list[str]:
    """mean = sum(x/N); var = sum(square(x - mean)/N); y = (x - mean) * rsqrt(var + eps) * scale + bias."""
    ranks = _ranks("d", xs)
    kept = _keep_shape(xs, axes)
    n = math.prod(xs[j] for j in axes)
    centered: Expr = Access(x, _plain(ranks))
    stats = []
    if center:
        mean = g.fresh(f"{y}.mean", kept, bits)
        _reduce_into(g, f"{name}.mean", mean, lambda r: Call("mul", (Access(x, _plain(r)), Const(1.0 / n))),
                     xs, axes, True, "sum")
        centered = Call("sub", (centered, _bcast(mean, kept, ranks)))
        stats.append(mean)

    var = g.fresh(f"{y}.var", kept, bits)
    mean_in = (lambda r: Call("sub", (Access(x, _plain(r)), _bcast(stats[0], kept, r)))) if center \
        else (lambda r: Access(x, _plain(r)))
    _reduce_into(g, f"{name}.var", var, lambda r: Call("mul", (Call("square", (mean_in(r),)), Const(1.0 / n))),
                 xs, axes, True, "sum")
    expr: Expr = Call("mul", (centered, Call("rsqrt", (Call("add", (_bcast(var, kept, ranks), Const(eps))),))))
    if scale is not None:
        expr = Call("mul", (expr, scale))
    if bias is not None:
        expr = Call("add", (expr, bias))
    g.add(f"{name}.norm", Access(y, _plain(ranks)), expr, ranks)
    return stats + [var]


def _optional(node: NodeProto, k: int) -> str | None:
    return node.input[k] if len(node.input) > k and node.input[k] else None


def _layer_norm(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    ranks = _ranks("d", xs)
    axes = set(range(_axis(at.get("axis", -1), len(xs)), len(xs)))
    operands = [_optional(node, k) for k in (1, 2)]
    scale, bias = (_bcast(n, g.tensor(n, node, index).shape, ranks) if n else None for n in operands)
    center = node.op_type == "LayerNormalization"
    stats = _normalize(g, g.node_name(node, index), x, y, xs, axes, yt.bits, float(at.get("epsilon", 1e-5)),
                       scale, bias, center=center)
    for out, stat in zip(node.output[1:], stats):  # training outputs Mean / InvStdDev
        if out:
            g.tensor(out, node, index)
            g.views.append(View(out, (stat,), "norm_stat"))


def _channel_norm(g: _Graph, node: NodeProto, index: int) -> None:
    """BatchNormalization (inference form) and InstanceNormalization, parameters per channel (dim 1)."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    ranks = _ranks("d", xs)
    params = [_bcast(n, g.tensor(n, node, index).shape, ranks, axis=1) for n in node.input[1:] if n]
    eps = float(at.get("epsilon", 1e-5))
    name = g.node_name(node, index)
    if node.op_type == "InstanceNormalization":
        _normalize(g, name, x, y, xs, set(range(2, len(xs))), yt.bits, eps, params[0], params[1])
        return
    scale, bias, mean, var = params
    inv = Call("rsqrt", (Call("add", (var, Const(eps))),))
    expr = Call("add", (Call("mul", (Call("mul", (Call("sub", (Access(x, _plain(ranks)), mean)), inv)), scale)), bias))
    g.add(name, Access(y, _plain(ranks)), expr, ranks)
    for out, src in zip(node.output[1:], node.input[3:5]):  # training-mode running statistics
        if out:
            g.tensor(out, node, index)
            g.views.append(View(out, (src,), "norm_stat"))


def _group_norm(g: _Graph, node: NodeProto, index: int) -> None:
    """Statistics over (channels of a group, spatial): X viewed as [n, g, c', ...] with channel g*C/G + c'."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    groups = int(at["num_groups"])
    cg = xs[1] // groups
    eps = float(at.get("epsilon", 1e-5))
    name = g.node_name(node, index)
    spatial = _ranks("s", xs[2:])
    ranks = [("n", xs[0]), ("g", groups), ("c", cg)] + spatial
    x_acc = Access(x, (Affine.rank("n"), Affine((("g", cg), ("c", 1)))) + _plain(spatial))
    stat_ix = (Affine.rank("n"), Affine.rank("g"))
    n = cg * math.prod(xs[2:])
    mean = g.fresh(f"{y}.mean", (xs[0], groups), yt.bits)
    var = g.fresh(f"{y}.var", (xs[0], groups), yt.bits)
    g.add(f"{name}.mean", Access(mean, stat_ix), Call("mul", (x_acc, Const(1.0 / n))), ranks)
    centered = Call("sub", (x_acc, Access(mean, stat_ix)))
    g.add(f"{name}.var", Access(var, stat_ix), Call("mul", (Call("square", (centered,)), Const(1.0 / n))), ranks)
    expr: Expr = Call("mul", (centered, Call("rsqrt", (Call("add", (Access(var, stat_ix), Const(eps))),))))
    for k, op in ((1, "mul"), (2, "add")):
        pname = _optional(node, k)
        if pname:
            ps = g.tensor(pname, node, index).shape
            index_ = Affine.rank("g") if ps[0] == groups and groups != xs[1] else Affine((("g", cg), ("c", 1)))
            expr = Call(op, (expr, Access(pname, (index_,))))
    g.add(f"{name}.norm", Access(y, (Affine.rank("n"), Affine((("g", cg), ("c", 1)))) + _plain(spatial)), expr, ranks)


def _lp_norm(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    axes = {_axis(at.get("axis", -1), len(xs))}
    p = float(at.get("p", 2))
    kept, ranks, name = _keep_shape(xs, axes), _ranks("d", xs), g.node_name(node, index)
    norm = g.fresh(f"{y}.norm", kept, yt.bits)
    _reduce_into(g, f"{name}.sum", norm, lambda r: Call("pow", (Call("abs", (Access(x, _plain(r)),)), Const(p))),
                 xs, axes, True, "sum")
    g.add(f"{name}.div", Access(y, _plain(ranks)),
          Call("div", (Access(x, _plain(ranks)), Call("pow", (_bcast(norm, kept, ranks), Const(1.0 / p))))), ranks)


def _mvn(g: _Graph, node: NodeProto, index: int) -> None:
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    axes = {_axis(a, len(xs)) for a in at.get("axes", [0, 2, 3])}
    _normalize(g, g.node_name(node, index), x, y, xs, axes, yt.bits, 1e-9, None, None)


def _pool(g: _Graph, node: NodeProto, index: int) -> None:
    """Window reduction: Y[n, c, p, q] = reduce_{r, s} X[n, c, stride*p + dil*r - pad, ...]."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    name = g.node_name(node, index)
    spatial = len(xs) - 2
    if node.op_type.startswith("Global"):
        win = _Window(tuple(xs[2:]), (1,) * spatial, (1,) * spatial, (0,) * spatial)
    else:
        win = _window(at, xs[2:], yt.shape[2:], tuple(at["kernel_shape"]))
    outs, kers = _spatial_names(spatial)
    ranks = [("n", xs[0]), ("c", xs[1])] + list(zip(outs, yt.shape[2:])) + list(zip(kers, win.kernel))
    x_acc = Access(x, (Affine.rank("n"), Affine.rank("c")) + tuple(
        _window_index(o, r, s, d, p) for o, r, s, d, p in zip(outs, kers, win.strides, win.dilations, win.pad_begin)))
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
        out_ranks = _ranks("d", yt.shape)
        g.add(f"{name}.root", Access(y, _plain(out_ranks)),
              Call("pow", (Access(acc, _plain(out_ranks)), Const(1.0 / p))), out_ranks)
    if len(node.output) > 1 and node.output[1]:
        g.tensor(node.output[1], node, index)
        g.views.append(View(node.output[1], (x,), "maxpool_indices"))


def _lrn(g: _Graph, node: NodeProto, index: int) -> None:
    """S = sum of squares over a channel window; y = x / (bias + alpha/size * S)^beta (ONNX LRN spec)."""
    at = _attrs(node)
    x, y = node.input[0], node.output[0]
    xs = g.tensor(x, node, index).shape
    yt = g.tensor(y, node, index)
    size = int(at["size"])
    name = g.node_name(node, index)
    ranks = _ranks("d", xs)
    window = ranks + [("w", size)]
    src = tuple(Affine((("d1", 1), ("w", 1)), -((size - 1) // 2)) if j == 1 else Affine.rank(r)
                for j, (r, _) in enumerate(ranks))
    sq = g.fresh(f"{y}.sqsum", xs, yt.bits)
    g.add(f"{name}.sqsum", Access(sq, _plain(ranks)), Call("square", (Access(x, src),)), window)
    denom = Call("pow", (Call("add", (Const(at.get("bias", 1.0)), Call("mul", (
        Const(at.get("alpha", 1e-4) / size), Access(sq, _plain(ranks)))))), Const(at.get("beta", 0.75))))
    g.add(f"{name}.div", Access(y, _plain(ranks)), Call("div", (Access(x, _plain(ranks)), denom)), ranks)


def _view(g: _Graph, node: NodeProto, index: int) -> None:
    g.view(node, index)


def _constant(g: _Graph, node: NodeProto, index: int) -> None:
    """A View with no sources; small values are kept because later nodes may read them as operands."""
    attr = node.attribute[0] if node.attribute else None
    if attr is not None and attr.name in ("value", "value_int", "value_ints", "value_float", "value_floats"):
        value = helper.get_attribute_value(attr)
        if isinstance(value, TensorProto):
            if math.prod(value.dims) <= _MAX_CONST_ELEMENTS and value.data_location != TensorProto.EXTERNAL:
                g.consts[node.output[0]] = numpy_helper.to_array(value)
        else:
            g.consts[node.output[0]] = np.asarray(value)
    g.view(node, index)


# Zero-compute data movement and shape ops (ONNX operator spec, opsets 1-23).
_VIEW_OPS = (
    "Reshape", "Transpose", "Flatten", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
    "ScatterND", "ScatterElements", "Scatter", "Squeeze", "Unsqueeze", "Cast", "CastLike", "Identity", "Dropout",
    "Expand", "Tile", "Pad", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "Shape", "Size", "Constant",
    "ConstantOfShape", "Range", "NonZero", "OneHot", "Trilu", "EyeLike", "ReverseSequence", "Compress", "Unique",
    "MaxUnpool", "CenterCropPad", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
    "Bernoulli", "Multinomial", "Optional", "OptionalGetElement", "OptionalHasElement", "Col2Im", "GridSample",
    "AffineGrid", "ImageDecoder", "BlackmanWindow", "HannWindow", "HammingWindow",
)
_HANDLERS: dict[str, Callable[[_Graph, NodeProto, int], None]] = {
    **{op: _map_node for op in _MAP},
    **{op: _matmul for op in _MATMUL_INPUTS},
    **{op: _conv for op in _CONV_INPUTS},
    **{op: _reduce for op in _REDUCE},
    **{op: _pool for op in ("MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool",
                            "GlobalLpPool")},
    **{op: _view for op in _VIEW_OPS},
    **{op: _softmax for op in ("Softmax", "LogSoftmax", "Hardmax")},
    **{op: _layer_norm for op in ("LayerNormalization", "RMSNormalization")},
    **{op: _channel_norm for op in ("BatchNormalization", "InstanceNormalization")},
    **{op: _arg_reduce for op in ("ArgMax", "ArgMin")},
    "Gemm": _gemm, "Einsum": _einsum, "ConvTranspose": _conv_transpose, "TopK": _topk, "CumSum": _cumsum,
    "GroupNormalization": _group_norm, "LpNormalization": _lp_norm, "MeanVarianceNormalization": _mvn,
    "LRN": _lrn, "Constant": _constant,
}
