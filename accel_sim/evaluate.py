"""The one pipeline: (arch, workload) -> execution model -> Result. The CLI, notebooks, sweeps and validation
scripts call it.

The arch's `execution:` spec (spec/execution.py) names the execution model: `sequential` (every einsum costed on
each engine that can run it, placed on the one that serves the objective best, einsums back to back),
`scheduled` (CP-SAT graph schedule and replay), `npu_pim` (NPU+PIM decode co-simulation), `pipelined` (a
periodic schedule of many instances) or `fpga` (sequential, dataflow or auto). Each model returns the
placements and the `Trace`; each einsum also keeps its roofline bound, which no engine model may beat.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence

from accel_sim.energy.components import io_area_mm2, level_area_mm2
from accel_sim.errors import ConfigError
from accel_sim.engines.multicore import cpu_arch
from accel_sim.mapper import OBJECTIVES, MapperCache
from accel_sim.sim.execution import ExecutionModel, Placement, run_sequential
from accel_sim.sim.memory_use import memory_use
from accel_sim.sim.placement import check_levels_exist
from accel_sim.sim.trace import Trace
from accel_sim.spec.arch import Arch
from accel_sim.spec.execution import (FpgaExecution, NpuPimExecution, PipelinedExecution, ScheduledExecution,
                                      SequentialExecution)
from accel_sim.spec.workload import Einsum, Workload

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

Objective = Literal["latency", "energy", "edp"]
EinsumResult = Placement  # one einsum of a Result: placed by an execution model (sim/execution.py)
# The numbers every Result.summary() holds, whatever the arch and its execution model; the others (per memory level,
# engine and energy component, the execution model's own, published_area_mm2 when a config gives one) depend on
# them. A sweep whose objectives and constraints name only these is checked without evaluating a point (dse/spec.py).
SUMMARY_METRICS = frozenset({
    "cycles", "latency_s", "energy_j", "area_mm2", "throughput_per_s", "edp_js", "einsums", "total_macs",
    "mac_utilization", "compute_cycles", "fill_drain_cycles", "stall_cycles", "roofline_cycles",
    "cycles_over_roofline"})
def execution_model(spec: object) -> ExecutionModel[Any]:
    """The model that runs an `execution:` spec. Einsums back to back need nothing more; the others load on first
    use, since they pull simpy and the CP-SAT solver (ortools)."""
    if isinstance(spec, SequentialExecution):
        return run_sequential
    if isinstance(spec, (ScheduledExecution, PipelinedExecution)):
        from accel_sim.sim.scheduled import run_pipelined, run_scheduled  # lazy: the scheduler (ortools, simpy)

        return run_scheduled if isinstance(spec, ScheduledExecution) else run_pipelined
    if isinstance(spec, NpuPimExecution):
        from accel_sim.sim.npu_pim import run_npu_pim  # lazy: the co-simulation (simpy)

        return run_npu_pim
    if isinstance(spec, FpgaExecution):
        from accel_sim.sim.fpga_modes import run_fpga  # lazy: the stage allocator (ortools)

        return run_fpga
    raise TypeError(f"no execution model for {type(spec).__name__}")


@dataclass(frozen=True)
class Result:
    """Costs of one workload on one architecture."""

    arch: Arch
    workload: Workload
    einsums: tuple[Placement, ...]   # one instance of the workload, in workload order
    objective: str
    trace: Trace                     # what the execution model (arch.execution) ran when

    @property
    def cycles(self) -> float:
        """Total cycles (arch clock): the execution model's makespan (every instance)."""
        return self.trace.makespan_cycles

    @property
    def latency_s(self) -> float:
        """Wall-clock time of one run."""
        return self.cycles / self.arch.clock_hz

    @property
    def energy_j(self) -> float:
        """Energy of one run (every instance): compute, registers, wires and every memory level."""
        return self.trace.instances * sum(r.cost.total_energy_j for r in self.einsums)

    @property
    def area_mm2(self) -> float:
        """Modelled silicon area: every engine's datapath, every on-chip memory level and the I/O PHYs."""
        node = self.arch.technology_nm
        return (sum(e.area_mm2(node) for e in self.arch.engines)
                + sum(level_area_mm2(level, node) for level in self.arch.memory) + io_area_mm2(self.arch))

    def energy_by_component(self) -> dict[str, float]:
        """Joules per component (mac, pe_registers, array_wires, vector_lanes, each memory level)."""
        out: dict[str, float] = {}
        for r in self.einsums:
            for (component, _), joules in r.cost.energy_j.items():
                out[component] = out.get(component, 0.0) + joules
        if self.trace.instances > 1:
            out = {component: self.trace.instances * joules for component, joules in out.items()}
        return out

    def summary(self) -> dict[str, object]:
        """Headline numbers: cycles, latency, energy, area, throughput, utilization, the roofline gap and, per memory
        level (`memory`), capacity, peak occupancy, spilled bytes, bytes read and written and bandwidth use."""
        return dict(self._summary)   # a copy: `run` reads it for the files and again for the table

    @cached_property
    def _summary(self) -> dict[str, object]:
        """`summary`, computed once."""
        latency = self.latency_s
        instances = self.trace.instances
        macs = instances * sum(r.cost.macs for r in self.einsums)  # what ran (NPU+PIM: each request's own context)
        einsums = {e.name: e for e in self.workload.einsums}
        ran_on: dict[str, list[Einsum]] = {}
        bound_by_engine: dict[str, float] = {}
        for r in self.einsums:
            if r.einsum in einsums:
                ran_on.setdefault(r.engine, []).append(einsums[r.einsum])
            bound_by_engine[r.engine] = bound_by_engine.get(r.engine, 0.0) + r.bound.cycles
        # Back to back, one engine works at a time; a concurrent execution model runs them all at once, so its
        # roofline is the busiest engine's (each engine still runs its own einsums one after another).
        # an engine's peak is per cycle of its own clock; the run's cycles are the arch clock's
        peaks = [e.mac_peak_on(ran_on.get(e.name, ()), self.workload) * self.arch.engine_clock_hz(e)
                 / self.arch.clock_hz for e in self.arch.engines]
        pes = sum(peaks) if self.trace.concurrent else max(peaks)
        cycles = self.cycles
        # every per-einsum figure is one instance's: the run's cycles hold all of them
        bound_cycles = instances * (max(bound_by_engine.values(), default=0.0) if self.trace.concurrent
                                    else sum(bound_by_engine.values()))
        by_bound: dict[str, float] = {}
        for r, limiter in zip(self.einsums, self.limiters):
            by_bound[limiter] = by_bound.get(limiter, 0.0) + instances * r.cost.total_cycles
        return {
            "arch": self.arch.name,
            "workload": self.workload.name,
            "objective": self.objective,
            "cycles": cycles,
            "latency_s": latency,
            "energy_j": self.energy_j,
            "area_mm2": self.area_mm2,
            "published_area_mm2": self.arch.area_mm2,
            "throughput_per_s": instances * self.workload.items_per_run / latency if latency > 0 else math.inf,
            "throughput_unit": f"{self.workload.item_unit}s/s",
            "edp_js": self.energy_j * latency,
            "einsums": len(self.einsums),
            "total_macs": macs,
            "mac_utilization": macs / (pes * cycles) if pes and cycles else 0.0,
            "compute_cycles": instances * sum(r.cost.compute_cycles for r in self.einsums),
            "fill_drain_cycles": instances * sum(r.cost.fill_drain_cycles for r in self.einsums),
            "stall_cycles": instances * sum(r.cost.stall_cycles for r in self.einsums),
            "roofline_cycles": bound_cycles,
            "cycles_over_roofline": cycles / bound_cycles if bound_cycles else math.inf,
            "energy_by_component_j": self.energy_by_component(),
            "cycles_by_bound": by_bound,
            **self.trace.summary(),
        }

    def per_einsum(self) -> pd.DataFrame:
        """One row per einsum: engine, operator, MACs, cycle split, utilization, bytes per level, energy, bound, and
        energy per component and action (`energy_<component>_<action>_j`)."""
        import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

        return pd.DataFrame(self.per_einsum_records)

    @cached_property
    def limiters(self) -> tuple[str, ...]:
        """What each einsum's mapped cost waits on: 'compute' (its compute and fill/drain cycles), or the memory
        level whose traffic keeps it busy longest when that is longer. Its roofline's kind (Placement.bound) says
        what bounds the einsum at best; a mapping that stalls on a buffer the roofline never binds is bound there."""
        out = []
        for r in self.einsums:
            engine = self.arch.engine(r.engine)
            busy = engine.level_busy_cycles(r.cost, self.workload, self.arch)
            level, cycles = max(busy.items(), key=lambda kv: kv[1], default=("compute", 0.0))
            out.append(level if cycles > (r.cost.compute_cycles + r.cost.fill_drain_cycles) * (1 + 1e-9)
                       else "compute")
        return tuple(out)

    @cached_property
    def per_einsum_records(self) -> tuple[dict[str, Any], ...]:
        """The rows of `per_einsum()` as plain dicts (the CLI writes them without importing pandas)."""
        rows = []
        bits = {t.name: t.bits for t in self.workload.tensors}
        # every row has the same energy columns (CSV): each (component, action) any einsum spends energy on
        parts = sorted({key for r in self.einsums for key in r.cost.energy_j})
        for r, limiter in zip(self.einsums, self.limiters):
            c, b = r.cost, r.bound
            row: dict[str, Any] = {"einsum": r.einsum, "engine": r.engine, "op": r.op, "macs": c.macs,
                                   "ops": b.ops, "compute_cycles": c.compute_cycles,
                                   "fill_drain_cycles": c.fill_drain_cycles, "stall_cycles": c.stall_cycles,
                                   "cycles": c.total_cycles, "utilization": c.utilization}
            moved = c.bytes_by_level(bits)
            row.update({f"{level.name}_bytes": moved.get(level.name, 0.0) for level in self.arch.memory})
            row.update({"bytes": b.traffic_bytes, "latency_s": c.total_cycles / self.arch.clock_hz,
                        "energy_j": c.total_energy_j, "roofline_cycles": b.cycles, "bound": limiter,
                        "roofline_bound": b.kind})
            row.update({f"energy_{component}_{action}_j": c.energy_j.get((component, action), 0.0)
                        for component, action in parts})
            rows.append(row)
        return tuple(rows)

    def plot_roofline(self) -> Figure:
        """Hierarchical roofline with each einsum's bound and achieved throughput."""
        # lazy: plotting pulls matplotlib (heavy); DESIGN.md's notebook API keeps plots as Result methods
        from accel_sim.reports.plots import roofline_figure

        return roofline_figure(self)


def evaluate(arch: Arch, workload: Workload, objective: Objective = "edp", cache: MapperCache | None = None
             ) -> Result:
    """Run `workload` on `arch` through the execution model its `execution:` spec names, placing einsums for
    `objective`; `cache` keeps the mapper's results across calls (sweeps), None keeps none beyond this call."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    arch = cpu_arch(arch)  # a CPU: its one-core engines on `cpu.threads` cores, at the bandwidth those reach
    check_levels_exist(arch, workload)
    model = execution_model(arch.execution)
    execution = model(arch.execution, arch, workload, objective, cache)
    memory = memory_use(arch, workload, execution.placements, execution.trace, execution.homes)
    return Result(arch, workload, execution.placements, objective, replace(execution.trace, memory=memory))


def sourced(exc: ConfigError, arch_file: str | Path, workload_file: str | Path | None,
            overrides: Sequence[str] = ()) -> ConfigError:
    """`exc`, raised while evaluating loaded specs (which know no file), located in the files the user gave: the
    arch file and the line of its key path (a `workload...` key path: the workload file), or the --set assignment
    that wrote that key. An error that names its file already is returned as it is."""
    if exc.file is not None:
        return exc
    keys = tuple(int(k) if k.isdigit() else k for k in re.split(r"[.\[\]]+", exc.key_path) if k)
    running = f" (running {workload_file})" if workload_file is not None else ""
    if keys[:1] == ("workload",) and workload_file is not None:
        return ConfigError(exc.problem, fix=exc.fix, file=workload_file, key_path=exc.key_path)
    written = [o for o in overrides if _related(tuple(o.partition("=")[0].strip().split(".")), keys)]
    if written:  # the key came from the command line: its line in the file is not what to fix
        return ConfigError(f"--set '{written[-1]}': {exc.problem}{running}", fix=exc.fix, file=arch_file,
                           key_path=exc.key_path)
    from accel_sim.io.yaml import load_yaml  # lazy: only errors need the file's lines (cached: already parsed)

    lines = load_yaml(arch_file)
    line = lines.line_of(keys) if keys[:1] in lines.lines else None  # a key the file leaves to its default: no line
    return ConfigError(f"{exc.problem}{running}", fix=exc.fix, file=arch_file, line=line, key_path=exc.key_path)


def _related(written: tuple[str, ...], keys: tuple[str | int, ...]) -> bool:
    """Whether an override of `written` set `keys` or a key around or under it (`execution=fpga` and
    `execution.engine`); list items match by index or by name only as text, which is enough to blame a --set."""
    shared = min(len(written), len(keys))
    return shared > 0 and [str(k) for k in keys[:shared]] == list(written[:shared])
