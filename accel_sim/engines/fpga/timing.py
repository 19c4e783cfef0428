"""Timing, traffic and energy of one operator run on all cores of an FPGA design (sequential execution).

See engines/fpga/engine.py for the model. Work is split across cores along the weight-like operand (its
batch ranks first, then its output columns), so each core streams its own slice of the weights over its
own channels while every core that shares a batch item reads that item's activations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accel_sim.energy import dtype_mac_energy_j
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.costing import level_access_energy
from accel_sim.engines.fpga.devices import DSP_PIPELINE_STAGES
from accel_sim.engines.fpga.kernels import kernel_of, kernel_time
from accel_sim.engines.loopnest import GemmView, gemm_view
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count, multiplier_passes
from accel_sim.spec.cost import Cost

if TYPE_CHECKING:
    from accel_sim.engines.fpga.engine import FpgaEngine, Parallelism
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Access, Einsum, Workload

# Kuon & Rose, "Measuring the Gap Between FPGAs and ASICs", IEEE TCAD 26(2), 2007, Sec. V: dynamic power of
# designs using hard multipliers and memories is about 7.1x that of a standard-cell ASIC at the same node.
FPGA_DYNAMIC_POWER_GAP = 7.1

def unit_for(engine: FpgaEngine, m: int) -> tuple[str, Parallelism]:
    """('gemv' | 'matrix', parallelism): GEMV mode when the token extent is below the matrix unit's tokens."""
    if engine.gemv is not None and m < engine.matrix.tokens:
        return "gemv", engine.gemv
    return "matrix", engine.matrix


def passes(engine: FpgaEngine, a_bits: int, b_bits: int) -> int:
    """Passes through chains built for mac_bits when an operand is wider (each splits into mac_bits pieces)."""
    return multiplier_passes(a_bits, b_bits, engine.mac_bits)


@dataclass(frozen=True)
class Split:
    """How a GEMM's batch and N extents spread over cores."""

    batch_per_core: int
    n_per_core: int
    cores_per_item: int


def split(engine: FpgaEngine, batch: int, n: int) -> Split:
    """Batch items over cores first, the remaining cores of each item split its N columns."""
    cores_for_batch = min(engine.cores, batch)
    per_item = engine.cores // cores_for_batch
    return Split(fold_count(batch, cores_for_batch), fold_count(n, per_item), per_item)


@dataclass(frozen=True)
class GemmCompute:
    """Compute of a GEMM on one core: cycles (all folds and passes), chain fill, unit used, instruction tiles."""

    cycles: float
    fill: float
    unit: str
    tiles: int


def gemm_compute(engine: FpgaEngine, view: GemmView) -> GemmCompute:
    """Ceil folds per axis on one core, times operand passes; the fill is the reduce cascade plus DSP registers."""
    unit_name, unit = unit_for(engine, view.m)
    s = split(engine, view.batch, view.n)
    folds = (s.batch_per_core * fold_count(view.m, unit.tokens) * fold_count(s.n_per_core, unit.out)
             * fold_count(view.k, unit.reduce))
    cycles = float(folds * passes(engine, view.streamed_bits, view.weight_bits))
    return GemmCompute(cycles, float(unit.reduce + DSP_PIPELINE_STAGES), unit_name,
                       unit.tiles(s.batch_per_core, view.m, s.n_per_core))


@dataclass(frozen=True)
class BufferPlan:
    """How one core's tiles of a GEMM sit in the unit's buffers: bytes each buffer holds at once, and the chunks the
    reduction splits into so that two weight chunks fit."""

    held: dict[str, float]    # buffer -> bytes of tiles it holds at once
    reduce_splits: int


def buffer_plan(engine: FpgaEngine, unit_name: str, unit: Parallelism, view: GemmView, out_bits: int) -> BufferPlan:
    """The tiles of one core in the buffers `unit` routes its operands to, as FlightLLM's compiler lays them out
    (FlightLLM/flightllm_test_demo, profile/inst_gen/layer_support/IR_linear_mm.py and IR_linear_mv.py): the
    streamed operand's tile of tokens over the whole reduction stays put while the weights stream past it (one
    copy); weight chunks of tile_out columns are double-buffered, the reduction split into the fewest chunks (whole
    `reduce` blocks) of which two fit beside whatever else shares their buffer; output tiles are double-buffered
    (one stores while the next computes). A design without buffers has nothing to check. Raises InfeasibleError
    naming the buffer, the bytes and the fix when a tile cannot fit."""
    if not engine.buffers:
        return BufferPlan({}, 1)
    tokens = min(view.m, unit.tile_tokens or unit.tokens)
    out = min(split(engine, view.batch, view.n).n_per_core, unit.tile_out or unit.out)
    step = 2 * out * view.weight_bits / 8 * unit.reduce   # two weight chunks of one `reduce` block each
    parts: dict[str, list[tuple[str, float]]] = {}
    for buffer, what, size in ((unit.activations, f"{tokens} tokens x {view.k} reduction steps of activations",
                                tokens * view.k * view.streamed_bits / 8),
                               (unit.outputs, f"two {tokens} x {out} output tiles", 2 * tokens * out * out_bits / 8)):
        parts.setdefault(buffer, []).append((what, size))
    beside = sum(size for _, size in parts.get(unit.weights, []))
    blocks = fold_count(view.k, unit.reduce)
    fitting = min(int((unit.usable_bytes(engine.buffer(unit.weights)) - beside) // step), blocks)
    splits = fold_count(blocks, max(fitting, 1))
    parts.setdefault(unit.weights, []).append(
        (f"two weight chunks of {out} columns x {fold_count(blocks, splits) * unit.reduce} reduction steps"
         f"{' (the least a chunk holds)' if fitting < 1 else ''}", step * fold_count(blocks, splits)))
    for buffer, held in parts.items():
        need, have = sum(size for _, size in held), unit.usable_bytes(engine.buffer(buffer))
        if need > have:
            listed = "; ".join(f"{what}: {size:,.0f} B" for what, size in held)
            row = unit.row_bytes(engine.buffer(buffer))
            raise InfeasibleError(
                f"engine '{engine.name}': the {unit_name} unit's tiles need {need:,.0f} B of buffer '{buffer}' per "
                f"core ({listed}) but it holds {have:,} B for this unit (depth x the {row:,} B of each row it "
                f"addresses x copies). Fix: raise "
                f"engines.{engine.name}.buffers.{buffer}.depth (or its width) until it holds at least "
                f"{math.ceil(need):,} B, route part of it to another buffer ({unit_name}.weights, .activations, "
                f".outputs), or lower the unit's tile_tokens / tile_out")
    return BufferPlan({b: sum(size for _, size in held) for b, held in parts.items()}, splits)


def double_buffered(compute: float, load: float, tiles: int) -> float:
    """Cycles of `tiles` equal tiles whose loads overlap the previous tile's compute: l + c + (T - 1) max(l, c)."""
    c, l = compute / tiles, load / tiles
    return l + c + (tiles - 1) * max(l, c)


def channel_bandwidth(engine: FpgaEngine, arch: Arch) -> float:
    """Bytes/s of one off-chip channel: the outermost level's read bandwidth (as the engine sees it) over the
    channels (the shipped FPGA boards' off-chip memories have one port, which stores share)."""
    offchip = engine.level_ports(arch.memory[0], arch.engine_clock_hz(engine)).read_bytes_per_s
    return offchip / engine.fpga.offchip.channels


def _bytes(einsum: Einsum, access: Access, workload: Workload) -> float:
    tensor = workload.tensor(access.tensor)
    return einsum.footprint(access, tensor) * tensor.bits / 8


@dataclass(frozen=True)
class OperatorWork:
    """One operator on all cores before the level bounds (engine cycles): its compute and off-chip loads."""

    compute_cycles: float
    fill_cycles: float
    pipelined_cycles: float        # compute, fill and loads overlapped as the unit overlaps them
    offchip_reads: dict[str, float]   # tensor -> off-chip bytes read (all cores)
    energy_j: dict[tuple[str, str], float]
    peak_per_cycle: float          # the unit's operations per cycle (MACs, or SFU lane operations)
    operations: float              # what that peak counts: MACs or operator applications


def _offchip(einsum: Einsum, workload: Workload, arch: Arch, tensor: str) -> bool:
    """Whether the outermost (off-chip) level keeps `tensor` in the role `einsum` accesses it."""
    return arch.memory[0].keeps(workload.roles(einsum)[tensor], tensor)


def _striped_bandwidth(engine: FpgaEngine, arch: Arch) -> float:
    """Bytes/s one core reads over its own channels at the same-channel efficiency."""
    return engine.channels_per_core * channel_bandwidth(engine, arch) * engine.same_efficiency


def gemm_work(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine) -> OperatorWork:
    """A contraction on the matrix (or GEMV) unit: weights striped per core, activations across channels,
    tile loads double-buffered behind compute."""
    clock = arch.engine_clock_hz(engine)
    view = gemm_view(einsum, workload)
    gc = gemm_compute(engine, view)
    buffer_plan(engine, *unit_for(engine, view.m), view, workload.tensor(einsum.output.tensor).bits)
    s = split(engine, view.batch, view.n)
    w_bytes = _bytes(einsum, view.weight, workload) if _offchip(einsum, workload, arch, view.weight.tensor) else 0.0
    a_total = _bytes(einsum, view.streamed, workload) if _offchip(einsum, workload, arch, view.streamed.tensor) else 0.0
    # cores sharing a batch item each read all of that item's activations
    a_core = a_total * s.batch_per_core / view.batch
    load = (w_bytes / engine.cores / _striped_bandwidth(engine, arch)
            + a_core / (channel_bandwidth(engine, arch) * engine.cross_efficiency)) * clock
    reads = {view.weight.tensor: w_bytes, view.streamed.tensor: a_core * engine.cores}
    a_dt, w_dt = dtype_of_bits(view.streamed_bits), dtype_of_bits(view.weight_bits)
    energy = {("dsp_mac", "compute"): einsum.macs * dtype_mac_energy_j(a_dt, w_dt, node_nm=arch.technology_nm)
              * FPGA_DYNAMIC_POWER_GAP}
    return OperatorWork(gc.cycles, gc.fill, double_buffered(gc.cycles, load, gc.tiles) + gc.fill, reads, energy,
                        engine.peak_macs_per_cycle(), float(einsum.macs))


def sfu_work(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine) -> OperatorWork:
    """Any other operator on the special-function lanes of all cores, streaming element by element."""
    lanes = engine.cores * engine.sfu_lanes
    compute = float(fold_count(einsum.ops, lanes))
    reads: dict[str, float] = {}
    for access in einsum.inputs:
        if (access.tensor != einsum.output.tensor and access.tensor not in reads
                and _offchip(einsum, workload, arch, access.tensor)):
            reads[access.tensor] = _bytes(einsum, access, workload)
    load = sum(reads.values()) / engine.cores / _striped_bandwidth(engine, arch) * arch.engine_clock_hz(engine)
    dtype = dtype_of_bits(workload.tensor(einsum.output.tensor).bits)
    energy = {("sfu", "compute"): einsum.ops * dtype_mac_energy_j(dtype, dtype, node_nm=arch.technology_nm)
              * FPGA_DYNAMIC_POWER_GAP}
    # lanes stream element by element: loads and compute overlap finely
    return OperatorWork(compute, 0.0, max(compute, load), reads, energy, float(lanes), float(einsum.ops))


def kernel_work(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine) -> OperatorWork:
    """An HLS design's einsum on its kernel (engines/fpga/kernels.py): compute and ports in one II = 1 pipeline;
    what its ports read is what crosses the off-chip channels (the output's port is counted as its store)."""
    kernel = kernel_of(engine, einsum.name)
    if kernel is None:
        raise InfeasibleError(f"no kernel of the HLS design '{engine.name}' runs einsum '{einsum.name}'. Fix: "
                              f"name it in the `einsums` of one of its kernels ({', '.join(k.name for k in engine.kernels)})")
    timed = kernel_time(einsum, workload, arch, engine)
    reads = {t: _bytes(einsum, next(a for a in einsum.inputs if a.tensor == t), workload)
             for t in dict.fromkeys(a.tensor for a in einsum.inputs) if t in kernel.ports}
    dtype = dtype_of_bits(workload.tensor(einsum.output.tensor).bits)
    kind = ("dsp_mac", "compute") if einsum.op == "mac" else ("sfu", "compute")
    operations = float(einsum.macs if einsum.op == "mac" else einsum.ops)
    energy = {kind: operations * dtype_mac_energy_j(dtype, dtype, node_nm=arch.technology_nm) * FPGA_DYNAMIC_POWER_GAP}
    return OperatorWork(timed.compute, 0.0, timed.cycles, reads, energy, float(kernel.parallelism), operations)


def _level_accesses(einsum: Einsum, workload: Workload, arch: Arch, level_index: int,
                    offchip_reads: dict[str, float], offchip_written: float) -> dict[tuple[str, str, str], float]:
    """Elements each tensor moves through one level: off-chip reads as loaded and the output as stored off chip
    (`offchip_written` bytes: none when it stays on chip or streams through a FIFO), else the compulsory
    footprint."""
    level = arch.memory[level_index]
    roles = workload.roles(einsum)
    accesses: dict[tuple[str, str, str], float] = {}
    for access in (*einsum.inputs, einsum.output):
        tensor = workload.tensor(access.tensor)
        if not level.keeps(roles[tensor.name], tensor.name):
            continue
        action = "write" if access is einsum.output else "read"
        if level_index == 0:
            moved = offchip_reads.get(tensor.name, 0.0) if action == "read" else offchip_written
            elements = moved * 8 / tensor.bits
        else:
            elements = float(einsum.footprint(access, tensor))
        key = (level.name, tensor.name, action)
        if elements > accesses.get(key, 0.0):  # several index expressions of one tensor: the compulsory traffic's
            accesses[key] = elements           # largest footprint, not whichever comes last
    return accesses


def operator_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine) -> Cost:
    """Cycles (arch clock), accesses and energy of one einsum on all cores of the design."""
    ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    if engine.kernels:
        work = kernel_work(einsum, workload, arch, engine)
    else:
        work = (gemm_work if einsum.op == "mac" else sfu_work)(einsum, workload, arch, engine)
    energy = dict(work.energy_j)
    out = einsum.output
    if engine.kernels:  # an HLS kernel stores through its output port, inside its pipelined time
        written = _bytes(einsum, out, workload) if out.tensor in kernel_of(engine, einsum.name).ports else 0.0
        store = 0.0
    else:
        written = _bytes(einsum, out, workload) if _offchip(einsum, workload, arch, out.tensor) else 0.0
        store = (written / engine.cores / (channel_bandwidth(engine, arch) * engine.same_efficiency)
                 * arch.engine_clock_hz(engine))

    # every level is also bounded by its aggregate bandwidth: the off-chip level by the bytes the cores move
    # through it (each core sharing a batch item reads all of its activations), the others by compulsory traffic
    traffic = compulsory_traffic(einsum, workload)
    level_floor = []
    accesses: dict[tuple[str, str, str], float] = {}
    for li, level in enumerate(arch.memory):
        rd, wr = (sum(work.offchip_reads.values()), written) if li == 0 else traffic.through(level)
        level_floor.append(engine.transfer_cycles(rd, wr, level, arch) / ratio)
        rd_bits, wr_bits = 8 * rd, 8 * wr
        for key, value in level_access_energy(arch, li, rd_bits, wr_bits).items():
            energy[key] = energy.get(key, 0.0) + value
        accesses.update(_level_accesses(einsum, workload, arch, li, work.offchip_reads, written))

    busy = max(work.pipelined_cycles, store, *level_floor)
    total = busy * ratio
    util = work.operations / (work.peak_per_cycle * busy) if busy > 0 else 0.0
    compute, fill = work.compute_cycles, work.fill_cycles
    return Cost(macs=einsum.macs, compute_cycles=compute * ratio, fill_drain_cycles=fill * ratio,
                stall_cycles=total - (compute + fill) * ratio, accesses=accesses, energy_j=energy,
                utilization=min(util, 1.0))
