"""Costs of one einsum on one engine: the systolic array (fold timing + loop-nest traffic) and the vector unit.

Systolic: timing from the fold plan of the einsum's im2col view (`engines/systolic.py`), data movement from
the loop-nest analysis of the dataflow written as a mapping (`engines/loopnest.py`). A double-buffered
level overlaps its transfers with compute, so the run takes the longer of the busiest level and compute
(with fill/drain) after the prologue that loads the first tiles before the array can start. Each operand
either stays resident in an on-chip level (fetched once) or streams fold by fold, whichever the
capacities allow with the least outer-level traffic.
Vector: one operator application per lane per cycle; traffic is the compulsory footprint (as roofline.py).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy import (dtype_mac_area_mm2, dtype_mac_energy_j, regfile_access_energy_j, regfile_area_mm2,
                              wire_energy_j_per_bit_mm)
from accel_sim.energy.components import dtype_of_bits, is_off_chip, level_energy_per_bit
from accel_sim.engines.loopnest import SYSTOLIC_ROLES, analyze, gemm_operands, gemm_roles, systolic_mapping
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.engines.systolic import hidden_fold_cycles
from accel_sim.spec.cost import Cost
from accel_sim.spec.mapping import MappingBatch, concat_batches, tensor_names

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.engines.vector import VectorEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload

ACCUMULATOR_BITS_INT = 32  # TPU v1 accumulates int8 products in 32 bits (Jouppi et al., ISCA 2017, Sec. 2)


def level_access_energy(arch: Arch, level_index: int, read_bits: float, write_bits: float) -> dict[tuple[str, str], float]:
    """{(level, 'read'): J, (level, 'write'): J} for bits read from and written to one memory level."""
    level = arch.memory[level_index]
    read_e, write_e = level_energy_per_bit(level, arch.technology_nm)
    return {(level.name, "read"): read_bits * read_e, (level.name, "write"): write_bits * write_e}


def pe_registers_bytes(a_bits: int, b_bits: int) -> float:
    """Operand and accumulator registers of one PE: two operands plus a 32-bit (int) or fp32 accumulator."""
    return (a_bits + b_bits + ACCUMULATOR_BITS_INT) / 8


def systolic_pe_area_mm2(engine: SystolicEngine, node_nm: float) -> float:
    """One PE: a MAC at the engine's operand precision plus its registers."""
    bits = engine.operand_bits
    mac = dtype_mac_area_mm2(dtype_of_bits(bits), dtype_of_bits(bits), node_nm=node_nm)
    return mac + regfile_area_mm2(pe_registers_bytes(bits, bits), node_nm)


def systolic_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine) -> Cost:
    """Cycles, accesses and energy of a contraction with the mapping the engine's dataflow implies.

    With `dataflow: any` the three dataflows' mappings are scored and the lowest energy-delay product kept
    (the mapper, `accel_sim.mapper.search`, searches tilings and orders too).
    """
    batch, dataflow = implied_batch(einsum, workload, arch, engine)
    scores = systolic_scores(einsum, workload, arch, engine, batch, dataflow)
    return systolic_cost_of(einsum, workload, arch, engine, scores, int(np.argmin(scores.objective("edp"))),
                            dataflow)


def implied_batch(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine
                  ) -> tuple[MappingBatch, np.ndarray]:
    """The mapping each allowed dataflow implies (SCALE-Sim's folds, `systolic_mapping`) and its dataflow codes."""
    roles = gemm_roles(einsum, workload.tensor_map)
    flows = DATAFLOW_CODES if engine.dataflow == "any" else (engine.dataflow,)
    mappings = [systolic_mapping(einsum, arch, engine.rows, engine.cols, flow, roles,
                                 storage_class=workload.storage_class) for flow in flows]
    batch = MappingBatch.from_mappings(mappings, einsum, arch, {"rows": engine.rows, "cols": engine.cols})
    return batch, np.array([DATAFLOW_CODES.index(f) for f in flows], dtype=np.int64)


def _per_mac_energy(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine
                    ) -> dict[tuple[str, str], float]:
    """Energy every MAC spends whatever the mapping: the multiply-add, PE registers and one hop of wire."""
    tensors = workload.tensor_map
    a_acc, w_acc = gemm_operands(einsum, tensors)
    a_bits, w_bits = tensors[a_acc.tensor].bits, tensors[w_acc.tensor].bits
    node = arch.technology_nm
    macs = einsum.macs
    energy = {("mac", "compute"): macs * dtype_mac_energy_j(dtype_of_bits(a_bits), dtype_of_bits(w_bits),
                                                             node_nm=node)}
    registers = pe_registers_bytes(a_bits, w_bits)
    energy[("pe_registers", "read")] = macs * (regfile_access_energy_j(registers, a_bits, node)
                                               + regfile_access_energy_j(registers, w_bits, node))
    energy[("pe_registers", "write")] = macs * regfile_access_energy_j(registers, ACCUMULATOR_BITS_INT, node)
    # every MAC passes its streamed operand and its partial sum (or second operand) one PE on
    pitch_mm = math.sqrt(systolic_pe_area_mm2(engine, node))
    energy[("array_wires", "transfer")] = macs * (a_bits + max(w_bits, ACCUMULATOR_BITS_INT)) \
        * wire_energy_j_per_bit_mm(node) * pitch_mm
    return energy


def systolic_cost_of(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                     scores: SystolicScores, i: int, dataflow: np.ndarray | None = None) -> Cost:
    """Candidate `i` of a scored batch as a Cost (accesses per level and tensor, energy per component)."""
    del dataflow  # the scores already hold the timing of each candidate's dataflow
    tensors = workload.tensor_map
    names = tensor_names(einsum)
    energy = _per_mac_energy(einsum, workload, arch, engine)
    accesses: dict[tuple[str, str, str], float] = {}
    for li, level in enumerate(arch.memory):
        for action in ("read", "fill", "update", "write"):
            arr = getattr(scores, action)
            for ti, tensor in enumerate(names):
                if arr[i, li, ti]:
                    accesses[(level.name, tensor, action)] = float(arr[i, li, ti])
        energy[(level.name, "read")] = energy.get((level.name, "read"), 0.0) + float(scores.level_energy_j[i, li, 0])
        energy[(level.name, "write")] = energy.get((level.name, "write"), 0.0) + float(scores.level_energy_j[i, li, 1])
    total = float(scores.total_cycles[i])
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    pes = engine.rows * engine.cols
    return Cost(macs=einsum.macs, compute_cycles=float(scores.compute_cycles[i]),
                stall_cycles=float(scores.stall_cycles[i]), fill_drain_cycles=float(scores.fill_drain_cycles[i]),
                accesses=accesses, energy_j=energy,
                utilization=einsum.macs / (pes * total * (1 / clock_ratio)) if total > 0 else 0.0)


def systolic_resident_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                           resident: frozenset[str]) -> Cost | None:
    """A contraction whose one `resident` tensor stays in the PE registers: the implied mapping of the dataflow
    that holds it stationary (output: os; weight-like input: ws; streamed input: is), its folds back to back
    behind a single R + C - 2 skew since that tensor never loads into or drains out of the array. None when
    more than one of its tensors is resident or the engine's dataflow is another. Accesses stay listed (the
    scheduler drops the resident tensor's, schedule/onchip.py); the first-tile prologue is not charged."""
    streamed, weight = gemm_operands(einsum, workload.tensor_map)
    held = resident & set(tensor_names(einsum))
    if len(held) != 1:
        return None
    (tensor,) = held
    flow = "os" if tensor == einsum.output.tensor else "ws" if tensor == weight.tensor else "is"
    if engine.dataflow not in ("any", flow):
        return None
    pinned = engine.model_copy(update={"dataflow": flow})
    batch, codes = implied_batch(einsum, workload, arch, pinned)
    scores = systolic_scores(einsum, workload, arch, pinned, batch, codes)
    cost = systolic_cost_of(einsum, workload, arch, pinned, scores, 0)
    skew = (engine.rows + engine.cols - 2) * arch.clock_hz / arch.engine_clock_hz(engine)
    busiest = max(engine.level_busy_cycles(cost, workload, arch).values(), default=0.0)
    total = max(cost.compute_cycles + skew, busiest)
    return replace(cost, fill_drain_cycles=skew, stall_cycles=total - cost.compute_cycles - skew,
                   utilization=cost.utilization * cost.total_cycles / total if total > 0 else 0.0)


# ---------------------------------------------------------------------------------------------
# Systolic candidates scored in one vectorized batch (the mapper's exact cost model)
# ---------------------------------------------------------------------------------------------
DATAFLOW_CODES: tuple[str, ...] = ("os", "ws", "is")  # dataflow of a candidate as an index into this tuple


@dataclass(frozen=True)
class SystolicScores:
    """Exact costs of B systolic candidates (arrays of shape (B,) unless noted; cycles at the arch clock)."""

    compute_cycles: np.ndarray
    fill_drain_cycles: np.ndarray
    stall_cycles: np.ndarray
    total_cycles: np.ndarray
    energy_j: np.ndarray
    fits: np.ndarray              # bool: some residency choice fits every on-chip level
    resident: np.ndarray          # bool (B, T): tensor kept whole on chip (else streamed tile by tile)
    read: np.ndarray              # (B, L, T) elements, per the residency choice; likewise fill/update/write
    fill: np.ndarray
    update: np.ndarray
    write: np.ndarray
    level_energy_j: np.ndarray    # (B, L, 2): read and write joules per level

    def __len__(self) -> int:
        return int(self.total_cycles.shape[0])

    def objective(self, objective: str) -> np.ndarray:
        """Cycles, joules or their product per candidate (non-fitting candidates: +inf)."""
        value = {"latency": self.total_cycles, "energy": self.energy_j}.get(objective,
                                                                           self.total_cycles * self.energy_j)
        return np.where(self.fits, value, np.inf)


def collapsed(batch: MappingBatch) -> MappingBatch:
    """The same candidates with every temporal loop moved into the innermost level (each operand resident).

    A rank's loops merge into one; ranks keep the nesting of their outermost non-unit loop, so the loops the
    PEs see run in the same order and only the memory levels' tiles grow to whole tensors.
    """
    b, n_l, n_r = batch.temporal.shape
    temporal = np.ones_like(batch.temporal)
    temporal[:, -1, :] = batch.temporal.prod(axis=1)
    position = np.empty_like(batch.order)
    np.put_along_axis(position, batch.order, np.arange(n_r)[None, None, :], axis=2)   # (B, L, R): loop slot
    nonunit = batch.temporal > 1
    first = np.where(nonunit.any(axis=1), nonunit.argmax(axis=1), -1)                # (B, R) outermost level
    slot = np.take_along_axis(position, np.maximum(first, 0)[:, None, :], axis=1)[:, 0, :]
    key = np.where(first < 0, -1, first * n_r + slot)
    order = np.tile(np.arange(n_r, dtype=np.int64), (b, n_l, 1))
    order[:, -1, :] = np.argsort(key, axis=1, kind="stable")
    return MappingBatch(batch.rank_names, batch.level_names, batch.axis_names, batch.tensor_names, temporal, order,
                        batch.spatial, batch.bypass, batch.fanout)


def _role_masks(einsum: Einsum, roles: tuple, ranks: tuple[str, ...]) -> np.ndarray:
    """bool (3 dataflows, 3 places [rows, cols, time], R): the ranks each dataflow puts in each place."""
    named = dict(zip("MNK", roles[:3]))
    out = np.zeros((len(DATAFLOW_CODES), 3, len(ranks)), dtype=bool)
    for d, flow in enumerate(DATAFLOW_CODES):
        for place, role in enumerate(SYSTOLIC_ROLES[flow]):
            out[d, place] = [r in named[role] for r in ranks]
    return out


def systolic_timing(einsum: Einsum, engine: SystolicEngine, roles: tuple, batch: MappingBatch,
                    dataflow: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(folds, temporal extent T per fold, cycles per fold) of each candidate, at the engine clock.

    The time role's loops at the innermost level stream through the array (T per fold); every other loop
    starts a new fold. The ranks an axis unrolls are consumed in their im2col-flattened order, so when their
    tile loops sit at one level the axis folds ceil(prod of their sizes / axis size) times (SCALE-Sim's
    count) instead of the product of the per-rank tile counts.
    """
    masks = _role_masks(einsum, roles, batch.rank_names)[dataflow]                   # (B, 3, R)
    per_rank = batch.temporal.prod(axis=1)                                           # (B, R)
    t = np.where(masks[:, 2], batch.temporal[:, -1, :], 1).prod(axis=1)
    folds = np.where(masks[:, 0] | masks[:, 1], 1, per_rank).prod(axis=1) // t
    for place in (0, 1):
        folds = folds * axis_folds(einsum, engine, masks, batch, place)[0]
    per_fold = np.where(dataflow == 0, t + engine.rows + engine.cols - 2, 2 * engine.rows + engine.cols + t - 2)
    return folds, t, per_fold


def axis_folds(einsum: Einsum, engine: SystolicEngine, masks: np.ndarray, batch: MappingBatch, place: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(folds, packed) of each candidate along one array axis (place 0: rows, 1: cols), as systolic_timing counts.

    `masks` is `_role_masks` per candidate (B, 3, R). Folds are the product of the axis ranks' tile counts, or,
    when their tile loops sit at one level, the im2col-flattened count ceil(prod of their sizes / axis size) if
    fewer: then `packed` is True and each fold holds ceil(prod of sizes / folds) flattened elements, not the
    mapping's per-rank spatial factors.
    """
    sizes = np.array([einsum.sizes[r] for r in batch.rank_names], dtype=np.int64)
    on_axis = masks[:, place]
    split = np.where(on_axis, batch.temporal.prod(axis=1), 1).prod(axis=1)
    levels_used = ((batch.temporal > 1) & on_axis[:, None, :]).any(axis=2).sum(axis=1)
    fused = -(-np.where(on_axis, sizes, 1).prod(axis=1) // (engine.rows, engine.cols)[place])
    packed = (levels_used <= 1) & (fused < split)
    return np.where(packed, fused, split), packed


def systolic_analyses(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                      batch: MappingBatch) -> tuple:
    """(streamed, collapsed) loop-nest analyses of a batch: the part of systolic_scores that only tiles decide."""
    axes = {"rows": engine.rows, "cols": engine.cols}
    # one analysis over both layouts: the per-call set-up dominates small batches
    both = analyze(einsum, workload.tensor_map, arch, axes, concat_batches([batch, collapsed(batch)]))
    return both.rows(slice(0, len(batch))), both.rows(slice(len(batch), None))


def systolic_scores(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
                    dataflow: np.ndarray, analyses: tuple | None = None) -> SystolicScores:
    """Cycles (compute, fill/drain, bandwidth stalls), energy and fit of every candidate in one pass.

    `dataflow` (B,) indexes DATAFLOW_CODES. Each operand is either streamed tile by tile as the mapping says
    (double-buffered on chip, so the next tile loads while this one computes) or kept whole on chip,
    whichever fits with the least outermost-level traffic (then least total traffic) - per candidate.
    `analyses`: systolic_analyses of this batch, possibly on another arch with the same memory level names,
    capacities and holds (only element counts and tile sizes are read from them, which those alone decide).
    """
    tensors = workload.tensor_map
    roles = gemm_roles(einsum, tensors)
    b = len(batch)
    streamed, whole = analyses if analyses is not None else systolic_analyses(einsum, workload, arch, engine, batch)
    names = batch.tensor_names
    n_t = len(names)
    bits = np.array([tensors[t].bits for t in names], dtype=float)
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])
    capacity = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes for lv in arch.memory])

    # per (variant, tensor): on-chip bytes per level and traffic bytes
    tiles = np.stack([streamed.tile_elements, whole.tile_elements]) * bits / 8          # (2, B, L, T)
    tiles[0] = np.where(on_chip[None, :, None], 2 * tiles[0], tiles[0])
    moved = np.stack([(v.read_elements + v.fill_elements + v.update_elements + v.write_elements)
                      for v in (streamed, whole)]) * bits / 8                           # (2, B, L, T)
    best_key = np.full((b, 2), np.inf)
    choice = np.zeros((b, n_t), dtype=np.int64)
    fits = np.zeros(b, dtype=bool)
    cols = np.arange(n_t)
    for combo in itertools.product((0, 1), repeat=n_t):   # systolic_cost's order: ties go to the first combo
        pick = np.array(combo)
        occupancy = tiles[pick, :, :, cols].sum(axis=0)                                # (B, L)
        ok = ~np.any(on_chip & (occupancy > capacity), axis=1)
        traffic = moved[pick, :, :, cols].sum(axis=0)                                  # (B, L)
        key = np.stack([traffic[:, 0], traffic.sum(axis=1)], axis=1)
        better = ok & (~fits | _lex_less(key, best_key))
        choice[better] = pick
        best_key = np.where(better[:, None], key, best_key)
        fits |= ok
    fits &= (batch.spatial.prod(axis=2) <= np.array([engine.rows, engine.cols])).all(axis=1)   # PE count

    counts = {}
    for action in ("read", "fill", "update", "write"):
        both = np.stack([getattr(streamed, f"{action}_elements"), getattr(whole, f"{action}_elements")])
        counts[action] = np.where(choice[:, None, :].astype(bool), both[1], both[0])
    read_bits = (counts["read"] * bits).sum(axis=2)
    write_bits = ((counts["fill"] + counts["update"] + counts["write"]) * bits).sum(axis=2)
    per_bit = np.array([level_energy_per_bit(lv, arch.technology_nm) for lv in arch.memory])   # (L, 2)
    level_energy = np.stack([read_bits * per_bit[:, 0], write_bits * per_bit[:, 1]], axis=2)
    bandwidth = np.array([lv.bandwidth_bytes_per_s for lv in arch.memory])
    busiest = ((read_bits + write_bits) / 8 / bandwidth * arch.clock_hz).max(axis=1)

    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    folds, t, per_fold = systolic_timing(einsum, engine, roles, batch, dataflow)
    compute = (folds * t).astype(float) * clock_ratio
    hidden = hidden_fold_cycles(folds, t, engine.rows, engine.cols, dataflow == 0, engine.stationary_buffering)
    fill_drain = (folds * (per_fold - t) - hidden).astype(float) * clock_ratio
    # the array waits for the first tiles of its inputs, each from the level that stores its class
    home = [next(li for li, lv in enumerate(arch.memory) if workload.storage_class[n] in lv.holds) for n in names]
    first = streamed.tile_elements[:, -1, :] * bits / 8                                   # (B, T)
    prologue = sum(first[:, ti] / arch.memory[home[ti]].bandwidth_bytes_per_s * arch.clock_hz
                   for ti in range(n_t) if names[ti] != einsum.output.tensor)
    total = np.maximum(compute + fill_drain + prologue, busiest)
    energy = sum(_per_mac_energy(einsum, workload, arch, engine).values()) + level_energy.sum(axis=(1, 2))
    return SystolicScores(compute, fill_drain, total - compute - fill_drain, total, energy, fits,
                          choice.astype(bool), counts["read"], counts["fill"], counts["update"], counts["write"],
                          level_energy)


def _lex_less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a < b in lexicographic order over the last axis."""
    less = np.zeros(a.shape[0], dtype=bool)
    equal = np.ones(a.shape[0], dtype=bool)
    for j in range(a.shape[1]):
        less |= equal & (a[:, j] < b[:, j])
        equal &= a[:, j] == b[:, j]
    return less


def vector_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: VectorEngine) -> Cost:
    """An elementwise/reduction einsum on SIMD lanes: ops / lanes cycles against compulsory traffic."""
    if einsum.op == "mac":
        return elementwise_cost(einsum, workload, arch, engine, engine.lanes, einsum.macs)
    return elementwise_cost(einsum, workload, arch, engine, engine.lanes,
                            einsum.iteration_points if engine.chained_ops else einsum.ops)


def elementwise_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase, lanes: int,
                     ops: float) -> Cost:
    """`ops` lane-cycles of work spread over `lanes` lanes of `engine`, against the einsum's compulsory traffic."""
    compute = ops / lanes * arch.clock_hz / arch.engine_clock_hz(engine)
    traffic = compulsory_traffic(einsum, workload)
    out_bits = workload.tensor(einsum.output.tensor).bits
    dtype = dtype_of_bits(out_bits)
    # one fused multiply-add per operator application: a lower bound for exp, div and friends
    energy = {("vector_lanes", "compute"): ops * dtype_mac_energy_j(dtype, dtype, node_nm=arch.technology_nm)}
    footprints = _footprints(einsum, workload)
    accesses: dict[tuple[str, str, str], float] = {}
    level_cycles = []
    for li, level in enumerate(arch.memory):
        read, write = traffic.through(level)
        level_cycles.append((read + write) / level.bandwidth_bytes_per_s * arch.clock_hz)
        for key, value in level_access_energy(arch, li, read * 8, write * 8).items():
            energy[key] = energy.get(key, 0.0) + value
        for tensor, (action, elements) in footprints.items():
            if workload.storage_class[tensor] in level.holds:
                accesses[(level.name, tensor, action)] = elements
    total = max([compute, *level_cycles])
    return Cost(macs=einsum.macs, compute_cycles=compute, stall_cycles=total - compute, accesses=accesses,
                energy_j=energy, utilization=ops / (lanes * total) if total > 0 else 0.0)


def _footprints(einsum: Einsum, workload: Workload) -> dict[str, tuple[str, float]]:
    """Tensor -> ('read' or 'write', distinct elements touched) for an einsum run once."""
    out: dict[str, tuple[str, float]] = {}
    for access in einsum.inputs:
        if access.tensor != einsum.output.tensor and access.tensor not in out:
            out[access.tensor] = ("read", float(einsum.footprint(access, workload.tensor(access.tensor))))
    output = workload.tensor(einsum.output.tensor)
    out[output.name] = ("write", float(einsum.footprint(einsum.output, output)))
    return out


def gemm_array_traffic(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int,
                       dataflow: str = "os", step_bytes: float | None = None) -> dict:
    """Per-level accesses, energy, busy cycles and prologue of a contraction tiled onto a rows x cols array.

    The systolic traffic model (the dataflow's implied mapping, each operand resident or streamed as the
    capacities allow) for any engine family whose datapath holds a rows x cols tile: keys 'accesses'
    ((level, tensor, action) -> elements), 'energy' ((level, action) -> J), 'level_cycles' (busy cycles of
    each level at the arch clock) and 'prologue_cycles' (first input tiles before compute can start).
    The prologue is the first tile held at the innermost level; when that level is off-chip (a CPU described
    by its DRAM alone) the "tile" would be the whole operand, but the datapath streams its operands (hardware
    prefetch): only one step's operands, `step_bytes`, arrive before compute starts.
    """
    from types import SimpleNamespace

    # only the array's shape and dataflow matter for traffic; the PE fields are placeholders for the scorer
    array = SimpleNamespace(name="array", rows=rows, cols=cols, dataflow=dataflow, operand_bits=16, clock_hz=None,
                            stationary_buffering="single")
    batch, codes = implied_batch(einsum, workload, arch, array)
    scores = systolic_scores(einsum, workload, arch, array, batch, codes)
    tensors = workload.tensor_map
    names = tensor_names(einsum)
    bits = np.array([tensors[t].bits for t in names], dtype=float)
    accesses: dict[tuple[str, str, str], float] = {}
    energy: dict[tuple[str, str], float] = {}
    level_cycles = []
    for li, level in enumerate(arch.memory):
        moved = 0.0
        for action in ("read", "fill", "update", "write"):
            arr = getattr(scores, action)[0, li]
            moved += float(arr @ bits)
            for ti, tensor in enumerate(names):
                if arr[ti]:
                    accesses[(level.name, tensor, action)] = float(arr[ti])
        energy[(level.name, "read")] = float(scores.level_energy_j[0, li, 0])
        energy[(level.name, "write")] = float(scores.level_energy_j[0, li, 1])
        level_cycles.append(moved / 8 / level.bandwidth_bytes_per_s * arch.clock_hz)
    streamed = analyze(einsum, tensors, arch, {"rows": rows, "cols": cols}, batch)
    first = streamed.tile_elements[0, -1, :] * bits / 8
    home = [next(li for li, lv in enumerate(arch.memory) if workload.storage_class[n] in lv.holds) for n in names]
    prologue = sum(first[ti] / arch.memory[home[ti]].bandwidth_bytes_per_s * arch.clock_hz
                   for ti in range(len(names)) if names[ti] != einsum.output.tensor)
    innermost = arch.memory[-1]
    if step_bytes is not None and is_off_chip(innermost):
        prologue = min(prologue, step_bytes / innermost.bandwidth_bytes_per_s * arch.clock_hz)
    return {"accesses": accesses, "energy": energy, "level_cycles": level_cycles, "prologue_cycles": prologue}
