"""A list schedule in topological order: the CP-SAT model's first guess, and its answer for graphs too large to solve.

Each einsum goes to the engine where it finishes first. A tensor whose single consumer keeps a rank of it
is fused (two tiles on chip) when the consumer's best engine differs from the producer's; any other tensor
stays on chip when it fits beside every on-chip tensor that may still be live, else it spills. The capacity
check counts every earlier on-chip tensor whose lifetime may reach past the new one's start, an upper bound
on the live bytes at any later time, so the result never exceeds the buffer. Tiles need room beside the tensors
(Option.tile_room_bytes), and einsums on different engines run at once: intermediates get the buffer less the most
each engine's einsums need (`_tile_reserve`), so every einsum finds its tiles' room free whenever it runs.
"""
from __future__ import annotations

import math

from accel_sim.mapper import ranking
from accel_sim.schedule.model import BufferSlot, Placement, Schedule, Slot
from accel_sim.schedule.problem import Option, Problem


def _no_room(problem: Problem, tensor: str, size: int, room: int, live: int) -> str:
    """Why the list schedule has nowhere for an intermediate: the on-chip room it lacks, and the backing level that
    may not take it."""
    backing = (f"the backing level '{problem.spill_level}' holds no intermediates" if not problem.spill_capacity_bytes
               else f"the backing level '{problem.spill_level}' holds {problem.spill_capacity_bytes:,} bytes")
    return (f"the list schedule has no room for tensor '{tensor}' ({size:,} bytes): the on-chip level "
            f"'{problem.on_chip_level}' keeps {problem.capacity_bytes:,} bytes for intermediates, {room:,} of them "
            f"beside the tiles' room, {live:,} of those possibly live when it is written, and {backing}")


def _exclusive_load_bound(problem: Problem) -> int:
    """A lower bound on the makespan: the busiest engine counting only einsums that can run nowhere else, each at
    its shortest (with the tensors it may keep in registers)."""
    load: dict[str, int] = {}
    for task in problem.tasks:
        if len(task.options) == 1:
            only = task.options[0]
            load[only.engine] = load.get(only.engine, 0) + min((only.cycles, *(x.cycles for x in only.variants)))
    return max(load.values(), default=0)


def _tile_reserve(problem: Problem) -> int:
    """Bytes of the buffer kept for tiles: per engine the most room any einsum's tiles need there, summed over the
    engines (einsums on one engine run one at a time in the list schedule; on different engines, at once)."""
    most: dict[str, int] = {}
    for task in problem.tasks:
        for o in task.options:
            most[o.engine] = max(most.get(o.engine, 0), o.tile_room_bytes)
    return sum(most.values())


def _residencies(problem: Problem) -> dict[str, tuple[str, frozenset[str]]]:
    """Task -> (engine, tensors it keeps in that engine's registers): each offered residency (Problem.residencies,
    in order) is taken when its tensor is not taken yet, no member einsum is already held to another engine, and
    every member's engine offers a variant with exactly its resident tensors so far plus this one."""
    held: dict[str, tuple[str, frozenset[str]]] = {}
    taken: set[str] = set()
    for r in problem.residencies:
        if r.tensor in taken or any(held.get(t, (r.engine,))[0] != r.engine for t in r.tasks):
            continue
        grown = {t: held.get(t, (r.engine, frozenset()))[1] | {r.tensor} for t in r.tasks}
        if all(any(o.engine == r.engine and any(x.resident == grown[t] for x in o.variants)
                   for o in problem.task(t).options) for t in r.tasks):
            held.update({t: (r.engine, grown[t]) for t in r.tasks})
            taken.add(r.tensor)
    return held


def list_schedule(problem: Problem, objective: str = "latency") -> Schedule:
    """Schedule `problem` greedily (see module docstring); status 'HEURISTIC', bound from the exclusive engine load.
    Where tensors may stay in an engine's registers, the list schedule with them (`_residencies`) and without are
    both built, and the better for `objective` is kept."""
    plain = _list_schedule(problem, objective, {})
    held = _residencies(problem)
    if not held:
        return plain
    fused = _list_schedule(problem, objective, held)
    goal = "energy" if objective == "energy" else "latency"   # 'mix' ranks by time first, as before

    def figure(s: Schedule) -> tuple[float, float]:
        return ranking(s.makespan_cycles, s.energy_j, goal)
    return fused if figure(fused) < figure(plain) else plain


def _list_schedule(problem: Problem, objective: str, held: dict[str, tuple[str, frozenset[str]]]) -> Schedule:
    """The list schedule with each einsum in `held` on its engine, keeping its tensors in registers."""
    in_registers = {t for _, tensors in held.values() for t in tensors}
    free: dict[str, int] = {}
    placed: dict[str, tuple[Option, int, int]] = {}
    mode: dict[str, Placement] = {}
    pending: dict[str, tuple[int, int]] = {}   # on-chip tensor -> (start, bytes), end not yet known
    closed: list[tuple[int, int]] = []           # (end, bytes) of on-chip tensors whose last consumer is placed
    life_end: dict[str, int] = {}
    energy = 0.0
    cap = problem.capacity_bytes if problem.capacity_bytes is None else problem.capacity_bytes - _tile_reserve(problem)
    for task in problem.tasks:
        engine, resident = held.get(task.name, (None, frozenset()))
        best: tuple[int, int, Option, float] | None = None
        for o in task.options:
            if engine is not None and o.engine != engine:
                continue
            if any(mode[b.tensor] == "fused" and placed[b.producer][0].engine == o.engine
                   for b in problem.inputs_of(task.name)):
                continue
            run = o.variant(resident)
            start, end_floor = free.get(o.engine, 0), 0
            for b in problem.inputs_of(task.name):
                p, ps, pe = placed[b.producer]
                if mode[b.tensor] == "fused":
                    start = max(start, ps + math.ceil((pe - ps) / b.tiles))
                    end_floor = max(end_floor, pe + math.ceil(run.cycles / b.tiles))
                elif mode[b.tensor] == "spill":
                    start = max(start, pe + problem.spill_cycles(b))
                else:
                    start = max(start, pe)
            start = max(start, end_floor - run.cycles)
            if best is None or start + run.cycles < best[1]:
                best = (start, start + run.cycles, o, run.energy_j)
        if best is None:  # every option clashed with a fused input: fall back to the fastest engine, unfused
            raise RuntimeError(f"list schedule: no engine left for '{task.name}'")
        start, end, o, spent = best
        placed[task.name] = (o, start, end)
        energy += spent
        free[o.engine] = end
        for b in problem.inputs_of(task.name):
            life_end[b.tensor] = max(life_end.get(b.tensor, 0), end)
            if b.tensor in pending and all(c in placed for c in b.consumers):
                closed.append((life_end[b.tensor], pending.pop(b.tensor)[1]))
        for b in problem.outputs_of(task.name):
            consumer = problem.task(b.consumers[0])
            pinned = held.get(consumer.name, ("",))[0]   # a consumer held to its engine runs nowhere else
            fastest = min((x for x in consumer.options if not pinned or x.engine == pinned), key=lambda x: x.cycles)
            live = sum(size for _, size in pending.values()) + sum(size for e, size in closed if e > start)
            if b.tensor in in_registers:
                mode[b.tensor], footprint = "registers", 0
            elif b.tiles and fastest.engine != o.engine and (cap is None or live + 2 * b.tile_bytes <= cap):
                mode[b.tensor], footprint = "fused", 2 * b.tile_bytes
            elif cap is None or live + b.bytes <= cap:
                mode[b.tensor], footprint = "on_chip", b.bytes
            elif problem.spill_capacity_bytes is not None and b.bytes > problem.spill_capacity_bytes:
                raise RuntimeError(_no_room(problem, b.tensor, b.bytes, cap, live))
            else:
                mode[b.tensor], footprint = "spill", 0
            if footprint:
                pending[b.tensor] = (start, footprint)
    slots = tuple(Slot(t.name, placed[t.name][0].engine, placed[t.name][1], placed[t.name][2],
                       tuple(sorted(held.get(t.name, ("", ()))[1]))) for t in problem.tasks)
    buffers = tuple(BufferSlot(b.tensor, mode[b.tensor], placed[b.producer][1], life_end[b.tensor],
                               {"fused": 2 * b.tile_bytes, "on_chip": b.bytes, "spill": 0, "registers": 0}[
                                   mode[b.tensor]]) for b in problem.buffers)
    makespan = max((s.end for s in slots), default=0)
    energy += sum(b.bytes * problem.spill_j_per_byte for b in problem.buffers if mode[b.tensor] == "spill")
    return Schedule(problem, slots, buffers, makespan, energy, "HEURISTIC", objective,
                    float(_exclusive_load_bound(problem)), float(makespan),
                    notes=("list schedule (topological order, earliest finish); addresses not allocated",))
