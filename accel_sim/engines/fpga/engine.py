"""FPGA overlay engine: a design (matrix unit, GEMV mode, special-function unit, buffers) on a device.

The design is replicated `cores` times (one per super logic region in FlightLLM, each core owning
channels // cores of the off-chip channels) and runs one operator at a time on all cores (sequential
execution; `execution: {kind: fpga, mode: dataflow | auto}` plans operator groups, sim/fpga_modes.py).
Per operator and core:
- compute: folds of the GEMM view onto the unit's tokens x out x reduce parallelism (ceil per axis), times
  the passes that operands wider than the DSP chains' `mac_bits` need; plus the chain's fill (the reduce
  cascade and the DSP pipeline registers);
- memory: the weight-like operand is striped over the core's channels at the same-channel efficiency; the
  streamed activation operand crosses channels (one channel at the cross-channel efficiency, as FlightLLM's
  profiler loads the input sequence); the output is stored over one channel. Loads share one load unit and
  overlap the store unit and compute (double buffering), after a prologue that fetches the first fold;
- every memory level is also bounded by its aggregate bandwidth (the channels cannot beat their peak).
GEMMs whose token extent is below the matrix unit's token parallelism run in the GEMV mode when the design
has one (FlightLLM's compiler emits linear_mv for decode and linear_mm for prefill).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from accel_sim.energy import dtype_mac_area_mm2
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.base import EngineBase
from accel_sim.engines.folds import fold_count
from accel_sim.engines.fpga.devices import DEVICES, Device, RamKind, macs_per_dsp, ram_blocks
from accel_sim.engines.fpga.timing import operator_cost
from accel_sim.spec.fields import SPEC_CONFIG, PositiveInt, located
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


class Parallelism(BaseModel):
    """A MAC array: tokens (rows of the streamed operand) x out (weight columns) x reduce, per cycle.

    One instruction covers a tile of tile_tokens x tile_out outputs over the whole reduction; tiles are
    double-buffered (the next tile loads while this one computes), so only the first tile's load is exposed.
    """

    model_config = SPEC_CONFIG

    tokens: PositiveInt
    out: PositiveInt
    reduce: PositiveInt
    tile_tokens: PositiveInt | None = None   # default: tokens
    tile_out: PositiveInt | None = None      # default: out

    @property
    def macs(self) -> int:
        """MACs per cycle at full use."""
        return self.tokens * self.out * self.reduce

    def tiles(self, batch: int, m: int, n: int) -> int:
        """Instruction tiles of a batch x m x n output on one core."""
        return batch * fold_count(m, self.tile_tokens or self.tokens) * fold_count(n, self.tile_out or self.out)


class Buffer(BaseModel):
    """An on-chip buffer of one core: depth words of width bytes, built from block RAM or UltraRAM."""

    model_config = SPEC_CONFIG

    name: str
    depth: PositiveInt
    width_bytes: PositiveInt = Field(alias="width")
    memory: RamKind = "bram"
    copies: PositiveInt = 1   # 2 for a ping-pong (double) buffer

    @property
    def capacity_bytes(self) -> int:
        """Bytes held, all copies."""
        return self.depth * self.width_bytes * self.copies

    @property
    def blocks(self) -> int:
        """RAM blocks of its kind, all copies."""
        return self.copies * ram_blocks(self.memory, self.depth, self.width_bytes)


class FpgaEngine(EngineBase):
    """A spatial design on an FPGA: `cores` copies of a matrix unit (with optional GEMV mode), an SFU and buffers."""

    kind: Literal["fpga"]
    device: str | Device                 # a name in engines/fpga/devices.py DEVICES or an inline device
    cores: PositiveInt = 1
    core_channels: PositiveInt | None = None   # off-chip channels bound to each core; default channels // cores
    matrix: Parallelism
    gemv: Parallelism | None = None      # a second configuration of the same DSP chains (FlightLLM's MV mode)
    mac_bits: PositiveInt = 8            # operand width the DSP chains are built for
    sfu_lanes: PositiveInt = 16          # special-function lanes per core (norms, softmax, activations)
    sfu_dsps_per_lane: int = 1           # one hard multiplier per lane for scale/multiply operators
    same_channel_efficiency: float = Field(0.7, gt=0, le=1)
    cross_channel_efficiency: float = Field(0.35, gt=0, le=1)
    buffers: tuple[Buffer, ...] = ()
    luts: int = 0                        # control, SFU and interconnect logic (from the design's synthesis report)
    ffs: int = 0

    @model_validator(mode="after")
    def _fits(self) -> FpgaEngine:
        if isinstance(self.device, str) and self.device not in DEVICES:
            raise located(f"unknown device '{self.device}'. Fix: use one of {sorted(DEVICES)} or give the device's "
                          f"resources inline (dsp_kind, dsps, bram36, uram, luts, ffs, offchip)", "device")
        if self.gemv is not None and self.gemv.macs > self.matrix.macs:
            raise located(f"the GEMV mode needs {self.gemv.macs} MACs/cycle but the matrix unit it reconfigures "
                          f"has {self.matrix.macs}. Fix: make gemv tokens x out x reduce at most the matrix "
                          f"unit's", "gemv")
        for row in self.resource_rows():
            if row["used"] > row["available"]:
                over = row["used"] - row["available"]
                raise located(f"the design does not fit the device {self.fpga.name}: it needs {row['used']:,} "
                              f"{row['resource']} but the device has {row['available']:,} (over by {over:,}, "
                              f"{100 * over / row['available']:.1f}%). Fix: reduce cores, matrix parallelism or "
                              f"buffers, or choose a larger device", str(row["key"]))
        return self

    # --- resources ---------------------------------------------------------------------------------------
    @property
    def fpga(self) -> Device:
        """The device the design is placed on."""
        return DEVICES[self.device] if isinstance(self.device, str) else self.device

    @property
    def channels_per_core(self) -> int:
        """Off-chip channels each core owns: `core_channels`, or an equal share of the device's."""
        return self.core_channels or max(self.fpga.offchip.channels // self.cores, 1)

    def dsps_used(self) -> int:
        """DSP slices of all cores: the matrix unit (the GEMV mode reuses them) plus the SFU multipliers."""
        per_core = math.ceil(self.matrix.macs / macs_per_dsp(self.fpga.dsp_kind, self.mac_bits))
        return self.cores * (per_core + self.sfu_lanes * self.sfu_dsps_per_lane)

    def ram_used(self, kind: RamKind) -> int:
        """Block RAM or UltraRAM blocks of all cores' buffers."""
        return self.cores * sum(b.blocks for b in self.buffers if b.memory == kind)

    def resource_rows(self) -> tuple[dict[str, object], ...]:
        """Used vs available for DSP, BRAM36, URAM, LUT, FF and off-chip channels (key: the field to change)."""
        dev = self.fpga
        rows = [("DSP", self.dsps_used(), dev.dsps, "matrix"), ("BRAM36", self.ram_used("bram"), dev.bram36, "buffers"),
                ("URAM", self.ram_used("uram"), dev.uram, "buffers"), ("LUT", self.luts, dev.luts, "luts"),
                ("FF", self.ffs, dev.ffs, "ffs"),
                ("off-chip channels", self.cores * self.channels_per_core, dev.offchip.channels,
                 "core_channels" if self.core_channels else "cores")]
        # logic counts come from a synthesis report; a design that gives none has no LUT/FF rows
        return tuple({"resource": name, "used": used, "available": avail,
                      "utilization": used / avail if avail else math.inf, "key": key}
                     for name, used, avail, key in rows if used or key not in ("luts", "ffs"))

    # --- engine contract ---------------------------------------------------------------------------------
    def peak_per_cycle(self, einsum: Einsum) -> float:
        """All cores' best MAC rate for contractions (narrow operands); SFU lanes for every other operator."""
        if einsum.op == "mac":
            return float(self.peak_macs_per_cycle())
        return float(self.cores * self.sfu_lanes)

    def peak_macs_per_cycle(self) -> float:
        """MACs per cycle of all cores' matrix units."""
        return float(self.cores * self.matrix.macs)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Sequential execution of one operator on all cores (engines/fpga/timing.py)."""
        return operator_cost(einsum, workload, arch, self)

    def area_mm2(self, node_nm: float) -> float:
        """ASIC-equivalent area of the MACs and SFU lanes the design implements (the fabric itself is bought whole)."""
        dtype = dtype_of_bits(self.mac_bits)
        lanes = self.cores * self.sfu_lanes
        return (self.peak_macs_per_cycle() * dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
                + lanes * dtype_mac_area_mm2("fp16", "fp16", node_nm=node_nm))


Mode = Literal["matrix", "gemv"]
