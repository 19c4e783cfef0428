"""The execution-model protocol, what every model returns, and the sequential model.

An execution model takes its spec (spec/execution.py), the arch, the workload and the objective, and returns an
`Execution`: where each einsum ran at what cost (`Placement`, which `evaluate` wraps into its `Result`) and the
`Trace` of what ran when. `evaluate` picks the model from a table keyed by the spec's type; nothing here imports
`evaluate`.

Per-einsum costs come from the mapping stage (`mapper.best_options`: each engine's best cost per distinct layer
shape); the sequential model places each einsum on the engine that serves the objective best, then gives every
tensor alive across einsums a home level with room over its lifetime and charges the spills (sim/placement.py).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from accel_sim.engines.roofline import Bound, bound_on
from accel_sim.mapper import MapperCache, best_options, fits_room, ranking, room_may_bind
from accel_sim.errors import InfeasibleError
from accel_sim.sim.placement import (Home, assign_homes, bystanders, bytes_by_level, crowded_rooms, crowding_homes,
                                    place_graph, route_homes)
from accel_sim.sim.trace import Span, Trace

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.execution import SequentialExecution
    from accel_sim.spec.workload import Workload

SpecT = TypeVar("SpecT", contravariant=True)


@dataclass(frozen=True)
class Placement:
    """One einsum placed on one engine: its cost and the roofline bound it must respect."""

    einsum: str
    engine: str
    op: str
    cost: Cost
    bound: Bound


@dataclass(frozen=True)
class Execution:
    """What an execution model returns: every einsum's placement (workload order), the trace and, where the model
    used the lifetime placement (sim/placement.py), every live tensor's home; None: the model allocated buffers
    itself (the trace's buffers) or not at all."""

    placements: tuple[Placement, ...]
    trace: Trace
    homes: tuple[Home, ...] | None = None


class ExecutionModel(Protocol[SpecT]):
    """Runs a workload on an arch as its execution spec says."""

    def __call__(self, spec: SpecT, arch: Arch, workload: Workload, objective: str,
                 cache: MapperCache | None = None) -> Execution:
        """Place and time every einsum of `workload` on `arch` for `objective` (`cache`: the mapper's, if shared)."""
        ...


def place_best(arch: Arch, workload: Workload, objective: str, cache: MapperCache | None = None,
               rooms: Mapping[int, Arch] | None = None) -> tuple[Placement, ...]:
    """Every einsum on the engine whose best cost serves `objective` best, with its roofline bound (`rooms`: the
    einsums mapped with less room for tiles, `best_options`)."""
    placed = []
    bounds: dict[tuple, Bound] = {}
    for einsum, (_, options) in zip(workload.einsums, best_options(arch, workload, objective, cache, rooms)):
        engine, cost = min(options, key=lambda pair: ranking(pair[1].total_cycles, pair[1].total_energy_j, objective))
        key = (arch.shape_key(workload, einsum)[0], engine.name)
        if key not in bounds:
            bounds[key] = bound_on(einsum, workload, arch, engine.name)
        placed.append(Placement(einsum.name, engine.name, einsum.op, cost, replace(bounds[key], einsum=einsum.name)))
    return tuple(placed)


def back_to_back(arch: Arch, placements: tuple[Placement, ...], policy: str = "back to back") -> Trace:
    """The trace of `placements` run one after another, each on its engine."""
    spans, now = [], 0.0
    for p in placements:
        end = now + p.cost.total_cycles
        spans.append(Span(p.engine, "einsum", p.einsum, now, end))
        now = end
    resources = tuple(dict.fromkeys(p.engine for p in placements))
    return Trace("sequential", policy, tuple(spans), arch.clock_hz, resources, now, concurrent=False)


def run_sequential(spec: SequentialExecution, arch: Arch, workload: Workload, objective: str,
                   cache: MapperCache | None = None) -> Execution:
    """Einsums back to back, each on its best engine, live tensors in their homes (`execution: sequential`): an
    intermediate homed on chip is read there (route_homes), and no home crowds an einsum's tiles out of their cost
    (crowding_homes), unless mapping the crowded einsums into the room their bystanders leave costs less."""
    homes = assign_homes(arch, workload)
    routed = route_homes(arch, workload, homes)
    if not any(room_may_bind(einsum, workload, routed, bytes_by_level(held))
               for einsum, held in zip(workload.einsums, bystanders(routed, workload, homes)) if held):
        # no live tensor could crowd a tile (the common case): nothing to check
        placements, homes = place_graph(routed, workload, place_best(routed, workload, objective, cache), homes)
        return Execution(placements, back_to_back(routed, placements), homes)
    cache = MapperCache() if cache is None else cache   # `fits_room` re-scores the searches' winners from it
    budgets: dict[tuple[str, int], float] = {}
    first = None   # the first pass's homes, routes and fit checks
    while True:   # each pass tightens at least one (level, einsum) budget, or ends
        placements = place_best(routed, workload, objective, cache)
        fits = _fit_checks(routed, workload, placements, objective, cache)
        if first is None:
            first = (homes, routed, fits)
        tighter, crowded = crowding_homes(routed, workload, homes, fits, arch)
        tighter = {key: bytes_ for key, bytes_ in tighter.items() if bytes_ < budgets.get(key, float("inf"))}
        if not tighter:   # nothing new to move out
            break
        budgets.update(tighter)
        homes = assign_homes(arch, workload, budgets)
        routed = route_homes(arch, workload, homes)
    if crowded:   # what crowds them cannot move out: they map their tiles into the room it leaves
        placements = place_best(routed, workload, objective, cache, crowded)
    placements, homes = place_graph(routed, workload, placements, homes)
    if budgets:   # tensors were set aside: weigh that against mapping the crowded einsums into their rooms
        kept_homes, kept_routed, first_fits = first
        rooms = crowded_rooms(kept_routed, workload, kept_homes, first_fits)
        try:
            remapped, _ = place_graph(kept_routed, workload, place_best(kept_routed, workload, objective, cache, rooms),
                                      kept_homes)
        except InfeasibleError:   # some crowded einsum has no mapping in its room: setting aside is the only way
            remapped = None
        if remapped is not None and _ranked(remapped, objective) < _ranked(placements, objective):
            placements, homes, routed = remapped, kept_homes, kept_routed
    return Execution(placements, back_to_back(routed, placements), homes)


def _fit_checks(routed: Arch, workload: Workload, placements: tuple[Placement, ...], objective: str,
                cache: MapperCache) -> Callable[[int, Arch], bool]:
    """`fits(i, room)`: whether einsum i's mapping on its placed engine keeps its cost in `room` (mapper.fits_room),
    answered once per shape, engine and room."""
    answers: dict[tuple, bool] = {}

    def fits(i: int, room: Arch) -> bool:
        einsum, engine = workload.einsums[i], placements[i].engine
        key = (routed.shape_key(workload, einsum)[0], engine, id(room))
        if key not in answers:
            answers[key] = fits_room(routed.engine(engine), einsum, workload, routed, room, objective, cache)
        return answers[key]
    return fits


def _ranked(placements: tuple[Placement, ...], objective: str) -> tuple[float, float]:
    """The objective's figure of einsums run back to back, and its tie-break (mapper.ranking)."""
    return ranking(sum(p.cost.total_cycles for p in placements), sum(p.cost.total_energy_j for p in placements),
                   objective)
