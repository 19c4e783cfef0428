"""The one pipeline: (arch, workload) -> per-einsum costs -> Result. The CLI, notebooks and sweeps call it.

Today every einsum is costed by its roofline bound on the best engine that can run it, einsums run one
after another, and energy is the compulsory data-movement energy of the memory levels. The mapper,
engine models, scheduler and replay of later stages slot in here without changing `Result`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from accel_sim.engines.roofline import Bound, roofline

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload

Objective = Literal["latency", "energy", "edp"]
OBJECTIVES: tuple[str, ...] = ("latency", "energy", "edp")


@dataclass(frozen=True)
class Result:
    """Costs of one workload on one architecture."""

    arch: Arch
    workload: Workload
    bounds: tuple[Bound, ...]
    objective: str = "edp"

    @property
    def cycles(self) -> float:
        """Total cycles (arch clock), einsums back to back."""
        return sum(b.cycles for b in self.bounds)

    @property
    def latency_s(self) -> float:
        """Wall-clock time of one run."""
        return self.cycles / self.arch.clock_hz

    @property
    def energy_j(self) -> float:
        """Energy of one run (data movement through every memory level)."""
        return sum(sum(b.level_energy_j.values()) for b in self.bounds)

    def summary(self) -> dict[str, object]:
        """Headline numbers: cycles, latency, energy, area, throughput, and what bounds the run."""
        latency = self.latency_s
        ops = sum(b.ops for b in self.bounds)
        kinds: dict[str, float] = {}
        for b in self.bounds:
            kinds[b.kind] = kinds.get(b.kind, 0.0) + b.cycles
        return {
            "arch": self.arch.name,
            "workload": self.workload.name,
            "model": "roofline",
            "cycles": self.cycles,
            "latency_s": latency,
            "energy_j": self.energy_j,
            "area_mm2": self.arch.area_mm2,
            "throughput_per_s": self.workload.items_per_run / latency if latency > 0 else math.inf,
            "throughput_unit": f"{self.workload.item_unit}s/s",
            "edp_js": self.energy_j * latency,
            "einsums": len(self.bounds),
            "total_macs": self.workload.total_macs,
            "total_ops": ops,
            "attained_ops_per_s": ops / latency if latency > 0 else math.inf,
            "cycles_by_bound": kinds,
        }

    def per_einsum(self) -> pd.DataFrame:
        """One row per einsum: engine, operator, MACs, ops, bytes per level, bound cycles and what bounds it."""
        import pandas as pd

        rows = []
        for b in self.bounds:
            row: dict[str, object] = {"einsum": b.einsum, "engine": b.engine, "op": b.op, "macs": b.macs,
                                      "ops": b.ops, "compute_cycles": b.compute_cycles}
            for level, nbytes in b.level_bytes.items():
                row[f"{level}_bytes"] = nbytes
                row[f"{level}_cycles"] = b.level_cycles[level]
            row.update({"bytes": b.traffic_bytes, "cycles": b.cycles, "bound": b.kind,
                        "latency_s": b.cycles / self.arch.clock_hz,
                        "energy_j": sum(b.level_energy_j.values())})
            rows.append(row)
        return pd.DataFrame(rows)

    def plot_roofline(self) -> Figure:
        """Operational intensity vs attained throughput, one point per einsum, under each engine's roof."""
        from accel_sim.reports.plots import roofline_figure

        return roofline_figure(self)


def evaluate(arch: Arch, workload: Workload, objective: Objective = "edp") -> Result:
    """Cost every einsum of `workload` on `arch` and gather the Result."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    bounds = tuple(roofline(einsum, workload, arch) for einsum in workload.einsums)
    return Result(arch, workload, bounds, objective)
