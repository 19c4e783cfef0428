"""Costs of one einsum on one engine: the systolic array (fold timing + loop-nest traffic) and the vector unit.

Systolic: timing from the fold plan of the einsum's im2col view (`engines/systolic.py`), data movement from
the loop-nest analysis of the dataflow written as a mapping (`engines/loopnest.py`). A double-buffered
level overlaps its transfers with compute, so the run takes the longer of the busiest level and compute
(with fill/drain) after the prologue that loads the first tiles before the array can start. Each operand
either stays resident in an on-chip level (fetched once) or streams fold by fold, whichever the
capacities allow with the least outer-level traffic. Where neither fits, the operand spills: it is kept only
at the outermost level that holds it (its backing store) and moves between there and the array through the
inner levels too small for its tiles, which stage it without reuse (Timeloop's bypass per dataspace, Parashar
et al., ISPASS 2019, Sec. III; SCALE-Sim's SRAMs likewise pass every operand whatever their size): a spilled
output's partial sums go out to the backing store at the end of every fold and come back for the next. Its
traffic, and the time the backing store's bandwidth takes to serve it, are charged; a spill is chosen only when
no choice without it fits. A staging level still holds two cycles of what the operand moves across
the array's edge (`spilled_occupancy`). A mapping that fits nowhere, even spilled (a backing store on chip too
small for its tile, a staging level too small for two cycles of edge transfer, or more PEs than the array has),
does not fit.
Vector: one operator application per lane per cycle; traffic is the compulsory footprint (as roofline.py).
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy import dtype_mac_area_mm2, dtype_mac_energy_j, regfile_area_mm2, wire_energy_j_per_bit_mm
from accel_sim.energy.components import (dtype_of_bits, is_off_chip, level_energy_per_bit, storage_area_mm2,
                                         storage_energy_per_bit)
from accel_sim.engines.loopnest import (SYSTOLIC_ROLES, LoopnestAnalysis, access_of, analyze, gemm_operands,
                                        gemm_roles, split_fold, systolic_mapping, tile_footprint)
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count, hidden_fold_cycles
from accel_sim.spec.cost import Cost
from accel_sim.spec.fields import MemoryKind, memory_kind
from accel_sim.spec.mapping import MappingBatch, concat_batches, tensor_names
from accel_sim.spec.mapspace import fitting_objective

if TYPE_CHECKING:
    from collections.abc import Mapping as MappingType

    from accel_sim.engines.base import EngineBase
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.engines.vector import VectorEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Tensor, Workload

ACCUMULATOR_BITS_INT = 32  # TPU v1 accumulates int8 products in 32 bits (Jouppi et al., ISCA 2017, Sec. 2)


def level_access_energy(arch: Arch, level_index: int, read_bits: float, write_bits: float) -> dict[tuple[str, str], float]:
    """{(level, 'read'): J, (level, 'write'): J} for bits read from and written to one memory level."""
    level = arch.memory[level_index]
    read_e, write_e = level_energy_per_bit(level, arch.technology_nm)
    return {(level.name, "read"): read_bits * read_e, (level.name, "write"): write_bits * write_e}


def pe_registers_bytes(a_bits: int, b_bits: int) -> float:
    """Operand and accumulator registers of one PE: two operands plus a 32-bit (int) or fp32 accumulator."""
    return (a_bits + b_bits + ACCUMULATOR_BITS_INT) / 8


def pe_store(engine: SystolicEngine, role: str, a_bits: int, w_bits: int) -> tuple[MemoryKind, float]:
    """(technology, bytes) of the PE storage that holds operand `role` (inputs, weights or psums): the engine's
    `pe_storage`, or by default the one register file of both operands and the accumulator."""
    if engine.pe_storage is None:
        return "registers", pe_registers_bytes(a_bits, w_bits)
    store = getattr(engine.pe_storage, role)
    return memory_kind(store.technology), store.capacity_bytes


def systolic_pe_area_mm2(engine: SystolicEngine, node_nm: float) -> float:
    """One PE: a MAC at the engine's operand precision and arithmetic plus its storage, each store priced like a
    memory level of its technology and capacity."""
    bits = engine.operand_bits
    dtype = dtype_of_bits(bits, engine.number)
    mac = dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
    if engine.pe_storage is None:
        return mac + regfile_area_mm2(pe_registers_bytes(bits, bits), node_nm)
    return mac + sum(storage_area_mm2(memory_kind(store.technology), store.capacity_bytes, node_nm)
                     for store in engine.pe_storage.stores())


def systolic_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine) -> Cost:
    """Cycles, accesses and energy of a contraction with the mapping the engine's dataflow implies.

    With `dataflow: any` the three dataflows' mappings are scored and the lowest energy-delay product kept
    (the mapper, `accel_sim.mapper.search`, searches tilings and orders too).
    """
    batch, dataflow = implied_batch(einsum, workload, arch, engine)
    scores = systolic_scores(einsum, workload, arch, engine, batch, dataflow)
    values = scores.objective("edp")
    if not np.isfinite(values).any():
        raise unfit_error(einsum, workload, arch, engine.name, engine.rows, engine.cols, batch, dataflow)
    return systolic_cost_of(einsum, workload, arch, engine, scores, int(np.argmin(values)), dataflow)


def unfit_error(einsum: Einsum, workload: Workload, arch: Arch, engine_name: str, rows: int, cols: int,
                batch: MappingBatch, dataflow: np.ndarray) -> InfeasibleError:
    """Why none of `batch` fits even with every operand spilled: the on-chip level the least-demanding candidate
    overfills, its capacity and the bytes its tiles need (double-buffered), and the fix."""
    spill = array_analyses(einsum, workload, arch, rows, cols, batch, dataflow).spilled_rows(np.arange(len(batch)))
    occupancy = spilled_occupancy(einsum, workload, arch, batch, spill)               # (B, L, T)
    need = occupancy.sum(axis=2)                                                      # (B, L)
    on_chip = [li for li, lv in enumerate(arch.memory) if not is_off_chip(lv) and lv.capacity_bytes is not None]
    over = [(float(need[:, li].min() - arch.memory[li].capacity_bytes), li) for li in on_chip]
    over = [(excess, li) for excess, li in over if excess > 0]
    if not over:
        return InfeasibleError(
            f"einsum '{einsum.name}' on '{engine_name}': no mapping uses at most the array's {rows} x {cols} PEs. "
            f"Fix: enlarge the array or unpin the factors that exceed it")
    _, li = max(over)
    level = arch.memory[li]
    best = int(need[:, li].argmin())
    kept = ", ".join(f"tensor '{t}'" for ti, t in enumerate(batch.tensor_names) if occupancy[best, li, ti])
    return InfeasibleError(
        f"einsum '{einsum.name}' on '{engine_name}': its tiles fit no on-chip level, even with every operand "
        f"streamed from the outermost level that holds it: '{level.name}' holds {level.capacity_bytes:,.0f} bytes "
        f"and the smallest tiles it must keep or stage ({kept}) need {need[best, li]:,.0f} bytes (double-buffered). "
        f"Fix: raise "
        f"memory.{level.name}.capacity to at least {need[:, li].min():,.0f} bytes, or let an outer level hold "
        f"what it holds (its `holds:`)")


def implied_batch(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine
                  ) -> tuple[MappingBatch, np.ndarray]:
    """The mapping each allowed dataflow implies (SCALE-Sim's folds, `systolic_mapping`) and its dataflow codes."""
    flows = DATAFLOW_CODES if engine.dataflow == "any" else (engine.dataflow,)
    return array_batch(einsum, workload, arch, engine.rows, engine.cols, flows)


def array_batch(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int, flows: tuple[str, ...]
                ) -> tuple[MappingBatch, np.ndarray]:
    """The implied mappings of `flows` on a rows x cols array and their dataflow codes (`implied_batch`)."""
    roles = gemm_roles(einsum, workload.tensor_map)
    mappings = [systolic_mapping(einsum, arch, rows, cols, flow, roles, tensor_roles=workload.roles(einsum))
                for flow in flows]
    batch = MappingBatch.from_mappings(mappings, einsum, arch, {"rows": rows, "cols": cols})
    return batch, np.array([DATAFLOW_CODES.index(f) for f in flows], dtype=np.int64)


def _per_mac_energy(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine
                    ) -> dict[tuple[str, str], float]:
    """Energy every MAC spends whatever the mapping: the multiply-add, PE registers and one hop of wire."""
    tensors = workload.tensor_map
    a_acc, w_acc = gemm_operands(einsum, tensors)
    a_bits, w_bits = tensors[a_acc.tensor].bits, tensors[w_acc.tensor].bits
    mac_j, (inputs_j, weights_j, psums_j), wire_j, pitch_mm = _pe_energy_parts(a_bits, w_bits, arch.technology_nm,
                                                                               engine)
    macs = einsum.macs
    energy = {("mac", "compute"): macs * mac_j}
    # each MAC reads its two operands from their PE stores and writes its partial sum
    energy[("pe_registers", "read")] = macs * (inputs_j * a_bits + weights_j * w_bits)
    energy[("pe_registers", "write")] = macs * psums_j * ACCUMULATOR_BITS_INT
    # every MAC passes its streamed operand and its partial sum (or second operand) one PE on
    energy[("array_wires", "transfer")] = macs * (a_bits + max(w_bits, ACCUMULATOR_BITS_INT)) * wire_j * pitch_mm
    return energy


@functools.lru_cache(maxsize=256)
def _pe_energy_parts(a_bits: int, w_bits: int, node: float, engine: SystolicEngine
                     ) -> tuple[float, tuple[float, float, float], float, float]:
    """(J per multiply-add, J per bit of the PE stores of inputs, weights and psums, wire J per bit and mm, PE pitch
    in mm); cached, as every scored batch asks again."""
    mac_j = dtype_mac_energy_j(dtype_of_bits(a_bits, engine.number), dtype_of_bits(w_bits, engine.number),
                               node_nm=node)
    per_bit = tuple(storage_energy_per_bit(*pe_store(engine, role, a_bits, w_bits), node)
                    for role in ("inputs", "weights", "psums"))
    return mac_j, per_bit, wire_energy_j_per_bit_mm(node), math.sqrt(systolic_pe_area_mm2(engine, node))


def systolic_cost_of(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                     scores: SystolicScores, i: int, dataflow: np.ndarray | None = None) -> Cost:
    """Candidate `i` of a scored batch as a Cost (accesses per level and tensor, energy per component)."""
    del dataflow  # the scores already hold the timing of each candidate's dataflow
    names = tensor_names(einsum)
    energy = _per_mac_energy(einsum, workload, arch, engine)
    accesses = _accesses(arch, names, scores, i)
    for li, level in enumerate(arch.memory):
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
        return fitting_objective(self.total_cycles, self.energy_j, self.fits, objective)

    def rows(self, rows: slice | np.ndarray) -> SystolicScores:
        """The scores of some of the candidates (a slice or an index array; every array alike)."""
        return SystolicScores(*(getattr(self, f.name)[rows] for f in fields(self)))


def candidate_key(batch: MappingBatch, group: np.ndarray) -> np.ndarray:
    """int (B, K): one row per candidate that equal candidates (factors, orders, bypasses, fan-out, group) share."""
    b = len(batch)
    return np.concatenate([batch.temporal.reshape(b, -1), batch.order.reshape(b, -1), batch.spatial.reshape(b, -1),
                           batch.bypass.reshape(b, -1), batch.fanout[:, None], group[:, None]], axis=1)


def collapsed(batch: MappingBatch) -> MappingBatch:
    """The same candidates with every temporal loop moved into the innermost level (each operand resident).

    A rank's loops merge into one; ranks keep the nesting of their outermost non-unit loop, so the loops the
    PEs see run in the same order and only the memory levels' tiles grow to whole tensors.
    """
    return _collapsed_batch(batch, *_collapsed_loops(batch))


def _collapsed_loops(batch: MappingBatch) -> tuple[np.ndarray, np.ndarray]:
    """(factors, order), int (B, R) each: the innermost level's loops of `collapsed(batch)` (the levels above
    have none), so candidates can be told apart before their collapsed batches are built."""
    b, n_l, n_r = batch.temporal.shape
    # loop slot of each rank per level: the inverse permutation of `order`, one flat scatter
    position = np.empty(b * n_l * n_r, dtype=np.int64)
    position[(np.arange(b * n_l) * n_r)[:, None] + batch.order.reshape(-1, n_r)] = np.arange(n_r)
    # a rank sorts by (outermost non-unit level, its slot there): the least l * R + slot over its non-unit loops
    nested = np.arange(n_l)[:, None] * n_r + position.reshape(b, n_l, n_r)
    key = np.where(batch.temporal > 1, nested, n_l * n_r).min(axis=1)
    key[key == n_l * n_r] = -1   # no non-unit loop: outermost, in rank order
    return batch.temporal.prod(axis=1), np.argsort(key, axis=1, kind="stable")


def _collapsed_batch(batch: MappingBatch, factors: np.ndarray, order: np.ndarray) -> MappingBatch:
    """`batch` with the innermost level's loops `factors` and `order` (B, R) and unit loops above
    (`_collapsed_loops`)."""
    b, n_l, n_r = batch.temporal.shape
    temporal = np.ones_like(batch.temporal)
    temporal[:, -1, :] = factors
    loops = np.tile(np.arange(n_r, dtype=np.int64), (b, n_l, 1))
    loops[:, -1, :] = order
    return MappingBatch(batch.rank_names, batch.level_names, batch.axis_names, batch.tensor_names, temporal, loops,
                        batch.spatial, batch.bypass, batch.fanout)


def _role_masks(einsum: Einsum, roles: tuple, ranks: tuple[str, ...]) -> np.ndarray:
    """bool (3 dataflows, 3 places [rows, cols, time], R): the ranks each dataflow puts in each place (read-only:
    shared by every batch of the einsum)."""
    return _role_masks_of(tuple(roles[:3]), tuple(ranks))


@functools.lru_cache(maxsize=1024)
def _role_masks_of(roles: tuple[tuple[str, ...], ...], ranks: tuple[str, ...]) -> np.ndarray:
    """`_role_masks` of the (M, N, K) ranks `roles`; cached, as every scored batch asks it again."""
    named = dict(zip("MNK", roles))
    out = np.zeros((len(DATAFLOW_CODES), 3, len(ranks)), dtype=bool)
    for d, flow in enumerate(DATAFLOW_CODES):
        for place, role in enumerate(SYSTOLIC_ROLES[flow]):
            out[d, place] = [r in named[role] for r in ranks]
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class FoldTiming:
    """Folds of B candidates on the array (arrays of shape (B,), engine clock)."""

    folds: np.ndarray
    temporal: np.ndarray          # T: streamed extent per fold
    cycles_per_fold: np.ndarray   # one fold on its own: T plus fill and drain


def systolic_timing(einsum: Einsum, engine: SystolicEngine, roles: tuple, batch: MappingBatch,
                    dataflow: np.ndarray) -> FoldTiming:
    """Folds, temporal extent T per fold and cycles per fold of each candidate, at the engine clock.

    The time role's loops at the innermost level stream through the array (T per fold); every other loop
    starts a new fold. The ranks an axis unrolls are consumed in their im2col-flattened order, so when their
    tile loops sit at one level the axis folds ceil(prod of their sizes / axis size) times (SCALE-Sim's
    count) instead of the product of the per-rank tile counts.
    """
    flow_masks = _role_masks(einsum, roles, batch.rank_names)                       # (3 dataflows, 3, R)
    masks = flow_masks[dataflow]                                                     # (B, 3, R)
    per_rank = batch.temporal.prod(axis=1)                                           # (B, R)
    t = np.where(masks[:, 2], batch.temporal[:, -1, :], 1).prod(axis=1)
    folds = np.where(masks[:, 0] | masks[:, 1], 1, per_rank).prod(axis=1) // t
    nonunit = batch.temporal > 1
    for place in (0, 1):
        folds = folds * axis_folds(einsum, engine, flow_masks, dataflow, batch, place, (per_rank, nonunit))[0]
    per_fold = np.where(dataflow == 0, t + engine.rows + engine.cols - 2, 2 * engine.rows + engine.cols + t - 2)
    return FoldTiming(folds, t, per_fold)


def axis_folds(einsum: Einsum, engine: SystolicEngine, flow_masks: np.ndarray, dataflow: np.ndarray,
               batch: MappingBatch, place: int, loops: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(folds, packed) of each candidate along one array axis (place 0: rows, 1: cols), as systolic_timing counts.

    `flow_masks` is `_role_masks` (3 dataflows, 3, R), `dataflow` (B,) each candidate's code. Folds are the
    product of the axis ranks' tile counts, or, when their tile loops sit at one level and the spatial factors
    already reach the fewest folds any per-rank tiling does (`split_fold`, as the dataflow's own mapping), the
    im2col-flattened count ceil(prod of their sizes / axis size) if fewer: then `packed` is True and each fold
    holds ceil(prod of sizes / folds) flattened elements, not the mapping's per-rank spatial factors. A mapping
    that unrolls less than it could (k = 64 as 8 x 8 folds on 32 columns) runs its own folds: flattening it would
    time 2 folds while its traffic and tiles stay those of 8, one mapping timed as another. `loops`: the batch's
    (per-rank temporal products (B, R), non-unit factors (B, L, R)) when the caller has them.
    """
    per_rank, nonunit = loops if loops is not None else (batch.temporal.prod(axis=1), batch.temporal > 1)
    sizes = np.array([einsum.sizes[r] for r in batch.rank_names], dtype=np.int64)
    kinds = flow_masks[:, place]                                                     # (3 dataflows, R)
    on_axis = kinds[dataflow]                                                        # (B, R)
    axis = (engine.rows, engine.cols)[place]
    split = np.where(on_axis, per_rank, 1).prod(axis=1)
    levels_used = (nonunit & on_axis[:, None, :]).any(axis=2).sum(axis=1)
    # the ranks on an axis are the dataflow's: one fused count and one least split per dataflow
    fused = fold_count(np.where(kinds, sizes, 1).prod(axis=1), axis)[dataflow]
    least = np.array([_least_split(tuple((r, einsum.sizes[r]) for r, on in zip(batch.rank_names, kind) if on), axis)
                      for kind in kinds], dtype=np.int64)[dataflow]
    packed = (levels_used <= 1) & (fused < split) & (split <= least)
    return np.where(packed, fused, split), packed


@functools.lru_cache(maxsize=4096)
def _least_split(ranks: tuple[tuple[str, int], ...], axis: int) -> int:
    """The fewest folds a per-rank tiling of `ranks` ((name, size) pairs) on an axis of `axis` PEs reaches
    (`split_fold`'s factors); cached, as every scored batch asks it again."""
    sizes = dict(ranks)
    factors = split_fold(list(sizes), sizes, axis)
    return math.prod(fold_count(sizes[r], f) for r, f in factors.items())


@dataclass(frozen=True)
class PreparedBatch:
    """The part of `systolic_scores` that only the candidates, the einsum, the engine and the arch's level layout
    decide (`spec.mapspace.layout_key`; not capacities, bandwidths, clocks or access energies): the loop-nest
    analyses and the fold timing."""

    analyses: ArrayAnalyses
    timing: FoldTiming


def systolic_prepare(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
                     dataflow: np.ndarray) -> PreparedBatch:
    """The loop-nest analyses (`array_analyses`) and fold timing (`systolic_timing`) of a batch."""
    roles = gemm_roles(einsum, workload.tensor_map)
    return PreparedBatch(array_analyses(einsum, workload, arch, engine.rows, engine.cols, batch, dataflow),
                         systolic_timing(einsum, engine, roles, batch, dataflow))


def spilled(batch: MappingBatch) -> MappingBatch:
    """The same candidates with every tensor kept only at the outermost level that keeps it (its backing store):
    the inner levels are bypassed, so its tiles stream from there straight to the PEs."""
    kept = ~batch.bypass                                                              # (B, L, T)
    outermost = kept.argmax(axis=1)                                                   # (B, T)
    inner = np.arange(batch.bypass.shape[1])[None, :, None] > outermost[:, None, :]
    return replace(batch, bypass=batch.bypass | inner)


@dataclass(frozen=True)
class ArrayAnalyses:
    """Loop-nest analyses of B candidates on an array in the layouts `array_traffic` chooses between: streamed and
    collapsed (every operand resident) of every candidate; spilled on demand (`spilled_rows`), since only the
    candidates whose operands fit no level otherwise need it, and they are few."""

    einsum: Einsum
    tensors: MappingType[str, Tensor]
    arch: Arch
    axes: dict[str, int]
    batch: MappingBatch
    folds: np.ndarray                          # (B,): the folds each candidate runs (`analyze`'s pe_folds)
    streamed: LoopnestAnalysis
    collapsed: LoopnestAnalysis

    def spilled_rows(self, rows: np.ndarray) -> LoopnestAnalysis:
        """The spilled layout's analysis of the candidates at `rows` (an index array)."""
        return analyze(self.einsum, self.tensors, self.arch, self.axes, spilled(self.batch.rows(rows)),
                       pe_folds=self.folds[rows])

    @property
    def bits(self) -> np.ndarray:
        """(T,) bits of an element of each tensor."""
        return np.array([self.tensors[t].bits for t in self.batch.tensor_names], dtype=float)

    @cached_property
    def held(self) -> np.ndarray:
        """(2, B, L, T) bytes each tensor's tiles take at each level, streamed (double-buffered on chip: one tile
        streams in while the last is used) and resident."""
        on_chip = np.array([not is_off_chip(lv) for lv in self.arch.memory])[None, :, None]
        streamed, resident = (v.tile_elements * self.bits / 8 for v in (self.streamed, self.collapsed))
        return np.stack([np.where(on_chip, 2 * streamed, streamed), resident])

    @cached_property
    def moved(self) -> np.ndarray:
        """(2, B, L, T) bytes each tensor moves at each level (read, filled, updated, written), streamed and
        resident."""
        return np.stack([(v.read_elements + v.fill_elements + v.update_elements + v.write_elements) * self.bits / 8
                         for v in (self.streamed, self.collapsed)])

    @cached_property
    def ranking(self) -> ResidencyRanking:
        """The streamed and resident combinations ranked (`residency_ranking`): computed once, whatever capacities
        then choose from it."""
        return residency_ranking(self.held, self.moved, (STREAMED, RESIDENT))


def array_analyses(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int, batch: MappingBatch,
                   dataflow: np.ndarray) -> ArrayAnalyses:
    """The loop-nest analyses `array_traffic` reads of a batch on a rows x cols array (`ArrayAnalyses`)."""
    # one analysis over the layouts: the per-call set-up dominates small batches. All run the streamed layout's
    # folds: every temporal iteration except the time role's loops at the innermost level, which stream through
    # the array within a fold (systolic_timing). A reduction fold at the innermost level is a fold too: a
    # weight- or input-stationary array sends its partial sums out at the end of each.
    time = _role_masks(einsum, gemm_roles(einsum, workload.tensor_map), batch.rank_names)[dataflow][:, 2]
    streamed = np.where(time, batch.temporal[:, -1, :], 1).prod(axis=1)
    folds = batch.temporal.reshape(len(batch), -1).prod(axis=1) // streamed
    # candidates that differ only in how a rank's loops split over the levels collapse alike: analyse each
    # distinct collapsed candidate once (a search's neighbours share a few dozen). `collapsed` leaves only the
    # innermost level's factors and order free
    factors, order = _collapsed_loops(batch)
    b = len(batch)
    first, inverse = distinct_rows(np.concatenate([factors, order, batch.spatial.reshape(b, -1),
                                                   batch.bypass.reshape(b, -1), batch.fanout[:, None],
                                                   folds[:, None]], axis=1))
    resident = _collapsed_batch(batch.rows(first), factors[first], order[first])
    axes = {"rows": rows, "cols": cols}
    both = analyze(einsum, workload.tensor_map, arch, axes, concat_batches([batch, resident]),
                   pe_folds=np.concatenate([folds, folds[first]]))
    return ArrayAnalyses(einsum, workload.tensor_map, arch, axes, batch, folds, both.rows(slice(0, b)),
                         both.rows(b + inverse))


def distinct_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) of the distinct rows of a 2-D integer array: key[first] are they (in no set order), each
    the first row of its kind, and key[first][inverse] == key."""
    data = np.asarray(key, dtype=np.int64)
    varying = data[:, (data != data[:1]).any(axis=0)]
    low = varying.min(axis=0, initial=0)
    spans = [int(s) for s in varying.max(axis=0, initial=0) - low + 1]
    if max(spans, default=1) >= 2 ** 62:
        return _distinct_bytes(varying)
    # each row as a few integers in mixed radix (columns grouped to fit 62 bits); groups beyond the first are
    # numbered densely and folded in pairwise, so the running code stays below len(data) ** 2
    groups, start, radix = [], 0, [1]
    for j, span in enumerate(spans):
        if radix[-1] * span >= 2 ** 62:   # column j starts the next group
            groups.append((varying[:, start:j] - low[start:j]) @ np.array(radix[:-1], dtype=np.int64))
            start, radix = j, [1]
        radix.append(radix[-1] * span)
    if len(spans):
        groups.append((varying[:, start:] - low[start:]) @ np.array(radix[:-1], dtype=np.int64))
    code = groups[0] if groups else np.zeros(len(data), np.int64)
    for part in groups[1:]:
        _, dense = np.unique(code, return_inverse=True)
        labels, part_dense = np.unique(part, return_inverse=True)
        code = dense.reshape(-1) * len(labels) + part_dense.reshape(-1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _distinct_bytes(varying: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`distinct_rows` of rows compared as bytes (a column spanning 62 bits or more)."""
    width = varying.shape[1] * 8
    raw = np.ascontiguousarray(varying).tobytes()
    seen: dict[bytes, int] = {}
    inverse = np.fromiter((seen.setdefault(raw[i * width:(i + 1) * width], len(seen)) for i in range(len(varying))),
                          dtype=np.int64, count=len(varying))
    first = np.zeros(len(seen), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(varying) - 1, -1, -1)
    return first, inverse


STREAMED, RESIDENT, SPILLED = 0, 1, 2   # how one operand of a candidate moves (array_traffic)


@dataclass(frozen=True)
class ArrayTraffic:
    """Traffic of B candidates on an array with each operand streamed, resident or spilled as the capacities allow."""

    fits: np.ndarray              # bool (B,): some choice fits every on-chip level, and the array the PEs
    choice: np.ndarray            # int (B, T): STREAMED | RESIDENT | SPILLED per tensor
    read: np.ndarray              # (B, L, T) elements, per the choice; likewise fill/update/write
    fill: np.ndarray
    update: np.ndarray
    write: np.ndarray
    level_read_bytes: np.ndarray  # (B, L): bytes read at each level
    level_write_bytes: np.ndarray  # (B, L): bytes written (filled, updated, written) at each level
    level_energy_j: np.ndarray    # (B, L, 2): read and write joules per level

    @property
    def resident(self) -> np.ndarray:
        """bool (B, T): tensor kept whole on chip."""
        return self.choice == RESIDENT


def array_traffic(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int, batch: MappingBatch,
                  analyses: ArrayAnalyses) -> ArrayTraffic:
    """Per candidate, the choice per operand (streamed, resident, spilled) that fits with the fewest spilled
    operands, then the least outermost-level traffic, then the least total traffic, and its accesses, bytes and
    energy per level; `analyses` from `array_analyses`."""
    bits = analyses.bits
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])
    capacity = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes for lv in arch.memory])
    streamed, resident = ((v.read_elements, v.fill_elements, v.update_elements, v.write_elements)
                          for v in (analyses.streamed, analyses.collapsed))
    fits, choice = analyses.ranking.choose(on_chip, capacity)
    kept = (choice == RESIDENT)[:, None, :]
    read, fill, update, write = (np.where(kept, r, s) for s, r in zip(streamed, resident))
    # a spill is chosen only where no choice without one fits: only those candidates need the spilled layout
    need = np.flatnonzero(~fits)
    if len(need):
        spill = analyses.spilled_rows(need)
        staged = _staged(batch.rows(need), spill)
        held = np.concatenate([analyses.held[:, need], spilled_occupancy(einsum, workload, arch, batch.rows(need),
                                                                         spill)[None]])
        moved = np.concatenate([analyses.moved[:, need], (sum(staged) * bits / 8)[None]])
        fits[need], choice[need] = residency_ranking(held, moved, (STREAMED, RESIDENT, SPILLED),
                                                     spilling=True).choose(on_chip, capacity)
        picked = choice[need][:, None, :]
        for full, s, r, part in zip((read, fill, update, write), streamed, resident, staged):
            full[need] = np.where(picked == SPILLED, part, np.where(picked == RESIDENT, r[need], s[need]))
    fits &= (batch.spatial.prod(axis=2) <= np.array([rows, cols])).all(axis=1)   # PE count

    read_bits = (read * bits).sum(axis=2)
    write_bits = ((fill + update + write) * bits).sum(axis=2)
    per_bit = np.array([level_energy_per_bit(lv, arch.technology_nm) for lv in arch.memory])   # (L, 2)
    level_energy = np.stack([read_bits * per_bit[:, 0], write_bits * per_bit[:, 1]], axis=2)
    return ArrayTraffic(fits, choice, read, fill, update, write, read_bits / 8, write_bits / 8, level_energy)


def _staging_route(batch: MappingBatch) -> tuple[np.ndarray, np.ndarray]:
    """(outermost (B, 1, T): each tensor's backing store, route (B, L, T): the levels inside it that keep the
    tensor in `batch`, which the spilled layout bypasses and so uses as staging buffers)."""
    outermost = (~batch.bypass).argmax(axis=1)[:, None, :]
    return outermost, ~batch.bypass & (np.arange(batch.bypass.shape[1])[None, :, None] > outermost)


def edge_elements(einsum: Einsum, workload: Workload, batch: MappingBatch) -> np.ndarray:
    """Elements (B, T) of each tensor that cross the array's edge in one cycle: one per PE along the edge it enters.

    A tensor whose spatial footprint spans one axis (a streamed operand, or outputs drained along a row or
    column) moves its whole footprint along that axis each cycle; one spanning both axes (a stationary tile)
    shifts in one row or column a cycle, the narrower side; one spanning neither moves one element.
    """
    out = np.ones((len(batch), len(batch.tensor_names)))
    for ti, name in enumerate(batch.tensor_names):
        access = access_of(einsum, name)
        shape = workload.tensor_map[name].shape
        spans = np.stack([tile_footprint(batch.spatial[:, a, :], access, shape, batch.rank_names)
                          for a in range(batch.spatial.shape[1])])                    # (A, B)
        out[:, ti] = np.where((spans > 1).all(axis=0), spans.min(axis=0), spans.max(axis=0))
    return out


def spilled_occupancy(einsum: Einsum, workload: Workload, arch: Arch, batch: MappingBatch,
                      spill: LoopnestAnalysis) -> np.ndarray:
    """Bytes (B, L, T) the spilled layout keeps at each on-chip level: its tiles at the backing store, and at each
    staging level on the route two cycles' edge transfer (`edge_elements`).

    Why two cycles: a staging level gives no reuse, but the array takes each tensor's edge elements of one cycle
    at once. While those are read out to the array, the next cycle's arrive from the backing store, so the level
    holds two cycles' worth, as any double-buffered tile; with less, one cycle's operands never sit in it
    together and the array cannot step at all (ZigZag likewise finds no mapping when a memory cannot hold the
    operands one step of its array needs). That stage-size bound, not the tile, is then the level's need.
    """
    bits = np.array([workload.tensor_map[t].bits for t in batch.tensor_names], dtype=float)
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])[None, :, None]
    _, route = _staging_route(batch)
    stage = 2 * edge_elements(einsum, workload, batch)[:, None, :] * route
    kept = np.where(on_chip, 2 * spill.tile_elements, spill.tile_elements)
    return (kept + np.where(on_chip, stage, 0)) * bits / 8


@dataclass(frozen=True)
class ResidencyRanking:
    """Per candidate, the combinations of operand variants (one per tensor) best first - fewest spilled operands,
    then least outermost-level traffic, then least total traffic, ties to the first combination - and the bytes
    each keeps per level: what `array_traffic` chooses from once it knows the capacities (`choose`)."""

    combos: np.ndarray      # int (C, T): the variant of each tensor, in itertools.product order
    ranked: np.ndarray      # int (B, C): combination indices, best first
    occupancy: np.ndarray   # (B, C, L): bytes the combination ranked[b, c] keeps at each level

    def choose(self, on_chip: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(fits (B,), choice (B, T)): the best combination that fits every on-chip level (off-chip levels hold
        whatever they are given); choice 0s where none fits."""
        limit = np.where(on_chip, capacity, np.inf)
        ok = np.ones(self.ranked.shape, dtype=bool)                                    # (B, C), ranked order
        for level in np.flatnonzero(np.isfinite(limit)):   # nothing exceeds an infinite limit
            ok &= ~(self.occupancy[:, :, level] > limit[level])
        rows = np.arange(len(ok))
        first = ok.argmax(axis=1)
        fits = ok[rows, first]
        return fits, np.where(fits[:, None], self.combos[self.ranked[rows, first]], 0)


def residency_ranking(held: np.ndarray, moved: np.ndarray, variants: tuple[int, ...], spilling: bool = False
                      ) -> ResidencyRanking:
    """The `ResidencyRanking` of combinations of `variants` (one per tensor); `held` and `moved` are (V, B, L, T)
    bytes per variant; `spilling`: only combinations with a spill (the caller found none without one fitting)."""
    _, b, _, n_t = held.shape
    combos = [c for c in itertools.product(variants, repeat=n_t) if not spilling or SPILLED in c]
    code = np.array(combos, dtype=np.int64).reshape(len(combos), n_t)                  # (C, T)

    def per_combo(values: np.ndarray) -> np.ndarray:
        """(B, C, L): each combination's bytes, its T tensors' variants gathered and added in tensor order."""
        by_tensor = values.transpose(3, 1, 0, 2)                                        # (T, B, V, L)
        out = by_tensor[0][:, code[:, 0]]
        for t in range(1, n_t):
            out += by_tensor[t][:, code[:, t]]
        return out

    occupancy, traffic = per_combo(held), per_combo(moved)
    # lexsort is stable: ties keep the combinations' order without an index key, and without a spill-count key
    # where every combination spills alike
    keys = (traffic.sum(axis=2), traffic[:, :, 0])
    spills = np.array([float(c.count(SPILLED)) for c in combos])
    if (spills != spills[0]).any():
        keys += (np.broadcast_to(spills, (b, len(combos))),)
    ranked = np.lexsort(keys, axis=1)
    return ResidencyRanking(code, ranked, np.take_along_axis(occupancy, ranked[:, :, None], axis=1))


def _staged(batch: MappingBatch, spill: LoopnestAnalysis) -> tuple[np.ndarray, ...]:
    """(read, fill, update, write) elements of the spilled layout with its traffic also passing through every
    level it bypassed on its route (levels that keep the tensor in `batch`): such a level is a staging buffer
    too small to keep a tile, so it gives no reuse but every element still crosses it. Inputs read out of the
    backing store are filled into and read out of it; outputs written or updated at the backing store are
    written into and drained out of it, and partial sums read back pass down through it."""
    outermost, kept = _staging_route(batch)
    at_home = lambda a: np.take_along_axis(a, outermost, axis=1)                     # noqa: E731
    read_b, update_b, write_b = at_home(spill.read_elements), at_home(spill.update_elements), \
        at_home(spill.write_elements)
    stage = np.where(kept, 1, 0)
    return (spill.read_elements + stage * (read_b + update_b + write_b), spill.fill_elements + stage * read_b,
            spill.update_elements + stage * update_b, spill.write_elements + stage * write_b)


def prologue_cycles(einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase,
                    streamed: LoopnestAnalysis) -> np.ndarray:
    """Cycles (B,) each candidate's array waits for the first tiles of its inputs (the tiles `streamed` holds at
    the innermost level), each read from the outermost level that keeps it in its role, at the bandwidth `engine`
    sees."""
    names = streamed.tensor_names
    bits = np.array([workload.tensor_map[n].bits for n in names], dtype=float)
    first = streamed.tile_elements[:, -1, :] * bits / 8                                    # (B, T)
    roles = workload.roles(einsum)
    home = [next(lv for lv in arch.memory if lv.keeps(roles[n], n)) for n in names]
    return sum(engine.transfer_cycles(first[:, ti], 0.0, home[ti], arch)
               for ti in range(len(names)) if names[ti] != einsum.output.tensor)


def systolic_scores(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
                    dataflow: np.ndarray, prepared: PreparedBatch | None = None) -> SystolicScores:
    """Cycles (compute, fill/drain, bandwidth stalls), energy and fit of every candidate in one pass.

    `dataflow` (B,) indexes DATAFLOW_CODES. Each operand is either streamed tile by tile as the mapping says
    (double-buffered on chip, so the next tile loads while this one computes) or kept whole on chip,
    whichever fits with the least outermost-level traffic (then least total traffic) - per candidate.
    `prepared`: `systolic_prepare` of this batch, possibly on another arch with the same level layout (only
    element counts, tile sizes and folds are read from it, which that layout alone decides with the candidates).
    """
    prepared = prepared if prepared is not None else systolic_prepare(einsum, workload, arch, engine, batch,
                                                                      dataflow)
    analyses = prepared.analyses
    traffic = array_traffic(einsum, workload, arch, engine.rows, engine.cols, batch, analyses)
    busiest = engine.levels_transfer_cycles(traffic.level_read_bytes, traffic.level_write_bytes, arch).max(axis=1)

    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    timing = prepared.timing
    folds, t, per_fold = timing.folds, timing.temporal, timing.cycles_per_fold
    compute = (folds * t).astype(float) * clock_ratio
    hidden = hidden_fold_cycles(folds, t, engine.rows, engine.cols, dataflow == 0, engine.stationary_buffering)
    fill_drain = (folds * (per_fold - t) - hidden).astype(float) * clock_ratio
    prologue = prologue_cycles(einsum, workload, arch, engine, analyses.streamed)
    total = np.maximum(compute + fill_drain + prologue, busiest)
    energy = sum(_per_mac_energy(einsum, workload, arch, engine).values()) + traffic.level_energy_j.sum(axis=(1, 2))
    return SystolicScores(compute, fill_drain, total - compute - fill_drain, total, energy, traffic.fits,
                          traffic.resident, traffic.read, traffic.fill, traffic.update, traffic.write,
                          traffic.level_energy_j)


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
        level_cycles.append(engine.transfer_cycles(read, write, level, arch))
        for key, value in level_access_energy(arch, li, read * 8, write * 8).items():
            energy[key] = energy.get(key, 0.0) + value
        for tensor, touched in footprints.items():
            if level.keeps(traffic.roles[tensor], tensor):
                accesses[(level.name, tensor, touched.action)] = touched.elements
    total = max([compute, *level_cycles])
    return Cost(macs=einsum.macs, compute_cycles=compute, stall_cycles=total - compute, accesses=accesses,
                energy_j=energy, utilization=ops / (lanes * total) if total > 0 else 0.0)


@dataclass(frozen=True)
class Footprint:
    """Distinct elements of one tensor an einsum touches, and whether it reads or writes them."""

    action: str        # 'read' | 'write'
    elements: float


def _footprints(einsum: Einsum, workload: Workload) -> dict[str, Footprint]:
    """Tensor -> its footprint for an einsum run once (inputs read, the output written)."""
    out: dict[str, Footprint] = {}
    for access in einsum.inputs:
        if access.tensor != einsum.output.tensor and access.tensor not in out:
            out[access.tensor] = Footprint("read", float(einsum.footprint(access, workload.tensor(access.tensor))))
    output = workload.tensor(einsum.output.tensor)
    out[output.name] = Footprint("write", float(einsum.footprint(einsum.output, output)))
    return out


def _accesses(arch: Arch, names: tuple[str, ...], counts: SystolicScores | ArrayTraffic, i: int
              ) -> dict[tuple[str, str, str], float]:
    """Candidate i's non-zero accesses as {(level, tensor, action): elements} (the `Cost.accesses` form)."""
    accesses: dict[tuple[str, str, str], float] = {}
    for li, level in enumerate(arch.memory):
        for action in ("read", "fill", "update", "write"):
            arr = getattr(counts, action)
            for ti, tensor in enumerate(names):
                if arr[i, li, ti]:
                    accesses[(level.name, tensor, action)] = float(arr[i, li, ti])
    return accesses


@dataclass(frozen=True)
class GemmTraffic:
    """Data movement of one contraction on an array (`gemm_array_traffic`); cycles at the arch clock."""

    accesses: dict[tuple[str, str, str], float]   # (level, tensor, action) -> elements
    energy_j: dict[tuple[str, str], float]        # (level, 'read' | 'write') -> J
    level_cycles: tuple[float, ...]               # busy cycles of each level, outer -> inner
    prologue_cycles: float                        # first input tiles before compute can start


def gemm_array_traffic(einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase, rows: int, cols: int,
                       dataflow: str = "os", step_bytes: float | None = None) -> GemmTraffic:
    """Per-level accesses, energy, busy cycles and prologue of a contraction tiled onto a rows x cols array.

    The systolic traffic model (the dataflow's implied mapping, each operand resident or streamed as the
    capacities allow) for any engine family whose datapath holds a rows x cols tile; `engine` sets the
    bandwidth at which each level is seen. The prologue is the first tile held at the innermost level; when
    that level is off-chip (a CPU described by its DRAM alone) the "tile" would be the whole operand, but the
    datapath streams its operands (hardware prefetch): only one step's operands, `step_bytes`, arrive before
    compute starts.
    """
    batch, codes = array_batch(einsum, workload, arch, rows, cols, (dataflow,))
    analyses = array_analyses(einsum, workload, arch, rows, cols, batch, codes)
    traffic = array_traffic(einsum, workload, arch, rows, cols, batch, analyses)
    energy: dict[tuple[str, str], float] = {}
    for li, level in enumerate(arch.memory):
        energy[(level.name, "read")] = float(traffic.level_energy_j[0, li, 0])
        energy[(level.name, "write")] = float(traffic.level_energy_j[0, li, 1])
    level_cycles = tuple(float(engine.transfer_cycles(traffic.level_read_bytes[0, li], traffic.level_write_bytes[0, li],
                                                      level, arch))
                         for li, level in enumerate(arch.memory))
    prologue = float(prologue_cycles(einsum, workload, arch, engine, analyses.streamed)[0])
    innermost = arch.memory[-1]
    if step_bytes is not None and is_off_chip(innermost):
        prologue = min(prologue, engine.transfer_cycles(step_bytes, 0.0, innermost, arch))
    return GemmTraffic(_accesses(arch, tensor_names(einsum), traffic, 0), energy, level_cycles, prologue)
