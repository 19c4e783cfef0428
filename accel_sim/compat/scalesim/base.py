"""SCALE-Sim 3.0.0 compatibility, part 1: its constants, layer and arch descriptions, report fields, address
arithmetic and the named quirks (§8 of tests/golden/scalesim/ACCOUNTING.md) that separate its reports from the
physical model. `buffers` holds the order-dependent buffer algorithms, `accounting` the reports.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from accel_sim.errors import AccelSimError
from accel_sim.folds import Dataflow, FoldPlan

InterfaceMode = Literal["USER", "CALC"]

# SCALE-Sim 3.0.0 constants (scalesim/memory/*.py and single_layer_sim.py of the PyPI release; see ACCOUNTING.md).
SETS_PER_BUFFER = 100        # §4: buffers keep fetched words in groups of ceil(words/100) (CALC: floor)
CALC_SETS_PER_GENERATION = 50  # §7: half of the 100 groups form the active buffer
CALC_READ_RATE = 10          # §7: words/cycle assumed for CALC-mode reads
READ_HIT_LATENCY = 1         # §5: an SRAM hit is served one cycle after the request
DRAM_READ_LATENCY = 1        # §5: each re-fetch completes npl + 1 cycles after the previous one
FILTER_OFFSET = 10_000_000   # README "How SCALE-Sim is driven": default operand address offsets
OFMAP_OFFSET = 20_000_000


@dataclass(frozen=True)
class ScaleSimLayer:
    """One topology row: a convolution (no padding, square stride) or a GEMM run as SCALE-Sim runs it."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    num_filters: int
    stride: int

    @classmethod
    def gemm(cls, name: str, m: int, n: int, k: int) -> "ScaleSimLayer":
        """SCALE-Sim runs GEMM M,N,K as a conv with H=M, W=K, R=1, S=K, C=1, N filters, stride 1 (§0)."""
        return cls(name, m, k, 1, k, 1, n, 1)

    @property
    def ofmap_h(self) -> int:
        """Output rows: ceil((H - R + s) / s), windows may run past the edge (§0)."""
        return -(-(self.ifmap_h - self.filter_h + self.stride) // self.stride)

    @property
    def ofmap_w(self) -> int:
        """Output columns, as ofmap_h."""
        return -(-(self.ifmap_w - self.filter_w + self.stride) // self.stride)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """im2col GEMM view: (output pixels, filters, window x channels)."""
        return self.ofmap_h * self.ofmap_w, self.num_filters, self.filter_h * self.filter_w * self.channels


@dataclass(frozen=True)
class ScaleSimArch:
    """The parts of a SCALE-Sim config that change its numbers (sizes in KiB of 1-byte words, rates in words/cycle)."""

    rows: int
    cols: int
    ifmap_sram_kib: int
    filter_sram_kib: int
    ofmap_sram_kib: int
    dataflow: Dataflow
    interface: InterfaceMode
    ofmap_bandwidth: int        # `Bandwidth`: in USER mode only the ofmap DRAM write rate (§4)
    ifmap_bank_bandwidth: int   # `[layout] IfmapSRAMBankBandwidth`: ifmap DRAM read rate in USER mode
    filter_bank_bandwidth: int  # `[layout] FilterSRAMBankBandwidth`: filter DRAM read rate in USER mode


@dataclass(frozen=True)
class LayerReport:
    """Every column of SCALE-Sim's three reports for one layer (names as in tests/golden/scalesim/cases.csv)."""

    total_cycles_incl_prefetch: int
    total_cycles: int
    stall_cycles: int
    overall_util_pct: float
    mapping_efficiency_pct: float
    compute_util_pct: float
    avg_ifmap_sram_bw: float
    avg_filter_sram_bw: float
    avg_ofmap_sram_bw: float
    avg_ifmap_dram_bw: float
    avg_filter_dram_bw: float
    avg_ofmap_dram_bw: float
    sram_ifmap_start_cycle: float
    sram_ifmap_stop_cycle: float
    sram_ifmap_reads: int
    sram_filter_start_cycle: float
    sram_filter_stop_cycle: float
    sram_filter_reads: int
    sram_ofmap_start_cycle: float
    sram_ofmap_stop_cycle: float
    sram_ofmap_writes: int
    dram_ifmap_start_cycle: float
    dram_ifmap_stop_cycle: float
    dram_ifmap_reads: int
    dram_filter_start_cycle: float
    dram_filter_stop_cycle: float
    dram_filter_reads: int
    dram_ofmap_start_cycle: float
    dram_ofmap_stop_cycle: float
    dram_ofmap_writes: int


REPORT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(LayerReport))


class ScaleSimUnsupported(AccelSimError):
    """A configuration on which SCALE-Sim 3.0.0 itself fails, so there is no number to reproduce."""


# --------------------------------------------------------------------------------------------
# The quirks (§8), one function each; physical + quirks = SCALE-Sim.
# --------------------------------------------------------------------------------------------

def quirk_reported_total_cycles(simulated_cycles: np.ndarray, stall_cycles: np.ndarray) -> np.ndarray:
    """Quirk 1: `Total Cycles` is the index of the last simulated row, one less than the cycles simulated, plus stalls."""
    return simulated_cycles - 1 + stall_cycles


def quirk_compute_util_fold_cycles(plan: FoldPlan, dataflow: Dataflow) -> np.ndarray:
    """Quirk 2: cycles per fold in Compute Util; ws/is use 2R + 2C + T - 3 instead of the simulated 2R + C + T - 2."""
    if dataflow == "os":
        return plan.cycles_per_fold
    return 2 * plan.rows + 2 * plan.cols + plan.temporal - 3


def quirk_os_ofmap_write_surplus(plan: FoldPlan, dataflow: Dataflow) -> np.ndarray:
    """Quirk 3: os SRAM ofmap writes count R + C extra words per fold, writes the demand never makes."""
    return plan.folds * (plan.rows + plan.cols) if dataflow == "os" else np.zeros_like(plan.folds)


def quirk_partial_sum_dram_writes(plan: FoldPlan, m: np.ndarray, n: np.ndarray, dataflow: Dataflow) -> np.ndarray:
    """Quirk 4: ws/is send every K fold's partial sums to DRAM, Fr * M * N words instead of the M * N results."""
    m, n = np.asarray(m, dtype=np.int64), np.asarray(n, dtype=np.int64)
    return m * n if dataflow == "os" else plan.row_folds * m * n


def quirk_overrun_reads(m: np.ndarray, k: np.ndarray, valid_ifmap: np.ndarray, plan: FoldPlan,
                        dataflow: Dataflow) -> np.ndarray:
    """Quirk 5: im2col entries past the ifmap edge (no address) still count as SRAM ifmap reads."""
    per_pass = np.asarray(m, dtype=np.int64) * np.asarray(k, dtype=np.int64) - valid_ifmap
    return per_pass * (1 if dataflow == "is" else plan.col_folds)


def quirk_first_fill_words(prefetch_words: int, active_words: int, line_words: int) -> int:
    """Quirk 6: the first fill reads whole lines of `line_words`, padding included, capped at the active half."""
    return min(-(-active_words // line_words), -(-prefetch_words // line_words)) * line_words


def quirk_read_wait(wait: int) -> int:
    """Quirk 7: a read that waits p > 0 cycles for DRAM adds 2p to the row's offset; an early arrival (p < 0) subtracts."""
    return 2 * wait if wait > 0 else wait


# --------------------------------------------------------------------------------------------
# Layer geometry
# --------------------------------------------------------------------------------------------

def _axis_valid(size: int, window: int, stride: int, out: int) -> np.ndarray:
    """Per output position along one axis, how many window taps fall inside the ifmap."""
    return np.minimum(window, size - np.arange(out, dtype=np.int64) * stride)


def valid_ifmap_entries(layer: ScaleSimLayer) -> int:
    """Vif: im2col ifmap entries with an address (the rest run past the edge, §0)."""
    rows = _axis_valid(layer.ifmap_h, layer.filter_h, layer.stride, layer.ofmap_h).sum()
    cols = _axis_valid(layer.ifmap_w, layer.filter_w, layer.stride, layer.ofmap_w).sum()
    return int(rows * cols * layer.channels)


def distinct_ifmap_words(layer: ScaleSimLayer) -> int:
    """Ifmap words that some window touches (what a perfect cache would fetch)."""
    def covered(size: int, window: int, out: int) -> int:
        mark = np.zeros(size, dtype=bool)
        starts = np.arange(out) * layer.stride
        idx = (starts[:, None] + np.arange(window)[None, :]).ravel()
        mark[idx[idx < size]] = True
        return int(mark.sum())
    return covered(layer.ifmap_h, layer.filter_h, layer.ofmap_h) * \
        covered(layer.ifmap_w, layer.filter_w, layer.ofmap_w) * layer.channels


def ifmap_addresses(layer: ScaleSimLayer, pixels: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """Ifmap word address of im2col entry (pixel p, tap j), -1 past the edge; broadcasts p against j (§6)."""
    py, px = np.divmod(pixels, layer.ofmap_w)
    rs, c = np.divmod(taps, layer.channels)
    r, s = np.divmod(rs, layer.filter_w)
    y = py * layer.stride + r
    x = px * layer.stride + s
    addr = (y * layer.ifmap_w + x) * layer.channels + c
    return np.where((y < layer.ifmap_h) & (x < layer.ifmap_w), addr, -1)


def filter_addresses(layer: ScaleSimLayer, taps: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """Filter word address of (tap k, filter n) (§6)."""
    return filters * (layer.filter_h * layer.filter_w * layer.channels) + taps + FILTER_OFFSET


def prefetch_words(plan: FoldPlan, df: Dataflow, operand: str) -> int:
    """§4 table: size of an operand's prefetch matrix, fold padding included."""
    R, C = int(plan.rows), int(plan.cols)
    Fr, Fc, T = int(plan.row_folds), int(plan.col_folds), int(plan.temporal)
    Sr = int(plan.spatial_rows)
    table = {
        ("os", "ifmap"): T * Fr * R, ("os", "filter"): T * Fc * C,
        ("ws", "ifmap"): T * Fr * R, ("ws", "filter"): Sr * Fc * C,
        ("is", "ifmap"): Sr * Fc * C, ("is", "filter"): T * Fr * R,
    }
    return table[(df, operand)]
