"""Where every word of a SCALE-Sim operand sits, by arithmetic: the fast §6 read buffer of `accounting`.

ACCOUNTING.md §6 defines the read buffer on two streams: the prefetch stream (the operand's fold-padded
matrix read anti-diagonally or row by row, cut into groups of g valid words) and the demand stream (the
words each fold asks for, in order). Both are fixed by the layer geometry, so instead of materializing
millions of im2col entries and searching for each address's groups, this module computes, for any word,
its position in the prefetch stream in closed form, and the positions of every other copy of the same
ifmap word (overlapping conv windows) from the window geometry. The demand is cut into units of at most a
few thousand words whose own group range is known in closed form; a unit lying inside the active window
cannot miss, so only units near a window edge are expanded word by word. There a word is tested on an order
key of its cell (`cell_key`) against the keys of the window's first and last words (`key_at`, the inverse of
the position), and an ifmap word first on one copy likely read earliest (`probe_cells`), so that only the few
words it does not settle have all their copies placed. The result is exactly the misses the word-by-word
algorithm finds (tests/unit/compat/test_scalesim_layout.py compares the two).

Each operand's stream is one of two families (ACCOUNTING.md §6, "Demand order" and "Fetch order"):
- "diag" (os ifmap/filter, ws ifmap, is filter): fold blocks of `extent` rows x `width` lanes are stacked
  and read anti-diagonally; a fold reads its own block, its demand row `base + d` holding the block's
  local anti-diagonal d, so within a fold the demand follows the stream.
- "tile" (ws filter, is ifmap): the stacked blocks are read row by row; a fold reads `ru` rows of its
  block, last row first (the tile is flipped), demand row R - 1 - i holding tile row i.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from accel_sim.compat.scalesim.base import ScaleSimLayer, ScaleSimUnsupported

Family = Literal["diag", "tile"]
UNIT_WORDS = 2048   # words per demand unit: small enough to expand cheaply near a window edge
COPY_BATCH = 256    # words whose copies are located at once while looking for the first miss


@dataclass(frozen=True)
class StreamLayout:
    """One operand's prefetch matrix and how the folds read it (all sizes in words)."""

    family: Family
    extent: int          # rows of one fold block (the operand's temporal extent in that block)
    width: int           # lanes of one block (array rows or columns)
    lanes: int           # real lanes over all blocks; the rest of the last block is -1 padding
    blocks: int
    block_is_row_fold: bool   # a fold reads block fr (else block fc)
    base: int            # diag: demand row of a block's local anti-diagonal 0
    pixel_is_lane: bool  # ifmap: the lane is the output pixel (else the window tap)

    @property
    def n_rows(self) -> int:
        """Rows of the stacked matrix."""
        return self.blocks * self.extent

    @property
    def pad_cols(self) -> int:
        """First padding column of the last block."""
        return self.lanes - (self.blocks - 1) * self.width

    @property
    def valid_words(self) -> int:
        """Words with an address (no window overrun: only the last block's padding is -1)."""
        return self.n_rows * self.width - self.extent * (self.width - self.pad_cols)


def stream_layout(dataflow: str, operand: str, m: int, n: int, k: int, rows: int, cols: int,
                  row_folds: int, col_folds: int) -> StreamLayout:
    """The layout of (dataflow, operand), as SCALE-Sim 3.0.0 builds its prefetch and demand matrices (§4, §6)."""
    table = {
        ("os", "ifmap"): ("diag", k, rows, m, row_folds, True, 0, True),
        ("ws", "ifmap"): ("diag", m, rows, k, row_folds, True, rows, False),
        ("is", "ifmap"): ("tile", k, cols, m, col_folds, False, 0, True),
        ("os", "filter"): ("diag", k, cols, n, col_folds, False, 0, False),
        ("ws", "filter"): ("tile", k, cols, n, col_folds, False, 0, False),
        ("is", "filter"): ("diag", n, rows, k, row_folds, True, rows, False),
    }
    return StreamLayout(*table[(dataflow, operand)])


def _tri(x: np.ndarray | int) -> np.ndarray | int:
    """x (x + 1) / 2 for x > 0, else 0: cells (r, c >= 0) with r + c < x (arrays, or Python ints for bisection)."""
    return x * (x + 1) // 2 * (x > 0)


def _cells_before_diagonal(d: np.ndarray | int, n_rows: int, n_cols: int) -> np.ndarray | int:
    """Cells of an n_rows x n_cols matrix on anti-diagonals < d (inclusion-exclusion on the quarter plane)."""
    return _tri(d) - _tri(d - n_rows) - _tri(d - n_cols) + _tri(d - n_rows - n_cols)


def valid_index(lay: StreamLayout, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Index among the stream's valid words of the (valid) cell (row, col) of the stacked matrix."""
    row = np.asarray(row, dtype=np.int64)
    col = np.asarray(col, dtype=np.int64)
    nr, nc = lay.n_rows, lay.width
    r0, cw = nr - lay.extent, lay.pad_cols
    pc = nc - cw
    if lay.family == "tile":
        pos = row * nc + col
        if pc == 0:
            return pos
        pad = np.maximum(row - r0, 0) * pc + np.where(row >= r0, np.maximum(col - cw, 0), 0)
        return pos - pad
    d = row + col
    pos = _cells_before_diagonal(d, nr, nc) + (np.minimum(d, nr - 1) - row)
    if pc == 0:
        return pos
    # padding cells read earlier: those on earlier diagonals, and those higher up on this one
    pad = _cells_before_diagonal(d - r0 - cw, lay.extent, pc)
    lo = np.maximum(np.maximum(row + 1, r0), d - nc + 1)
    hi = np.minimum(nr - 1, d - cw)
    return pos - pad - np.maximum(hi - lo + 1, 0)


def cell_key(lay: StreamLayout, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """An integer that orders valid cells as the stream reads them (cheaper than `valid_index`, same order)."""
    if lay.family == "tile":
        return row * lay.width + col
    return (row + col) * lay.n_rows + (lay.n_rows - 1 - row)   # by anti-diagonal, then largest row first


def key_at(lay: StreamLayout, index: int) -> int:
    """`cell_key` of the valid word at `index` of the stream (the inverse of `valid_index`; index < valid_words)."""
    nr, nc = lay.n_rows, lay.width
    r0, cw = nr - lay.extent, lay.pad_cols
    pc = nc - cw
    if lay.family == "tile":
        if index < r0 * nc:
            return index
        row, col = divmod(index - r0 * nc, cw)
        return (r0 + row) * nc + col

    def before(d: int) -> int:   # valid words on anti-diagonals < d
        return _cells_before_diagonal(d, nr, nc) - _cells_before_diagonal(d - r0 - cw, lay.extent, pc)

    lo, hi = 0, nr + nc - 2      # the last diagonal with before(d) <= index, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if before(mid) <= index else (lo, mid - 1)
    d = lo
    offset, top = index - before(d), min(d, nr - 1)
    pad_lo, pad_hi = max(r0, d - nc + 1), min(nr - 1, d - cw)
    if pc and pad_hi >= pad_lo and offset >= top - pad_hi:
        offset += pad_hi - pad_lo + 1    # the diagonal's padding cells sit between its upper and lower valid cells
    row = top - offset
    return d * nr + (nr - 1 - row)


@dataclass(frozen=True)
class DemandUnits:
    """The demand cut into units, in demand order: each unit's fold, span and own group range."""

    fold: np.ndarray
    lo: np.ndarray       # diag: first local anti-diagonal; tile: lowest tile row
    hi: np.ndarray       # diag: last local anti-diagonal; tile: highest tile row (read first)
    group_min: np.ndarray
    group_max: np.ndarray


def _fold_blocks(lay: StreamLayout, folds: np.ndarray, row_folds: int, rows: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block, lanes used in it, row fold) of each fold (col fold outer, row fold inner)."""
    fc, fr = np.divmod(folds, row_folds)
    block = fr if lay.block_is_row_fold else fc
    used = np.minimum(lay.width, lay.lanes - block * lay.width)
    return block, used, fr


def demand_units(lay: StreamLayout, row_folds: int, col_folds: int, rows: int, tile_rows_total: int,
                 group_words: int) -> DemandUnits:
    """Units of about UNIT_WORDS demand words over all folds, with the own-group range each can touch."""
    folds = np.arange(row_folds * col_folds, dtype=np.int64)
    block, used, fr = _fold_blocks(lay, folds, row_folds, rows)
    step = max(1, UNIT_WORDS // lay.width)
    if lay.family == "diag":
        span = lay.extent + used - 1                   # local anti-diagonals holding a word
    else:
        span = np.minimum(rows, tile_rows_total - fr * rows)   # ru: tile rows of the fold
    per_fold = -(-span // step)
    fold = np.repeat(folds, per_fold)
    first = np.repeat(np.cumsum(per_fold) - per_fold, per_fold)
    idx = np.arange(fold.size, dtype=np.int64) - first
    b, u, sp = block[fold], used[fold], span[fold]
    if lay.family == "diag":
        lo = idx * step
        hi = np.minimum(lo + step, sp) - 1
        j0 = np.maximum(0, lo - lay.extent + 1)
        j1 = np.minimum(u - 1, hi)
        q0 = valid_index(lay, b * lay.extent + lo - j0, j0)
        q1 = valid_index(lay, b * lay.extent + hi - j1, j1)
    else:
        hi = sp - 1 - idx * step                       # tile rows go last row first
        lo = np.maximum(hi - step + 1, 0)
        top = b * lay.extent + fr[fold] * rows
        q0 = valid_index(lay, top + lo, np.zeros_like(lo))
        q1 = valid_index(lay, top + hi, u - 1)
    return DemandUnits(fold, lo, hi, q0 // group_words, q1 // group_words)


def unit_words(lay: StreamLayout, units: DemandUnits, i: int, row_folds: int, rows: int, fold_cycles: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(demand row, stacked-matrix row, column) of every word of unit i, in demand order."""
    f = int(units.fold[i])
    block, used, fr = (int(v[0]) for v in _fold_blocks(lay, np.array([f]), row_folds, rows))
    lo, hi = int(units.lo[i]), int(units.hi[i])
    if lay.family == "diag":
        d, j = np.divmod(np.arange((hi - lo + 1) * lay.width, dtype=np.int64), lay.width)
        d += lo
        t = d - j
        keep = (t >= 0) & (t < lay.extent) & (j < used)
        d, j, t = d[keep], j[keep], t[keep]
        return f * fold_cycles + lay.base + d, block * lay.extent + t, j
    i_desc, j = np.divmod(np.arange((hi - lo + 1) * used, dtype=np.int64), used)
    tile_row = hi - i_desc
    return f * fold_cycles + rows - 1 - tile_row, block * lay.extent + fr * rows + tile_row, j


def windows_overlap(layer: ScaleSimLayer | None) -> bool:
    """Whether some ifmap word has several im2col copies (conv windows overlap; never for a filter, layer None)."""
    if layer is None:
        return False
    st = layer.stride
    return (min(layer.filter_h - 1, (layer.ofmap_h - 1) * st) >= st
            or min(layer.filter_w - 1, (layer.ofmap_w - 1) * st) >= st)


def _window_coords(lay: StreamLayout, layer: ScaleSimLayer, mat_row: np.ndarray, col: np.ndarray
                   ) -> tuple[np.ndarray, ...]:
    """(py, px, r, s, c) of each ifmap word: its output pixel and its window tap (row, column, channel)."""
    block, t = np.divmod(mat_row, lay.extent)
    lane = block * lay.width + col
    pix, tap = (lane, t) if lay.pixel_is_lane else (t, lane)
    py, px = np.divmod(pix, layer.ofmap_w)
    rs, c = np.divmod(tap, layer.channels)
    r, s = np.divmod(rs, layer.filter_w)
    return py, px, r, s, c


def _cell_of(lay: StreamLayout, layer: ScaleSimLayer, py: np.ndarray, px: np.ndarray, r: np.ndarray, s: np.ndarray,
             c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stacked-matrix (row, column) of output pixel (py, px) and tap (r, s, c) (broadcasting)."""
    pix, tap = py * layer.ofmap_w + px, (r * layer.filter_w + s) * layer.channels + c
    lane, t = (pix, tap) if lay.pixel_is_lane else (tap, pix)
    block, col = np.divmod(lane, lay.width)
    return block * lay.extent + t, col


def copy_cells(lay: StreamLayout, layer: ScaleSimLayer | None, mat_row: np.ndarray, col: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Stacked-matrix (row, column) of every copy of each word, one row per word (a word without other copies,
    or a filter word, has its own cell as its only copy).

    Ifmap word (y, x, c) sits at every (output pixel, tap) with py * stride + r = y and px * stride + s = x:
    one candidate per tap row r2 and column s2 of the window, kept when the stride divides the shift and
    the output pixel exists; other candidates repeat the word's own cell.
    """
    if not windows_overlap(layer):
        return mat_row[:, None], col[:, None]
    st, rf, sf = layer.stride, layer.filter_h, layer.filter_w
    py, px, r, s, c = _window_coords(lay, layer, mat_row, col)
    r2, s2 = np.divmod(np.arange(rf * sf)[None, :], sf)
    dy, dx = r[:, None] - r2, s[:, None] - s2          # the other pixel is py + dy / stride, px + dx / stride
    py2, px2 = py[:, None] + dy // st, px[:, None] + dx // st
    ok = (dy % st == 0) & (dx % st == 0) & (py2 >= 0) & (py2 < layer.ofmap_h) & (px2 >= 0) & (px2 < layer.ofmap_w)
    row2, col2 = _cell_of(lay, layer, py2, px2, r2, s2, c[:, None])
    return np.where(ok, row2, mat_row[:, None]), np.where(ok, col2, col[:, None])


def probe_cells(lay: StreamLayout, layer: ScaleSimLayer, mat_row: np.ndarray, col: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """One copy of each ifmap word, the one likely read earliest: as many output rows up (pixel lanes) or down (tap
    lanes, where the lower tap row sits in an earlier block) as the window allows. A cheap first test: a word
    whose probe copy is in the read window hits without its other copies being placed."""
    st = layer.stride
    py, px, r, s, c = _window_coords(lay, layer, mat_row, col)
    if lay.pixel_is_lane:
        shift = np.minimum((layer.filter_h - 1 - r) // st, py)
        return _cell_of(lay, layer, py - shift, px, r + st * shift, s, c)
    shift = np.minimum(r // st, layer.ofmap_h - 1 - py)
    return _cell_of(lay, layer, py + shift, px, r - st * shift, s, c)


def copy_groups(lay: StreamLayout, layer: ScaleSimLayer | None, mat_row: np.ndarray, col: np.ndarray,
                group_words: int) -> np.ndarray:
    """Groups of every copy of each word (one row per word, as `copy_cells`)."""
    return valid_index(lay, *copy_cells(lay, layer, mat_row, col)) // group_words


class _Window:
    """The §6 read window as a range of `cell_key`s: n_active groups from `start`, modulo n_groups."""

    def __init__(self, lay: StreamLayout, group_words: int, n_groups: int, n_active: int) -> None:
        self.lay, self.group_words, self.n_groups, self.n_active = lay, group_words, n_groups, n_active
        self.end_key = (lay.n_rows + lay.width) * lay.n_rows   # above every cell's key, in both families
        self._keys: dict[int, int] = {}
        self.move(0)

    def _group_key(self, group: int) -> int:
        """Key of the first word of `group` (end_key past the last word); memoized, as windows revisit groups."""
        if group not in self._keys:
            index = group * self.group_words
            self._keys[group] = key_at(self.lay, index) if index < self.lay.valid_words else self.end_key
        return self._keys[group]

    def move(self, start: int) -> None:
        """Put the window's first group at `start`."""
        end = start + self.n_active
        self.wraps = end > self.n_groups
        self.lo, self.hi = self._group_key(start), self._group_key(end - self.n_groups if self.wraps else end)

    def holds(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key's word lies in one of the window's groups."""
        if self.wraps:
            return (keys >= self.lo) | (keys < self.hi)
        return (keys >= self.lo) & (keys < self.hi)


def window_misses(lay: StreamLayout, layer: ScaleSimLayer | None, row_folds: int, col_folds: int, rows: int,
                  tile_rows_total: int, fold_cycles: int, group_words: int, n_groups: int, n_active: int,
                  step: int) -> tuple[np.ndarray, np.ndarray]:
    """§6 window over the demand: (demand row, fetches) of every miss, in order.

    A word hits when one of its copies' groups lies in the window of n_active groups starting at the
    window start (modulo n_groups); on a miss the start moves by `step` groups until it hits. Words are
    tested on their `cell_key`s against the window's key range, which is the same test as on their groups.
    """
    units = demand_units(lay, row_folds, col_folds, rows, tile_rows_total, group_words)
    gmin, spread = units.group_min, units.group_max - units.group_min
    n_units = gmin.size
    miss_rows: list[int] = []
    miss_fetches: list[int] = []
    window = _Window(lay, group_words, n_groups, n_active)
    probe = windows_overlap(layer)
    start = 0
    u = 0
    cached = -1
    first = 0          # next word to check in unit u
    chunk = 64
    ks = np.arange(1, n_groups + 1, dtype=np.int64)
    while u < n_units:
        if first == 0:
            # skip units whose own groups all lie in the window: none of their words can miss
            end = min(n_units, u + chunk)
            unsafe = np.flatnonzero((gmin[u:end] - start) % n_groups + spread[u:end] >= n_active)
            if unsafe.size == 0:
                u, chunk = end, min(chunk * 4, 1 << 16)
                continue
            u, chunk = u + int(unsafe[0]), 64
        if cached != u:
            demand_row, mat_row, col = unit_words(lay, units, u, row_folds, rows, fold_cycles)
            own = cell_key(lay, mat_row, col)
            cached = u
        # only words whose own group is outside the window can miss; check their copies a few at a time
        outside = first + np.flatnonzero(~window.holds(own[first:]))
        e, lo, batch = -1, 0, COPY_BATCH
        while lo < outside.size:
            cand = outside[lo:lo + batch]
            if probe:
                cand = cand[~window.holds(cell_key(lay, *probe_cells(lay, layer, mat_row[cand], col[cand])))]
            miss = np.flatnonzero(~window.holds(cell_key(lay, *copy_cells(lay, layer, mat_row[cand], col[cand])))
                                  .any(axis=1)) if cand.size else cand
            if miss.size:
                e = int(cand[miss[0]])
                break
            lo, batch = lo + batch, batch * 4   # the miss is not near: look further at once
        if e < 0:
            u, first = u + 1, 0
            continue
        mine = copy_groups(lay, layer, mat_row[e:e + 1], col[e:e + 1], group_words)[0]
        starts = (start + ks * step) % n_groups
        ok = (((mine[None, :] - starts[:, None]) % n_groups) < n_active).any(axis=1)
        if not ok.any():
            raise ScaleSimUnsupported("SCALE-Sim 3.0.0 loops forever: its read window never reaches a word")
        k = int(np.argmax(ok)) + 1
        start = int(starts[k - 1])
        window.move(start)
        miss_rows.append(int(demand_row[e]))
        miss_fetches.append(k)
        first = e + 1
        if first >= demand_row.size:
            u, first = u + 1, 0
    return np.asarray(miss_rows, dtype=np.int64), np.asarray(miss_fetches, dtype=np.int64)
