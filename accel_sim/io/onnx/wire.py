"""Protobuf wire format: an ONNX file's bytes with large tensor payloads left in the file.

The file is read through ``mmap`` and only the fields on the way to tensors are walked (model -> graph ->
node -> attribute -> tensor, and local functions), so a large payload is skipped by its length prefix and
its pages are never touched. Each large tensor is rewritten as external data that points back at its own
bytes in the model file; the result is a small byte string that onnx parses, checks and shape-infers.
"""
from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto

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


def without_large_payloads(path: Path) -> bytes:
    """The model file's bytes, each large tensor's values replaced by an external-data reference to them."""
    if path.stat().st_size == 0:
        return b""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        end = len(buf)
        new = _rewrite(buf, 0, end, "model", _PayloadStripper(path.name),
                       lambda s, e: e - s <= _TIGHT_LIMIT_BYTES and s > 0)
        return buf[:] if new is None else new


def checkable_copy(stripped: bytes) -> tuple[bytes, list[tuple[str, str]]]:
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
