"""GPUs (NVIDIA A100, H100): a kernel-level model of tiled GEMMs on streaming multiprocessors, and of the
elementwise kernels around them.

A contraction runs as one GEMM kernel in its GEMM view (M rows of the streamed operand A, N columns of the
weight-like operand B, K reduced, a batch of such GEMMs; `loopnest.gemm_view`). The kernel's choices are those of
cuBLAS/CUTLASS kernels: a CTA tile BM x BN x BK with a software pipeline of `stages` shared-memory buffers and
`warps` warps, and a split of K into S slices (split-K). The mapper picks them (engines/gpu_mapspace.py); the
model below prices one choice, vectorized over many.

Occupancy. A CTA holds `stages` x (BM x a + BN x b) x BK bits of shared memory for its operand pipeline and
BM x BN accumulators (32-bit) in registers, spread over its warps x 32 threads with `base_registers` more per
thread (addresses, loop counters, operand fragments). CTAs resident per SM:

    occupancy = min(max_ctas, floor(smem_per_sm / smem_per_cta), floor(registers_per_sm / registers_per_cta),
                    floor(max_threads / threads_per_cta)),

and 0 (the tile does not run) when a CTA needs more shared memory than one CTA may allocate or more than 255
registers per thread (NVIDIA CUDA C++ Programming Guide, "Compute Capabilities", Table 21).

Waves. The grid has T = batch x ceil(M / BM) x ceil(N / BN) x S CTAs; the SMs run SMs x occupancy of them at a
time, so the kernel takes ceil(T / (SMs x occupancy)) waves, the last one possibly partial (wave quantization:
NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background"). The CTAs resident on an SM share its
tensor cores, so a full wave takes occupancy x the time of one CTA alone, and a CTA of the partial last wave that
has its SM to itself takes one: the busiest SM works through ceil(T / SMs) CTA-times, whatever the occupancy (a
higher occupancy, which only adds resident CTAs, can then never slow the main loop):

    compute cycles = ceil(T / SMs) x BM x BN x ceil(ceil(K / S) / BK) x BK / (MACs per SM per cycle x eff),

with the datasheet's dense MACs per SM per cycle for the operands' width (tensor cores; wider operands than any
tensor-core width run on the CUDA cores at their FMA rate) and `tensor_efficiency` eff, the fraction of that
peak a tuned GEMM main loop sustains (cited per config: clocks under load and issue overheads). A kernel written
with an older tensor-core instruction family than the SM's native one (`instruction`: FlashAttention-2 issues
Ampere's warp-level mma.sync on every GPU, Hopper's native one is the warpgroup wgmma) issues MACs at that family's
fraction of the native rate (`instruction_rates`, cited per config), so its main loop sustains eff x that fraction.

Memory. Each CTA streams its A panel (BM x K/S) and B panel (K/S x BN) through shared memory from L2: over the
grid the cache level serves A x ceil(N / BN) + B x ceil(M / BM) / multicast elements (a cluster of `multicast`
CTAs along M shares one load of its B panel, Hopper's TMA multicast) and takes the BM x BN outputs (split-K: S
fp32 partial tiles written and read back). Device memory (HBM) serves each operand once when A and B fit the
cache together (L2 reuse); otherwise the grid runs in near-square waves of gm x gn CTAs
(gm = round(sqrt(SMs x occupancy)), gn = ceil(SMs x occupancy / gm)), and an A panel is fetched again for every
block of gn tile columns, a B panel for every block of gm tile rows (swizzled rasterization): A is read
ceil(ceil(N / BN) / gn) times, B ceil(ceil(M / BM) / gm) times. A block shares a panel only while the cache holds
what its CTAs have in flight, `stages` K-slices of each panel: (gm x BM x a + gn x BN x b) x BK x stages bits; a
cache smaller than that shrinks gm and gn in proportion until it fits (one CTA at worst: every CTA fetches its own
panels, A ceil(N / BN) and B ceil(M / BM) times). With a real L2 (tens of MiB) this never binds. Every level
moves its bytes at its achievable bandwidth, the level's peak (its ports) times `bandwidth_efficiency` for that
level (cited microbenchmarks).

A kernel then takes max(compute, every level's transfer time) plus what its ends expose, charged as fill/drain:
the gap between back-to-back kernels on the GPU timeline (`launch_overhead` when the host launches each kernel,
`graph_launch_overhead` with `launch: graph`, kernels replayed from a CUDA graph), a GEMM kernel's fixed set-up
and teardown that the CTA tiles do not describe (`gemm_setup`: barriers and descriptors, retiring the grid;
measured per config), one `memory_latency` before the first wave's operands arrive, and the output tiles of the
last CTA-time (T - (ceil(T / SMs) - 1) x SMs CTAs, at most one per SM) draining at the achievable bandwidth of
the output's outermost level after its last MAC (earlier epilogues overlap other CTAs' main loops, the more so
the higher the occupancy). A GEMV (M = 1) or a KV-cache read is thus bandwidth-bound at the achievable HBM
bandwidth.

Maps and reductions (norms, softmax, residual adds, cache writes) run on the CUDA cores: per iteration point one
lane instruction per operator (an add of a product is one fused multiply-add) and the reduction's step, on
`cuda_ops_per_sm` lanes per SM at the widest tensor's width, and one SFU instruction per special function (exp,
log, rsqrt, division) on `special_ops_per_sm` SFUs; the two pipes issue side by side, so the slower sets the pace.
They run against their compulsory traffic at the achievable bandwidths. With `fuse_elementwise: true` (the
default: TensorRT-LLM and LMDeploy fold them into neighbouring GEMM kernels' prologues and epilogues) they pay no
launch of their own; with `false` each is a kernel; with `chains` a chain of them feeding one another is one kernel,
launched by the one whose inputs come from GEMMs or the graph's inputs (torch.compile's inductor: pointwise and
reduction ops fused into Triton kernels between cuBLAS calls, e.g. a residual add with the next RMSNorm).

Energy comes from the board's power. A config that measured it gives `mac_energy`: the energy of a dense MAC at one
operand width, measured at the boost clock (`dvfs.boost_clock`) as board power over L2-resident kernels less the
board's power with no kernel and the L2's share, over their MAC rate; other tensor widths spend the same power per
tensor core, so a MAC costs that energy x the rate at the measured width / the rate at its own (an FP8 MAC about
half an FP16 one on Hopper: measured all-in, 1.03 pJ vs 1.92). Without one, the TDP stands in: at its sustained
tensor peak a GPU draws its TDP, so a MAC costs (TDP - static power) / (SMs x MACs per SM per cycle x clock x eff).
A CUDA-core instruction costs (TDP - static power - the clocks' power, below) / (SMs x lanes x clock) at the width it
issues at (a fused multiply-add is one instruction; an SFU instruction is charged as one, for want of a cited SFU
figure), so that lanes issuing at their peak draw the TDP. Both use the SMs and clock the TDP is drawn at
(`tdp_at`, the datasheet's: a design with fewer SMs or a lower clock spends the same per operation, not more);
static power is charged for the whole kernel time, and every memory level's bits at its per-bit energies (pinned
in the configs).

Power limit. A board never draws more than its TDP for long: NVIDIA's software power cap lowers the SM clock, and
with it the voltage, until it does (measured on the H100 and H200: a long fp16 GEMM on random operands holds 700 W
at 1,305-1,410 MHz, where the first 60-80 ms after idle ran at 1,980 MHz; validation/gpu_measured_h100.json, `power`
and `transient`). A config with `dvfs` models it per kernel, the sustained state of a board kept busy:
- at SM clock f, r = f / boost_clock: on-chip energies (MACs, CUDA-core instructions, on-chip levels' bits) are
  their boost-clock figures x r^2 (switching energy C V^2, with the supply voltage scaled about in proportion to
  the clock over a DVFS range: Weste & Harris, CMOS VLSI Design, 4th ed., Sec. 5.2, "Dynamic Power"); off-chip
  levels (HBM) keep theirs (their own clock and voltage); the clocks draw `clocked_power` x r^3 with no kernel
  running, on top of static power;
- time: the tensor main loop keeps the rate `tensor_efficiency` sets (a ceiling the clock does not bind: 768
  TFLOPS at 1,980 MHz) until `clock_bound_efficiency` x the tensor peak at f falls below it, and then runs at
  that; other on-chip work (CUDA cores, L2 transfers, the first-load latency) runs at its configured rate down to
  the configured clock and slows in proportion below it; HBM transfers, launch gaps and set-up keep their time;
- the kernel runs at the highest clock up to the boost clock at which static power + clocks' power + its energy
  over its whole time (launch and set-up included: the limiter averages over milliseconds) stays within the TDP;
  a kernel under the limit (a GEMV streaming HBM) runs at the boost clock and pays its energies there.
Kernels in a mixed sequence are each held to the limit on their own (a high-power kernel does not borrow from a
low-power neighbour, as the limiter's average lets it), and the board never starts cold: the first tens of
milliseconds after idle, when the board runs a heavy kernel above its TDP at the boost clock, are not modelled
(drop `dvfs` for that state: every kernel at the boost clock, no limit). A config without `dvfs` has no limit: its
TDP-derived MAC energy draws exactly the TDP at the sustained peak by construction, so it cannot say by how much a
kernel would exceed it (its tensor efficiency, calibrated on a sustained GEMM, holds whatever clock that ran at).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from accel_sim.engines.base import EngineBase, width_weighted_mac_peak
from accel_sim.engines.gpu_kernel import MAX_REGISTERS_PER_THREAD, elementwise_kernel_cost, gemm_problem
from accel_sim.engines.gpu_mapspace import GpuMapspace
from accel_sim.spec.arch import LevelReference
from accel_sim.spec.fields import (SPEC_CONFIG, Bytes, Fraction, Hertz, Joules, PositiveInt, Seconds,
                                   SquareMillimetres, Watts, located)
from accel_sim.spec.mapspace import MapperSpec
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


def _pairs(value: object, what: str, key_type: type) -> object:
    """A YAML mapping {key: number} as a sorted tuple of pairs (hashable: engines key the mapper's cache)."""
    if isinstance(value, Mapping):
        out = []
        for key, rate in value.items():
            if key_type is int and isinstance(key, str) and key.strip().isdigit():
                key = int(key)  # YAML mapping keys arrive as strings
            if key_type is int and (isinstance(key, bool) or not isinstance(key, int) or key <= 0):
                raise ValueError(f"{what}: key {key!r} is not an operand width in bits. Fix: use positive integers "
                                 f"such as 8, 16, 32")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (rate > 0 and math.isfinite(rate)):
                raise ValueError(f"{what}[{key}] = {rate!r} is not a positive number. Fix: give a positive rate")
            out.append((key_type(key), float(rate)))
        return tuple(sorted(out))
    return value


class TdpPoint(BaseModel):
    """The SM count and clock at which the board's TDP is its sustained tensor-peak draw (the datasheet's)."""

    model_config = SPEC_CONFIG

    sms: PositiveInt
    clock_hz: Hertz = Field(alias="clock")


class MacEnergyPoint(BaseModel):
    """A measured energy per dense tensor-core MAC at one operand width (module docstring, "Power limit")."""

    model_config = SPEC_CONFIG

    bits: PositiveInt
    energy_j: Joules = Field(alias="energy")


class Dvfs(BaseModel):
    """How the board trades SM clock for power under its limit (module docstring, "Power limit")."""

    model_config = SPEC_CONFIG

    # the clock kernels run at below the limit, where `mac_energy` and the on-chip levels' per-bit energies hold
    boost_clock_hz: Hertz = Field(alias="boost_clock")
    # board power with the SMs clocked at the boost clock and no kernel running, less `static_power`
    clocked_power_w: Watts = Field(alias="clocked_power")
    # the fraction of the tensor peak at the running clock a main loop sustains once the clock, not the
    # `tensor_efficiency` ceiling, sets its pace
    clock_bound_efficiency: Fraction


class CtaTile(BaseModel):
    """One CUTLASS-style threadblock (CTA) tile: BM x BN outputs, BK of K per main-loop step, `stages` shared-memory
    buffers in the operand pipeline, `warps` warps."""

    model_config = SPEC_CONFIG

    m: PositiveInt
    n: PositiveInt
    k: PositiveInt
    stages: PositiveInt = 3
    warps: PositiveInt = 4

    @property
    def label(self) -> str:
        """'128x256x64/4' (tile and stages), as CUTLASS names its kernels."""
        return f"{self.m}x{self.n}x{self.k}/{self.stages}"


# The threadblock tiles of CUTLASS's generated tensor-op GEMM kernels (python/cutlass_library/generator.py,
# GenerateSM80_TensorOp_16816 and GenerateSM90_TensorOp_16b_WGMMA_gemm: 256x128, 128x256, 128x128, 256x64, 64x256,
# 128x64, 64x128, 64x64 with BK 32 or 64 and 3 to 10 stages); BK is in elements of a 16-bit operand. Skinny GEMMs
# (decode: M = batch) run on tiles of 16 or 32 rows, the M extent of one mma.sync m16n8k16 (PTX ISA) or, on Hopper,
# the N extent of a wgmma with A and B swapped, as the split-K GEMV kernels of cuBLAS and TensorRT-LLM do.
DEFAULT_TILES: tuple[CtaTile, ...] = tuple(CtaTile(m=m, n=n, k=k, stages=s, warps=w) for m, n, k, s, w in (
    (256, 128, 32, 3, 8), (128, 256, 32, 3, 8), (256, 128, 64, 3, 8), (128, 256, 64, 3, 8), (128, 256, 64, 4, 8),
    (128, 128, 32, 4, 4), (128, 128, 64, 3, 4), (128, 128, 64, 4, 4), (256, 64, 32, 4, 4), (64, 256, 32, 4, 4),
    (128, 64, 32, 6, 4), (64, 128, 32, 6, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 32, 10, 4),
    (64, 64, 64, 5, 4), (32, 128, 64, 4, 4), (32, 256, 64, 4, 4), (16, 128, 64, 4, 4), (16, 256, 64, 4, 4)))
DEFAULT_SPLITS: tuple[int, ...] = (1, 2, 4, 8, 16)
# A kernel launch takes microseconds (the shipped configs' 4 us is eager PyTorch's gap on A100 and H100; a graph
# replay is shorter): a second is 250,000 times that, so a longer overhead is a unit mistake, not a GPU
MAX_LAUNCH_OVERHEAD_S = 1.0


class GpuEngine(EngineBase):
    """A GPU's streaming multiprocessors: tensor cores and CUDA cores, registers and shared memory per SM."""

    kind: Literal["gpu"]
    sms: PositiveInt
    # operand width in bits -> dense MACs per SM per cycle of the tensor cores (a width runs on the narrowest entry
    # at least as wide as its operands); YAML gives a mapping, e.g. {8: 2048, 16: 1024}
    tensor_macs_per_sm: tuple[tuple[int, float], ...]
    # operand width in bits -> FMA lanes per SM per cycle of the CUDA cores (maps, reductions, wide contractions)
    cuda_ops_per_sm: tuple[tuple[int, float], ...]
    # special-function results per SM per cycle (exp, log, rsqrt, reciprocal: the SFUs)
    special_ops_per_sm: float = Field(16.0, gt=0)
    tensor_efficiency: Fraction = 1.0   # sustained fraction of the tensor peak in a tuned GEMM main loop
    # tensor-core instruction family -> the fraction of `tensor_macs_per_sm` it can issue (module docstring); YAML
    # gives a mapping, e.g. {wgmma: 1.0, mma.sync: 0.667}
    instruction_rates: tuple[tuple[str, float], ...] = ()
    instruction: str = ""                # the family the kernels issue ("" : the native one, at the full rate)
    # memory level name -> achievable fraction of its peak bandwidth; levels not listed run at their peak
    bandwidth_efficiency: tuple[tuple[str, float], ...] = ()
    registers_per_sm_bytes: Bytes = Field(alias="registers_per_sm")
    smem_per_sm_bytes: Bytes = Field(alias="shared_memory_per_sm")
    smem_per_cta_bytes: Bytes = Field(alias="shared_memory_per_cta")
    max_ctas_per_sm: PositiveInt = 32
    max_threads_per_sm: PositiveInt = 2048
    base_registers: int = Field(32, ge=0)   # registers per thread besides accumulators (an assumption; see docs)
    multicast: PositiveInt = 1              # CTAs of a cluster along M sharing one load of a B panel
    # the gap between back-to-back kernels: each launched by the host (eager) or replayed from a CUDA graph
    launch: Literal["eager", "graph"] = "eager"
    launch_overhead_s: Seconds = Field(0.0, alias="launch_overhead")
    graph_launch_overhead_s: Seconds | None = Field(None, alias="graph_launch_overhead")
    # a GEMM kernel's fixed start and finish beyond the CTA-tile model (module docstring; measured on cuBLAS's)
    gemm_setup_s: Seconds = Field(0.0, alias="gemm_setup")
    memory_latency_cycles: int = Field(0, ge=0, alias="memory_latency")  # device-memory load latency, SM cycles
    # maps and reductions: folded into neighbouring GEMM kernels (true), one kernel each (false), or one kernel per
    # chain of them feeding one another ("chains": torch.compile's inductor between cuBLAS calls)
    fuse_elementwise: bool | Literal["chains"] = True
    tdp_w: Watts = Field(alias="tdp")
    static_power_w: Watts = Field(0.0, alias="static_power")
    # where TDP was drawn: the energy of a MAC is set there, so a design with fewer SMs or a lower clock does not
    # spend more per MAC (None: the configured SMs and clock)
    tdp_at: TdpPoint | None = None
    # measured energy of a dense MAC at one width, at the boost clock where `dvfs` is given (module docstring,
    # "Energy"); None: derived from the TDP at the sustained tensor peak
    mac_energy: MacEnergyPoint | None = None
    # the power limiter's clock range (module docstring, "Power limit"); None: no limit
    dvfs: Dvfs | None = None
    datapath_area_mm2: SquareMillimetres = Field(alias="area")  # the die less the memory levels listed in the arch
    tiles: tuple[CtaTile, ...] = DEFAULT_TILES
    splits: tuple[PositiveInt, ...] = DEFAULT_SPLITS
    mapper: MapperSpec = MapperSpec()

    @field_validator("tensor_macs_per_sm", "cuda_ops_per_sm", mode="before")
    @classmethod
    def _rates(cls, value: object, info: Any) -> object:
        return _pairs(value, info.field_name, int)

    @field_validator("bandwidth_efficiency", "instruction_rates", mode="before")
    @classmethod
    def _efficiencies(cls, value: object, info: Any) -> object:
        pairs = _pairs(value, info.field_name, str)
        for key, fraction in pairs if isinstance(pairs, tuple) else ():
            if not 0 < fraction <= 1:
                raise ValueError(f"{info.field_name}[{key}] = {fraction} must lie in (0, 1]. Fix: give the "
                                 f"achievable fraction of the peak, e.g. 0.9")
        return pairs

    @field_validator("launch_overhead_s", "graph_launch_overhead_s", "gemm_setup_s", mode="after")
    @classmethod
    def _launch_takes_microseconds(cls, seconds: float | None, info: Any) -> float | None:
        if seconds is not None and seconds > MAX_LAUNCH_OVERHEAD_S:
            key = cls.model_fields[info.field_name].alias
            raise ValueError(f"{key} of {seconds:g} s is longer than any kernel launch (microseconds; at "
                             f"most {MAX_LAUNCH_OVERHEAD_S:g} s here). Fix: give the gap between back-to-back "
                             f"kernels with its unit, e.g. '4 us'")
        return seconds

    @field_validator("fuse_elementwise", mode="before")
    @classmethod
    def _fusion_mode(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() == "chains":
            return "chains"
        if isinstance(value, str) and value.strip().lower() not in {"true", "false", "yes", "no", "on", "off", "1",
                                                                     "0"}:
            raise ValueError(f"fuse_elementwise is {value!r}. Fix: give true (maps and reductions folded into the "
                             f"GEMM kernels), false (one kernel each) or chains (one kernel per chain, as "
                             f"torch.compile's inductor makes)")
        return value

    @field_validator("base_registers", mode="after")
    @classmethod
    def _room_for_accumulators(cls, registers: int) -> int:
        if registers >= MAX_REGISTERS_PER_THREAD:
            raise ValueError(f"base_registers ({registers}) leaves no room for accumulators: a thread holds at most "
                             f"{MAX_REGISTERS_PER_THREAD} registers (CUDA C++ Programming Guide, 'Compute "
                             f"Capabilities'). Fix: give the registers a thread uses besides its accumulators, "
                             f"e.g. 32")
        return registers

    @model_validator(mode="after")
    def _power_and_splits(self) -> GpuEngine:
        if not (self.tdp_w > 0 and math.isfinite(self.tdp_w)):
            raise ValueError(f"tdp must be a positive power (got {self.tdp_w}). Fix: give the board power, e.g. 700 W")
        if self.static_power_w >= self.tdp_w:
            raise ValueError(f"static_power ({self.static_power_w:g} W) must be below tdp ({self.tdp_w:g} W). Fix: "
                             f"give the idle power, e.g. 70 W")
        if not self.tensor_macs_per_sm or not self.cuda_ops_per_sm:
            raise ValueError("tensor_macs_per_sm and cuda_ops_per_sm need at least one width each. Fix: give e.g. "
                             "{16: 1024} and {16: 256, 32: 64}")
        if self.instruction and self.instruction not in dict(self.instruction_rates):
            raise ValueError(f"instruction {self.instruction!r} is not listed in instruction_rates "
                             f"({sorted(dict(self.instruction_rates))}). Fix: list its rate or leave instruction unset")
        if self.smem_per_cta_bytes > self.smem_per_sm_bytes:
            raise located(f"shared_memory_per_cta ({self.smem_per_cta_bytes:,.0f} B) exceeds shared_memory_per_sm "
                          f"({self.smem_per_sm_bytes:,.0f} B): a CTA runs on one SM and takes its shared memory "
                          f"there. Fix: give the most one CTA may take (227 KiB on the H100, 163 KiB on the A100)",
                          "shared_memory_per_cta")
        if self.launch == "graph" and self.graph_launch_overhead_s is None:
            raise located("launch is 'graph' but the engine gives no graph_launch_overhead, the gap between kernels "
                          "replayed from a CUDA graph. Fix: give it with its unit (about 1 us on an H100: "
                          "validation/gpu_measure.py --launch measures it), or set launch: eager", "launch")
        if self.mac_energy and not self.mac_rate(self.mac_energy.bits)[1]:
            raise located(f"mac_energy is given at {self.mac_energy.bits} bits, a width the tensor cores do not run "
                          f"(tensor_macs_per_sm lists {[bits for bits, _ in self.tensor_macs_per_sm]}). Fix: give "
                          f"the energy at a listed width, e.g. bits: 16", "mac_energy", "bits")
        if self.dvfs and self.mac_energy is None:
            raise located("dvfs is given without a measured mac_energy: the power limit trades clock for the energy "
                          "of each operation, and the TDP-derived stand-in draws the TDP by construction. Fix: give "
                          "mac_energy at the boost clock (validation/gpu_measure.py --power-paths measures it), or "
                          "remove dvfs", "dvfs")
        if self.dvfs and self.static_power_w + self.dvfs.clocked_power_w >= self.tdp_w:
            raise located(f"static_power + dvfs.clocked_power ({self.static_power_w:g} + "
                          f"{self.dvfs.clocked_power_w:g} W) reach the tdp ({self.tdp_w:g} W): no kernel could run "
                          f"at the boost clock. Fix: give the board's idle power with the SMs clocked, less its "
                          f"static power (about 50 W on an H100)", "dvfs", "clocked_power")
        if 1 not in self.splits:
            raise ValueError("splits must include 1 (no split-K). Fix: e.g. [1, 2, 4, 8]")
        if not self.tiles:
            raise ValueError("tiles is empty. Fix: list CTA tiles such as {m: 128, n: 128, k: 32, stages: 4}")
        if self.mapper.pin:
            # the GPU mapper chooses CTA tiles and split-K, not loop factors: a pin would be silently ignored
            raise located("a GPU engine's mapper takes no pins: its choices are the CTA tile and the split of K. "
                          "Fix: remove mapper.pin, and narrow the choices with 'tiles:' and 'splits:' instead",
                          "mapper", "pin")
        return self

    # --- rates -----------------------------------------------------------------------------------------------
    def mac_rate(self, operand_bits: int) -> tuple[float, bool]:
        """(MACs per SM per cycle, on tensor cores?) for operands `operand_bits` wide: the narrowest tensor-core
        width that holds them, else the narrowest CUDA-core width (else the widest)."""
        for bits, rate in self.tensor_macs_per_sm:
            if bits >= operand_bits:
                return rate, True
        return self.lane_rate(operand_bits), False

    def lane_rate(self, bits: int) -> float:
        """CUDA-core lanes per SM per cycle at `bits` (the narrowest width that holds them, else the widest)."""
        for width, rate in self.cuda_ops_per_sm:
            if width >= bits:
                return rate
        return self.cuda_ops_per_sm[-1][1]

    def kernel_gap_s(self) -> float:
        """Seconds between back-to-back kernels: the eager launch overhead, or the CUDA graph replay's gap."""
        if self.launch == "graph" and self.graph_launch_overhead_s is not None:
            return self.graph_launch_overhead_s
        return self.launch_overhead_s

    def launches_kernel(self, einsum: Einsum, workload: Workload) -> bool:
        """Whether a map or reduction pays a kernel launch of its own (`fuse_elementwise`): with "chains", unless an
        input comes from another map or reduction, whose kernel it joins."""
        if self.fuse_elementwise == "chains":
            return not any(source.op != "mac" for access in einsum.inputs if access.tensor != einsum.output.tensor
                           for source in workload.source_einsums.get(access.tensor, ()))
        return not self.fuse_elementwise

    def tensor_sustained(self) -> float:
        """The fraction of the tensor peak a main loop sustains: `tensor_efficiency` times the issued instruction
        family's fraction of the native rate (module docstring)."""
        return self.tensor_efficiency * dict(self.instruction_rates).get(self.instruction, 1.0)

    def level_references(self) -> tuple[LevelReference, ...]:
        """The levels `bandwidth_efficiency` lists (a misspelt one would leave its level at its peak)."""
        return tuple(LevelReference(("bandwidth_efficiency", name), name) for name, _ in self.bandwidth_efficiency)

    def level_efficiency(self, level: str) -> float:
        """Achievable fraction of a level's peak bandwidth (1.0 when the config lists none)."""
        return dict(self.bandwidth_efficiency).get(level, 1.0)

    def _tdp_sms_and_clock(self, clock_hz: float) -> tuple[int, float]:
        """The SMs and clock at which the TDP is drawn: `tdp_at`, else the configured ones."""
        return (self.tdp_at.sms, self.tdp_at.clock_hz) if self.tdp_at else (self.sms, clock_hz)

    def mac_energy_j(self, operand_bits: int, clock_hz: float) -> float:
        """Joules per MAC: the measured `mac_energy` carried to this width at equal power per tensor core, else the
        dynamic power at the sustained peak (TDP less static) over that MAC rate, both at the TDP's SMs and clock
        (`tdp_at`)."""
        rate, tensor = self.mac_rate(operand_bits)
        if self.mac_energy and tensor:
            return self.mac_energy.energy_j * self.mac_rate(self.mac_energy.bits)[0] / rate
        sms, clock = self._tdp_sms_and_clock(clock_hz)
        sustained = sms * rate * clock * (self.tensor_efficiency if tensor else 1.0)
        return (self.tdp_w - self.static_power_w) / sustained

    def op_energy_j(self, bits: int, clock_hz: float) -> float:
        """Joules per CUDA-core instruction: the dynamic power (TDP less static power and, with `dvfs`, the clocks'
        own) over the lanes' peak rate at the TDP's SMs and clock."""
        sms, clock = self._tdp_sms_and_clock(clock_hz)
        dynamic = self.tdp_w - self.static_power_w - (self.dvfs.clocked_power_w if self.dvfs else 0.0)
        return dynamic / (sms * self.lane_rate(bits) * clock)

    # --- the engine contract -----------------------------------------------------------------------------------
    def peak_per_cycle(self, einsum: Einsum) -> float:
        """The datasheet's fastest dense tensor-core rate for a contraction (the einsum does not carry its operands'
        widths: roof_per_cycle reads them from the workload); for maps and reductions the fastest CUDA-core rate, two
        operator applications per lane per cycle (a fused multiply-add)."""
        if einsum.op == "mac":
            return self.peak_macs_per_cycle()
        return 2 * self.sms * max(rate for _, rate in self.cuda_ops_per_sm)

    def peak_macs_per_cycle(self) -> float:
        """The tensor cores' fastest dense rate (the narrowest width they take) over every SM."""
        return self.sms * max(rate for _, rate in self.tensor_macs_per_sm)

    def roof_per_cycle(self, einsum: Einsum, workload: Workload) -> float:
        """A contraction's dense rate at its operands' width (an fp16 GEMM's roof is the fp16 tensor rate, half the
        int8 one); other operators as peak_per_cycle."""
        if einsum.op != "mac":
            return self.peak_per_cycle(einsum)
        return self.sms * self.mac_rate(gemm_problem(einsum, workload).operand_bits)[0]

    def mac_peak_on(self, einsums: Sequence[Einsum], workload: Workload) -> float:
        """The dense rate at the contractions' widths, weighted by their MACs (the rate at which they would all run
        in the time their MACs take at full use): peak_macs_per_cycle when there are none."""
        return width_weighted_mac_peak(self, einsums, workload)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """A contraction as the fastest of the CTA tiles and splits (what cuBLAS's heuristic aims at); a map or
        reduction as a CUDA-core kernel (module docstring)."""
        if einsum.op != "mac":
            return elementwise_kernel_cost(einsum, workload, arch, self)
        return _fastest(self.mapspace(einsum, workload, arch))

    def level_busy_cycles(self, cost: Cost, workload: Workload, arch: Arch) -> dict[str, float]:
        """Cycles each level needs for the bytes `cost` moves there, at the level's achievable bandwidth."""
        return {name: cycles / self.level_efficiency(name)
                for name, cycles in super().level_busy_cycles(cost, workload, arch).items()}

    def register_capacity_bytes(self) -> float:
        """Registers and shared memory of every SM: where a fused kernel keeps an intermediate's tiles (the S and P
        tiles of FlashAttention) between the einsums of a chain."""
        return self.sms * (self.registers_per_sm_bytes + self.smem_per_sm_bytes)

    def resident_cost(self, einsum: Einsum, workload: Workload, arch: Arch, resident: frozenset[str]) -> Cost | None:
        """The einsum inside a fused kernel: the `resident` tensors move through no memory level, and an einsum
        that reads one runs in its producer's kernel, so it pays no launch of its own. None where a contraction
        reads a resident tensor whose tile many CTAs would share (`_shares_tiles`), and where an einsum reduces a
        resident GEMM output across more CTA tiles than one (`_reduces_across_ctas`): no kernel fuses either."""
        producers = workload.source_einsums
        if any(a.tensor in resident and self._reduces_across_ctas(einsum, a.ranks, producers.get(a.tensor, ()))
               for a in einsum.inputs):
            return None
        if einsum.op != "mac":
            cost = elementwise_kernel_cost(einsum, workload, arch, self, resident)
        elif any(a.tensor in resident and self._shares_tiles(einsum, a.ranks) for a in einsum.inputs):
            return None
        else:
            cost = _fastest(GpuMapspace(einsum, workload, arch, self, resident=resident))
        if any(a.tensor in resident for a in einsum.inputs):
            # the fused kernel started (and set up) once, with the einsum that produced the resident tensor
            launch = (self.kernel_gap_s() + (self.gemm_setup_s if einsum.op == "mac" else 0.0)) * arch.clock_hz
            cost = replace(cost, fill_drain_cycles=max(0.0, cost.fill_drain_cycles - launch))
        return cost

    def _shares_tiles(self, einsum: Einsum, operand_ranks: tuple[str, ...]) -> bool:
        """Whether the output ranks that a contraction's operand lacks span more than the widest CTA tile side: the
        CTAs along them would each need the same tile of the operand, which a fused kernel holds once, in the SM
        of the CTA that produced it, so each would recompute its producer's work (no GEMM library fuses that). A
        FlashAttention PV GEMM spans one head's dimension (64 or 128) beyond its probabilities: one CTA; a
        projection reading a normed hidden state spans every output feature (4,096): many."""
        lacking = [rank for rank in einsum.output.ranks if rank not in operand_ranks]
        return math.prod(einsum.sizes[rank] for rank in lacking) > self._widest_tile_side()

    def _reduces_across_ctas(self, einsum: Einsum, operand_ranks: tuple[str, ...],
                             producers: tuple[Einsum, ...]) -> bool:
        """Whether an einsum reduces a GEMM's output over more of the ranks it reduces than the widest CTA tile side:
        the producer's CTAs each hold one tile of those ranks in their own SM, so the sum or maximum would cross
        CTAs, which one kernel cannot do without writing its tiles out. FlashAttention's row maximum spans one key
        block (64 or 128 keys) of its scores: one CTA; a softmax over all 2,048 keys of unfused scores: many."""
        if not any(producer.op == "mac" for producer in producers):
            return False   # maps and reductions are laid out by rows to match their consumer
        reduced = [rank for rank in einsum.reduced_ranks if rank in operand_ranks]
        return math.prod(einsum.sizes[rank] for rank in reduced) > self._widest_tile_side()

    def _widest_tile_side(self) -> int:
        """The longest side (M or N) of any CTA tile the engine may run: the most of a rank one CTA holds."""
        return max(max(tile.m, tile.n) for tile in self.tiles)

    def writes_back_through_caches(self) -> bool:
        """The L2 is a write-back cache (NVIDIA A100/H100 whitepapers, "L2 cache"): a kernel's output that the next
        kernel reads hits there, and still reaches HBM as the next data streams through."""
        return True

    def mapspace(self, einsum: Einsum, workload: Workload, arch: Arch) -> GpuMapspace | None:
        """A contraction's CTA tiles (groups) and split-K factors (engines/gpu_mapspace.py); None otherwise."""
        if einsum.op != "mac":
            return None
        return GpuMapspace(einsum, workload, arch, self)

    def scales_with_node(self) -> bool:
        """No: energy comes from the board's power and area from the config (module docstring)."""
        return False

    def area_mm2(self, node_nm: float) -> float:
        """The die less the memory levels the arch lists (the config gives it: GPUs publish die areas)."""
        return self.datapath_area_mm2


def _fastest(space: GpuMapspace) -> Cost:
    """The cost of the lowest-latency kernel of a (small, enumerated) GPU mapspace; InfeasibleError if none fits."""
    candidates = space.all()
    scores = space.score(candidates)
    values = scores.objective("latency")
    best = int(np.argmin(values))
    if not np.isfinite(values[best]):
        raise space.infeasible(searched=True)
    return space.cost_of(candidates, scores, best)
