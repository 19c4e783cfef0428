"""The scheduled execution model: einsums placed by the graph scheduler and played by the replay.

`evaluate` hands an architecture here when its config says `execution: scheduled` (its engines run at the
same time, so einsums on different engines may overlap through fusion) and intermediates compete for the
on-chip buffer. Per-einsum costs are the engines'
own (the same mapper calls as sequential evaluation, once per distinct layer shape); the latency is the
replayed makespan. Graphs above `RUN_CPSAT_EINSUMS` einsums get the list schedule, which on a chain of
layers (an LLM decode step) is already the sequential order with fused elementwise tails.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from accel_sim.engines.roofline import bound_on
from accel_sim.schedule.cpsat import schedule_problem
from accel_sim.schedule.onchip import on_chip_bound
from accel_sim.schedule.problem import build_problem
from accel_sim.sim.replay import replay

if TYPE_CHECKING:
    from accel_sim.evaluate import Result
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload

RUN_TIME_LIMIT_S = 0.5      # deterministic seconds of CP-SAT per run: keeps `accel-sim run` interactive
RUN_CPSAT_EINSUMS = 150     # larger graphs are list-scheduled (CP-SAT would not close the gap in the limit)


def evaluate_scheduled(arch: Arch, workload: Workload, objective: str = "edp",
                       time_limit_s: float = RUN_TIME_LIMIT_S) -> Result:
    """Cost, schedule and replay `workload` on `arch`; the Result's trace is the replay."""
    from accel_sim.evaluate import EinsumResult, Result

    problem = build_problem(arch, workload, objective)
    sched = schedule_problem(problem, "energy" if objective == "energy" else "latency",
                             time_limit_s=time_limit_s, addresses=False, max_cpsat_einsums=RUN_CPSAT_EINSUMS)
    trace = replay(sched)
    bounds: dict[tuple, object] = {}
    engines = {e.name: e for e in arch.engines}
    placed = []
    for einsum, slot in zip(workload.einsums, sched.slots):
        option = next(o for o in problem.task(einsum.name).options if o.engine == slot.engine)
        key = (workload.shape_key(einsum)[0], slot.engine)
        if key not in bounds:
            bounds[key] = bound_on(einsum, workload, arch, slot.engine)
        # the option's cost leaves the backing traffic of on-chip intermediates out: so does its bound
        bound = on_chip_bound(bounds[key], einsum, workload, arch, engines[slot.engine],
                              problem.on_chip_tensors)
        cost = option.variant(frozenset(slot.resident)).cost   # the tensors it kept in registers moved nowhere
        placed.append(EinsumResult(einsum.name, slot.engine, einsum.op, cost,
                                   replace(bound, einsum=einsum.name)))
    return Result(arch, workload, tuple(placed), objective, trace)
