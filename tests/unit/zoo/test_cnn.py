"""ResNet zoo: MACs and parameters against torchvision/MANIFEST, shapes, and conv/pool numerics."""
from __future__ import annotations

import numpy as np
import pytest

from accel_sim.errors import ConfigError
from accel_sim.zoo import build
from accel_sim.zoo.cnn import ResNetSpec, _conv, _maxpool, _FMap
from accel_sim.zoo.graph import GraphBuilder
from accel_sim.spec.numeric import evaluate_workload


def test_resnet50_macs_match_torchvision() -> None:
    """ResNet-50 at 224x224: 4.09 GFLOPS in the torchvision docs (= GMACs), 4,089,184,256 in the MANIFEST
    (Conv 4,087,136,256 + Gemm 2,048,000)."""
    macs = build("resnet50").total_macs
    assert macs == pytest.approx(4.09e9, rel=5e-3)
    assert macs == 4_089_184_256


def test_resnet18_macs_match_torchvision() -> None:
    """ResNet-18 at 224x224: 1.81 GFLOPS (torchvision docs), 1,814,073,344 MACs in the MANIFEST."""
    macs = build("resnet18").total_macs
    assert macs == pytest.approx(1.814e9, rel=1e-3)
    assert macs == 1_814_073_344


def test_resnet_params_match_bn_folded_exports() -> None:
    """With BatchNorm folded into conv biases, parameters equal the MANIFEST exports' counts:
    ResNet-50 25,530,472 and ResNet-18 11,684,712."""
    for name, params in (("resnet50", 25_530_472), ("resnet18", 11_684_712)):
        w = build(name)
        assert sum(t.elements for t in w.tensors if t.kind == "weight") == params


def test_batch_multiplies_macs() -> None:
    """Every layer is per image: batch 4 is four times the MACs of batch 1."""
    assert build("resnet18", batch=4).total_macs == 4 * build("resnet18").total_macs


def test_feature_map_shapes_at_224() -> None:
    """224 -> stem 112 -> maxpool 56 -> stages 56, 28, 14, 7 (He et al. 2016, Table 1 output sizes);
    the last block of ResNet-50 outputs 2048 channels, the classifier 1000 logits."""
    w = build("resnet50")
    assert w.tensor("stem.act").shape == (1, 64, 112, 112)
    assert w.tensor("stem.maxpool.out").shape == (1, 64, 56, 56)
    assert w.tensor("layer4.2.conv3.act").shape == (1, 2048, 7, 7)
    assert w.tensor("logits").shape == (1, 1000)


def test_downsample_only_where_shape_changes() -> None:
    """ResNet-50 has one 1x1 downsample conv per stage (the first block: channels x4 or stride 2); ResNet-18
    has none in stage 1 (64 -> 64, stride 1)."""
    r50 = {e.name for e in build("resnet50").einsums if "downsample" in e.name}
    r18 = {e.name for e in build("resnet18").einsums if "downsample" in e.name}
    assert r50 == {f"layer{s}.0.downsample.conv" for s in (1, 2, 3, 4)}
    assert r18 == {f"layer{s}.0.downsample.conv" for s in (2, 3, 4)}


def test_int8_weights_take_one_byte_per_parameter() -> None:
    """weight_bits int8: weight bytes = parameter count (25,530,472 for ResNet-50)."""
    w = build("resnet50", weight_bits="int8", act_bits="int8")
    assert sum(t.bytes for t in w.tensors if t.kind == "weight") == 25_530_472


def test_strided_padded_conv_matches_direct_convolution() -> None:
    """The conv einsum (stride 2, pad 3, 7x7, as the stem) equals a direct loop over a zero-padded input."""
    spec = ResNetSpec(batch=2, image_size=32)
    g = GraphBuilder()
    g.tensor("x", ("n", "c", "h", "w"), (2, 3, 11, 11), 16)
    out, _ = _conv(g, spec, "c", _FMap("x", 3, 11, 11), 4, 7, 2, 3)
    rng = np.random.default_rng(0)
    x, weight = rng.normal(size=(2, 3, 11, 11)), rng.normal(size=(4, 3, 7, 7))
    got = evaluate_workload(g.workload("conv"), {"x": x, "c.weight": weight})[out.name]
    padded = np.pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)))
    expected = np.zeros((2, 4, 6, 6))
    for p in range(6):
        for q in range(6):
            window = padded[:, :, 2 * p:2 * p + 7, 2 * q:2 * q + 7]
            expected[:, :, p, q] = np.einsum("ncrs,kcrs->nk", window, weight)
    assert out.H == out.W == 6
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_maxpool_matches_minus_inf_padding_on_relu_outputs() -> None:
    """3x3/2 pad 1 max pooling over a non-negative (post-ReLU) input equals PyTorch's -inf padded max."""
    spec = ResNetSpec(batch=1, image_size=32)
    g = GraphBuilder()
    g.tensor("x", ("n", "c", "h", "w"), (1, 2, 9, 9), 16)
    out = _maxpool(g, spec, "pool", _FMap("x", 2, 9, 9))
    x = np.maximum(np.random.default_rng(1).normal(size=(1, 2, 9, 9)), 0.0)
    got = evaluate_workload(g.workload("pool"), {"x": x})[out.name]
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    expected = np.array([[[[padded[0, c, 2 * p:2 * p + 3, 2 * q:2 * q + 3].max() for q in range(5)]
                           for p in range(5)] for c in range(2)]])
    np.testing.assert_array_equal(got, expected)


def test_unknown_depth_and_tiny_images_are_rejected() -> None:
    """ResNet depths are 18/34/50/101/152; images below the total stride 32 leave no feature map."""
    with pytest.raises(ConfigError) as err:
        build("resnet50", depth=20)
    assert err.value.key_path == "depth"
    with pytest.raises(ConfigError) as err:
        build("resnet50", image_size=16)
    assert err.value.key_path == "image_size"
