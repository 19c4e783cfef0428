"""CP-SAT graph scheduling: optimality against brute force, buffer allocation, determinism, gap."""
from __future__ import annotations

import pytest

from accel_sim.schedule.cpsat import solve
from accel_sim.schedule.problem import Buffer, Option, Problem, Task
from accel_sim.schedule.cpsat import brute_force_makespan
from accel_sim.schedule.problem import random_problem


@pytest.mark.parametrize("seed", range(12))
def test_makespan_equals_brute_force(seed: int) -> None:
    """On random graphs of 2-5 einsums and 2 engines (buffers all fit), the CP-SAT makespan equals the optimum
    found by enumerating every engine choice, order and placement (cpsat.brute_force_makespan)."""
    problem = random_problem(seed, 2 + seed % 4)
    assert solve(problem, time_limit_s=5.0).makespan_cycles == brute_force_makespan(problem)


def test_six_einsums_equal_brute_force() -> None:
    """Six einsums on two engines (fixed engines, two forks and a join): CP-SAT equals brute force."""
    tasks = tuple(Task(f"t{i}", (Option("x" if i % 2 else "y", c, 1.0),)) for i, c in enumerate((5, 7, 3, 9, 4, 6)))
    buffers = (Buffer("A", 10, "t0", ("t1",), 0), Buffer("B", 10, "t0", ("t2",), 4),
               Buffer("C", 10, "t1", ("t3",), 0), Buffer("D", 10, "t2", ("t4",), 0),
               Buffer("E", 10, "t3", ("t5",), 0), Buffer("F", 10, "t4", ("t5",), 2))
    problem = Problem(tasks, buffers, tuple((b.producer, b.consumers[0]) for b in buffers), None, 4.0, None, 0.0)
    assert solve(problem).makespan_cycles == brute_force_makespan(problem)


def test_hand_schedule_fuses_across_engines() -> None:
    """a (10 cycles on x) feeds b (10 cycles on y) through a tensor of 4 tiles: fused, b starts one tile (3 cycles,
    ceil(10/4)) after a and ends one tile after a ends, so the makespan is 10 + 3 = 13 instead of 20 in sequence."""
    problem = Problem((Task("a", (Option("x", 10, 1.0),)), Task("b", (Option("y", 10, 1.0),))),
                      (Buffer("T", 100, "a", ("b",), 4),), (("a", "b"),), None, 1.0, None, 0.0)
    s = solve(problem)
    assert s.makespan_cycles == 13
    assert s.buffers[0].placement == "fused"
    assert s.buffers[0].bytes == 2 * 25


def test_spill_adds_round_trip() -> None:
    """A 100-byte tensor with a 60-byte on-chip buffer and no fusion spills: the consumer waits 2 x 100 B / 10 B per
    cycle = 20 cycles after the producer, so the makespan is 5 + 20 + 5 = 30."""
    problem = Problem((Task("a", (Option("x", 5, 1.0),)), Task("b", (Option("x", 5, 1.0),))),
                      (Buffer("T", 100, "a", ("b",), 0),), (("a", "b"),), 60, 10.0, None, 0.0)
    s = solve(problem)
    assert s.buffers[0].placement == "spill"
    assert s.makespan_cycles == 30


@pytest.mark.parametrize("seed", range(10))
def test_buffers_fit_and_never_share_addresses(seed: int) -> None:
    """Property: with a tight on-chip buffer, live on-chip bytes never exceed capacity and no two tensors live at
    the same time overlap in address (checked pairwise on the solution)."""
    problem = random_problem(100 + seed, 3 + seed % 4, capacity=20 + 4 * seed)
    s = solve(problem, time_limit_s=2.0)
    assert s.peak_on_chip_bytes() <= problem.capacity_bytes
    live = [b for b in s.buffers if b.bytes]
    for b in live:
        assert 0 <= b.address and b.address + b.bytes <= problem.capacity_bytes
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            if a.start < b.end and b.start < a.end:
                assert a.address + a.bytes <= b.address or b.address + b.bytes <= a.address


def test_deterministic() -> None:
    """Two solves of the same problem (one worker, fixed seed, deterministic-time limit) give identical schedules."""
    problem = random_problem(7, 6, capacity=50)
    assert solve(problem, time_limit_s=1.0).slots == solve(problem, time_limit_s=1.0).slots


def test_gap_zero_when_optimal() -> None:
    """A proven-optimal solve reports status OPTIMAL and a zero optimality gap (bound equals objective)."""
    s = solve(random_problem(3, 3))
    assert s.status == "OPTIMAL" and s.gap == 0.0


def test_energy_objective_prefers_cheaper_engine() -> None:
    """With the energy objective the einsum goes to the engine costing 1 J (slower, 20 cycles) rather than 3 J."""
    problem = Problem((Task("a", (Option("x", 10, 3.0), Option("y", 20, 1.0))),), (), (), None, 1.0, None, 0.0)
    assert solve(problem, "energy").slots[0].engine == "y"
    assert solve(problem, "latency").slots[0].engine == "x"
