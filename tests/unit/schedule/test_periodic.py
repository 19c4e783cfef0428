"""The periodic (software-pipelined) schedule of many independent instances: a hand pipeline, validity of the
periodic schedule extended to more instances than were unrolled, and bounds against the unrolled optimum."""
from __future__ import annotations

import math

import pytest

from accel_sim.schedule.cpsat import schedule_problem
from accel_sim.schedule.periodic import periodic_solve, replicate_problem
from accel_sim.schedule.problem import Buffer, Option, Problem, Task, random_problem
from accel_sim.sim.replay import replay


def two_stage() -> Problem:
    """a (10 cycles, engine x) -> T -> b (6 cycles, engine y), T kept on chip: a two-stage pipeline."""
    tasks = (Task("a", (Option("x", 10, 1.0),)), Task("b", (Option("y", 6, 1.0),)))
    return Problem(tasks, (Buffer("T", 8, "a", ("b",)),), (("a", "b"),), None, 4.0, None, 1e-12)


def test_two_stage_pipeline_by_hand() -> None:
    """By hand: one instance takes 10 + 6 = 16 cycles; the next a can start when x frees, every 10 cycles, so five
    instances take 16 + 4 x 10 = 56 (back to back: 80). The CP-SAT optimum of the five unrolled copies agrees."""
    plan = periodic_solve(two_stage(), 5, time_limit_s=2.0)
    assert (plan.instance_cycles, plan.period_cycles) == (16, 10)
    assert plan.makespan_cycles(5) == 56
    unrolled = schedule_problem(replicate_problem(two_stage(), 5), "latency", time_limit_s=2.0, addresses=False)
    assert unrolled.status == "OPTIMAL" and unrolled.makespan_cycles == 56


def test_replay_plays_the_unrolled_copies_as_planned() -> None:
    """Without spills nothing contends: the replay of the unrolled copies ends exactly when the plan does."""
    plan = periodic_solve(two_stage(), 100, copies=3, time_limit_s=2.0)
    assert replay(plan.schedule).makespan_cycles == plan.schedule.makespan_cycles == 16 + 2 * 10


def _expand(plan, copies: int) -> tuple[list[tuple], list[tuple]]:
    """Copy 0's slots and on-chip buffers repeated `copies` times, copy j shifted by j x period."""
    slots = [s for s in plan.schedule.slots if s.einsum.endswith("#0")]
    buffers = [b for b in plan.schedule.buffers if b.tensor.endswith("#0")]
    shift = plan.period_cycles
    out_slots = [(f"{s.einsum[:-2]}#{j}", s.engine, s.start + j * shift, s.end + j * shift, s.tail)
                 for j in range(copies) for s in slots]
    out_buffers = [(f"{b.tensor[:-2]}#{j}", b.placement, b.start + j * shift, b.end + j * shift, b.bytes)
                   for j in range(copies) for b in buffers]
    return out_slots, out_buffers


def _violations(problem: Problem, slots: list[tuple], buffers: list[tuple]) -> list[str]:
    """What an expanded schedule breaks, checked from the rules themselves (not the solver's model): engine
    exclusivity with pipeline tails (b after a: start_b >= end_a - min(tail_a, tail_b)), precedence by placement,
    and the buffer's capacity."""
    bad = []
    by_engine: dict[str, list[tuple]] = {}
    for s in slots:
        by_engine.setdefault(s[1], []).append(s)
    for members in by_engine.values():
        members.sort(key=lambda s: (s[2], s[3]))
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if b[2] < a[3] - min(a[4], b[4]):
                    bad.append(f"{a[0]} and {b[0]} overlap on {a[1]}")
    at = {s[0]: s for s in slots}
    placement = {b[0]: b[1] for b in buffers}
    copies = len({s[0].rsplit("#", 1)[1] for s in slots})
    for j in range(copies):
        for buf in problem.buffers:
            p, mode = at[f"{buf.producer}#{j}"], placement[f"{buf.tensor}#{j}"]
            for consumer in buf.consumers:
                c = at[f"{consumer}#{j}"]
                if mode in ("on_chip", "registers") and c[2] < p[3]:
                    bad.append(f"{c[0]} starts before {p[0]} ends")
                if mode == "spill" and c[2] < p[3] + problem.spill_cycles(buf):
                    bad.append(f"{c[0]} starts before {buf.tensor}'s round trip")
                if mode == "fused" and (c[2] < p[2] + math.ceil((p[3] - p[2]) / buf.tiles)
                                        or c[3] < p[3] + math.ceil((c[3] - c[2]) / buf.tiles)):
                    bad.append(f"{c[0]} does not trail {p[0]} by a tile")
    if problem.capacity_bytes is not None:
        for t in sorted({b[2] for b in buffers}):
            live = sum(b[4] for b in buffers if b[1] in ("on_chip", "fused") and b[2] <= t < b[3])
            if live > problem.capacity_bytes:
                bad.append(f"{live} bytes live at {t} exceed {problem.capacity_bytes}")
    return bad


@pytest.mark.parametrize("seed", range(8))
def test_periodic_schedule_stays_valid_beyond_the_unrolled_copies(seed: int) -> None:
    """Random graphs on two engines with tails, fusible tensors and a tight buffer: copy 0 repeated every period
    for 6 instances (twice the 3 unrolled) breaks no rule; no 3 instances finish before the CP-SAT optimum of 3
    unrolled copies (a periodic schedule is one of theirs) and 6 never take longer than back to back."""
    problem = random_problem(seed, 5, capacity=60, tails=True)
    plan = periodic_solve(problem, 6, copies=3, time_limit_s=1.0)
    slots, buffers = _expand(plan, 6)
    assert _violations(problem, slots, buffers) == []
    assert max(s[3] for s in slots) == plan.makespan_cycles(6)
    single = schedule_problem(problem, "latency", time_limit_s=1.0, addresses=False)
    unrolled = schedule_problem(replicate_problem(problem, 3), "latency", time_limit_s=2.0, addresses=False)
    assert unrolled.status == "OPTIMAL" and unrolled.makespan_cycles <= plan.makespan_cycles(3)
    assert plan.makespan_cycles(6) <= 6 * single.makespan_cycles


@pytest.mark.parametrize("seed", (1, 2, 6))
def test_more_copies_never_lengthen_the_schedule(seed: int) -> None:
    """A K-copy periodic schedule is also a (K + 1)-copy one, so the optimum for 12 instances cannot grow with K
    (seeds whose two-copy optimum has more instances wanting to overlap)."""
    problem = random_problem(seed, 5, capacity=60, tails=True)
    spans = [periodic_solve(problem, 12, copies=k, time_limit_s=1.0) for k in (1, 2, 3)]
    assert all(p.schedule.status == "OPTIMAL" for p in spans)
    assert spans[0].makespan_cycles(12) >= spans[1].makespan_cycles(12) >= spans[2].makespan_cycles(12)
    assert spans[0].period_cycles >= spans[0].instance_cycles   # one copy: back to back


def test_checker_catches_a_period_too_short() -> None:
    """The validity checker is not vacuous: the two-stage plan issued every 9 cycles puts two a's on x at once."""
    plan = periodic_solve(two_stage(), 5, time_limit_s=2.0)
    from dataclasses import replace

    slots, buffers = _expand(replace(plan, period_cycles=9), 3)
    assert any("overlap on x" in v for v in _violations(two_stage(), slots, buffers))


def test_replicate_problem_renames_everything() -> None:
    """Two copies: tasks, buffers (producer and consumers) and edges per copy, nothing shared."""
    copies = replicate_problem(two_stage(), 2)
    assert [t.name for t in copies.tasks] == ["a#0", "b#0", "a#1", "b#1"]
    assert [(b.tensor, b.producer, b.consumers) for b in copies.buffers] == [("T#0", "a#0", ("b#0",)),
                                                                           ("T#1", "a#1", ("b#1",))]
    assert copies.edges == (("a#0", "b#0"), ("a#1", "b#1"))


def test_bad_counts_are_refused() -> None:
    """Zero instances or copies is a caller's error, named."""
    with pytest.raises(ValueError, match="instances and copies must be >= 1"):
        periodic_solve(two_stage(), 0)
