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
from accel_sim.engines.fpga.engine import DSP_PIPELINE_STAGES, FPGA_DYNAMIC_POWER_GAP, Parallelism
from accel_sim.engines.loopnest import gemm_operands, gemm_roles
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.spec.cost import Cost

if TYPE_CHECKING:
    from accel_sim.engines.fpga.engine import FpgaEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Access, Einsum, Workload


@dataclass(frozen=True)
class GemmView:
    """A contraction as batch x (M x K) @ (K x N), with its operand accesses and widths."""

    m: int
    n: int
    k: int
    batch: int
    streamed: Access
    weight: Access
    streamed_bits: int
    weight_bits: int


def gemm_view(einsum: Einsum, workload: Workload) -> GemmView:
    """The GEMM view of a contraction (M: streamed rows, N: weight columns, K: reduction)."""
    tensors = workload.tensor_map
    roles = gemm_roles(einsum, tensors)
    m, n, k, batch = (math.prod(einsum.sizes[r] for r in role) for role in roles)
    streamed, weight = gemm_operands(einsum, tensors)
    return GemmView(m, n, k, batch, streamed, weight, tensors[streamed.tensor].bits, tensors[weight.tensor].bits)


def unit_for(engine: FpgaEngine, m: int) -> tuple[str, Parallelism]:
    """('gemv' | 'matrix', parallelism): GEMV mode when the token extent is below the matrix unit's tokens."""
    if engine.gemv is not None and m < engine.matrix.tokens:
        return "gemv", engine.gemv
    return "matrix", engine.matrix


def passes(engine: FpgaEngine, a_bits: int, b_bits: int) -> int:
    """Passes through chains built for mac_bits when an operand is wider (each splits into mac_bits pieces)."""
    return math.ceil(a_bits / engine.mac_bits) * math.ceil(b_bits / engine.mac_bits)


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
    return Split(math.ceil(batch / cores_for_batch), math.ceil(n / per_item), per_item)


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
    folds = (s.batch_per_core * math.ceil(view.m / unit.tokens) * math.ceil(s.n_per_core / unit.out)
             * math.ceil(view.k / unit.reduce))
    cycles = float(folds * passes(engine, view.streamed_bits, view.weight_bits))
    return GemmCompute(cycles, float(unit.reduce + DSP_PIPELINE_STAGES), unit_name,
                       unit.tiles(s.batch_per_core, view.m, s.n_per_core))


def double_buffered(compute: float, load: float, tiles: int) -> float:
    """Cycles of `tiles` equal tiles whose loads overlap the previous tile's compute: l + c + (T - 1) max(l, c)."""
    c, l = compute / tiles, load / tiles
    return l + c + (tiles - 1) * max(l, c)


def channel_bandwidth(engine: FpgaEngine, arch: Arch) -> float:
    """Bytes/s of one off-chip channel: the outermost level's bandwidth shared by the device's channels."""
    return arch.memory[0].bandwidth_bytes_per_s / engine.fpga.offchip.channels


def _bytes(einsum: Einsum, access: Access, workload: Workload) -> float:
    tensor = workload.tensor(access.tensor)
    return einsum.footprint(access, tensor) * tensor.bits / 8


def operator_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine) -> Cost:
    """Cycles (arch clock), accesses and energy of one einsum on all cores of the design."""
    clock = arch.engine_clock_hz(engine)
    ratio = arch.clock_hz / clock
    ch_bw = channel_bandwidth(engine, arch)
    striped = engine.channels_per_core * ch_bw * engine.same_channel_efficiency
    off = arch.memory[0]
    off_holds = set(off.holds)
    cls = workload.storage_class

    def offchip(tensor: str) -> bool:
        return cls[tensor] in off_holds

    out_access = einsum.output
    out_bytes = _bytes(einsum, out_access, workload)
    node = arch.technology_nm
    reads: dict[str, float] = {}  # tensor -> off-chip bytes read (all cores)
    if einsum.op == "mac":
        view = gemm_view(einsum, workload)
        gc = gemm_compute(engine, view)
        compute, fill = gc.cycles, gc.fill
        s = split(engine, view.batch, view.n)
        w_bytes = _bytes(einsum, view.weight, workload) if offchip(view.weight.tensor) else 0.0
        a_total = _bytes(einsum, view.streamed, workload) if offchip(view.streamed.tensor) else 0.0
        # cores sharing a batch item each read all of that item's activations
        a_core = a_total * s.batch_per_core / view.batch
        load = (w_bytes / engine.cores / striped
                + a_core / (ch_bw * engine.cross_channel_efficiency)) * clock
        reads = {view.weight.tensor: w_bytes, view.streamed.tensor: a_core * engine.cores}
        pipelined = double_buffered(compute, load, gc.tiles) + fill
        a_dt, w_dt = dtype_of_bits(view.streamed_bits), dtype_of_bits(view.weight_bits)
        energy = {("dsp_mac", "compute"): einsum.macs * dtype_mac_energy_j(a_dt, w_dt, node_nm=node)
                  * FPGA_DYNAMIC_POWER_GAP}
        peak = engine.peak_macs_per_cycle()
        work = float(einsum.macs)
    else:
        lanes = engine.cores * engine.sfu_lanes
        compute, fill = float(math.ceil(einsum.ops / lanes)), 0.0
        in_bytes = 0.0
        for access in einsum.inputs:
            if access.tensor != out_access.tensor and access.tensor not in reads and offchip(access.tensor):
                reads[access.tensor] = _bytes(einsum, access, workload)
                in_bytes += reads[access.tensor]
        load = in_bytes / engine.cores / striped * clock
        # lanes stream element by element: loads and compute overlap finely
        pipelined = max(compute, load)
        dtype = dtype_of_bits(workload.tensor(out_access.tensor).bits)
        energy = {("sfu", "compute"): einsum.ops * dtype_mac_energy_j(dtype, dtype, node_nm=node)
                  * FPGA_DYNAMIC_POWER_GAP}
        peak = float(lanes)
        work = float(einsum.ops)
    written = out_bytes if offchip(out_access.tensor) else 0.0
    store = written / engine.cores / (ch_bw * engine.same_channel_efficiency) * clock

    # every level is also bounded by its aggregate bandwidth; compulsory traffic is what crosses each
    traffic = compulsory_traffic(einsum, workload)
    level_floor = []
    accesses: dict[tuple[str, str, str], float] = {}
    for li, level in enumerate(arch.memory):
        rd, wr = traffic.through(level)
        level_floor.append((rd + wr) / level.bandwidth_bytes_per_s * clock)
        if li == 0:
            rd_bits, wr_bits = 8 * sum(reads.values()), 8 * written
        else:
            rd_bits, wr_bits = 8 * rd, 8 * wr
        for key, value in level_access_energy(arch, li, rd_bits, wr_bits).items():
            energy[key] = energy.get(key, 0.0) + value
        for access in (*einsum.inputs, out_access):
            tensor = workload.tensor(access.tensor)
            if cls[tensor.name] not in level.holds:
                continue
            action = "write" if access is out_access else "read"
            elements = (reads.get(tensor.name, 0.0) * 8 / tensor.bits if li == 0 and action == "read"
                        else float(einsum.footprint(access, tensor)))
            if elements:
                accesses[(level.name, tensor.name, action)] = elements

    busy = max(pipelined, store, *level_floor)
    total = busy * ratio
    util = work / (peak * busy) if busy > 0 else 0.0
    return Cost(macs=einsum.macs, compute_cycles=compute * ratio, fill_drain_cycles=fill * ratio,
                stall_cycles=total - (compute + fill) * ratio, accesses=accesses, energy_j=energy,
                utilization=min(util, 1.0))
