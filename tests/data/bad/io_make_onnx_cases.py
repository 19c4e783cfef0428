"""Regenerate this folder's io_onnx_* inputs: `python tests/data/bad/io_make_onnx_cases.py`.

Models that onnx.checker accepts but that describe no valid work (empty or negative dimensions, inconsistent
node attributes, unknown opsets). Each file is a few hundred bytes; its sidecar `<stem>.expect.yaml` (written
here too) gives the CLI arguments and the substrings the error must contain (see tests/test_bad_inputs.py).
"""
from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).parent


def _matmul_model(m: int) -> onnx.ModelProto:
    """Y[m, 8] = A[m, 4] @ W[4, 8] with a fixed (here empty or negative) first dimension."""
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, 4])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, 8])
    node = helper.make_node("MatMul", ["A", "W"], ["Y"], name="proj")
    graph = helper.make_graph([node], "matmul", [a, w], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES: dict[str, tuple[bytes, str]] = {
    # name: (file bytes, expect.yaml text)
    "io_onnx_zero_dim.onnx": (
        _matmul_model(0).SerializeToString(),
        '{args: [workload, "{file}"], contains: ["io_onnx_zero_dim.onnx", "graph.input[0]", "graph input \'A\'", '
        '"proj", "shape [0, 4]", "dimension 0 is 0", "at least 1"]}\n'),
    "io_onnx_negative_dim.onnx": (
        _matmul_model(-3).SerializeToString(),
        '{args: [run, arch_configs/tpu_v1.yaml, "{file}"], contains: ["io_onnx_negative_dim.onnx", '
        '"graph.input[0]", "graph input \'A\'", "shape [-3, 4]", "dimension 0 is -3", "at least 1"]}\n'),
}


def main() -> None:
    """Write every case and its sidecar next to this script."""
    for name, (data, expect) in CASES.items():
        (HERE / name).write_bytes(data)
        (HERE / (name.removesuffix(".onnx") + ".expect.yaml")).write_text(expect)


if __name__ == "__main__":
    main()
