"""FuseMax (issue 9): BERT-base attention at 1K tokens, FLAT vs FuseMax, the mechanisms behind the figures; the
sweep. The published latencies, speedup and utilizations are asserted at their targets by
tests/validation/test_report.py (validation/targets.py)."""
from __future__ import annotations

import pytest

from validation.fusemax import (
    ARTIFACT_CYCLES_PER_HEAD,
    breakdown,
    measure,
    plot_sweep,
    plot_timelines,
    sweep,
)


@pytest.fixture(scope="module")
def fusemax_1k() -> dict[str, float]:
    """FuseMax at 1K tokens (validation/fusemax.py `measure`)."""
    return measure("FuseMax")


@pytest.fixture(scope="module")
def small_sweep():
    """One sweep at 256 and 512 tokens, shared by the tests that read it."""
    return sweep((256, 512), time_limit_s=0.05)


def test_fusemax_period_is_the_2d_array_work_plus_one_skew(fusemax_1k) -> None:
    """Hand-derived period per head at 1K tokens: the 2-D array issues BQK and SLNV (64 x 1,024 x 1,024 MACs /
    65,536 PEs = 1,024 cycles each) and the maps it runs (LM 16, SLN 112, SLD 16: the artifact's formulas), and one
    of its contractions is followed by a map, which cannot overlap its R + C - 2 = 510-cycle skew:
    1,024 + 1,024 + 144 + 510 = 2,702."""
    result = fusemax_1k
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
