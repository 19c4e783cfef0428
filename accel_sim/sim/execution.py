"""The execution-model protocol, what every model returns, and the sequential model.

An execution model takes its spec (spec/execution.py), the arch, the workload and the objective, and returns an
`Execution`: where each einsum ran at what cost (`Placement`, which `evaluate` wraps into its `Result`) and the
`Trace` of what ran when. `evaluate` picks the model from a table keyed by the spec's type; nothing here imports
`evaluate`.

Per-einsum costs of the sequential model come from `place_best`, the one place that asks the engines for their
best cost per objective (each distinct layer shape once).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from accel_sim.engines.roofline import Bound, bound_on, roofline
from accel_sim.errors import InfeasibleError
from accel_sim.sim.trace import Span, Trace

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.execution import SequentialExecution
    from accel_sim.spec.workload import Workload

OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")
SpecT = TypeVar("SpecT", contravariant=True)


@dataclass(frozen=True)
class Placement:
    """One einsum placed on one engine: its cost and the roofline bound it must respect."""

    einsum: str
    engine: str
    op: str
    cost: Cost
    bound: Bound


@dataclass(frozen=True)
class Execution:
    """What an execution model returns: every einsum's placement (workload order) and the trace."""

    placements: tuple[Placement, ...]
    trace: Trace


class ExecutionModel(Protocol[SpecT]):
    """Runs a workload on an arch as its execution spec says."""

    def __call__(self, spec: SpecT, arch: Arch, workload: Workload, objective: str) -> Execution:
        """Place and time every einsum of `workload` on `arch` for `objective`."""
        ...


def score(cost: Cost, objective: str) -> float:
    """The figure `objective` minimizes: cycles, joules or their product."""
    if objective == "latency":
        return cost.total_cycles
    if objective == "energy":
        return cost.total_energy_j
    return cost.total_cycles * cost.total_energy_j


def best_options(arch: Arch, workload: Workload, objective: str) -> list[tuple[tuple[str, ...], list]]:
    """Per einsum: its tensor names and [(engine, best cost)] on every capable engine; a repeated layer shape
    is costed once and renamed (the one place that asks engines for their best cost)."""
    seen: dict[tuple, tuple[tuple[str, ...], list]] = {}
    out = []
    for einsum in workload.einsums:
        key, tensors = workload.shape_key(einsum)
        if key not in seen:
            capable = [e for e in arch.engines if e.peak_per_cycle(einsum) > 0]
            if not capable:
                roofline(einsum, workload, arch)  # raises the InfeasibleError that names the missing engine
                raise InfeasibleError(f"no engine can run einsum '{einsum.name}'")
            seen[key] = (tensors, [(e, e.best_cost(einsum, workload, arch, objective)) for e in capable])
        first, options = seen[key]
        if first != tensors:
            rename = dict(zip(first, tensors))
            options = [(e, c.with_tensor_names(rename)) for e, c in options]
        out.append((tensors, options))
    return out


def place_best(arch: Arch, workload: Workload, objective: str) -> tuple[Placement, ...]:
    """Every einsum on the engine whose best cost serves `objective` best, with its roofline bound."""
    placed = []
    bounds: dict[tuple, Bound] = {}
    for einsum, (_, options) in zip(workload.einsums, best_options(arch, workload, objective)):
        engine, cost = min(options, key=lambda pair: score(pair[1], objective))
        key = (workload.shape_key(einsum)[0], engine.name)
        if key not in bounds:
            bounds[key] = bound_on(einsum, workload, arch, engine.name)
        placed.append(Placement(einsum.name, engine.name, einsum.op, cost, replace(bounds[key], einsum=einsum.name)))
    return tuple(placed)


def back_to_back(arch: Arch, placements: tuple[Placement, ...], policy: str = "back to back") -> Trace:
    """The trace of `placements` run one after another, each on its engine."""
    spans, now = [], 0.0
    for p in placements:
        end = now + p.cost.total_cycles
        spans.append(Span(p.engine, "einsum", p.einsum, now, end))
        now = end
    resources = tuple(dict.fromkeys(p.engine for p in placements))
    return Trace("sequential", policy, tuple(spans), arch.clock_hz, resources, now, concurrent=False)


def run_sequential(spec: SequentialExecution, arch: Arch, workload: Workload, objective: str) -> Execution:
    """Einsums back to back, each on its best engine (`execution: sequential`)."""
    placements = place_best(arch, workload, objective)
    return Execution(placements, back_to_back(arch, placements))
