"""Steady-state schedules of many independent instances of one workload (software pipelining).

Attention's heads, a batch's items, a cascade's query blocks: the same graph runs N times with nothing shared but
read-only inputs. Run back to back, every instance pays the pipeline's fill and drain between its engines (the
first einsum's consumers wait for it; the last one's leaves the other engines idle). A real accelerator issues
instance i + 1 while instance i drains, so N instances take L + (N - 1) * II cycles, L one instance's latency and
II the initiation interval (modulo scheduling: B. R. Rau, "Iterative modulo scheduling", MICRO 1994).

`periodic_schedule` finds both with the CP-SAT model of schedule/cpsat.py, unchanged, on K unrolled copies of the
scheduling problem (`replicate_problem`): every copy makes copy 0's choices (engine, registers, placement of each
tensor) and starts each einsum j * II after copy 0 does. Copy 0 must finish by K * II, so copies K or more apart
never meet in time; copies closer than that are all in the model, and every constraint family is pairwise in
time (no-overlap, tails, precedence) or is checked where all copies that can be live at once are present (the
buffer's capacity over [(K - 1) * II, K * II)): the periodic schedule is valid for any N. The objective is
L + (N - 1) * II itself. The result is optimal among periodic schedules with at most K instances in flight
(L <= K * II); more copies can only shorten it (a K-copy solution is a (K + 1)-copy one), at a larger model.
Buffer capacity is enforced; addresses are not allocated.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from accel_sim.errors import InfeasibleError
from accel_sim.schedule.cpsat import _extract, solve
from accel_sim.schedule.model import ModelVars, Schedule, build_model, make_solver
from accel_sim.schedule.problem import (
    Buffer,
    base_name,
    copy_name,
    Option,
    Problem,
    Residency,
    Task,
    build_problem,
)

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload


@dataclass(frozen=True)
class PeriodicSchedule:
    """K unrolled copies of a workload issued every `period_cycles`; one instance takes `instance_cycles`."""

    schedule: Schedule          # the K copies, einsums and tensors named 'name#j'
    copies: int
    period_cycles: int
    instance_cycles: int        # makespan of copy 0

    def makespan_cycles(self, instances: int) -> int:
        """Cycles for `instances` instances issued every period: L + (N - 1) * II."""
        return self.instance_cycles + (instances - 1) * self.period_cycles


def _renamed(option: Option, names: dict[str, str]) -> Option:
    """`option` with the tensors its variants keep resident and its costs' records renamed."""
    variants = tuple(replace(x, resident=frozenset(names[t] for t in x.resident),
                             cost=x.cost.with_tensor_names(names) if x.cost is not None else None)
                     for x in option.variants)
    return replace(option, cost=option.cost.with_tensor_names(names) if option.cost is not None else None,
                   variants=variants)


def replicate_problem(problem: Problem, copies: int) -> Problem:
    """`copies` independent copies of `problem`: every task, tensor and residency once per copy, named 'name#j'."""
    tasks: list[Task] = []
    buffers: list[Buffer] = []
    residencies: list[Residency] = []
    edges, fusions, on_chip = [], [], set()
    tensors = {b.tensor for b in problem.buffers} | {r.tensor for r in problem.residencies} | set(
        problem.on_chip_tensors) | {t for task in problem.tasks for o in task.options for x in o.variants
                                    for t in x.resident}
    for j in range(copies):
        names = {n: copy_name(n, j) for n in tensors}

        tasks += [Task(copy_name(t.name, j), tuple(_renamed(o, names) for o in t.options)) for t in problem.tasks]
        buffers += [replace(b, tensor=names[b.tensor], producer=copy_name(b.producer, j),
                            consumers=tuple(copy_name(c, j) for c in b.consumers)) for b in problem.buffers]
        residencies += [replace(r, tensor=names[r.tensor], tasks=tuple(copy_name(t, j) for t in r.tasks))
                        for r in problem.residencies]
        edges += [(copy_name(a, j), copy_name(b, j)) for a, b in problem.edges]
        fusions += [(copy_name(a, j), copy_name(b, j)) for a, b in problem.required_fusions]
        on_chip |= {names[t] for t in problem.on_chip_tensors}
    return replace(problem, tasks=tuple(tasks), buffers=tuple(buffers), edges=tuple(edges),
                   required_fusions=tuple(fusions), on_chip_tensors=frozenset(on_chip),
                   residencies=tuple(residencies))


def periodic_schedule(arch: Arch, workload: Workload, instances: int, *, copies: int = 2,
                      time_limit_s: float = 5.0, seed: int = 0) -> PeriodicSchedule:
    """The latency-optimal periodic schedule of `instances` instances of `workload` on `arch` (module docstring)."""
    return periodic_solve(build_problem(arch, workload, "latency"), instances, copies=copies,
                          time_limit_s=time_limit_s, seed=seed)


def periodic_solve(problem: Problem, instances: int, *, copies: int = 2, time_limit_s: float = 5.0,
                   seed: int = 0) -> PeriodicSchedule:
    """Minimize L + (instances - 1) * II over periodic schedules of `copies` unrolled copies of `problem`: one
    instance alone first (half the deterministic time limit; repeated back to back it is the hint), then the
    copies (the whole limit)."""
    if instances < 1 or copies < 1:
        raise ValueError(f"periodic schedule: instances and copies must be >= 1, got {instances} and {copies}")
    copies = min(copies, instances)
    single = solve(problem, "latency", time_limit_s=time_limit_s / 2, seed=seed, addresses=False)
    unrolled = replicate_problem(problem, copies)
    model, v = build_model(unrolled, "latency", addresses=False)
    model.AddAssumptions(list(v.enabled.values()))
    period = model.NewIntVar(1, v.horizon, "period")
    instance = model.NewIntVar(0, v.horizon, "instance")
    model.AddMaxEquality(instance, [v.end[copy_name(t.name, 0)] for t in problem.tasks])
    model.Add(copies * period >= instance)   # copies K or more apart never meet (module docstring)
    for j in range(1, copies):
        for t in problem.tasks:
            a, b = copy_name(t.name, 0), copy_name(t.name, j)
            model.Add(v.start[b] == v.start[a] + j * period)
            for o in t.options:
                model.Add(v.choose[(b, o.engine)] == v.choose[(a, o.engine)])
        for buf in problem.buffers:
            a, b = copy_name(buf.tensor, 0), copy_name(buf.tensor, j)
            for lits in (v.on, v.spill, v.fused):
                model.Add(lits[b] == lits[a])
        for r in problem.residencies:
            model.Add(v.resident[(copy_name(r.tensor, j), r.engine)] == v.resident[(copy_name(r.tensor, 0),
                                                                                    r.engine)])
    _add_engine_load(model, problem, v, period)
    spills = [v.spill[b.tensor] for b in unrolled.buffers]
    model.Minimize((instance + (instances - 1) * period) * (len(spills) + 1) + sum(spills))
    _hint_back_to_back(model, unrolled, v, single, copies)
    model.AddHint(period, single.makespan_cycles)
    solver = make_solver(time_limit_s, seed)
    status = solver.Solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise InfeasibleError(f"periodic schedule: CP-SAT found no periodic schedule of {copies} copies within the "
                              f"time limit (status {solver.StatusName(status)}); raise the time limit")
    sched = _extract(unrolled, solver, v, "latency", status, solver.WallTime())
    sched = replace(sched, notes=sched.notes + (
        f"{copies} copies issued every {solver.Value(period)} cycles (periodic schedule)",))
    return PeriodicSchedule(sched, copies, solver.Value(period), solver.Value(instance))


def _add_engine_load(model: cp_model.CpModel, problem: Problem, v: ModelVars, period: cp_model.IntVar) -> None:
    """Redundant (implied by the copies' no-overlap) but it lets the solver bound the period at once: per period an
    engine issues each of its einsums for at least the einsum's cycles less its pipeline tail."""
    load: dict[str, list] = {}
    for t in problem.tasks:
        for o in t.options:
            issue = min(x.cycles - x.tail_cycles for x in (o.variant(frozenset()), *o.variants))
            load.setdefault(o.engine, []).append(issue * v.choose[(copy_name(t.name, 0), o.engine)])
    for terms in load.values():
        model.Add(sum(terms) <= period)


def _hint_back_to_back(model: cp_model.CpModel, unrolled: Problem, v: ModelVars, single: Schedule,
                       copies: int) -> None:
    """Hint the copies as `single` repeated back to back: feasible, since no two copies meet in time."""
    held = {(t, s.engine) for s in single.slots for t in s.resident}
    placement = {b.tensor: b.placement for b in single.buffers}
    for j in range(copies):
        shift = j * single.makespan_cycles
        for slot in single.slots:
            name = copy_name(slot.einsum, j)
            model.AddHint(v.start[name], slot.start + shift)
            for o in unrolled.task(name).options:
                model.AddHint(v.choose[(name, o.engine)], o.engine == slot.engine)
        for tensor, where in placement.items():
            name = copy_name(tensor, j)
            model.AddHint(v.on[name], where in ("on_chip", "registers"))
            model.AddHint(v.spill[name], where == "spill")
            model.AddHint(v.fused[name], where == "fused")
    for (tensor, engine), lit in v.resident.items():
        model.AddHint(lit, (base_name(tensor), engine) in held)
