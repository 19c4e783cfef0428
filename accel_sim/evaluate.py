"""The one pipeline: (arch, workload) -> per-einsum costs -> Result. The CLI, notebooks and sweeps call it.

Every einsum is costed on each engine that can run it (the engine's own model: fold timing and loop-nest
traffic for a systolic array, lanes and compulsory traffic for a vector unit) and placed on the engine
that serves the objective best; einsums run one after another. Each einsum also keeps its roofline bound,
which no engine model may beat. The mapper, scheduler and replay of later stages slot in here without
changing `Result`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from accel_sim.energy.components import level_area_mm2
from accel_sim.engines.roofline import Bound, bound_on, roofline
from accel_sim.errors import InfeasibleError
from accel_sim.mapper import MapperCache, best_cost

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload

Objective = Literal["latency", "energy", "edp"]
OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")


@dataclass(frozen=True)
class EinsumResult:
    """One einsum placed on one engine: its cost and the roofline bound it must respect."""

    einsum: str
    engine: str
    op: str
    cost: Cost
    bound: Bound


@dataclass(frozen=True)
class Result:
    """Costs of one workload on one architecture."""

    arch: Arch
    workload: Workload
    einsums: tuple[EinsumResult, ...]
    objective: str = "edp"
    trace: Any = None  # set by an execution model of accel_sim/sim/ (arch.execution): makespan and timeline

    @property
    def cycles(self) -> float:
        """Total cycles (arch clock): the execution model's makespan, else einsums back to back."""
        if self.trace is not None:
            return self.trace.makespan_cycles
        return sum(r.cost.total_cycles for r in self.einsums)

    @property
    def latency_s(self) -> float:
        """Wall-clock time of one run."""
        return self.cycles / self.arch.clock_hz

    @property
    def energy_j(self) -> float:
        """Energy of one run: compute, registers, wires and every memory level."""
        return sum(r.cost.total_energy_j for r in self.einsums)

    @property
    def area_mm2(self) -> float:
        """Modelled silicon area: every engine's datapath and every on-chip memory level."""
        node = self.arch.technology_nm
        return (sum(e.area_mm2(node) for e in self.arch.engines)
                + sum(level_area_mm2(level, node) for level in self.arch.memory))

    def energy_by_component(self) -> dict[str, float]:
        """Joules per component (mac, pe_registers, array_wires, vector_lanes, each memory level)."""
        out: dict[str, float] = {}
        for r in self.einsums:
            for (component, _), joules in r.cost.energy_j.items():
                out[component] = out.get(component, 0.0) + joules
        return out

    def summary(self) -> dict[str, object]:
        """Headline numbers: cycles, latency, energy, area, throughput, utilization and the roofline gap."""
        latency = self.latency_s
        macs = self.workload.total_macs
        # Back to back, one engine works at a time; an execution model (trace) runs engines concurrently.
        peaks = [e.peak_macs_per_cycle() for e in self.arch.engines]
        pes = sum(peaks) if self.trace is not None else max(peaks)
        cycles = self.cycles
        bound_cycles = sum(r.bound.cycles for r in self.einsums)
        by_bound: dict[str, float] = {}
        for r in self.einsums:
            by_bound[r.bound.kind] = by_bound.get(r.bound.kind, 0.0) + r.cost.total_cycles
        return {
            "arch": self.arch.name,
            "workload": self.workload.name,
            "objective": self.objective,
            "cycles": cycles,
            "latency_s": latency,
            "energy_j": self.energy_j,
            "area_mm2": self.area_mm2,
            "published_area_mm2": self.arch.area_mm2,
            "throughput_per_s": self.workload.items_per_run / latency if latency > 0 else math.inf,
            "throughput_unit": f"{self.workload.item_unit}s/s",
            "edp_js": self.energy_j * latency,
            "einsums": len(self.einsums),
            "total_macs": macs,
            "mac_utilization": macs / (pes * cycles) if pes and cycles else 0.0,
            "compute_cycles": sum(r.cost.compute_cycles for r in self.einsums),
            "fill_drain_cycles": sum(r.cost.fill_drain_cycles for r in self.einsums),
            "stall_cycles": sum(r.cost.stall_cycles for r in self.einsums),
            "roofline_cycles": bound_cycles,
            "cycles_over_roofline": cycles / bound_cycles if bound_cycles else math.inf,
            "energy_by_component_j": self.energy_by_component(),
            "cycles_by_bound": by_bound,
            **(self.trace.summary() if self.trace is not None else {}),
        }

    def per_einsum(self) -> pd.DataFrame:
        """One row per einsum: engine, operator, MACs, cycle split, utilization, bytes per level, energy, bound."""
        import pandas as pd

        return pd.DataFrame(self.per_einsum_records)

    @cached_property
    def per_einsum_records(self) -> tuple[dict[str, Any], ...]:
        """The rows of `per_einsum()` as plain dicts (the CLI writes them without importing pandas)."""
        rows = []
        bits = {t.name: t.bits for t in self.workload.tensors}
        for r in self.einsums:
            c, b = r.cost, r.bound
            row: dict[str, Any] = {"einsum": r.einsum, "engine": r.engine, "op": r.op, "macs": c.macs,
                                   "ops": b.ops, "compute_cycles": c.compute_cycles,
                                   "fill_drain_cycles": c.fill_drain_cycles, "stall_cycles": c.stall_cycles,
                                   "cycles": c.total_cycles, "utilization": c.utilization}
            moved = c.bytes_by_level(bits)
            row.update({f"{level.name}_bytes": moved.get(level.name, 0.0) for level in self.arch.memory})
            row.update({"bytes": b.traffic_bytes, "latency_s": c.total_cycles / self.arch.clock_hz,
                        "energy_j": c.total_energy_j, "roofline_cycles": b.cycles, "bound": b.kind})
            rows.append(row)
        return tuple(rows)

    def plot_roofline(self) -> Figure:
        """Hierarchical roofline with each einsum's bound and achieved throughput."""
        from accel_sim.reports.plots import roofline_figure

        return roofline_figure(self)


def _score(cost: Cost, objective: str) -> float:
    if objective == "latency":
        return cost.total_cycles
    if objective == "energy":
        return cost.total_energy_j
    return cost.total_cycles * cost.total_energy_j


def evaluate(arch: Arch, workload: Workload, objective: Objective = "edp", cache: MapperCache | None = None) -> Result:
    """Cost every einsum of `workload` on the engines of `arch` that can run it, best per `objective`; `cache`
    keeps the mapper's results across calls (sweeps), None keeps none beyond this call."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if arch.execution != "sequential":
        # an execution model plays the workload over time: accel_sim/sim/<execution>.py, evaluate_<execution>
        import importlib

        module = importlib.import_module(f"accel_sim.sim.{arch.execution}")
        return getattr(module, f"evaluate_{arch.execution}")(arch, workload, objective)
    placed = []
    seen: dict[tuple, tuple[tuple[str, ...], str, Cost, Bound]] = {}  # repeated layers are costed once
    for einsum in workload.einsums:
        key, tensors = workload.shape_key(einsum)
        if key not in seen:
            capable = [e for e in arch.engines if e.peak_per_cycle(einsum) > 0]
            if not capable:
                roofline(einsum, workload, arch)  # raises the InfeasibleError that names the missing engine
                raise InfeasibleError(f"no engine can run einsum '{einsum.name}'")
            options = [(engine, best_cost(engine, einsum, workload, arch, objective, cache).cost) for engine in capable]
            engine, cost = min(options, key=lambda pair: _score(pair[1], objective))
            seen[key] = (tensors, engine.name, cost, bound_on(einsum, workload, arch, engine.name))
        first_tensors, engine_name, cost, bound = seen[key]
        if first_tensors != tensors:
            cost = cost.with_tensor_names(dict(zip(first_tensors, tensors)))
        placed.append(EinsumResult(einsum.name, engine_name, einsum.op, cost, replace(bound, einsum=einsum.name)))
    return Result(arch, workload, tuple(placed), objective)
