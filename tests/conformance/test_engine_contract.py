"""Every engine of every shipped architecture obeys the same contract (Stream's conformance idea).

For random GEMM, conv and elementwise einsums, on each engine that says it can run them:
- the cost never beats the roofline bound of that engine (compute peak and every level's bandwidth),
- cycles, energy and area are finite and non-negative, utilization lies in [0, 1],
- MACs are the einsum's MACs.
Every engine is checked on the cost its own model gives and on the cost the mapper stage picks (the one `run`
uses). New engine families are covered by shipping a config in arch_configs/ that uses them; the example families
of tests/examples/engines/ (README, "Adding an engine") are covered by the arch YAMLs beside them.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from builders import conv, gemm
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.engines import EXAMPLE_ARCHS, load_example_arch

from accel_sim import load_arch
from accel_sim.engines.roofline import bound_on
from accel_sim.mapper import best_cost
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank
CONFIGS = sorted(Path(__file__).resolve().parents[2].glob("arch_configs/**/*.yaml")) + EXAMPLE_ARCHS


def _load(config: Path):  # noqa: ANN202 - an Arch
    return load_example_arch(config) if config in EXAMPLE_ARCHS else load_arch(config)


ENGINES = [(cfg, engine.name) for cfg in CONFIGS for engine in _load(cfg).engines]


def softmax_exp(n: int, m: int, bits: int) -> Workload:
    """E[n,m] = exp(X[n,m] - MX[n]) (the middle pass of a softmax)."""
    e = Einsum("exp", Access("E", (R("n"), R("m"))),
               Call("exp", (Call("sub", (Access("X", (R("n"), R("m"))), Access("MX", (R("n"),)))),)),
               {"n": n, "m": m})
    return Workload("exp", (Tensor("X", ("N", "M"), (n, m), bits), Tensor("MX", ("N",), (n,), bits),
                            Tensor("E", ("N", "M"), (n, m), bits)), (e,))


def wide_output(builder):  # noqa: ANN001, ANN201 - a strategy helper
    """A builder whose output accumulates at max(bits, 16), as contractions do."""
    return lambda *args, bits: builder(*args, bits=bits, out_bits=max(bits, 16))


bits = st.sampled_from([2, 4, 8, 16])
workloads = st.one_of(
    st.builds(wide_output(gemm), st.integers(1, 512), st.integers(1, 512), st.integers(1, 512), bits=bits),
    st.builds(wide_output(conv), st.integers(1, 64), st.integers(1, 64), st.integers(7, 30), st.sampled_from([1, 3]),
              st.sampled_from([1, 2]), bits=bits),
    st.builds(softmax_exp, st.integers(1, 256), st.integers(1, 1024), bits),
)


@pytest.mark.parametrize(("config", "engine_name"), ENGINES, ids=[f"{c.stem}:{e}" for c, e in ENGINES])
@settings(max_examples=25, deadline=None)
@given(w=workloads)
def test_engine_obeys_contract(config: Path, engine_name: str, w: Workload) -> None:
    """Cost >= roofline, finite, utilization in [0, 1], MACs preserved."""
    arch = _load(config)
    engine = arch.engine(engine_name)
    e = w.einsums[0]
    if engine.peak_per_cycle(e) <= 0:
        return
    cost = engine.cost(e, w, arch)
    bound = bound_on(e, w, arch, engine_name)
    assert cost.total_cycles >= bound.cycles * (1 - 1e-9)
    assert math.isfinite(cost.total_cycles) and math.isfinite(cost.total_energy_j)
    assert cost.total_energy_j >= 0 and min(cost.compute_cycles, cost.stall_cycles, cost.fill_drain_cycles) >= 0
    assert -1e-12 <= cost.utilization <= 1 + 1e-12
    assert cost.macs == e.macs


@pytest.mark.parametrize(("config", "engine_name"), ENGINES, ids=[f"{c.stem}:{e}" for c, e in ENGINES])
def test_engine_area_is_positive(config: Path, engine_name: str) -> None:
    """Every engine reports a positive, finite datapath area at its arch's node."""
    arch = _load(config)
    area = arch.engine(engine_name).area_mm2(arch.technology_nm)
    assert 0 < area < math.inf


@pytest.mark.parametrize(("config", "engine_name"), ENGINES, ids=[f"{c.stem}:{e}" for c, e in ENGINES])
@settings(max_examples=8, deadline=None)
@given(w=workloads)
def test_mapped_cost_obeys_contract(config: Path, engine_name: str, w: Workload) -> None:
    """The mapper stage's cost (what `run` places) is >= roofline and finite, with the einsum's MACs; an engine
    with choices returns the mapping it costed, one without returns its own cost and no mapping."""
    arch = _load(config)
    engine = arch.engine(engine_name)
    e = w.einsums[0]
    if engine.peak_per_cycle(e) <= 0:
        return
    mapped = best_cost(engine, e, w, arch, "edp")
    bound = bound_on(e, w, arch, engine_name)
    assert mapped.cost.total_cycles >= bound.cycles * (1 - 1e-9)
    assert math.isfinite(mapped.cost.total_cycles) and math.isfinite(mapped.cost.total_energy_j)
    assert mapped.cost.macs == e.macs
    if engine.mapspace(e, w, arch) is None:
        assert mapped.mapping is None and mapped.cost == engine.cost(e, w, arch)
