"""Event-driven replay of a `Schedule` in simpy: engines run their einsums in the planned order, spilled tensors
cross the backing level's shared bandwidth, fused pairs pass tiles.

Each einsum is released at its planned start and then waits for its engine and inputs: an on-chip input is
ready when its producer ends; a spilled one after its write-back and read-in, which queue for the backing
level (one transfer at a time at its full bandwidth, so concurrent spills contend); a fused one after the
producer's first tile, and the consumer cannot finish before the producer's last tile plus one of its own.
An einsum whose engine ran another just before may start min(both pipeline tails) before that one ends
(Slot.tail, a systolic array's skew). Einsums that run at once share each memory port (`_Ports`): each keeps its
share of the port busy (Option.link_demands) at its own pace, and where the shares of those running add up past
the whole, they slow down, max-min fair (progressive filling: every einsum's pace rises together until a port it
uses is full), so that no port moves more than its bandwidth; the schedule costed each at its own pace. With no
contention every einsum starts exactly as planned and the replayed makespan equals the schedule's;
contention only delays, so the replay is never shorter than the plan.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Generator

from accel_sim.sim.trace import Span, Trace

if TYPE_CHECKING:
    import simpy

    from accel_sim.schedule.model import Schedule, Slot
    from accel_sim.schedule.problem import Buffer

    Process = Generator[simpy.Event, object, None]


class _Ports:
    """The einsums running at once and their shares of each memory port: the pace each may run at (1: its own)."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.demands: dict[str, dict[str, float]] = {}   # running einsum -> port -> share at its own pace
        self.pace: dict[str, float] = {}
        self.changed = env.event()

    def run(self, einsum: str, cycles: float, demands: dict[str, float]) -> Process:
        """Run `einsum`'s `cycles` of work at the pace the ports leave it, re-paced whenever another starts or ends."""
        env = self.env
        if not demands:
            yield env.timeout(cycles)
            return
        self._join(einsum, demands)
        left = float(cycles)
        while True:
            pace, since = self.pace[einsum], env.now
            changed = self.changed
            finish = env.timeout(left / pace)
            yield env.any_of([finish, changed])
            left -= pace * (env.now - since)
            if finish.processed or left <= 1e-9 * cycles:
                break
        self._leave(einsum)

    def _join(self, einsum: str, demands: dict[str, float]) -> None:
        self.demands[einsum] = demands
        self._repace()

    def _leave(self, einsum: str) -> None:
        del self.demands[einsum]
        del self.pace[einsum]
        self._repace()

    def _repace(self) -> None:
        """Progressive filling: raise every unfixed einsum's pace together until a port it uses is full (or its
        own pace, 1), fix the einsums of that port, and go on with the rest."""
        pace: dict[str, float] = {}
        free = {port: 1.0 for shares in self.demands.values() for port in shares}
        while len(pace) < len(self.demands):
            open_ = [e for e in self.demands if e not in pace]
            level, full = 1.0, None   # pace 1: an einsum's own
            for port, room in free.items():
                wanted = sum(self.demands[e].get(port, 0.0) for e in open_)
                if wanted > 0 and room / wanted < level:
                    level, full = room / wanted, port
            fixed = [e for e in open_ if full is None or full in self.demands[e]]
            for e in fixed:
                pace[e] = max(level, 1e-12)   # rounding may leave a full port a hair below zero room
                for port, share in self.demands[e].items():
                    free[port] -= share * level
        self.pace = pace
        changed, self.changed = self.changed, self.env.event()
        changed.succeed()


class _Replay:
    """The simpy processes of one replay: engines, the backing link, and the events that order them."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.problem = schedule.problem
        import simpy  # simpy loads on first use: a run that replays nothing starts without it

        self.env = simpy.Environment()
        self.link = f"{self.problem.spill_level or 'backing'} link"
        self.dram = simpy.Resource(self.env, capacity=1)
        self.spans: list[Span] = []
        self.started = {s.einsum: self.env.event() for s in schedule.slots}
        self.done = {s.einsum: self.env.event() for s in schedule.slots}
        self.ended: dict[str, float] = {}
        self.began: dict[str, float] = {}
        self.placement = {b.tensor: b.placement for b in schedule.buffers}
        self.cycles = {s.einsum: s.end - s.start for s in schedule.slots}
        self.ready: dict[tuple[str, str], simpy.Event] = {}
        self.fused_in = {s.einsum: any(self.placement[b.tensor] == "fused" for b in self.problem.inputs_of(s.einsum))
                         for s in schedule.slots}
        self.ports = _Ports(self.env)
        options = {(t.name, o.engine): o for t in self.problem.tasks for o in t.options}
        self.demands = {s.einsum: dict(options[(s.einsum, s.engine)].link_demands) for s in schedule.slots}

    def wire_inputs(self) -> None:
        """When each consumer's input is ready: its producer's end, a spill's round trip, or a fused first tile."""
        for b in self.problem.buffers:
            round_trip = None
            if self.placement[b.tensor] == "spill":
                # one write and one read serve every consumer, as the scheduler times a spill (Problem.spill_cycles)
                # and charge_round_trips charges it
                round_trip = self.env.event()
                self.env.process(self.spill(b, round_trip))
            for c in b.consumers:
                if round_trip is not None:
                    event = round_trip
                elif self.placement[b.tensor] == "fused":
                    event = self.env.event()
                    self.env.process(self.first_tile(b, event))
                else:
                    event = self.done[b.producer]
                self.ready[(b.tensor, c)] = event

    def transfer(self, tensor: str, nbytes: int, direction: str) -> Process:
        """Move `nbytes` of `tensor` over the backing link, one transfer at a time at its full bandwidth."""
        with self.dram.request() as req:
            yield req
            begin = self.env.now
            yield self.env.timeout(math.ceil(nbytes / self.problem.spill_bytes_per_cycle))
            self.spans.append(Span(self.link, "transfer", f"{tensor} {direction}", begin, self.env.now, nbytes))

    def spill(self, buffer: Buffer, event: simpy.Event) -> Process:
        """Write a spilled tensor back after its producer ends and read it in again; then `event` fires."""
        yield self.done[buffer.producer]
        yield self.env.process(self.transfer(buffer.tensor, buffer.bytes, "write"))
        yield self.env.process(self.transfer(buffer.tensor, buffer.bytes, "read"))
        event.succeed()

    def first_tile(self, buffer: Buffer, event: simpy.Event) -> Process:
        """`event` fires when a fused producer has made its first tile."""
        yield self.started[buffer.producer]
        yield self.env.timeout(math.ceil(self.cycles[buffer.producer] / buffer.tiles))
        event.succeed()

    def finish(self, slot: Slot) -> Process:
        """End an einsum after its cycles, and not before its fused producers' last tile plus one of its own."""
        env = self.env
        yield env.process(self.ports.run(slot.einsum, self.cycles[slot.einsum], self.demands[slot.einsum]))
        for b in self.problem.inputs_of(slot.einsum):
            if self.placement[b.tensor] == "fused":
                yield self.done[b.producer]
                floor = self.ended[b.producer] + math.ceil(self.cycles[slot.einsum] / b.tiles)
                if env.now < floor:
                    yield env.timeout(floor - env.now)  # waiting for the producer's last tile
        self.ended[slot.einsum] = env.now
        self.spans.append(Span(slot.engine, "einsum", slot.einsum, self.began[slot.einsum], env.now))
        self.done[slot.einsum].succeed()

    def run_engine(self, slots: list[Slot]) -> Process:
        """One engine taking its einsums in order, each when planned, its inputs ready and the engine free."""
        env, previous = self.env, None
        for slot in slots:
            if env.now < slot.start:
                yield env.timeout(slot.start - env.now)
            for b in self.problem.inputs_of(slot.einsum):
                yield self.ready[(b.tensor, slot.einsum)]
            if previous is not None and self.fused_in.get(previous.einsum):
                yield self.done[previous.einsum]   # its end depends on its producer's tiles: wait for it
            elif previous is not None:
                # the pipeline tails of consecutive einsums overlap (Option.tail_cycles)
                free = self.began[previous.einsum] + self.cycles[previous.einsum] - min(previous.tail, slot.tail)
                if env.now < free:
                    yield env.timeout(free - env.now)
            self.began[slot.einsum] = env.now
            self.started[slot.einsum].succeed()
            env.process(self.finish(slot))
            previous = slot


def replay(schedule: Schedule) -> Trace:
    """Play `schedule` over time with shared-bandwidth transfers; the Trace holds every einsum and transfer span."""
    play = _Replay(schedule)
    play.wire_inputs()
    by_engine: dict[str, list] = {}  # engines take their einsums in the planned order
    for slot in sorted(schedule.slots, key=lambda s: (s.start, s.end)):
        by_engine.setdefault(slot.engine, []).append(slot)
    for slots in by_engine.values():
        play.env.process(play.run_engine(slots))
    play.env.run()
    resources = tuple(dict.fromkeys(s.engine for s in schedule.slots)) + (
        (play.link,) if any(p == "spill" for p in play.placement.values()) else ())
    policy = f"CP-SAT {schedule.status.lower()}" if schedule.status != "HEURISTIC" else "list schedule"
    makespan = max((s.end for s in play.spans), default=0.0)
    return Trace("scheduled", policy, tuple(play.spans), schedule.problem.clock_hz, resources, makespan,
                 planned_cycles=float(schedule.makespan_cycles), replayed_cycles=makespan,
                 buffers=schedule.buffers, capacity_bytes=schedule.problem.capacity_bytes,
                 buffer_level=schedule.problem.on_chip_level, spill_level=schedule.problem.spill_level,
                 notes=schedule.notes)
