"""Fields and behaviour every engine shares: a peak for the roofline, a cost model and an area."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from accel_sim.spec.arch import ByteCount, LevelReference, Ports
from accel_sim.spec.fields import SPEC_CONFIG, Hertz, Seconds
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.mapspace import Mapspace
    from accel_sim.spec.workload import Workload


class EngineBase(BaseModel):
    """Fields every engine has; subclasses add their parameters, a `kind` tag and the three behaviours."""

    model_config = SPEC_CONFIG

    name: str
    clock_hz: Hertz | None = Field(None, alias="clock")  # None: runs at the arch clock
    # set by engines/multicore.py for a CPU's cores (their thread barriers), not from YAML: every operator pays it
    operator_sync_s: Seconds = Field(0.0, exclude=True)
    # set with it: threads that split each operator by rows, ggml's way (0: equal shares; multicore.row_split_factor)
    row_split_threads: int = Field(0, exclude=True)

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """Operator applications per cycle for this einsum; 0.0 means the engine cannot run it."""
        raise NotImplementedError(f"{type(self).__name__} does not define peak_per_cycle")

    def peak_macs_per_cycle(self) -> float:
        """Multiply-accumulates per cycle at full use (the denominator of MAC utilization)."""
        raise NotImplementedError(f"{type(self).__name__} does not define peak_macs_per_cycle")

    def roof_per_cycle(self, einsum: Einsum, workload: Workload) -> float:
        """The roofline's compute roof for `einsum` with its operands' widths (`workload`): peak_per_cycle, unless
        the engine's rate depends on those widths."""
        return self.peak_per_cycle(einsum)

    def mac_peak_on(self, einsums: Sequence[Einsum], workload: Workload) -> float:
        """MACs per cycle at full use while running the contractions `einsums` (the denominator of a run's MAC
        utilization): peak_macs_per_cycle, unless the rate depends on operand widths or on which units run them."""
        return self.peak_macs_per_cycle()

    def on_cores(self, cores: int) -> EngineBase:
        """This engine, described as one CPU core, replicated on `cores` cores (engines/multicore.py)."""
        raise NotImplementedError(f"engine '{self.name}' ({type(self).__name__}) cannot run as CPU cores: a 'cpu:' "
                                  f"arch needs engines of kind lut_tensor_core, mac_tensor_core or vector")

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Cycles, accesses and energy of running `einsum` on this engine within `arch`."""
        raise NotImplementedError(f"{type(self).__name__} does not define cost")

    def waits_for_first_tiles(self) -> bool:
        """Whether a cost's cycles may hold a first-tile prologue beyond its compute, fill/drain and busiest level
        (a systolic array waits for its inputs' first tiles before its first fold: engines/costing.py)."""
        return False

    def scales_with_node(self) -> bool:
        """Whether the engine's energy or area comes from the node-scaled tables (energy/model.py), so that the arch's
        technology_nm must lie in their range."""
        return True

    def writes_back_through_caches(self) -> bool:
        """Whether the engine's on-chip levels are hardware-managed write-back caches (a GPU's L2), whose dirty lines
        reach the level outside as other data streams through, rather than scratchpads the design addresses."""
        return False

    def on_chip_buffer_bytes(self) -> float:
        """Bytes of on-chip buffers the engine's own fields declare (an FPGA design's buffers on every core), which
        the arch's on-chip memory levels must hold; 0 for an engine that declares none."""
        return 0.0

    def on_chip_buffer_bytes_per_cycle(self) -> float:
        """Bytes per cycle the engine's units read from its own buffers (an FPGA design's routed buffers' widths on
        every core), which an on-chip level left without a bandwidth takes; 0 for an engine that declares none."""
        return 0.0

    def level_references(self) -> tuple[LevelReference, ...]:
        """The memory levels this engine's fields name, with their key paths (the arch checks that each exists)."""
        return ()

    def level_ports(self, level: MemoryLevel, clock_hz: float) -> Ports:
        """The ports through which this engine sees `level` (near-memory engines read their own level faster)."""
        return level.ports

    def resource_rows(self) -> tuple[dict[str, object], ...]:
        """Device resources used vs available (resource, used, available, utilization); none for fixed silicon."""
        return ()

    def buffer_rows(self, einsums: Sequence[Einsum], workload: Workload) -> tuple[dict[str, object], ...]:
        """The engine's own buffers over `einsums` (the ones it runs): per buffer, its bytes and the most its tiles
        hold at once (buffer, capacity_bytes, peak_bytes, utilization, einsum at the peak); none for an engine
        whose buffers are memory levels."""
        return ()

    def mapspace(self, einsum: Einsum, workload: Workload, arch: Arch) -> Mapspace | None:
        """The engine's mapping choices for `einsum` with their vectorized scorer, which the mapper
        (accel_sim.mapper) searches; None: the engine has no choices for it and `cost` is the answer."""
        return None

    def transfer_cycles(self, read_bytes: ByteCount, write_bytes: ByteCount, level: MemoryLevel,
                        arch: Arch) -> ByteCount:
        """Cycles (arch clock) to read and write these bytes (numbers or arrays) at `level` as this engine sees it:
        the one place bytes become time (`Ports.seconds`: shared port r + w, separate ports the slower one)."""
        return self.level_ports(level, arch.engine_clock_hz(self)).seconds(read_bytes, write_bytes) * arch.clock_hz

    def levels_transfer_cycles(self, read_bytes: np.ndarray, write_bytes: np.ndarray, arch: Arch) -> np.ndarray:
        """`transfer_cycles` of every memory level at once: the byte arrays have the levels (outer -> inner) last."""
        clock = arch.engine_clock_hz(self)
        ports = [self.level_ports(level, clock) for level in arch.memory]
        read_bw = np.array([p.read_bytes_per_s for p in ports])
        write_bw = np.array([p.write_bytes_per_s for p in ports])
        shared = np.array([p.shared for p in ports])
        separate = np.maximum(read_bytes / read_bw, write_bytes / write_bw)
        return np.where(shared, (read_bytes + write_bytes) / read_bw, separate) * arch.clock_hz

    def level_busy_cycles(self, cost: Cost, workload: Workload, arch: Arch) -> dict[str, float]:
        """Cycles (arch clock) each memory level needs for the bytes `cost` reads and writes there, as this engine
        sees it."""
        tensors = workload.tensor_map  # only the cost's own tensors: a whole network's list is long
        moved = cost.read_write_bytes_by_level({name: tensors[name].bits for _, name, _ in cost.accesses})
        return {level.name: self.transfer_cycles(*moved.get(level.name, (0.0, 0.0)), level, arch)
                for level in arch.memory}

    def register_capacity_bytes(self) -> float:
        """Bytes of datapath registers that can hold a tensor between two einsums on this engine (0: none)."""
        return 0.0

    def resident_cost(self, einsum: Einsum, workload: Workload, arch: Arch, resident: frozenset[str]) -> Cost | None:
        """Cycles of `einsum` when the `resident` tensors stay in this engine's registers (accesses still listed:
        the scheduler drops them, schedule/onchip.py); None when the engine cannot hold them."""
        return None

    def pipeline_tail_cycles(self, einsum: Einsum, workload: Workload, arch: Arch, cost: Cost) -> float:
        """Cycles at the end of `cost` (arch clock) that the next einsum on this engine, if it has such a tail too,
        may overlap by starting early (a systolic array's skew); 0.0: the engine is free only when it ends."""
        return 0.0

    def area_mm2(self, node_nm: float) -> float:
        """Silicon area of the engine's datapath at a technology node."""
        raise NotImplementedError(f"{type(self).__name__} does not define area_mm2")


def skipped_directions(arch: Arch) -> tuple[str, ...]:
    """The directions an intermediate held on chip skips at the levels outside it: its consumers' reads always; its
    producer's writes only where every engine's on-chip levels are scratchpads, since a write-back cache
    (`EngineBase.writes_back_through_caches`: a GPU's L2) still writes its dirty lines out."""
    return ("read",) if any(e.writes_back_through_caches() for e in arch.engines) else ("read", "write")


def width_weighted_mac_peak(engine: EngineBase, einsums: Sequence[Einsum], workload: Workload) -> float:
    """The MAC rate at the contractions' operand widths (`roof_per_cycle`), weighted by their MACs: the rate at which
    they would all run in the time their MACs take at full use; peak_macs_per_cycle when there are none."""
    contractions = [e for e in einsums if e.op == "mac" and e.macs > 0]
    if not contractions:
        return engine.peak_macs_per_cycle()
    return sum(e.macs for e in contractions) / sum(e.macs / engine.roof_per_cycle(e, workload) for e in contractions)
