"""Regenerate the broken ONNX inputs of this folder: `python tests/data/bad/make_onnx_cases.py`.

Unreadable or unsupported models (onnx_*), and models onnx.checker accepts that describe no valid work
(io_onnx_*: empty or negative dimensions, inconsistent node attributes, unknown opsets). Each file is a few hundred
bytes; its sidecar `<stem>.expect.yaml` (written here too) gives the CLI arguments and the substrings the error
must contain (see tests/test_bad_inputs.py).
"""
from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).parent


def _matmul_model(m: int | str) -> onnx.ModelProto:
    """Y[m, 8] = A[m, 4] @ W[4, 8], with `m` a fixed size (empty or negative ones included) or a symbolic dimension."""
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, 4])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, 8])
    node = helper.make_node("MatMul", ["A", "W"], ["Y"], name="proj")
    graph = helper.make_graph([node], "matmul", [a, w], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mismatched_matmul_model() -> onnx.ModelProto:
    """Y[1, 32] = A[1, 64] @ W[48, 32]: the inner sizes differ, so onnx.checker's full shape inference refuses it."""
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 64])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [48, 32])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 32])
    node = helper.make_node("MatMul", ["A", "W"], ["Y"], name="proj")
    graph = helper.make_graph([node], "mismatched", [a, w], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _custom_op_model() -> onnx.ModelProto:
    """Relu followed by an operator of a custom domain that no importer knows."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["X"], ["R"], name="act"),
             helper.make_node("FancyNorm", ["R"], ["Y"], name="fancy", domain="com.example")]
    graph = helper.make_graph(nodes, "custom", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


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
    "onnx_truncated.onnx": (
        _matmul_model(3).SerializeToString()[:-9],
        '{args: [workload, "{file}"], contains: ["onnx_truncated.onnx", "not a readable ONNX model", "Fix:"]}\n'),
    "onnx_not_a_model.onnx": (
        b"name: tpu\nclock: 1 GHz\n# a YAML file saved with an .onnx suffix\n",
        '{args: [workload, "{file}"], contains: ["onnx_not_a_model.onnx", "not a readable ONNX model", '
        '"Fix:"]}\n'),
    "onnx_unknown_op_strict.onnx": (
        _custom_op_model().SerializeToString(),
        '{args: [workload, "{file}", "--strict"], contains: ["onnx_unknown_op_strict.onnx", "graph.node[1]", '
        '"FancyNorm", "fancy", "without --strict"]}\n'),
    "onnx_dynamic_matmul.onnx": (
        _matmul_model("batch").SerializeToString(),
        '{args: [workload, "{file}"], contains: ["onnx_dynamic_matmul.onnx", "graph.node[0]", "proj", '
        '"no static shape", "[batch, 4]", "static input shapes"]}\n'),
    "onnx_mismatched_matmul.onnx": (
        _mismatched_matmul_model().SerializeToString(),
        '{args: [workload, "{file}"], contains: ["onnx_mismatched_matmul.onnx", "fails onnx.checker", "MatMul", '
        '"proj", "Incompatible dimensions"]}\n'),
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
