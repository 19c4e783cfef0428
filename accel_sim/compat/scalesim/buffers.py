"""SCALE-Sim 3.0.0 compatibility, part 2: demand and prefetch streams and the order-dependent read and write
buffer algorithms (§6 USER, §7 CALC of tests/golden/scalesim/ACCOUNTING.md), iterating over buffer events
(fetches, drains), not cycles. The materialized streams are the reference; `layout` gives the USER read
buffers by layout arithmetic instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accel_sim.compat.scalesim.base import (
    CALC_READ_RATE,
    CALC_SETS_PER_GENERATION,
    DRAM_READ_LATENCY,
    READ_HIT_LATENCY,
    SETS_PER_BUFFER,
    ScaleSimArch,
    ScaleSimLayer,
    ScaleSimUnsupported,
    filter_addresses,
    ifmap_addresses,
    prefetch_words,
    quirk_read_wait,
    valid_ifmap_entries,
)
from accel_sim.compat.scalesim.layout import stream_layout, window_misses
from accel_sim.folds import fold_plan

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


def _tile_entries(f: np.ndarray, used: np.ndarray, extent: int, width: int) -> tuple[np.ndarray, ...]:
    """All (fold, t, j) with t < extent and j < used[fold]: one entry per streamed word of each fold."""
    t = np.arange(extent, dtype=np.int64)
    j = np.arange(width, dtype=np.int64)
    ff, tt, jj = np.meshgrid(np.arange(f.size), t, j, indexing="ij")
    keep = jj < used[ff]
    return f[ff[keep]], tt[keep], jj[keep]


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

    def stream(row: np.ndarray, col: np.ndarray, addr: np.ndarray) -> _Stream:
        order = np.lexsort((col, row))
        return _Stream(row[order], addr[order])

    def ofmap_counts(row: np.ndarray) -> np.ndarray:
        return np.bincount(row, minlength=nrows).astype(np.int64)

    def tile_cells() -> tuple[np.ndarray, ...]:
        """(fold, i, j) of every cell of each fold's ru x cu tile (the stationary operand or the outputs)."""
        ff, i, j = _tile_entries(f, cu, R, C)
        keep = i < ru[np.searchsorted(f, ff)]
        return ff[keep], i[keep], j[keep]

    if df == "os":
        # ifmap: T x ru (pixels on array rows), column j skewed by j, starts at row 0
        ff, t, j = _tile_entries(f, ru, T, R)
        if_s = stream(local_of(ff, f, L) + t + j, j, ifmap_addresses(layer, fr_of(ff, f, fr) * R + j, t))
        ff, t, j = _tile_entries(f, cu, T, C)
        fl_s = stream(local_of(ff, f, L) + t + j, j, filter_addresses(layer, t, fc_of(ff, f, fc) * C + j))
        # ofmap: the ru x cu tile padded to R rows, flipped, skewed, after T - 1 empty rows
        ff, i, j = tile_cells()
        of = ofmap_counts(local_of(ff, f, L) + (T - 1) + (R - 1 - i) + j)
    elif df == "ws":
        ff, t, j = _tile_entries(f, ru, T, R)
        if_s = stream(local_of(ff, f, L) + R + t + j, j, ifmap_addresses(layer, t, fr_of(ff, f, fr) * R + j))
        ff, i, j = tile_cells()
        fl_s = stream(local_of(ff, f, L) + (R - 1 - i), j,
                      filter_addresses(layer, fr_of(ff, f, fr) * R + i, fc_of(ff, f, fc) * C + j))
        ff, t, j = _tile_entries(f, cu, T, C)
        of = ofmap_counts(local_of(ff, f, L) + 2 * R - 1 + t + j)
    else:
        ff, i, j = tile_cells()
        if_s = stream(local_of(ff, f, L) + (R - 1 - i), j,
                      ifmap_addresses(layer, fc_of(ff, f, fc) * C + j, fr_of(ff, f, fr) * R + i))
        ff, t, j = _tile_entries(f, ru, T, R)
        fl_s = stream(local_of(ff, f, L) + R + t + j, j, filter_addresses(layer, fr_of(ff, f, fr) * R + j, t))
        ff, t, j = _tile_entries(f, cu, T, C)
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
    """§6 read buffer from the layout arithmetic of `layout`; None where it does not apply (window overrun)."""
    m, n, k = layer.mnk
    R, C, df = arch.rows, arch.cols, arch.dataflow
    plan = fold_plan(m, n, k, R, C, df)
    Fr, Fc = int(plan.row_folds), int(plan.col_folds)
    valid = valid_ifmap_entries(layer) if operand == "ifmap" else k * n
    active = -(-total_words // 2)
    prefetch_half = total_words - active
    n0 = min(-(-active // line_words), -(-prefetch_words(plan, df, operand) // line_words))
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
