"""benchmarks/zigzag_mapping.py: ZigZag's dumped mapping of a layer, translated into our candidate form.

The inputs are two fragments of ZigZag 3.9.1 dumps on its tpu_like example (tests/data/zigzag/*.json, origin in
each file's `_origin`); ZigZag itself is not needed. Expected tiles and orders are derived by hand below.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from accel_sim import load_arch
from benchmarks.zigzag_mapping import LEVELS, ZigZagChoice, best_translation, dims_of, module_path, translate
from builders import conv, gemm

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests/data/zigzag"


def _space(workload):
    arch = load_arch(ROOT / "benchmarks/configs/tpu_like.yaml")
    engine = next(e for e in arch.engines if e.kind == "systolic")
    return engine.mapspace(workload.einsums[0], workload, arch)


def _choice(name: str) -> ZigZagChoice:
    return ZigZagChoice.from_json(json.loads((DATA / name).read_text()))


def test_reads_the_dump():
    """One loop order for all operands (innermost first) and each operand's cut per memory."""
    c = _choice("tpu_like_layer2.0_conv2.json")
    assert c.loops == (("C", 4), ("FY", 3), ("FX", 3), ("OY", 28), ("OX", 28), ("K", 4))
    assert c.cuts == {"O": {"rf_2B": 3, "sram_2MB": 6, "dram": 6}, "W": {"rf_128B": 5, "dram": 6},
                      "I": {"sram_2MB": 6, "dram": 6}}
    assert c.spatial == (("K", 32), ("C", 32))
    assert module_path(c.layer) == "layer2.0.conv2"
    assert module_path("/layer2/layer2.0/downsample/downsample.0/Conv") == "layer2.0.downsample.0"


def test_conv_layer_by_hand():
    """ResNet-18 layer2.0.conv2 (K = C = 128, 28 x 28, 3 x 3) on tpu_like, ws.

    W's rf_128B holds the five innermost loops, so our weight_rf (its rendering) holds C4 FY3 FX3 OY28 OX28;
    I's and O's sram_2MB hold all six, so our sram_2MB adds K4; dram holds none. ZigZag's order at weight_rf,
    outer to inner, is OX OY FX FY C; our array streams the time rank (p, q) innermost there: s r c q p.
    Spatial: K 32 on the columns, C 32 on the rows (ws: reduction on rows, output channels on columns).
    """
    workload = conv(c=128, k=128, h=28, rs=3, stride=1, pad=1, bits=8)   # ranks k p q c r s
    space = _space(workload)
    assert dims_of(space.einsum, workload, "Conv") == {"OY": "p", "FY": "r", "OX": "q", "FX": "s", "C": "c", "K": "k"}
    tr = translate(_choice("tpu_like_layer2.0_conv2.json"), space, LEVELS["tpu_like"], dataflow=1)
    m = tr.mapping
    assert tr.dataflow == "ws"
    assert {r: f for r, f in m.factors("weight_rf").items() if f > 1} == {"c": 4, "r": 3, "s": 3, "p": 28, "q": 28}
    assert {r: f for r, f in m.factors("sram_2MB").items() if f > 1} == {"k": 4}
    assert all(f == 1 for f in m.factors("dram").values())
    assert m.spatial_factors("rows") == {"c": 32} and m.spatial_factors("cols") == {"k": 32}
    assert m.loop_order("weight_rf", space.einsum) == ("k", "s", "r", "c", "q", "p")
    assert m.loop_order("sram_2MB", space.einsum)[-1] == "k"
    assert any("rf_2B" in n for n in tr.notes)                 # O's per-PE output register has no level of ours
    assert any("streams the time rank" in n for n in tr.notes)
    assert "weight_rf order" in tr.outside                     # our mapper's orders keep c r s declared
    scores = space.score(tr.candidates)
    assert scores.fits[0] and math.isfinite(scores.objective("edp")[0])


def test_gemm_floor_split_made_whole():
    """fc (1000 x 512) on tpu_like: ZigZag unrolls K 31 and loops K 4 4 2 (992 of 1000): ours raises the spatial
    factor to ceil(1000 / 32) = 32. W's rf_128B holds C2 C4 C2 K4 (our weight_rf: k 16, n 4), the rest sits in
    sram_2MB (n 8)."""
    workload = gemm(1, 1000, 512)     # Z[m, n] = A[m, k] W[k, n]
    space = _space(workload)
    tr, value, _ = best_translation(_choice("tpu_like_fc.json"), space, LEVELS["tpu_like"])
    m = tr.mapping
    assert {r: f for r, f in m.factors("weight_rf").items() if f > 1} == {"k": 16, "n": 4}
    assert {r: f for r, f in m.factors("sram_2MB").items() if f > 1} == {"n": 8}
    assert m.spatial_factors("cols") == {"n": 32} and m.spatial_factors("rows") == {"k": 32}
    assert any("992 of 1000" in n for n in tr.notes)
    assert np.isfinite(value)


def test_sizes_must_match():
    """A dump of another layer is refused, not silently translated."""
    workload = conv(c=64, k=128, h=28, rs=3, stride=1, pad=1, bits=8)
    with pytest.raises(ValueError, match="ZigZag's C = 128"):
        translate(_choice("tpu_like_layer2.0_conv2.json"), _space(workload), LEVELS["tpu_like"], dataflow=1)
