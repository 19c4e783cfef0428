"""The mapping stage of the pipeline over a whole workload: every einsum's best cost on every engine that can run it.

Execution models (accel_sim/sim/) and the graph scheduler's problem builder take their per-einsum options from
here, so a repeated layer shape is mapped once per workload, and a `MapperCache` passed in carries the mappings
across workloads and designs (sweeps).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from accel_sim.engines.multicore import row_split_factor
from accel_sim.engines.roofline import roofline
from accel_sim.errors import InfeasibleError
from accel_sim.mapper.search import MapperCache, best_cost
from accel_sim.spec.mapspace import objective_figure, tie_break

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")


def score(cost: Cost, objective: str) -> float:
    """The figure `objective` minimizes: cycles, joules or their product."""
    return objective_figure(cost.total_cycles, cost.total_energy_j, objective)


def ranking(cycles: float, joules: float, objective: str) -> tuple[float, float]:
    """(figure, tie-break) of a choice taking `cycles` and `joules`: how engines and plans are ordered, as the
    mapper's search orders mappings."""
    return objective_figure(cycles, joules, objective), tie_break(cycles, joules, objective)


def synchronised(cost: Cost, engine: EngineBase, einsum: Einsum, arch: Arch) -> Cost:
    """`cost` as a CPU's threads run it (engines/multicore.py): compute and stall cycles stretched to the busiest
    thread's rows, and the per-operator thread barriers as fill/drain cycles."""
    split = row_split_factor(einsum, engine.row_split_threads)
    if not engine.operator_sync_s and split == 1.0:
        return cost
    sync = engine.operator_sync_s * arch.clock_hz
    busy = cost.total_cycles
    stretched = replace(cost, compute_cycles=cost.compute_cycles * split, stall_cycles=cost.stall_cycles * split,
                        fill_drain_cycles=cost.fill_drain_cycles + sync)
    # utilization is a time fraction: the same MACs over the longer time
    return replace(stretched, utilization=cost.utilization * busy / stretched.total_cycles)


def best_options(arch: Arch, workload: Workload, objective: str, cache: MapperCache | None = None,
                 rooms: Mapping[int, Arch] | None = None
                 ) -> list[tuple[tuple[str, ...], list[tuple[EngineBase, Cost]]]]:
    """Per einsum: its tensor names and [(engine, best cost)] on every capable engine; a repeated layer shape
    is mapped once and renamed (the one place the pipeline asks the mapper for each engine's best cost).
    `rooms[i]`: `arch` with less room for einsum i's tiles (live tensors it does not touch that cannot move out,
    sim/placement.py crowding_homes), where it is mapped instead."""
    seen: dict[tuple, tuple[tuple[str, ...], list]] = {}
    out = []
    for i, einsum in enumerate(workload.einsums):
        key, tensors = arch.shape_key(workload, einsum)
        mapped_on = arch
        if rooms and i in rooms:
            mapped_on = rooms[i]
            key = (key, tuple(lv.room_bytes for lv in mapped_on.memory))
        if key not in seen:
            capable = [e for e in arch.engines if e.peak_per_cycle(einsum) > 0]
            if not capable:
                roofline(einsum, workload, arch)  # raises the InfeasibleError that names the missing engine
                raise InfeasibleError(f"no engine can run einsum '{einsum.name}'")
            mapped = _mapped(capable, einsum, workload, mapped_on, objective, cache, in_room=mapped_on is not arch)
            seen[key] = (tensors, [(e, synchronised(c, e, einsum, arch)) for e, c in mapped])
        first, options = seen[key]
        if first != tensors:
            rename = dict(zip(first, tensors))
            options = [(e, c.with_tensor_names(rename)) for e, c in options]
        out.append((tensors, options))
    return out


def _mapped(engines: list[EngineBase], einsum: Einsum, workload: Workload, arch: Arch, objective: str,
            cache: MapperCache | None, in_room: bool) -> list[tuple[EngineBase, Cost]]:
    """(engine, best cost) on each of `engines`. In a room (`in_room`: less room for the einsum's tiles than the
    arch has), an engine with no mapping that fits is left out while another engine can run the einsum there; only
    when none can is its InfeasibleError raised (out of a room, any engine's is)."""
    mapped, refused = [], None
    for engine in engines:
        try:
            mapped.append((engine, best_cost(engine, einsum, workload, arch, objective, cache).cost))
        except InfeasibleError as error:
            if not in_room:
                raise
            refused = refused or error
    if not mapped:
        raise refused
    return mapped
