"""Folds: how many passes an extent takes on an array axis (or a tile) of a given size, and the fold plan of
GEMMs on a systolic array.

An extent E laid out on an axis of S positions runs in ceil(E / S) folds, the last one partly empty
(SCALE-Sim, Samajdar et al., ISPASS 2020, Sec. III). Every engine that tiles an extent onto fixed hardware
(systolic rows and columns, LUT and MAC tensor-core tiles, FPGA unit parallelism) counts its folds here.
`fold_plan` and `sram_traffic` are the closed-form fold timing and operand traffic of a batch of GEMMs on a
systolic array (the cycle formulas are derived in engines/systolic.py's docstring); the SCALE-Sim emulator
(compat/scalesim/) runs on them. Pure numpy, below every other layer: `accel-sim scalesim` imports it without
the engines and their specs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

Count = TypeVar("Count", int, np.ndarray)
IntArray = np.ndarray
Buffering = Literal["single", "double"]   # a systolic array's stationary-tile registers per PE
Dataflow = Literal["os", "ws", "is"]
DATAFLOWS: tuple[Dataflow, ...] = ("os", "ws", "is")


def fold_count(extent: Count, size: Count | int) -> Count:
    """ceil(extent / size) in integer arithmetic, for ints and integer arrays alike (broadcasting)."""
    return -(-extent // size)


def multiplier_passes(a_bits: int, b_bits: int, multiplier_bits: int) -> int:
    """Passes a multiplier built for `multiplier_bits`-bit operands makes per product of wider ones: each operand
    splits into ceil(bits / multiplier_bits) pieces and every pair of pieces is one pass."""
    return fold_count(a_bits, multiplier_bits) * fold_count(b_bits, multiplier_bits)


def fold_cycles(temporal: IntArray, load: IntArray | int, skew: IntArray | int,
                output_stationary: IntArray | bool) -> IntArray:
    """One fold on its own: T plus the skew (os), or the stationary tile's load, T and the skew (ws/is). A systolic
    array loads over R cycles and skews over R + C - 2 (engines/systolic.py, module docstring)."""
    return np.where(output_stationary, temporal + skew, load + skew + temporal)


def hidden_fold_cycles(folds: IntArray, temporal: IntArray, per_fold: IntArray, load: IntArray | int,
                       buffering: Buffering) -> IntArray:
    """Cycles a double-buffered stationary tile hides from `folds` back-to-back single-buffered folds of
    `per_fold` cycles each (`fold_cycles`).

    Each fold after the first costs max(T, load) instead of a whole fold (engines/systolic.py, module docstring);
    nothing is hidden single-buffered or for a single fold.
    """
    folds, t, per_fold, load = np.broadcast_arrays(*(np.asarray(v) for v in (folds, temporal, per_fold, load)))
    if buffering == "single":
        return np.zeros(folds.shape, dtype=np.int64)
    return (np.maximum(folds - 1, 0) * (per_fold - np.maximum(t, load))).astype(np.int64)


def spatial_temporal(m: IntArray, n: IntArray, k: IntArray, dataflow: Dataflow) -> tuple[IntArray, IntArray, IntArray]:
    """(extent on array rows, extent on array columns, temporal extent) of an M x N x K GEMM."""
    return {"os": (m, n, k), "ws": (k, n, m), "is": (k, m, n)}[dataflow]


@dataclass(frozen=True)
class FoldPlan:
    """How a batch of GEMMs folds onto a rows x cols array; every field is an array (one entry per GEMM)."""

    rows: IntArray
    cols: IntArray
    spatial_rows: IntArray   # Sr
    spatial_cols: IntArray   # Sc
    temporal: IntArray       # T
    row_folds: IntArray      # ceil(Sr / rows)
    col_folds: IntArray      # ceil(Sc / cols)
    cycles_per_fold: IntArray  # one fold on its own (load, T rows, skew)
    hidden_cycles: IntArray    # of folds x cycles_per_fold, what a double-buffered stationary tile overlaps

    @property
    def folds(self) -> IntArray:
        """Folds run one after another."""
        return self.row_folds * self.col_folds

    @property
    def compute_cycles(self) -> IntArray:
        """Cycles of all folds, fill and drain included, with operands always on time."""
        return self.folds * self.cycles_per_fold - self.hidden_cycles

    @property
    def fill_drain_cycles(self) -> IntArray:
        """The part of compute_cycles spent filling and draining the array."""
        return self.compute_cycles - self.folds * self.temporal

    @property
    def mapping_efficiency(self) -> np.ndarray:
        """Mean fraction of PEs that hold work, over folds."""
        return self.spatial_rows * self.spatial_cols / (self.folds * self.rows * self.cols)

    @property
    def utilization(self) -> np.ndarray:
        """MACs / (PEs x compute cycles)."""
        macs = self.spatial_rows * self.spatial_cols * self.temporal
        return macs / (self.rows * self.cols * self.compute_cycles)


def fold_plan(m: IntArray, n: IntArray, k: IntArray, rows: IntArray | int, cols: IntArray | int,
              dataflow: Dataflow, buffering: Buffering = "single") -> FoldPlan:
    """Fold a batch of M x N x K GEMMs onto rows x cols arrays with one dataflow (all inputs broadcast)."""
    m, n, k, rows, cols = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (m, n, k, rows, cols)))
    sr, sc, t = spatial_temporal(m, n, k, dataflow)
    row_folds = fold_count(sr, rows)
    col_folds = fold_count(sc, cols)
    per_fold = fold_cycles(t, rows, rows + cols - 2, dataflow == "os")
    hidden = hidden_fold_cycles(row_folds * col_folds, t, per_fold, rows, buffering)
    return FoldPlan(rows, cols, sr, sc, t, row_folds, col_folds, per_fold, hidden)


@dataclass(frozen=True)
class SramTraffic:
    """Words each operand SRAM serves when the folds of a FoldPlan run as a real array runs them (arrays, one per GEMM).

    Streamed operands are re-read once per fold of the other spatial axis; the stationary operand is
    loaded once per fold; output-stationary arrays write each output once, while weight- and
    input-stationary arrays write a partial sum per K fold and read it back to accumulate (the first
    K fold has nothing to read).
    """

    ifmap_reads: IntArray
    filter_reads: IntArray
    ofmap_writes: IntArray
    ofmap_reads: IntArray

    @property
    def total(self) -> IntArray:
        """All SRAM accesses."""
        return self.ifmap_reads + self.filter_reads + self.ofmap_writes + self.ofmap_reads


def sram_traffic(plan: FoldPlan, m: IntArray, n: IntArray, k: IntArray, dataflow: Dataflow) -> SramTraffic:
    """Physical SRAM reads and writes per operand of a batch of M x N x K GEMMs folded as `plan` says."""
    m, n, k = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (m, n, k)))
    fr, fc = plan.row_folds, plan.col_folds
    outputs = m * n
    if dataflow == "os":
        # Each column fold (a slice of N) re-streams the whole ifmap; each row fold (a slice of M) the filter.
        return SramTraffic(fc * m * k, fr * k * n, outputs, np.zeros_like(outputs))
    if dataflow == "ws":
        # Filter tiles are stationary: loaded once; the ifmap streams once per N fold.
        ifmap, filt = fc * m * k, k * n
    else:
        # Ifmap tiles are stationary: loaded once; the filter streams once per M fold.
        ifmap, filt = m * k, fc * k * n
    return SramTraffic(ifmap, filt, fr * outputs, (fr - 1) * outputs)
