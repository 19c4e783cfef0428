"""Graph-scope placement: every tensor alive across einsums gets a home level with room over its lifetime.

Used by the execution models that do not allocate buffers themselves (sequential, fpga); the scheduled and
pipelined models keep CP-SAT's allocation (schedule/problem.py), which uses the same `MemoryLevel.admits` test,
and charge its spills' traffic and energy through `charge_round_trips`.

Lifetimes, in einsum indices of the workload's order (a view is free: reading it reads its sources, unless it
changes their storage class, as a gather of embedding rows does; then it is a tensor of its own):
- activations: from their producer (0 for a workload input) to their last consumer (the last einsum for a
  workload output);
- weights read by more than one einsum: from the first reader to the last (a weight read once is streamed in by
  its einsum and lives across no einsum), an on-chip copy beside the backing copy below;
- KV caches (tensors of kind `kv_cache`, role `kv_cache`): the whole step; a cache the workload marks as a plain
  activation lives from the einsum that writes its new row to its last reader.

Parameters (weights no einsum writes: the model's weights, biases, scales, embedding tables) persist: the next
step or inference reads them again, so each keeps a backing copy for the whole run at the outermost level that may
hold it, whatever copies the einsums stage further in. A bounded backing level must hold them all at once
(`check_levels_exist` names the total, the level and the fix), and they take its room before any home is placed.

Homes: tensors are taken smallest first (ties in walk order: start, then first appearance; `homing_order`) and
each goes to the innermost level that admits its role and has room for its bytes at every point of its lifetime
(over the live bytes already placed there; an unbounded level always has room), unless a tensor taken before it was
refused that level at some point of its lifetime: then it is refused there too (no tensor jumps the queue). Its
*first choice* is the innermost level that admits it at all; a home further out is a spill. No admitting level, or
none with room: `InfeasibleError` naming the tensor, its bytes, the levels tried with their free bytes over its
lifetime, and the fix.
Why the queue: with first fit alone, a smaller level that refuses an early tensor leaves room for a later one,
which then lives further in than at the larger size (a skip chain ran 144 cycles at 62 B and 176 at 71 B). With
it, shrinking a level moves every home outward or leaves it (by induction over the order: a tensor kept at the
smaller size had every earlier tensor whose lifetime overlaps its own kept there too, hence kept at the larger
size, in the same bytes, with more room). Smallest first keeps the queue's cost low: a refused tensor only keeps
out tensors at least as large, which a full level would mostly refuse anyway.

Routing (sequential and fpga models, `route_homes`): an intermediate (written by one einsum, read by later ones)
homed in an on-chip level is read there, so the levels outside its home that admit its role pass it by when the
einsums are costed; on a scratchpad its producer writes it there only, while a write-back cache (a GPU's L2,
`EngineBase.writes_back_through_caches`) still writes it out. The workload's inputs and outputs cross the chip's
edge, and a spilled tensor's home is outside.

Room for tiles (sequential model): a home takes its level's room for its whole lifetime, so an einsum that does not
touch a tensor living in a bounded on-chip level has for its tiles only that level's capacity less the tensor's
bytes (a skip connection or a shared weight's copy beside a GEMM's staged weights; `bystanders`). The tensors it
reads or writes are not subtracted: the mapper counts their tiles there, which are the home copy's. Where an
einsum's mapping does not keep its cost in the room left (`mapper.fits_room`: the mapping re-scored there), the
bystanders homed last (the largest) are set aside until it does, and the bytes left become that einsum's budget at
that level: the next placement homes no tensor past it, so those tensors live further out, their spills charged
(`crowding_homes`, `assign_homes`'s budgets; a level a budget closes to a tensor counts as refused, for the queue).
Keeping a tensor on chip is the placement's choice, the mapping each einsum's own, and a smaller level never makes a
design infeasible by keeping something on chip that it could spill. What no level further out may hold (a
parameter's only copy, an activation with one level) stays, and an einsum it still crowds is mapped in the room it
leaves (an InfeasibleError naming it where nothing fits). A parameter's copy at the level of its backing copy is
that copy: it adds no bytes (`Home.backing`).

Charging a spill: the spilled tensor is written once by its producer and read once by each consumer (the
footprint the einsum touches, `Einsum.footprint`) at its home and at every admitting level between its first
choice and its home (it crosses them on the way). An einsum's own cost already moves tensors through the levels
that admit them; only the shortfall is added, so the tensor's traffic at such a level becomes
max(what the spill needs, what the einsum already moves). The shortfall costs that level's per-bit read or write
energy, and time by the roofline rule every engine follows: the einsum takes at least as long as the busiest
level needs for all its bytes (`engine.level_busy_cycles`, the engine's view of the level), so
total = max(total before, busy cycles of the level with the spill's bytes added) and the difference is stall.
Hence added bytes never lower an einsum's cost, and a home further out only adds levels to charge, so a shrink,
which moves homes only outward (above), never lowers a cost. The crowding step has no such proof: an einsum's
mapping is chosen before its bystanders are set aside, so at one size a GEMM could keep array tiles that push two
tensors off chip where, at a smaller size, it runs on another engine and crowds nothing. So the sequential model
also costs the other way, each crowded einsum mapped into the room its bystanders leave (`crowded_rooms`), and keeps
the cheaper (sim/execution.py run_sequential); random sweeps of 7,600 shrinks find no cost that falls
(tests/unit/sim/test_placement.py, the crowded GEMM and the random-cascade properties).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy.components import is_off_chip, level_energy_per_bit
from accel_sim.engines.base import skipped_directions
from accel_sim.errors import InfeasibleError
from accel_sim.spec.arch import holds_entry
from accel_sim.spec.cost import WRITE_ACTIONS
from accel_sim.spec.fields import ACTIVATION_ROLES
from accel_sim.spec.identity import IdentityMemo

if TYPE_CHECKING:
    from accel_sim.sim.execution import Placement
    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.workload import Workload


@dataclass(frozen=True)
class Lifetime:
    """A tensor alive across einsums: its role, bytes, first and last einsum index and the einsums that use it."""

    tensor: str
    role: str
    bytes: float
    start: int
    end: int
    writers: tuple[int, ...]   # einsums that write it
    readers: tuple[int, ...]   # einsums that read it (directly or through a view)


@dataclass(frozen=True)
class Home:
    """Where a tensor lives over its lifetime, and the innermost level that admits it (its first choice)."""

    lifetime: Lifetime
    level: str
    first_choice: str
    crossed: tuple[str, ...]   # admitting levels from just outside the first choice out to the home (spilled)
    backing: bool = False      # a parameter's copy at the level its backing copy is at: that copy, no second one

    @property
    def held_bytes(self) -> float:
        """Bytes the home adds to its level: none for a parameter's backing copy, counted with the parameters."""
        return 0.0 if self.backing else self.lifetime.bytes

    @property
    def spilled(self) -> bool:
        """Whether it lives further out than its first choice."""
        return self.level != self.first_choice


def role_of(workload: Workload, tensor: str) -> str:
    """The placement role of a tensor: 'kv_cache' for a tensor of that kind, else its storage class ('weights' or
    'activations', which `MemoryLevel.admits` reads as any non-weight role)."""
    if workload.tensor(tensor).kind == "kv_cache":
        return "kv_cache"
    return workload.storage_class[tensor]


def may_hold(level: MemoryLevel, life: Lifetime) -> bool:
    """Whether `level` can be the home of a tensor over its lifetime: an activation is written there as its
    producer's output and read there as its consumers' input (a level holding only partial sums, or only inputs,
    is no home for it); other roles (weights, kv_cache) by `admits`."""
    if life.role != "activations":
        return level.admits(life.role, life.tensor)
    return ((not life.writers or level.admits("outputs", life.tensor))
            and (not life.readers or level.admits("inputs", life.tensor)))


def _sources(workload: Workload) -> dict[str, tuple[str, ...]]:
    """View output -> the stored tensors it reads (views of views resolved). A view of another storage class than
    its sources (a gather of embedding rows into activations) is a tensor of its own, not an alias."""
    cls = workload.storage_class
    direct = {v.output: v.sources for v in workload.views if all(cls[s] == cls[v.output] for s in v.sources)}

    def resolve(name: str, seen: frozenset[str]) -> tuple[str, ...]:
        if name not in direct or name in seen:
            return (name,)
        return tuple(s for src in direct[name] for s in resolve(src, seen | {name}))

    return {name: resolve(name, frozenset()) for name in direct}


def _materialized_views(workload: Workload, sources: dict[str, tuple[str, ...]]
                        ) -> dict[str, tuple[int, list[str]]]:
    """Each view that is a tensor of its own (not an alias: `_sources`) -> (the einsum index at which it is made,
    the stored tensors it reads): made when the last of them is written (0 when they are all inputs or
    parameters), so that it is live from then, not from the first einsum, and they until then."""
    first_writer: dict[str, int] = {}
    for i, einsum in enumerate(workload.einsums):
        first_writer.setdefault(einsum.output.tensor, i)
    made: dict[str, tuple[int, list[str]]] = {}
    for view in workload.views:   # in graph order: a view's sources come before it
        if view.output in sources:
            continue
        stored = [s for src in view.sources for s in sources.get(src, (src,))]
        at = max((first_writer.get(s, made[s][0] if s in made else 0) for s in stored), default=0)
        made[view.output] = (at, stored)
    return made


def lifetimes(workload: Workload) -> tuple[Lifetime, ...]:
    """Every tensor alive across einsums, in walk order (start, then first appearance)."""
    # every design of a sweep places the same parsed workload: walk it once (it is frozen)
    return _LIFETIMES.get((workload,), lambda: _lifetimes(workload))


_LIFETIMES = IdentityMemo(limit=8)   # each entry keeps its workload alive: a few


def parameters(workload: Workload) -> tuple[tuple[str, float], ...]:
    """(name, bytes) of every parameter the einsums read (weights no einsum writes; a view's stored sources)."""
    return _PARAMETERS.get((workload,), lambda: _parameters(workload))


_PARAMETERS = IdentityMemo(limit=8)


def _parameters(workload: Workload) -> tuple[tuple[str, float], ...]:
    """`parameters`, computed."""
    sources = _sources(workload)
    written = {einsum.output.tensor for einsum in workload.einsums}
    read = dict.fromkeys(name for einsum in workload.einsums for access in einsum.inputs
                         for name in sources.get(access.tensor, (access.tensor,)))
    return tuple((name, workload.tensor(name).bytes) for name in read
                 if name not in written and role_of(workload, name) == "weights")


def resident_parameters(arch: Arch, workload: Workload) -> dict[str, list[tuple[str, float]]]:
    """Per level: the parameters whose backing copy lives there for the whole run (the outermost level that may
    hold each, module docstring), with their bytes; levels holding none are left out."""
    backing: dict[str, list[tuple[str, float]]] = {}
    for name, size in parameters(workload):
        level = next((lv for lv in arch.memory if lv.admits("weights", name)), None)
        if level is not None:   # none: check_levels_exist names the tensor
            backing.setdefault(level.name, []).append((name, size))
    return backing


def reserving_parameters(arch: Arch, workload: Workload) -> Arch:
    """`arch` with each bounded on-chip level reserving the parameters whose backing copy lives there for the whole
    run (`resident_parameters`): the room a scheduler's buffers and every einsum's tiles get is what they leave."""
    bounded = _bounded_on_chip(arch)
    held = {name: entries for name, entries in resident_parameters(arch, workload).items() if name in bounded}
    return arch.reserving(held) if held else arch


def _bounded_on_chip(arch: Arch) -> set[str]:
    """The levels whose capacity binds tiles: bounded and on chip (an off-chip level binds at graph scope only)."""
    return {lv.name for lv in arch.memory if lv.capacity_bytes is not None and not is_off_chip(lv)}


def _lifetimes(workload: Workload) -> tuple[Lifetime, ...]:
    """`lifetimes`, computed."""
    sources = _sources(workload)
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    seen: dict[str, None] = {}   # first appearance: an einsum's inputs exist before its output
    made = _materialized_views(workload, sources)
    for at, stored in made.values():   # a view that is a tensor of its own reads its sources when it is made
        for name in stored:
            readers.setdefault(name, []).append(at)
    for i, einsum in enumerate(workload.einsums):
        for access in einsum.inputs:
            if access.tensor == einsum.output.tensor:
                continue   # a recurrence's running value: its own state, held by the engine between its steps
            for name in sources.get(access.tensor, (access.tensor,)):
                readers.setdefault(name, []).append(i)
                seen.setdefault(name)
        writers.setdefault(einsum.output.tensor, []).append(i)
        seen.setdefault(einsum.output.tensor)
    last = len(workload.einsums) - 1
    out = []
    for name in seen:
        role = role_of(workload, name)
        w, r = tuple(dict.fromkeys(writers.get(name, ()))), tuple(dict.fromkeys(readers.get(name, ())))
        uses = sorted({*w, *r})
        if role == "weights" and not w and len(uses) < 2:
            continue
        if role == "kv_cache":
            start, end = 0, last
        elif role == "weights" and not w:
            start, end = uses[0], uses[-1]
        else:
            start = min(w) if w else made.get(name, (0, []))[0]
            end = max(r) if r and max(r) >= start else last
        out.append(Lifetime(name, role, workload.tensor(name).bytes, start, end, w, r))
    return tuple(sorted(out, key=lambda t: t.start))


def check_levels_exist(arch: Arch, workload: Workload) -> None:
    """InfeasibleError naming the first tensor that no memory level may hold, in an einsum's access role or over
    its lifetime, and the roles to add so that every tensor has one (all of them at once: one fix, not a chain),
    raised before any engine costs the workload (an engine looks up each operand's level)."""
    homeless: dict[str, tuple[str, str]] = {}   # tensor -> (its description, the holds entry it needs)
    for einsum in workload.einsums:
        for name, role in workload.roles(einsum).items():
            if not any(lv.keeps(role, name) for lv in arch.memory):
                homeless.setdefault(name, (f"tensor '{name}' (role {role} in einsum '{einsum.name}')",
                                           holds_entry(role)))
    for life in lifetimes(workload):
        if not any(may_hold(lv, life) for lv in arch.memory):
            homeless.setdefault(life.tensor, (f"tensor '{life.tensor}' ({_bytes(life.bytes)}, role {life.role}, live "
                                              f"{_span_text(workload, life)})", life.role))
    if homeless:
        entries = list(dict.fromkeys(entry for _, entry in homeless.values()))
        if "activations" in entries:   # it stands for every non-weight role
            entries = [e for e in entries if e == "activations" or e not in ACTIVATION_ROLES]
        first = next(iter(homeless.values()))[0]
        others = len(homeless) - 1
        more = f", nor {others:,} more tensor{'s' if others > 1 else ''}," if others else ""
        roles = ", ".join(f"'{e}'" for e in entries)
        raise InfeasibleError(
            f"{first} has no memory level that may hold it{more} (levels and the roles they hold: {_held(arch)}). "
            f"Fix: let a level hold role{'s' if len(entries) > 1 else ''} {roles}, e.g. add "
            f"{'them' if len(entries) > 1 else 'it'} to memory.{arch.memory[0].name}.holds")
    for level_name, held in resident_parameters(arch, workload).items():
        level = arch.level(level_name)
        total = sum(size for _, size in held)
        if level.capacity_bytes is not None and total > level.capacity_bytes:
            largest = max(held, key=lambda item: item[1])
            raise InfeasibleError(
                f"the parameters of '{workload.name}' ({len(held):,} weight tensor{'s' if len(held) > 1 else ''}, "
                f"{_bytes(total)}; the largest "
                f"'{largest[0]}', {_bytes(largest[1])}) must stay in level '{level.name}' for the whole run, the "
                f"outermost level that may hold weights, which holds {_bytes(level.capacity_bytes)}. Fix: raise "
                f"memory.{level.name}.capacity to at least {_bytes(total)}, {_fewer_bits(workload, largest[0])}or "
                f"let a larger level hold role 'weights' (its holds:)")


def assign_homes(arch: Arch, workload: Workload, budgets: Mapping[tuple[str, int], float] | None = None
                 ) -> tuple[Home, ...]:
    """A home level for every tensor alive across einsums (module docstring); InfeasibleError where none has room.
    `budgets`: (level, einsum index) -> the most bytes of live tensors that einsum does not touch the level may
    keep beside its tiles (`crowding_homes`); a tensor that would pass one lives further out, unless no level
    further out may hold it."""
    live = parameter_occupancy(arch, workload)
    parameters_at = resident_parameters(arch, workload)
    backing = {name: level for level, held in parameters_at.items() for name, _ in held}
    touched = _touched(workload)
    beside = {key: sum(size for name, size in parameters_at.get(key[0], ()) if name not in touched[key[1]])
              for key in (budgets or {})}
    refused = {name: np.zeros_like(occupied, dtype=bool) for name, occupied in live.items()}
    homes = {}
    for life in homing_order(workload):
        admitting = [lv for lv in reversed(arch.memory) if may_hold(lv, life)]
        if not admitting:
            raise InfeasibleError(_no_level(arch, workload, life))
        crowds = [key for key in beside if life.start <= key[1] <= life.end and life.tensor not in touched[key[1]]]
        allowed = [lv for lv in admitting
                   if not any(beside[key] + life.bytes > budgets[key] for key in crowds if key[0] == lv.name)]
        span = slice(life.start, life.end + 1)
        home, candidates = None, {lv.name for lv in allowed or admitting[-1:]}
        for lv in admitting:
            # the queue never leaves a tensor homeless: its outermost level takes it wherever it has room
            queued = lv is not admitting[-1] and refused[lv.name][span].any()
            if lv.name in candidates and (lv.capacity_bytes is None or backing.get(life.tensor) == lv.name
                                          or (not queued
                                              and live[lv.name][span].max() + life.bytes <= lv.capacity_bytes)):
                home = lv
                break
            refused[lv.name][span] = True
        if home is None:
            raise InfeasibleError(_no_room(arch, workload, life, admitting, live))
        crossed = tuple(lv.name for lv in admitting[1:admitting.index(home) + 1])
        placed = homes[life.tensor] = Home(life, home.name, admitting[0].name, crossed,
                                           backing.get(life.tensor) == home.name)
        live[home.name][span] += placed.held_bytes
        for key in crowds:
            if key[0] == home.name:
                beside[key] += placed.held_bytes
    return tuple(homes[life.tensor] for life in lifetimes(workload))


def homing_order(workload: Workload) -> list[Lifetime]:
    """The lifetimes in the order homes are placed: smallest first, ties in walk order (module docstring)."""
    return sorted(lifetimes(workload), key=lambda life: life.bytes)


def _touched(workload: Workload) -> list[frozenset[str]]:
    """Per einsum: the stored tensors it reads or writes (a view's sources); walked once per workload (it is
    frozen), as `lifetimes` is."""
    return _TOUCHED.get((workload,), lambda: _touched_by(workload))


_TOUCHED = IdentityMemo(limit=8)


def _touched_by(workload: Workload) -> list[frozenset[str]]:
    """`_touched`, computed."""
    sources = _sources(workload)
    return [frozenset({einsum.output.tensor, *(s for a in einsum.inputs for s in sources.get(a.tensor, (a.tensor,)))})
            for einsum in workload.einsums]


def _fewer_bits(workload: Workload, tensor: str) -> str:
    """The narrower-weights fix for `tensor`'s width ('' when it is already 2 bits or fewer)."""
    bits = workload.tensor(tensor).bits
    if bits <= 2:
        return ""
    return (f"store the weights in fewer than their {bits} bits (a zoo recipe's workload.weight_bits, e.g. "
            f"int{max(bits // 2, 2)}; a cascade's bits), ")


def parameter_occupancy(arch: Arch, workload: Workload) -> dict[str, np.ndarray]:
    """Live bytes per level at each einsum index from the parameters' backing copies alone (whole run)."""
    n = max(len(workload.einsums), 1)
    live = {lv.name: np.zeros(n) for lv in arch.memory}
    for level, held in resident_parameters(arch, workload).items():
        live[level] += sum(size for _, size in held)
    return live


def _bytes(value: float) -> str:
    return f"{value:,.0f} bytes"


def _span_text(workload: Workload, life: Lifetime) -> str:
    first, last = workload.einsums[life.start].name, workload.einsums[life.end].name
    return f"at einsum '{first}'" if first == last else f"from einsum '{first}' to '{last}'"


def _held(arch: Arch) -> str:
    return "; ".join(f"{lv.name}: {', '.join(lv.holds)}" for lv in arch.memory)


def _no_level(arch: Arch, workload: Workload, life: Lifetime) -> str:
    return (f"tensor '{life.tensor}' ({_bytes(life.bytes)}, role {life.role}, live "
            f"{_span_text(workload, life)}) has no memory level that may hold it (levels and the roles they hold: "
            f"{_held(arch)}). Fix: let a level hold role '{life.role}', e.g. add it to memory.{arch.memory[0].name}.holds")


def _no_room(arch: Arch, workload: Workload, life: Lifetime, admitting: list[MemoryLevel],
             live: dict[str, np.ndarray]) -> str:
    span = slice(life.start, life.end + 1)
    tried = "; ".join(f"{lv.name} has {_bytes(lv.capacity_bytes - live[lv.name][span].max())} free of "
                      f"{_bytes(lv.capacity_bytes)}" for lv in admitting)
    outer = admitting[-1]
    fix = f"raise memory.{outer.name}.capacity to at least {_bytes(_needed_capacity(arch, workload, outer))}"
    further = [lv for lv in arch.memory[:arch.memory.index(outer)] if not may_hold(lv, life)]
    if further:   # the roomiest of them (an unbounded backing store first): a small one may not help
        roomiest = max(further, key=lambda lv: float("inf") if lv.capacity_bytes is None else lv.capacity_bytes)
        fix += (f", or let level '{roomiest.name}' hold role '{life.role}' (add it to "
                f"memory.{roomiest.name}.holds)")
    return (f"tensor '{life.tensor}' ({_bytes(life.bytes)}, role {life.role}, live {_span_text(workload, life)}) "
            f"fits no memory level that may hold it: {tried} over its lifetime. Fix: {fix}")


def _needed_capacity(arch: Arch, workload: Workload, level: MemoryLevel) -> float:
    """The capacity `level` needs for every tensor placed as now to find a home: its peak live bytes with the
    level unbounded (not just room for the first tensor refused, so one raise is enough)."""
    memory = tuple(lv.model_copy(update={"capacity_bytes": None}) if lv.name == level.name else lv
                   for lv in arch.memory)
    unbounded = arch.model_copy(update={"memory": memory})
    live = parameter_occupancy(unbounded, workload)
    for home in assign_homes(unbounded, workload):
        live[home.level][home.lifetime.start:home.lifetime.end + 1] += home.held_bytes
    return float(live[level.name].max())


def route_homes(arch: Arch, workload: Workload, homes: tuple[Home, ...]) -> Arch:
    """`arch` with each intermediate that lives in an on-chip level passed by at the levels outside it that admit
    it (and its views with it): its consumers read it where it lives, and, where that level is a scratchpad, its
    producer writes it there only; a write-back cache (Engine.writes_back_through_caches) still writes it out.
    Inputs and outputs of the workload still cross the chip's edge, and a spilled tensor lives where its home is."""
    names = [level.name for level in arch.memory]
    directions = skipped_directions(arch)
    views_of: dict[str, set[str]] = {}   # a stored tensor -> the views that read it
    for view, sources in _sources(workload).items():
        for source in sources:
            views_of.setdefault(source, set()).add(view)
    bypass: dict[str, set[tuple[str, str]]] = {}
    for home in homes:
        life = home.lifetime
        if home.spilled or life.role != "activations" or not life.writers or not life.readers:
            continue
        aliases = {life.tensor, *views_of.get(life.tensor, ())}
        for level in arch.memory[:names.index(home.level)]:
            if level.admits("activations", life.tensor):
                bypass.setdefault(level.name, set()).update((a, d) for a in aliases for d in directions)
    if not bypass:
        return arch
    memory = tuple(level.bypassing(frozenset(bypass[level.name])) if level.name in bypass else level
                   for level in arch.memory)
    return arch.model_copy(update={"memory": memory})


def bystanders(arch: Arch, workload: Workload, homes: tuple[Home, ...]) -> list[dict[str, list[tuple[str, float]]]]:
    """Per einsum, per bounded on-chip level: the (tensor, bytes) living there that the einsum does not touch
    (homes live across it, and parameters' backing copies). The tensors it reads or writes are left out: their
    tiles at their home are the home copy (the mapper counts the tile, the placement the whole tensor). Off-chip
    levels bind at graph scope only (no engine stages a tile against a DRAM's capacity)."""
    touched_by = _touched(workload)
    bounded = _bounded_on_chip(arch)
    last = len(workload.einsums) - 1
    resident = [(0, last, level, name, size) for level, held in resident_parameters(arch, workload).items()
                if level in bounded for name, size in held]
    resident += [(h.lifetime.start, h.lifetime.end, h.level, h.lifetime.tensor, h.lifetime.bytes)
                 for h in homes if h.level in bounded and not h.backing]
    if not resident:
        return [{} for _ in workload.einsums]
    resident.sort(key=lambda item: item[0])
    active: list[tuple[int, int, str, str, float]] = []
    upcoming = iter(resident)
    pending = next(upcoming, None)
    out = []
    for i, touched in enumerate(touched_by):
        while pending is not None and pending[0] <= i:
            active.append(pending)
            pending = next(upcoming, None)
        active = [item for item in active if item[1] >= i]
        held: dict[str, list[tuple[str, float]]] = {}
        for _, _, level, name, size in active:
            if name not in touched:
                held.setdefault(level, []).append((name, size))
        out.append(held)
    return out


def bytes_by_level(held: dict[str, list[tuple[str, float]]]) -> dict[str, float]:
    """Level -> the bytes of its (tensor, bytes) entries in `held` (an einsum's `bystanders`)."""
    return {level: float(sum(size for _, size in entries)) for level, entries in held.items()}


def crowding_homes(arch: Arch, workload: Workload, homes: tuple[Home, ...], fits: Callable[[int, Arch], bool],
                   unrouted: Arch | None = None) -> tuple[dict[tuple[str, int], float], dict[int, Arch]]:
    """(budgets: (level, einsum index) -> the bytes of live tensors it does not touch that the level may keep
    beside that einsum's tiles, the einsums whose mapping does not fit even so: index -> `arch` with the room
    they leave). Walking the einsums, while `fits(i, room)` says einsum i's mapping does not fit the room its
    bystanders leave (`bystanders`), the bystander homed last (`homing_order`: the largest) is set aside; the bytes
    left where it fits are the budget (`assign_homes` then homes no tensor past it: it lives further out, its spill
    charged). Only a tensor that some level further out may hold is set aside; parameters' backing copies never are:
    they have no other home, so an einsum they still crowd is mapped in the room they leave. What a level may hold
    is asked of `unrouted` (default `arch`): in the routed arch the levels outside a tensor's home pass it by, which
    says where it is read now, not where it could live (an activation homed in a CPU's L1 was never set aside)."""
    names = [level.name for level in arch.memory]
    rank = {life.tensor: k for k, life in enumerate(homing_order(workload))}
    levels = (unrouted or arch).memory
    order = {home.lifetime.tensor: rank[home.lifetime.tensor] for home in homes
             if any(may_hold(level, home.lifetime) for level in levels[:names.index(home.level)])}
    budgets: dict[tuple[str, int], float] = {}
    crowded: dict[int, Arch] = {}
    room = _rooms(arch)
    for i, held in enumerate(bystanders(arch, workload, homes)):
        moved: set[str] = set()
        while any(held.values()) and not fits(i, room(held)):
            movable = [(order[t], level, (t, size)) for level, entries in held.items() for t, size in entries
                       if t in order]
            # set aside at a level whose bystanders alone crowd the tiles, where there is one: emptying a level
            # that does not bind would only send its tensors out for nothing
            binding = {level for level in {lv for _, lv, _ in movable}
                       if not fits(i, room({level: held[level]}))}
            movable = [item for item in movable if item[1] in binding] or movable
            if not movable:
                crowded[i] = arch.reserving(held)   # its own: the room names what takes it
                break
            _, level, entry = max(movable)
            held[level].remove(entry)
            moved.add(level)
        budgets.update({(level, i): size for level, size in bytes_by_level(held).items() if level in moved})
    return budgets, crowded


def crowded_rooms(arch: Arch, workload: Workload, homes: tuple[Home, ...], fits: Callable[[int, Arch], bool]
                  ) -> dict[int, Arch]:
    """Einsum index -> `arch` with the room all its bystanders leave, for every einsum whose mapping does not fit
    there (`fits`): the einsums to map into their rooms if no bystander is set aside (`crowding_homes`' other way)."""
    room = _rooms(arch)
    crowded: dict[int, Arch] = {}
    for i, held in enumerate(bystanders(arch, workload, homes)):
        if any(held.values()) and not fits(i, room(held)):
            crowded[i] = room(held)
    return crowded


def _rooms(arch: Arch) -> Callable[[dict[str, list[tuple[str, float]]]], Arch]:
    """room(held): `arch` reserving an einsum's bystanders `held`, one object per distinct set of bytes per level
    (the fit checks answer per room object)."""
    memo: dict[tuple, Arch] = {}

    def room(held: dict[str, list[tuple[str, float]]]) -> Arch:
        key = tuple(sorted(bytes_by_level(held).items()))
        if key not in memo:
            memo[key] = arch.reserving(held)
        return memo[key]
    return room


def charge_spills(arch: Arch, workload: Workload, placements: tuple[Placement, ...], homes: tuple[Home, ...]
                  ) -> tuple[Placement, ...]:
    """`placements` with each spilled tensor's traffic at the levels it crosses added to the einsums that write
    and read it, where their own costs move less (module docstring)."""
    placed = list(placements)
    sources = _sources(workload)
    for home in homes:
        if not home.spilled:
            continue
        life = home.lifetime
        for i in sorted({*life.writers, *life.readers}):
            for level in home.crossed:
                placed[i] = _charge(arch, workload, placed[i], life, i, arch.level(level), sources)
    return tuple(placed)


def _needed_elements(workload: Workload, life: Lifetime, index: int, sources: dict[str, tuple[str, ...]]
                     ) -> tuple[float, float]:
    """(read, write) elements of `life`'s tensor that einsum `index` touches: the footprint it reads or writes
    (through a view: the view's footprint, at most the whole tensor; a gather reads only its rows)."""
    einsum, tensor = workload.einsums[index], workload.tensor(life.tensor)
    write = float(einsum.footprint(einsum.output, tensor)) if index in life.writers else 0.0
    read = 0.0
    if index not in life.readers:   # its writer only (a recurrence's reads of its own state are not across einsums)
        return read, write
    for access in einsum.inputs:
        if access.tensor == life.tensor:
            read = max(read, float(einsum.footprint(access, tensor)))
        elif life.tensor in sources.get(access.tensor, ()):
            view = workload.tensor(access.tensor)
            read = max(read, min(float(tensor.elements), float(einsum.footprint(access, view))))
    return read, write


def _charge(arch: Arch, workload: Workload, placement: Placement, life: Lifetime, index: int,
            level: MemoryLevel, sources: dict[str, tuple[str, ...]]) -> Placement:
    """One einsum's shortfall of one tensor's traffic at one level, with its energy and stall (`sources`: the
    stored tensors behind each view)."""
    cost = placement.cost
    names = {life.tensor, *(v for v, s in sources.items() if life.tensor in s)}
    own_read = sum(n for (lv, t, a), n in cost.accesses.items() if lv == level.name and t in names and a == "read")
    own_write = sum(n for (lv, t, a), n in cost.accesses.items()
                    if lv == level.name and t in names and a in WRITE_ACTIONS)
    need_read, need_write = _needed_elements(workload, life, index, sources)
    extra = {"read": max(0.0, need_read - own_read), "write": max(0.0, need_write - own_write)}
    if not any(extra.values()):
        return placement
    accesses, energy = dict(cost.accesses), dict(cost.energy_j)
    per_bit = dict(zip(("read", "write"), level_energy_per_bit(level, arch.technology_nm)))
    bits = workload.tensor(life.tensor).bits
    for action, elements in extra.items():
        if elements:
            key = (level.name, life.tensor, action)
            accesses[key] = accesses.get(key, 0.0) + elements
            energy[(level.name, action)] = energy.get((level.name, action), 0.0) + elements * bits * per_bit[action]
    charged = replace(cost, accesses=accesses, energy_j=energy)
    engine = arch.engine(placement.engine)
    busy = engine.level_busy_cycles(charged, workload, arch)[level.name]
    total = max(cost.total_cycles, busy)
    utilization = cost.utilization * cost.total_cycles / total if total > 0 else cost.utilization
    stall = total - cost.compute_cycles - cost.fill_drain_cycles
    return replace(placement, cost=replace(charged, stall_cycles=stall, utilization=utilization))


def charge_round_trips(arch: Arch, workload: Workload, placements: tuple[Placement, ...], spilled: Iterable[str],
                       on_chip_level: str, backing: str) -> tuple[Placement, ...]:
    """`placements` with the traffic and energy of each intermediate the scheduler spilled: written to `backing`
    by its producer and read back once before its first consumer, as the scheduler times it
    (`Problem.spill_cycles`); the cycles stay as they were, since the replay times the round trip on the backing
    link."""
    by_name = {life.tensor: life for life in lifetimes(workload)}
    homes = tuple(Home(replace(by_name[t], readers=by_name[t].readers[:1]), backing, on_chip_level, (backing,))
                  for t in spilled if t in by_name)
    return timed_as_before(charge_spills(arch, workload, placements, homes), placements)


def timed_as_before(charged: tuple[Placement, ...], placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """`charged` with the cycles and utilization of `placements`: for models whose trace times the spills itself
    (the scheduler's replay) or times items the placements only sum (the NPU+PIM co-simulation)."""
    return tuple(replace(c, cost=replace(c.cost, stall_cycles=p.cost.stall_cycles, utilization=p.cost.utilization))
                 for c, p in zip(charged, placements))


def place_graph(arch: Arch, workload: Workload, placements: tuple[Placement, ...],
                homes: tuple[Home, ...] | None = None) -> tuple[tuple[Placement, ...], tuple[Home, ...]]:
    """Homes for every tensor alive across einsums (given, or assigned here) and `placements` with the spills
    charged."""
    homes = assign_homes(arch, workload) if homes is None else homes
    return charge_spills(arch, workload, placements, homes), homes
