"""FuseMax validation (issue 9): BERT-base attention at 1K tokens, FLAT vs FuseMax, published vs ours; the sweep."""
from __future__ import annotations

import pytest

from validation.fusemax import (
    ARTIFACT_CYCLES_PER_HEAD,
    CASCADES,
    PUBLISHED,
    breakdown,
    measure,
    plot_sweep,
    plot_timelines,
    rows,
    sweep,
)


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, float]]:
    return {name: measure(name) for name in CASCADES}


@pytest.fixture(scope="module")
def table(measured) -> dict[str, float]:
    return {r.quantity: r.ours for r in rows(measured)}


@pytest.fixture(scope="module")
def small_sweep():
    """One sweep at 256 and 512 tokens, shared by the tests that read it."""
    return sweep((256, 512), time_limit_s=0.05)


def test_flat_latency_within_20_percent(table: dict[str, float]) -> None:
    """Issue 9 acceptance for FLAT: 13.39 ms published (targets.md) within 20%; measured 13.40 ms: the heads
    pipelined every 16,384 cycles (the 1-D array's four passes of 4,096 per head), 768 x 16,384 + the first
    head's fill (9,084 cycles) at 940 MHz."""
    assert table["FLAT latency (ms)"] == pytest.approx(PUBLISHED["FLAT latency (ms)"], rel=0.20)


def test_fusemax_latency_and_speedup_within_20_percent(table: dict[str, float]) -> None:
    """Issue 9 acceptance: FuseMax within 20% of 2.01 ms and the speedup within 20% of 13.39 / 2.01 = 6.66x
    (measured 2.21 ms, +9.9 %, and 6.06x, -9.0 %)."""
    for quantity in ("FuseMax latency (ms)", "speedup FuseMax over FLAT"):
        assert table[quantity] == pytest.approx(PUBLISHED[quantity], rel=0.20)


def test_utilizations_within_10_percent(table: dict[str, float]) -> None:
    """The 2-D utilizations the paper reports: FLAT 0.125 (measured 0.1249) and FuseMax 0.89 (measured 0.811)."""
    for quantity in ("FLAT 2-D utilization", "FuseMax 2-D utilization"):
        assert table[quantity] == pytest.approx(PUBLISHED[quantity], rel=0.10)


def test_latencies_measured(table: dict[str, float]) -> None:
    """What the model gives, pinned within 2% so a change is noticed: FLAT 13.40 ms, FuseMax 2.21 ms (a period of
    2,702 cycles per head: BQK 1,024 + SLNV 1,024 + 144 of maps on the 2-D array, one 510-cycle skew; by hand)."""
    assert table["FLAT latency (ms)"] == pytest.approx(13.40, rel=0.02)
    assert table["FuseMax latency (ms)"] == pytest.approx(2.21, rel=0.02)


def test_fusemax_period_is_the_2d_array_work_plus_one_skew(measured) -> None:
    """Hand-derived period per head at 1K tokens: the 2-D array issues BQK and SLNV (64 x 1,024 x 1,024 MACs /
    65,536 PEs = 1,024 cycles each) and the maps it runs (LM 16, SLN 112, SLD 16: the artifact's formulas), and one
    of its contractions is followed by a map, which cannot overlap its R + C - 2 = 510-cycle skew:
    1,024 + 1,024 + 144 + 510 = 2,702."""
    result = measured["FuseMax"]
    assert result["period_cycles"] == 2702
    assert result["status"] == "OPTIMAL" and result["spills"] == 0


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
    """At 256 tokens an instance is a whole head (its 256 x 256 scores fit the buffer): BQK and SLNV run on the 2-D
    array, each one fold of T = 64 cycles over 256 keys x 256 queries, the artifact's E x M x P / 65,536 =
    64 x 256 x 256 / 65,536 = 64 (hand-derived), and the breakdown lists every einsum the artifact table covers."""
    table = {r["einsum"]: r for r in breakdown("FuseMax", 256, time_limit_s=0.05)}
    assert (table["BQK"]["engines"], table["SLNV"]["engines"]) == ("pe_2d", "pe_2d")
    assert (table["BQK"]["compute"], table["SLNV"]["compute"]) == pytest.approx((64, 64))
    assert set(ARTIFACT_CYCLES_PER_HEAD["FuseMax"]) == set(table)


def test_timelines_show_the_pipelined_instances(tmp_path) -> None:
    """One timeline PNG per cascade (at 256 tokens, a short solve): the replay of the two unrolled instances."""
    paths = plot_timelines(tmp_path, 256, time_limit_s=0.05)
    assert [p.name for p in paths] == ["fusemax_timeline_FLAT.png", "fusemax_timeline_FuseMax.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
