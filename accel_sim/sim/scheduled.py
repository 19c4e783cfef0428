"""The scheduled and pipelined execution models: einsums placed by the graph scheduler and played by the replay.

`execution: scheduled`: the arch's engines run at the same time, so einsums on different engines may overlap
through fusion, and intermediates compete for the on-chip buffer. Per-einsum costs are the engines' own (the
same calls as sequential evaluation, once per distinct layer shape: schedule/problem.py); the latency is the
replayed makespan. Graphs above `max_cpsat_einsums` einsums get the list schedule, which on a chain of layers (an
LLM decode step) is already the sequential order with fused elementwise tails.

`execution: pipelined`: `instances` independent copies of the workload (heads, batch items) issued every II
cycles by the periodic schedule (schedule/periodic.py); N instances take L + (N - 1) x II cycles. The placements
are one instance's (copy 0 of the unrolled schedule); the trace replays the unrolled copies.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from accel_sim.engines.roofline import Bound, bound_on
from accel_sim.schedule.onchip import on_chip_bound
from accel_sim.schedule.problem import base_name, build_problem, copy_name
from accel_sim.sim.execution import Execution, Placement
from accel_sim.sim.placement import charge_round_trips, reserving_parameters
from accel_sim.sim.replay import replay

if TYPE_CHECKING:
    from accel_sim.mapper import MapperCache
    from accel_sim.schedule.model import Schedule
    from accel_sim.schedule.problem import Problem
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.execution import PipelinedExecution, ScheduledExecution
    from accel_sim.spec.workload import Workload


@dataclass(frozen=True)
class PipelineDetail:
    """The periodic schedule behind a pipelined trace: one instance's latency L and the period II."""

    instance_cycles: int
    period_cycles: int
    copies: int
    rank: str

    def summary(self, makespan_s: float) -> dict[str, object]:
        """L, II and the instances in flight."""
        return {"instance_cycles": self.instance_cycles, "period_cycles": self.period_cycles,
                "copies_in_flight": self.copies, "instance_rank": self.rank}


def placements(arch: Arch, workload: Workload, problem: Problem, schedule: Schedule,
               copy: int | None = None) -> tuple[Placement, ...]:
    """Each einsum of `workload` (`problem` is its scheduling problem) on the engine the schedule chose, its cost
    with the tensors it kept in registers and the traffic and energy of the intermediates it spilled, and its bound
    without the backing traffic of on-chip intermediates;
    `copy`: read unrolled copy `copy` of a periodic schedule (tasks and tensors named 'name#copy')."""
    bounds: dict[tuple, Bound] = {}
    engines = {e.name: e for e in arch.engines}
    placed = []
    for einsum in workload.einsums:
        slot = schedule.slot(einsum.name if copy is None else copy_name(einsum.name, copy))
        resident = slot.resident if copy is None else frozenset(base_name(t) for t in slot.resident)
        option = next(o for o in problem.task(einsum.name).options if o.engine == slot.engine)
        key = (arch.shape_key(workload, einsum)[0], slot.engine)
        if key not in bounds:
            bounds[key] = bound_on(einsum, workload, arch, slot.engine)
        # the option's cost leaves the backing traffic of on-chip intermediates out: so does its bound
        bound = on_chip_bound(bounds[key], einsum, workload, arch, engines[slot.engine], problem.on_chip_tensors)
        cost = option.variant(frozenset(resident)).cost   # the tensors it kept in registers moved nowhere
        if resident:  # ... and so neither does its bound: a register-resident chain is bound by compute alone
            bound = on_chip_bound(bound, einsum, workload, arch, engines[slot.engine], frozenset(resident),
                                  frozenset(lv.name for lv in arch.memory))
        placed.append(Placement(einsum.name, slot.engine, einsum.op, cost, replace(bound, einsum=einsum.name)))
    spilled = [base_name(b.tensor) for b in schedule.buffers if b.placement == "spill"
               and (copy is None or b.tensor == copy_name(base_name(b.tensor), copy))]
    return charge_round_trips(arch, workload, tuple(placed), spilled, problem.on_chip_level, problem.spill_level)


def run_scheduled(spec: ScheduledExecution, arch: Arch, workload: Workload, objective: str,
                  cache: MapperCache | None = None) -> Execution:
    """Cost, schedule and replay `workload` on `arch`; the trace is the replay."""
    from accel_sim.schedule.cpsat import schedule_problem  # CP-SAT: ortools is heavy, loaded on first use

    problem = build_problem(reserving_parameters(arch, workload), workload, objective, cache=cache)
    sched = schedule_problem(problem, "energy" if objective == "energy" else "latency",
                             time_limit_s=spec.time_limit_s, addresses=False,
                             max_cpsat_einsums=spec.max_cpsat_einsums)
    if objective == "edp":  # CP-SAT minimizes a sum, not a product: say which figure "optimal" is about
        sched = replace(sched, notes=(*sched.notes, "the schedule minimizes the makespan (fewest spills among equal "
                                      "ones); the per-einsum mappings minimize EDP"))
    trace = replay(sched)
    return Execution(placements(arch, workload, problem, sched), trace)


def run_pipelined(spec: PipelinedExecution, arch: Arch, workload: Workload, objective: str,
                  cache: MapperCache | None = None) -> Execution:
    """`spec.instances` copies of `workload` software-pipelined; the trace replays the unrolled copies."""
    from accel_sim.schedule.periodic import periodic_solve  # CP-SAT: ortools is heavy, loaded on first use

    problem = build_problem(reserving_parameters(arch, workload), workload, "latency", cache=cache)
    plan = periodic_solve(problem, spec.instances, copies=spec.copies, time_limit_s=spec.time_limit_s,
                          seed=spec.seed)
    played = replay(plan.schedule)
    trace = replace(played, execution="pipelined", makespan_cycles=float(plan.makespan_cycles(spec.instances)),
                    instances=spec.instances,
                    detail=PipelineDetail(plan.instance_cycles, plan.period_cycles, plan.copies, spec.rank))
    return Execution(placements(arch, workload, problem, plan.schedule, copy=0), trace)
