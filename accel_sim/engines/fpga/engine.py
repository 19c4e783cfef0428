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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from accel_sim.energy import dtype_mac_area_mm2
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.base import EngineBase
from accel_sim.engines.fpga.devices import DEVICES, Device, RamKind, macs_per_dsp, ram_blocks
from accel_sim.engines.fpga.kernels import Fifo, Kernel, kernel_of
from accel_sim.engines.fpga.timing import buffer_plan, operator_cost, unit_for
from accel_sim.engines.loopnest import gemm_view
from accel_sim.folds import fold_count
from accel_sim.spec.fields import SPEC_CONFIG, Fraction, NonNegativeCount, PositiveInt, located, unique_names
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


class Parallelism(BaseModel):
    """A MAC array: tokens (rows of the streamed operand) x out (weight columns) x reduce, per cycle.

    One instruction covers a tile of tile_tokens x tile_out outputs over the whole reduction; tiles are
    double-buffered (the next tile loads while this one computes), so only the first tile's load is exposed.
    `weights`, `activations` and `outputs` name the engine's buffers that hold each operand's tiles while the
    unit runs (timing.buffer_plan checks them against the tiles).
    """

    model_config = SPEC_CONFIG

    tokens: PositiveInt
    out: PositiveInt
    reduce: PositiveInt
    tile_tokens: PositiveInt | None = None   # default: tokens
    tile_out: PositiveInt | None = None      # default: out
    weights: str | None = None       # buffer of the weight-like operand's tiles (two, the next loading)
    activations: str | None = None   # buffer of the streamed operand's tokens x whole reduction
    outputs: str | None = None       # buffer of the output tiles (two, one storing while the next computes)
    # bytes of each row of a routed buffer this unit addresses, where it uses fewer banks than the buffer has
    # (FlightLLM's GEMV mode reads a quarter of the A buffer's banks): the unit can use depth x these bytes
    # (a YAML mapping {buffer: bytes}, kept as sorted pairs: engines are hashed as the mapper's cache keys)
    widths: tuple[tuple[str, PositiveInt], ...] = ()

    @field_validator("widths", mode="before")
    @classmethod
    def _width_pairs(cls, value: object) -> object:
        return tuple(sorted(value.items())) if isinstance(value, Mapping) else value

    @model_validator(mode="after")
    def _whole_folds(self) -> Parallelism:
        # an instruction's tile runs whole folds of the unit (the timing counts folds of tokens x out): a tile that
        # is not a multiple would leave lanes idle in every fold, which nothing here charges
        for tile, lanes in (("tile_tokens", "tokens"), ("tile_out", "out")):
            size, width = getattr(self, tile), getattr(self, lanes)
            if size is not None and size % width:
                raise located(f"{tile} {size} is not a multiple of {lanes} {width}: an instruction's tile covers whole "
                              f"folds of the unit. Fix: make {tile} a multiple of {width} (e.g. "
                              f"{max(width, size // width * width)}), or leave it out ({lanes})", tile)
        return self

    @property
    def routes(self) -> dict[str, str | None]:
        """Operand (weights | activations | outputs) -> the buffer named to hold its tiles."""
        return {"weights": self.weights, "activations": self.activations, "outputs": self.outputs}

    def row_bytes(self, buffer: Buffer) -> int:
        """Bytes of each of `buffer`'s rows this unit addresses: `widths`' entry, else the buffer's width."""
        return min(dict(self.widths).get(buffer.name, buffer.width_bytes), buffer.width_bytes)

    def usable_bytes(self, buffer: Buffer) -> int:
        """Bytes of `buffer` this unit can hold tiles in: its depth x the row bytes it addresses x its copies."""
        return buffer.depth * self.row_bytes(buffer) * buffer.copies

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
    matrix: Parallelism | None = None    # an overlay's MAC array; an HLS design gives `kernels` instead
    gemv: Parallelism | None = None      # a second configuration of the same DSP chains (FlightLLM's MV mode)
    mac_bits: PositiveInt = 8            # operand width the DSP chains are built for
    sfu_lanes: PositiveInt = 16          # special-function lanes per core (norms, softmax, activations)
    sfu_dsps_per_lane: NonNegativeCount = 1   # one hard multiplier per lane for scale/multiply operators
    # fraction of a channel's peak reached streaming from it (default: the device's measured memory efficiency)
    # and reading across channels (an overlay's activations; no default: cite the design's own figure)
    same_channel_efficiency: Fraction | None = None
    cross_channel_efficiency: Fraction | None = None
    buffers: tuple[Buffer, ...] = ()
    kernels: tuple[Kernel, ...] = ()     # an HLS design: its tasks (engines/fpga/kernels.py)
    fifos: tuple[Fifo, ...] = ()         # streams between kernels in a dataflow
    luts: NonNegativeCount = 0           # control, SFU and interconnect logic (from the design's synthesis report)
    ffs: NonNegativeCount = 0

    @field_validator("device", mode="before")
    @classmethod
    def _inline_device(cls, value: object) -> object:
        # a mapping is an inline Device, validated here so that its errors keep their key paths: through the
        # `str | Device` union pydantic reported the first branch's failure, 'device.str: Input should be a valid
        # string', for any bad inline field
        if isinstance(value, Mapping):
            return Device.model_validate(value)
        if not isinstance(value, (str, Device)):
            raise ValueError(f"expected a device name or a mapping of its resources, got {value!r}. Fix: use one of "
                             f"{sorted(DEVICES)}, or give dsp_kind, dsps, bram36, uram, luts, ffs and offchip")
        return value

    @model_validator(mode="after")
    def _fits(self) -> FpgaEngine:
        if isinstance(self.device, str) and self.device not in DEVICES:
            raise located(f"unknown device '{self.device}'. Fix: use one of {sorted(DEVICES)} or give the device's "
                          f"resources inline (dsp_kind, dsps, bram36, uram, luts, ffs, offchip)", "device")
        self._check_design()
        if self.gemv is not None and self.matrix is not None and self.gemv.macs > self.matrix.macs:
            raise located(f"the GEMV mode needs {self.gemv.macs} MACs/cycle but the matrix unit it reconfigures "
                          f"has {self.matrix.macs}. Fix: make gemv tokens x out x reduce at most the matrix "
                          f"unit's", "gemv")
        reduce = ("reduce the kernels' DSP, BRAM, URAM or channel use" if self.kernels
                  else "reduce cores, matrix parallelism or buffers")
        for row in self.resource_rows():
            if row["used"] > row["available"]:
                over = row["used"] - row["available"]
                raise located(f"the design does not fit the device {self.fpga.name}: it needs {row['used']:,} "
                              f"{row['resource']} but the device has {row['available']:,} (over by {over:,}, "
                              f"{100 * over / row['available']:.1f}%). Fix: {reduce}, or choose a larger device",
                              str(row["key"]))
        return self

    def _check_design(self) -> None:
        """An overlay (matrix) or an HLS design (kernels), its channels on the device, its efficiencies known."""
        if (self.matrix is None) == (not self.kernels):
            raise located("an FPGA engine is an overlay (give `matrix`) or an HLS design (give `kernels`), not "
                          "both or neither. Fix: keep exactly one of matrix and kernels", "matrix")
        if self.same_channel_efficiency is None and self.fpga.offchip.efficiency is None:
            raise located(f"no measured channel efficiency for the {self.fpga.offchip.technology} of "
                          f"{self.fpga.name}. Fix: give same_channel_efficiency with its source",
                          "same_channel_efficiency")
        if self.matrix is not None and self.cross_channel_efficiency is None:
            raise located("an overlay reads activations across channels and needs cross_channel_efficiency. "
                          "Fix: give it with its source", "cross_channel_efficiency")
        self._check_routes()
        if self.kernels and self.cores != 1:
            raise located("an HLS design describes every kernel itself. Fix: drop `cores`", "cores")
        unique_names(self.kernels, "kernel", "kernels")
        owner: dict[str, str] = {}
        for i, kernel in enumerate(self.kernels):
            for einsum in kernel.einsums:
                if einsum in owner:
                    raise located(f"einsum '{einsum}' is run by kernels '{owner[einsum]}' and '{kernel.name}'. "
                                  f"Fix: name each einsum in one kernel", "kernels", i, "einsums")
                owner[einsum] = kernel.name
            for tensor, port in kernel.ports.items():
                if port.channel >= self.fpga.offchip.channels:
                    raise located(f"port '{tensor}' is bound to channel {port.channel} but {self.fpga.name} has "
                                  f"{self.fpga.offchip.channels} (0..{self.fpga.offchip.channels - 1}). Fix: bind "
                                  f"it to an existing channel", "kernels", i, "ports", tensor, "channel")

    def _check_routes(self) -> None:
        """An overlay that builds buffers says which holds each operand of each unit, by the buffers' names."""
        names = [b.name for b in self.buffers]
        for unit_name in ("matrix", "gemv"):
            unit = getattr(self, unit_name)
            if unit is None:
                continue
            for operand, buffer in unit.routes.items():
                if buffer is None and names:
                    raise located(f"the {unit_name} unit does not say which buffer holds its {operand}, so its "
                                  f"tiles cannot be checked against the buffers the design builds. Fix: give "
                                  f"{unit_name}.{operand} one of {names}", unit_name, operand)
                if buffer is not None and buffer not in names:
                    fix = (f"use one of {names}" if names else
                           f"declare it under buffers (name, depth, width), or drop {unit_name}.{operand}")
                    raise located(f"unknown buffer '{buffer}' for the {unit_name} unit's {operand}"
                                  f"{'' if names else ': the design builds no buffers'}. Fix: {fix}",
                                  unit_name, operand)
            for buffer, width in unit.widths:
                if buffer not in unit.routes.values():
                    raise located(f"widths names buffer '{buffer}', which the {unit_name} unit routes no operand to. "
                                  f"Fix: use one of {sorted({b for b in unit.routes.values() if b})}", unit_name,
                                  "widths", buffer)
                if width > self.buffer(buffer).width_bytes:
                    raise located(f"the {unit_name} unit addresses {width} B of each row of buffer '{buffer}', which "
                                  f"is {self.buffer(buffer).width_bytes} B wide. Fix: give at most its width, or "
                                  f"widen the buffer", unit_name, "widths", buffer)

    def buffer(self, name: str) -> Buffer:
        """The buffer called `name`."""
        return next(b for b in self.buffers if b.name == name)

    @property
    def same_efficiency(self) -> float:
        """Fraction of a channel's peak reached streaming from one channel."""
        return self.same_channel_efficiency or self.fpga.offchip.efficiency

    @property
    def cross_efficiency(self) -> float:
        """Fraction of a channel's peak reached reading across channels."""
        return self.cross_channel_efficiency or self.same_efficiency

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
        """DSP slices of all cores: the matrix unit (the GEMV mode reuses them) plus the SFU multipliers; an HLS
        design's kernels as their synthesis reports count them."""
        if self.matrix is None:
            return sum(k.dsps for k in self.kernels)
        per_core = math.ceil(self.matrix.macs / macs_per_dsp(self.fpga.dsp_kind, self.mac_bits))
        return self.cores * (per_core + self.sfu_lanes * self.sfu_dsps_per_lane)

    def ram_used(self, kind: RamKind) -> int:
        """Block RAM or UltraRAM blocks of all cores' buffers."""
        kernels = sum(k.bram36 if kind == "bram" else k.uram for k in self.kernels)
        return self.cores * sum(b.blocks for b in self.buffers if b.memory == kind) + kernels

    def on_chip_buffer_bytes(self) -> float:
        """Every core's buffers, all copies."""
        return float(self.cores * sum(b.capacity_bytes for b in self.buffers))

    def on_chip_buffer_bytes_per_cycle(self) -> float:
        """Every core's buffers that its units route an operand to, one row each per cycle (of the bytes the widest
        unit addresses)."""
        units = [unit for unit in (self.matrix, self.gemv) if unit is not None]
        return float(self.cores * sum(max(u.row_bytes(b) for u in units if b.name in u.routes.values())
                                      for b in self.buffers if any(b.name in u.routes.values() for u in units)))

    def channels_used(self) -> int:
        """Off-chip channels the design binds: every core's share, or the distinct channels of the kernels' ports."""
        if self.kernels:
            return len({port.channel for k in self.kernels for port in k.ports.values()})
        return self.cores * self.channels_per_core

    def resource_rows(self) -> tuple[dict[str, object], ...]:
        """Used vs available for DSP, BRAM36, URAM, LUT, FF and off-chip channels (key: the field to change)."""
        dev = self.fpga
        unit, ram = ("matrix", "buffers") if self.matrix is not None else ("kernels", "kernels")
        rows = [("DSP", self.dsps_used(), dev.dsps, unit), ("BRAM36", self.ram_used("bram"), dev.bram36, ram),
                ("URAM", self.ram_used("uram"), dev.uram, ram), ("LUT", self.luts, dev.luts, "luts"),
                ("FF", self.ffs, dev.ffs, "ffs"),
                ("off-chip channels", self.channels_used(), dev.offchip.channels,
                 "core_channels" if self.core_channels else unit if self.kernels else "cores")]
        # logic counts come from a synthesis report; a design that gives none has no LUT/FF rows
        return tuple({"resource": name, "used": used, "available": avail,
                      "utilization": used / avail if avail else math.inf, "key": key}
                     for name, used, avail, key in rows if used or key not in ("luts", "ffs"))

    def buffer_rows(self, einsums: Sequence[Einsum], workload: Workload) -> tuple[dict[str, object], ...]:
        """Per routed buffer (per core): its bytes and the most the tiles of any of `einsums` hold in it at once
        (`timing.buffer_plan`), with the einsum at that peak and the most reduction chunks any einsum needed."""
        if self.matrix is None:
            return ()
        peak: dict[str, tuple[float, str]] = {}
        splits: dict[str, int] = {}   # weight buffer -> the most chunks a reduction was split into there
        for einsum in einsums:
            if einsum.op != "mac":
                continue
            view = gemm_view(einsum, workload)
            unit_name, unit = unit_for(self, view.m)
            plan = buffer_plan(self, unit_name, unit, view, workload.tensor(einsum.output.tensor).bits)
            splits[unit.weights] = max(splits.get(unit.weights, 1), plan.reduce_splits)
            for buffer, held in plan.held.items():
                if held > peak.get(buffer, (-1.0, ""))[0]:
                    peak[buffer] = (held, einsum.name)
        return tuple({"buffer": b.name, "capacity_bytes": b.capacity_bytes, "peak_bytes": peak[b.name][0],
                      "utilization": peak[b.name][0] / b.capacity_bytes, "einsum": peak[b.name][1],
                      "reduce_splits": splits.get(b.name, 1)}
                     for b in self.buffers if b.name in peak)

    # --- engine contract ---------------------------------------------------------------------------------
    def peak_per_cycle(self, einsum: Einsum) -> float:
        """All cores' best MAC rate for contractions (narrow operands); SFU lanes for every other operator; in an
        HLS design, the parallelism of the kernel that runs it (0.0: no kernel runs it)."""
        if self.matrix is None:
            kernel = kernel_of(self, einsum.name)
            return float(kernel.parallelism) if kernel else 0.0
        if einsum.op == "mac":
            return float(self.peak_macs_per_cycle())
        return float(self.cores * self.sfu_lanes)

    def peak_macs_per_cycle(self) -> float:
        """MACs per cycle of all cores' matrix units, or of all kernels of an HLS design at once."""
        if self.matrix is None:
            return float(sum(k.parallelism for k in self.kernels))
        return float(self.cores * self.matrix.macs)

    def mac_peak_on(self, einsums: Sequence[Einsum], workload: Workload) -> float:
        """In an HLS design, the parallelism of the kernels that run the contractions among `einsums` (a kernel that
        only maps or reduces, a ReLU's, multiplies nothing); all cores' matrix units otherwise."""
        if self.matrix is not None:
            return self.peak_macs_per_cycle()
        names = {k.name: k for e in einsums if e.op == "mac" and (k := kernel_of(self, e.name)) is not None}
        return float(sum(k.parallelism for k in names.values())) if names else self.peak_macs_per_cycle()

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
