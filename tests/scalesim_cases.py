"""The committed SCALE-Sim golden cases (tests/golden/scalesim/cases.csv): their SCALE-Sim layer and config objects,
and the accel-sim Arch and workloads that express the same case for `accel-sim run`."""
from __future__ import annotations

import csv
from pathlib import Path

from builders import gemm

from accel_sim.compat.scalesim import base as scb
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.yaml import parse_yaml
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Workload

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


# ---------------------------------------------------------------------------------------------------
# The same cases as accel-sim inputs: the Arch and workload `accel-sim run` would be given
# ---------------------------------------------------------------------------------------------------

def run_arch_of(case: dict) -> Arch:
    """The case's config as an accel-sim Arch: one systolic engine as SCALE-Sim's array, its SRAMs and DRAM.

    SCALE-Sim has one SRAM per operand; accel-sim's levels hold tensor classes, so the ifmap and ofmap SRAMs
    form one activation level (their sizes added) and the filter SRAM a weight level. Words are 1 byte
    (SCALE-Sim's unit). At 1 GHz, B words/cycle is B GB/s: DRAM carries SCALE-Sim's three DRAM interfaces at
    once (ifmap and filter bank bandwidths plus the ofmap `Bandwidth`); each SRAM serves the array edges it
    feeds every cycle (activations: a row edge in, a column edge out; weights: the longer edge).
    `stationary_buffering: single` is SCALE-Sim's fold timing; `mapper: dataflow` keeps SCALE-Sim's fixed
    fold order (the default local search may legitimately tile differently: SCALE-Sim has no mapper).
    `accumulator_bits: 8`: SCALE-Sim keeps the ofmap, partial sums included, at its word size (its SRAM and DRAM
    counts are in words), so its semantics need open partial sums at the word width, not the engine's 32-bit
    default.
    """
    rows, cols = int(case["array_rows"]), int(case["array_cols"])
    dram_words = int(case["ifmap_bank_bw"]) + int(case["filter_bank_bw"]) + int(case["bandwidth"] or cols)
    return Arch.model_validate({
        "name": f"SCALE-Sim case {case['case_id']}", "clock": "1 GHz", "technology_nm": 28,
        "memory": [
            {"name": "dram", "technology": "DRAM", "bandwidth": f"{dram_words} GB/s"},
            {"name": "act_sram", "technology": "SRAM", "holds": ["activations"], "bandwidth": f"{rows + cols} GB/s",
             "capacity": f"{int(case['ifmap_sram_kib']) + int(case['ofmap_sram_kib'])} KiB"},
            {"name": "filter_sram", "technology": "SRAM", "holds": ["weights"], "bandwidth": f"{max(rows, cols)} GB/s",
             "capacity": f"{int(case['filter_sram_kib'])} KiB"},
        ],
        "engines": [{"name": "array", "kind": "systolic", "rows": rows, "cols": cols, "dataflow": case["dataflow"],
                     "stationary_buffering": "single", "mapper": {"method": "dataflow"}, "accumulator_bits": 8}],
    })


def im2col_workload_of(case: dict) -> Workload:
    """The GEMM SCALE-Sim runs for the case (a conv's im2col view, a GEMM as given): Z = A x W, 8-bit words."""
    return gemm(int(case["im2col_m"]), int(case["im2col_n"]), int(case["im2col_k"]), bits=8)


def conv_workload_of(case: dict) -> Workload:
    """A conv case as a convolution einsum (no padding; output size as SCALE-Sim's, windows may overrun the edge)."""
    layer = layer_of(case)
    stride = "" if layer.stride == 1 else f"{layer.stride}*"
    text = (f"name: {case['case_id']}_conv\n"
            f"ranks: {{p: {layer.ofmap_h}, q: {layer.ofmap_w}, k: {layer.num_filters}, c: {layer.channels}, "
            f"r: {layer.filter_h}, s: {layer.filter_w}}}\n"
            "default_bits: 8\ntensors:\n  W: {kind: weight}\neinsums:\n"
            f"  - O[p,q,k] = I[{stride}p + r,{stride}q + s,c] * W[k,c,r,s]\n")
    return parse_cascade(parse_yaml(text, f"golden case {case['case_id']}"))
