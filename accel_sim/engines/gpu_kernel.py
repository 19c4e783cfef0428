"""The GPU kernel model behind `GpuEngine` (engines/gpu.py, whose docstring derives it): tiled GEMM kernels
vectorized over (CTA tile, split-K) candidates, and CUDA-core kernels for maps and reductions."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from accel_sim.engines.costing import level_access_energy
from accel_sim.engines.loopnest import gemm_view
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.folds import fold_count
from accel_sim.spec.cost import Cost
from accel_sim.spec.fields import memory_kind
from accel_sim.spec.mapspace import fitting_objective
from accel_sim.spec.workload import Call

if TYPE_CHECKING:
    from accel_sim.engines.gpu import GpuEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Expr, Workload

ACCUMULATOR_BITS = 32       # tensor cores accumulate fp16/bf16/int8 products in fp32/int32 (CUTLASS default)
MAX_REGISTERS_PER_THREAD = 255  # CUDA C++ Programming Guide, "Compute Capabilities" (cc 8.0 and 9.0)
# Operators the SFUs compute (MUFU: exp2, log2, rcp, rsqrt, sqrt, sin, cos, tanh; CUDA C++ Programming Guide,
# "Arithmetic Instructions"); division, pow and the activation functions take one of them each
SPECIAL_OPS = frozenset({"exp", "log", "sqrt", "rsqrt", "recip", "div", "pow", "tanh", "sigmoid", "silu", "gelu",
                         "erf", "sin", "cos"})


# ---------------------------------------------------------------------------------------------
# The GEMM kernel model, vectorized over (tile, split) candidates
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmProblem:
    """A contraction as the GEMM kernel sees it: sizes, widths, and each operand's compulsory bytes."""

    m: int
    n: int
    k: int
    batch: int
    a: str            # tensor names: streamed operand, weight-like operand, output
    b: str
    c: str
    a_bits: int
    b_bits: int
    c_bits: int
    a_footprint: float   # distinct elements the einsum reads or writes
    b_footprint: float
    c_footprint: float

    @property
    def operand_bits(self) -> int:
        """The multipliers' width: the wider operand."""
        return max(self.a_bits, self.b_bits)


def gemm_problem(einsum: Einsum, workload: Workload) -> GemmProblem:
    """The GEMM view of a contraction with its operands' footprints."""
    view = gemm_view(einsum, workload)
    tensors = workload.tensor_map
    out = tensors[einsum.output.tensor]
    return GemmProblem(view.m, view.n, view.k, view.batch, view.streamed.tensor, view.weight.tensor, out.name,
                       view.streamed_bits, view.weight_bits, out.bits,
                       float(einsum.footprint(view.streamed, tensors[view.streamed.tensor])),
                       float(einsum.footprint(view.weight, tensors[view.weight.tensor])),
                       float(einsum.footprint(einsum.output, out)))


@dataclass(frozen=True)
class TileArrays:
    """Candidate kernels as arrays (one entry each): the CTA tile's shape, stages, warps and the split-K factor."""

    bm: np.ndarray
    bn: np.ndarray
    bk: np.ndarray
    stages: np.ndarray
    warps: np.ndarray
    split: np.ndarray


@dataclass(frozen=True)
class CtaLimit:
    """One per-CTA resource a tile may exceed: what each candidate needs, what the engine allows, and the fix."""

    what: str              # 'shared memory per CTA', ...
    unit: str              # 'bytes', 'registers', 'threads'
    need: np.ndarray       # (B,) per candidate
    allowed: float
    fix: str

    @property
    def exceeded(self) -> np.ndarray:
        """Candidates this limit excludes."""
        return self.need > self.allowed


def cta_limits(engine: GpuEngine, tiles: TileArrays, a_bits: int, b_bits: int) -> tuple[CtaLimit, ...]:
    """What one CTA of each tile needs against what one CTA may take (module docstring of gpu.py): shared memory
    (a CTA's own cap and the SM's), registers (per thread, 255 at most, and the SM's file) and threads."""
    smem = tiles.stages * (tiles.bm * a_bits + tiles.bn * b_bits) * tiles.bk / 8
    threads = tiles.warps * 32
    per_thread = np.ceil(tiles.bm * tiles.bn * (ACCUMULATOR_BITS / 32) / threads) + engine.base_registers
    smaller = "list smaller tiles or fewer stages under 'tiles'"
    return (CtaLimit("shared memory per CTA", "bytes", smem, engine.smem_per_cta_bytes,
                     f"{smaller}, or raise shared_memory_per_cta"),
            CtaLimit("shared memory per SM", "bytes", smem, engine.smem_per_sm_bytes,
                     f"{smaller}, or raise shared_memory_per_sm"),
            CtaLimit("registers per thread", "registers", per_thread, MAX_REGISTERS_PER_THREAD,
                     "lower base_registers, or list tiles with fewer outputs per warp under 'tiles'"),
            CtaLimit("register file per SM", "bytes", threads * per_thread * 4, engine.registers_per_sm_bytes,
                     "raise registers_per_sm (64 K 32-bit registers = 256 KiB on A100 and H100), lower "
                     "base_registers, or list smaller tiles under 'tiles'"),
            CtaLimit("threads per SM", "threads", threads, engine.max_threads_per_sm,
                     "raise max_threads_per_sm (2048 on A100 and H100), or list tiles with fewer warps under "
                     "'tiles'"))


def occupancy(engine: GpuEngine, tiles: TileArrays, a_bits: int, b_bits: int) -> np.ndarray:
    """CTAs resident per SM (module docstring): the least of the CTA limit, shared memory, registers and threads;
    0 where one CTA exceeds any of them (`cta_limits`)."""
    limits = cta_limits(engine, tiles, a_bits, b_bits)
    smem, registers, threads = limits[1].need, limits[3].need, limits[4].need
    occ = np.minimum.reduce([np.full(smem.shape, engine.max_ctas_per_sm, dtype=np.int64),
                             (engine.smem_per_sm_bytes // smem).astype(np.int64),
                             (engine.registers_per_sm_bytes // registers).astype(np.int64),
                             np.full(smem.shape, engine.max_threads_per_sm, dtype=np.int64) // threads])
    fits = ~np.logical_or.reduce([limit.exceeded for limit in limits])
    return np.where(fits, occ, 0)


@dataclass(frozen=True)
class KernelScores:
    """Exact costs of a batch of GEMM kernel candidates (every field an array over candidates; cycles in the
    arch clock). `level_read_bytes` / `level_write_bytes` are (B, L) over the arch's memory levels."""

    total_cycles: np.ndarray
    energy_j: np.ndarray
    fits: np.ndarray
    compute_cycles: np.ndarray
    stall_cycles: np.ndarray
    launch_cycles: np.ndarray        # launch, first-operand latency and last-wave drain (the fill/drain cycles)
    occupancy: np.ndarray
    ctas: np.ndarray
    waves: np.ndarray
    wave_efficiency: np.ndarray       # CTAs / (waves x SMs x occupancy)
    padded_macs: np.ndarray
    a_reads: np.ndarray               # times device memory serves A and B (L2 reuse, module docstring)
    b_reads: np.ndarray
    tile_a_elements: np.ndarray       # elements of A and B the cache level serves to the CTAs
    tile_b_elements: np.ndarray
    partial_elements: np.ndarray      # split-K partial sums written (and read back) at the cache level
    level_read_bytes: np.ndarray
    level_write_bytes: np.ndarray
    level_cycles: np.ndarray          # (B, L) transfer cycles at each level's achievable bandwidth
    mac_energy_j: np.ndarray
    static_energy_j: np.ndarray
    clocked_energy_j: np.ndarray      # the SM clocks' own power over the kernel (gpu.py, "Power limit")
    level_energy_j: np.ndarray        # (B, L)
    energy_scale: np.ndarray          # on-chip energies at the kernel's clock over their boost-clock figures

    def __len__(self) -> int:
        return len(self.total_cycles)

    def objective(self, objective: str) -> np.ndarray:
        """Cycles, joules or their product; +inf where the tile cannot run (occupancy 0)."""
        return fitting_objective(self.total_cycles, self.energy_j, self.fits, objective)

    def row(self, i: int) -> dict[str, Any]:
        """Candidate `i`'s fields as plain numbers (per-level arrays as lists)."""
        return {f.name: getattr(self, f.name)[i].tolist() for f in fields(self)}


def level_roles(problem: GemmProblem, workload: Workload, einsum: Einsum, arch: Arch,
                resident: frozenset[str] = frozenset()) -> list[dict[str, bool]]:
    """Per level (outer -> inner): which of the GEMM's tensors it keeps (`MemoryLevel.keeps`); a `resident` tensor
    (held in the SMs by a fused kernel) none."""
    roles = workload.roles(einsum)
    return [{t: t not in resident and level.keeps(roles[t], t) for t in (problem.a, problem.b, problem.c)}
            for level in arch.memory]


def cache_capacity_bytes(arch: Arch) -> float:
    """Bytes of the innermost on-chip level (the L2 the reuse model asks about) that the kernel's tiles may use (its
    room: live tensors the kernel does not touch keep theirs); 0 with none."""
    on_chip = [lv.room_bytes for lv in arch.memory if lv.capacity_bytes is not None and
               lv.technology in ("SRAM", "registers")]
    return float(on_chip[-1]) if on_chip else 0.0


def kernel_scores(engine: GpuEngine, problem: GemmProblem, keeps: list[dict[str, bool]], arch: Arch,
                  tiles: TileArrays) -> KernelScores:
    """Cycles, traffic and energy of each candidate kernel for one GEMM (module docstring)."""
    p = problem
    clock = arch.engine_clock_hz(engine)
    to_arch = arch.clock_hz / clock
    occ = occupancy(engine, tiles, p.a_bits, p.b_bits)
    fits = occ > 0
    occ_safe = np.maximum(occ, 1)
    m_tiles = fold_count(p.m, tiles.bm)
    n_tiles = fold_count(p.n, tiles.bn)
    k_per_split = fold_count(p.k, tiles.split)
    k_steps = fold_count(k_per_split, tiles.bk)
    ctas = p.batch * m_tiles * n_tiles * tiles.split
    slots = engine.sms * occ_safe
    waves = fold_count(ctas, slots)
    rate, on_tensor = engine.mac_rate(p.operand_bits)
    eff = engine.tensor_sustained() if on_tensor else 1.0
    tile_macs = tiles.bm * tiles.bn * k_steps * tiles.bk
    # the CTAs resident on an SM share its tensor cores, so each CTA costs its SM one CTA-time whatever the
    # occupancy, and a CTA of a partial last wave that runs alone on its SM takes one: the busiest SM runs
    # ceil(T / SMs) of them (waves x occupancy CTA-times charged a last wave of one CTA per SM `occupancy` of them)
    per_sm = fold_count(ctas, engine.sms)
    compute = per_sm * tile_macs / (rate * eff) * to_arch
    padded_macs = ctas * tile_macs

    # L2 reuse: device memory serves each operand once when both fit the cache, else once per block of tiles
    a_bytes = p.a_footprint * p.a_bits / 8
    b_bytes = p.b_footprint * p.b_bits / 8
    gm = np.clip(np.rint(np.sqrt(slots)), 1, m_tiles)
    gn = np.clip(np.ceil(slots / gm), 1, n_tiles)
    # a block shares its panels only while the K-slices its CTAs have in flight stay in the cache: `stages` of
    # them per panel; a cache too small for the block's slices shrinks the block (down to one CTA: no reuse)
    cache = cache_capacity_bytes(arch)
    slice_bytes = tiles.bk * tiles.stages / 8
    in_flight = (gm * tiles.bm * p.a_bits + gn * tiles.bn * p.b_bits) * slice_bytes
    shrink = np.minimum(1.0, cache / in_flight)
    gm = np.maximum(1.0, np.floor(gm * shrink))
    gn = np.maximum(1.0, np.floor(gn * shrink))
    fits_cache = a_bytes + b_bytes <= cache
    a_reads = np.where(fits_cache, 1.0, fold_count(n_tiles, gn.astype(np.int64)))
    b_reads = np.where(fits_cache, 1.0, fold_count(m_tiles, gm.astype(np.int64)))
    tile_a = float(p.batch * p.m * p.k) * n_tiles
    tile_b = float(p.batch * p.k * p.n) * fold_count(m_tiles, engine.multicast)
    outputs = float(p.batch * p.m * p.n)
    partial = np.where(tiles.split > 1, outputs * tiles.split, 0.0)

    read_bytes, write_bytes = _level_bytes(p, keeps, a_reads, b_reads, tile_a, tile_b, partial)
    level_cycles = np.stack([engine.transfer_cycles(read_bytes[:, li], write_bytes[:, li], level, arch)
                             / engine.level_efficiency(level.name) for li, level in enumerate(arch.memory)], axis=1)
    mac_energy = padded_macs * engine.mac_energy_j(p.operand_bits, clock)
    level_energy = np.stack([sum(level_access_energy(arch, li, read_bytes[:, li] * 8,
                                                     write_bytes[:, li] * 8).values())
                             for li in range(len(arch.memory))], axis=1)
    # exposed at the ends: the first wave waits one memory latency for its first operands, the output tiles of the
    # last CTA-time (at most one CTA per SM, as `compute` counts them) drain to the output's outermost keeper after
    # the last MAC (a higher occupancy only overlaps more epilogues with other CTAs' main loops); plus the launch
    last_round = ctas - (per_sm - 1) * engine.sms
    drain_bytes = last_round * np.minimum(tiles.bm, p.m) * np.minimum(tiles.bn, p.n) * p.c_bits / 8
    out_level = next((li for li in range(len(arch.memory)) if keeps[li][p.c]), None)
    drain = (0.0 if out_level is None else
             engine.transfer_cycles(0.0, drain_bytes, arch.memory[out_level], arch)
             / engine.level_efficiency(arch.memory[out_level].name))
    on_chip = on_chip_levels(arch)
    drain_on_chip = out_level is not None and bool(on_chip[out_level])
    shape = np.broadcast(compute, level_cycles[:, 0]).shape
    pace = KernelPace(compute=np.broadcast_to(compute, shape).astype(float),
                      on_chip=level_cycles[:, on_chip].max(axis=1, initial=0.0),
                      off_chip=level_cycles[:, ~on_chip].max(axis=1, initial=0.0),
                      clocked_ends=engine.memory_latency_cycles * to_arch + (drain if drain_on_chip else 0.0),
                      fixed_ends=(engine.kernel_gap_s() + engine.gemm_setup_s) * arch.clock_hz
                      + (0.0 if drain_on_chip else drain), on_tensor=on_tensor)
    run = under_power_limit(engine, arch, pace, mac_energy + level_energy[:, on_chip].sum(axis=1),
                            level_energy[:, ~on_chip].sum(axis=1))
    compute, busy, launch = run.compute, run.busy, run.ends
    total = busy + launch
    seconds = total / arch.clock_hz
    mac_energy = mac_energy * run.energy_scale
    level_energy = level_energy * np.where(on_chip, run.energy_scale[:, None], 1.0)
    static_energy = engine.static_power_w * seconds
    clocked_energy = run.clocked_power_w * seconds
    energy = mac_energy + static_energy + clocked_energy + level_energy.sum(axis=1)
    return KernelScores(total, energy, fits, compute, busy - compute, launch, occ, ctas, waves,
                        ctas / (waves * slots), padded_macs.astype(float), a_reads, b_reads,
                        np.broadcast_to(tile_a, total.shape).astype(float),
                        np.broadcast_to(tile_b, total.shape).astype(float), partial, read_bytes, write_bytes,
                        level_cycles, mac_energy, static_energy, clocked_energy, level_energy, run.energy_scale)


def add_level_energies(energy: dict[tuple[str, str], float], per_level: list[dict[tuple[str, str], float]],
                       on_chip: np.ndarray, scale: float) -> None:
    """Add each level's access energies (`per_level`, outer -> inner) into `energy`, the on-chip levels' at the
    kernel's clock (`scale`: their boost-clock figures x r^2; gpu.py, "Power limit")."""
    for joules, keep in zip(per_level, on_chip):
        for key, value in joules.items():
            energy[key] = energy.get(key, 0.0) + value * (scale if keep else 1.0)


def on_chip_levels(arch: Arch) -> np.ndarray:
    """Per level (outer -> inner): whether it sits on the die, on the SM clock and its voltage (not off-chip DRAM)."""
    return np.array([memory_kind(level.technology) != "off_chip" for level in arch.memory], dtype=bool)


@dataclass(frozen=True)
class KernelPace:
    """A kernel's arch cycles at the configured clock, split by what sets each part's pace as the SM clock moves
    (gpu.py, "Power limit")."""

    compute: np.ndarray        # the main loop's issue: tensor cores (`on_tensor`) or CUDA-core lanes
    on_chip: np.ndarray        # the slowest on-chip level's transfers (L2): on the SM clock
    off_chip: np.ndarray       # the slowest off-chip level's transfers (HBM): on the memory's own clock
    clocked_ends: np.ndarray | float   # first-load latency and a drain to an on-chip level
    fixed_ends: np.ndarray | float     # launch gap, GEMM set-up and a drain to an off-chip level
    on_tensor: bool


@dataclass(frozen=True)
class Throttled:
    """A kernel at the SM clock the power limit leaves it (arch cycles; `under_power_limit`)."""

    compute: np.ndarray
    busy: np.ndarray
    ends: np.ndarray
    energy_scale: np.ndarray      # on-chip energy per operation or bit at this clock over its boost-clock figure
    clocked_power_w: np.ndarray   # the SM clocks' power at this clock, with no kernel


def under_power_limit(engine: GpuEngine, arch: Arch, pace: KernelPace, on_chip_energy_j: np.ndarray,
                      off_chip_energy_j: np.ndarray) -> Throttled:
    """The kernel at the highest SM clock up to `dvfs.boost_clock` at which the board's power over its whole time
    (static power, the clocks' power and the kernel's energy over its time) stays within the TDP (gpu.py, "Power
    limit"); without `dvfs`, at the configured clock with no limit."""
    dvfs = engine.dvfs
    shape = np.broadcast(pace.compute, on_chip_energy_j).shape
    if dvfs is None:
        busy = np.maximum(pace.compute, np.maximum(pace.on_chip, pace.off_chip))
        return Throttled(pace.compute, busy, np.broadcast_to(pace.fixed_ends + pace.clocked_ends, shape),
                         np.ones(shape), np.zeros(shape))
    nominal = arch.engine_clock_hz(engine)
    boost = dvfs.boost_clock_hz
    # the main loop's rate is its ceiling (tensor_efficiency at the configured clock) until the clock times the
    # clock-bound efficiency falls below it; other on-chip work runs at its configured rate down to that clock
    ceiling = engine.tensor_efficiency / dvfs.clock_bound_efficiency if pace.on_tensor else 1.0
    parts = [np.broadcast_to(np.asarray(a, dtype=float), shape) for a in
             (pace.compute, pace.on_chip, pace.off_chip, pace.fixed_ends, pace.clocked_ends, on_chip_energy_j,
              off_chip_energy_j)]

    def at(clock: np.ndarray, compute: np.ndarray, on_chip: np.ndarray, off_chip: np.ndarray, fixed_ends: np.ndarray,
           clocked_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stretch = np.maximum(1.0, nominal / clock)
        compute = compute * np.maximum(1.0, ceiling * nominal / clock)
        busy = np.maximum(compute, np.maximum(on_chip * stretch, off_chip))
        return compute, busy, fixed_ends + clocked_ends * stretch

    def excess(clock: np.ndarray, *kernel: np.ndarray) -> np.ndarray:
        """Board power at `clock` less the TDP."""
        *timing, on_chip_j, off_chip_j = kernel
        _, busy, ends = at(clock, *timing)
        ratio = clock / boost
        dynamic = on_chip_j * ratio ** 2 + off_chip_j
        return (engine.static_power_w + dvfs.clocked_power_w * ratio ** 3 + dynamic / ((busy + ends) / arch.clock_hz)
                - engine.tdp_w)

    clock = np.full(shape, boost)
    over = np.flatnonzero(excess(clock, *parts) > 0)
    if over.size:
        subset = [a[over] for a in parts]
        clock[over] = _highest_clock_within(lambda f: excess(f, *subset), boost, over.size, engine.tdp_w)
    compute, busy, ends = at(clock, *parts[:5])
    ratio = clock / boost
    return Throttled(compute, busy, ends, ratio ** 2, dvfs.clocked_power_w * ratio ** 3)


def _highest_clock_within(excess: Callable[[np.ndarray], np.ndarray], high: float, size: int,
                          tdp_w: float) -> np.ndarray:
    """Per kernel, the clock below `high` at which board power over the TDP (`excess`, rising with the clock: energy
    per operation follows the square of the voltage, which follows the clock) crosses zero, from below, to 1e-10
    of the TDP: the Illinois variant of regula falsi, which keeps the root bracketed across the kinks where another
    part of the kernel sets its pace. A kernel still over the TDP at 1/128 of `high` (its off-chip power alone above
    the TDP less static power: no shipped config comes near) is left at that clock."""
    lo, hi = np.full(size, high / 2), np.full(size, high)
    g_lo, g_hi = excess(lo), excess(hi)
    for _ in range(6):  # a bracket from below: halve the clock until the board is within its TDP
        if (g_lo <= 0).all():
            break
        lo = np.where(g_lo > 0, lo / 2, lo)
        g_lo = excess(lo)
    true_lo = g_lo.copy()            # the excess at `lo` itself (g_lo may have been halved)
    last = np.zeros(size)            # which end the previous guess replaced: -1 low, +1 high
    for _ in range(200):
        active = (true_lo < -1e-10 * tdp_w) & (hi - lo > 1e-12 * high)
        if not active.any():
            break
        guess = np.where(active, hi - g_hi * (hi - lo) / (g_hi - g_lo), lo)
        g = excess(guess)
        within = active & (g <= 0)
        beyond = active & (g > 0)
        # an end kept twice in a row has its excess halved (Illinois), so that the next guess moves past it
        g_hi = np.where(within & (last < 0), g_hi / 2, g_hi)
        g_lo = np.where(beyond & (last > 0), g_lo / 2, g_lo)
        lo, g_lo, true_lo = np.where(within, guess, lo), np.where(within, g, g_lo), np.where(within, g, true_lo)
        hi, g_hi = np.where(beyond, guess, hi), np.where(beyond, g, g_hi)
        last = np.where(within, -1.0, np.where(beyond, 1.0, last))
    return lo


def _level_bytes(p: GemmProblem, keeps: list[dict[str, bool]], a_reads: np.ndarray, b_reads: np.ndarray,
                 tile_a: np.ndarray, tile_b: np.ndarray, partial: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(read, written) bytes (B, L) at each level: per operand, its innermost keeper serves the tile traffic and
    is filled with the device-memory traffic its outer keepers serve; the output is written once at every keeper
    (split-K partials at the innermost, written and read back)."""
    n_levels = len(keeps)
    shape = np.broadcast(a_reads, tile_a).shape
    reads = np.zeros((*shape, n_levels))
    writes = np.zeros((*shape, n_levels))
    operands = ((p.a, p.a_bits / 8, p.a_footprint * a_reads, tile_a),
                (p.b, p.b_bits / 8, p.b_footprint * b_reads, tile_b))
    for tensor, width, from_memory, tiles in operands:
        keepers = [li for li in range(n_levels) if keeps[li][tensor]]
        for position, li in enumerate(keepers):
            innermost = position == len(keepers) - 1
            reads[..., li] += (tiles if innermost else from_memory) * width
            if position > 0:  # filled from the keeper outside it
                writes[..., li] += from_memory * width
    keepers = [li for li in range(n_levels) if keeps[li][p.c]]
    for position, li in enumerate(keepers):
        writes[..., li] += p.c_footprint * p.c_bits / 8
        if position == len(keepers) - 1:
            writes[..., li] += partial * ACCUMULATOR_BITS / 8
            reads[..., li] += partial * ACCUMULATOR_BITS / 8
    return reads, writes


def kernel_cost(engine: GpuEngine, problem: GemmProblem, keeps: list[dict[str, bool]], arch: Arch,
                scores: KernelScores, i: int, macs: int) -> Cost:
    """Candidate `i` of `scores` as a Cost: its cycles, accesses per (level, tensor, action) and energy."""
    accesses: dict[tuple[str, str, str], float] = {}
    p = problem
    operands = ((p.a, p.a_footprint * scores.a_reads[i], scores.tile_a_elements[i]),
                (p.b, p.b_footprint * scores.b_reads[i], scores.tile_b_elements[i]))
    for tensor, from_memory, tiles in operands:
        keepers = [li for li, keep in enumerate(keeps) if keep[tensor]]
        for position, li in enumerate(keepers):
            level = arch.memory[li].name
            accesses[(level, tensor, "read")] = float(tiles if position == len(keepers) - 1 else from_memory)
            if position > 0:
                accesses[(level, tensor, "fill")] = float(from_memory)
    keepers = [li for li, keep in enumerate(keeps) if keep[p.c]]
    for position, li in enumerate(keepers):
        level = arch.memory[li].name
        accesses[(level, p.c, "write")] = p.c_footprint
        if position == len(keepers) - 1 and scores.partial_elements[i]:
            # fp32 partial sums, counted in output elements of the output's width
            extra = scores.partial_elements[i] * ACCUMULATOR_BITS / p.c_bits
            accesses[(level, p.c, "update")] = float(extra)
            accesses[(level, p.c, "read")] = float(extra)
    energy: dict[tuple[str, str], float] = {("tensor_cores", "mac"): float(scores.mac_energy_j[i]),
                                            ("static", "leakage"): float(scores.static_energy_j[i])}
    if scores.clocked_energy_j[i]:
        energy[("sm_clocks", "idle")] = float(scores.clocked_energy_j[i])
    add_level_energies(energy, [level_access_energy(arch, li, float(scores.level_read_bytes[i, li]) * 8,
                                                    float(scores.level_write_bytes[i, li]) * 8)
                                for li in range(len(arch.memory))], on_chip_levels(arch), float(scores.energy_scale[i]))
    total = float(scores.total_cycles[i])
    # MACs per arch cycle at the datasheet rate for these operands
    peak = engine.sms * engine.mac_rate(p.operand_bits)[0] * arch.engine_clock_hz(engine) / arch.clock_hz
    return Cost(macs=macs, compute_cycles=float(scores.compute_cycles[i]), stall_cycles=float(scores.stall_cycles[i]),
                fill_drain_cycles=float(scores.launch_cycles[i]), accesses=accesses, energy_j=energy,
                utilization=macs / (peak * total) if total > 0 else 0.0)


# ---------------------------------------------------------------------------------------------
# Maps and reductions on the CUDA cores
# ---------------------------------------------------------------------------------------------
def issued_ops(expr: Expr) -> tuple[int, int]:
    """(CUDA-lane instructions, SFU instructions) per point of an expression: a special function (exp, log, rsqrt,
    division, ...) is one SFU instruction, every other operator one lane instruction, except that an add or
    subtract of a product is one fused multiply-add."""
    if not isinstance(expr, Call):
        return 0, 0
    lane, special = (0, 1) if expr.op in SPECIAL_OPS else (1, 0)
    fused = expr.op in ("add", "sub") and any(isinstance(a, Call) and a.op == "mul" for a in expr.args)
    for arg in expr.args:
        sub_lane, sub_special = issued_ops(arg)
        lane += sub_lane
        special += sub_special
    return lane - (1 if fused else 0), special


def instructions_per_point(einsum: Einsum) -> tuple[int, int]:
    """(lane instructions, SFU instructions) per iteration point: the expression's (`issued_ops`), the reduction's
    step, and at least one lane instruction (a copy)."""
    lane, special = issued_ops(einsum.expr)
    lane += 1 if einsum.reduced_ranks else 0
    return max(lane, 1), special


def elementwise_cycles_per_point(einsum: Einsum, engine: GpuEngine, bits: int) -> float:
    """SM cycles per iteration point: the lane instructions over the CUDA lanes and the special functions over the
    SFUs, two pipes that run side by side (the slower one sets the pace)."""
    lane, special = instructions_per_point(einsum)
    return max(lane / engine.lane_rate(bits), special / engine.special_ops_per_sm)


def elementwise_kernel_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: GpuEngine,
                            resident: frozenset[str] = frozenset()) -> Cost:
    """Operator applications over every CUDA lane against the compulsory traffic at achievable bandwidths, plus a
    launch unless fused (module docstring); `resident` tensors stay in the SMs (a fused kernel) and move through
    no level."""
    width = max(workload.tensor(t).bits for t in {a.tensor for a in (*einsum.inputs, einsum.output)})
    clock = arch.engine_clock_hz(engine)
    lanes = engine.sms * engine.lane_rate(width)
    compute = einsum.iteration_points * elementwise_cycles_per_point(einsum, engine, width) / engine.sms
    compute *= arch.clock_hz / clock
    traffic = compulsory_traffic(einsum, workload)
    traffic = replace(traffic, read_bytes={t: b for t, b in traffic.read_bytes.items() if t not in resident},
                      write_bytes={t: b for t, b in traffic.write_bytes.items() if t not in resident})
    accesses: dict[tuple[str, str, str], float] = {}
    # an instruction issued costs the lanes' energy per instruction (a fused multiply-add is one, not two), at the
    # width it issues at, so a map at the lanes' full rate draws the power their energy was set from, no more
    energy: dict[tuple[str, str], float] = {
        ("cuda_cores", "op"): einsum.iteration_points * sum(instructions_per_point(einsum))
        * engine.op_energy_j(width, clock)}
    on_chip = on_chip_levels(arch)
    level_cycles = np.zeros(len(arch.memory))
    level_joules: list[dict[tuple[str, str], float]] = []
    bits = {t.name: t.bits for t in workload.tensors}
    for li, level in enumerate(arch.memory):
        read, write = traffic.through(level)
        level_cycles[li] = engine.transfer_cycles(read, write, level, arch) / engine.level_efficiency(level.name)
        level_joules.append(level_access_energy(arch, li, read * 8, write * 8))
        for tensor, nbytes in traffic.read_bytes.items():
            if level.keeps(traffic.roles[tensor], tensor):
                accesses[(level.name, tensor, "read")] = nbytes * 8 / bits[tensor]
        for tensor, nbytes in traffic.write_bytes.items():
            if level.keeps(traffic.roles[tensor], tensor):
                accesses[(level.name, tensor, "write")] = nbytes * 8 / bits[tensor]
    launch = engine.kernel_gap_s() * arch.clock_hz if engine.launches_kernel(einsum, workload) else 0.0
    pace = KernelPace(compute=np.array([compute]), on_chip=np.array([level_cycles[on_chip].max(initial=0.0)]),
                      off_chip=np.array([level_cycles[~on_chip].max(initial=0.0)]), clocked_ends=0.0,
                      fixed_ends=launch, on_tensor=False)
    on_chip_j = energy[("cuda_cores", "op")] + sum(sum(j.values()) for j, keep in zip(level_joules, on_chip) if keep)
    off_chip_j = sum(sum(j.values()) for j, keep in zip(level_joules, on_chip) if not keep)
    run = under_power_limit(engine, arch, pace, np.array([on_chip_j]), np.array([off_chip_j]))
    energy[("cuda_cores", "op")] *= float(run.energy_scale[0])
    add_level_energies(energy, level_joules, on_chip, float(run.energy_scale[0]))
    compute, busy, launch = float(run.compute[0]), float(run.busy[0]), float(run.ends[0])
    total = busy + launch
    energy[("static", "leakage")] = engine.static_power_w * total / arch.clock_hz
    if run.clocked_power_w[0]:
        energy[("sm_clocks", "idle")] = float(run.clocked_power_w[0]) * total / arch.clock_hz
    return Cost(macs=einsum.macs, compute_cycles=compute, stall_cycles=busy - compute, fill_drain_cycles=launch,
                accesses=accesses, energy_j=energy,
                # a lane's peak is one fused multiply-add, two operator applications, per cycle
                utilization=einsum.ops / (2 * lanes * total * clock / arch.clock_hz) if total > 0 else 0.0)
