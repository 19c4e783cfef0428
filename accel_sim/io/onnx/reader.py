"""Reading an ONNX model for import: shapes only, checked, every static shape inferred.

Weights stay in the file (see wire.py) and an initializer's values are read only when it is small and an
operand value is needed. Static shapes come from ``onnx.shape_inference.infer_shapes(strict_mode=False,
data_prop=True)``, helped by pinning data-dependent sizes (NonZero counts at their upper bound, Split
at its constant sizes) and by folding TorchScript shape arithmetic.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import onnx
import onnx.inliner
from onnx import TensorProto, helper, numpy_helper

from accel_sim.errors import ConfigError
from accel_sim.io.onnx.graph import MAX_CONST_ELEMENTS, STANDARD_DOMAINS, Shape, attrs, is_static, value_infos
from accel_sim.io.onnx.wire import checkable_copy, without_large_payloads


def read_model(path: Path) -> onnx.ModelProto:
    """The model, large tensor values left in the file; checked by onnx.checker with full shape inference."""
    fix = "give the path of an .onnx file written by onnx.save or torch.onnx.export (re-export it if it is truncated)"
    if not path.is_file():
        raise ConfigError("the ONNX file does not exist", file=path, fix="check the path")
    try:
        stripped = without_large_payloads(path)
        model = onnx.ModelProto.FromString(stripped)
    except Exception as exc:  # _WireError, protobuf's DecodeError, RuntimeWarning or ValueError depending on the bytes
        raise ConfigError(f"not a readable ONNX model ({type(exc).__name__}: {exc})", file=path, fix=fix) from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node:
        raise ConfigError("not a readable ONNX model (no IR version or no graph nodes)", file=path, fix=fix)
    _check_opsets(path, model)
    checkable, locations = checkable_copy(stripped)
    _check_external_locations(path, locations)
    try:
        onnx.checker.check_model(checkable)
        # full_check's shape inference (check_type, strict), run on the model itself: the checkable copy's
        # external tensors are shape-less. A MatMul of 1x64 by 48x32 is refused here, not costed.
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"the ONNX model fails onnx.checker (full_check=True): {first}", file=path,
                          fix="re-export the model or repair it so that onnx.checker.check_model(model, "
                              "full_check=True) passes") from None
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    return model


def _check_opsets(path: Path, model: onnx.ModelProto) -> None:
    """The standard domain's opset is one the installed onnx knows: onnx.checker passes a newer one, but shape
    inference and the op handlers would read its nodes by the newest schemas they know, which may not be its own."""
    newest = onnx.defs.onnx_opset_version()
    for k, opset in enumerate(model.opset_import):
        if opset.domain in STANDARD_DOMAINS and not 1 <= opset.version <= newest:
            raise ConfigError(f"the model imports opset {opset.version} of the ai.onnx domain, which the "
                              f"importer does not know (it knows opsets 1 to {newest}, those of onnx "
                              f"{onnx.__version__})", file=path, key_path=f"opset_import[{k}]",
                              fix=f"export the model with an opset from 1 to {newest} (torch.onnx.export(..., "
                                  f"opset_version=17)), or convert it with onnx.version_converter")


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


def infer_static_shapes(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """Shape-inferred model; data-dependent sizes are pinned (see _pinned_shapes) so later shapes are static."""
    inferred = _infer(model, path)
    info = value_infos(inferred)
    values = _constant_values(model)
    for _ in model.graph.node:  # each pass pins what the previous one made static; stops when nothing changes
        pinned = _pinned_shapes(inferred, info, values)
        if not pinned:
            break
        model.graph.value_info.extend(pinned)
        inferred = _infer(model, path)
        info = value_infos(inferred)
    if all(is_static(info.get(o, (None, 0))[0]) for node in model.graph.node for o in node.output if o):
        return inferred
    folded = _fold_shape_arithmetic(model, info, values)
    return _infer(folded, path) if folded is not None else inferred


def _pinned_shapes(inferred: onnx.ModelProto, info: dict[str, tuple[Shape, int]], values: dict[str, np.ndarray]
                   ) -> list[onnx.ValueInfoProto]:
    """Static shapes for outputs that shape inference leaves open although their input shapes are static:
    NonZero's count takes its upper bound, the input's element count (the workload describes the worst case);
    Split takes its constant sizes even when they do not add up to a pinned bound (a traced loop over NonZero
    results splits by the count seen at export time, e.g. the experts a MoE layer routed to)."""
    pinned = []
    for node in inferred.graph.node:
        if node.domain not in STANDARD_DOMAINS or node.op_type not in ("NonZero", "Split"):
            continue
        shape, elem = info.get(node.input[0], (None, 0))
        outputs = [o for o in node.output if o]
        if not is_static(shape) or all(is_static(info.get(o, (None, 0))[0]) for o in outputs):
            continue
        if node.op_type == "NonZero":
            pinned.append(helper.make_tensor_value_info(outputs[0], TensorProto.INT64, [len(shape), math.prod(shape)]))
            continue
        at = attrs(node)
        sizes = at.get("split") if "split" in at else values.get(node.input[1]) if len(node.input) > 1 else None
        if sizes is None or len(np.ravel(sizes)) != len(node.output):
            continue
        axis = at.get("axis", 0) % len(shape)
        pinned += [helper.make_tensor_value_info(o, elem, [int(d) if j != axis else int(size)
                                                           for j, d in enumerate(shape)])
                   for o, size in zip(node.output, np.ravel(sizes)) if o]
    return pinned


def _constant_values(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Values of the small initializers and Constant-node tensors whose values are in the model."""
    tensors = [(init.name, init) for init in model.graph.initializer]
    tensors += [(node.output[0], node.attribute[0].t) for node in model.graph.node
                if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS and len(node.attribute) == 1
                and node.attribute[0].name == "value"]
    return {name: numpy_helper.to_array(t) for name, t in tensors
            if math.prod(t.dims) <= MAX_CONST_ELEMENTS and t.data_location != TensorProto.EXTERNAL}


# Never evaluated while folding: random or data-producing ops, and ops with subgraphs.
_NO_FOLD = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial",
            "If", "Loop", "Scan"}


def _fold_shape_arithmetic(model: onnx.ModelProto, info: dict[str, tuple[Shape, int]],
                           constants: dict[str, np.ndarray]) -> onnx.ModelProto | None:
    """A copy of `model` where shape arithmetic on small constants (TorchScript's Shape->Gather->Div->Concat
    chains) is replaced by initializers, so that shape inference sees through it; None if nothing folds.

    The copy only feeds shape inference: every node of the original is still imported.
    """
    from onnx.reference import ReferenceEvaluator  # onnx.reference is heavy to import: loaded on first use

    values = {init.name: constants[init.name] for init in model.graph.initializer if init.name in constants}
    folded: set[int] = set()
    opsets = {o.domain or "": o.version for o in model.opset_import}
    for index, node in enumerate(model.graph.node):
        if node.domain not in STANDARD_DOMAINS or node.op_type in _NO_FOLD:
            continue
        shape = info.get(node.input[0], (None, 0))[0] if node.input else None
        if node.op_type in ("Shape", "Size") and is_static(shape):
            at = attrs(node)
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
        if any(np.asarray(v).size > MAX_CONST_ELEMENTS for v in outputs):
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
