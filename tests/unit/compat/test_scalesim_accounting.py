"""SCALE-Sim compatibility: our reports equal SCALE-Sim 3.0.0's on the 186 committed reference cases.

Oracle: tests/golden/scalesim/cases.csv, SCALE-Sim 3.0.0's own outputs (origin in that folder's README).
Floats are compared as Python reprs (bit-exact), integers exactly.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from scalesim_cases import CASES, arch_of, layer_of

from accel_sim.cli import main
from accel_sim.compat.scalesim import base as scb
from accel_sim.compat.scalesim import accounting as sc
from accel_sim.compat.scalesim.files import config_text, read_report
from accel_sim.folds import fold_plan, sram_traffic

INT_COLUMNS = {"total_cycles_incl_prefetch", "total_cycles", "stall_cycles", "sram_ifmap_reads", "sram_filter_reads",
               "sram_ofmap_writes", "dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes"}


@pytest.fixture(scope="module")
def ours() -> dict[str, scb.LayerReport]:
    """Our report for every reference case."""
    return {c["case_id"]: sc.simulate_layer(layer_of(c), arch_of(c)) for c in CASES}


def golden(case: dict, column: str) -> object:
    """A reference value, typed."""
    return int(case[column]) if column in INT_COLUMNS else float(case[column])


def mismatches(ours: dict, columns: tuple[str, ...], cases: list[dict]) -> list[tuple]:
    """(case, column, ours, SCALE-Sim) for every differing value; floats must be repr-equal."""
    bad = []
    for case in cases:
        for col in columns:
            mine, ref = getattr(ours[case["case_id"]], col), golden(case, col)
            if type(mine) is not type(ref) or repr(mine) != repr(ref):
                bad.append((case["case_id"], col, mine, case[col]))
    return bad


NO_STALL = [c for c in CASES if c["stall_cycles"] == "0"]
STALL = [c for c in CASES if c["stall_cycles"] != "0"]


def test_reference_set_is_complete() -> None:
    """The golden file holds the 186 cases, 31 with stalls, as its README states."""
    assert len(CASES) == 186 and len(STALL) == 31


def test_compute_columns_exact_on_every_case(ours: dict) -> None:
    """Compute cycles (stalls excluded), mapping efficiency and compute utilization equal SCALE-Sim bit for bit."""
    bad = mismatches(ours, ("mapping_efficiency_pct", "compute_util_pct"), CASES)
    bad += [(c["case_id"], "compute cycles", ours[c["case_id"]].total_cycles - ours[c["case_id"]].stall_cycles,
             int(c["total_cycles"]) - int(c["stall_cycles"])) for c in CASES
            if ours[c["case_id"]].total_cycles - ours[c["case_id"]].stall_cycles
            != int(c["total_cycles"]) - int(c["stall_cycles"])]
    assert bad == []


def test_sram_traffic_exact_on_every_case(ours: dict) -> None:
    """SRAM reads and writes per operand, their start/stop cycles and average bandwidths equal SCALE-Sim."""
    cols = tuple(f for f in scb.REPORT_FIELDS if f.startswith(("sram_", "avg_")) and "dram" not in f)
    assert mismatches(ours, cols, CASES) == []


def test_overall_utilization_exact_on_every_case(ours: dict) -> None:
    """Overall Util % (MACs over total cycles including stalls) equals SCALE-Sim bit for bit."""
    assert mismatches(ours, ("overall_util_pct",), CASES) == []


def test_total_cycles_and_dram_exact_without_stalls(ours: dict) -> None:
    """Where SCALE-Sim reports no stalls: total cycles and DRAM reads/writes (with start/stop, bandwidth) are exact."""
    cols = ("total_cycles", "total_cycles_incl_prefetch", "stall_cycles") + tuple(f for f in scb.REPORT_FIELDS
                                                                                 if "dram" in f)
    assert len(NO_STALL) == 155
    assert mismatches(ours, cols, NO_STALL) == []


def test_total_cycles_within_five_percent_with_stalls(ours: dict) -> None:
    """Where SRAM is tight and SCALE-Sim stalls, total cycles are within 5% (the acceptance bound)."""
    worst = max(abs(ours[c["case_id"]].total_cycles / int(c["total_cycles"]) - 1) for c in STALL)
    assert worst <= 0.05


def test_every_column_exact_on_every_case(ours: dict) -> None:
    """Beyond the bound: all 30 report columns, stall cases (c112's 544,914 stalls) included, equal SCALE-Sim."""
    assert mismatches(ours, scb.REPORT_FIELDS, CASES) == []


def _fast_path_cases() -> list[dict]:
    """Cases where the closed forms apply (USER, no re-fetch, ofmap fits the drain half)."""
    out = []
    for c in CASES:
        layer, arch = layer_of(c), arch_of(c)
        m, n, k = layer.mnk
        plan = fold_plan(m, n, k, arch.rows, arch.cols, arch.dataflow)
        words = int(scb.quirk_partial_sum_dram_writes(plan, m, n, arch.dataflow))
        tot = int(c["ifmap_sram_kib"]) * 1024, int(c["filter_sram_kib"]) * 1024, int(c["ofmap_sram_kib"]) * 1024
        if (arch.interface == "USER" and not sc._needs_refetch(scb.valid_ifmap_entries(layer), tot[0])
                and not sc._needs_refetch(k * n, tot[1]) and words <= tot[2] // 2):
            out.append(c)
    return out


def test_closed_forms_cover_the_generous_cases() -> None:
    """The closed-form path applies to the 105 USER cases ACCOUNTING.md §4 lists (no re-fetch, E <= Pf)."""
    assert len(_fast_path_cases()) == 105


@pytest.mark.parametrize("case_id", ["c000", "c003", "c083", "c089", "c182"])
def test_closed_forms_equal_the_buffer_algorithm(case_id: str) -> None:
    """On fast-path cases (overrun convs c083/c089 included), the §6 row-by-row algorithm gives the closed forms' numbers."""
    case = next(c for c in _fast_path_cases() if c["case_id"] == case_id)
    layer, arch = layer_of(case), arch_of(case)
    fast = sc.simulate_layer(layer, arch)
    tot = {"ifmap": arch.ifmap_sram_kib * 1024, "filter": arch.filter_sram_kib * 1024,
           "ofmap": arch.ofmap_sram_kib * 1024}
    line = {"ifmap": arch.ifmap_bank_bandwidth, "filter": arch.filter_bank_bandwidth, "ofmap": arch.ofmap_bandwidth}
    m, n, k = layer.mnk
    plan = fold_plan(m, n, k, arch.rows, arch.cols, arch.dataflow)
    stalls, total, ss, dram = sc._simulate_streams(layer, arch, tot, line, int(plan.compute_cycles))
    assert (stalls, total) == (fast.stall_cycles, fast.total_cycles)
    for op, (start, stop) in ss.items():
        assert (start, stop) == (getattr(fast, f"sram_{op}_start_cycle"), getattr(fast, f"sram_{op}_stop_cycle"))
    for op, (start, stop, words) in dram.items():
        assert (start, stop, words) == (getattr(fast, f"dram_{op}_start_cycle"), getattr(fast, f"dram_{op}_stop_cycle"),
                                        getattr(fast, f"dram_{op}_{'writes' if op == 'ofmap' else 'reads'}"))


# ---------------------------------------------------------------------------------------------------
# compat - physical == the documented quirks (ACCOUNTING.md §8), on every case
# ---------------------------------------------------------------------------------------------------

def _physical(case: dict):
    layer, arch = layer_of(case), arch_of(case)
    m, n, k = layer.mnk
    plan = fold_plan(m, n, k, arch.rows, arch.cols, arch.dataflow)
    return layer, arch, m, n, k, plan, sram_traffic(plan, m, n, k, arch.dataflow)


def test_quirk_total_cycles_is_one_less_plus_stalls(ours: dict) -> None:
    """Quirk 1: reported total = physical compute cycles (F * L) - 1 + stalls, on every case."""
    for c in CASES:
        *_, plan, _ = _physical(c)
        rep = ours[c["case_id"]]
        assert rep.total_cycles - int(plan.compute_cycles) == -1 + rep.stall_cycles, c["case_id"]


def test_quirk_compute_util_uses_longer_ws_is_folds(ours: dict) -> None:
    """Quirk 2: os compute util = the physical utilization; ws/is = physical x L / (2R + 2C + T - 3) (rel 1e-12)."""
    for c in CASES:
        layer, arch, m, n, k, plan, _ = _physical(c)
        lu = scb.quirk_compute_util_fold_cycles(plan, arch.dataflow)
        expected = float(plan.utilization) * float(plan.cycles_per_fold) / float(lu) * 100
        assert ours[c["case_id"]].compute_util_pct == pytest.approx(expected, rel=1e-12), c["case_id"]
        assert (lu == plan.cycles_per_fold) == (arch.dataflow == "os")


def test_quirk_os_ofmap_writes_add_r_plus_c_per_fold(ours: dict) -> None:
    """Quirk 3: SRAM ofmap writes - physical writes = F (R + C) for os and 0 for ws/is (which write Fr M N partial sums)."""
    for c in CASES:
        layer, arch, m, n, k, plan, phys = _physical(c)
        surplus = ours[c["case_id"]].sram_ofmap_writes - int(phys.ofmap_writes)
        expected = int(plan.folds) * (arch.rows + arch.cols) if arch.dataflow == "os" else 0
        assert surplus == expected, c["case_id"]


def test_quirk_partial_sums_go_to_dram(ours: dict) -> None:
    """Quirk 4: with the ofmap fitting its drain half, DRAM ofmap writes - M N = (Fr - 1) M N for ws/is, 0 for os."""
    for c in _fast_path_cases():
        layer, arch, m, n, k, plan, _ = _physical(c)
        extra = ours[c["case_id"]].dram_ofmap_writes - m * n
        assert extra == (0 if arch.dataflow == "os" else (int(plan.row_folds) - 1) * m * n), c["case_id"]


def test_quirk_overrun_entries_count_as_ifmap_reads(ours: dict) -> None:
    """Quirk 5: SRAM ifmap reads - reads of real addresses = the window-overrun entries, nonzero exactly on overrun convs."""
    overrun_cases = 0
    for c in CASES:
        layer, arch, m, n, k, plan, phys = _physical(c)
        valid = scb.valid_ifmap_entries(layer)
        passes = 1 if arch.dataflow == "is" else int(plan.col_folds)
        extra = ours[c["case_id"]].sram_ifmap_reads - passes * valid
        assert extra == int(scb.quirk_overrun_reads(m, k, valid, plan, arch.dataflow)), c["case_id"]
        overrun = c["kind"] == "conv" and ((layer.ifmap_h - layer.filter_h) % layer.stride
                                           or (layer.ifmap_w - layer.filter_w) % layer.stride)
        assert (extra > 0) == bool(overrun), c["case_id"]
        overrun_cases += bool(overrun)
    assert overrun_cases == 21


def test_quirk_first_fill_reads_whole_padded_lines(ours: dict) -> None:
    """Quirk 6: without re-fetch, DRAM reads = whole lines of the padded prefetch matrix (>= the operand's words)."""
    for c in _fast_path_cases():
        layer, arch, m, n, k, plan, _ = _physical(c)
        rep = ours[c["case_id"]]
        for op, words, bw in (("ifmap", scb.valid_ifmap_entries(layer), arch.ifmap_bank_bandwidth),
                              ("filter", k * n, arch.filter_bank_bandwidth)):
            p = scb.prefetch_words(plan, arch.dataflow, op)
            size = getattr(arch, f"{op}_sram_kib") * 1024
            assert getattr(rep, f"dram_{op}_reads") == scb.quirk_first_fill_words(p, -(-size // 2), bw) >= words


def test_quirk_read_wait_counts_twice() -> None:
    """Quirk 7: a wait of p > 0 cycles adds 2p; an early arrival (p < 0) subtracts |p|; p = 0 adds nothing."""
    assert [scb.quirk_read_wait(p) for p in (3, 0, -2)] == [6, 0, -2]


def test_quirk_window_wraps_on_gemv_c112(ours: dict) -> None:
    """Quirk 8: on c112 (ws GEMV 1x128x256, 1 KiB SRAM) re-fetching wraps the ring: 5,405,400 filter words for 32,768."""
    rep = ours["c112"]
    assert rep.dram_filter_reads == 5_405_400 and rep.stall_cycles == 544_914


def test_quirk_ofmap_dram_writes_can_exceed_outputs(ours: dict) -> None:
    """Quirk 9: DRAM ofmap writes never fall short of the words produced and exceed them on 45 USER cases (ACCOUNTING §4)."""
    over_user = 0
    for c in CASES:
        layer, arch, m, n, k, plan, _ = _physical(c)
        produced = int(scb.quirk_partial_sum_dram_writes(plan, m, n, arch.dataflow))
        assert ours[c["case_id"]].dram_ofmap_writes >= produced
        over_user += arch.interface == "USER" and ours[c["case_id"]].dram_ofmap_writes > produced
    assert over_user == 45


# ---------------------------------------------------------------------------------------------------
# End to end through the CLI
# ---------------------------------------------------------------------------------------------------

HEADERS = {  # our column -> (report file, SCALE-Sim header)
    "total_cycles": ("COMPUTE_REPORT.csv", "Total Cycles"),
    "stall_cycles": ("COMPUTE_REPORT.csv", "Stall Cycles"),
    "overall_util_pct": ("COMPUTE_REPORT.csv", "Overall Util %"),
    "compute_util_pct": ("COMPUTE_REPORT.csv", "Compute Util %"),
    "avg_ofmap_dram_bw": ("BANDWIDTH_REPORT.csv", "Avg OFMAP DRAM BW"),
    "sram_filter_reads": ("DETAILED_ACCESS_REPORT.csv", "SRAM Filter Reads"),
    "dram_ifmap_reads": ("DETAILED_ACCESS_REPORT.csv", "DRAM IFMAP Reads"),
    "dram_ofmap_stop_cycle": ("DETAILED_ACCESS_REPORT.csv", "DRAM OFMAP Stop Cycle"),
}


@pytest.mark.parametrize("case_id", ["c003", "c108", "c112", "c140", "c170"])
def test_cli_reports_match_scalesim(case_id: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`accel-sim scalesim CFG TOPO` writes the three reports whose cells equal cases.csv (gemm, conv, stall, CALC)."""
    case = next(c for c in CASES if c["case_id"] == case_id)
    cfg = tmp_path / "case.cfg"
    cfg.write_text(config_text(arch_of(case)))
    topo = tmp_path / "topo.csv"
    gemm = case["kind"] == "gemm"
    if gemm:
        topo.write_text(f"Layer, M, N, K,\nL, {case['gemm_m']}, {case['gemm_n']}, {case['gemm_k']},\n")
    else:
        topo.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                        "Strides,\nL, " + ", ".join(case[c] for c in ("ifmap_h", "ifmap_w", "filter_r", "filter_s",
                                                                        "channels", "num_filters", "stride")) + ",\n")
    out = tmp_path / "out"
    assert main(["scalesim", str(cfg), str(topo), "-o", str(out)] + (["--gemm"] if gemm else [])) == 0
    assert "SCALE-Sim compatible run" in capsys.readouterr().out
    reports = {name: read_report(out / name)[0] for name in {f for f, _ in HEADERS.values()}}
    for col, (name, header) in HEADERS.items():
        assert reports[name][header] == case[col], (col, reports[name][header], case[col])
