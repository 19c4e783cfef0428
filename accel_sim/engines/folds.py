"""The fold count: how many passes an extent takes on an array axis (or a tile) of a given size.

An extent E laid out on an axis of S positions runs in ceil(E / S) folds, the last one partly empty
(SCALE-Sim, Samajdar et al., ISPASS 2020, Sec. III). Every engine that tiles an extent onto fixed hardware
(systolic rows and columns, LUT and MAC tensor-core tiles, FPGA unit parallelism) counts its folds here.
"""
from __future__ import annotations

from typing import Literal, TypeVar

import numpy as np

Count = TypeVar("Count", int, np.ndarray)
IntArray = np.ndarray
Buffering = Literal["single", "double"]   # a systolic array's stationary-tile registers per PE


def fold_count(extent: Count, size: Count | int) -> Count:
    """ceil(extent / size) in integer arithmetic, for ints and integer arrays alike (broadcasting)."""
    return -(-extent // size)


def hidden_fold_cycles(folds: IntArray, temporal: IntArray, rows: IntArray | int, cols: IntArray | int,
                       output_stationary: IntArray | bool, buffering: Buffering) -> IntArray:
    """Cycles a double-buffered stationary tile hides from `folds` back-to-back single-buffered folds.

    Each fold after the first costs max(T, R) instead of a whole fold, 2R + C + T - 2 (ws/is) or T + R + C - 2
    (os) (engines/systolic.py, module docstring); nothing is hidden single-buffered or for a single fold.
    """
    folds, t, rows, cols, os_ = np.broadcast_arrays(*(np.asarray(v) for v in (folds, temporal, rows, cols,
                                                                           output_stationary)))
    if buffering == "single":
        return np.zeros(folds.shape, dtype=np.int64)
    per_fold = np.where(os_, t + rows + cols - 2, 2 * rows + cols + t - 2)
    return (np.maximum(folds - 1, 0) * (per_fold - np.maximum(t, rows))).astype(np.int64)
