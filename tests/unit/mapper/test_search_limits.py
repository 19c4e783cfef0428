"""The mapper's resource limits: scored chunks stay under 2 GB, and CP-SAT under a tight limit starts from a hint."""
from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np

from accel_sim.engines.systolic_mapspace import systolic_mapspace
from accel_sim.mapper.search import CHUNK, search

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
from test_costing import conv, two_level_arch  # noqa: E402

GIB = 2**30


def _peak_bytes(n: int) -> int:
    """Peak bytes numpy allocates (tracemalloc sees its buffers) while scoring n random candidates of a conv."""
    w, arch = conv(16, 32, 30, 3, 1), two_level_arch(rows=8, cols=8, sram="64 KiB", dataflow="any")
    e, engine = w.einsums[0], arch.engine("mxu")
    space = systolic_mapspace(e, w, arch, engine)
    candidates = space.candidates(*space.sample(np.random.default_rng(0), n))
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    space.score(candidates)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def test_scoring_a_chunk_needs_less_than_2_gib() -> None:
    """Issue 4: no search needs more than 2 GB. Scoring memory is linear in the batch (every array is per
    candidate), so the peak of a chunk is the per-candidate slope (from two measured batch sizes, counted by
    tracemalloc, not timed) times CHUNK plus the fixed part; this conv has 6 ranks and 2 levels, and the bound
    doubles it for 7 ranks and 3 levels (ResNet convs on a 3-level arch: (L + 1) x R grows 18 -> 28)."""
    small, large = _peak_bytes(2_000), _peak_bytes(6_000)
    per_candidate = (large - small) / 4_000
    bound = 2 * (per_candidate * CHUNK + small)
    assert per_candidate > 0
    assert bound < 2 * GIB, f"{bound / GIB:.2f} GiB for a chunk of {CHUNK}"


def test_cpsat_under_a_tight_limit_starts_from_a_hint_and_reports_a_gap() -> None:
    """A conv with a 3e9-mapping space (too large to presolve in 0.05 s): the local-search optimum, completed
    to every model variable, is CP-SAT's first solution, so the status is FEASIBLE or OPTIMAL and the proxy's
    bound and gap are finite (before the hint, such limits ended UNKNOWN with no bound). 512 KiB: at 256 KiB the
    local optimum (16 x 16 channels a fold, p and q at the SRAM) cannot keep its 16-bit I and O tiles
    (16 x 58 x 58 and 16 x 56 x 56, double-buffered: 407 KiB) and stages I through the SRAM, which the proxy's
    capacity constraints do not state (systolic_cpsat.buffer_capacity keeps every tile), so no hint is
    admitted; 512 KiB keeps both."""
    w, arch = conv(64, 64, 58, 3, 1), two_level_arch(rows=16, cols=16, sram="512 KiB")
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))
    assert space.size() > 10**6
    stats = search(space, "edp", "cpsat", time_limit_s=0.05).stats
    assert stats.hinted == 1
    assert stats.solver_status in ("FEASIBLE", "OPTIMAL")
    assert 0.0 <= stats.gap <= 1.0 and stats.proxy_bound <= stats.proxy_objective
