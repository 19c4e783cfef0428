"""SCALE-Sim 3.0.0 compatibility: its accounting, reproduced number for number, as the physical model plus named quirks.

The formulas and the order-dependent buffer algorithm are written up in tests/golden/scalesim/ACCOUNTING.md
(sections cited as §N below); they were derived from SCALE-Sim's outputs and checked on 186 reference cases.
The physical systolic model (`engines.systolic`) counts what an array really does; this module adds,
each in its own function, the quirks SCALE-Sim's reports carry (§8), so that `compat - physical`
is exactly the list of quirks.

Fast path: when neither read buffer has to re-fetch and the ofmap buffer never drains during compute
(§4), every number is a closed form, vectorized over layers. Otherwise the §6 (USER) or §7 (CALC)
algorithm runs; it iterates over buffer events (fetches, drains), not cycles. In USER mode the read
buffers come from layout arithmetic (`layout`: each word's prefetch position and the positions of
its repeated copies in closed form, expanding only the demand near a window edge), and the ofmap writes per
row and each operand's first/last demand rows are closed forms, so no demand stream is built; the
materialized streams (`demand_streams`, `prefetch_stream`, `_read_buffer_user`) remain the reference,
used for CALC mode and for USER ifmap re-fetch with window overrun.

Layout of this package: `base` (constants, layer/arch/report types, address arithmetic, the named quirks),
`buffers` (streams and the §6/§7 buffer algorithms), `layout` (USER read buffers by arithmetic), `files`
(SCALE-Sim's .cfg, topology and report files) and this module (closed forms and the reports).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from accel_sim.compat.scalesim.base import (
    CALC_READ_RATE,
    CALC_SETS_PER_GENERATION,
    READ_HIT_LATENCY,
    SETS_PER_BUFFER,
    LayerReport,
    ScaleSimArch,
    ScaleSimLayer,
    ScaleSimUnsupported,
    distinct_ifmap_words,
    prefetch_words,
    quirk_compute_util_fold_cycles,
    quirk_first_fill_words,
    quirk_os_ofmap_write_surplus,
    quirk_overrun_reads,
    quirk_partial_sum_dram_writes,
    quirk_reported_total_cycles,
    valid_ifmap_entries,
)
from accel_sim.compat.scalesim.buffers import (
    _read_buffer_calc,
    _read_buffer_fast,
    _read_buffer_user,
    _ReadResult,
    _row_loop,
    _Stream,
    _WriteBuffer,
    demand_streams,
    prefetch_stream,
)
from accel_sim.folds import Dataflow, FoldPlan, fold_plan, sram_traffic

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
                p = prefetch_words(plan, df, op)
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
