"""The mapper's bounds: no candidate scores below its bound, and a search that skips candidates by their bounds
finds what scoring every candidate finds (issue 20: the 'local' method scores a batch's candidates only where
their bound could still win)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from builders import conv, gemm, three_level_arch
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim import load_arch, load_workload
from accel_sim.engines.systolic_mapspace import SystolicMapspace, systolic_mapspace
from accel_sim.errors import InfeasibleError
from accel_sim.mapper.search import search

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
from test_costing import two_level_arch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SEARCHING = sys.modules[search.__module__]   # the module (the package's `search` name is the function)
OBJECTIVES = ("latency", "energy", "edp")


def _assert_bounds_hold(space: SystolicMapspace, samples: int = 2048, seed: int = 0) -> int:
    """Every sampled candidate of every group scores at or above its bound, under each objective; returns how
    many fitting candidates were checked."""
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(len(space.space.dataflows)):
        candidates = space.candidates(*space.sample(rng, samples))
        scores = space.score(candidates)
        for objective in OBJECTIVES:
            exact = scores.objective(objective)
            bound = space.bounds(candidates, objective)
            fitting = np.isfinite(exact)
            # the slack the search allows (BOUND_SLACK): the same sums in another order
            assert (bound[fitting] <= exact[fitting] * (1 + SEARCHING.BOUND_SLACK)).all(), objective
        checked += int(np.isfinite(scores.total_cycles[scores.fits]).sum())
    return checked


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.builds(gemm, st.integers(1, 96), st.integers(1, 96), st.integers(1, 96), st.sampled_from([8, 16])),
                 st.builds(conv, st.integers(1, 16), st.integers(1, 16), st.integers(5, 14),
                           st.sampled_from([1, 3]), st.sampled_from([1, 2]))),
       st.builds(two_level_arch, dram_gbps=st.sampled_from([0.5, 4.0, 64.0]), rows=st.integers(1, 16),
                 cols=st.integers(1, 16), sram=st.sampled_from(["256 B", "4 KiB", "256 KiB"]),
                 dataflow=st.sampled_from(["os", "ws", "is", "any"]), buffering=st.sampled_from(["single", "double"])))
def test_no_candidate_scores_below_its_bound(w, arch) -> None:
    """Property over random GEMMs, convolutions, arrays, buffers and DRAM bandwidths: bound <= exact score."""
    _assert_bounds_hold(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")))


@pytest.mark.parametrize("arch_name", ["tpu_v1", "edge_npu", "diannao"])
def test_bounds_hold_on_the_shipped_arrays_with_their_tensor_routes(arch_name: str) -> None:
    """The shipped configs route tensors through their levels by role and name (each candidate's backing store
    per tensor): a ResNet-50 convolution, a BERT projection (weights) and its attention scores (two activations),
    sampled, never score below their bounds."""
    arch = load_arch(ROOT / "arch_configs" / f"{arch_name}.yaml")
    engine = next(e for e in arch.engines if e.kind == "systolic")
    checked = 0
    for workload_name, einsum_name in (("resnet50", "layer2.0.conv2.conv"), ("bert-base", "L0.attn.q_proj"),
                                        ("bert-base", "L0.attn.qk")):
        workload = load_workload(ROOT / "workloads" / f"{workload_name}.yaml")
        einsum = next((e for e in workload.einsums if e.name == einsum_name), None)
        assert einsum is not None, [e.name for e in workload.einsums if e.op == "mac"][:8]
        checked += _assert_bounds_hold(systolic_mapspace(einsum, workload, arch, engine), samples=1024)
    assert checked > 0   # the property checked fitting candidates, not only ones that fit nowhere


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Score every candidate: the systolic mapspace reports no bounds."""
    monkeypatch.setattr(SystolicMapspace, "bounds", lambda self, candidates, objective: None)


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.builds(gemm, st.integers(1, 128), st.integers(1, 128), st.integers(1, 128)),
                 st.builds(conv, st.integers(1, 16), st.integers(1, 16), st.integers(5, 14),
                           st.sampled_from([1, 3]), st.sampled_from([1, 2]))),
       st.integers(8, 4096), st.integers(2, 512), st.sampled_from(["os", "ws", "is", "any"]),
       st.sampled_from(OBJECTIVES), st.sampled_from([1, 16, 256]), st.sampled_from(["local", "cpsat"]))
def test_a_bounded_search_finds_what_scoring_every_candidate_finds(w, buf: int, small: int, dataflow: str,
                                                                   objective: str, probe: int, method: str) -> None:
    """Property over random einsums, buffers, dataflows, objectives and probe sizes: the 'local' method with
    bounds, and the CP-SAT method's descents (which skip the moves whose bound cannot beat where they stand, and
    count them against their budget), return the same mapping, score and cost as with every candidate scored, or
    fail alike."""
    arch = three_level_arch(buf, min(small, buf), ({"name": "sa", "kind": "systolic", "rows": 4, "cols": 4,
                                                    "dataflow": dataflow},))
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SEARCHING, "PROBE", probe)
        for bounded in (True, False):
            if not bounded:
                _unbounded(patch)
            try:
                result = search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("sa")), objective, method,
                                time_limit_s=0.05)
                found[bounded] = (result.mapping, result.score, result.cost)
            except InfeasibleError as error:
                found[bounded] = str(error)
    assert found[True] == found[False]


def test_bounds_skip_most_of_a_resnet_layers_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """On TPU v1, a ResNet-50 3x3 convolution's local-search batch of about 6,400 candidates: with bounds, under
    a third are scored (0.17 of ResNet-50's batches measured, against compulsory traffic and compute), and the
    result is the one every candidate scored gives."""
    arch = load_arch(ROOT / "arch_configs" / "tpu_v1.yaml")
    workload = load_workload(ROOT / "workloads" / "resnet50.yaml")
    einsum = next(e for e in workload.einsums if e.name == "layer2.1.conv2.conv")
    space = lambda: systolic_mapspace(einsum, workload, arch, arch.engine("mxu"))  # noqa: E731  (fresh each)
    bounded = search(space(), "edp", "local")
    _unbounded(monkeypatch)
    full = search(space(), "edp", "local")
    assert (bounded.mapping, bounded.score) == (full.mapping, full.score)
    assert bounded.stats.candidates < full.stats.candidates / 3


def test_bounds_that_are_not_numbers_skip_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound the scorer could not compute (NaN) must not pass a candidate over: the search scores everything and
    finds what it finds without bounds."""
    w, arch = gemm(64, 48, 80), two_level_arch(rows=8, cols=8, sram="4 KiB", dataflow="any")
    space = lambda: systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))  # noqa: E731  (fresh each)
    _unbounded(monkeypatch)
    full = search(space(), "edp", "cpsat", time_limit_s=0.05)
    monkeypatch.setattr(SystolicMapspace, "bounds", lambda self, candidates, objective: np.full(len(candidates),
                                                                                                np.nan))
    unknown = search(space(), "edp", "cpsat", time_limit_s=0.05)
    assert (unknown.mapping, unknown.score, unknown.stats.candidates) == (full.mapping, full.score,
                                                                          full.stats.candidates)
