"""Where each operand of a systolic candidate lives: resident, streamed or spilled, as the capacities allow.

Each operand either stays resident in an on-chip level (fetched once) or streams fold by fold, whichever the
capacities allow with the least outer-level traffic. Where neither fits, the operand spills: it is kept only
at the outermost level that holds it (its backing store) and moves between there and the array through the
inner levels too small for its tiles, which stage it without reuse (Timeloop's bypass per dataspace, Parashar
et al., ISPASS 2019, Sec. III; SCALE-Sim's SRAMs likewise pass every operand whatever their size): a spilled
output's partial sums go out to the backing store at the end of every fold and come back for the next. Open
partial sums take the engine's accumulator width wherever they are kept or moved (`analyze`'s
`accumulator_bits`), each output element's final value its own width (but in an accumulator memory, which keeps
all of it wide: loopnest.py). A
spill is chosen only when no choice without it fits. A staging level still holds two cycles of what the
operand moves across the array's edge (`spilled_occupancy`). A mapping that fits nowhere, even spilled (a
backing store on chip too small for its tile, a staging level too small for two cycles of edge transfer, or
more PEs than the array has), does not fit. The costs of the choice are in costing.py.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy.components import is_off_chip, level_energy_per_bit
from accel_sim.engines.fold_timing import role_masks
from accel_sim.engines.loopnest import (FILL, READ, UPDATE, WRITE, LoopnestAnalysis, access_of,
                                        accumulator_memories, analyze, gemm_roles, tile_footprint)
from accel_sim.engines.rows import distinct_rows
from accel_sim.spec.mapping import MappingBatch, concat_batches

if TYPE_CHECKING:
    from collections.abc import Mapping as MappingType
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Tensor, Workload

STREAMED, RESIDENT, SPILLED = 0, 1, 2   # how one operand of a candidate moves (array_traffic)


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


def spilled(batch: MappingBatch) -> MappingBatch:
    """The same candidates with every tensor kept only at the outermost level that keeps it (its backing store):
    the inner levels are bypassed, so its tiles stream from there straight to the PEs."""
    kept = ~batch.bypass                                                              # (B, L, T)
    outermost = kept.argmax(axis=1)                                                   # (B, T)
    inner = np.arange(batch.bypass.shape[1])[None, :, None] > outermost[:, None, :]
    return replace(batch, bypass=batch.bypass | inner)


KEPT_CHOICES = 8  # choices (and spilled layouts) an analysed batch keeps the traffic of: each about as large as it


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
    accumulator_bits: float | None             # width of the output's open partial sums (`analyze`)

    def rows(self, selection: np.ndarray) -> ArrayAnalyses:
        """The analyses of the candidates at `selection` (an index array), with the tile bytes, traffic and ranking
        already computed for every candidate taken for them rather than computed again."""
        out = replace(self, batch=self.batch.rows(selection), folds=self.folds[selection],
                      streamed=self.streamed.rows(selection), collapsed=self.collapsed.rows(selection))
        for name in ("held", "moved"):   # cached (V, B, L, T) arrays
            if name in self.__dict__:
                out.__dict__[name] = self.__dict__[name][:, selection]
        if "ranking" in self.__dict__:
            out.__dict__["ranking"] = self.ranking.rows(selection)
        return out

    @staticmethod
    def concat(parts: Sequence[ArrayAnalyses]) -> ArrayAnalyses:
        """One `ArrayAnalyses` of the candidates of `parts` (of one einsum on one array and arch), rows in order,
        with the tile bytes, traffic and ranking every part has computed."""
        out = replace(parts[0], batch=concat_batches([p.batch for p in parts]),
                      folds=np.concatenate([p.folds for p in parts]),
                      streamed=LoopnestAnalysis.concat([p.streamed for p in parts]),
                      collapsed=LoopnestAnalysis.concat([p.collapsed for p in parts]))
        for name in ("held", "moved"):
            if all(name in p.__dict__ for p in parts):
                out.__dict__[name] = np.concatenate([p.__dict__[name] for p in parts], axis=1)
        if all("ranking" in p.__dict__ for p in parts):
            out.__dict__["ranking"] = ResidencyRanking(parts[0].ranking.combos,
                                                       np.concatenate([p.ranking.ranked for p in parts]),
                                                       np.concatenate([p.ranking.occupancy for p in parts]))
        return out

    def spilled_rows(self, rows: np.ndarray) -> LoopnestAnalysis:
        """The spilled layout's analysis of the candidates at `rows` (an index array)."""
        return analyze(self.einsum, self.tensors, self.arch, self.axes, spilled(self.batch.rows(rows)),
                       pe_folds=self.folds[rows], accumulator_bits=self.accumulator_bits)

    @property
    def bits(self) -> np.ndarray:
        """(T,) bits of an element of each tensor."""
        return np.array([self.tensors[t].bits for t in self.batch.tensor_names], dtype=float)

    @cached_property
    def traffic_memo(self) -> dict[tuple, object]:
        """`array_traffic`'s results by choice, and the `SpillChoice` by the candidates that need one, for the
        designs (capacities) that choose alike."""
        return {}

    def spill_choice(self, einsum: Einsum, workload: Workload, arch: Arch, need: np.ndarray,
                     on_chip: np.ndarray) -> SpillChoice:
        """The `SpillChoice` of the candidates at `need`: what no capacity decides, kept for the designs whose
        capacities leave the same candidates without a fit."""
        key = ("spill", need.tobytes(), on_chip.tobytes())
        found = self.traffic_memo.get(key)
        if found is None:
            spill = self.spilled_rows(need)
            staged = _staged(self.batch.rows(need), spill)
            staged_wide = _staged_widened(einsum, arch, self.batch.rows(need), spill, staged)
            held = np.concatenate([self.held[:, need], spilled_occupancy(einsum, workload, arch,
                                                                         self.batch.rows(need), spill)[None]])
            staged_bits = sum(staged) * self.bits
            staged_bits[..., self.streamed.output] += staged_wide.sum(axis=1)
            moved = np.concatenate([self.moved[:, need], (staged_bits / 8)[None]])
            found = SpillChoice(staged, staged_wide,
                                residency_ranking(held, moved, (STREAMED, RESIDENT, SPILLED), spilling=True))
            if len(self.traffic_memo) < KEPT_CHOICES:
                self.traffic_memo[key] = found
        return found

    @cached_property
    def held(self) -> np.ndarray:
        """(2, B, L, T) bytes each tensor's tiles take at each level, streamed (double-buffered on chip: one tile
        streams in while the last is used) and resident."""
        on_chip = np.array([not is_off_chip(lv) for lv in self.arch.memory])[None, :, None]
        streamed, resident = (v.tile_bytes for v in (self.streamed, self.collapsed))
        return np.stack([np.where(on_chip, 2 * streamed, streamed), resident])

    @cached_property
    def moved(self) -> np.ndarray:
        """(2, B, L, T) bytes each tensor moves at each level (read, filled, updated, written), streamed and
        resident."""
        return np.stack([v.moved_bytes for v in (self.streamed, self.collapsed)])

    @cached_property
    def ranking(self) -> ResidencyRanking:
        """The streamed and resident combinations ranked (`residency_ranking`): computed once, whatever capacities
        then choose from it."""
        return residency_ranking(self.held, self.moved, (STREAMED, RESIDENT))


def array_analyses(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int, batch: MappingBatch,
                   dataflow: np.ndarray, accumulator_bits: float | None = None) -> ArrayAnalyses:
    """The loop-nest analyses `array_traffic` reads of a batch on a rows x cols array (`ArrayAnalyses`), the
    output's open partial sums `accumulator_bits` wide (None: the output's own width)."""
    # one analysis over the layouts: the per-call set-up dominates small batches. All run the streamed layout's
    # folds: every temporal iteration except the time role's loops at the innermost level, which stream through
    # the array within a fold (systolic_timing). A reduction fold at the innermost level is a fold too: a
    # weight- or input-stationary array sends its partial sums out at the end of each.
    time = role_masks(einsum, gemm_roles(einsum, workload.tensor_map), batch.rank_names)[dataflow][:, 2]
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
                   pe_folds=np.concatenate([folds, folds[first]]), accumulator_bits=accumulator_bits)
    return ArrayAnalyses(einsum, workload.tensor_map, arch, axes, batch, folds, both.rows(slice(0, b)),
                         both.rows(b + inverse), accumulator_bits)


@dataclass(frozen=True)
class ArrayTraffic:
    """Traffic of B candidates on an array with each operand streamed, resident or spilled as the capacities allow."""

    fits: np.ndarray              # bool (B,): some choice fits every on-chip level, and the array the PEs
    choice: np.ndarray            # int (B, T): STREAMED | RESIDENT | SPILLED per tensor
    read: np.ndarray              # (B, L, T) elements, per the choice; likewise fill/update/write
    fill: np.ndarray
    update: np.ndarray
    write: np.ndarray
    widened_bits: np.ndarray      # (B, 4, L): bits the output's partial sums at the accumulator width add (loopnest)
    level_read_bytes: np.ndarray  # (B, L): bytes read at each level
    level_write_bytes: np.ndarray  # (B, L): bytes written (filled, updated, written) at each level
    level_energy_j: np.ndarray    # (B, L, 2): read and write joules per level

    @property
    def resident(self) -> np.ndarray:
        """bool (B, T): tensor kept whole on chip."""
        return self.choice == RESIDENT


def array_traffic(einsum: Einsum, workload: Workload, arch: Arch, rows: int, cols: int,
                  analyses: ArrayAnalyses) -> ArrayTraffic:
    """Per candidate, the choice per operand (streamed, resident, spilled) that fits with the fewest spilled
    operands, then the least outermost-level traffic, then the least total traffic, and its accesses, bytes and
    energy per level; `analyses` from `array_analyses`."""
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])
    capacity = np.array([np.inf if lv.room_bytes is None else lv.room_bytes for lv in arch.memory])
    fits, choice = analyses.ranking.choose(on_chip, capacity)
    # a spill is chosen only where no choice without one fits: only those candidates need the spilled layout
    need = np.flatnonzero(~fits)
    spill = analyses.spill_choice(einsum, workload, arch, need, on_chip) if len(need) else None
    if spill is not None:
        fits[need], choice[need] = spill.ranking.choose(on_chip, capacity)
    # designs that differ in a capacity (a sweep's buffer axis) mostly choose alike: a choice seen before has that
    # choice's traffic (what follows reads only the analyses and it); only the energies, which the levels' sizes
    # price, are recomputed
    key = (rows, cols, on_chip.tobytes(), need.tobytes(), fits.tobytes(), choice.tobytes())
    found = analyses.traffic_memo.get(key)
    if found is None:
        found = _chosen_traffic(analyses, rows, cols, need, spill, fits, choice)
        if len(analyses.traffic_memo) < KEPT_CHOICES:
            for array in found:
                array.flags.writeable = False   # shared by every later design that chooses alike
            analyses.traffic_memo[key] = found
    fits, choice, read, fill, update, write, widened, read_bits, write_bits = found
    per_bit = levels_energy_per_bit(arch)
    level_energy = np.stack([read_bits * per_bit[:, 0], write_bits * per_bit[:, 1]], axis=2)
    return ArrayTraffic(fits, choice, read, fill, update, write, widened, read_bits / 8, write_bits / 8,
                        level_energy)


def levels_energy_per_bit(arch: Arch) -> np.ndarray:
    """(L, 2) read and write joules per bit of every memory level, outer to inner (`level_energy_per_bit`)."""
    return np.array([level_energy_per_bit(lv, arch.technology_nm) for lv in arch.memory])


@dataclass(frozen=True)
class SpillChoice:
    """The spilled layout of the candidates no choice without a spill fits (`ArrayAnalyses.spill_choice`): its
    accesses through the staging levels and the ranking of the combinations with a spill."""

    staged: tuple[np.ndarray, ...]   # (read, fill, update, write) elements (N, L, T), `_staged`
    staged_wide: np.ndarray          # (N, 4, L) bits of the output's partial sums beyond its width
    ranking: ResidencyRanking        # the combinations with a spill, best first


def _chosen_traffic(analyses: ArrayAnalyses, rows: int, cols: int, need: np.ndarray, spill: SpillChoice | None,
                    fits: np.ndarray, choice: np.ndarray) -> tuple[np.ndarray, ...]:
    """(fits, choice, read, fill, update, write, widened, read bits, write bits) of `array_traffic`'s choice,
    `spill` the spilled layout of the candidates at `need`."""
    bits = analyses.bits
    streamed, resident = ((v.read_elements, v.fill_elements, v.update_elements, v.write_elements)
                          for v in (analyses.streamed, analyses.collapsed))
    wide_s, wide_r = analyses.streamed.widened_bits, analyses.collapsed.widened_bits   # (B, 4, L)
    out = analyses.streamed.output
    kept = (choice == RESIDENT)[:, None, :]
    read, fill, update, write = (np.where(kept, r, s) for s, r in zip(streamed, resident))
    widened = np.where(kept[:, :, out, None], wide_r, wide_s)
    if spill is not None:
        picked = choice[need][:, None, :]
        for full, s, r, part in zip((read, fill, update, write), streamed, resident, spill.staged):
            full[need] = np.where(picked == SPILLED, part, np.where(picked == RESIDENT, r[need], s[need]))
        picked_out = picked[:, :, out, None]
        widened[need] = np.where(picked_out == SPILLED, spill.staged_wide,
                                 np.where(picked_out == RESIDENT, wide_r[need], wide_s[need]))
    fits = fits & (analyses.batch.spatial.prod(axis=2) <= np.array([rows, cols])).all(axis=1)   # PE count
    read_bits = (read * bits).sum(axis=2) + widened[:, READ]
    write_bits = ((fill + update + write) * bits).sum(axis=2) + widened[:, FILL] + widened[:, UPDATE] + widened[:, WRITE]
    return fits, choice, read, fill, update, write, widened, read_bits, write_bits


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
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])[None, :, None]
    outermost, route = _staging_route(batch)
    stage = 2 * edge_elements(einsum, workload, batch)[:, None, :] * route
    # a staging level passes on what the backing store keeps: open partial sums at their width
    stage_bits = np.take_along_axis(spill.tile_bits, outermost, axis=1)
    return np.where(on_chip, 2, 1) * spill.tile_bytes + np.where(on_chip, stage, 0) * stage_bits / 8


@dataclass(frozen=True)
class ResidencyRanking:
    """Per candidate, the combinations of operand variants (one per tensor) best first - fewest spilled operands,
    then least outermost-level traffic, then least total traffic, ties to the first combination - and the bytes
    each keeps per level: what `array_traffic` chooses from once it knows the capacities (`choose`)."""

    combos: np.ndarray      # int (C, T): the variant of each tensor, in itertools.product order
    ranked: np.ndarray      # int (B, C): combination indices, best first
    occupancy: np.ndarray   # (B, C, L): bytes the combination ranked[b, c] keeps at each level

    def rows(self, selection: np.ndarray) -> ResidencyRanking:
        """The ranking of the candidates at `selection` (an index array)."""
        return ResidencyRanking(self.combos, self.ranked[selection], self.occupancy[selection])

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
    return _staged_flow(batch, spill.read_elements, spill.fill_elements, spill.update_elements, spill.write_elements)


def _staged_widened(einsum: Einsum, arch: Arch, batch: MappingBatch, spill: LoopnestAnalysis,
                    staged: tuple[np.ndarray, ...]) -> np.ndarray:
    """(B, 4, L) bits the output's `staged` elements in the spilled layout move beyond its width: a staging level
    passes on the backing store's wide elements, and an accumulator memory takes all of the output wide."""
    out = spill.output
    wide = np.stack(_staged_flow(batch, *spill.widened_bits.transpose(1, 0, 2), tensor=out), axis=1)
    sums_only = accumulator_memories(einsum, arch)
    extra = spill.wide_bits[out] - spill.bits[out]
    wide[:, :, sums_only] = np.stack(staged, axis=1)[:, :, sums_only, out] * extra
    return wide


def _staged_flow(batch: MappingBatch, read: np.ndarray, fill: np.ndarray, update: np.ndarray, write: np.ndarray,
                 tensor: int | None = None) -> tuple[np.ndarray, ...]:
    """`_staged` of any per-(B, L, T) flow of the spilled layout: its elements, or the bits its open partial sums
    add (a staging level passes them on as they are); given `tensor`, the flows are that tensor's alone (B, L)."""
    outermost, kept = _staging_route(batch)
    if tensor is not None:
        outermost, kept = outermost[..., tensor], kept[..., tensor]
    at_home = lambda a: np.take_along_axis(a, outermost, axis=1)                     # noqa: E731
    read_b, update_b, write_b = at_home(read), at_home(update), at_home(write)
    stage = np.where(kept, 1, 0)
    return (read + stage * (read_b + update_b + write_b), fill + stage * read_b, update + stage * update_b,
            write + stage * write_b)
