"""DRAM processing-in-memory (HBM-PIM, AiM, Newton): multipliers beside every bank running GEMVs in place.

The device is an HBM stack seen as channels x bank groups x banks of rows x columns. A GEMV y = W x keeps W
in the banks (each bank holds whole DRAM rows of it) and broadcasts x into a per-channel global buffer
(GWRITE). The channel then works in lock step, all banks at once (Newton, He et al., MICRO 2020; NeuPIMs,
Heo et al., ASPLOS 2024, Sec. 4): gang activations open one row in every bank (G_ACT, one bank per bank
group per gang, and a gang counts as that many ACTs against tFAW), column commands (COMP) read one column of
every bank into its multipliers and adder tree, an all-bank precharge closes the rows, and READRES returns
the partial sums over the channel's data bus. One round (one row per bank) takes

    t_round = t_act + max(tRAS, tRCD + columns_per_row * t_col) + tRP
    t_act   = time of the last gang ACT: (gangs - 1) * max(tFAW, gang_size * tRRD_S) under the four-ACT window
    t_col   = max(tCCD_L, ceil(values per column / multipliers))   (consecutive COMPs hit every bank group)

and refresh stretches time by tREFI / (tREFI - tRFC) (all-bank refresh blocks the channel for tRFC every
tREFI). GEMMs run as repeated GEMVs (one per input vector). In `blocked` mode the host cannot use the
channel while its banks compute; in `concurrent` mode dual row buffers let ordinary reads proceed
(NeuPIMs Sec. 4.2): this engine reports the mode, the NPU+PIM co-simulation (`sim/npu_pim.py`) acts on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from accel_sim.energy import add_area_mm2, dram_energy_j_per_bit, dtype_mac_area_mm2, dtype_mac_energy_j
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.base import EngineBase
from accel_sim.engines.loopnest import gemm_view
from accel_sim.spec.arch import LevelReference, Ports
from accel_sim.spec.cost import Cost
from accel_sim.spec.fields import SPEC_CONFIG, PositiveFloat, PositiveInt, located
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.workload import Workload

PimMode = Literal["blocked", "concurrent"]

# Micron TN-41-01 "Calculating Memory System Power for DDR3" (2007): the standard IDD-based energies,
# E_act+pre = VDD * (IDD0 * tRC - (IDD3N * tRAS + IDD2N * tRP)) and E_read = VDD * (IDD4R - IDD3N) * t_burst.
MA_NS = 1e-12  # 1 mA x 1 ns = 1 pC


class DramTiming(BaseModel):
    """DRAM timing parameters in device clock cycles (tCK); defaults are DRAMsim3's HBM2_8Gb_x128.ini."""

    model_config = SPEC_CONFIG

    # umd-memsys/DRAMsim3 configs/HBM2_8Gb_x128.ini (the configuration NeuPIMs' NewtonSim builds on)
    tRCD: PositiveInt = 14
    tRP: PositiveInt = 14
    tRAS: PositiveInt = 34
    CL: PositiveInt = 14
    tCCD_S: PositiveInt = 1   # kept for DRAMsim3 configs: all-bank COMPs revisit the same banks, so tCCD_L paces them
    tCCD_L: PositiveInt = 2
    tRRD_S: PositiveInt = 4
    tRRD_L: PositiveInt = 6
    tFAW: PositiveInt = 30
    tRFC: PositiveInt = 260
    tREFI: PositiveInt = 3900

    @model_validator(mode="after")
    def _refresh_leaves_time(self) -> DramTiming:
        # refresh stretches time by tREFI / (tREFI - tRFC) (module docstring): a refresh that lasts as long as its
        # interval leaves the banks no time, and a longer one gave a negative time (simpy: "Negative delay")
        if self.tREFI <= self.tRFC:
            raise located(f"the refresh interval tREFI ({self.tREFI} cycles) is not longer than the refresh time "
                          f"tRFC ({self.tRFC} cycles): all-bank refresh would leave the banks no time to compute. "
                          f"Fix: give tREFI above tRFC, in device cycles (DRAMsim3 HBM2_8Gb_x128: tREFI 3900, tRFC 260)",
                          "tREFI")
        return self


class DramPower(BaseModel):
    """Supply voltage and IDD currents (mA) of one channel; defaults are DRAMsim3's HBM2_8Gb_x128.ini."""

    model_config = SPEC_CONFIG

    vdd: PositiveFloat = 1.2     # [DRAMsim3 HBM2_8Gb_x128.ini] VDD = 1.2
    idd0: PositiveFloat = 65.0   # [ditto] IDD0 = 65
    idd2n: PositiveFloat = 40.0  # [ditto] IDD2N = 40
    idd3n: PositiveFloat = 55.0  # [ditto] IDD3N = 55
    idd4r: PositiveFloat = 390.0  # [ditto] IDD4R = 390

    @model_validator(mode="after")
    def _read_above_standby(self) -> DramPower:
        # a burst costs VDD x (IDD4R - IDD3N) x its time (TN-41-01, `pim_energy_j`): the read current is the
        # active-standby current plus the read's own, so it is the larger
        if self.idd4r <= self.idd3n:
            raise located(f"the read current idd4r ({self.idd4r:g} mA) is not above the active-standby current "
                          f"idd3n ({self.idd3n:g} mA), so a column read would cost no or negative energy. Fix: give "
                          f"idd4r above idd3n, in mA (DRAMsim3 HBM2_8Gb_x128: IDD4R 390, IDD3N 55)", "idd4r")
        return self


class PimEngine(EngineBase):
    """Multipliers and an adder tree per bank of an HBM stack, with a global buffer per channel."""

    kind: Literal["pim"]
    memory: str                                   # the arch memory level whose banks compute
    channels: PositiveInt = 32
    bank_groups: PositiveInt = 4
    banks_per_group: PositiveInt = 4
    rows: PositiveInt = 32768
    columns: PositiveInt = 64                     # columns of bus_width_bits per row (DRAMsim3 convention)
    bus_width_bits: PositiveInt = 128             # channel data bus width (x128)
    burst_length: PositiveInt = 4                 # BL: beats per column access
    timing: DramTiming = DramTiming()
    power: DramPower = DramPower()
    multipliers_per_bank: PositiveInt = 16
    operand_bits: PositiveInt = 16
    global_buffer_bytes: PositiveInt = Field(256, alias="global_buffer")  # per channel, for broadcast operands
    mode: PimMode = "concurrent"

    @model_validator(mode="after")
    def _activation_costs_energy(self) -> PimEngine:
        # an ACT/PRE pair costs VDD x (IDD0 x tRC - (IDD3N x tRAS + IDD2N x tRP)) (TN-41-01, `pim_energy_j`): IDD0
        # over a row cycle includes the standby currents it subtracts, so the difference is positive
        p, t = self.power, self.timing
        if p.idd0 * (t.tRAS + t.tRP) <= p.idd3n * t.tRAS + p.idd2n * t.tRP:
            raise located(f"idd0 ({p.idd0:g} mA) over a row cycle (tRAS {t.tRAS} + tRP {t.tRP}) is not above the "
                          f"standby currents idd3n ({p.idd3n:g} mA) over tRAS and idd2n ({p.idd2n:g} mA) over tRP, so "
                          f"an activation would cost no or negative energy. Fix: give idd0 above idd3n and idd2n, "
                          f"in mA (DRAMsim3 HBM2_8Gb_x128: IDD0 65, IDD3N 55, IDD2N 40)", "power", "idd0")
        return self

    # ---- geometry -------------------------------------------------------------------------------
    @property
    def banks(self) -> int:
        """Banks per channel."""
        return self.bank_groups * self.banks_per_group

    @property
    def column_bytes(self) -> int:
        """Bytes one column access (one burst) delivers: bus width x burst length."""
        return self.bus_width_bits * self.burst_length // 8

    @property
    def row_bytes(self) -> int:
        """Bytes of one DRAM row (page) of one bank: columns x bus width."""
        return self.columns * self.bus_width_bits // 8

    @property
    def bursts_per_row(self) -> int:
        """Column accesses that read a whole row."""
        return self.row_bytes // self.column_bytes

    @property
    def channel_bytes_per_cycle(self) -> float:
        """External data-bus bytes per device cycle: bus width x 2 (double data rate)."""
        return self.bus_width_bits * 2 / 8

    # ---- timing ---------------------------------------------------------------------------------
    def column_cycles(self) -> int:
        """Cycles between all-bank COMPs: tCCD_L, or longer when the multipliers need more steps per column."""
        values = self.column_bytes * 8 // self.operand_bits
        return max(self.timing.tCCD_L, math.ceil(values / self.multipliers_per_bank))

    def activation_cycles(self, banks: int | None = None) -> int:
        """Cycle of the last gang ACT that opens a row in `banks` banks (gangs of one bank per bank group)."""
        banks = self.banks if banks is None else banks
        gangs = math.ceil(banks / self.bank_groups)
        t = self.timing
        # a gang is `bank_groups` ACTs at once: at most four ACTs per tFAW, ACTs tRRD_S apart otherwise; the next
        # gang opens rows in the same bank groups again, at least tRRD_L after this one's
        per_gang = max(t.tFAW * self.bank_groups / 4, self.bank_groups * t.tRRD_S) if self.bank_groups <= 4 \
            else t.tFAW * math.ceil(self.bank_groups / 4)
        per_gang = max(per_gang, t.tRRD_L)
        return int(math.ceil((gangs - 1) * per_gang))

    def round_cycles(self, bursts: int | None = None, banks: int | None = None) -> int:
        """One lock-step round: gang ACTs, `bursts` all-bank COMPs per open row (tRAS-bounded), precharge."""
        bursts = self.bursts_per_row if bursts is None else bursts
        t = self.timing
        return self.activation_cycles(banks) + max(t.tRAS, t.tRCD + bursts * self.column_cycles()) + t.tRP

    def refresh_factor(self) -> float:
        """Time stretch from all-bank refresh: tREFI / (tREFI - tRFC)."""
        t = self.timing
        return t.tREFI / (t.tREFI - t.tRFC)

    def bank_gemv_cycles(self, matrix_bytes: float) -> int:
        """One bank alone (single-bank mode): rows one after another, ACT -> COMPs -> PRE, no refresh."""
        t = self.timing
        rows = math.ceil(matrix_bytes / self.row_bytes)
        last = math.ceil((matrix_bytes - (rows - 1) * self.row_bytes) / self.column_bytes)
        full = (rows - 1) * (max(t.tRAS, t.tRCD + self.bursts_per_row * self.column_cycles()) + t.tRP)
        return full + max(t.tRAS, t.tRCD + last * self.column_cycles()) + t.tRP + t.CL

    def channel_gemv(self, matrix_bytes: float, vector_bytes: float, output_bytes: float) -> GemvTime:
        """Cycles of one GEMV whose matrix lies spread over all banks of one channel (refresh included)."""
        rows = math.ceil(matrix_bytes / self.row_bytes)
        rounds = math.ceil(rows / self.banks)
        last_banks = rows - (rounds - 1) * self.banks
        compute = (rounds - 1) * self.round_cycles() + self.round_cycles(banks=last_banks) if rounds else 0
        # GWRITE in, READRES out over the channel's own bus; CL until the first result returns
        io = (vector_bytes + output_bytes) / self.channel_bytes_per_cycle + self.timing.CL
        return GemvTime(compute * self.refresh_factor(), io * self.refresh_factor(), rows)

    def internal_bytes_per_cycle(self) -> float:
        """Peak in-bank read rate of the whole device: every bank of every channel, one column per t_col."""
        return self.channels * self.banks * self.column_bytes / self.column_cycles()

    # ---- engine behaviour ----------------------------------------------------------------------
    def peak_per_cycle(self, einsum: Einsum) -> float:
        """channels x banks x multipliers MACs per cycle for contractions; nothing else runs in the banks."""
        return float(self.peak_macs_per_cycle()) if einsum.op == "mac" else 0.0

    def peak_macs_per_cycle(self) -> float:
        """Every multiplier of every bank."""
        return float(self.channels * self.banks * self.multipliers_per_bank)

    def level_references(self) -> tuple[LevelReference, ...]:
        """`memory`: the off-chip level whose banks compute."""
        return (LevelReference(("memory",), self.memory, off_chip=True),)

    def level_ports(self, level: MemoryLevel, clock_hz: float) -> Ports:
        """The banks read and write their own level at the in-bank rate (or its ports, if faster); other levels
        through their own ports."""
        if level.name == self.memory:
            internal = self.internal_bytes_per_cycle() * clock_hz
            return Ports(max(level.ports.read_bytes_per_s, internal), max(level.ports.write_bytes_per_s, internal),
                         shared=level.ports.shared)
        return level.ports

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Repeated GEMVs: every (batch, input vector) pair streams its matrix through the banks once."""
        return pim_cost(einsum, workload, arch, self)

    def area_mm2(self, node_nm: float) -> float:
        """Per bank: the multipliers, an adder tree of (multipliers - 1) adders and an accumulator."""
        dtype = dtype_of_bits(self.operand_bits)
        per_bank = (self.multipliers_per_bank * dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
                    + (self.multipliers_per_bank - 1) * add_area_mm2(dtype, node_nm=node_nm))
        return self.channels * self.banks * per_bank


@dataclass(frozen=True)
class GemvTime:
    """Device cycles of GEMVs on one channel: in-bank compute, bus I/O (GWRITE + READRES), rows read."""

    compute_cycles: float
    io_cycles: float
    rows: int

    @property
    def cycles(self) -> float:
        """Compute, then I/O (the vector must arrive before COMPs start; results leave after)."""
        return self.compute_cycles + self.io_cycles


@dataclass(frozen=True)
class GemvShape:
    """A contraction as `count` GEMVs of an n x k matrix, each applied to `vectors` input vectors."""

    count: int
    vectors: int
    n: int
    k: int
    matrix_tensor: str
    vector_tensor: str
    matrix_bits: int
    vector_bits: int
    output_bits: int


def gemv_shape(einsum: Einsum, workload: Workload) -> GemvShape:
    """The GEMV view of a contraction: the weight-like operand (N x K per batch element) is the matrix."""
    view = gemm_view(einsum, workload)
    return GemvShape(view.batch, view.m, view.n, view.k, view.weight.tensor, view.streamed.tensor,
                     view.weight_bits, view.streamed_bits, workload.tensor(einsum.output.tensor).bits)


def _channels_per_gemv(engine: PimEngine, shape: GemvShape) -> int:
    """Channels one GEMV's matrix is split over: channels // count with fewer GEMVs than channels, else one."""
    return max(1, engine.channels // max(shape.count, 1))


def gemv_batch_cycles(engine: PimEngine, shape: GemvShape) -> GemvTime:
    """Device cycles (compute, io) and rows of all GEMVs of `shape` on one channel, dealt round-robin over them.

    With fewer GEMVs than channels each matrix is split over channels // count channels; otherwise each
    channel runs ceil(count / channels) GEMVs one after another. Every input vector repeats the GEMV.
    """
    split = _channels_per_gemv(engine, shape)
    per_channel = math.ceil(shape.count / engine.channels)
    matrix_bytes = math.ceil(shape.n / split) * shape.k * shape.matrix_bits / 8
    one = engine.channel_gemv(matrix_bytes, shape.k * shape.vector_bits / 8,
                              math.ceil(shape.n / split) * shape.output_bits / 8)
    repeats = per_channel * shape.vectors
    return GemvTime(repeats * one.compute_cycles, repeats * one.io_cycles, repeats * one.rows)


def pim_energy_j(engine: PimEngine, rows_opened: float, bursts_read: float, macs: float, io_bits: float,
                 node_nm: float) -> dict[tuple[str, str], float]:
    """Energy by action: ACT/PRE per row opened, in-bank column reads, MACs, and external I/O bits."""
    p, t = engine.power, engine.timing
    act = p.vdd * (p.idd0 * (t.tRAS + t.tRP) - (p.idd3n * t.tRAS + p.idd2n * t.tRP)) * MA_NS
    # one burst holds the channel's read current for BL/2 cycles (double data rate) at tCK = 1 ns
    burst = p.vdd * (p.idd4r - p.idd3n) * (engine.burst_length / 2) * MA_NS
    dtype = dtype_of_bits(engine.operand_bits)
    return {("pim_dram", "activate"): rows_opened * act, ("pim_dram", "column_read"): bursts_read * burst,
            ("pim_mac", "compute"): macs * dtype_mac_energy_j(dtype, dtype, node_nm=node_nm),
            ("pim_io", "transfer"): io_bits * dram_energy_j_per_bit("HBM2")}


def background_energy_j(engine: PimEngine, shape: GemvShape, gemvs: GemvTime, clock_hz: float) -> float:
    """The standby energy of the channels that run the GEMVs, for as long as they run them (TN-41-01: the
    activation and read energies above are what IDD0 and IDD4R add to it): active standby (IDD3N, a row open in
    every bank) while the banks compute, precharge standby (IDD2N) while the vector comes in and the results go
    out. A run that takes longer, on fewer channels, pays it for longer."""
    channels = min(engine.channels, shape.count * _channels_per_gemv(engine, shape))
    p = engine.power
    milliamp_seconds = (p.idd3n * gemvs.compute_cycles + p.idd2n * gemvs.io_cycles) / clock_hz
    return channels * p.vdd * milliamp_seconds * 1e-3


def pim_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: PimEngine) -> Cost:
    """Cost of a contraction run as repeated GEMVs in the banks of `engine.memory`."""
    shape = gemv_shape(einsum, workload)
    gemvs = gemv_batch_cycles(engine, shape)
    compute, io = gemvs.compute_cycles, gemvs.io_cycles
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    level = arch.level(engine.memory)
    matrix_bytes = shape.count * shape.n * shape.k * shape.matrix_bits / 8
    passes = shape.vectors
    rows = passes * shape.count * math.ceil(shape.n * shape.k * shape.matrix_bits / 8 / engine.row_bytes)
    bursts = passes * math.ceil(matrix_bytes / engine.column_bytes)
    io_bits = passes * shape.count * (shape.k * shape.vector_bits + shape.n * shape.output_bits)
    energy = pim_energy_j(engine, rows, bursts, einsum.macs, io_bits, arch.technology_nm)
    energy[("pim_dram", "background")] = background_energy_j(engine, shape, gemvs, arch.engine_clock_hz(engine))
    accesses = {(level.name, shape.matrix_tensor, "read"): float(passes * shape.count * shape.n * shape.k),
                (level.name, shape.vector_tensor, "read"): float(passes * shape.count * shape.k),
                (level.name, einsum.output.tensor, "write"): float(passes * shape.count * shape.n)}
    compute_arch = compute * clock_ratio
    io_arch = io * clock_ratio
    total = compute_arch + io_arch
    return Cost(macs=einsum.macs, compute_cycles=compute_arch, stall_cycles=io_arch, accesses=accesses,
                energy_j=energy,
                utilization=einsum.macs / (engine.peak_macs_per_cycle() * total / clock_ratio) if total else 0.0)
