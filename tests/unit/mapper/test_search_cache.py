"""The mapper's cache: keyed by einsum shape, engine and the arch's mapping-relevant parts; re-scored on reuse."""
from __future__ import annotations

import numpy as np
import pytest

from accel_sim.engines.costing import systolic_cost_of, systolic_scores
from accel_sim.engines.fold_timing import DATAFLOW_CODES
from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_arch, load_workload
from accel_sim.mapper import MapperCache, search
from accel_sim.spec.mapping import MappingBatch


@pytest.fixture(scope="module")
def problem():
    """TPU v1 at a small array and ResNet-50's first contraction (a real layer, quick to map)."""
    overrides = ("engines.mxu.rows=32", "engines.mxu.cols=32")
    workload = load_workload("resnet50")
    einsum = next(e for e in workload.einsums if e.op == "mac")
    return overrides, workload, einsum


def _run(overrides, workload, einsum, extra=(), cache=None):
    arch = load_arch("tpu_v1", overrides + tuple(extra))
    return search(arch.engine("mxu").mapspace(einsum, workload, arch), method="local", cache=cache)


def test_same_arch_returns_the_uncached_result(problem):
    """A search on an arch equal to a cached one returns exactly what an uncached search returns (same object
    as the first search; its mapping and cost equal a search with a fresh cache)."""
    cache = MapperCache()
    first = _run(*problem, cache=cache)
    again = _run(*problem, cache=cache)
    fresh = _run(*problem, cache=MapperCache())
    assert again is first and not first.stats.reused and len(cache) == 1
    assert fresh.mapping == first.mapping and fresh.cost == first.cost and fresh.score == first.score


def test_no_cache_searches_every_time(problem):
    """Without a cache nothing is kept: a second search is a new search, equal to the first."""
    first, second = _run(*problem), _run(*problem)
    assert second is not first and not second.stats.reused
    assert second.mapping == first.mapping and second.cost == first.cost


def test_bandwidth_change_reuses_mapping_with_exact_cost(problem):
    """Only a bandwidth and the clock differ: no search runs (stats.reused), and the cost equals the exact
    scorer's on the new arch for the same mapping (independent: systolic_scores called directly)."""
    overrides, workload, einsum = problem
    cache = MapperCache()
    base = _run(*problem, cache=cache)
    extra = ("memory.weight_memory.bandwidth=8 GB/s", "clock=350 MHz")
    reused = _run(*problem, extra=extra, cache=cache)
    assert reused.stats.reused and reused.stats.candidates <= 4
    arch = load_arch("tpu_v1", overrides + extra)
    engine = arch.engine("mxu")
    batch = MappingBatch.from_mappings([reused.mapping], einsum, arch, {"rows": engine.rows, "cols": engine.cols})
    flows = np.array([DATAFLOW_CODES.index(reused.variant.split()[0])])
    direct = systolic_cost_of(einsum, workload, arch, engine, systolic_scores(einsum, workload, arch, engine,
                                                                              batch, flows), 0)
    assert reused.cost == direct
    assert reused.cost != base.cost  # a quarter of the DRAM bandwidth and half the clock change the cycles


def test_capacity_change_searches_again(problem):
    """A different buffer capacity is a different mapping problem: the search runs (not reused)."""
    cache = MapperCache()
    _run(*problem, cache=cache)
    other = _run(*problem, extra=("memory.unified_buffer.capacity=8 MiB",), cache=cache)
    assert not other.stats.reused and len(cache) == 2


def test_same_shape_other_names_gets_its_own_tensor_names():
    """A cache hit for an einsum of the same shape in another workload (other tensor names: a query block of
    tiling.split_rank, a renamed layer) returns the cost and mapping naming that einsum's tensors, not the first
    one's, with the same numbers (the scheduler looks a tensor's bits up by those names: a KeyError before)."""
    from builders import gemm

    from accel_sim.schedule.tiling import split_rank

    arch = load_arch("tpu_v1", ("engines.mxu.rows=32", "engines.mxu.cols=32"))
    engine = arch.engine("mxu")
    first_workload, blocks = gemm(64, 64, 64), split_rank(gemm(128, 64, 64), "m", 2)
    cache = MapperCache()
    first = search(engine.mapspace(first_workload.einsums[0], first_workload, arch), method="local", cache=cache)
    hit = search(engine.mapspace(blocks.einsums[1], blocks, arch), method="local", cache=cache)
    assert {t for _, t, _ in first.cost.accesses} == {"A", "W", "Z"}
    assert {t for _, t, _ in hit.cost.accesses} == {"A@1", "W", "Z@1"}
    assert sorted(hit.cost.accesses.values()) == sorted(first.cost.accesses.values())
    assert hit.cost.total_cycles == first.cost.total_cycles
    assert {t for _, ts in hit.mapping.bypass for t in ts} <= {"A@1", "W", "Z@1"}


def test_evaluate_shares_a_given_cache_across_calls(problem):
    """`evaluate(..., cache)` fills the cache it is given, and a second call on a design that differs only in a
    bandwidth reuses its mappings: the cache stays the same size; without one, evaluate keeps nothing."""
    overrides, workload, _ = problem
    cache = MapperCache()
    evaluate(load_arch("tpu_v1", overrides), workload, cache=cache)
    filled = len(cache)
    assert filled == len(workload.distinct_contractions())
    evaluate(load_arch("tpu_v1", overrides + ("memory.weight_memory.bandwidth=8 GB/s",)), workload, cache=cache)
    assert len(cache) == filled


def test_capacity_variants_share_the_structure_work_with_identical_results(problem):
    """Designs that differ only in a buffer capacity are searched again, but from the work their shared structure
    left on the cache's shelf (one entry, no candidate batch built or bounded twice; which candidates a design
    scores, and so prepares, follows its bounds); each result equals an uncached search's exactly (mapping, cost,
    score)."""
    cache = MapperCache()
    _run(*problem, extra=("memory.unified_buffer.capacity=24 MiB",), cache=cache)
    (work,) = cache.shelf.values()
    built, bounded = dict(work.built), dict(work.bounded)
    assert built and bounded
    for capacity in ("4 MiB", "8 MiB", "16 MiB"):
        extra = (f"memory.unified_buffer.capacity={capacity}",)
        shared, fresh = _run(*problem, extra=extra, cache=cache), _run(*problem, extra=extra)
        assert not shared.stats.reused
        assert (shared.mapping, shared.cost, shared.score, shared.variant) == \
            (fresh.mapping, fresh.cost, fresh.score, fresh.variant)
    assert len(cache.shelf) == 1 and work.built.keys() == built.keys() and work.bounded.keys() == bounded.keys()


def test_shelf_drops_the_least_recently_used():
    """A Shelf at its limit drops the entry used longest ago (reading an entry counts as a use)."""
    from accel_sim.mapper.search import Shelf

    shelf = Shelf(2)
    shelf[("a",)], shelf[("b",)] = 1, 2
    assert shelf.get(("a",)) == 1
    shelf[("c",)] = 3
    assert set(shelf) == {("a",), ("c",)}
