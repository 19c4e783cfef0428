"""ONNX import: MAC counts against the model MANIFEST and hand counts, numerics against onnx.reference."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_builders import finish_onnx, rand_array, save_onnx

from accel_sim.errors import ConfigError
from accel_sim.io.onnx import import_summary, load_onnx, wire
from accel_sim.io.onnx import reader as onnx_reader
from accel_sim.spec.workload import Workload
from accel_sim.spec.numeric import evaluate_workload

MODELS = (Path(__file__).resolve().parents[3] / ".." / "shared" / "models").resolve()
BAD = Path(__file__).resolve().parents[2] / "data" / "bad"
SHIPPED = sorted(MODELS.glob("*.onnx")) if MODELS.is_dir() else []


def _manifest_macs() -> dict[str, int]:
    """File name -> MACs; manifest.json has one entry per export with fields `file` and `macs`."""
    data = json.loads((MODELS / "manifest.json").read_text())
    return {v["file"]: int(v["macs"]) for k, v in data.items() if not k.startswith("_")}


def _compare_with_reference(path: Path, inputs: dict[str, np.ndarray], rtol: float = 1e-5) -> Workload:
    """Evaluate the imported einsums with numpy and compare every graph output with onnx.reference."""
    workload = load_onnx(path)
    model = onnx.load(path)
    expected = ReferenceEvaluator(model).run(None, inputs)
    constants = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    ours = evaluate_workload(workload, {**constants, **inputs})
    for out, want in zip(model.graph.output, expected):
        np.testing.assert_allclose(ours[out.name], np.asarray(want, dtype=float), rtol=rtol, atol=1e-6)
    return workload


# ---------------------------------------------------------------------------------------------
# Shipped models: MACs against MANIFEST
# ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(not SHIPPED, reason=f"no ONNX models in {MODELS} (the shared model folder is absent)")
@pytest.mark.parametrize("model_path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_model_macs_match_manifest(model_path: Path) -> None:
    """total_macs is within 0.5% of manifest.json's `macs` field (Conv/Gemm/MatMul MACs from inferred shapes)."""
    workload = load_onnx(model_path)
    expected = _manifest_macs()[model_path.name]
    assert workload.total_macs == pytest.approx(expected, rel=5e-3)
    assert workload.unsupported == ()


@pytest.mark.skipif(not SHIPPED, reason=f"no ONNX models in {MODELS} (the shared model folder is absent)")
def test_shipped_model_every_access_matches_its_tensor_rank() -> None:
    """Every einsum access has one index per tensor dim and every view names registered tensors (ResNet-18, BERT)."""
    for name in ("resnet18.onnx", "bert_base_seq128.onnx"):
        workload = load_onnx(MODELS / name)
        for e in workload.einsums:
            for acc in (e.output, *e.inputs):
                assert len(acc.indices) == len(workload.tensor(acc.tensor).shape), (e.name, str(acc))
        for v in workload.views:
            assert all(s in workload.tensor_map for s in (v.output, *v.sources))


@pytest.mark.skipif(not (MODELS / "resnet18.onnx").exists(), reason="shared model folder absent")
def test_stripped_inputs_become_weights_and_user_inputs_activations() -> None:
    """onnxgen metadata: 'input' is an activation; conv1.weight is a 64x3x7x7 fp32 weight (MANIFEST)."""
    workload = load_onnx(MODELS / "resnet18.onnx")
    assert workload.tensor("input").kind == "activation"
    weight = workload.tensor("conv1.weight")
    assert (weight.kind, weight.shape, weight.bits) == ("weight", (64, 3, 7, 7), 32)


# ---------------------------------------------------------------------------------------------
# Contractions: MAC counts by hand
# ---------------------------------------------------------------------------------------------
def test_grouped_dilated_strided_conv_macs(tmp_path: Path) -> None:
    """Conv 8->12 ch, groups 4, k 3x3, stride 2, pad 1, dilation 2 on 1x8x15x15: out 7x7 ->
    MACs = 1*12*7*7 * (8/4) * 9 = 10584 (output elements x Cin/groups x kernel)."""
    node = helper.make_node("Conv", ["X", "W"], ["Y"], group=4, strides=[2, 2], pads=[1, 1, 1, 1],
                            dilations=[2, 2])
    path = save_onnx(tmp_path, [node], {"X": (1, 8, 15, 15), "W": (12, 2, 3, 3)}, {"Y": None})
    workload = load_onnx(path)
    assert workload.tensor("Y").shape == (1, 12, 7, 7)
    assert workload.total_macs == 12 * 7 * 7 * 2 * 9


def test_depthwise_conv_with_bias_counts_only_the_contraction(tmp_path: Path) -> None:
    """Depthwise 3x3 (groups = C = 32), stride 1, pad 1 on 1x32x10x10: MACs = 32*10*10*1*9 = 28800; the bias
    add is a separate einsum with 0 MACs."""
    node = helper.make_node("Conv", ["X", "W", "B"], ["Y"], group=32, pads=[1, 1, 1, 1])
    path = save_onnx(tmp_path, [node], {"X": (1, 32, 10, 10), "W": (32, 1, 3, 3), "B": (32,)}, {"Y": None})
    workload = load_onnx(path)
    assert workload.total_macs == 28800
    assert [e.op for e in workload.einsums] == ["mac", "add"]


def test_conv1d_and_conv3d_macs(tmp_path: Path) -> None:
    """1-D conv 4->6, k 5, pad 2 on length 20: 6*20*4*5 = 2400; 3-D conv 2->3, k 3^3 valid on 6^3: out 4^3,
    3*64*2*27 = 10368."""
    c1 = save_onnx(tmp_path, [helper.make_node("Conv", ["X", "W"], ["Y"], pads=[2, 2])],
               {"X": (1, 4, 20), "W": (6, 4, 5)}, {"Y": None}, name="c1.onnx")
    c3 = save_onnx(tmp_path, [helper.make_node("Conv", ["X", "W"], ["Y"])],
               {"X": (1, 2, 6, 6, 6), "W": (3, 2, 3, 3, 3)}, {"Y": None}, name="c3.onnx")
    assert load_onnx(c1).total_macs == 2400
    assert load_onnx(c3).total_macs == 10368


def test_conv_transpose_macs_are_input_elements_times_cout_times_kernel(tmp_path: Path) -> None:
    """ConvTranspose 4->3 ch, k 2x2, stride 2 on 1x4x5x5 (out 10x10): every input element meets every
    Cout x kernel tap once, 4*25 * 3 * 4 = 1200 MACs (= output elements 300 x Cin 4 here, no overlap)."""
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], strides=[2, 2])
    path = save_onnx(tmp_path, [node], {"X": (1, 4, 5, 5), "W": (4, 3, 2, 2)}, {"Y": None})
    workload = load_onnx(path)
    assert workload.tensor("Y").shape == (1, 3, 10, 10)
    assert workload.total_macs == 1200


def test_batched_broadcast_matmul_macs(tmp_path: Path) -> None:
    """[2,1,5,7] @ [3,7,4] broadcasts to [2,3,5,4]: MACs = 2*3*5*4 * 7 = 840."""
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    path = save_onnx(tmp_path, [node], {"A": (2, 1, 5, 7), "B": (3, 7, 4)}, {"Y": None})
    workload = load_onnx(path)
    assert workload.tensor("Y").shape == (2, 3, 5, 4)
    assert workload.total_macs == 840


def test_matmul_with_vector_operands_macs(tmp_path: Path) -> None:
    """[7] @ [3,7,4] -> [3,4] (84 MACs) and [5,7] @ [7] -> [5] (35 MACs): output elements x K."""
    nodes = [helper.make_node("MatMul", ["v", "B"], ["Y1"]), helper.make_node("MatMul", ["A", "u"], ["Y2"])]
    path = save_onnx(tmp_path, nodes, {"v": (7,), "B": (3, 7, 4), "A": (5, 7), "u": (7,)}, {"Y1": None, "Y2": None})
    workload = load_onnx(path)
    assert [e.macs for e in workload.einsums] == [84, 35]


def test_gemm_trans_b_with_bias_and_alpha(tmp_path: Path) -> None:
    """Gemm A[6,10] x B[8,10]^T + C[8]: M*N*K = 6*8*10 = 480 MACs; alpha/bias live in a 0-MAC epilogue."""
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transB=1, alpha=0.5)
    path = save_onnx(tmp_path, [node], {"A": (6, 10), "B": (8, 10), "C": (8,)}, {"Y": None})
    workload = _compare_with_reference(path, {"A": rand_array(6, 10), "B": rand_array(8, 10), "C": rand_array(8)})
    assert workload.total_macs == 480


def test_einsum_operator_macs_and_values(tmp_path: Path) -> None:
    """Einsum 'bij,bjk->bik' on [2,3,4]x[2,4,5]: 2*3*5*4 = 120 MACs; values equal onnx.reference."""
    node = helper.make_node("Einsum", ["A", "B"], ["Y"], equation="bij,bjk->bik")
    path = save_onnx(tmp_path, [node], {"A": (2, 3, 4), "B": (2, 4, 5)}, {"Y": None}, opset=17)
    workload = _compare_with_reference(path, {"A": rand_array(2, 3, 4), "B": rand_array(2, 4, 5)})
    assert workload.total_macs == 120


def test_three_operand_einsum_contracts_pairwise(tmp_path: Path) -> None:
    """'ij,jk,kl->il' on 3x4, 4x5, 5x6 contracts left to right: (3*5*4) + (3*6*5) = 150 MACs."""
    node = helper.make_node("Einsum", ["A", "B", "C"], ["Y"], equation="ij,jk,kl->il")
    path = save_onnx(tmp_path, [node], {"A": (3, 4), "B": (4, 5), "C": (5, 6)}, {"Y": None})
    workload = _compare_with_reference(path, {"A": rand_array(3, 4), "B": rand_array(4, 5), "C": rand_array(5, 6)},
                                       rtol=1e-4)
    assert workload.total_macs == 150


# ---------------------------------------------------------------------------------------------
# Numerics of single-node graphs against onnx.reference (an independent implementation)
# ---------------------------------------------------------------------------------------------
def test_conv_stride2_pad1_groups2_matches_reference(tmp_path: Path) -> None:
    """The conv einsum evaluated with numpy equals onnx.reference's Conv (stride 2, pad 1, dilation 1, groups 2)."""
    node = helper.make_node("Conv", ["X", "W"], ["Y"], group=2, strides=[2, 2], pads=[1, 1, 1, 1])
    path = save_onnx(tmp_path, [node], {"X": (2, 4, 7, 7), "W": (6, 2, 3, 3)}, {"Y": None})
    workload = _compare_with_reference(path, {"X": rand_array(2, 4, 7, 7), "W": rand_array(6, 2, 3, 3)}, rtol=1e-4)
    assert [e.op for e in workload.einsums] == ["mac"]


def test_conv_matches_explicit_loop_convolution(tmp_path: Path) -> None:
    """Same conv checked against a hand-written loop: y[n,m,p,q] = sum x[n, g*2+c, 2p+r-1, 2q+s-1] w[m,c,r,s]."""
    node = helper.make_node("Conv", ["X", "W"], ["Y"], group=2, strides=[2, 2], pads=[1, 1, 1, 1])
    path = save_onnx(tmp_path, [node], {"X": (1, 4, 5, 5), "W": (4, 2, 3, 3)}, {"Y": None})
    x, w = rand_array(1, 4, 5, 5), rand_array(4, 2, 3, 3)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 4, 3, 3))
    for m in range(4):
        g = m // 2
        for p in range(3):
            for q in range(3):
                want[0, m, p, q] = np.sum(xp[0, 2 * g:2 * g + 2, 2 * p:2 * p + 3, 2 * q:2 * q + 3] * w[m])
    got = evaluate_workload(load_onnx(path), {"X": x, "W": w})["Y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_broadcast_matmul_matches_reference(tmp_path: Path) -> None:
    """[2,1,5,7] @ [3,7,4] evaluated from the einsum equals numpy/onnx.reference matmul."""
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    path = save_onnx(tmp_path, [node], {"A": (2, 1, 5, 7), "B": (3, 7, 4)}, {"Y": None})
    _compare_with_reference(path, {"A": rand_array(2, 1, 5, 7), "B": rand_array(3, 7, 4)}, rtol=1e-4)


def test_maxpool_and_averagepool_without_padding_match_reference(tmp_path: Path) -> None:
    """MaxPool 3x3 stride 2 and AveragePool 2x2 stride 2 (no padding: numeric.py pads with 0, not -inf)."""
    nodes = [helper.make_node("MaxPool", ["X"], ["M"], kernel_shape=[3, 3], strides=[2, 2]),
             helper.make_node("AveragePool", ["X"], ["A"], kernel_shape=[2, 2], strides=[2, 2])]
    path = save_onnx(tmp_path, nodes, {"X": (1, 3, 9, 9)}, {"M": None, "A": None})
    workload = _compare_with_reference(path, {"X": rand_array(1, 3, 9, 9)})
    assert workload.total_macs == 0


def test_padded_maxpool_output_shape_and_window_reads(tmp_path: Path) -> None:
    """MaxPool k3 s2 p1 on 112x112 (ResNet stem) gives 56x56 and reads X at 2p + r - 1."""
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    path = save_onnx(tmp_path, [node], {"X": (1, 64, 112, 112)}, {"Y": None})
    (einsum,) = load_onnx(path).einsums
    assert einsum.reduce == "max" and einsum.sizes["p"] == 56
    assert str(einsum.inputs[0].indices[2]) == "2*p+r-1"


def test_global_pools_match_reference(tmp_path: Path) -> None:
    """GlobalAveragePool and GlobalMaxPool reduce all spatial dims to 1."""
    nodes = [helper.make_node("GlobalAveragePool", ["X"], ["A"]), helper.make_node("GlobalMaxPool", ["X"], ["M"])]
    path = save_onnx(tmp_path, nodes, {"X": (2, 3, 4, 5)}, {"A": None, "M": None})
    _compare_with_reference(path, {"X": rand_array(2, 3, 4, 5)})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_cascade_matches_reference_and_has_no_macs(tmp_path: Path, op: str) -> None:
    """Softmax = max-reduce, exp(x - max), sum-reduce, divide: 4 einsums, 0 MACs, values equal onnx.reference."""
    path = save_onnx(tmp_path, [helper.make_node(op, ["X"], ["Y"], axis=-1)], {"X": (2, 3, 6)}, {"Y": None}, opset=13)
    workload = _compare_with_reference(path, {"X": rand_array(2, 3, 6)})
    assert len(workload.einsums) == 4 and workload.total_macs == 0


def test_opset11_softmax_normalises_over_flattened_trailing_dims(tmp_path: Path) -> None:
    """Opset < 13 Softmax(axis=1) on [2,3,4] normalises each row over 3*4 = 12 values (ONNX spec, Softmax-11:
    the input is coerced to 2-D [2, 12]); the oracle is numpy on the reshaped array."""
    path = save_onnx(tmp_path, [helper.make_node("Softmax", ["X"], ["Y"], axis=1)], {"X": (2, 3, 4)}, {"Y": None},
                 opset=11)
    x = rand_array(2, 3, 4)
    flat = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(axis=1, keepdims=True))
    want = (flat / flat.sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    np.testing.assert_allclose(evaluate_workload(load_onnx(path), {"X": x})["Y"], want, rtol=1e-5)


def test_normalisations_match_reference(tmp_path: Path) -> None:
    """LayerNormalization, BatchNormalization, InstanceNormalization and GroupNormalization (opset 21, per-channel
    scale) cascades equal onnx.reference and contain no contraction."""
    c = 4
    nodes = [
        helper.make_node("LayerNormalization", ["X", "s6", "b6"], ["L"], axis=-1, epsilon=1e-5),
        helper.make_node("BatchNormalization", ["X", "s", "b", "mean", "var"], ["B"], epsilon=1e-5),
        helper.make_node("InstanceNormalization", ["X", "s", "b"], ["I"], epsilon=1e-5),
        helper.make_node("GroupNormalization", ["X", "s", "b"], ["G"], num_groups=2, epsilon=1e-5),
    ]
    inputs = {"X": (2, c, 5, 6), "s6": (6,), "b6": (6,), "s": (c,), "b": (c,), "mean": (c,), "var": (c,)}
    path = save_onnx(tmp_path, nodes, inputs, {"L": None, "B": None, "I": None, "G": (2, c, 5, 6)},
                 opset=21)
    values = {n: rand_array(*s) for n, s in inputs.items()}
    values["var"] = np.abs(values["var"]) + 0.5
    workload = _compare_with_reference(path, values, rtol=1e-4)
    assert workload.total_macs == 0


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"])
def test_reductions_with_axes_input_match_reference(tmp_path: Path, op: str) -> None:
    """Reduce* over axes [1, 3] (axes given as an input, opset 18) with keepdims=0 equal onnx.reference."""
    node = helper.make_node(op, ["X", "axes"], ["Y"], keepdims=0)
    path = save_onnx(tmp_path, [node], {"X": (2, 3, 4, 5)}, {"Y": None},
                 inits={"axes": np.array([1, 3], dtype=np.int64)}, opset=18)
    x = np.abs(rand_array(2, 3, 4, 5)) + 0.5
    workload = _compare_with_reference(path, {"X": x}, rtol=1e-4)
    assert workload.tensor("Y").shape == (2, 4)


@pytest.mark.parametrize(("reverse", "exclusive"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_running_reduction_matches_reference(tmp_path: Path, reverse: int, exclusive: int) -> None:
    """CumSum along axis 1 (forward/reverse, inclusive/exclusive) is a recurrence einsum equal to onnx.reference."""
    node = helper.make_node("CumSum", ["X", "axis"], ["Y"], reverse=reverse, exclusive=exclusive)
    path = save_onnx(tmp_path, [node], {"X": (3, 5)}, {"Y": None}, inits={"axis": np.array(1, dtype=np.int64)})
    workload = _compare_with_reference(path, {"X": rand_array(3, 5)})
    assert workload.einsums[0].recurrence_rank == "d1"


# ONNX elementwise ops with their inputs (None: a standard-normal tensor of the shared shape).
ELEMENTWISE = {
    "Add": 2, "Sub": 2, "Mul": 2, "Div": 2, "Max": 3, "Min": 2, "Sum": 3, "Mean": 2, "Equal": 2, "Less": 2,
    "Greater": 2, "LessOrEqual": 2, "GreaterOrEqual": 2, "Relu": 1, "Tanh": 1, "Sigmoid": 1, "Exp": 1, "Neg": 1,
    "Abs": 1, "Sin": 1, "Cos": 1, "Floor": 1, "Ceil": 1, "Sign": 1, "Erf": 1, "HardSigmoid": 1, "HardSwish": 1,
    "LeakyRelu": 1, "Elu": 1, "Selu": 1, "Celu": 1, "Softplus": 1, "Softsign": 1, "ThresholdedRelu": 1,
    "Shrink": 1, "Round": 1, "Atan": 1, "Sinh": 1, "Reciprocal": 1, "Mish": 1,
}


@pytest.mark.parametrize("op", sorted(ELEMENTWISE))
def test_elementwise_op_with_broadcasting_matches_reference(tmp_path: Path, op: str) -> None:
    """Each elementwise op, operands broadcast from [4,1], [3] and [2,4,3], equals onnx.reference."""
    shapes = [(2, 4, 3), (4, 1), (3,)][: ELEMENTWISE[op]]
    names = [f"x{k}" for k in range(len(shapes))]
    path = save_onnx(tmp_path, [helper.make_node(op, names, ["Y"])], dict(zip(names, shapes)), {"Y": None}, opset=18)
    workload = _compare_with_reference(path, {n: rand_array(*s) for n, s in zip(names, shapes)}, rtol=1e-4)
    assert workload.total_macs == 0 and len(workload.einsums) == 1


def test_where_clip_and_prelu_match_reference(tmp_path: Path) -> None:
    """Where (bool condition), Clip with min/max inputs and PRelu with a per-channel slope."""
    nodes = [helper.make_node("Greater", ["a", "b"], ["c"]), helper.make_node("Where", ["c", "a", "b"], ["W"]),
             helper.make_node("Clip", ["a", "lo", "hi"], ["C"]), helper.make_node("PRelu", ["a", "slope"], ["P"])]
    path = save_onnx(tmp_path, nodes, {"a": (2, 3, 4), "b": (3, 4), "slope": (3, 1)}, {"W": None, "C": None, "P": None},
                 inits={"lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)})
    _compare_with_reference(path, {"a": rand_array(2, 3, 4), "b": rand_array(3, 4), "slope": rand_array(3, 1)})


# ---------------------------------------------------------------------------------------------
# Tensor metadata, unsupported ops, data-dependent shapes (views: test_onnx_views.py)
# ---------------------------------------------------------------------------------------------
def test_element_bits_follow_onnx_types(tmp_path: Path) -> None:
    """float16 tensors are 16-bit; a Cast to int64 gives 64 bits; a bool comparison gives 8 bits."""
    nodes = [helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Cast", ["Y"], ["I"], to=TensorProto.INT64),
             helper.make_node("Equal", ["I", "I"], ["E"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT16, (3,))],
                              [onnx.ValueInfoProto(name="E")])
    path = tmp_path / "bits.onnx"
    finish_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    workload = load_onnx(path)
    assert [workload.tensor(n).bits for n in ("X", "Y", "I", "E")] == [16, 16, 64, 8]


def test_topk_is_a_max_reduction_with_an_index_view(tmp_path: Path) -> None:
    """TopK k=2 over 8 experts for 5 tokens: a max einsum over 5*8*2 = 80 points and a view for the indices."""
    node = helper.make_node("TopK", ["X", "k"], ["V", "I"], axis=-1)
    path = save_onnx(tmp_path, [node], {"X": (5, 8)}, {"V": None}, inits={"k": np.array([2])})
    workload = load_onnx(path)
    (einsum,) = workload.einsums
    assert einsum.reduce == "max" and einsum.iteration_points == 80
    assert [v.output for v in workload.views] == ["I"] and workload.tensor("I").bits == 64


def test_nonzero_count_takes_its_upper_bound(tmp_path: Path) -> None:
    """NonZero of a [4, 6] mask has at most 24 hits, so a Transpose after it gets the static shape [24, 2]."""
    nodes = [helper.make_node("NonZero", ["X"], ["N"]), helper.make_node("Transpose", ["N"], ["T"])]
    path = save_onnx(tmp_path, nodes, {"X": (4, 6)}, {"T": None})
    workload = load_onnx(path)
    assert workload.tensor("N").shape == (2, 24) and workload.tensor("T").shape == (24, 2)


def test_local_functions_are_inlined(tmp_path: Path) -> None:
    """A model-local function (as torch exporters emit) imports as the ops in its body."""
    fn = helper.make_function("local", "Scale2", ["a"], ["b"],
                              [helper.make_node("Add", ["a", "a"], ["b"])], [helper.make_opsetid("", 17)])
    graph = helper.make_graph([helper.make_node("Scale2", ["X"], ["Y"], domain="local")], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, (3, 4))],
                              [onnx.ValueInfoProto(name="Y")])
    model = helper.make_model(graph, functions=[fn],
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    path = tmp_path / "fn.onnx"
    finish_onnx(model, path)
    workload = load_onnx(path)
    assert workload.unsupported == () and [e.op for e in workload.einsums] == ["add"]


def test_unknown_op_is_listed_as_unsupported(tmp_path: Path) -> None:
    """A custom-domain op becomes "OpType 'name'" in unsupported; the known ops around it still import."""
    workload = load_onnx(BAD / "onnx_unknown_op_strict.onnx")
    assert workload.unsupported == ("FancyNorm 'fancy'",)
    assert [e.op for e in workload.einsums] == ["relu"]
    assert import_summary(workload)["unsupported"] == ["FancyNorm 'fancy'"]


def test_unknown_op_raises_under_strict() -> None:
    """strict=True turns the first unsupported op into a ConfigError at graph.node[1] with the fix."""
    with pytest.raises(ConfigError) as info:
        load_onnx(BAD / "onnx_unknown_op_strict.onnx", strict=True)
    assert info.value.key_path == "graph.node[1]"
    assert "FancyNorm" in info.value.problem and "without --strict" in info.value.fix


def test_symbolic_shape_on_matmul_raises_with_the_node() -> None:
    """A MatMul on a [batch, 4] input names the node, the symbolic dim and the static-shape fix."""
    with pytest.raises(ConfigError) as info:
        load_onnx(BAD / "onnx_dynamic_matmul.onnx")
    assert info.value.key_path == "graph.node[0]" and "[batch, 4]" in info.value.problem
    assert "static input shapes" in info.value.fix


@pytest.mark.parametrize("name", ["onnx_truncated.onnx", "onnx_not_a_model.onnx"])
def test_unreadable_file_raises_config_error(name: str) -> None:
    """Truncated and non-ONNX files raise 'not a readable ONNX model' naming the file."""
    with pytest.raises(ConfigError) as info:
        load_onnx(BAD / name)
    assert "not a readable ONNX model" in info.value.problem and info.value.file.endswith(name)


def test_checker_failure_raises_config_error(tmp_path: Path) -> None:
    """A node reading a tensor that nothing defines fails onnx.checker, reported as a ConfigError."""
    graph = helper.make_graph([helper.make_node("Relu", ["missing"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, (2,))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (2,))])
    path = tmp_path / "broken.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(ConfigError, match="onnx.checker"):
        load_onnx(path)


def test_summary_counts(tmp_path: Path) -> None:
    """import_summary: a MatMul [4,8]x[8,2] with an 8x2 fp32 weight initializer -> 64 MACs, 64 weight bytes."""
    node = helper.make_node("MatMul", ["A", "W"], ["Y"])
    path = save_onnx(tmp_path, [node], {"A": (4, 8)}, {"Y": None}, inits={"W": np.ones((8, 2), np.float32)})
    summary = import_summary(load_onnx(path))
    assert (summary["macs"], summary["einsums"], summary["weight_bytes"]) == (64, 1, 64)
    assert math.isclose(summary["ops"], 64)


def test_shape_arithmetic_is_folded_for_shape_inference(tmp_path: Path) -> None:
    """TorchScript-style Shape -> Gather -> Cast -> Div -> Floor -> Cast -> Concat -> Reshape (ONNX shape inference
    leaves it symbolic) is folded:
    X[2, 6, 4] reshaped to [2, 3, 8] then @ W[8, 5] gives 2*3*5*8 = 240 MACs, and every node is still imported."""
    nodes = [helper.make_node("Shape", ["X"], ["s"]),
             helper.make_node("Gather", ["s", "i1"], ["c"], axis=0),
             helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["cf", "two"], ["hf"]),
             helper.make_node("Floor", ["hf"], ["hfl"]),
             helper.make_node("Cast", ["hfl"], ["half"], to=TensorProto.INT64),
             helper.make_node("Unsqueeze", ["half", "ax0"], ["h1"]),
             helper.make_node("Concat", ["b", "h1", "eight"], ["shape"], axis=0),
             helper.make_node("Reshape", ["X", "shape"], ["R"]),
             helper.make_node("MatMul", ["R", "W"], ["Y"])]
    inits = {"i1": np.array(1), "two": np.array(2.0, np.float32), "ax0": np.array([0]), "b": np.array([2]),
             "eight": np.array([8])}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, (2, 6, 4)),
                                           helper.make_tensor_value_info("W", TensorProto.FLOAT, (8, 5))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (2, 3, 5))],
                              [numpy_helper.from_array(v, n) for n, v in inits.items()])
    path = tmp_path / "fold.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    assert not any(vi.name == "R" and len(vi.type.tensor_type.shape.dim) == 3
                   for vi in inferred.graph.value_info), "shape inference alone already resolves R"
    onnx.save(model, path)
    workload = load_onnx(path)
    assert workload.tensor("R").shape == (2, 3, 8) and workload.total_macs == 240
    assert len(workload.views) + len(workload.einsums) == len(nodes)


# ---------------------------------------------------------------------------------------------
# Reading shapes only: large inline tensors stay in the file
# ---------------------------------------------------------------------------------------------
def _inline_weight_model(tmp_path: Path, rows: int, cols: int, name: str = "inline.onnx") -> Path:
    """X[4, rows] @ W[rows, cols] with W inline (raw_data in the file), then a Reshape by a small shape."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"]), helper.make_node("Reshape", ["Y", "shape"], ["R"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, (4, rows))],
        [helper.make_tensor_value_info("R", TensorProto.FLOAT, (2, 2 * cols))],
        [TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[rows, cols]),
         numpy_helper.from_array(np.array([2, -1], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.graph.initializer[0].raw_data = np.arange(rows * cols, dtype=np.float32).tobytes()
    path = tmp_path / name
    onnx.save(model, path)
    return path


# Peak RSS in KiB: VmHWM is this process's own high-water mark (ru_maxrss also holds the parent's peak at
# fork/exec time, which would hide the child's growth when pytest is large); ru_maxrss off Linux.
_RSS_CHILD = """
import resource, sys
from accel_sim.io.onnx import load_onnx
def peak_kib():
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
load_onnx(sys.argv[1])  # warm-up: lazy imports and first-use allocations of onnx and numpy
before = peak_kib()
workload = load_onnx(sys.argv[2])
print(workload.total_macs, peak_kib() - before)
"""


def test_inline_weights_are_never_read_into_memory(tmp_path: Path) -> None:
    """Importing a model with a 64 MiB inline weight (4096 x 4096 fp32) raises the child process's peak RSS by
    under 16 MiB, a quarter of the weight (reading it once, as onnx.load does, costs the full 64 MiB; measured
with the previous importer: +108 MiB); the MACs
    are still 4 * 4096 * 4096 (output elements x K)."""
    small, big = _inline_weight_model(tmp_path, 8, 8, "small.onnx"), _inline_weight_model(tmp_path, 4096, 4096)
    assert big.stat().st_size > 64 * 2**20
    proc = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(small), str(big)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], check=True)
    macs, growth_kib = (int(v) for v in proc.stdout.split())
    assert macs == 4 * 4096 * 4096
    assert growth_kib < 16 * 1024


def test_large_inline_tensor_is_read_as_a_reference_to_its_own_bytes(tmp_path: Path) -> None:
    """A 300 x 400 fp32 weight (480,000 bytes > the 64 KiB inline limit) is read as external data whose
    location/offset/length point at its raw bytes inside the .onnx file; the 2-element Reshape shape keeps
    its values, so R gets shape [2, 800] and the MatMul 4 * 400 * 300 MACs."""
    path = _inline_weight_model(tmp_path, 300, 400)
    model = onnx_reader.read_model(path)
    weight, shape = model.graph.initializer
    where = {e.key: e.value for e in weight.external_data}
    assert weight.data_location == TensorProto.EXTERNAL and not weight.raw_data and where["location"] == path.name
    start, length = int(where["offset"]), int(where["length"])
    values = np.frombuffer(path.read_bytes()[start:start + length], np.float32)
    np.testing.assert_array_equal(values, np.arange(300 * 400, dtype=np.float32))
    assert numpy_helper.to_array(shape).tolist() == [2, -1]
    workload = load_onnx(path)
    assert workload.tensor("R").shape == (2, 800) and workload.total_macs == 4 * 400 * 300


def test_large_constant_node_value_stays_in_the_file(tmp_path: Path) -> None:
    """A Constant node holding a 200 x 100 fp32 tensor (80,000 bytes) imports as a constant view of that shape
    and feeds a MatMul of 200 * 3 * 100 = 60,000 MACs, its values unread."""
    value = numpy_helper.from_array(np.ones((200, 100), np.float32))
    nodes = [helper.make_node("Constant", [], ["C"], value=value), helper.make_node("MatMul", ["C", "X"], ["Y"])]
    path = save_onnx(tmp_path, nodes, {"X": (100, 3)}, {"Y": None})
    assert onnx_reader.read_model(path).graph.node[0].attribute[0].t.data_location == TensorProto.EXTERNAL
    workload = load_onnx(path)
    assert workload.tensor("C").shape == (200, 100) and workload.total_macs == 60_000


def test_mid_sized_tensors_past_the_inline_budget_are_left_in_the_file(tmp_path: Path, monkeypatch) -> None:
    """With the inline budget lowered to 100 KB, five 40,000-byte weights (each under the 64 KiB limit) keep
    their values only until 100 KB are kept: the first three are inline, the last two are references."""
    monkeypatch.setattr(wire, "_INLINE_BUDGET_BYTES", 100_000)
    nodes = [helper.make_node("Sum", [f"w{k}" for k in range(5)], ["Y"])]
    path = save_onnx(tmp_path, nodes, {}, {"Y": None},
                     inits={f"w{k}": np.ones((100, 100), np.float32) for k in range(5)})
    locations = [t.data_location for t in onnx_reader.read_model(path).graph.initializer]
    assert locations == [TensorProto.DEFAULT] * 3 + [TensorProto.EXTERNAL] * 2


def test_external_data_file_that_is_missing_raises(tmp_path: Path) -> None:
    """A model saved with external data whose .bin file was removed fails the checker's location rule, named
    with the tensor, the location and the fix."""
    path = _inline_weight_model(tmp_path, 300, 400)
    onnx.save(onnx.load(path), path, save_as_external_data=True, location="weights.bin", size_threshold=1024)
    assert load_onnx(path).total_macs == 4 * 400 * 300
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(ConfigError) as info:
        load_onnx(path)
    assert "'W'" in info.value.problem and "weights.bin" in info.value.problem and "next to the .onnx" in info.value.fix


def test_file_truncated_inside_an_inline_weight_is_unreadable(tmp_path: Path) -> None:
    """Cutting the file in the middle of the weight's raw bytes gives 'not a readable ONNX model'."""
    path = _inline_weight_model(tmp_path, 300, 400)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ConfigError, match="not a readable ONNX model"):
        load_onnx(path)


def test_traced_expert_loop_splits_the_pinned_nonzero_bound_by_its_export_time_count(tmp_path: Path) -> None:
    """A legacy (TorchScript) MoE export unrolls `for e in expert_mask.sum(...).nonzero()` as NonZero over 5
    classes (4 experts + a sentinel) -> Transpose -> Split by the 4 experts routed to at export time. NonZero's
    upper bound (5) makes the sizes [1, 1, 1, 1] disagree with the split dim, so shape inference gives up; the
    importer takes the constant sizes: each expert index is [1, 1], each expert MatMul X[6, 8] @ W[e][8, 3] is
    6 * 3 * 8 = 144 MACs, 288 for the two experts used (output elements x K)."""
    nodes = [helper.make_node("Greater", ["routes", "zero"], ["hit"]),
             helper.make_node("NonZero", ["hit"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
             helper.make_node("Constant", [], ["sizes"], value=numpy_helper.from_array(np.ones(4, np.int64))),
             helper.make_node("Split", ["nzt", "sizes"], ["e0", "e1", "e2", "e3"], axis=0)]
    for k in range(2):
        nodes += [helper.make_node("Squeeze", [f"e{k}", "axes01"], [f"i{k}"]),
                  helper.make_node("Gather", ["W", f"i{k}"], [f"w{k}"], axis=0),
                  helper.make_node("MatMul", ["X", f"w{k}"], [f"Y{k}"])]
    graph = helper.make_graph(
        nodes, "expert_loop", [helper.make_tensor_value_info("routes", TensorProto.FLOAT, (5,)),
                               helper.make_tensor_value_info("X", TensorProto.FLOAT, (6, 8)),
                               helper.make_tensor_value_info("W", TensorProto.FLOAT, (4, 8, 3))],
        [helper.make_tensor_value_info(f"Y{k}", TensorProto.FLOAT, (6, 3)) for k in range(2)],
        [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
         numpy_helper.from_array(np.array([0, 1]), "axes01")])
    path = tmp_path / "expert_loop.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    workload = load_onnx(path, strict=True)
    assert workload.tensor("nz").shape == (1, 5) and workload.tensor("e0").shape == (1, 1)
    assert workload.total_macs == 2 * 6 * 3 * 8


def test_empty_dimension_of_a_computed_tensor_is_an_error_but_an_empty_shape_operand_is_not(tmp_path: Path) -> None:
    """Reshape to a scalar reads an empty shape constant (dims [0]): a view, imported. A Relu on a [2, 0] slice has
    nothing to cost (the engines tile at least one point): ConfigError at that node, naming tensor and dim."""
    nodes = [helper.make_node("Reshape", ["X", "shape"], ["Y"]), helper.make_node("Relu", ["Y"], ["Z"])]
    scalar = save_onnx(tmp_path, nodes, {"X": (1, 1)}, {"Z": None}, inits={"shape": np.zeros(0, np.int64)},
                   name="scalar.onnx")
    assert load_onnx(scalar).tensor("Z").shape == ()
    nodes = [helper.make_node("Slice", ["X", "zero", "zero", "one"], ["S"]),
             helper.make_node("Relu", ["S"], ["Y"], name="act")]
    empty = save_onnx(tmp_path, nodes, {"X": (2, 3)}, {"Y": None}, name="empty.onnx",
                  inits={"zero": np.array([0]), "one": np.array([1])})
    with pytest.raises(ConfigError) as info:
        load_onnx(empty)
    assert info.value.key_path == "graph.node[1]"
    assert "tensor 'S' used by Relu node 'act' has shape [2, 0]: dimension 1 is 0" in info.value.problem


@pytest.mark.parametrize(("op", "x", "w", "y", "group", "problem"), [
    ("Conv", (1, 4, 8, 8), (8, 1, 3, 3), (1, 8, 6, 6), 2,
     "the weight [8, 1, 3, 3] has 1 in dimension 1, not the input's channels / group = 4 / 2 = 2"),
    ("Conv", (1, 4, 8, 8), (6, 1, 3, 3), (1, 6, 6, 6), 4,
     "group 4 must divide both the input's 4 channels and the weight's 6 output channels"),
    ("ConvTranspose", (1, 4, 8, 8), (3, 3, 3, 3), (1, 6, 10, 10), 2,
     "the weight [3, 3, 3, 3] has 3 in dimension 0, not the input's channels = 4"),
])
def test_conv_channels_inconsistent_with_group_raise_at_the_node(tmp_path: Path, op: str, x: tuple, w: tuple,
                                                                  y: tuple, group: int, problem: str) -> None:
    """onnx.checker passes these; the importer names the node, the shapes and the ONNX weight layout."""
    path = save_onnx(tmp_path, [helper.make_node(op, ["X", "W"], ["Y"], name="c", group=group)], {"X": x, "W": w},
                 {"Y": y})
    with pytest.raises(ConfigError) as info:
        load_onnx(path)
    assert info.value.key_path == "graph.node[0]" and problem in info.value.problem
    assert ("[C, M/group, kernel...]" if op == "ConvTranspose" else "[M, C/group, kernel...]") in info.value.fix


def test_valid_grouped_conv_transpose_still_imports(tmp_path: Path) -> None:
    """ConvTranspose 4 -> 6 channels in 2 groups (W [4, 3, 3, 3]) on 8x8: 4*8*8 * 3 * 9 = 6912 MACs."""
    path = save_onnx(tmp_path, [helper.make_node("ConvTranspose", ["X", "W"], ["Y"], group=2)],
                 {"X": (1, 4, 8, 8), "W": (4, 3, 3, 3)}, {"Y": None})
    assert load_onnx(path).total_macs == 4 * 8 * 8 * 3 * 9
