"""Loop-nest analysis: tile footprints, reuse and accesses per (level, tensor), vectorized over candidates.

Every engine model scores its mappings here. The loop nest is the one `accel_sim.spec.mapping` describes
(Timeloop's convention, Parashar et al., ISPASS 2019); below the innermost memory level the PEs form a
virtual last level whose per-PE tile is one element (the operand register).

For a tensor kept at level l (not bypassed):
- tile(l): elements of the tensor touched by the loops of level l and every loop inside it. For one index
  sum(c_r * x_r) + o over rank tiles t_r the extent is min(prod t_r, sum |c_r| (t_r - 1) + 1), clipped to
  the tensor's dimension: the span of a sliding window (conv rows 2p + r span 2(t_p - 1) + t_r for t_r >= 2)
  without counting the gaps a stride leaves (I[2p] touches t_p rows). The minimum of the two is exact
  for one term and for two terms with a unit coefficient (plain and strided convolutions); otherwise it is
  an upper bound.
- changes(l): how often the tile is replaced, from the loops of the levels above in their loop order:
  the product of all their factors except the innermost run of loops that do not index the tensor (those
  leave the tile in place: stationarity); an irrelevant loop outside a relevant one re-fetches.
- traffic goes between l and its parent, the nearest outer level that keeps the tensor:
  inputs: fill(l) = tile(l) x instances x changes(l), read(parent) = union tile x changes(l), where for levels
  below the spatial fan-out each PE holds its own copy (instances) and PEs that share data are served by one
  read (multicast: the union tile spans the spatial factors; ranks the tensor does not use add nothing);
  outputs: each change sends the tile up; the first visit of an output tile is a `write` at the parent,
  later visits are `update`s that need the partial sum read back (a `read` at the parent and a `fill` at l);
  PEs along a spatial rank the output does not use reduce their partial sums before the write.
  Of an output's traffic between two levels, each element's last visit carries its final value and every other
  visit, and every read-back, an open partial sum, which an engine with wider accumulators moves and keeps at
  the accumulator width (`wide_elements`, `wide_bits`; a tile is wide where any passes through its level). A
  level that keeps the output only as partial sums (it holds 'psums', not 'outputs': TPU v1's Accumulators) is
  an accumulator memory: the final sums too sit in it at that width, quantized on their way out.
- The tile of a tensor's outermost kept level is its backing store: it gets no fills.
With imperfect factors (product above the rank size) tiles are clipped to the rank size for capacity, and
traffic counts the partial last tile as it is: a sweep over a rank moves `size` elements along it, not
tiles x tile extent (exact for one imperfect split per rank; MACs count only real iterations).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Collection, Sequence
from collections.abc import Mapping as MappingType
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy.components import level_energy_per_bit
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count
from accel_sim.spec.mapping import Mapping, MappingBatch, rank_names, tensor_names
from accel_sim.spec.mapspace import joined_rows, rows_of
from accel_sim.spec.workload import Access, Einsum, Tensor

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload


@dataclass(frozen=True)
class LoopnestAnalysis:
    """Per-candidate results; axis names: B candidates, L memory levels (outer -> inner), T tensors."""

    level_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    tile_elements: np.ndarray      # int64 (B, L, T): tile per instance where kept, else 0
    read_elements: np.ndarray      # int64 (B, L, T): read out of the level (to inner levels/PEs, or drained up)
    fill_elements: np.ndarray      # int64 (B, L, T): written into the level from its parent
    update_elements: np.ndarray    # int64 (B, L, T): partial sums written from inner onto an earlier value
    write_elements: np.ndarray     # int64 (B, L, T): first writes of output elements from inner
    wide_elements: np.ndarray      # int64 (B, 4, L): of the output's read, fill, update and write elements, those
                                   # at the accumulator width (actions in `READ, FILL, UPDATE, WRITE` order; only
                                   # the output has partial sums, so the other tensors' would be all 0)
    wide_tiles: np.ndarray         # bool (B, L, T): tile kept at the accumulator width
    iterations: np.ndarray         # int64 (B,): real points of the iteration space the mapping runs
    macs: np.ndarray               # int64 (B,): iterations for a contraction, else 0
    padded_iterations: np.ndarray  # int64 (B,): points including the padding of imperfect factors
    compute_cycles: np.ndarray     # int64 (B,): temporal iterations (one operation per PE per cycle)
    used_pes: np.ndarray           # int64 (B,): product of the spatial factors
    pes: int                       # PEs of the engine (product of the axis sizes)
    # per tensor and per level (tuples, not arrays: every candidate shares them): the byte and energy totals
    # below derive from them on first use, as the systolic scorer reads only the element counts
    bits: tuple[float, ...]                     # (T,) bits of an element
    wide_bits: tuple[float, ...]                # (T,) bits at the accumulator width (`bits` but for a wider output)
    output: int                                 # index of the output in `tensor_names`
    doubled: tuple[float, ...]                  # (L,) 2 where double-buffered, else 1
    capacity: tuple[float, ...]                 # (L,) bytes (inf: unbounded)
    energy_per_bit: tuple[tuple[float, float], ...]   # (L,) read and write joules per bit

    @functools.cached_property
    def tile_bits(self) -> np.ndarray:
        """float (B, L, T): bits of an element of each tile (`wide_bits` where the tile is wide)."""
        return np.where(self.wide_tiles, self.wide_bits, self.bits)

    @property
    def tile_bytes(self) -> np.ndarray:
        """float (B, L, T): bytes of each kept tile per instance (`tile_bits`)."""
        return self.tile_elements * self.tile_bits / 8

    @functools.cached_property
    def widened_bits(self) -> np.ndarray:
        """float (B, 4, L): bits the output's accumulator-width elements move beyond its width."""
        return self.wide_elements * (self.wide_bits[self.output] - self.bits[self.output])

    @property
    def moved_bytes(self) -> np.ndarray:
        """float (B, L, T): bytes each tensor moves at each level (read, filled, updated, written)."""
        elements = self.read_elements + self.fill_elements + self.update_elements + self.write_elements
        moved = elements * np.array(self.bits)
        moved[..., self.output] += self.widened_bits.sum(axis=1)
        return moved / 8

    @functools.cached_property
    def occupancy_bytes(self) -> np.ndarray:
        """float (B, L): kept tiles' bytes per instance, x2 where double-buffered."""
        return self.tile_bytes.sum(axis=2) * np.array(self.doubled)

    @property
    def fits(self) -> np.ndarray:
        """bool (B, L): occupancy within the level's capacity."""
        return self.occupancy_bytes <= np.array(self.capacity)

    @functools.cached_property
    def _level_bits(self) -> tuple[np.ndarray, np.ndarray]:
        """(read, written) bits (B, L) at each level; every sum adds whole numbers of bits, exact in any order."""
        bits, wide = np.array(self.bits), self.widened_bits
        return ((self.read_elements * bits).sum(axis=2) + wide[:, READ],
                ((self.fill_elements + self.update_elements + self.write_elements) * bits).sum(axis=2)
                + wide[:, FILL] + wide[:, UPDATE] + wide[:, WRITE])

    @property
    def level_read_bytes(self) -> np.ndarray:
        """float (B, L): bytes read out of the level (an engine's levels_transfer_cycles -> cycles)."""
        return self._level_bits[0] / 8

    @property
    def level_write_bytes(self) -> np.ndarray:
        """float (B, L): bytes written into the level."""
        return self._level_bits[1] / 8

    @property
    def level_energy_j(self) -> np.ndarray:
        """float (B, L): access energy at the level's per-bit read/write energies."""
        read_e, write_e = np.array(self.energy_per_bit).T
        return self._level_bits[0] * read_e + self._level_bits[1] * write_e

    @property
    def spatial_utilization(self) -> np.ndarray:
        """Used PEs / PEs."""
        return self.used_pes / self.pes

    @property
    def utilization(self) -> np.ndarray:
        """Real iterations / (PEs x compute cycles)."""
        return self.iterations / (self.pes * self.compute_cycles)

    @property
    def level_bytes(self) -> np.ndarray:
        """Bytes read and written at each level (B, L)."""
        return self.level_read_bytes + self.level_write_bytes

    def rows(self, selection: slice | np.ndarray) -> LoopnestAnalysis:
        """The analysis of some of the candidates (a slice or an index array; every per-candidate array alike)."""
        return rows_of(self, selection)

    @staticmethod
    def concat(parts: Sequence[LoopnestAnalysis]) -> LoopnestAnalysis:
        """One analysis of the candidates of `parts` (analyses of one einsum on one arch), rows in order."""
        return joined_rows(parts)


def tile_footprint(tile: np.ndarray, access: Access, shape: Sequence[int], ranks: Sequence[str],
                   axis: int = -1) -> np.ndarray:
    """Elements of `access` touched by rank tiles `tile` (ranks along `axis`), clipped to the tensor's `shape`."""
    r_ix = {r: i for i, r in enumerate(ranks)}
    tile = np.moveaxis(tile, axis, 0)
    out = None
    for index, extent in zip(access.indices, shape):
        terms = [(r_ix[r], c) for r, c in index.terms if c != 0]
        if not terms:
            continue
        if len(terms) == 1 and abs(terms[0][1]) >= 1:   # one term: the span is never below the tile itself
            dim = np.minimum(tile[terms[0][0]], extent)
        else:
            combos = np.prod([tile[i] for i, _ in terms], axis=0)
            span = 1 + sum(abs(c) * (tile[i] - 1) for i, c in terms)
            dim = np.minimum(np.minimum(combos, span), extent)
        out = dim if out is None else out * dim
    return np.ones(tile.shape[1:], dtype=np.int64) if out is None else out


def _changes(ordered: np.ndarray, uses: np.ndarray) -> np.ndarray:
    """Times the tile of each level changes, int64 (T, L + 1, B), from the loops of the levels above it.

    Candidate-last layout: `ordered` (L, R, B) holds each level's loop factors in loop order, `uses`
    (T, L, R, B) whether that loop's rank indexes tensor t. The tile of level l changes with every loop above
    it up to the last one that indexes the tensor (the innermost run of other loops leaves it in place:
    stationarity), so its count is a prefix product of the flattened loop factors up to that loop.
    """
    n_l, n_r, b = ordered.shape
    n_t = uses.shape[0]
    prefix = np.empty((n_l * n_r + 1, b), dtype=np.int64)
    prefix[0] = 1
    np.cumprod(ordered.reshape(n_l * n_r, b), axis=0, out=prefix[1:])
    # a loop of factor 1 is no loop: it neither moves the tile nor ends the stationary run
    step = np.arange(1, n_l * n_r + 1, dtype=np.uint8 if n_l * n_r < 255 else np.int64).reshape(n_l, n_r, 1)
    moving = (uses & (ordered != 1)) * step                 # 1 + loop position where the loop moves the tile
    stops = np.zeros((n_t, n_l + 1, b), dtype=np.intp)
    np.maximum.accumulate(moving.max(axis=2), axis=1, out=stops[:, 1:], dtype=stops.dtype)
    return prefix.reshape(-1).take(stops * b + np.arange(b))


@dataclass(frozen=True)
class _Nest:
    """Per-level, per-rank tile geometry of a batch, candidate-last: L levels, R ranks, B candidates (level L is
    the PEs)."""

    sizes: np.ndarray        # int64 (R, 1)
    temporal: np.ndarray     # (L, R, B) temporal factors
    spatial: np.ndarray      # (R, B) product of the spatial factors per rank
    total: np.ndarray        # (R, B) product of all temporal factors per rank
    order: np.ndarray        # (L, R, B) loop order per level
    ordered: np.ndarray      # (L, R, B) factors in loop order
    below: np.ndarray        # bool (L, B): level below the spatial fan-out (one copy per PE)
    instances: np.ndarray    # (L+1, B): copies of each level's tile
    used_pes: np.ndarray     # (B,)
    union_tile: np.ndarray   # (L+1, R, B): rank extents the union of the instances' tiles spans
    pe_tile: np.ndarray | None   # (L, R, B): a PE's own tile below the fan-out; None when no level is below
    union_share: np.ndarray  # (L+1, R, B): real fraction of the union tile's visits (imperfect factors)
    inst_share: np.ndarray   # (L+1, R, B): likewise for one instance's tile


def _nest(einsum: Einsum, batch: MappingBatch) -> _Nest:
    """The tile geometry of every candidate in `batch` (every per-level and per-rank step one SIMD operation)."""
    b, n_l, n_r = batch.temporal.shape
    sizes = np.array([einsum.sizes[r] for r in batch.rank_names], dtype=np.int64)[:, None]     # (R, 1)
    temporal = np.ascontiguousarray(batch.temporal.transpose(1, 2, 0))                          # (L, R, B)
    spatial_all = np.ascontiguousarray(batch.spatial.prod(axis=1).T)                            # (R, B)
    inner = np.cumprod(temporal[::-1], axis=0)[::-1]                                            # levels l.. inner
    below = np.arange(n_l)[:, None] > batch.fanout[None, :]                                     # (L, B): per-PE
    # level n_l is the PEs; the union of the instances' tiles spans the spatial factors (multicast)
    union_tile = np.minimum(np.concatenate([inner * spatial_all, spatial_all[None]]), sizes)   # (L+1, R, B)
    order = batch.order.transpose(1, 2, 0)                                                      # (L, R, B)
    # factors in loop order: one flat gather (take_along_axis builds index grids for every axis)
    ordered = temporal.reshape(-1).take(order * b + (np.arange(n_l) * n_r * b)[:, None, None] + np.arange(b))
    used_pes = spatial_all.prod(axis=0)
    per_pe = np.concatenate([below, np.ones((1, b), bool)])                                     # (L+1, B)
    instances = np.where(per_pe, used_pes, 1)

    # Partial last tiles (imperfect factors): over a full sweep of a rank its tiles hold `size` elements,
    # not (tiles x tile extent); scale each count by size / (outer iterations x extent per visit) per rank.
    total = inner[0]                                                                            # (R, B)
    # iterations of the levels above each level (exact products: total // inner without the division)
    outer = np.empty((n_l + 1, n_r, b), dtype=np.int64)
    outer[0] = 1
    np.cumprod(temporal, axis=0, out=outer[1:])
    union_share = np.minimum(1.0, sizes / (outer * union_tile))                                # (L+1, R, B)
    # An instance's tile is the union tile above the fan-out and one element at the PEs; below the fan-out
    # it is each PE's own tile, whose extent per visit spans the spatial factors again.
    inst_share = union_share.copy()
    inst_share[n_l] = np.minimum(1.0, sizes / (outer[n_l] * spatial_all))
    pe_tile = None
    if below.any():
        pe_tile = np.minimum(inner, sizes)
        inst_share[:n_l] = np.where(below[:, None, :], np.minimum(1.0, sizes / (outer[:n_l] * (pe_tile * spatial_all))),
                                    union_share[:n_l])
    return _Nest(sizes, temporal, spatial_all, total, order, ordered, below, instances, used_pes, union_tile,
                 pe_tile, union_share, inst_share)


@dataclass(frozen=True)
class _Keeping:
    """Which levels keep each tensor and where their traffic goes: T tensors, L levels, B candidates."""

    relevant: np.ndarray     # bool (T, R): rank indexes the tensor
    changes: np.ndarray      # int64 (T, L+1, B): times each level's tile changes (`_changes`)
    positions: np.ndarray    # int64 (T, L+1, B): distinct tile positions the loops above a level visit
    kept: np.ndarray         # bool (T, L+1, B): level keeps the tensor (the PEs always do)
    child: np.ndarray        # int64 (T, L, B): nearest kept level below, which sends its traffic here
    has_parent: np.ndarray   # bool (T, L+1, B): a kept level lies above


def _keeping(einsum: Einsum, batch: MappingBatch, nest: _Nest, pe_folds: np.ndarray | None) -> _Keeping:
    """Stationarity, tile positions and the kept-level chain of every tensor of `batch` (`pe_folds`: `analyze`)."""
    b, n_l, _ = batch.temporal.shape
    names = batch.tensor_names
    n_t = len(names)
    indexing = [set(access.ranks) for access in (access_of(einsum, t) for t in names)]
    relevant = np.array([[r in ranks for r in batch.rank_names] for ranks in indexing])        # (T, R)
    changes = _changes(nest.ordered, relevant.take(nest.order, axis=1))                       # (T, L+1, B)
    if pe_folds is not None:
        np.maximum(changes[:, n_l], pe_folds, out=changes[:, n_l])
    # distinct tile positions: the loops above a level that index the tensor, in whatever order
    positions = np.ones((n_t, n_l + 1, b), dtype=np.int64)
    for ti in range(n_t):
        np.cumprod(nest.temporal[:, relevant[ti]].prod(axis=1), axis=0, out=positions[ti, 1:])
    # where a tensor is kept, its nearest kept level below (the PEs always keep it) sends its traffic here;
    # a level has an active child exactly when it keeps the tensor
    kept = np.concatenate([~batch.bypass.transpose(2, 1, 0), np.ones((n_t, 1, b), bool)], axis=1)   # (T, L+1, B)
    child = np.empty((n_t, n_l, b), dtype=np.int64)
    nearest = np.full((n_t, b), n_l, dtype=np.int64)
    for lv in range(n_l - 1, -1, -1):
        child[:, lv] = nearest
        nearest = np.where(kept[:, lv], lv, nearest)
    has_parent = np.cumsum(kept, axis=1) > kept                                                 # a kept level above
    return _Keeping(relevant, changes, positions, kept, child, has_parent)


def access_of(einsum: Einsum, tensor: str) -> Access:
    """The einsum's access of `tensor`: its output, else its first input access."""
    if tensor == einsum.output.tensor:
        return einsum.output
    return next(acc for acc in einsum.inputs if acc.tensor == tensor)


READ, FILL, UPDATE, WRITE = range(4)   # action axis of `_element_counts`


def _element_counts(einsum: Einsum, tensors: MappingType[str, Tensor], batch: MappingBatch, nest: _Nest,
                    keep: _Keeping) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts (4 actions, T, L, B) of elements read, filled, updated and written, the output's open partial
    sums among them (4, L, B), tiles (T, L, B) where kept)."""
    b, n_l, _ = batch.temporal.shape
    n_t = len(batch.tensor_names)
    counts = np.zeros((4, n_t, n_l, b))
    partial = np.zeros((4, n_l, b))
    tile_elements = np.zeros((n_t, n_l, b), dtype=np.int64)
    cols = np.arange(b)
    for ti, name in enumerate(batch.tensor_names):
        access = access_of(einsum, name)
        shape = tensors[name].shape
        rel = keep.relevant[ti]
        union_footprint = tile_footprint(nest.union_tile, access, shape, batch.rank_names, axis=1)   # (L+1, B)
        footprint = union_footprint.copy()
        footprint[n_l] = 1
        if nest.pe_tile is not None:
            footprint[:n_l] = np.where(nest.below, tile_footprint(nest.pe_tile, access, shape, batch.rank_names,
                                                                  axis=1), union_footprint[:n_l])
        above = keep.kept[ti, :n_l]
        tile_elements[ti] = np.where(above, footprint[:n_l], 0)
        own = (footprint * nest.instances) * nest.inst_share[:, rel].prod(axis=1)
        union = union_footprint * nest.union_share[:, rel].prod(axis=1)
        active = (keep.kept[ti] & keep.has_parent[ti])[:n_l]
        below_me = keep.child[ti] * b + cols   # flat index of the child's entry in an (L+1, B) array

        def up(values: np.ndarray) -> np.ndarray:
            """Each kept level's share of its child's traffic `values` (L+1, B); 0 where not kept."""
            return np.where(above, values.reshape(-1).take(below_me), 0)

        ch, pos = keep.changes[ti], keep.positions[ti]
        if name == einsum.output.tensor:
            again = ch - pos     # returns to an output tile already written once
            counts[WRITE, ti] = up(union * pos)
            back = up(union * again)
            counts[UPDATE, ti] = back
            counts[READ, ti] = np.where(active, (own * ch)[:n_l], 0) + back
            counts[FILL, ti] = np.where(active, (own * again)[:n_l], 0)
            # of the ch visits to each position, the last (pos) carries the final value: the other `again` visits
            # and every read-back are open partial sums; the first writes are among them when a visit follows
            opened = up(union * np.minimum(pos, again))
            partial[READ] = np.where(active, (own * again)[:n_l], 0) + back
            partial[FILL] = counts[FILL, ti]
            partial[UPDATE] = back - opened
            partial[WRITE] = opened
        else:
            counts[READ, ti] = up(union * ch)
            counts[FILL, ti] = np.where(active, (own * ch)[:n_l], 0)
    return counts, partial, tile_elements


def accumulator_memories(einsum: Einsum, arch: Arch) -> np.ndarray:
    """bool (L,): the levels that keep the einsum's output only as partial sums (they hold 'psums', not
    'outputs': TPU v1's Accumulators), whose every access to it is at the accumulator width."""
    name = einsum.output.tensor
    return np.array([lv.admits("psums", name) and not lv.admits("outputs", name) for lv in arch.memory])


def _wide(einsum: Einsum, arch: Arch, batch: MappingBatch, counts: np.ndarray, partial: np.ndarray,
          tile_elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the output's elements (B, 4, L) at the accumulator width, tiles (B, L, T) kept at it): its open partial
    sums `partial` (4, L, B), and all of it at a level that keeps it only as partial sums."""
    out, sums_only = batch.tensor_names.index(einsum.output.tensor), accumulator_memories(einsum, arch)
    partial[:, sums_only] = counts[:, out, sums_only]
    wide = np.rint(partial).transpose(2, 0, 1).astype(np.int64)
    tiles = np.zeros(tile_elements.shape, dtype=bool)
    tiles[..., out] = wide.any(axis=1) | (sums_only & (tile_elements[..., out] > 0))
    return wide, tiles


def analyze(einsum: Einsum, tensors: MappingType[str, Tensor], arch: Arch, axes: MappingType[str, int],
            batch: MappingBatch, double_buffered: Collection[str] = (), pe_folds: np.ndarray | None = None,
            accumulator_bits: float | None = None) -> LoopnestAnalysis:
    """Footprints, fills, reads, updates, capacity and MACs of every candidate in `batch` (no per-candidate loop).

    `tensors` gives shapes and widths (a workload's `tensor_map`); `axes` the engine's axis sizes;
    `double_buffered` names the levels whose tiles take twice their size (one filling while one is used).
    `pe_folds` (B,), for a systolic array: the folds each candidate runs. The PEs keep nothing from one fold to
    the next (each fold streams its operands in and its partial sums out, as the fold timing charges), so
    their tile of every tensor changes at least that often; without it a time loop of factor 1 (a GEMV) ends
    no stationary run, and the registers would seem to keep the streamed operand or a partial sum across folds.
    `accumulator_bits`: the width of the output's partial sums (None: the output's own; never narrower).
    """
    nest = _nest(einsum, batch)
    counts, partial, tiles = _element_counts(einsum, tensors, batch, nest, _keeping(einsum, batch, nest, pe_folds))
    # back to candidate-major (B, L, T)
    read, fill, update, write = np.rint(counts, out=counts).transpose(0, 3, 2, 1).astype(np.int64, order="C")
    tile_elements = np.ascontiguousarray(tiles.transpose(2, 1, 0))
    wide, wide_tiles = _wide(einsum, arch, batch, counts, partial, tile_elements)
    bits = tuple(float(tensors[t].bits) for t in batch.tensor_names)
    out = batch.tensor_names.index(einsum.output.tensor)
    wide_bits = tuple(max(b, accumulator_bits or 0.0) if ti == out else b for ti, b in enumerate(bits))
    coverage = nest.total * nest.spatial
    iterations = np.minimum(coverage, nest.sizes).prod(axis=0)
    pes = math.prod(axes[a] for a in batch.axis_names)
    return LoopnestAnalysis(
        batch.level_names, batch.tensor_names, tile_elements, read, fill, update, write, wide, wide_tiles,
        iterations, iterations if einsum.op == "mac" else np.zeros_like(iterations), coverage.prod(axis=0),
        nest.total.prod(axis=0), nest.used_pes, pes, bits, wide_bits, out,
        tuple(2.0 if m.name in double_buffered else 1.0 for m in arch.memory),
        tuple(np.inf if m.room_bytes is None else float(m.room_bytes) for m in arch.memory),
        tuple(tuple(float(e) for e in level_energy_per_bit(m, arch.technology_nm)) for m in arch.memory))


# ---------------------------------------------------------------------------------------------
# Systolic dataflows as mappings
# ---------------------------------------------------------------------------------------------
SYSTOLIC_ROLES = {"os": ("M", "N", "K"), "ws": ("K", "N", "M"), "is": ("K", "M", "N")}  # (rows, cols, time)


def gemm_operands(einsum: Einsum, tensors: MappingType[str, Tensor] | None = None) -> tuple[Access, Access]:
    """(streamed, weight-like) inputs of a contraction: the one weight/constant tensor is weight-like, else the
    second input."""
    a, w = einsum.inputs
    if tensors is not None:
        weights = [acc for acc in (a, w) if tensors[acc.tensor].kind in ("weight", "constant")]
        if len(weights) == 1:
            w = weights[0]
            a = einsum.inputs[0] if einsum.inputs[1] is w else einsum.inputs[1]
    return a, w


def gemm_roles(einsum: Einsum, tensors: MappingType[str, Tensor] | None = None
               ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(M, N, K, batch) ranks of a contraction in its im2col view (N indexes the weight-like operand)."""
    if einsum.op != "mac":
        raise InfeasibleError(f"einsum '{einsum.name}' is not a contraction (operator '{einsum.op}'), so it has "
                              f"no GEMM view. Fix: run it on an engine for '{einsum.op}', e.g. a vector engine")
    a, w = gemm_operands(einsum, tensors)
    out = einsum.output.ranks
    a_ranks, w_ranks = set(a.ranks), set(w.ranks)
    n = tuple(r for r in out if r in w_ranks and r not in a_ranks)
    batch = tuple(r for r in out if r in w_ranks and r in a_ranks)
    m = tuple(r for r in out if r not in w_ranks)
    return m, n, einsum.reduced_ranks, batch


@dataclass(frozen=True)
class GemmView:
    """A contraction as batch x (M x K) @ (K x N) (sizes from `gemm_roles`), its operands (`gemm_operands`)
    and their widths."""

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
    m, n, k, batch = (math.prod(einsum.sizes[r] for r in role) for role in gemm_roles(einsum, tensors))
    streamed, weight = gemm_operands(einsum, tensors)
    return GemmView(m, n, k, batch, streamed, weight, tensors[streamed.tensor].bits, tensors[weight.tensor].bits)


@functools.lru_cache(maxsize=1024)
def _balanced(size: int, limit: int) -> tuple[np.ndarray, int]:
    """(the tile sizes worth trying for a rank on an axis of `limit` PEs, and how many there are without the limit):
    ceil(size / n) for every fold count n (the smallest per count), those up to `limit`; cached (layers share rank
    sizes), so read-only.

    A tile size v is some ceil(size / n) exactly when ceil(size / ceil(size / v)) == v, so the kept ones cost
    O(limit), not O(size) (a 10^12 rank would need terabytes); the full count, ceil(size / n) = floor((size - 1)
    / n) + 1, is the classic 2 isqrt(m) - [isqrt(m) (isqrt(m) + 1) > m] distinct floor(m / n), plus n = size.
    """
    tiles = np.arange(1, min(size, limit) + 1, dtype=np.int64)
    tiles = tiles[fold_count(size, fold_count(size, tiles)) == tiles]
    tiles.setflags(write=False)
    m = size - 1
    root = math.isqrt(m)
    total = 1 if m == 0 else 2 * root - (root * (root + 1) > m) + 1
    return tiles, total


def split_fold(ranks: Sequence[str], sizes: MappingType[str, int], capacity: int) -> dict[str, int]:
    """Per-rank spatial factors with product <= capacity and the fewest folds prod(ceil(size / factor)).

    SCALE-Sim folds the flattened extent prod(sizes) into ceil(prod / capacity) folds; a per-rank tiling can
    only reach that count when the ranks factor suitably, so this searches every balanced factor per rank
    (least padding on ties) when the combinations are few (<= 1e6) and otherwise fills the array greedily,
    innermost (last) rank first, each with the balanced factor for its fold count.
    """
    if not ranks:
        return {}
    # factors over the capacity never fit, so only those up to it are tried; the branch still counts them all,
    # as it always has, so which branch runs (and so the answer) does not depend on the bound
    balanced = [_balanced(sizes[r], capacity) for r in ranks]
    candidates = [tiles for tiles, _ in balanced]
    if math.prod(total for _, total in balanced) <= 1_000_000:
        grids = np.meshgrid(*candidates, indexing="ij")
        factors = np.stack([g.ravel() for g in grids], axis=1)
        folds = np.prod(fold_count(np.array([sizes[r] for r in ranks]), factors), axis=1)
        fits = factors.prod(axis=1) <= capacity
        padded = folds * factors.prod(axis=1)
        key = np.where(fits, folds * (padded.max() + 1) + padded, np.iinfo(np.int64).max)
        best = factors[int(np.argmin(key))]
        return {r: int(f) for r, f in zip(ranks, best)}
    out: dict[str, int] = {}
    left = capacity
    for r in reversed(ranks):
        n = fold_count(sizes[r], max(left, 1))
        out[r] = fold_count(sizes[r], n)
        left //= out[r]
    return {r: out[r] for r in ranks}


def systolic_mapping(einsum: Einsum, arch: Arch, rows: int, cols: int, dataflow: str,
                     roles: tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[str]],
                     tensor_roles: MappingType[str, str] | None = None, fold_level: str | None = None) -> Mapping:
    """A systolic dataflow (os | ws | is) as a Mapping on axes 'rows' and 'cols', folds as SCALE-Sim runs them.

    `roles` is (M, N, K, batch) from `gemm_roles`. The dataflow's row and column roles are unrolled on the
    array (per-rank factors from `split_fold`), its time role runs as the innermost level's loops, and the
    folds run at `fold_level` (default: the level outside the innermost): batch ranks outermost, then the
    column fold, then the row fold (SCALE-Sim: `for col fold: for row fold:`). Levels that do not keep a tensor in
    its role (`tensor_roles`, e.g. `Workload.roles(einsum)`; `MemoryLevel.keeps`) bypass it.
    """
    if dataflow not in SYSTOLIC_ROLES:
        raise InfeasibleError(f"unknown systolic dataflow '{dataflow}'. Fix: use one of os, ws, is")
    m, n, k, batch = (tuple(r) for r in roles)
    named = {"M": m, "N": n, "K": k}
    listed = [*m, *n, *k, *batch]
    if sorted(listed) != sorted(rank_names(einsum)):
        raise InfeasibleError(f"GEMM roles M={list(m)}, N={list(n)}, K={list(k)}, batch={list(batch)} do not "
                              f"cover the ranks {list(rank_names(einsum))} of einsum '{einsum.name}' exactly once. "
                              f"Fix: derive them with gemm_roles(einsum)")
    row_role, col_role, time_role = (named[x] for x in SYSTOLIC_ROLES[dataflow])
    sizes = einsum.sizes
    row_f, col_f = split_fold(row_role, sizes, rows), split_fold(col_role, sizes, cols)
    inner = arch.memory[-1].name
    fold = fold_level if fold_level is not None else arch.memory[max(len(arch.memory) - 2, 0)].name
    temporal: dict[str, dict[str, int]] = {lv.name: {} for lv in arch.memory}
    for r in batch:
        temporal[fold][r] = sizes[r]
    for r, f in (*col_f.items(), *row_f.items()):
        temporal[fold][r] = fold_count(sizes[r], f)
    for r in time_role:
        temporal[inner][r] = sizes[r]
    fold_loops = [*batch, *col_role, *row_role]
    if fold == inner:
        orders = {inner: _permutation(einsum, [*fold_loops, *time_role])}
    else:
        orders = {fold: _permutation(einsum, fold_loops), inner: _permutation(einsum, list(time_role))}
    bypass = {}
    if tensor_roles is not None:
        for level in arch.memory:
            skip = [t for t in tensor_names(einsum) if not level.keeps(tensor_roles[t], t)]
            if skip:
                bypass[level.name] = skip
    return Mapping.of({lv: f for lv, f in temporal.items() if f}, orders,
                      {"rows": row_f, "cols": col_f}, bypass, inner)


def _permutation(einsum: Einsum, innermost: list[str]) -> list[str]:
    """All ranks, those not listed first (their factor is 1 at that level), then `innermost` in order."""
    return [r for r in rank_names(einsum) if r not in innermost] + innermost
