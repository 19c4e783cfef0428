"""Small ONNX graphs for the importer's tests: built with onnx.helper, shapes filled in, saved to a file."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save_onnx(tmp_path: Path, nodes: list, inputs: dict[str, tuple], outputs: dict[str, tuple | None],
              inits: dict[str, np.ndarray] | None = None, opset: int = 17, name: str = "m.onnx",
              elem: int = TensorProto.FLOAT) -> Path:
    """Write a small ONNX model built with onnx.helper and return its path."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem, s) if s is not None else onnx.ValueInfoProto(name=n)
         for n, s in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    path = tmp_path / name
    finish_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def finish_onnx(model: onnx.ModelProto, path: Path) -> None:
    """Save `model` with its graph outputs' shapes filled in by shape inference (the checker wants them)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {vi.name: vi for vi in inferred.graph.value_info}
    for out in model.graph.output:
        if not out.type.tensor_type.HasField("shape"):
            out.CopyFrom(known[out.name])
    onnx.save(model, path)


RNG = np.random.default_rng(0)


def rand_array(*shape: int) -> np.ndarray:
    """A float32 array of standard-normal values (one seeded stream for every test)."""
    return RNG.standard_normal(shape).astype(np.float32)
