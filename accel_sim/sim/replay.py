"""Event-driven replay of a `Schedule` in simpy: engines run their einsums in the planned order, spilled tensors
cross the backing level's shared bandwidth, fused pairs pass tiles.

Each einsum is released at its planned start and then waits for its engine and inputs: an on-chip input is
ready when its producer ends; a spilled one after its write-back and read-in, which queue for the backing
level (one transfer at a time at its full bandwidth, so concurrent spills contend); a fused one after the
producer's first tile, and the consumer cannot finish before the producer's last tile plus one of its own.
An einsum whose engine ran another just before may start min(both pipeline tails) before that one ends
(Slot.tail, a systolic array's skew). With no contention every einsum starts exactly as planned and the
replayed makespan equals the schedule's;
contention only delays, so the replay is never shorter than the plan.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import simpy

from accel_sim.sim.trace import Span, Trace

if TYPE_CHECKING:
    from accel_sim.schedule.cpsat import Schedule


def replay(schedule: Schedule) -> Trace:
    """Play `schedule` over time with shared-bandwidth transfers; the Trace holds every einsum and transfer span."""
    problem = schedule.problem
    env = simpy.Environment()
    link = f"{problem.spill_level or 'backing'} link"
    dram = simpy.Resource(env, capacity=1)
    spans: list[Span] = []
    started = {s.einsum: env.event() for s in schedule.slots}
    done = {s.einsum: env.event() for s in schedule.slots}
    ended: dict[str, float] = {}
    began: dict[str, float] = {}
    placement = {b.tensor: b.placement for b in schedule.buffers}
    cycles = {s.einsum: s.end - s.start for s in schedule.slots}
    ready: dict[tuple[str, str], simpy.Event] = {}

    def transfer(tensor: str, nbytes: int, direction: str):
        with dram.request() as req:
            yield req
            begin = env.now
            yield env.timeout(math.ceil(nbytes / problem.spill_bytes_per_cycle))
            spans.append(Span(link, "transfer", f"{tensor} {direction}", begin, env.now))

    def spill(buffer, event: simpy.Event):
        yield done[buffer.producer]
        yield env.process(transfer(buffer.tensor, buffer.bytes, "write"))
        yield env.process(transfer(buffer.tensor, buffer.bytes, "read"))
        event.succeed()

    def first_tile(buffer, event: simpy.Event):
        yield started[buffer.producer]
        yield env.timeout(math.ceil(cycles[buffer.producer] / buffer.tiles))
        event.succeed()

    for b in problem.buffers:
        for c in b.consumers:
            event = env.event()
            if placement[b.tensor] == "spill":
                env.process(spill(b, event))
            elif placement[b.tensor] == "fused":
                env.process(first_tile(b, event))
            else:
                event = done[b.producer]
            ready[(b.tensor, c)] = event

    fused_in = {s.einsum: any(placement[b.tensor] == "fused" for b in problem.inputs_of(s.einsum))
                for s in schedule.slots}

    def finish(slot):
        yield env.timeout(cycles[slot.einsum])
        for b in problem.inputs_of(slot.einsum):
            if placement[b.tensor] == "fused":
                yield done[b.producer]
                floor = ended[b.producer] + math.ceil(cycles[slot.einsum] / b.tiles)
                if env.now < floor:
                    yield env.timeout(floor - env.now)  # waiting for the producer's last tile
        ended[slot.einsum] = env.now
        spans.append(Span(slot.engine, "einsum", slot.einsum, began[slot.einsum], env.now))
        done[slot.einsum].succeed()

    def run_engine(slots):
        previous = None
        for slot in slots:
            if env.now < slot.start:
                yield env.timeout(slot.start - env.now)
            for b in problem.inputs_of(slot.einsum):
                yield ready[(b.tensor, slot.einsum)]
            if previous is not None and fused_in.get(previous.einsum):
                yield done[previous.einsum]   # its end depends on its producer's tiles: wait for it
            elif previous is not None:
                # the pipeline tails of consecutive einsums overlap (Option.tail_cycles)
                free = began[previous.einsum] + cycles[previous.einsum] - min(previous.tail, slot.tail)
                if env.now < free:
                    yield env.timeout(free - env.now)
            began[slot.einsum] = env.now
            started[slot.einsum].succeed()
            env.process(finish(slot))
            previous = slot

    # engines take their einsums in the planned order
    by_engine: dict[str, list] = {}
    for slot in sorted(schedule.slots, key=lambda s: (s.start, s.end)):
        by_engine.setdefault(slot.engine, []).append(slot)
    for slots in by_engine.values():
        env.process(run_engine(slots))
    env.run()
    resources = tuple(dict.fromkeys(s.engine for s in schedule.slots)) + (
        (link,) if any(p == "spill" for p in placement.values()) else ())
    policy = f"CP-SAT {schedule.status.lower()}" if schedule.status != "HEURISTIC" else "list schedule"
    return Trace(tuple(spans), problem.clock_hz, resources, float(schedule.makespan_cycles), policy,
                 schedule.buffers, problem.capacity_bytes, schedule.notes)
