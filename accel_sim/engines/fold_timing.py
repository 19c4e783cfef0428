"""Fold timing of systolic candidates: how many folds each runs along each array axis and the cycles per fold.

Timing follows the fold plan of the einsum's im2col view (accel_sim/folds.py, as SCALE-Sim folds), read off each
candidate mapping: the dataflow's row and column ranks fold over the array's axes, its time rank streams within
a fold.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.engines.loopnest import SYSTOLIC_ROLES, split_fold
from accel_sim.engines.rows import any_along, product_along
from accel_sim.folds import fold_count, fold_cycles
from accel_sim.spec.mapping import MappingBatch
from accel_sim.spec.mapspace import joined_rows, rows_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.spec.workload import Einsum

DATAFLOW_CODES: tuple[str, ...] = ("os", "ws", "is")  # dataflow of a candidate as an index into this tuple


def role_masks(einsum: Einsum, roles: tuple, ranks: tuple[str, ...]) -> np.ndarray:
    """bool (3 dataflows, 3 places [rows, cols, time], R): the ranks each dataflow puts in each place (read-only:
    shared by every batch of the einsum)."""
    return _role_masks_of(tuple(roles[:3]), tuple(ranks))


@functools.lru_cache(maxsize=1024)
def _role_masks_of(roles: tuple[tuple[str, ...], ...], ranks: tuple[str, ...]) -> np.ndarray:
    """`role_masks` of the (M, N, K) ranks `roles`; cached, as every scored batch asks it again."""
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
    temporal: np.ndarray          # T: cycles the streamed extent takes per fold (its elements x operand passes)
    cycles_per_fold: np.ndarray   # one fold on its own: T plus fill and drain

    def rows(self, selection: slice | np.ndarray) -> FoldTiming:
        """The timing of some of the candidates (a slice or an index array)."""
        return rows_of(self, selection)

    @staticmethod
    def concat(parts: Sequence[FoldTiming]) -> FoldTiming:
        """One timing of the candidates of `parts`, rows in order."""
        return joined_rows(parts)


def systolic_timing(einsum: Einsum, engine: SystolicEngine, roles: tuple, batch: MappingBatch,
                    dataflow: np.ndarray, passes: int = 1) -> FoldTiming:
    """Folds, streamed cycles T per fold and cycles per fold of each candidate, at the engine clock.

    The time role's loops at the innermost level stream through the array (T per fold); every other loop
    starts a new fold. The ranks an axis unrolls are consumed in their im2col-flattened order, so when their
    tile loops sit at one level the axis folds ceil(prod of their sizes / axis size) times (SCALE-Sim's
    count) instead of the product of the per-rank tile counts. Operands wider than the multipliers take
    `passes` cycles a MAC (`SystolicEngine.operand_passes`), so each streamed element holds the array that long.
    """
    flow_masks = role_masks(einsum, roles, batch.rank_names)                       # (3 dataflows, 3, R)
    masks = flow_masks[dataflow]                                                     # (B, 3, R)
    per_rank = product_along(batch.temporal, 1)                                      # (B, R)
    streamed = product_along(np.where(masks[:, 2], batch.temporal[:, -1, :], 1), 1)
    folds = product_along(np.where(masks[:, 0] | masks[:, 1], 1, per_rank), 1) // streamed
    t = streamed * passes
    nonunit = batch.temporal > 1
    for place in (0, 1):
        folds = folds * axis_folds(einsum, engine, flow_masks, dataflow, batch, place, (per_rank, nonunit))[0]
    per_fold = fold_cycles(t, engine.load_cycles, engine.skew_cycles, dataflow == 0)
    return FoldTiming(folds, t, per_fold)


def axis_folds(einsum: Einsum, engine: SystolicEngine, flow_masks: np.ndarray, dataflow: np.ndarray,
               batch: MappingBatch, place: int, loops: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(folds, packed) of each candidate along one array axis (place 0: rows, 1: cols), as systolic_timing counts.

    `flow_masks` is `role_masks` (3 dataflows, 3, R), `dataflow` (B,) each candidate's code. Folds are the
    product of the axis ranks' tile counts, or, when their tile loops sit at one level and the spatial factors
    already reach the fewest folds any per-rank tiling does (`split_fold`, as the dataflow's own mapping), the
    im2col-flattened count ceil(prod of their sizes / axis size) if fewer: then `packed` is True and each fold
    holds ceil(prod of sizes / folds) flattened elements, not the mapping's per-rank spatial factors. A mapping
    that unrolls less than it could (k = 64 as 8 x 8 folds on 32 columns) runs its own folds: flattening it would
    time 2 folds while its traffic and tiles stay those of 8, one mapping timed as another. `loops`: the batch's
    (per-rank temporal products (B, R), non-unit factors (B, L, R)) when the caller has them.
    """
    per_rank, nonunit = loops if loops is not None else (product_along(batch.temporal, 1), batch.temporal > 1)
    sizes = np.array([einsum.sizes[r] for r in batch.rank_names], dtype=np.int64)
    kinds = flow_masks[:, place]                                                     # (3 dataflows, R)
    on_axis = kinds[dataflow]                                                        # (B, R)
    axis = (engine.rows, engine.cols)[place]
    split = product_along(np.where(on_axis, per_rank, 1), 1)
    levels_used = any_along(nonunit & on_axis[:, None, :], 2).sum(axis=1)
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
