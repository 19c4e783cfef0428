"""NeuPIMs validation (validation/neupims.py): GPT-3 7B TP4 (32 layers), batch 256, ShareGPT-like contexts.

Tolerance: the issue's 20 % of the published ratios (2.4x vs NPU-only, 1.6x vs naive NPU+PIM; NeuPIMs,
ASPLOS 2024, abstract). At batch 256 we measure 2.50 (+4 %) and 1.34 (-16 %); validation/neupims.md lists
batch 512 (3.13, +30 %, and 1.64, +2 %) and why the NPU-only ratio there is above the published average.
"""
from __future__ import annotations

import pytest

from validation.neupims import PUBLISHED, measure


@pytest.fixture(scope="module")
def batch256() -> dict[str, float]:
    return measure(256)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_ratio_within_twenty_percent(batch256: dict[str, float], name: str) -> None:
    """Each throughput ratio lies within 20 % of the published value (NeuPIMs abstract: 2.4x, 1.6x)."""
    assert batch256[name] == pytest.approx(PUBLISHED[name], rel=0.2)


def test_pim_attention_beats_npu_only(batch256: dict[str, float]) -> None:
    """Both PIM policies out-run NPU-only (the mechanism NeuPIMs rests on: attention GEMVs in the banks)."""
    assert batch256["naive"] > batch256["npu_only"] and batch256["neupims"] > batch256["npu_only"]


def test_sub_batch_interleaving_beats_naive(batch256: dict[str, float]) -> None:
    """NeuPIMs (concurrent banks + two interleaved sub-batches) out-runs naive blocked NPU+PIM (paper: 1.6x)."""
    assert batch256["neupims"] > batch256["naive"]
