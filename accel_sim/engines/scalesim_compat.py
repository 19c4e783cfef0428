"""SCALE-Sim 3.0.0 compatibility: its accounting, reproduced number for number, as the physical model plus named quirks.

The formulas and the order-dependent buffer algorithm are written up in tests/golden/scalesim/ACCOUNTING.md
(sections cited as §N below); they were derived from SCALE-Sim's outputs and checked on 186 reference cases.
The physical systolic model (`engines.systolic`) counts what an array really does; this module adds,
each in its own function, the quirks SCALE-Sim's reports carry (§8), so that `compat - physical`
is exactly the list of quirks.

Fast path: when neither read buffer has to re-fetch and the ofmap buffer never drains during compute
(§4), every number is a closed form, vectorized over layers. Otherwise the §6 (USER) or §7 (CALC)
algorithm runs; it iterates over buffer events (fetches, drains), not cycles. In USER mode the read
buffers come from layout arithmetic (`scalesim_layout`: each word's prefetch position and the positions of
its repeated copies in closed form, expanding only the demand near a window edge), and the ofmap writes per
row and each operand's first/last demand rows are closed forms, so no demand stream is built; the
materialized streams (`demand_streams`, `prefetch_stream`, `_read_buffer_user`) remain the reference,
used for CALC mode and for USER ifmap re-fetch with window overrun.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from accel_sim.engines.scalesim_layout import stream_layout, window_misses
from accel_sim.engines.systolic import Dataflow, FoldPlan, fold_plan, sram_traffic
from accel_sim.errors import AccelSimError

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


# --------------------------------------------------------------------------------------------
# Demand and prefetch streams (§6)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Stream:
    """Requests of one operand in service order: demand row of each, and its address (-1: none)."""

    rows: np.ndarray
    addrs: np.ndarray


def _fold_grid(plan_fr: int, plan_fc: int, folds: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fold index, row fold, col fold) for the folds asked for, in run order (col fold outer)."""
    f = np.arange(plan_fr * plan_fc, dtype=np.int64) if folds is None else np.asarray(folds, dtype=np.int64)
    fc, fr = np.divmod(f, plan_fr)
    return f, fr, fc


def _tile_entries(f: np.ndarray, fr: np.ndarray, fc: np.ndarray, first: np.ndarray, used: np.ndarray,
                  extent: int, width: int) -> tuple[np.ndarray, ...]:
    """All (fold, t, j) with t < extent and j < used[fold]: one entry per streamed word of each fold."""
    t = np.arange(extent, dtype=np.int64)
    j = np.arange(width, dtype=np.int64)
    ff, tt, jj = np.meshgrid(np.arange(f.size), t, j, indexing="ij")
    keep = jj < used[ff]
    return f[ff[keep]], tt[keep], jj[keep], first[ff[keep]]


def demand_streams(layer: ScaleSimLayer, arch: ScaleSimArch, folds: np.ndarray | None = None
                   ) -> tuple[_Stream, _Stream, np.ndarray]:
    """Ifmap and filter demand streams and ofmap writes per demand row, for all folds or the folds given (§6)."""
    m, n, k = layer.mnk
    R, C, df = arch.rows, arch.cols, arch.dataflow
    plan = fold_plan(m, n, k, R, C, df)
    Fr, Fc, T, L = int(plan.row_folds), int(plan.col_folds), int(plan.temporal), int(plan.cycles_per_fold)
    Sr, Sc = int(plan.spatial_rows), int(plan.spatial_cols)
    f, fr, fc = _fold_grid(Fr, Fc, folds)
    ru = np.minimum(R, Sr - fr * R)
    cu = np.minimum(C, Sc - fc * C)
    nrows = int(f.size) * L
    local = np.arange(f.size, dtype=np.int64) * L   # row offset of each requested fold in the returned rows

    def stream(row: np.ndarray, col: np.ndarray, addr: np.ndarray) -> _Stream:
        order = np.lexsort((col, row))
        return _Stream(row[order], addr[order])

    def ofmap_counts(row: np.ndarray) -> np.ndarray:
        return np.bincount(row, minlength=nrows).astype(np.int64)

    if df == "os":
        # ifmap: T x ru (pixels on array rows), column j skewed by j, starts at row 0
        ff, t, j, _ = _tile_entries(f, fr, fc, local, ru, T, R)
        if_s = stream(local_of(ff, f, L) + t + j, j, ifmap_addresses(layer, fr_of(ff, f, fr) * R + j, t))
        ff, t, j, _ = _tile_entries(f, fr, fc, local, cu, T, C)
        fl_s = stream(local_of(ff, f, L) + t + j, j, filter_addresses(layer, t, fc_of(ff, f, fc) * C + j))
        # ofmap: the ru x cu tile padded to R rows, flipped, skewed, after T - 1 empty rows
        ff, i, j, _ = _tile_entries(f, fr, fc, local, cu, R, C)
        keep = i < ru[np.searchsorted(f, ff)]
        ff, i, j = ff[keep], i[keep], j[keep]
        of = ofmap_counts(local_of(ff, f, L) + (T - 1) + (R - 1 - i) + j)
    elif df == "ws":
        ff, t, j, _ = _tile_entries(f, fr, fc, local, ru, T, R)
        if_s = stream(local_of(ff, f, L) + R + t + j, j, ifmap_addresses(layer, t, fr_of(ff, f, fr) * R + j))
        ff, i, j, _ = _tile_entries(f, fr, fc, local, cu, R, C)
        keep = i < ru[np.searchsorted(f, ff)]
        ff, i, j = ff[keep], i[keep], j[keep]
        fl_s = stream(local_of(ff, f, L) + (R - 1 - i), j,
                      filter_addresses(layer, fr_of(ff, f, fr) * R + i, fc_of(ff, f, fc) * C + j))
        ff, t, j, _ = _tile_entries(f, fr, fc, local, cu, T, C)
        of = ofmap_counts(local_of(ff, f, L) + 2 * R - 1 + t + j)
    else:
        ff, i, j, _ = _tile_entries(f, fr, fc, local, cu, R, C)
        keep = i < ru[np.searchsorted(f, ff)]
        ff, i, j = ff[keep], i[keep], j[keep]
        if_s = stream(local_of(ff, f, L) + (R - 1 - i), j,
                      ifmap_addresses(layer, fc_of(ff, f, fc) * C + j, fr_of(ff, f, fr) * R + i))
        ff, t, j, _ = _tile_entries(f, fr, fc, local, ru, T, R)
        fl_s = stream(local_of(ff, f, L) + R + t + j, j, filter_addresses(layer, fr_of(ff, f, fr) * R + j, t))
        ff, t, j, _ = _tile_entries(f, fr, fc, local, cu, T, C)
        of = ofmap_counts(local_of(ff, f, L) + 2 * R - 1 + t + j)
    return if_s, fl_s, of


def local_of(ff: np.ndarray, f: np.ndarray, L: int) -> np.ndarray:
    """First demand row of each entry's fold among the folds asked for."""
    return np.searchsorted(f, ff) * L


def fr_of(ff: np.ndarray, f: np.ndarray, fr: np.ndarray) -> np.ndarray:
    """Row fold of each entry's fold."""
    return fr[np.searchsorted(f, ff)]


def fc_of(ff: np.ndarray, f: np.ndarray, fc: np.ndarray) -> np.ndarray:
    """Column fold of each entry's fold."""
    return fc[np.searchsorted(f, ff)]


def _antidiagonal_order(n_rows: int, n_cols: int) -> np.ndarray:
    """Flat indices of an n_rows x n_cols matrix read by anti-diagonals (r + c ascending), row descending within one."""
    r, c = np.divmod(np.arange(n_rows * n_cols, dtype=np.int64), n_cols)
    return np.lexsort((-r, r + c))


def prefetch_stream(layer: ScaleSimLayer, arch: ScaleSimArch, operand: Literal["ifmap", "filter"]) -> np.ndarray:
    """The words an operand buffer fetches from DRAM, in fetch order, -1 for padding (§4 sizes, §6 order).

    Fold blocks of the operand as the array consumes it (padded to whole array folds) are stacked;
    SCALE-Sim reads os ifmap/filter, ws ifmap and is filter anti-diagonally (its skewed demand)
    and ws filter / is ifmap row by row.
    """
    m, n, k = layer.mnk
    R, C, df = arch.rows, arch.cols, arch.dataflow
    plan = fold_plan(m, n, k, R, C, df)
    Fr, Fc = int(plan.row_folds), int(plan.col_folds)
    if (df, operand) in (("os", "ifmap"), ("ws", "ifmap")):
        # blocks: (pixels if os else taps) of one row fold on columns; time on rows
        extent, lanes, width, folds = (k, m, R, Fr) if df == "os" else (m, k, R, Fr)
    elif (df, operand) in (("os", "filter"), ("ws", "filter")):
        extent, lanes, width, folds = k, n, C, Fc
    elif operand == "ifmap":   # is: K x M slices of C pixels, row-major
        extent, lanes, width, folds = k, m, C, Fc
    else:                      # is filter: N x (K slice of R), anti-diagonal
        extent, lanes, width, folds = n, k, R, Fr
    b, t, j = np.meshgrid(np.arange(folds), np.arange(extent), np.arange(width), indexing="ij")
    lane = b * width + j
    ok = lane < lanes
    lane_c = np.minimum(lane, lanes - 1)
    if operand == "ifmap":
        pix, tap = (t, lane_c) if df == "ws" else (lane_c, t)
        addr = ifmap_addresses(layer, pix, tap)
    else:
        tap, filt = (lane_c, t) if df == "is" else (t, lane_c)
        addr = filter_addresses(layer, tap, filt)
    mat = np.where(ok, addr, -1).reshape(folds * extent, width)
    if (df, operand) in (("ws", "filter"), ("is", "ifmap")):
        return mat.ravel()
    return mat.ravel()[_antidiagonal_order(*mat.shape)]


# --------------------------------------------------------------------------------------------
# §6 read buffer (USER)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _ReadResult:
    """DRAM side of one read buffer: words read, first/last DRAM cycle, and the fetches made per demand row."""

    dram_reads: int
    dram_start: int
    dram_stop: int
    fetch_rows: np.ndarray     # demand row of each re-fetch, in order
    fetch_done: np.ndarray     # DRAM cycle each re-fetch completes


def _read_buffer_user(fetch: np.ndarray, demand: _Stream, total_words: int, line_words: int) -> _ReadResult:
    """§6 read buffer: first fill, then a window over groups of fetched words that moves on every miss."""
    active = -(-total_words // 2)
    prefetch_half = total_words - active
    n0 = min(-(-active // line_words), -(-fetch.size // line_words))
    valid = fetch[fetch != -1]
    group_size = -(-total_words // SETS_PER_BUFFER)
    n_groups = valid.size // group_size + 1
    n_active = min(-(-active // group_size), n_groups)
    step = min(-(-prefetch_half // group_size), n_groups - n_active)
    lines_per_fetch = -(-prefetch_half // line_words)
    rows = demand.rows[demand.addrs != -1]
    addrs = demand.addrs[demand.addrs != -1]
    fetch_entries: list[int] = []
    if n_active < n_groups and addrs.size:
        uniq, inv = np.unique(valid, return_inverse=True)
        gid = np.arange(valid.size, dtype=np.int64) // group_size
        pairs = np.unique(inv.astype(np.int64) * n_groups + gid)
        pid, pg = np.divmod(pairs, n_groups)
        starts = np.searchsorted(pid, np.arange(uniq.size))
        rank = np.arange(pid.size) - starts[pid]
        groups = np.full((uniq.size, int(rank.max()) + 1), -1, dtype=np.int64)
        groups[pid, rank] = pg
        # pad each address's row with its first group, so padding can never hit on its own
        groups = np.where(groups < 0, groups[:, :1], groups)
        ids = np.searchsorted(uniq, addrs)
        if np.any(uniq[np.minimum(ids, uniq.size - 1)] != addrs):
            raise AssertionError("demand address missing from the prefetch stream")
        start, pos, chunk = 0, 0, 2048
        while pos < ids.size:
            end = min(ids.size, pos + chunk)
            hit = (((groups[ids[pos:end]] - start) % n_groups) < n_active).any(axis=1)
            miss = np.flatnonzero(~hit)
            if miss.size == 0:
                pos, chunk = end, min(chunk * 2, 1 << 18)
                continue
            e = pos + int(miss[0])
            mine = groups[ids[e]]
            while not (((mine - start) % n_groups) < n_active).any():
                start = (start + step) % n_groups
                fetch_entries.append(e)
            pos, chunk = e + 1, 2048
    count = len(fetch_entries)
    done = -1 + (lines_per_fetch + DRAM_READ_LATENCY) * np.arange(1, count + 1, dtype=np.int64)
    return _ReadResult((n0 + count * lines_per_fetch) * line_words, -n0, int(done[-1]) if count else -1,
                       rows[np.asarray(fetch_entries, dtype=np.int64)], done)


def _read_buffer_fast(layer: ScaleSimLayer, arch: ScaleSimArch, operand: Literal["ifmap", "filter"],
                      total_words: int, line_words: int) -> _ReadResult | None:
    """§6 read buffer from the layout arithmetic of `scalesim_layout`; None where it does not apply (window overrun)."""
    m, n, k = layer.mnk
    R, C, df = arch.rows, arch.cols, arch.dataflow
    plan = fold_plan(m, n, k, R, C, df)
    Fr, Fc = int(plan.row_folds), int(plan.col_folds)
    valid = valid_ifmap_entries(layer) if operand == "ifmap" else k * n
    active = -(-total_words // 2)
    prefetch_half = total_words - active
    n0 = min(-(-active // line_words), -(-_prefetch_words(plan, df, operand) // line_words))
    group_size = -(-total_words // SETS_PER_BUFFER)
    n_groups = valid // group_size + 1
    n_active = min(-(-active // group_size), n_groups)
    step = min(-(-prefetch_half // group_size), n_groups - n_active)
    lines_per_fetch = -(-prefetch_half // line_words)
    if n_active >= n_groups:
        rows, fetches = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    elif operand == "ifmap" and valid != m * k:
        return None     # overrun entries scatter -1 through the stream; the materialized algorithm handles them
    else:
        lay = stream_layout(df, operand, m, n, k, R, C, Fr, Fc)
        rows, fetches = window_misses(lay, layer if operand == "ifmap" else None, Fr, Fc, R, int(plan.spatial_rows),
                                      int(plan.cycles_per_fold), group_size, n_groups, n_active, step)
    count = int(fetches.sum())
    done = -1 + (lines_per_fetch + DRAM_READ_LATENCY) * np.arange(1, count + 1, dtype=np.int64)
    return _ReadResult((n0 + count * lines_per_fetch) * line_words, -n0, int(done[-1]) if count else -1,
                       np.repeat(rows, fetches), done)


# --------------------------------------------------------------------------------------------
# §7 read buffer (CALC)
# --------------------------------------------------------------------------------------------

def _generations(addrs: np.ndarray, capacity: int) -> tuple[list[int], int]:
    """Indices where each generation of `capacity` distinct words completes, and the distinct words left after."""
    bounds: list[int] = []
    pos = 0
    while pos < addrs.size:
        width = max(2 * capacity, 1024)
        while True:
            end = min(addrs.size, pos + width)
            uniq, first = np.unique(addrs[pos:end], return_index=True)
            if uniq.size >= capacity:
                b = pos + int(np.sort(first)[capacity - 1])
                bounds.append(b)
                pos = b + 1
                break
            if end == addrs.size:
                return bounds, int(uniq.size)
            width *= 2
    return bounds, 0


def _read_buffer_calc(demand: _Stream, tau: np.ndarray, total_words: int) -> tuple[int, int, int]:
    """§7: DRAM reads, start and stop of an operand in CALC mode (distinct words per generation)."""
    per_set = total_words // SETS_PER_BUFFER
    capacity = CALC_SETS_PER_GENERATION * per_set
    keep = demand.addrs != -1
    rows, addrs = demand.rows[keep], demand.addrs[keep]
    bounds, rest = _generations(addrs, capacity)
    reads = len(bounds) * capacity + rest
    if not bounds:
        cycles = math.ceil(-(-rest // per_set) * per_set / CALC_READ_RATE)
        if cycles == 0:
            raise ScaleSimUnsupported("SCALE-Sim 3.0.0 fails on an operand with no words to read")
        return reads, -cycles, -1
    first_request = int(tau[rows[0]])
    last_end = first_request - 1 - DRAM_READ_LATENCY
    last_start = last_end - math.ceil(capacity / CALC_READ_RATE) + 1
    start = last_start + DRAM_READ_LATENCY
    for b in bounds:
        if last_end - last_start + 1 <= 0:
            raise ScaleSimUnsupported("SCALE-Sim 3.0.0 divides by zero when two CALC generations end in one cycle")
        last_start, last_end = last_end + 1, int(tau[rows[b]])
    if last_end - last_start + 1 <= 0:
        raise ScaleSimUnsupported("SCALE-Sim 3.0.0 divides by zero when two CALC generations end in one cycle")
    return reads, start, last_end + DRAM_READ_LATENCY


# --------------------------------------------------------------------------------------------
# §6 ofmap write buffer and the row loop with stalls
# --------------------------------------------------------------------------------------------

class _WriteBuffer:
    """§6 ofmap write buffer: lines of `line` words, drained ceil(D/line) lines at a time, latency 0."""

    def __init__(self, total_words: int, line_words: int) -> None:
        self.total = total_words
        self.drain_half = total_words - (-(-total_words // 2))
        self.threshold = total_words - self.drain_half     # drain when free < threshold
        self.line = line_words
        self.chunk = -(-self.drain_half // line_words)
        self.free = total_words
        self.fill = 0                 # words in the open line
        self.closed = 0               # lines closed so far
        self.short: dict[int, int] = {}
        self.ptr = 0                  # next line to drain
        self.drain_end = 0
        self.writes = 0
        self.first_drain: int | None = None
        self.last_drain = 0

    def add(self, words: int) -> None:
        """Append words to lines; full lines close."""
        self.fill += words
        self.closed += self.fill // self.line
        self.fill %= self.line
        self.free -= words

    def close_open_line(self) -> None:
        """A drain closes the open line even when it is short."""
        if self.fill:
            self.short[self.closed] = self.fill
            self.closed += 1
            self.fill = 0

    def drain(self, cycle: int) -> None:
        """Send the next chunk of closed lines, one per cycle from `cycle`; quirk 9: only the chunk's last line is counted short."""
        lines = min(self.chunk, self.closed - self.ptr)
        if lines <= 0:
            raise ScaleSimUnsupported("SCALE-Sim 3.0.0 fails draining an empty ofmap buffer")
        last = self.ptr + lines - 1
        words = lines * self.line - (self.line - self.short.get(last, self.line))
        self.writes += words
        self.free += words
        self.ptr += lines
        self.drain_end = cycle + lines - 1
        # a drain started mid-compute can outlast the ones after the last row
        self.first_drain = cycle if self.first_drain is None else min(self.first_drain, cycle)
        self.last_drain = max(self.last_drain, self.drain_end)

    def write_row(self, cycle: int, words: int) -> int:
        """Serve one demand row's writes arriving at `cycle`; returns the cycle the row is served."""
        while words > 0:
            if cycle < self.drain_end:
                take = min(words, max(self.free, 1))
                self.add(take)
                words -= take
                if self.free <= 0:
                    cycle = self.drain_end
            else:
                take = min(words, max(self.free - self.threshold + 1, 1))
                self.add(take)
                words -= take
                if self.free < self.threshold:
                    self.close_open_line()
                    self.drain(cycle)
        return cycle

    def finish(self, cycle: int) -> None:
        """After the last row: close the open line and drain the rest back to back."""
        self.close_open_line()
        while self.ptr < self.closed:
            self.drain(cycle)
            cycle = self.drain_end + 1


@dataclass(frozen=True)
class _Timeline:
    """Outcome of the row loop: stalls added at each row, per-row service offsets, the write buffer."""

    stall_rows: np.ndarray
    stall_added: np.ndarray
    offsets: dict[str, dict[int, int]]
    last_service: int
    writes: _WriteBuffer

    def tau(self, rows: np.ndarray) -> np.ndarray:
        """Cycle each demand row is issued: its index plus the stalls of earlier rows."""
        cum = np.concatenate([[0], np.cumsum(self.stall_added)])
        return np.asarray(rows, dtype=np.int64) + cum[np.searchsorted(self.stall_rows, rows, side="left")]

    def service(self, operand: str, row: int, base_offset: int) -> int:
        """Cycle a row is served for one operand (reads: issue + hit latency + waits; writes: issue + push)."""
        return int(self.tau(np.array([row]))[0]) + self.offsets[operand].get(row, base_offset)


def _row_loop(n_rows: int, ofmap_counts: np.ndarray, reads: dict[str, _ReadResult],
              writes: _WriteBuffer) -> _Timeline:
    """§5/§6: walk the demand rows, jumping over rows where no buffer event can happen."""
    cum = np.concatenate([[0], np.cumsum(ofmap_counts)])
    fetches: dict[int, dict[str, list[int]]] = {}
    for name, res in reads.items():
        for row, done in zip(res.fetch_rows.tolist(), res.fetch_done.tolist()):
            fetches.setdefault(row, {}).setdefault(name, []).append(done)
    fetch_rows = sorted(fetches)
    offsets: dict[str, dict[int, int]] = {"ifmap": {}, "filter": {}, "ofmap": {}}
    stall_rows: list[int] = []
    stall_added: list[int] = []
    stalls = 0
    fi = 0
    i = 0
    last_service = None

    def first_row_reaching(i: int, words: int) -> int:
        """First row r >= i by whose end `words` more writes have arrived (n_rows if never)."""
        return int(np.searchsorted(cum, cum[i] + words, side="left")) - 1 if cum[-1] >= cum[i] + words else n_rows

    while i < n_rows:
        next_fetch = fetch_rows[fi] if fi < len(fetch_rows) else n_rows
        tau = i + stalls
        if tau >= writes.drain_end:
            event = first_row_reaching(i, max(writes.free - writes.threshold + 1, 1))
            boundary = n_rows
        else:
            event = first_row_reaching(i, max(writes.free, 1))
            boundary = writes.drain_end - stalls   # from this row on, rows issue after the drain ends
        stop = min(event, boundary, next_fetch, n_rows)
        if stop > i:
            writes.add(int(cum[stop] - cum[i]))
            i = stop
            continue
        # one row with an event
        row_stall = 0
        for name in ("ifmap", "filter"):
            dones = fetches.get(i, {}).get(name)
            if dones:
                off = READ_HIT_LATENCY
                for done in dones:
                    off += quirk_read_wait(done - (tau + off))
                offsets[name][i] = off
                row_stall = max(row_stall, off - READ_HIT_LATENCY)
        served = writes.write_row(tau, int(ofmap_counts[i]))
        if served != tau:
            offsets["ofmap"][i] = served - tau
        row_stall = int(max(row_stall, served - tau))
        if i == n_rows - 1:
            last_service = served
        if row_stall:
            stall_rows.append(i)
            stall_added.append(row_stall)
            stalls += row_stall
        if i == next_fetch:
            fi += 1
        i += 1
    if last_service is None:   # the last row had no event, so no stall of its own
        last_service = n_rows - 1 + stalls
    return _Timeline(np.asarray(stall_rows, dtype=np.int64), np.asarray(stall_added, dtype=np.int64),
                     offsets, int(last_service), writes)


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

def _fold_means(plan: FoldPlan, lu: int) -> tuple[float, float]:
    """Mapping efficiency and compute utilization (fractions) as SCALE-Sim sums its per-fold list, in fold order (§2)."""
    R, C, T = int(plan.rows), int(plan.cols), int(plan.temporal)
    Fr, Fc = int(plan.row_folds), int(plan.col_folds)
    ru = np.minimum(R, int(plan.spatial_rows) - np.arange(Fr) * R)
    cu = np.minimum(C, int(plan.spatial_cols) - np.arange(Fc) * C)
    used = (cu[:, None] * ru[None, :]).ravel()         # col fold outer, row fold inner
    mapping = used / (R * C)
    util = (used * T) / (R * C * lu)
    # np.add.accumulate adds left to right as Python's sum() does (np.sum would pair terms).
    return float(np.add.accumulate(mapping)[-1]) / used.size, float(np.add.accumulate(util)[-1]) / used.size


def _sram_start_stop_closed(plan: FoldPlan, df: Dataflow) -> dict[str, tuple[int, int]]:
    """§3 table: SRAM start/stop cycles per operand when nothing stalls."""
    R, C, T = int(plan.rows), int(plan.cols), int(plan.temporal)
    Fr, Fc, L = int(plan.row_folds), int(plan.col_folds), int(plan.cycles_per_fold)
    B = (Fr * Fc - 1) * L
    ru0, rl = min(R, int(plan.spatial_rows)), int(plan.spatial_rows) - (Fr - 1) * R
    cl = int(plan.spatial_cols) - (Fc - 1) * C
    if df == "os":
        return {"ifmap": (1, B + T + rl - 1), "filter": (1, B + T + cl - 1),
                "ofmap": (T - 1 + R - ru0, B + T + R + cl - 3)}
    stream = (R + 1, B + R + T + rl - 1)
    stationary = (R - ru0 + 1, B + R)
    ofmap = (2 * R - 1, B + 2 * R + T + cl - 3)
    if df == "ws":
        return {"ifmap": stream, "filter": stationary, "ofmap": ofmap}
    return {"ifmap": stationary, "filter": stream, "ofmap": ofmap}


@dataclass(frozen=True)
class _Counts:
    """Per-layer numbers that never depend on memory sizes (§1-§3), vectorized over layers."""

    plan: FoldPlan
    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    valid_ifmap: np.ndarray
    sram_ifmap_reads: np.ndarray
    sram_filter_reads: np.ndarray
    sram_ofmap_writes: np.ndarray
    ofmap_dram_words: np.ndarray
    util_fold_cycles: np.ndarray


def compat_counts(layers: list[ScaleSimLayer], arch: ScaleSimArch) -> _Counts:
    """SRAM traffic and fold plan of every layer at once: the physical model plus quirks 3, 4 and 5."""
    m, n, k = (np.array(v, dtype=np.int64) for v in zip(*(layer.mnk for layer in layers)))
    plan = fold_plan(m, n, k, arch.rows, arch.cols, arch.dataflow)
    phys = sram_traffic(plan, m, n, k, arch.dataflow)
    valid = np.array([valid_ifmap_entries(layer) for layer in layers], dtype=np.int64)
    # Physical reads skip entries past the ifmap edge; SCALE-Sim counts them (quirk 5).
    phys_ifmap = phys.ifmap_reads - quirk_overrun_reads(m, k, valid, plan, arch.dataflow)
    return _Counts(
        plan, m, n, k, valid,
        phys_ifmap + quirk_overrun_reads(m, k, valid, plan, arch.dataflow),
        phys.filter_reads,
        phys.ofmap_writes + quirk_os_ofmap_write_surplus(plan, arch.dataflow),
        quirk_partial_sum_dram_writes(plan, m, n, arch.dataflow),
        quirk_compute_util_fold_cycles(plan, arch.dataflow),
    )


def _plan_at(plan: FoldPlan, i: int) -> FoldPlan:
    """Row i of a batched plan."""
    return FoldPlan(*(np.asarray(getattr(plan, f.name))[i] for f in fields(FoldPlan)))


def _words(kib: int) -> int:
    """SRAM words of a size in KiB (1-byte words, §0)."""
    return kib * 1024


def _needs_refetch(valid_words: int, total_words: int) -> bool:
    """§4: the operand does not fit the active half at group granularity."""
    g = -(-total_words // SETS_PER_BUFFER)
    return valid_words // g + 1 > -(-(-(-total_words // 2)) // g)


def simulate_layer(layer: ScaleSimLayer, arch: ScaleSimArch, counts: _Counts | None = None, index: int = 0
                   ) -> LayerReport:
    """SCALE-Sim 3.0.0's report columns for one layer: closed forms when they hold, else the §6/§7 algorithm."""
    if counts is None:
        counts, index = compat_counts([layer], arch), 0
    plan = _plan_at(counts.plan, index)
    R, C, df = arch.rows, arch.cols, arch.dataflow
    m, n, k = (int(v[index]) for v in (counts.m, counts.n, counts.k))
    F, L = int(plan.folds), int(plan.cycles_per_fold)
    n_rows = F * L
    sram = {"ifmap": int(counts.sram_ifmap_reads[index]), "filter": int(counts.sram_filter_reads[index]),
            "ofmap": int(counts.sram_ofmap_writes[index])}
    mapping, util = _fold_means(plan, int(counts.util_fold_cycles[index]))
    tot = {"ifmap": _words(arch.ifmap_sram_kib), "filter": _words(arch.filter_sram_kib),
           "ofmap": _words(arch.ofmap_sram_kib)}
    out_words = int(counts.ofmap_dram_words[index])
    line = {"ifmap": arch.ifmap_bank_bandwidth, "filter": arch.filter_bank_bandwidth,
            "ofmap": arch.ofmap_bandwidth if arch.interface == "USER" else C}
    valid = {"ifmap": int(counts.valid_ifmap[index]), "filter": k * n}
    drain_half = tot["ofmap"] - (-(-tot["ofmap"] // 2))
    overrun = valid["ifmap"] != m * k

    if arch.interface == "USER":
        fast = (not _needs_refetch(valid["ifmap"], tot["ifmap"]) and not _needs_refetch(valid["filter"], tot["filter"])
                and out_words <= drain_half)
    else:
        per_set = tot["ifmap"] // SETS_PER_BUFFER, tot["filter"] // SETS_PER_BUFFER
        fast = (distinct_ifmap_words(layer) < CALC_SETS_PER_GENERATION * per_set[0]
                and k * n < CALC_SETS_PER_GENERATION * per_set[1] and out_words <= drain_half)

    if fast:
        stalls = 0
        total = int(quirk_reported_total_cycles(np.int64(n_rows), np.int64(0)))
        ss = _sram_start_stop_closed(plan, df)
        if overrun:
            ss["ifmap"] = (ss["ifmap"][0], _last_ifmap_service_closed(layer, arch, F, L))
        dram: dict[str, tuple[int, int, int]] = {}
        for op in ("ifmap", "filter"):
            if arch.interface == "USER":
                p = _prefetch_words(plan, df, op)
                n0 = quirk_first_fill_words(p, -(-tot[op] // 2), line[op]) // line[op]
                dram[op] = (-n0, -1, n0 * line[op])
            else:
                words = distinct_ifmap_words(layer) if op == "ifmap" else k * n
                per_set = tot[op] // SETS_PER_BUFFER
                cycles = math.ceil(-(-words // per_set) * per_set / CALC_READ_RATE)
                dram[op] = (-cycles, -1, words)
        dram["ofmap"] = (total, total + -(-out_words // line["ofmap"]) - 1, out_words)
    else:
        stalls, total, ss, dram = _simulate_streams(layer, arch, tot, line, n_rows)

    incl = dram["ofmap"][1] - min(dram["ifmap"][0], dram["filter"][0])
    macs = m * n * k

    def dram_bw(op: str) -> float:
        start, stop, words = dram[op]
        return words / (stop - start + 1)

    return LayerReport(
        total_cycles_incl_prefetch=int(incl), total_cycles=int(total), stall_cycles=int(stalls),
        overall_util_pct=(macs * 100) / (total * (R * C)),
        mapping_efficiency_pct=mapping * 100, compute_util_pct=util * 100,
        avg_ifmap_sram_bw=sram["ifmap"] / total, avg_filter_sram_bw=sram["filter"] / total,
        avg_ofmap_sram_bw=sram["ofmap"] / total,
        avg_ifmap_dram_bw=dram_bw("ifmap"), avg_filter_dram_bw=dram_bw("filter"), avg_ofmap_dram_bw=dram_bw("ofmap"),
        sram_ifmap_start_cycle=float(ss["ifmap"][0]), sram_ifmap_stop_cycle=float(ss["ifmap"][1]),
        sram_ifmap_reads=sram["ifmap"],
        sram_filter_start_cycle=float(ss["filter"][0]), sram_filter_stop_cycle=float(ss["filter"][1]),
        sram_filter_reads=sram["filter"],
        sram_ofmap_start_cycle=float(ss["ofmap"][0]), sram_ofmap_stop_cycle=float(ss["ofmap"][1]),
        sram_ofmap_writes=sram["ofmap"],
        dram_ifmap_start_cycle=float(dram["ifmap"][0]), dram_ifmap_stop_cycle=float(dram["ifmap"][1]),
        dram_ifmap_reads=int(dram["ifmap"][2]),
        dram_filter_start_cycle=float(dram["filter"][0]), dram_filter_stop_cycle=float(dram["filter"][1]),
        dram_filter_reads=int(dram["filter"][2]),
        dram_ofmap_start_cycle=float(dram["ofmap"][0]), dram_ofmap_stop_cycle=float(dram["ofmap"][1]),
        dram_ofmap_writes=int(dram["ofmap"][2]),
    )


def _prefetch_words(plan: FoldPlan, df: Dataflow, operand: str) -> int:
    """§4 table: size of an operand's prefetch matrix, fold padding included."""
    R, C = int(plan.rows), int(plan.cols)
    Fr, Fc, T = int(plan.row_folds), int(plan.col_folds), int(plan.temporal)
    Sr, Sc = int(plan.spatial_rows), int(plan.spatial_cols)
    table = {
        ("os", "ifmap"): T * Fr * R, ("os", "filter"): T * Fc * C,
        ("ws", "ifmap"): T * Fr * R, ("ws", "filter"): Sr * Fc * C,
        ("is", "ifmap"): Sr * Fc * C, ("is", "filter"): T * Fr * R,
    }
    return table[(df, operand)]


def _last_ifmap_service_closed(layer: ScaleSimLayer, arch: ScaleSimArch, F: int, L: int) -> int:
    """Ifmap SRAM stop without stalls when windows overrun: the last demand row with an address, in the last fold."""
    # Trailing folds may hold only out-of-range pixels (is: the last M slice), so look back in growing batches.
    batch = 1
    while True:
        first = max(0, F - batch)
        if_s, _, _ = demand_streams(layer, arch, folds=np.arange(first, F))
        rows = if_s.rows[if_s.addrs != -1]
        if rows.size:
            return first * L + int(rows.max()) + READ_HIT_LATENCY
        if first == 0:
            raise ScaleSimUnsupported("SCALE-Sim 3.0.0 fails on a layer whose windows never touch the ifmap")
        batch *= 2


def _ofmap_row_counts(plan: FoldPlan, df: Dataflow) -> np.ndarray:
    """Ofmap words written at each demand row (§6 ofmap demand), from each fold's (rows, cols) used.

    os writes the flipped ru x cu tile skewed after T - 1 empty rows, so local row T - 1 + u + j holds
    (u, j) with u in [R - ru, R - 1], j < cu; ws/is write T x cu skewed after 2R - 1 empty rows.
    The count at offset o of a sum u + j over two boxes is the overlap of one box with o minus the other.
    """
    R, C, T = int(plan.rows), int(plan.cols), int(plan.temporal)
    Fr, Fc, L = int(plan.row_folds), int(plan.col_folds), int(plan.cycles_per_fold)
    fc, fr = np.divmod(np.arange(Fr * Fc, dtype=np.int64), Fr)
    ru = np.minimum(R, int(plan.spatial_rows) - fr * R)[:, None]
    cu = np.minimum(C, int(plan.spatial_cols) - fc * C)[:, None]
    row = np.arange(L, dtype=np.int64)[None, :]
    if df == "os":
        o, a0, a1 = row - (T - 1), R - ru, R - 1
    else:
        o, a0, a1 = row - (2 * R - 1), np.zeros_like(ru), np.full_like(ru, T - 1)
    return np.maximum(np.minimum(a1, o) - np.maximum(a0, o - cu + 1) + 1, 0).ravel()


def _demand_row_bounds(layer: ScaleSimLayer, arch: ScaleSimArch, plan: FoldPlan) -> dict[str, tuple[int, int]]:
    """First and last demand rows holding an address, per operand (§3 table less the read hit latency)."""
    closed = _sram_start_stop_closed(plan, arch.dataflow)
    bounds = {op: (start - READ_HIT_LATENCY, stop - READ_HIT_LATENCY) for op, (start, stop) in closed.items()
              if op != "ofmap"}
    bounds["ofmap"] = closed["ofmap"]
    m, _, k = layer.mnk
    if valid_ifmap_entries(layer) != m * k:
        F, L = int(plan.folds), int(plan.cycles_per_fold)
        bounds["ifmap"] = (bounds["ifmap"][0], _last_ifmap_service_closed(layer, arch, F, L) - READ_HIT_LATENCY)
    return bounds


def _simulate_streams(layer: ScaleSimLayer, arch: ScaleSimArch, tot: dict[str, int], line: dict[str, int],
                      n_rows: int) -> tuple[int, int, dict[str, tuple[int, int]], dict[str, tuple[int, int, int]]]:
    """§6/§7: stalls, total cycles, SRAM start/stop and DRAM (start, stop, words) per operand.

    USER mode never builds the demand: reads come from the layout arithmetic (`_read_buffer_fast`), the
    ofmap writes per row and the first/last rows of each operand from closed forms. The materialized
    demand is built only for what the arithmetic does not cover (USER reads with window overrun, CALC).
    """
    m, n, k = layer.mnk
    plan = fold_plan(m, n, k, arch.rows, arch.cols, arch.dataflow)
    demand: dict[str, _Stream] = {}
    reads: dict[str, _ReadResult] = {}
    if arch.interface == "USER":
        for op in ("ifmap", "filter"):
            fast = _read_buffer_fast(layer, arch, op, tot[op], line[op])
            if fast is None:
                if not demand:
                    demand["ifmap"], demand["filter"], _ = demand_streams(layer, arch)
                fast = _read_buffer_user(prefetch_stream(layer, arch, op), demand[op], tot[op], line[op])
            reads[op] = fast
        of_counts = _ofmap_row_counts(plan, arch.dataflow)
    else:
        demand["ifmap"], demand["filter"], of_counts = demand_streams(layer, arch)
    writes = _WriteBuffer(tot["ofmap"], line["ofmap"])
    timeline = _row_loop(n_rows, of_counts, reads, writes)
    writes.finish(timeline.last_service)
    stalls = int(timeline.stall_added.sum())
    total = timeline.last_service
    dram: dict[str, tuple[int, int, int]] = {}
    for op in ("ifmap", "filter"):
        if arch.interface == "USER":
            dram[op] = (reads[op].dram_start, reads[op].dram_stop, reads[op].dram_reads)
        else:
            keep = demand[op].addrs != -1
            tau = timeline.tau(np.arange(n_rows))
            words, start, stop = _read_buffer_calc(_Stream(demand[op].rows[keep], demand[op].addrs[keep]), tau,
                                                   tot[op])
            dram[op] = (start, stop, words)
    dram["ofmap"] = (int(writes.first_drain), int(writes.last_drain), int(writes.writes))
    bounds = _demand_row_bounds(layer, arch, plan)
    ss = {op: (timeline.service(op, first, READ_HIT_LATENCY), timeline.service(op, last, READ_HIT_LATENCY))
          for op, (first, last) in bounds.items() if op != "ofmap"}
    ss["ofmap"] = (timeline.service("ofmap", bounds["ofmap"][0], 0), timeline.service("ofmap", bounds["ofmap"][1], 0))
    return stalls, total, ss, dram


def simulate(layers: list[ScaleSimLayer], arch: ScaleSimArch) -> list[LayerReport]:
    """SCALE-Sim 3.0.0's reports for a topology: layer-independent counts vectorized, then each layer's buffers."""
    counts = compat_counts(layers, arch)
    return [simulate_layer(layer, arch, counts, i) for i, layer in enumerate(layers)]
