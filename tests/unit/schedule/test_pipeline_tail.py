"""Pipeline tails (Option.tail_cycles): consecutive einsums on one engine overlap min(both tails) cycles, in the
CP-SAT model, the brute-force oracle and the replay alike."""
from __future__ import annotations

import pytest

from accel_sim.schedule.cpsat import brute_force_makespan, solve
from accel_sim.schedule.problem import Buffer, Option, Problem, Task, random_problem
from accel_sim.sim.replay import replay


def _problem(tail_a: int, tail_b: int, edge: bool = False) -> Problem:
    tasks = (Task("a", (Option("x", 10, 1.0, tail_cycles=tail_a),)),
             Task("b", (Option("x", 8, 1.0, tail_cycles=tail_b),)))
    buffers = (Buffer("T", 4, "a", ("b",)),) if edge else ()
    return Problem(tasks, buffers, (("a", "b"),) if edge else (), None, 4.0, None, 1e-12)


def test_back_to_back_pay_the_shared_tail_once() -> None:
    """Two independent einsums of 10 and 8 cycles with tails 6 and 5 on one engine: the second starts
    min(6, 5) = 5 cycles before the first ends, makespan 10 + 8 - 5 = 13 (hand-derived)."""
    assert solve(_problem(6, 5), time_limit_s=1.0).makespan_cycles == 13


def test_a_successor_without_tail_waits_for_the_end() -> None:
    """A tail hides nothing when the other einsum has none (its last PE frees only at the end): 10 + 8 = 18."""
    assert solve(_problem(6, 0), time_limit_s=1.0).makespan_cycles == 18


def test_a_dependent_consumer_waits_for_its_producer() -> None:
    """A consumer of the first einsum's output starts when that output is complete, tails or not: 18."""
    assert solve(_problem(6, 5, edge=True), time_limit_s=1.0).makespan_cycles == 18


@pytest.mark.parametrize("seed", range(12))
def test_makespan_with_tails_equals_brute_force(seed: int) -> None:
    """On random graphs of 2-5 einsums on two engines with random tails, CP-SAT's optimal makespan equals the
    enumeration of every engine choice, order and placement with the tail rule applied to each engine's
    predecessor (cpsat.brute_force_makespan, written independently of the model's pairwise constraints)."""
    problem = random_problem(300 + seed, 2 + seed % 4, tails=True)
    result = solve(problem, time_limit_s=5.0)
    assert result.status == "OPTIMAL"
    assert result.makespan_cycles == brute_force_makespan(problem)


@pytest.mark.parametrize("seed", range(6))
def test_replay_plays_the_tails_as_planned(seed: int) -> None:
    """Without spills to contend, the replay starts every einsum at its planned start with tails too, so the
    replayed makespan equals the plan's."""
    problem = random_problem(400 + seed, 6, tails=True)
    sched = solve(problem, time_limit_s=2.0)
    if any(b.placement == "spill" for b in sched.buffers):
        pytest.skip("spills may contend")
    trace = replay(sched)
    assert trace.makespan_cycles == sched.makespan_cycles


def test_a_fused_consumer_has_no_tail() -> None:
    """p (10 cycles, engine y) feeds a (8 cycles, tail 6, engine x) fused in 2 tiles; b (8 cycles, tail 6) also
    runs on x. a's end waits for p's last tile, so it is no pipeline a successor can overlap, nor can a start in
    b's tail: b 0-8, a 8-16 (a must end >= 10 + 8 / 2 = 14), makespan 16 (hand-derived; a tail on a would give
    14). The brute force and the replay agree."""
    tasks = (Task("p", (Option("y", 10, 1.0),)), Task("a", (Option("x", 8, 1.0, tail_cycles=6),)),
             Task("b", (Option("x", 8, 1.0, tail_cycles=6),)))
    problem = Problem(tasks, (Buffer("T", 4, "p", ("a",), tiles=2),), (("p", "a"),), None, 4.0, None, 1e-12,
                      required_fusions=(("p", "a"),))
    sched = solve(problem, time_limit_s=1.0)
    assert sched.makespan_cycles == 16
    assert brute_force_makespan(problem) == 16
    assert replay(sched).makespan_cycles == 16
