"""The committed SCALE-Sim golden cases (tests/golden/scalesim/cases.csv) and their layer and config objects."""
from __future__ import annotations

import csv
from pathlib import Path

from accel_sim.compat.scalesim import base as scb

GOLDEN = Path(__file__).parent / "golden" / "scalesim" / "cases.csv"
CASES = list(csv.DictReader(GOLDEN.open()))


def layer_of(case: dict) -> scb.ScaleSimLayer:
    """The case's layer as a ScaleSimLayer."""
    if case["kind"] == "gemm":
        return scb.ScaleSimLayer.gemm(case["layer_name"], int(case["gemm_m"]), int(case["gemm_n"]), int(case["gemm_k"]))
    return scb.ScaleSimLayer(case["layer_name"], *(int(case[c]) for c in (
        "ifmap_h", "ifmap_w", "filter_r", "filter_s", "channels", "num_filters", "stride")))


def arch_of(case: dict) -> scb.ScaleSimArch:
    """The case's config as a ScaleSimArch (CALC cases carry no Bandwidth: it is not read)."""
    return scb.ScaleSimArch(int(case["array_rows"]), int(case["array_cols"]), int(case["ifmap_sram_kib"]),
                           int(case["filter_sram_kib"]), int(case["ofmap_sram_kib"]), case["dataflow"],
                           case["interface_mode"], int(case["bandwidth"] or case["array_cols"]),
                           int(case["ifmap_bank_bw"]), int(case["filter_bank_bw"]))
