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


def _grouped_conv_model() -> onnx.ModelProto:
    """Conv with group 5 on 3 input and 8 output channels (neither divisible by 5), weight [8, 1, 3, 3]."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 8, 8])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [8, 1, 3, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8, 6, 6])
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv1", group=5)
    graph = helper.make_graph([node], "grouped", [x, w], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _reshape_model() -> onnx.ModelProto:
    """Reshape of 8 elements ([2, 4]) to the constant shape [7, 5] (35 elements)."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [7, 5])
    shape = helper.make_tensor("target", TensorProto.INT64, [2], [7, 5])
    node = helper.make_node("Reshape", ["X", "target"], ["Y"], name="flatten_heads")
    graph = helper.make_graph([node], "reshape", [x], [y], initializer=[shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _relu_model(opset: int) -> onnx.ModelProto:
    """Y = relu(X) in the given ai.onnx opset."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="act")], "relu", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


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
    "io_onnx_conv_bad_group.onnx": (
        _grouped_conv_model().SerializeToString(),
        '{args: [workload, "{file}"], contains: ["io_onnx_conv_bad_group.onnx", "graph.node[0]", "conv1", '
        '"group 5 must divide both the input\'s 3 channels and the weight\'s 8 output channels", '
        '"[M, C/group, kernel...]"]}\n'),
    "io_onnx_reshape_count.onnx": (
        _reshape_model().SerializeToString(),
        '{args: [workload, "{file}"], contains: ["io_onnx_reshape_count.onnx", "graph.node[0]", "flatten_heads", '
        '"[2, 4] (8 elements)", "[7, 5] (35 elements)", "Fix: make the output 8 elements"]}\n'),
    "io_onnx_opset99.onnx": (
        _relu_model(99).SerializeToString(),
        '{args: [workload, "{file}"], contains: ["io_onnx_opset99.onnx", "opset_import[0]", "opset 99", '
        '"Fix: export the model with an opset from 1 to"]}\n'),
}


def main() -> None:
    """Write every case and its sidecar next to this script."""
    for name, (data, expect) in CASES.items():
        (HERE / name).write_bytes(data)
        (HERE / (name.removesuffix(".onnx") + ".expect.yaml")).write_text(expect)


if __name__ == "__main__":
    main()
