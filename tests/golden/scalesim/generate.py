"""Generate the SCALE-Sim reference cases in this folder (cases.csv, timings.csv).

This script is NOT part of accel-sim and is never imported by it or by the tests.  It runs
only inside a throwaway virtual environment that holds the peer simulator SCALE-Sim v3
(PyPI package ``scalesim`` 3.0.0, which crashes with numpy 2, hence the pin)::

    python3 -m venv /tmp/scalesim-venv
    /tmp/scalesim-venv/bin/pip install 'numpy<2' scalesim==3.0.0
    /tmp/scalesim-venv/bin/python tests/golden/scalesim/generate.py --jobs 2

For every case it writes a SCALE-Sim config (.cfg, all five sections) and a one-layer
topology (.csv, conv or GEMM format, rows end with a comma) into a temporary directory,
runs SCALE-Sim through its Python API (``scalesim.scale_sim.scalesim``, traces off), parses
COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and DETAILED_ACCESS_REPORT.csv and writes one row
per case to ``cases.csv`` (inputs, then every report column as printed by SCALE-Sim).
Wall and CPU seconds per case go to ``timings.csv`` (not golden data).

Options: ``--jobs N`` parallel worker processes (default 2), ``--only ID[,ID...]`` run a
subset and print the rows instead of writing files, ``--list`` print the case ids.
"""
from __future__ import annotations

import argparse
import csv
import math
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ----------------------------------------------------------------------------------------
# Case definitions
# ----------------------------------------------------------------------------------------

# Layers.  conv: (H, W, R, S, C, N, stride); gemm: (M, N, K).
CONV = {
    "c3x3": (16, 16, 3, 3, 8, 16, 1),          # plain 3x3
    "c1x1": (14, 14, 1, 1, 32, 64, 1),         # pointwise
    "c1x1s2": (14, 14, 1, 1, 16, 24, 2),       # strided pointwise
    "c3x3s2": (15, 15, 3, 3, 16, 32, 2),       # strided, (H-R) % s == 0
    "c3x3s2p": (16, 16, 3, 3, 8, 20, 2),       # strided, (H-R) % s != 0 -> padded window
    "c5x5s2": (20, 20, 5, 5, 3, 24, 2),        # (20-5) % 2 != 0 -> padded window
    "c7x7s2": (32, 32, 7, 7, 3, 16, 2),        # first-layer-like
    "c11s4": (35, 35, 11, 11, 3, 8, 4),        # AlexNet-like stride 4
    "dw1": (28, 28, 3, 3, 1, 1, 1),            # depthwise-like, one channel, one filter
    "dw8": (20, 20, 3, 3, 1, 8, 1),            # C = 1, several filters
    "dw5s2": (23, 23, 5, 5, 1, 4, 2),          # C = 1, strided
    "crect": (12, 20, 3, 5, 6, 10, 1),         # non-square ifmap and filter
    "cdeep": (7, 7, 3, 3, 64, 48, 1),          # deep, small spatial
    "cwide": (9, 9, 3, 3, 4, 130, 1),          # many filters
    "ctiny": (4, 4, 3, 3, 2, 3, 1),            # tiny, 2x2 ofmap
    "r_conv": (30, 30, 3, 3, 32, 64, 1),       # ResNet-like 3x3, 28x28 ofmap
}
GEMM = {
    "g16": (16, 16, 16),
    "g8": (8, 8, 8),
    "g_odd": (37, 23, 29),
    "g64": (64, 64, 64),
    "g_rect": (100, 50, 70),
    "g_tall": (200, 12, 40),
    "g_wide": (12, 200, 40),
    "g_deepk": (20, 24, 300),
    "g_n1": (128, 1, 64),
    "g_k1": (50, 40, 1),
    "gemv": (1, 128, 256),                     # decode GEMV (M = 1)
    "gemv2": (1, 300, 64),
    "gemv3": (1, 64, 100),
    "g_big": (256, 256, 32),
    "g_mid": (96, 130, 48),
    "bert_qkv": (128, 768, 256),               # transformer projection (short sequence)
}

ARR = {  # rows x cols
    "4x4": (4, 4), "8x8": (8, 8), "16x16": (16, 16), "32x32": (32, 32),
    "8x32": (8, 32), "32x8": (32, 8), "16x64": (16, 64), "64x16": (64, 16),
    "128x64": (128, 64), "64x128": (64, 128), "128x128": (128, 128),
    "256x256": (256, 256), "64x64": (64, 64), "5x7": (5, 7),
}

# Memory settings: (ifmap KiB, filter KiB, ofmap KiB, mode, Bandwidth, ifmap bank bw, filter bank bw)
MEM = {
    "gen": (4096, 4096, 4096, "USER", 64, 64, 64),     # generous: nothing ever re-fetched
    "gen10": (4096, 4096, 4096, "USER", 10, 10, 10),   # generous, narrow DRAM lines
    "gen_mixed": (4096, 4096, 4096, "USER", 16, 8, 32),
    "mid": (64, 64, 32, "USER", 32, 32, 32),
    "tight": (2, 2, 2, "USER", 16, 16, 16),            # tight: refetch, stalls
    "tight10": (1, 1, 1, "USER", 10, 10, 10),
    "tight_bw4": (4, 4, 2, "USER", 4, 4, 4),            # tight and slow DRAM
    "tight_of": (4096, 4096, 1, "USER", 4, 64, 64),     # only the output buffer is tight
    "calc": (4096, 4096, 4096, "CALC", None, 10, 10),  # estimate-bandwidth mode
    "calc_tight": (2, 2, 2, "CALC", None, 10, 10),
}

DATAFLOWS = ("os", "ws", "is")


def _case(layer: str, arr: str, mem: str, df: str) -> dict:
    return {"layer": layer, "arr": arr, "mem": mem, "df": df}


def build_cases() -> list[dict]:
    """The deterministic case list (order = case id)."""
    plan: list[tuple[str, str, str]] = []
    # A. generous SRAM, USER mode: the accounting without stalls
    for layer, arr in [
        ("g16", "4x4"), ("g_odd", "8x8"), ("g64", "16x16"), ("g_rect", "32x32"),
        ("g_tall", "8x32"), ("g_wide", "32x8"), ("g_deepk", "16x64"), ("g_n1", "64x16"),
        ("g_k1", "5x7"), ("gemv", "32x32"), ("gemv2", "128x64"), ("gemv3", "8x8"),
        ("g_big", "256x256"), ("g_mid", "128x128"), ("g8", "64x128"),
        ("c3x3", "8x8"), ("c1x1", "16x16"), ("c3x3s2", "32x8"), ("c3x3s2p", "8x32"),
        ("c5x5s2", "16x16"), ("dw1", "4x4"), ("dw8", "32x32"), ("crect", "5x7"),
        ("cdeep", "128x64"), ("cwide", "64x128"), ("ctiny", "4x4"),
    ]:
        for df in DATAFLOWS:
            plan.append((layer, arr, "gen", df))
    # B. generous SRAM with other line widths
    for layer, arr, mem in [
        ("g_odd", "16x16", "gen10"), ("c1x1s2", "8x8", "gen10"), ("dw5s2", "16x16", "gen10"),
        ("c7x7s2", "32x32", "gen_mixed"), ("g_rect", "8x32", "gen_mixed"),
        ("c11s4", "16x64", "gen10"),
    ]:
        for df in DATAFLOWS:
            plan.append((layer, arr, mem, df))
    # C. tight SRAM, USER mode: stalls
    for layer, arr, mem in [
        ("g64", "8x8", "tight"), ("g_rect", "16x16", "tight"), ("c3x3", "8x8", "tight10"),
        ("c1x1", "32x32", "tight"), ("c3x3s2p", "16x16", "tight_bw4"),
        ("gemv", "16x16", "tight10"), ("g_odd", "4x4", "tight_bw4"),
        ("cdeep", "32x8", "mid"), ("g_mid", "32x32", "mid"), ("dw8", "8x32", "tight"),
        ("g_tall", "32x32", "tight_of"), ("c5x5s2", "8x8", "tight_of"),
        ("g_big", "64x64", "mid"),
    ]:
        for df in DATAFLOWS:
            plan.append((layer, arr, mem, df))
    # D. CALC (estimate bandwidth) mode
    for layer, arr, mem in [
        ("g_odd", "8x8", "calc"), ("c3x3", "16x16", "calc"), ("gemv", "32x32", "calc"),
        ("c3x3s2p", "8x32", "calc"), ("g_rect", "32x8", "calc"), ("dw8", "16x16", "calc"),
        ("g64", "8x8", "calc_tight"), ("c1x1", "16x16", "calc_tight"),
        ("g_mid", "128x64", "calc"),
    ]:
        for df in DATAFLOWS:
            plan.append((layer, arr, mem, df))
    # E. DRAM bandwidth sweep on one layer (tight SRAM so that bandwidth matters)
    for bw in (1, 2, 8, 32, 128):
        for df in DATAFLOWS:
            plan.append(("g_rect", "16x16", f"sweep{bw}", df))
    # F. moderate, realistic layers (about a second of SCALE-Sim CPU each)
    for layer, arr, mem in [
        ("r_conv", "32x32", "gen"), ("bert_qkv", "128x128", "gen"), ("r_conv", "16x16", "mid"),
    ]:
        for df in DATAFLOWS:
            plan.append((layer, arr, mem, df))
    cases = []
    for i, (layer, arr, mem, df) in enumerate(plan):
        cases.append(_case(layer, arr, mem, df) | {"case_id": f"c{i:03d}"})
    return cases


def mem_setting(name: str):
    if name.startswith("sweep"):
        bw = int(name[5:])
        return (8, 8, 4, "USER", bw, bw, bw)
    return MEM[name]


def case_inputs(case: dict) -> dict:
    """Flatten a case into its input columns."""
    layer = case["layer"]
    rows, cols = ARR[case["arr"]]
    if_kb, fl_kb, of_kb, mode, bw, ibw, fbw = mem_setting(case["mem"])
    out = {
        "case_id": case["case_id"],
        "layer_name": layer,
        "kind": "gemm" if layer in GEMM else "conv",
        "ifmap_h": "", "ifmap_w": "", "filter_r": "", "filter_s": "", "channels": "",
        "num_filters": "", "stride": "", "gemm_m": "", "gemm_n": "", "gemm_k": "",
    }
    if layer in GEMM:
        m, n, k = GEMM[layer]
        out.update(gemm_m=m, gemm_n=n, gemm_k=k)
        im_m, im_n, im_k = m, n, k
    else:
        h, w, r, s, c, nf, st = CONV[layer]
        out.update(ifmap_h=h, ifmap_w=w, filter_r=r, filter_s=s, channels=c,
                   num_filters=nf, stride=st)
        oh = math.ceil((h - r + st) / st)
        ow = math.ceil((w - s + st) / st)
        im_m, im_n, im_k = oh * ow, nf, r * s * c
    out.update(
        im2col_m=im_m, im2col_n=im_n, im2col_k=im_k,
        array_rows=rows, array_cols=cols, dataflow=case["df"],
        ifmap_sram_kib=if_kb, filter_sram_kib=fl_kb, ofmap_sram_kib=of_kb,
        interface_mode=mode,
        bandwidth="" if bw is None else bw,
        ifmap_bank_bw=ibw, filter_bank_bw=fbw,
    )
    return out


INPUT_COLUMNS = list(case_inputs(build_cases()[0]).keys())

# Report columns: (file, SCALE-Sim header, our column name)
REPORT_COLUMNS = [
    ("COMPUTE_REPORT.csv", "Total Cycles (incl. prefetch)", "total_cycles_incl_prefetch"),
    ("COMPUTE_REPORT.csv", "Total Cycles", "total_cycles"),
    ("COMPUTE_REPORT.csv", "Stall Cycles", "stall_cycles"),
    ("COMPUTE_REPORT.csv", "Overall Util %", "overall_util_pct"),
    ("COMPUTE_REPORT.csv", "Mapping Efficiency %", "mapping_efficiency_pct"),
    ("COMPUTE_REPORT.csv", "Compute Util %", "compute_util_pct"),
    ("BANDWIDTH_REPORT.csv", "Avg IFMAP SRAM BW", "avg_ifmap_sram_bw"),
    ("BANDWIDTH_REPORT.csv", "Avg FILTER SRAM BW", "avg_filter_sram_bw"),
    ("BANDWIDTH_REPORT.csv", "Avg OFMAP SRAM BW", "avg_ofmap_sram_bw"),
    ("BANDWIDTH_REPORT.csv", "Avg IFMAP DRAM BW", "avg_ifmap_dram_bw"),
    ("BANDWIDTH_REPORT.csv", "Avg FILTER DRAM BW", "avg_filter_dram_bw"),
    ("BANDWIDTH_REPORT.csv", "Avg OFMAP DRAM BW", "avg_ofmap_dram_bw"),
]
for _op, _sram in (("IFMAP", "Reads"), ("Filter", "Reads"), ("OFMAP", "Writes")):
    for _what in ("Start Cycle", "Stop Cycle", _sram):
        REPORT_COLUMNS.append(("DETAILED_ACCESS_REPORT.csv", f"SRAM {_op} {_what}",
                               f"sram_{_op.lower()}_{_what.lower().replace(' ', '_')}"))
for _op, _dram in (("IFMAP", "Reads"), ("Filter", "Reads"), ("OFMAP", "Writes")):
    for _what in ("Start Cycle", "Stop Cycle", _dram):
        REPORT_COLUMNS.append(("DETAILED_ACCESS_REPORT.csv", f"DRAM {_op} {_what}",
                               f"dram_{_op.lower()}_{_what.lower().replace(' ', '_')}"))
OUTPUT_COLUMNS = [c[2] for c in REPORT_COLUMNS]


# ----------------------------------------------------------------------------------------
# Writing SCALE-Sim inputs and reading its reports
# ----------------------------------------------------------------------------------------

def write_inputs(inp: dict, workdir: Path) -> tuple[Path, Path, Path]:
    cfg = workdir / "case.cfg"
    bw = inp["bandwidth"] if inp["bandwidth"] != "" else 10  # not read in CALC mode
    cfg.write_text(
        "[general]\n"
        "run_name = case\n\n"
        "[architecture_presets]\n"
        f"ArrayHeight = {inp['array_rows']}\n"
        f"ArrayWidth = {inp['array_cols']}\n"
        f"IfmapSramSzkB = {inp['ifmap_sram_kib']}\n"
        f"FilterSramSzkB = {inp['filter_sram_kib']}\n"
        f"OfmapSramSzkB = {inp['ofmap_sram_kib']}\n"
        "IfmapOffset = 0\n"
        "FilterOffset = 10000000\n"
        "OfmapOffset = 20000000\n"
        f"Bandwidth = {bw}\n"
        f"Dataflow = {inp['dataflow']}\n"
        "ReadRequestBuffer = 32\n"
        "WriteRequestBuffer = 32\n\n"
        "[layout]\n"
        "IfmapCustomLayout = False\n"
        f"IfmapSRAMBankBandwidth = {inp['ifmap_bank_bw']}\n"
        "IfmapSRAMBankNum = 1\n"
        "IfmapSRAMBankPort = 2\n"
        "FilterCustomLayout = False\n"
        f"FilterSRAMBankBandwidth = {inp['filter_bank_bw']}\n"
        "FilterSRAMBankNum = 1\n"
        "FilterSRAMBankPort = 2\n\n"
        "[sparsity]\n"
        "SparsitySupport = false\n"
        "SparseRep = ellpack_block\n"
        "OptimizedMapping = false\n"
        "BlockSize = 8\n"
        "RandomNumberGeneratorSeed = 40\n\n"
        "[run_presets]\n"
        f"InterfaceBandwidth = {inp['interface_mode']}\n"
        "UseRamulatorTrace = False\n"
    )
    topo = workdir / "topo.csv"
    # Layer names must not contain "DP" (SCALE-Sim splits such layers per channel).
    name = "L_" + inp["layer_name"].replace("DP", "dp")
    if inp["kind"] == "gemm":
        topo.write_text("Layer, M, N, K,\n"
                        f"{name}, {inp['gemm_m']}, {inp['gemm_n']}, {inp['gemm_k']},\n")
    else:
        topo.write_text(
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
            "Num Filter, Strides,\n"
            f"{name}, {inp['ifmap_h']}, {inp['ifmap_w']}, {inp['filter_r']}, {inp['filter_s']}, "
            f"{inp['channels']}, {inp['num_filters']}, {inp['stride']},\n")
    layout = workdir / "layout.csv"   # required file; unused without a custom layout
    layout.write_text("Layer name,\n")
    return cfg, topo, layout


def read_report(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    assert len(lines) == 2, f"{path}: expected a header and one layer row, got {len(lines)} lines"
    header = [h.strip() for h in lines[0].split(",")]
    values = [v.strip() for v in lines[1].split(",")]
    return dict(zip(header, values))


def run_case(case: dict) -> tuple[dict, dict]:
    """Run one case in this process; return (row, timing)."""
    import numpy  # noqa: F401  (imported before timing starts)
    from scalesim.scale_sim import scalesim

    inp = case_inputs(case)
    with tempfile.TemporaryDirectory(prefix="scalesim_case_") as tmp:
        work = Path(tmp)
        cfg, topo, layout = write_inputs(inp, work)
        t0, c0 = time.perf_counter(), time.process_time()
        sim = scalesim(save_disk_space=True, verbose=False, config=str(cfg), topology=str(topo),
                       layout=str(layout), input_type_gemm=(inp["kind"] == "gemm"))
        sim.run_scale(top_path=str(work / "out"))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        reports = {}
        for fname in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"):
            reports[fname] = read_report(work / "out" / "case" / fname)
    row = dict(inp)
    for fname, header, col in REPORT_COLUMNS:
        row[col] = reports[fname][header]
    timing = {"case_id": inp["case_id"], "wall_s": f"{wall:.3f}", "cpu_s": f"{cpu:.3f}"}
    return row, timing


def _worker(case: dict):
    try:
        return run_case(case)
    except Exception as exc:  # report and keep going; a failed case is not written
        return None, {"case_id": case["case_id"], "error": repr(exc)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)

    cases = build_cases()
    if args.list:
        for c in cases:
            print(c["case_id"], c["layer"], c["arr"], c["mem"], c["df"])
        return 0
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c["case_id"] in wanted]

    import numpy
    import scalesim  # noqa: F401
    from importlib.metadata import version
    print(f"SCALE-Sim {version('scalesim')}, numpy {numpy.__version__}, "
          f"Python {platform.python_version()}, {len(cases)} cases, {args.jobs} jobs",
          file=sys.stderr)

    results = {}
    errors = []
    t_start = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(args.jobs, maxtasksperchild=1) as pool:
        for row, timing in pool.imap_unordered(_worker, cases):
            if row is None:
                errors.append(timing)
                print(f"  FAILED {timing['case_id']}: {timing['error']}", file=sys.stderr)
                continue
            results[row["case_id"]] = (row, timing)
            print(f"  {row['case_id']} {row['layer_name']:>8} {row['array_rows']}x"
                  f"{row['array_cols']} {row['dataflow']} {row['interface_mode']} "
                  f"cycles={row['total_cycles']} stalls={row['stall_cycles']} "
                  f"cpu={timing['cpu_s']}s [{len(results)}/{len(cases)}, "
                  f"{time.perf_counter() - t_start:.0f}s]", file=sys.stderr)

    ordered = [results[c["case_id"]] for c in cases if c["case_id"] in results]
    if args.only:
        for row, timing in ordered:
            print(row, timing)
        return 1 if errors else 0
    with open(HERE / "cases.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=INPUT_COLUMNS + OUTPUT_COLUMNS, lineterminator="\n")
        w.writeheader()
        for row, _ in ordered:
            w.writerow(row)
    with open(HERE / "timings.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case_id", "wall_s", "cpu_s"], lineterminator="\n")
        w.writeheader()
        for _, timing in ordered:
            w.writerow(timing)
    print(f"wrote {len(ordered)} cases, {len(errors)} failed, "
          f"{time.perf_counter() - t_start:.0f}s", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
