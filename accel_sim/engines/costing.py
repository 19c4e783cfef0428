"""Costs of one einsum on one engine: the systolic array (fold timing + loop-nest traffic) and the vector unit.

Systolic: timing from the fold plan of the einsum's im2col view (`fold_timing.py`), data movement from the
loop-nest analysis of the dataflow written as a mapping (`loopnest.py`), each operand resident, streamed or
spilled as the capacities allow (`residency.py`). A double-buffered level overlaps its transfers with compute,
so the run takes the longer of the busiest level and compute (with fill/drain) after the prologue that loads the
first tiles before the array can start; a spilled operand's traffic, and the time the backing store's bandwidth
takes to serve it, are charged.
Vector: one operator application per lane per cycle; traffic is the compulsory footprint (as roofline.py).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from accel_sim.energy import dtype_mac_area_mm2, dtype_mac_energy_j, regfile_area_mm2, wire_energy_j_per_bit_mm
from accel_sim.energy.components import (dtype_of_bits, is_off_chip, level_energy_per_bit, storage_area_mm2,
                                         storage_energy_per_bit)
from accel_sim.engines.fold_timing import DATAFLOW_CODES, FoldTiming, systolic_timing
from accel_sim.engines.loopnest import LoopnestAnalysis, gemm_operands, gemm_roles, systolic_mapping
from accel_sim.engines.residency import (ArrayAnalyses, ArrayTraffic, array_analyses, array_traffic,
                                         levels_energy_per_bit, spilled_occupancy)
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.engines.rows import any_along
from accel_sim.errors import InfeasibleError
from accel_sim.folds import hidden_fold_cycles
from accel_sim.spec.cost import Cost
from accel_sim.spec.fields import MemoryKind, memory_kind
from accel_sim.spec.mapping import MappingBatch, tensor_names
from accel_sim.spec.mapspace import fitting_objective, joined_rows

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.engines.vector import VectorEngine
    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.workload import Einsum, Workload

def level_access_energy(arch: Arch, level_index: int, read_bits: float, write_bits: float) -> dict[tuple[str, str], float]:
    """{(level, 'read'): J, (level, 'write'): J} for bits read from and written to one memory level."""
    level = arch.memory[level_index]
    read_e, write_e = level_energy_per_bit(level, arch.technology_nm)
    return {(level.name, "read"): read_bits * read_e, (level.name, "write"): write_bits * write_e}


def pe_registers_bytes(a_bits: int, b_bits: int, accumulator_bits: int) -> float:
    """Operand and accumulator registers of one PE: two operands plus the accumulator."""
    return (a_bits + b_bits + accumulator_bits) / 8


def pe_store(engine: SystolicEngine, role: str, a_bits: int, w_bits: int) -> tuple[MemoryKind, float]:
    """(technology, bytes) of the PE storage that holds operand `role` (inputs, weights or psums): the engine's
    `pe_storage`, or by default the one register file of both operands and the accumulator."""
    if engine.pe_storage is None:
        return "registers", pe_registers_bytes(a_bits, w_bits, engine.accumulator_width_bits)
    store = getattr(engine.pe_storage, role)
    return memory_kind(store.technology), store.capacity_bytes


def systolic_pe_area_mm2(engine: SystolicEngine, node_nm: float) -> float:
    """One PE: a MAC at the engine's operand precision and arithmetic plus its storage, each store priced like a
    memory level of its technology and capacity, and the registers that keep values between einsums
    (`pe_registers`), flip-flops beside them."""
    bits = engine.operand_bits
    dtype = dtype_of_bits(bits, engine.number)
    mac = dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
    kept = regfile_area_mm2(engine.register_bytes_per_pe, node_nm) if engine.register_bytes_per_pe else 0.0
    if engine.pe_storage is None:
        return mac + kept + regfile_area_mm2(pe_registers_bytes(bits, bits, engine.accumulator_width_bits), node_nm)
    return mac + kept + sum(storage_area_mm2(memory_kind(store.technology), store.capacity_bytes, node_nm)
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
        raise unfit_error(einsum, workload, arch, engine.name, engine.rows, engine.cols,
                          [(engine.rows, engine.cols, batch, dataflow)], engine.accumulator_width_bits)
    return systolic_cost_of(einsum, workload, arch, engine, scores, int(np.argmin(values)), dataflow)


def unfit_error(einsum: Einsum, workload: Workload, arch: Arch, engine_name: str, rows: int, cols: int,
                batches: Sequence[tuple[int, int, MappingBatch, np.ndarray]], accumulator_bits: float
                ) -> InfeasibleError:
    """Why none of `batches` (each: the array rows and columns it maps onto, its mappings and their dataflow codes)
    fits even with every operand spilled: the on-chip level the least-demanding candidate overfills, its capacity
    and the bytes its tiles need (double-buffered, open partial sums `accumulator_bits` wide), and the fix."""
    needs, kept = [], []
    for used_rows, used_cols, batch, dataflow in batches:
        spill = array_analyses(einsum, workload, arch, used_rows, used_cols, batch, dataflow,
                               accumulator_bits).spilled_rows(np.arange(len(batch)))
        occupancy = spilled_occupancy(einsum, workload, arch, batch, spill)           # (B, L, T)
        needs.append(occupancy.sum(axis=2))                                            # (B, L)
        kept += [[[t for ti, t in enumerate(batch.tensor_names) if occupancy[b, li, ti]]
                  for li in range(len(arch.memory))] for b in range(len(batch))]
    need = np.concatenate(needs)
    on_chip = [li for li, lv in enumerate(arch.memory) if not is_off_chip(lv) and lv.room_bytes is not None]
    over = [(float(need[:, li].min() - arch.memory[li].room_bytes), li) for li in on_chip]
    over = [(excess, li) for excess, li in over if excess > 0]
    if not over:
        return InfeasibleError(
            f"einsum '{einsum.name}' on '{engine_name}': no mapping uses at most the array's {rows} x {cols} PEs. "
            f"Fix: enlarge the array or unpin the factors that exceed it")
    _, li = max(over)
    level = arch.memory[li]
    best = int(need[:, li].argmin())
    names = ", ".join(f"tensor '{t}'" for t in kept[best][li])
    return InfeasibleError(
        f"einsum '{einsum.name}' on '{engine_name}': its tiles fit no on-chip level, even with every operand "
        f"streamed from the outermost level that holds it: '{level.name}' {_room_text(level)} "
        f"and the smallest tiles it must keep or stage ({names}) need {need[best, li]:,.0f} bytes (double-buffered). "
        f"Fix: raise "
        f"memory.{level.name}.capacity to at least "
        f"{need[best, li] + level.reserved_bytes:,.0f} bytes, or let an outer level hold "
        f"what it holds (its `holds:`)")


def _room_text(level: MemoryLevel) -> str:
    """'holds C bytes', and what the live tensors kept there (`MemoryLevel.reserved`) leave of them."""
    if not level.reserved:
        return f"holds {level.capacity_bytes:,.0f} bytes"
    names = ", ".join(f"'{t}'" for t, _ in level.reserved[:3])
    more = f" and {len(level.reserved) - 3:,} more" if len(level.reserved) > 3 else ""
    return (f"holds {level.capacity_bytes:,.0f} bytes, of which {level.reserved_bytes:,.0f} keep "
            f"live tensors that no level further out may hold ({names}{more}), leaving {level.room_bytes:,.0f}")


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
    macs, acc_bits = einsum.macs, engine.accumulator_width_bits
    energy = {("mac", "compute"): macs * mac_j}
    # each MAC reads its two operands from their PE stores and writes its partial sum
    energy[("pe_registers", "read")] = macs * (inputs_j * a_bits + weights_j * w_bits)
    energy[("pe_registers", "write")] = macs * psums_j * acc_bits
    # every MAC passes its streamed operand and its partial sum (or second operand) one PE on
    energy[("array_wires", "transfer")] = macs * (a_bits + max(w_bits, acc_bits)) * wire_j * pitch_mm
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
    accesses = _accesses(arch, workload, names, einsum.output.tensor, scores, i)
    for li, level in enumerate(arch.memory):
        energy[(level.name, "read")] = energy.get((level.name, "read"), 0.0) + float(scores.level_energy_j[i, li, 0])
        energy[(level.name, "write")] = energy.get((level.name, "write"), 0.0) + float(scores.level_energy_j[i, li, 1])
    total = float(scores.total_cycles[i])
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    peak = engine.roof_per_cycle(einsum, workload)   # MACs a cycle at the operands' widths
    return Cost(macs=einsum.macs, compute_cycles=float(scores.compute_cycles[i]),
                stall_cycles=float(scores.stall_cycles[i]), fill_drain_cycles=float(scores.fill_drain_cycles[i]),
                accesses=accesses, energy_j=energy,
                utilization=einsum.macs / (peak * total * (1 / clock_ratio)) if total > 0 else 0.0)


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
    skew = engine.skew_cycles * arch.clock_hz / arch.engine_clock_hz(engine)
    busiest = max(engine.level_busy_cycles(cost, workload, arch).values(), default=0.0)
    total = max(cost.compute_cycles + skew, busiest)
    return replace(cost, fill_drain_cycles=skew, stall_cycles=total - cost.compute_cycles - skew,
                   utilization=cost.utilization * cost.total_cycles / total if total > 0 else 0.0)


# ---------------------------------------------------------------------------------------------
# Systolic candidates scored in one vectorized batch (the mapper's exact cost model)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreDetail:
    """The per-level counts and energies of the distinct candidates one scoring computed, which `SystolicScores`
    reads by row: a search reads only its winner's, so equal candidates and gathered rows share these arrays."""

    resident: np.ndarray          # bool (D, T): tensor kept whole on chip (else streamed tile by tile)
    read: np.ndarray              # (D, L, T) elements, per the residency choice; likewise fill/update/write
    fill: np.ndarray
    update: np.ndarray
    write: np.ndarray
    widened_bits: np.ndarray      # (D, 4, L): bits the output's partial sums at the accumulator width add (loopnest)
    level_energy_j: np.ndarray    # (D, L, 2): read and write joules per level

    def __len__(self) -> int:
        return int(self.resident.shape[0])

    @staticmethod
    def concat(parts: Sequence[ScoreDetail]) -> ScoreDetail:
        """One detail of the rows of `parts`, in order."""
        return joined_rows(parts)


def _by_detail_row(name: str, doc: str) -> property:
    """A `SystolicScores` property: its detail's array `name`, one row per candidate."""
    return property(lambda scores: getattr(scores.detail, name)[scores.detail_row], doc=doc)


@dataclass(frozen=True)
class SystolicScores:
    """Exact costs of B systolic candidates (arrays of shape (B,) unless noted; cycles at the arch clock)."""

    compute_cycles: np.ndarray
    fill_drain_cycles: np.ndarray
    stall_cycles: np.ndarray
    total_cycles: np.ndarray
    energy_j: np.ndarray
    fits: np.ndarray              # bool: some residency choice fits every on-chip level
    detail: ScoreDetail           # per-level counts and energies, read through `detail_row`
    detail_row: np.ndarray        # int (B,): each candidate's row in `detail`

    # every per-candidate array, as `rows` and `concat` keep them aligned (the detail's read through detail_row)
    ARRAYS: ClassVar[tuple[str, ...]] = ("compute_cycles", "fill_drain_cycles", "stall_cycles", "total_cycles",
                                         "energy_j", "fits", *(f.name for f in fields(ScoreDetail)))
    _PER_ROW: ClassVar[tuple[str, ...]] = ARRAYS[:6]

    def __len__(self) -> int:
        return int(self.total_cycles.shape[0])

    # the detail's arrays of every candidate (gathered through detail_row on each access: a search reads its winner's)
    resident = _by_detail_row("resident", "bool (B, T): tensor kept whole on chip (else streamed tile by tile).")
    read = _by_detail_row("read", "(B, L, T) elements read, per the residency choice.")
    fill = _by_detail_row("fill", "(B, L, T) elements filled, per the residency choice.")
    update = _by_detail_row("update", "(B, L, T) elements updated, per the residency choice.")
    write = _by_detail_row("write", "(B, L, T) elements written, per the residency choice.")
    widened_bits = _by_detail_row("widened_bits", "(B, 4, L): bits the output's partial sums at the accumulator "
                                  "width add.")
    level_energy_j = _by_detail_row("level_energy_j", "(B, L, 2): read and write joules per level.")

    def objective(self, objective: str) -> np.ndarray:
        """Cycles, joules or their product per candidate (non-fitting candidates: +inf)."""
        return fitting_objective(self.total_cycles, self.energy_j, self.fits, objective)

    def rows(self, rows: slice | np.ndarray) -> SystolicScores:
        """The scores of some of the candidates (a slice or an index array), sharing this one's detail."""
        return SystolicScores(*(getattr(self, name)[rows] for name in self._PER_ROW), self.detail,
                              self.detail_row[rows])

    @staticmethod
    def concat(parts: Sequence[SystolicScores]) -> SystolicScores:
        """One Scores of the candidates of `parts`, in order (`spec.mapspace.concat_scores`)."""
        details = list({id(p.detail): p.detail for p in parts}.values())
        start = dict(zip((id(d) for d in details), np.cumsum([0, *(len(d) for d in details)])))
        return SystolicScores(*(np.concatenate([getattr(p, name) for p in parts]) for name in SystolicScores._PER_ROW),
                              details[0] if len(details) == 1 else ScoreDetail.concat(details),
                              np.concatenate([p.detail_row + start[id(p.detail)] for p in parts]))


def candidate_key(batch: MappingBatch, group: np.ndarray) -> np.ndarray:
    """int (B, K): one row per candidate that equal candidates (factors, orders, bypasses, fan-out, group) share."""
    return _key(batch, batch.order, group)


def score_key(batch: MappingBatch, group: np.ndarray) -> np.ndarray:
    """int (B, K): `candidate_key` with each level's loop order cut to its loops of factor above 1, in their order:
    candidates that differ only in where their unit loops sit score alike (a loop of factor 1 is no loop to the
    loop nests, `loopnest._changes` and `residency._collapsed_loops`; fold timing and residency read no order), so
    one analysis serves them all."""
    nonunit = np.take_along_axis(batch.temporal, batch.order, axis=2) > 1             # (B, L, R) in loop order
    # each rank's place among its level's non-unit loops (-1 for a unit loop), by rank: the order those loops run in
    places = np.where(nonunit, np.cumsum(nonunit, axis=2) - 1, -1)
    by_rank = np.empty_like(places)
    np.put_along_axis(by_rank, batch.order, places, axis=2)
    return _key(batch, by_rank, group)


def _key(batch: MappingBatch, order: np.ndarray, group: np.ndarray) -> np.ndarray:
    """int (B, K): a batch's factors, `order`, spatial factors, bypasses, fan-out and group, one row a candidate."""
    b = len(batch)
    return np.concatenate([batch.temporal.reshape(b, -1), order.reshape(b, -1), batch.spatial.reshape(b, -1),
                           batch.bypass.reshape(b, -1), batch.fanout[:, None], group[:, None]], axis=1)


@dataclass(frozen=True)
class PreparedBatch:
    """The part of `systolic_scores` that only the candidates, the einsum, the engine and the arch's level layout
    decide (`spec.mapspace.layout_key`; not capacities, bandwidths, clocks or access energies): the loop-nest
    analyses and the fold timing."""

    analyses: ArrayAnalyses
    timing: FoldTiming

    def __len__(self) -> int:
        return len(self.timing.folds)

    def rows(self, selection: np.ndarray) -> PreparedBatch:
        """The prepared part of the candidates at `selection` (an index array)."""
        return PreparedBatch(self.analyses.rows(selection), self.timing.rows(selection))

    @staticmethod
    def concat(parts: Sequence[PreparedBatch]) -> PreparedBatch:
        """One prepared part of the candidates of `parts` (batches of one einsum on one engine), rows in order."""
        return PreparedBatch(ArrayAnalyses.concat([p.analyses for p in parts]),
                             FoldTiming.concat([p.timing for p in parts]))


def systolic_prepare(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
                     dataflow: np.ndarray, timing: FoldTiming | None = None) -> PreparedBatch:
    """The loop-nest analyses (`array_analyses`) and fold timing (`systolic_timing`, unless given: a bound's) of a
    batch."""
    if timing is None:
        timing = systolic_timing(einsum, engine, gemm_roles(einsum, workload.tensor_map), batch, dataflow,
                                 engine.operand_passes(einsum, workload))
    return PreparedBatch(array_analyses(einsum, workload, arch, engine.rows, engine.cols, batch, dataflow,
                                        engine.accumulator_width_bits), timing)


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


def array_cycles(arch: Arch, engine: SystolicEngine, timing: FoldTiming) -> tuple[np.ndarray, np.ndarray]:
    """(compute, fill and drain) cycles (B,) at the arch clock of candidates with fold timing `timing`, stationary
    tiles loaded behind the previous fold where the engine double-buffers them."""
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    compute, fill_drain = _engine_cycles(engine, timing)
    return compute.astype(float) * clock_ratio, fill_drain.astype(float) * clock_ratio


def _engine_cycles(engine: SystolicEngine, timing: FoldTiming) -> tuple[np.ndarray, np.ndarray]:
    """`array_cycles` at the engine's clock (integers)."""
    folds, t, per_fold = timing.folds, timing.temporal, timing.cycles_per_fold
    hidden = hidden_fold_cycles(folds, t, per_fold, engine.load_cycles, engine.stationary_buffering)
    return folds * t, folds * (per_fold - t) - hidden


@dataclass(frozen=True)
class BoundParts:
    """What `systolic_bounds` reads of a batch that only the candidates, the einsum, the engine and the arch's level
    layout decide (not capacities, bandwidths, clocks or energies), so designs that differ in those share it."""

    timing: FoldTiming          # the batch's folds (which scoring the candidates kept reads again)
    engine_cycles: np.ndarray   # (B,) compute, fill and drain at the engine clock
    read_bytes: np.ndarray      # (B, L) compulsory bytes read at each level: the inputs', at their backing stores
    write_bytes: np.ndarray     # (B, L) likewise written: the output's


def bound_parts(einsum: Einsum, workload: Workload, engine: SystolicEngine, batch: MappingBatch,
                dataflow: np.ndarray) -> BoundParts:
    """The `BoundParts` of a batch: its fold timing's cycles, and each tensor's compulsory bytes (roofline.py) at
    its backing store, the outermost level the candidate keeps it at."""
    timing = systolic_timing(einsum, engine, gemm_roles(einsum, workload.tensor_map), batch, dataflow,
                             engine.operand_passes(einsum, workload))
    traffic = compulsory_traffic(einsum, workload)
    names = batch.tensor_names
    reads = np.array([traffic.read_bytes.get(n, 0.0) for n in names])
    writes = np.array([traffic.write_bytes.get(n, 0.0) for n in names])
    kept = ~batch.bypass                                                              # (B, L, T)
    count, levels = kept.shape[:2]
    # each (candidate, tensor)'s bytes go to the flat (candidate, backing level) cell; a tensor no level keeps (none
    # in a legal mapping) is charged nowhere: a bound must not guess
    cell = kept.argmax(axis=1) + levels * np.arange(count)[:, None]                  # (B, T)
    held = any_along(kept, 1)

    def at_backing(per_tensor: np.ndarray) -> np.ndarray:
        return np.bincount(cell[held], np.broadcast_to(per_tensor, held.shape)[held],
                           minlength=count * levels).reshape(count, levels)

    return BoundParts(timing, sum(_engine_cycles(engine, timing)), at_backing(reads), at_backing(writes))


def systolic_bounds(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, parts: BoundParts
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(cycles, joules) (B,) that no candidate's `systolic_scores` falls below, from `bound_parts`: the array's
    compute, fill and drain (the prologue left out), against each tensor's compulsory bytes moved once at its
    backing store (inputs read, the output written), at that level's bandwidth and access energy, plus the energy
    every MAC spends. Every traffic choice moves a tensor's footprint through its backing store at least once, so
    these hold whatever the capacities choose; costing a candidate's loop nests is most of a score, and a search
    skips those whose bounds already lose (`mapper.search`)."""
    compute = parts.engine_cycles.astype(float) * (arch.clock_hz / arch.engine_clock_hz(engine))
    busiest = engine.levels_transfer_cycles(parts.read_bytes, parts.write_bytes, arch).max(axis=1)
    per_bit = levels_energy_per_bit(arch)
    energy = (sum(_per_mac_energy(einsum, workload, arch, engine).values())
              + 8 * (parts.read_bytes @ per_bit[:, 0] + parts.write_bytes @ per_bit[:, 1]))
    return np.maximum(compute, busiest), energy


def systolic_scores(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
                    dataflow: np.ndarray, prepared: PreparedBatch | None = None) -> SystolicScores:
    """Cycles (compute, fill/drain, bandwidth stalls), energy and fit of every candidate in one pass.

    `dataflow` (B,) indexes DATAFLOW_CODES. Each operand is either streamed tile by tile as the mapping says
    (double-buffered on chip, so the next tile loads while this one computes) or kept whole on chip,
    whichever fits with the least outermost-level traffic (then least total traffic) - per candidate.
    `prepared`: `systolic_prepare` of this batch, possibly on another arch with the same level layout (only
    element counts, tile sizes and folds are read from it, which that layout alone decides with the candidates).
    """
    return prepared_scores(einsum, workload, arch, engine, prepared if prepared is not None else
                           systolic_prepare(einsum, workload, arch, engine, batch, dataflow))


def prepared_scores(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                    prepared: PreparedBatch) -> SystolicScores:
    """`systolic_scores` of the candidates `prepared` holds (their analyses name them), on `arch`."""
    analyses = prepared.analyses
    traffic = array_traffic(einsum, workload, arch, engine.rows, engine.cols, analyses)
    busiest = engine.levels_transfer_cycles(traffic.level_read_bytes, traffic.level_write_bytes, arch).max(axis=1)

    compute, fill_drain = array_cycles(arch, engine, prepared.timing)
    prologue = prologue_cycles(einsum, workload, arch, engine, analyses.streamed)
    total = np.maximum(compute + fill_drain + prologue, busiest)
    energy = sum(_per_mac_energy(einsum, workload, arch, engine).values()) + traffic.level_energy_j.sum(axis=(1, 2))
    detail = ScoreDetail(traffic.resident, traffic.read, traffic.fill, traffic.update, traffic.write,
                         traffic.widened_bits, traffic.level_energy_j)
    return SystolicScores(compute, fill_drain, total - compute - fill_drain, total, energy, traffic.fits, detail,
                          np.arange(len(total)))


def vector_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: VectorEngine) -> Cost:
    """An elementwise/reduction einsum on SIMD lanes: ops / lanes cycles against compulsory traffic, data wider than
    a lane taking several (`VectorEngine.element_passes`)."""
    lanes = engine.lanes / engine.element_passes(einsum, workload)
    if einsum.op == "mac":
        return elementwise_cost(einsum, workload, arch, engine, lanes, einsum.macs)
    return elementwise_cost(einsum, workload, arch, engine, lanes,
                            einsum.iteration_points if engine.chained_ops else einsum.ops)


def elementwise_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase, lanes: float,
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


def _accesses(arch: Arch, workload: Workload, names: tuple[str, ...], output: str,
              counts: SystolicScores | ArrayTraffic, i: int) -> dict[tuple[str, str, str], float]:
    """Candidate i's non-zero accesses as {(level, tensor, action): elements} (the `Cost.accesses` form); open
    partial sums wider than their tensor count in elements of its width, so elements x bits / 8 stays the bytes
    moved (as the GPU engine counts its fp32 partial sums)."""
    accesses: dict[tuple[str, str, str], float] = {}
    bits = [workload.tensor_map[t].bits for t in names]
    for li, level in enumerate(arch.memory):
        for a, action in enumerate(("read", "fill", "update", "write")):   # loopnest's READ, FILL, UPDATE, WRITE
            arr = getattr(counts, action)
            for ti, tensor in enumerate(names):
                wide = float(counts.widened_bits[i, a, li]) if tensor == output else 0.0
                elements = float(arr[i, li, ti]) + wide / bits[ti]
                if elements:
                    accesses[(level.name, tensor, action)] = elements
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
    traffic = array_traffic(einsum, workload, arch, rows, cols, analyses)
    if not traffic.fits[0]:
        # no choice fits, even staging every operand: the traffic of the choice left would assume tiles that the
        # levels cannot hold (a smaller buffer then looked faster than a larger one)
        raise unfit_error(einsum, workload, arch, engine.name, rows, cols, [(rows, cols, batch, codes)], None)
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
    return GemmTraffic(_accesses(arch, workload, tensor_names(einsum), einsum.output.tensor, traffic, 0), energy,
                       level_cycles, prologue)
