"""The mapping stage of the pipeline over a whole workload: every einsum's best cost on every engine that can run it.

Execution models (accel_sim/sim/) and the graph scheduler's problem builder take their per-einsum options from
here, so a repeated layer shape is mapped once per workload, and a `MapperCache` passed in carries the mappings
across workloads and designs (sweeps).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from accel_sim.engines.roofline import roofline
from accel_sim.errors import InfeasibleError
from accel_sim.mapper.search import MapperCache, best_cost

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")


def score(cost: Cost, objective: str) -> float:
    """The figure `objective` minimizes: cycles, joules or their product."""
    if objective == "latency":
        return cost.total_cycles
    if objective == "energy":
        return cost.total_energy_j
    return cost.total_cycles * cost.total_energy_j


def synchronised(cost: Cost, engine: EngineBase, arch: Arch) -> Cost:
    """`cost` with the engine's per-operator thread barriers (a CPU's, engines/multicore.py) as fill/drain cycles."""
    if not engine.operator_sync_s:
        return cost
    sync = engine.operator_sync_s * arch.clock_hz
    busy = cost.total_cycles
    # utilization is a time fraction: the same MACs over the longer time
    return replace(cost, fill_drain_cycles=cost.fill_drain_cycles + sync,
                   utilization=cost.utilization * busy / (busy + sync))


def best_options(arch: Arch, workload: Workload, objective: str, cache: MapperCache | None = None
                 ) -> list[tuple[tuple[str, ...], list[tuple[EngineBase, Cost]]]]:
    """Per einsum: its tensor names and [(engine, best cost)] on every capable engine; a repeated layer shape
    is mapped once and renamed (the one place the pipeline asks the mapper for each engine's best cost)."""
    seen: dict[tuple, tuple[tuple[str, ...], list]] = {}
    out = []
    for einsum in workload.einsums:
        key, tensors = workload.shape_key(einsum)
        if key not in seen:
            capable = [e for e in arch.engines if e.peak_per_cycle(einsum) > 0]
            if not capable:
                roofline(einsum, workload, arch)  # raises the InfeasibleError that names the missing engine
                raise InfeasibleError(f"no engine can run einsum '{einsum.name}'")
            costs = [best_cost(e, einsum, workload, arch, objective, cache).cost for e in capable]
            seen[key] = (tensors, [(e, synchronised(c, e, arch)) for e, c in zip(capable, costs)])
        first, options = seen[key]
        if first != tensors:
            rename = dict(zip(first, tensors))
            options = [(e, c.with_tensor_names(rename)) for e, c in options]
        out.append((tensors, options))
    return out
