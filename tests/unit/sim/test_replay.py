"""simpy replay of a schedule: equal to the plan without contention, longer with shared-bandwidth contention."""
from __future__ import annotations

import pytest

from accel_sim.schedule.cpsat import solve
from accel_sim.schedule.problem import Buffer, Option, Problem, Task
from accel_sim.sim.replay import replay
from accel_sim.schedule.problem import random_problem


@pytest.mark.parametrize("seed", range(8))
def test_no_contention_replay_equals_schedule(seed: int) -> None:
    """With an unbounded on-chip buffer nothing spills, nothing contends: the replayed makespan equals the schedule's
    and every einsum starts exactly when planned."""
    problem = random_problem(seed, 6)
    s = solve(problem, time_limit_s=2.0)
    trace = replay(s)
    assert trace.makespan_cycles == s.makespan_cycles
    starts = {span.label: span.start for span in trace.spans if span.kind == "einsum"}
    assert starts == {slot.einsum: slot.start for slot in s.slots}


@pytest.mark.parametrize("seed", range(8))
def test_replay_never_below_schedule(seed: int) -> None:
    """With a tight buffer (spills share one backing link) the replay can only be delayed, never shortened."""
    problem = random_problem(50 + seed, 6, capacity=15)
    s = solve(problem, time_limit_s=2.0)
    assert replay(s).makespan_cycles >= s.makespan_cycles


def test_concurrent_spills_contend() -> None:
    """a (x, 5 cycles) and b (y, 5 cycles) each spill 100 B at 10 B/cycle for c (x, 5). The schedule assumes
    independent 20-cycle round trips (c at 25, makespan 30); the replay serializes the four 10-cycle transfers on
    the shared link from cycle 5, so c starts at 45 and the makespan is 50, flagged as over 10% off the plan."""
    problem = Problem((Task("a", (Option("x", 5, 1.0),)), Task("b", (Option("y", 5, 1.0),)),
                       Task("c", (Option("x", 5, 1.0),))),
                      (Buffer("A", 100, "a", ("c",), 0), Buffer("B", 100, "b", ("c",), 0)),
                      (("a", "c"), ("b", "c")), 60, 10.0, None, 0.0, "sram", "dram")
    s = solve(problem)
    assert s.makespan_cycles == 30
    trace = replay(s)
    assert trace.makespan_cycles == 50
    assert trace.summary()["replay_gap_flagged"] is True
    assert trace.busy_cycles("dram link") == 40


def test_fused_pair_overlaps_in_replay() -> None:
    """A fused pair (10 cycles each, 4 tiles, two engines) replays with the consumer starting at cycle 3 and ending
    at 13, as planned; both engines are busy 10 of 13 cycles."""
    problem = Problem((Task("a", (Option("x", 10, 1.0),)), Task("b", (Option("y", 10, 1.0),))),
                      (Buffer("T", 100, "a", ("b",), 4),), (("a", "b"),), None, 1.0, None, 0.0)
    trace = replay(solve(problem))
    assert trace.makespan_cycles == 13
    assert trace.utilization() == pytest.approx({"x": 10 / 13, "y": 10 / 13})
    assert list(trace.to_frame()["label"]) == ["a", "b"]


def test_a_spill_read_by_two_consumers_crosses_the_link_once_each_way() -> None:
    """a (x, 5 cycles) spills 100 B at 10 B/cycle, read by b (x) and c (y), 5 cycles each, with no room on chip
    (capacity 0). The schedule times one round trip (write 10 + read 10 cycles: b and c at 25, makespan 30) and the
    charges count one write and one read (sim/placement.py charge_round_trips); the replay moves the same two
    transfers, not one round trip per consumer, so it equals the plan: 20 busy cycles on the link."""
    problem = Problem((Task("a", (Option("x", 5, 1.0),)), Task("b", (Option("x", 5, 1.0),)),
                       Task("c", (Option("y", 5, 1.0),))),
                      (Buffer("A", 100, "a", ("b", "c"), 0),), (("a", "b"), ("a", "c")), 0, 10.0, None, 0.0,
                      "sram", "dram")
    s = solve(problem)
    assert s.makespan_cycles == 30
    trace = replay(s)
    assert trace.makespan_cycles == 30
    assert trace.busy_cycles("dram link") == 20
    assert sorted(span.label for span in trace.spans if span.kind == "transfer") == ["A read", "A write"]
