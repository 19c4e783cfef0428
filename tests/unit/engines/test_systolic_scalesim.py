"""The systolic engine that `accel-sim run` uses, through `accel_sim.evaluate`, against SCALE-Sim 3.0.0's goldens.

Oracle: tests/golden/scalesim/cases.csv, SCALE-Sim 3.0.0's own reports for 186 cases (origin in that folder's
README); nothing here comes from accel-sim's SCALE-Sim emulator (accel_sim/compat/scalesim/). Each case runs as
`run_arch_of` (tests/scalesim_cases.py) builds it: one systolic engine with the case's rows, columns and
dataflow, `stationary_buffering: single` (SCALE-Sim's fold timing), `mapper: dataflow` (SCALE-Sim's fixed fold
order; SCALE-Sim has no mapper, and the default local search may legitimately pick another tiling), and memory
levels from the config's SRAM sizes and bandwidths.

Where the semantics coincide, and so what is asserted:
- compute cycles: the engine's compute + fill/drain cycles equal SCALE-Sim's `Total Cycles` less its
  `Stall Cycles`, plus one (quirk 1 of tests/golden/scalesim/ACCOUNTING.md §8: SCALE-Sim reports the index of
  the last simulated cycle, one less than the cycles simulated);
- SRAM accesses per operand: reads of A (the ifmap's im2col matrix) from the activation SRAM equal
  `SRAM IFMAP Reads`, reads of W from the weight SRAM equal `SRAM Filter Reads`, and writes of Z (first
  writes plus partial-sum updates) to the activation SRAM equal `SRAM OFMAP Writes`, less the R + C words
  per fold SCALE-Sim adds on output-stationary arrays, writes no array makes (quirk 3, ACCOUNTING.md §8).
Not asserted, because the two models mean different things by them:
- stall cycles and total cycles: SCALE-Sim's stalls come from its scratchpad algorithm (double-buffered
  operand SRAMs refilled in groups of 1/100 of their size, ACCOUNTING.md §4-§7); the engine's from a
  bandwidth bound per level plus the prologue that loads the first tiles, which SCALE-Sim reports apart as
  `Total Cycles (incl. prefetch)`;
- DRAM reads and writes and their start/stop cycles: SCALE-Sim reads whole lines of the fold-padded operand
  (quirk 6), sends every K fold's partial sums to DRAM (quirk 4), re-fetches through a window that wraps
  (quirk 8) and drains in chunks (quirk 9); the engine counts the traffic of its residency choice;
- SRAM start/stop cycles, bandwidths and utilizations, which the engine does not report per operand.
So 4 of SCALE-Sim's 30 columns are compared: `Total Cycles` - `Stall Cycles` on all 186 cases, the three
SRAM access counts on all 186 (the GEMV cases among them: a time extent of 1 still streams every fold).
"""
from __future__ import annotations

import pytest
from scalesim_cases import CASES, conv_workload_of, im2col_workload_of, run_arch_of

import accel_sim
from accel_sim.spec.cost import Cost


def folds(case: dict) -> int:
    """Array folds as SCALE-Sim runs them: the im2col extents on rows and columns, each cut into array-sized folds."""
    m, n, k = (int(case[f"im2col_{r}"]) for r in "mnk")
    on_rows, on_cols = {"os": (m, n), "ws": (k, n), "is": (k, m)}[case["dataflow"]]
    return -(-on_rows // int(case["array_rows"])) * -(-on_cols // int(case["array_cols"]))


def compute_cycles(cost: Cost) -> float:
    """Cycles with operands always on time: every fold's streamed rows plus its fill and drain."""
    return cost.compute_cycles + cost.fill_drain_cycles


@pytest.fixture(scope="module")
def gemm_costs() -> dict[str, Cost]:
    """`accel_sim.evaluate` on every case's im2col GEMM: the one einsum's cost."""
    return {c["case_id"]: accel_sim.evaluate(run_arch_of(c), im2col_workload_of(c)).einsums[0].cost for c in CASES}


def test_compute_cycles_equal_scalesim_on_every_case(gemm_costs: dict[str, Cost]) -> None:
    """Compute + fill/drain cycles = SCALE-Sim's Total Cycles - Stall Cycles + 1 (quirk 1), all 186 cases."""
    cycles = {c["case_id"]: compute_cycles(gemm_costs[c["case_id"]]) for c in CASES}
    bad = [(c["case_id"], cycles[c["case_id"]], c["total_cycles"], c["stall_cycles"]) for c in CASES
           if cycles[c["case_id"]] != int(c["total_cycles"]) - int(c["stall_cycles"]) + 1]
    assert len(CASES) == 186 and bad == []


def test_conv_einsum_compute_cycles_equal_scalesim() -> None:
    """A conv case written as a convolution einsum (ranks p, q, k, c, r, s, not its im2col GEMM) folds as SCALE-Sim's
    flattened im2col view: compute cycles as above on all 81 conv cases.

    Its SRAM accesses are not compared: the loop-nest analysis counts the passes of per-rank tiles (c045: 14 x 14
    pixels on 8 rows as 28 tiles where SCALE-Sim folds the flattened 196 into 25) and reads a stationary ifmap
    tile's distinct words once, where SCALE-Sim reads every im2col entry.
    """
    convs = [c for c in CASES if c["kind"] == "conv"]
    cycles = {c["case_id"]: compute_cycles(accel_sim.evaluate(run_arch_of(c), conv_workload_of(c)).einsums[0].cost)
              for c in convs}
    bad = [(c["case_id"], cycles[c["case_id"]], c["total_cycles"]) for c in convs
           if cycles[c["case_id"]] != int(c["total_cycles"]) - int(c["stall_cycles"]) + 1]
    assert len(convs) == 81 and bad == []


@pytest.mark.parametrize("case", [pytest.param(c, id=c["case_id"]) for c in CASES])
def test_sram_accesses_equal_scalesim(case: dict, gemm_costs: dict[str, Cost]) -> None:
    """SRAM ifmap reads, filter reads and ofmap writes (less quirk 3's F(R + C) on os) equal SCALE-Sim's."""
    accesses = gemm_costs[case["case_id"]].accesses
    surplus = folds(case) * (int(case["array_rows"]) + int(case["array_cols"])) if case["dataflow"] == "os" else 0
    ours = (accesses.get(("act_sram", "A", "read"), 0.0), accesses.get(("filter_sram", "W", "read"), 0.0),
            accesses.get(("act_sram", "Z", "write"), 0.0) + accesses.get(("act_sram", "Z", "update"), 0.0))
    scalesim = (int(case["sram_ifmap_reads"]), int(case["sram_filter_reads"]), int(case["sram_ofmap_writes"]) - surplus)
    assert ours == scalesim

