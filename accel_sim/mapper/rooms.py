"""Whether an einsum's searched mapping keeps its cost in less room: the same arch with part of a level taken by live
tensors the einsum does not touch (sim/placement.py crowding_homes, schedule/problem.py's tile rooms). The answer is
the cached winner re-scored in the room (`search.searched_batch`), remembered per key as the rooms that fitted and
those that did not: a room at least as large at every level as one that fitted fits too, and one no larger than one
that did not fit does not (a smaller room only takes choices away)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from accel_sim.errors import InfeasibleError
from accel_sim.mapper.search import searched_batch
from accel_sim.spec.mapspace import mapping_key

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.mapper.search import MapperCache
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.mapspace import Candidates
    from accel_sim.spec.workload import Einsum, Workload

# the widest a tile's element can be: an output's open partial sums at an accumulator's width (64-bit at most in any
# engine here: FP64 tensor cores); `room_may_bind` bounds tiles with it
_WIDEST_ACCUMULATOR_BITS = 64


def fits_room(engine: EngineBase, einsum: Einsum, workload: Workload, arch: Arch, room: Arch, objective: str,
              cache: MapperCache) -> bool:
    """Whether `einsum`'s best mapping on `engine` in `arch` keeps its cost in `room`, the same arch with less room
    for tiles at some level (live tensors the einsum does not touch, sim/placement.py): its cached winner re-scored
    there. Rooms at least as large at every level as one that fitted fit too, and rooms no larger than one that
    did not fit do not (a smaller room only takes choices away)."""
    if not room_may_bind(einsum, workload, room, {lv.name: lv.reserved_bytes for lv in room.memory if lv.reserved}):
        return True
    # what decides the answer: the einsum's shape and routes, the engine, the arch's mapping-relevant parts; every
    # einsum of the key is asked about as the first one asked (equal keys, equal costs: `Workload.shape_key`), so
    # that its re-scored batch and the loop nests prepared for it serve every room
    key = (arch.shape_key(workload, einsum)[0], engine, mapping_key(arch), objective)
    rooms = tuple(math.inf if lv.room_bytes is None else lv.room_bytes for lv in room.memory)
    checks = cache.fitted_rooms.get(key)
    if checks is None:
        checks = cache.fitted_rooms[key] = RoomChecks(einsum, workload)
    if any(all(r >= f for r, f in zip(rooms, fit)) for fit in checks.fitted):
        return True
    if any(all(r <= u for r, u in zip(rooms, unfit)) for unfit in checks.unfitted):
        return False
    fits = _fits_room(engine, checks, arch, room, objective, cache)
    (checks.fitted if fits else checks.unfitted).append(rooms)
    return fits


def room_may_bind(einsum: Einsum, workload: Workload, arch: Arch, reserved: dict[str, float]) -> bool:
    """Whether `reserved` bytes (level -> bytes of live tensors `einsum` does not touch) could refuse one of its
    tiles: a tile is at most its whole tensor, double-buffered, an output at the widest accumulator; where every
    such bound fits what is left, no mapping can notice the reservation (the common case: a skip connection beside
    a layer's small tiles), and `fits_room` need not ask."""
    roles = workload.roles(einsum)
    for level in arch.memory:
        if not reserved.get(level.name):
            continue
        bound = 0.0
        for name, role in roles.items():
            if level.keeps(role, name):
                tensor = workload.tensor(name)
                wide = max(tensor.bits, _WIDEST_ACCUMULATOR_BITS) if name == einsum.output.tensor else tensor.bits
                bound += 2 * tensor.elements * wide / 8
        if bound > level.capacity_bytes - reserved[level.name]:
            return True
    return False


@dataclass
class RoomChecks:
    """What `fits_room` learnt about one key: the einsum it asks as, the rooms that kept the cost and those that did
    not, and the batch it re-scores (named for that einsum)."""

    einsum: Einsum
    workload: Workload
    fitted: list[tuple[float, ...]] = field(default_factory=list)
    unfitted: list[tuple[float, ...]] = field(default_factory=list)
    batch: Candidates | None = None


def _fits_room(engine: EngineBase, checks: RoomChecks, arch: Arch, room: Arch, objective: str,
               cache: MapperCache) -> bool:
    """`fits_room`, computed for the einsum `checks` asks as."""
    einsum, workload = checks.einsum, checks.workload
    space = engine.mapspace(einsum, workload, arch)
    if space is None:   # no choices: the engine's own cost, in either room
        try:
            return engine.cost(einsum, workload, room) == engine.cost(einsum, workload, arch)
        except InfeasibleError:
            return False
    found, batch = searched_batch(space, objective, cache)
    # the batch the search result came from (its winner, or on a re-scored design maybe a default mapping): the
    # result keeps its cost in the room when one of them still reaches it there; kept, so that the loop nests
    # prepared for it (by the batch's identity) serve every room
    if checks.batch is None:
        checks.batch = batch
    in_room = engine.mapspace(einsum, workload, room).shared(cache.shelf)
    return bool(in_room.score(checks.batch).objective(objective).min() == found.score)
