"""The scheduling problem: einsums with per-engine options, the tensors between them and the memories.

Built once from (arch, workload) and handed to the CP-SAT model (`schedule/cpsat.py`) and the replay
(`sim/replay.py`). Durations and energies come from the engines' own models (each engine's best cost, costed
once per distinct layer shape by the mapping stage, `mapper.best_options`, as the sequential model does).
"""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from accel_sim.energy.components import level_energy_per_bit
from accel_sim.schedule.onchip import on_chip_cost
from accel_sim.mapper import MapperCache, best_options, fits_room

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload


def copy_name(name: str, j: int) -> str:
    """The name of copy `j` of an einsum or tensor in the unrolled problem."""
    return f"{name}#{j}"


def base_name(name: str) -> str:
    """The einsum or tensor name behind a copy's name ('SLN#1' -> 'SLN')."""
    return name.rsplit("#", 1)[0]


@dataclass(frozen=True)
class Variant:
    """An option's duration, energy and cost when the `resident` tensors stay in its engine's registers."""

    resident: frozenset[str]
    cycles: int
    energy_j: float
    cost: Cost
    tail_cycles: int = 0


@dataclass(frozen=True)
class Option:
    """One engine that can run an einsum: its duration (arch cycles, rounded up) and energy; `variants` for the
    register residencies (Problem.residencies) the engine supports. `tail_cycles`: the end of the run that the next
    einsum on the engine may overlap when it has a tail too (EngineBase.pipeline_tail_cycles): it may start
    min(both tails) before this one ends. `tile_room_bytes`: bytes of the on-chip buffer its mapping's tiles need
    there beside the tensors the einsum does not touch (issue 15, tile scope); 0 when no such tensor can crowd
    them."""

    engine: str
    cycles: int
    energy_j: float
    cost: Cost | None = None
    variants: tuple[Variant, ...] = ()
    tail_cycles: int = 0
    tile_room_bytes: int = 0   # the least room of the on-chip buffer its tiles keep their cost in (`_tile_room`)
    # (memory port, share of its bandwidth the einsum keeps busy on average while it runs), `_with_demands`
    link_demands: tuple[tuple[str, float], ...] = ()

    def variant(self, resident: frozenset[str]) -> Variant:
        """The cost with exactly the `resident` tensors in registers (the plain option when none)."""
        if not resident:
            return Variant(frozenset(), self.cycles, self.energy_j, self.cost, self.tail_cycles)
        return next(v for v in self.variants if v.resident == resident)


@dataclass(frozen=True)
class Residency:
    """An intermediate that may stay in `engine`'s registers, tile by tile, if its producer and every consumer
    (`tasks`, producer first) run there: fusion inside one engine, so it moves through no memory level."""

    tensor: str
    engine: str
    tasks: tuple[str, ...]
    tile_bytes: int


@dataclass(frozen=True)
class Task:
    """One einsum to place: its options, one per capable engine."""

    name: str
    options: tuple[Option, ...]


@dataclass(frozen=True)
class Buffer:
    """An intermediate tensor written by one task and read by others: the thing kept on chip or spilled.

    `tiles` > 1 when the single consumer keeps a rank of the tensor in its output, so tiles along that
    rank can flow from producer to consumer without the whole tensor (fusion); 0 when fusion is impossible.
    """

    tensor: str
    bytes: int
    producer: str
    consumers: tuple[str, ...]
    tiles: int = 0

    @property
    def tile_bytes(self) -> int:
        """Bytes of one tile (the on-chip footprint of a fused tensor is two, double buffered)."""
        return math.ceil(self.bytes / self.tiles) if self.tiles else self.bytes


@dataclass(frozen=True)
class Problem:
    """Everything the scheduler decides over; cycles are arch cycles, bytes are bytes."""

    tasks: tuple[Task, ...]
    buffers: tuple[Buffer, ...]
    edges: tuple[tuple[str, str], ...]          # (producer, consumer) task pairs, including through views
    capacity_bytes: int | None                  # the on-chip buffer that holds intermediates; None: none bounded
    spill_bytes_per_cycle: float                # bandwidth of the backing level for a DRAM round trip
    spill_capacity_bytes: int | None            # capacity of the backing level (None: unbounded)
    spill_j_per_byte: float                     # write + read energy of one spilled byte
    on_chip_level: str = ""
    spill_level: str = ""
    clock_hz: float = 1.0
    required_fusions: tuple[tuple[str, str], ...] = ()  # (producer, consumer) pairs that must be pipelined
    on_chip_tensors: frozenset[str] = frozenset()  # intermediates whose backing traffic the option costs leave out
    residencies: tuple[Residency, ...] = ()     # intermediates the scheduler may keep in an engine's registers

    @cached_property
    def task_map(self) -> dict[str, Task]:
        """Task name -> Task."""
        return {t.name: t for t in self.tasks}

    def task(self, name: str) -> Task:
        """The task called `name`."""
        return self.task_map[name]

    @cached_property
    def _buffers_by_task(self) -> tuple[dict[str, tuple[Buffer, ...]], dict[str, tuple[Buffer, ...]]]:
        read: dict[str, list[Buffer]] = {}
        written: dict[str, list[Buffer]] = {}
        for b in self.buffers:
            written.setdefault(b.producer, []).append(b)
            for c in b.consumers:
                read.setdefault(c, []).append(b)
        return ({k: tuple(v) for k, v in read.items()}, {k: tuple(v) for k, v in written.items()})

    def inputs_of(self, task: str) -> tuple[Buffer, ...]:
        """The intermediates task `task` reads."""
        return self._buffers_by_task[0].get(task, ())

    def outputs_of(self, task: str) -> tuple[Buffer, ...]:
        """The intermediates task `task` writes."""
        return self._buffers_by_task[1].get(task, ())

    def spill_cycles(self, buffer: Buffer) -> int:
        """Cycles of a DRAM round trip of `buffer`: written out after production, read back before use."""
        return math.ceil(2 * buffer.bytes / self.spill_bytes_per_cycle)

    def transfer_cycles(self, buffer: Buffer) -> int:
        """Cycles of one direction of the round trip."""
        return math.ceil(buffer.bytes / self.spill_bytes_per_cycle)


def _on_chip_level(arch: Arch) -> MemoryLevel | None:
    """The largest bounded level inside the backing store that holds intermediates, written as one einsum's output
    and read as the next one's input (the global buffer)."""
    inner = [lv for lv in arch.memory[1:] if _holds_intermediates(lv) and lv.capacity_bytes is not None]
    return max(inner, key=lambda lv: lv.capacity_bytes) if inner else None


def _spill_level(arch: Arch, on_chip: MemoryLevel | None) -> MemoryLevel | None:
    """Where an intermediate that leaves the on-chip buffer goes: the nearest outer level that may hold it as an
    output and as an input (issue 15: spills go to the next outer level that admits them), None if none may."""
    names = [lv.name for lv in arch.memory]
    outer = arch.memory[:names.index(on_chip.name)] if on_chip is not None else arch.memory[:1]
    return next((lv for lv in reversed(outer) if _holds_intermediates(lv)), None)


def _holds_intermediates(level: MemoryLevel) -> bool:
    """A level one einsum writes an intermediate to and the next reads it from."""
    return level.admits("outputs") and level.admits("inputs")


def _on_chip_capacity(arch: Arch) -> int | None:
    """Bytes the on-chip buffer holds for intermediates: None when a level inside the backing store that holds
    them is unbounded, 0 when no such level exists (every intermediate then spills or fuses: none can silently
    stay on a chip that has no room for it)."""
    inner = [lv for lv in arch.memory[1:] if _holds_intermediates(lv)]
    if any(lv.capacity_bytes is None for lv in inner):
        return None
    level = _on_chip_level(arch)
    return int(level.room_bytes) if level is not None else 0   # less what it reserves (parameters kept there)


def _kept_ranks(tensor: str, consumer: Einsum) -> set[str]:
    """Ranks `consumer` reads `tensor` along plainly (one index term) and keeps in its output."""
    return {index.terms[0][0] for acc in consumer.inputs if acc.tensor == tensor for index in acc.indices
            if len(index.terms) == 1 and index.terms[0][0] in consumer.output.ranks}


def _tile_count(tensor: str, consumer: Einsum) -> int:
    """Tiles a single consumer can take one at a time: the largest rank it keeps from the tensor in its output."""
    largest = max((consumer.sizes[r] for r in _kept_ranks(tensor, consumer)), default=0)
    return largest if largest > 1 else 0


def _kept_tile_count(tensor: str, consumers: list[Einsum]) -> int:
    """Tiles of `tensor` along the largest of its plain ranks that every consumer keeps in its output (1: none)."""
    common = set.intersection(*(_kept_ranks(tensor, c) for c in consumers))
    return max((consumers[0].sizes[r] for r in common), default=1)


def _residencies(arch: Arch, workload: Workload, buffers: list[Buffer], tasks: list[Task],
                 alias: dict[str, tuple[str, ...]]) -> tuple[Residency, ...]:
    """Intermediates whose producer and consumers can all run on one engine with registers, a tile of which (along
    a rank every consumer keeps, so the chain can run tile by tile) fits those registers."""
    options = {t.name: {o.engine for o in t.options} for t in tasks}
    out = []
    for b in buffers:
        if b.tensor in alias:
            continue
        tile = math.ceil(b.bytes / _kept_tile_count(b.tensor, [workload.einsum(c) for c in b.consumers]))
        for engine in arch.engines:
            members = (b.producer, *b.consumers)
            if 0 < tile <= engine.register_capacity_bytes() and all(engine.name in options[m] for m in members):
                out.append(Residency(b.tensor, engine.name, members, tile))
    return tuple(out)


MAX_RESIDENT_PER_TASK = 3  # register-residency candidates per (einsum, engine): variants grow as 2^n


def _with_variants(option: Option, einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase,
                   on_chip: frozenset[str], candidates: list[str]) -> Option:
    """`option` with one Variant per non-empty subset of `candidates` the engine can hold in its registers."""
    variants = []
    levels = frozenset(lv.name for lv in arch.memory)
    for n in range(1, len(candidates) + 1):
        for subset in itertools.combinations(candidates, n):
            resident = frozenset(subset)
            cost = engine.resident_cost(einsum, workload, arch, resident)
            if cost is None:
                continue
            cost = on_chip_cost(on_chip_cost(cost, workload, arch, engine, on_chip), workload, arch, engine,
                                resident, levels)
            variants.append(Variant(resident, max(1, math.ceil(cost.total_cycles)), cost.total_energy_j, cost))
    return Option(option.engine, option.cycles, option.energy_j, option.cost, tuple(variants))


def _on_chip_option(option: Option, workload: Workload, arch: Arch, engine: EngineBase,
                    on_chip: frozenset[str]) -> Option:
    """`option` with the backing-level traffic of the on-chip intermediates removed from its cost."""
    cost = on_chip_cost(option.cost, workload, arch, engine, on_chip)
    if cost is option.cost:
        return option
    return Option(option.engine, max(1, math.ceil(cost.total_cycles)), cost.total_energy_j, cost)


def _tail(engine: EngineBase, einsum: Einsum, workload: Workload, arch: Arch, cost: Cost | None, cycles: int) -> int:
    """Whole cycles of the engine's pipeline tail (EngineBase.pipeline_tail_cycles), leaving one cycle of issue."""
    if cost is None:
        return 0
    return max(0, min(cycles - 1, math.floor(engine.pipeline_tail_cycles(einsum, workload, arch, cost))))


def _with_tails(option: Option, einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase) -> Option:
    """`option` and its variants with their pipeline tails."""
    variants = tuple(replace(x, tail_cycles=_tail(engine, einsum, workload, arch, x.cost, x.cycles))
                     for x in option.variants)
    return replace(option, variants=variants,
                   tail_cycles=_tail(engine, einsum, workload, arch, option.cost, option.cycles))


def _with_demands(option: Option, workload: Workload, arch: Arch, engine: EngineBase) -> Option:
    """`option` with the share of each memory port's bandwidth it keeps busy while it runs at its own pace (the
    port's busy cycles over its own, the most of its variants'): einsums that run at once on different engines
    share a level's ports, and the replay slows them where their shares add up past the whole (sim/replay.py). A
    level with separate read and write ports is two ports; one seen through other ports than its own (a PIM
    engine's banks, not the bus) is a port of its own."""
    clock = arch.engine_clock_hz(engine)
    bits = workload.tensor_map
    demands: dict[str, float] = {}
    for cycles, cost in ((option.cycles, option.cost), *((x.cycles, x.cost) for x in option.variants)):
        if cost is None or cycles <= 0:
            continue
        busy = engine.level_busy_cycles(cost, workload, arch)
        moved = cost.read_write_bytes_by_level({name: bits[name].bits for _, name, _ in cost.accesses})
        for lv in arch.memory:
            read, write = moved.get(lv.name, (0.0, 0.0))
            plain = engine.transfer_cycles(read, write, lv, arch)
            if not busy[lv.name] or not plain:
                continue
            ports = engine.level_ports(lv, clock)
            port = lv.name if ports == lv.ports else f"{lv.name} via {engine.name}"
            scale = busy[lv.name] / plain / cycles   # an engine's own efficiency at the level (a GPU's) kept
            if ports.shared:
                parts = {port: plain}
            else:
                parts = {f"{port} read": engine.transfer_cycles(read, 0.0, lv, arch),
                         f"{port} write": engine.transfer_cycles(0.0, write, lv, arch)}
            for name, part in parts.items():
                if part > 0:
                    demands[name] = max(demands.get(name, 0.0), min(1.0, float(part * scale)))
    return replace(option, link_demands=tuple(sorted(demands.items())))


def _tensor_graph(workload: Workload) -> tuple[dict[str, tuple[str, ...]], list[Buffer], dict[tuple[str, str], None]]:
    """The views' sources (a view aliases them), a buffer per intermediate with its consumers, and the edges."""
    # a view aliases its sources: a consumer of the view reads the tensors the view was made of
    alias: dict[str, tuple[str, ...]] = {}
    for view in workload.views:
        alias[view.output] = tuple(s for src in view.sources for s in alias.get(src, (src,)))
    writer = {e.output.tensor: e.name for e in workload.einsums}
    readers: dict[str, list[str]] = {}
    edges: dict[tuple[str, str], None] = {}
    for einsum in workload.einsums:
        for acc in einsum.inputs:
            if acc.tensor == einsum.output.tensor:
                continue  # a recurrence reads its own output
            for source in alias.get(acc.tensor, (acc.tensor,)):
                if source in writer and writer[source] != einsum.name:
                    readers.setdefault(source, [])
                    if einsum.name not in readers[source]:
                        readers[source].append(einsum.name)
                    edges[(writer[source], einsum.name)] = None
    buffers = []
    for tensor, consumers in readers.items():
        t = workload.tensor(tensor)
        tiles = (_tile_count(tensor, workload.einsum(consumers[0]))
                 if len(consumers) == 1 and tensor not in alias else 0)
        buffers.append(Buffer(tensor, math.ceil(t.bytes), writer[tensor], tuple(consumers), tiles))
    return alias, buffers, edges


# `_tile_room` stops refining once it knows the room to within this fraction of the buffer: it returns the upper
# end, a room the tiles surely keep their cost in, so a coarser answer only keeps a little more room free
_TILE_ROOM_RESOLUTION = 1 / 4096


def _tile_room(engine: EngineBase, einsum: Einsum, workload: Workload, arch: Arch, level: MemoryLevel,
               objective: str, cache: MapperCache) -> int:
    """The least bytes of `level` in which `engine`'s best mapping of `einsum` in `arch` keeps its cost with the rest
    of `level` taken by tensors the einsum does not touch (mapper.fits_room, which is monotone in the room); 0 when
    it keeps its cost in no room at all (its tiles live elsewhere)."""
    capacity = int(level.room_bytes)   # what the level's own reservations (parameters kept there) leave

    def fits(reserved: int) -> bool:
        held = [*level.reserved, ("tensors the einsum does not touch", float(reserved))]
        return fits_room(engine, einsum, workload, arch, arch.reserving({level.name: held}), objective, cache)

    if fits(capacity):
        return 0
    kept, refused = 0, capacity   # reservations its cost survives and does not: the mapping was chosen in all of it
    while refused - kept > max(1, int(capacity * _TILE_ROOM_RESOLUTION)):
        middle = (kept + refused) // 2
        kept, refused = (middle, refused) if fits(middle) else (kept, middle)
    return capacity - kept


def _with_tile_rooms(tasks: list[Task], arch: Arch, workload: Workload, level: MemoryLevel | None, objective: str,
                     cache: MapperCache) -> list[Task]:
    """`tasks` with each option's `tile_room_bytes` at the on-chip `level`, computed once per layer shape and engine."""
    if level is None:
        return tasks
    engines = {e.name: e for e in arch.engines}
    rooms: dict[tuple, int] = {}
    out = []
    for task in tasks:
        einsum = workload.einsum(task.name)
        shape = arch.shape_key(workload, einsum)[0]
        options = []
        for o in task.options:
            key = (shape, o.engine)
            if key not in rooms:
                rooms[key] = _tile_room(engines[o.engine], einsum, workload, arch, level, objective, cache)
            options.append(replace(o, tile_room_bytes=rooms[key]))
        out.append(Task(task.name, tuple(options)))
    return out


def build_problem(arch: Arch, workload: Workload, objective: str = "edp",
                  required_fusions: tuple[tuple[str, str], ...] = (), cache: MapperCache | None = None) -> Problem:
    """The scheduling problem of `workload` on `arch`: options from the engines (the graph's intermediates on chip,
    schedule/onchip.py, each option with the room its tiles need there), buffers from the tensor graph."""
    clock = arch.clock_hz
    cache = MapperCache() if cache is None else cache   # `fits_room` re-scores the searches' winners from it
    # each engine's best cost per einsum (the mapping stage, mapper/stage.py)
    tasks = [Task(einsum.name, tuple(Option(engine.name, max(1, math.ceil(cost.total_cycles)), cost.total_energy_j,
                                            cost) for engine, cost in options))
             for einsum, (_, options) in zip(workload.einsums, best_options(arch, workload, objective, cache))]
    alias, buffers, edges = _tensor_graph(workload)

    # the graph's own intermediates stay on chip unless the scheduler spills them (schedule/onchip.py)
    on_chip = {b.tensor for b in buffers}
    for view in workload.views:
        if alias.get(view.output) and all(s in on_chip for s in alias[view.output]):
            on_chip.add(view.output)
    engines = {e.name: e for e in arch.engines}
    tasks = [Task(t.name, tuple(_on_chip_option(o, workload, arch, engines[o.engine], frozenset(on_chip))
                                for o in t.options)) for t in tasks]

    residencies = _residencies(arch, workload, buffers, tasks, alias)
    for i, task in enumerate(tasks):
        options = []
        for o in task.options:
            candidates = [r.tensor for r in residencies if r.engine == o.engine and task.name in r.tasks]
            if candidates:
                o = _with_variants(o, workload.einsum(task.name), workload, arch, engines[o.engine],
                                   frozenset(on_chip), candidates[:MAX_RESIDENT_PER_TASK])
            options.append(o)
        tasks[i] = Task(task.name, tuple(options))
    # a candidate some member cannot hold (no variant with it) is not offered
    held = {(t.name, o.engine): {x for v in o.variants for x in v.resident} for t in tasks for o in t.options}
    residencies = tuple(r for r in residencies if all(r.tensor in held[(m, r.engine)] for m in r.tasks))
    tasks = [Task(t.name, tuple(_with_tails(o, workload.einsum(t.name), workload, arch, engines[o.engine])
                                for o in t.options)) for t in tasks]

    level = _on_chip_level(arch)
    tasks = _with_tile_rooms(tasks, arch, workload, level, objective, cache)
    tasks = [Task(t.name, tuple(_with_demands(o, workload, arch, engines[o.engine]) for o in t.options))
             for t in tasks]
    backing = _spill_level(arch, level)
    # no outer level may hold an intermediate (tpu_v1's Weight Memory holds weights only): nothing can spill
    spill_capacity = 0 if backing is None else int(backing.room_bytes) if backing.capacity_bytes else None
    backing = backing or arch.memory[0]
    spill_j_per_byte = 8 * sum(level_energy_per_bit(backing, arch.technology_nm))
    return Problem(tuple(tasks), tuple(buffers), tuple(edges), _on_chip_capacity(arch),
                   backing.ports.round_trip_bytes_per_s / clock, spill_capacity,
                   spill_j_per_byte, level.name if level is not None else "", backing.name, clock,
                   tuple(required_fusions), frozenset(on_chip), residencies)


def random_problem(seed: int, n: int, capacity: int | None = None, tails: bool = False) -> Problem:
    """A random DAG of `n` einsums on engines x and y (some run on both) with fusible and plain tensors (tests);
    with `tails`, about half the options get a random pipeline tail."""
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        engines = rng.choice((("x",), ("y",), ("x", "y")))
        options = []
        for e in engines:
            cycles = rng.randint(1, 20)
            tail = rng.choice((0, rng.randint(0, cycles - 1))) if tails else 0
            options.append(Option(e, cycles, rng.uniform(1, 2), tail_cycles=tail))
        tasks.append(Task(f"t{i}", tuple(options)))
    buffers = []
    for i in range(1, n):
        for p in rng.sample(range(i), k=min(i, rng.randint(0, 2))):
            buffers.append(Buffer(f"T{p}_{i}", rng.randint(1, 40), f"t{p}", (f"t{i}",), rng.choice((0, 2, 4))))
    edges = tuple((b.producer, b.consumers[0]) for b in buffers)
    return Problem(tuple(tasks), tuple(buffers), edges, capacity, 4.0, None, 1e-12)
