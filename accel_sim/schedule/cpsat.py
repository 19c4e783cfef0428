"""Graph scheduling as CP-SAT: solve the model of `schedule/model.py`, or list-schedule large graphs.

Solves are deterministic (one worker, fixed seed, a deterministic-time limit) and report the gap; an infeasible
model is explained by the constraint families at fault (`schedule/explain.py`), never a bare "INFEASIBLE".
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from accel_sim.errors import InfeasibleError
from accel_sim.schedule.explain import explain
from accel_sim.schedule.greedy import list_schedule
from accel_sim.schedule.model import (BufferSlot, ModelVars, Placement, Schedule, ScheduleObjective, Slot, add_hint,
                                      build_model, make_solver)
from accel_sim.schedule.problem import Problem, build_problem

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload

__all__ = ["BufferSlot", "Placement", "Schedule", "ScheduleObjective", "Slot", "brute_force_makespan", "schedule",
           "schedule_problem", "solve"]


_FIX = ("Fix: raise the on-chip level's capacity, let an outer memory level hold intermediates (inputs and outputs "
        "in its holds), or raise execution.time_limit_s (or max_cpsat_einsums) so that CP-SAT may search longer")


def solve(problem: Problem, objective: ScheduleObjective = "latency", *, weight: float = 0.5,
          time_limit_s: float = 5.0, seed: int = 0, addresses: bool = True) -> Schedule:
    """Schedule `problem` with CP-SAT; raises InfeasibleError naming the constraint families at fault."""
    model, v = build_model(problem, objective, weight, addresses)
    model.AddAssumptions(list(v.enabled.values()))
    guess: Schedule | None = None
    unguessed = ""
    try:
        guess = list_schedule(problem, objective)
        add_hint(model, problem, v, guess)
    except RuntimeError as exc:
        unguessed = f"; {exc}"  # no list schedule: the solver starts from scratch
    solver = make_solver(time_limit_s, seed)
    began = time.perf_counter()
    status = solver.Solve(model)
    wall = time.perf_counter() - began
    if status == cp_model.INFEASIBLE:
        raise InfeasibleError(explain(problem, solver, v, addresses))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) and guess is not None:
        return replace(guess, wall_s=wall, notes=guess.notes + (
            f"CP-SAT found no schedule in {time_limit_s:g} s of deterministic time; the list schedule is used",))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise InfeasibleError(f"schedule: CP-SAT found no schedule within the time limit ({time_limit_s:g} s of "
                              f"deterministic time, status {solver.StatusName(status)}){unguessed}. {_FIX}")
    return _extract(problem, solver, v, objective, status, wall)


def _extract(problem: Problem, solver: cp_model.CpSolver, v: ModelVars, objective: str, status: int,
             wall: float) -> Schedule:
    slots = []
    for task in problem.tasks:
        engine = next(o.engine for o in task.options if solver.BooleanValue(v.choose[(task.name, o.engine)]))
        resident = tuple(sorted(r.tensor for r in problem.residencies if r.engine == engine and task.name in r.tasks
                                and solver.BooleanValue(v.resident[(r.tensor, r.engine)])))
        slots.append(Slot(task.name, engine, solver.Value(v.start[task.name]), solver.Value(v.end[task.name]),
                          resident, solver.Value(v.tail[task.name])))
    in_registers = {r.tensor for r in problem.residencies if solver.BooleanValue(v.resident[(r.tensor, r.engine)])}
    buffers = []
    for b in problem.buffers:
        start, end = solver.Value(v.start[b.producer]), solver.Value(v.life_end[b.tensor])
        if solver.BooleanValue(v.spill[b.tensor]):
            buffers.append(BufferSlot(b.tensor, "spill", start, end, 0))
            continue
        if b.tensor in in_registers:
            buffers.append(BufferSlot(b.tensor, "registers", start, end, 0))
            continue
        mode: Placement = "fused" if solver.BooleanValue(v.fused[b.tensor]) else "on_chip"
        size = 2 * b.tile_bytes if mode == "fused" else b.bytes
        key = (b.tensor, mode)
        address = solver.Value(v.address[key]) if key in v.address else None
        buffers.append(BufferSlot(b.tensor, mode, start, end, size, address))
    chosen = {s.einsum: s for s in slots}
    energy = sum(o.variant(frozenset(chosen[t.name].resident)).energy_j for t in problem.tasks for o in t.options
                 if solver.BooleanValue(v.choose[(t.name, o.engine)]))
    energy += sum(b.bytes * problem.spill_j_per_byte for b in problem.buffers
                  if solver.BooleanValue(v.spill[b.tensor]))
    return Schedule(problem, tuple(slots), tuple(buffers), solver.Value(v.makespan), energy,
                    solver.StatusName(status), objective, solver.BestObjectiveBound(), solver.ObjectiveValue(), wall)


def schedule(arch: Arch, workload: Workload, objective: ScheduleObjective = "latency", *,
             time_limit_s: float = 5.0, seed: int = 0, addresses: bool = True,
             required_fusions: tuple[tuple[str, str], ...] = (), max_cpsat_einsums: int = 400) -> Schedule:
    """Build the problem of `workload` on `arch` and solve it; graphs above `max_cpsat_einsums` get the list schedule."""
    mapping_objective = {"latency": "latency", "energy": "energy"}.get(objective, "edp")
    problem = build_problem(arch, workload, mapping_objective, required_fusions)
    return schedule_problem(problem, objective, time_limit_s=time_limit_s, seed=seed, addresses=addresses,
                            max_cpsat_einsums=max_cpsat_einsums)


def schedule_problem(problem: Problem, objective: ScheduleObjective = "latency", *, time_limit_s: float = 5.0,
                     seed: int = 0, addresses: bool = True, max_cpsat_einsums: int = 400) -> Schedule:
    """Solve `problem` with CP-SAT, or list-schedule it when it has more than `max_cpsat_einsums` einsums."""
    if len(problem.tasks) > max_cpsat_einsums and not problem.required_fusions:
        try:
            guess = list_schedule(problem, objective)
        except RuntimeError as exc:
            raise InfeasibleError(f"schedule: {exc} ({len(problem.tasks)} einsums exceed "
                                  f"max_cpsat_einsums={max_cpsat_einsums}: CP-SAT not run). {_FIX}") from None
        return replace(guess, notes=guess.notes + (
            f"{len(problem.tasks)} einsums exceed max_cpsat_einsums={max_cpsat_einsums}: CP-SAT not run",))
    return solve(problem, objective, time_limit_s=time_limit_s, seed=seed, addresses=addresses)


def brute_force_makespan(problem: Problem) -> int:
    """Optimal makespan by enumeration (engine per task x order x placement), for tiny problems in tests."""
    best = math.inf
    names = [t.name for t in problem.tasks]
    placements = ("on_chip", "spill", "fused")
    for engines in itertools.product(*[[o for o in t.options] for t in problem.tasks]):
        choice = dict(zip(names, engines))
        for modes in itertools.product(*[[m for m in placements if m != "fused" or b.tiles]
                                         for b in problem.buffers]):
            mode = {b.tensor: m for b, m in zip(problem.buffers, modes)}
            if any(m == "fused" and choice[b.producer].engine == choice[b.consumers[0]].engine
                   for b, m in zip(problem.buffers, modes)):
                continue
            for order in itertools.permutations(names):
                best = min(best, _list_makespan(problem, choice, mode, order))
    return int(best)


def _list_makespan(problem: Problem, choice: dict, mode: dict, order: tuple[str, ...]) -> float:
    """Makespan of running tasks in `order` (per engine), each as early as its engine and inputs allow.

    Capacity is ignored: the brute-force comparison uses problems whose buffers all fit.
    """
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    last: dict[str, tuple[int, int]] = {}   # engine -> (end, tail) of the einsum it ran last
    position = {n: i for i, n in enumerate(order)}
    for name in order:
        o = choice[name]
        fused_in = any(mode[b.tensor] == "fused" for b in problem.inputs_of(name))
        tail = 0 if fused_in else o.tail_cycles  # a fused consumer's end is its producer's last tile: no tail
        previous_end, previous_tail = last.get(o.engine, (0, 0))
        s = previous_end - min(previous_tail, tail)  # the two pipeline tails overlap
        end_floor = 0
        for b in problem.inputs_of(name):
            if position[b.producer] > position[name]:
                return math.inf  # order violates a dependency
            p = b.producer
            if mode[b.tensor] == "on_chip":
                s = max(s, end[p])
            elif mode[b.tensor] == "spill":
                s = max(s, end[p] + problem.spill_cycles(b))
            else:
                s = max(s, start[p] + math.ceil(choice[p].cycles / b.tiles))
                end_floor = max(end_floor, end[p] + math.ceil(o.cycles / b.tiles))
        s = max(s, end_floor - o.cycles)  # the engine runs the einsum without a break, as in the model
        start[name] = s
        end[name] = s + o.cycles
        last[o.engine] = (end[name], tail)
    return max(end.values())
