"""`execution: scheduled`: evaluate places einsums with the scheduler and reports the replayed makespan."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_arch, load_workload

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def results():
    workload = load_workload(REPO / "workloads" / "mlp.einsum.yaml")
    sequential = evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml"), workload, "latency")
    scheduled = evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml", ["execution=scheduled"]), workload,
                         "latency")
    return sequential, scheduled


def test_latency_is_the_replayed_makespan(results) -> None:
    """The scheduled Result's cycles are the replay's makespan, which equals the schedule's (no spills on TPU v1's
    24 MiB buffer for this MLP, so nothing contends)."""
    _, scheduled = results
    assert scheduled.cycles == scheduled.trace.makespan_cycles == scheduled.trace.planned_cycles


def test_never_slower_than_back_to_back(results) -> None:
    """Overlap can only help when nothing spills: the makespan is at most the sequential sum of the same einsums'
    cycles (rounded up to whole cycles per einsum)."""
    sequential, scheduled = results
    assert scheduled.cycles <= sum(-(-r.cost.total_cycles // 1) for r in sequential.einsums)


def test_per_einsum_costs_unchanged(results) -> None:
    """Each einsum keeps the engine and cost sequential evaluation gives it (one capable engine per einsum here)."""
    sequential, scheduled = results
    assert [(r.engine, r.cost.total_cycles) for r in scheduled.einsums] == [
        (r.engine, r.cost.total_cycles) for r in sequential.einsums]
