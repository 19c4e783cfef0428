"""Systolic fold plan and physical SRAM traffic, hand-checked on small GEMMs, plus batch and range properties."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim import evaluate, load_arch
from accel_sim.engines.systolic import SystolicEngine
from accel_sim.errors import ConfigError
from accel_sim.folds import DATAFLOWS, fold_count, fold_cycles, fold_plan, hidden_fold_cycles, sram_traffic
from accel_sim.io.arch import arch_from_doc
from accel_sim.io.yaml import parse_yaml
from tests.builders import gemm

ROOT = Path(__file__).resolve().parents[3]

# A 5 x 3 x 4 GEMM (M x N x K) on a 2 x 2 array is small enough to fold by hand.
M, N, K, ROWS, COLS = 5, 3, 4, 2, 2


def test_os_fold_plan_by_hand() -> None:
    """os: M=5 on rows -> 3 folds, N=3 on cols -> 2 folds; each fold T + R + C - 2 = 4 + 2 = 6 cycles, 36 in all."""
    plan = fold_plan(M, N, K, ROWS, COLS, "os")
    assert (int(plan.row_folds), int(plan.col_folds), int(plan.cycles_per_fold)) == (3, 2, 6)
    assert int(plan.compute_cycles) == 36 and int(plan.fill_drain_cycles) == 36 - 6 * 4


def test_ws_fold_plan_by_hand() -> None:
    """ws: K=4 on rows -> 2 folds, N=3 on cols -> 2 folds; each fold 2R + C + T - 2 = 4 + 2 + 5 - 2 = 9 cycles."""
    plan = fold_plan(M, N, K, ROWS, COLS, "ws")
    assert (int(plan.row_folds), int(plan.col_folds), int(plan.cycles_per_fold)) == (2, 2, 9)
    assert int(plan.compute_cycles) == 36


def test_double_buffered_ws_hides_each_later_load_and_skew() -> None:
    """ws, T = M = 256 rows, K = N = 256 on 128 x 128: 2 x 2 = 4 folds. Single: 4 x (2R + C + T - 2) =
    4 x 638 = 2552. Double: the first fold 638, then each of 3 more max(T, R) = 256: 638 + 768 = 1406."""
    single = fold_plan(256, 256, 256, 128, 128, "ws")
    double = fold_plan(256, 256, 256, 128, 128, "ws", "double")
    assert int(single.compute_cycles) == 2552 and int(double.compute_cycles) == 1406
    assert int(double.fill_drain_cycles) == 1406 - 4 * 256


def test_double_buffered_load_is_exposed_when_t_is_below_r() -> None:
    """is, T = N = 32 < R = 128: K = 256 on rows, M = 128 on cols: 2 folds. Double: 2R + C + T - 2 = 414 for
    the first, then max(T, R) = 128 (the next tile's R-cycle shift-in outlasts T): 542 (single: 828)."""
    plan = fold_plan(128, 32, 256, 128, 128, "is", "double")
    assert int(plan.folds) == 2 and int(plan.compute_cycles) == 542
    assert int(fold_plan(128, 32, 256, 128, 128, "is").compute_cycles) == 828


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_double_buffering_changes_nothing_for_one_fold(dataflow) -> None:
    """A single fold has no next tile to hide (module docstring): double equals single."""
    one = fold_plan(100, 100, 100, 128, 128, dataflow, "double")
    assert int(one.compute_cycles) == int(fold_plan(100, 100, 100, 128, 128, dataflow).compute_cycles)


def test_double_buffered_os_overlaps_each_drain_with_the_next_fold() -> None:
    """os, M=5, N=3, K=4 on 2 x 2: 6 folds of T + R + C - 2 = 6 (single: 36). Double (a second accumulator per
    PE): the first fold 6, then each later fold waits max(T, R) = max(4, 2) = 4: 6 + 5 x 4 = 26 (hand-derived
    in the module docstring)."""
    many_os = fold_plan(M, N, K, ROWS, COLS, "os", "double")
    assert int(many_os.compute_cycles) == 26
    assert int(many_os.fill_drain_cycles) == 26 - 6 * 4


def test_double_buffered_os_drain_is_exposed_when_t_is_below_r() -> None:
    """os, T = K = 64 < R = 256 (FuseMax's QK: E = 64 on a 256 x 256 array), M = N = 1024: 16 folds. Double:
    64 + 510 = 574 for the first, then max(T, R) = 256 each (R outputs per column drain through one port):
    574 + 15 x 256 = 4414 (single: 16 x 574 = 9184)."""
    plan = fold_plan(1024, 1024, 64, 256, 256, "os", "double")
    assert int(plan.folds) == 16 and int(plan.compute_cycles) == 4414
    assert int(fold_plan(1024, 1024, 64, 256, 256, "os").compute_cycles) == 9184


def test_systolic_cost_uses_the_engine_buffering() -> None:
    """The cost model (the mapper's scorer, the co-simulation) takes the engine's option: a 256^3 int8 GEMM on a
    128 x 128 ws array costs fill/drain 4 x 382 = 1528 cycles single and 382 + 3 x (256 - 256) = 382 double."""
    from accel_sim import load_arch
    from accel_sim.engines.systolic import SystolicEngine
    from tests.builders import gemm

    engines = [SystolicEngine(kind="systolic", name="sa", rows=128, cols=128, dataflow="ws",
                              stationary_buffering=b) for b in ("single", "double")]
    workload = gemm(256, 256, 256)
    arch = load_arch(ROOT / "arch_configs" / "tpu_v1.yaml")
    costs = [e.cost(workload.einsums[0], workload, arch) for e in engines]
    assert [c.fill_drain_cycles for c in costs] == [1528.0, 382.0]
    assert costs[0].compute_cycles == costs[1].compute_cycles == 4 * 256


def test_mapping_efficiency_and_utilization_by_hand() -> None:
    """os: 15 used PE-slots over 6 folds x 4 PEs = 0.625; 60 MACs / (4 PEs x 36 cycles) = 5/12."""
    plan = fold_plan(M, N, K, ROWS, COLS, "os")
    assert float(plan.mapping_efficiency) == pytest.approx(0.625)
    assert float(plan.utilization) == pytest.approx(60 / 144)


def test_os_traffic_by_hand() -> None:
    """os: ifmap re-streamed per column fold (2 x 5 x 4 = 40), filter per row fold (3 x 4 x 3 = 36), 15 outputs once."""
    t = sram_traffic(fold_plan(M, N, K, ROWS, COLS, "os"), M, N, K, "os")
    assert (int(t.ifmap_reads), int(t.filter_reads), int(t.ofmap_writes), int(t.ofmap_reads)) == (40, 36, 15, 0)


def test_ws_traffic_by_hand() -> None:
    """ws: ifmap per N fold (2 x 20 = 40), filter once (12), partial sums written per K fold (2 x 15) and read back once (15)."""
    t = sram_traffic(fold_plan(M, N, K, ROWS, COLS, "ws"), M, N, K, "ws")
    assert (int(t.ifmap_reads), int(t.filter_reads), int(t.ofmap_writes), int(t.ofmap_reads)) == (40, 12, 30, 15)


def test_is_traffic_by_hand() -> None:
    """is: K=4 -> 2 row folds, M=5 -> 3 column folds; ifmap once (20), filter per M fold (3 x 12 = 36), 30 writes, 15 reads."""
    t = sram_traffic(fold_plan(M, N, K, ROWS, COLS, "is"), M, N, K, "is")
    assert (int(t.ifmap_reads), int(t.filter_reads), int(t.ofmap_writes), int(t.ofmap_reads)) == (20, 36, 30, 15)
    assert int(t.total) == 101


def test_single_fold_output_stationary_writes_each_output_once() -> None:
    """A GEMM that fits the array in one fold writes M x N outputs and re-reads nothing (all dataflows)."""
    for df in DATAFLOWS:
        t = sram_traffic(fold_plan(2, 2, 2, 4, 4, df), 2, 2, 2, df)
        assert (int(t.ifmap_reads), int(t.filter_reads), int(t.ofmap_writes), int(t.ofmap_reads)) == (4, 4, 4, 0)


dims = st.integers(1, 300)
arrays = st.sampled_from([1, 2, 4, 7, 8, 16, 32, 128])


@settings(max_examples=60, deadline=None)
@given(dims, dims, dims, arrays, arrays, st.sampled_from(DATAFLOWS))
def test_utilization_in_unit_interval(m: int, n: int, k: int, rows: int, cols: int, df: str) -> None:
    """Utilization and mapping efficiency lie in (0, 1] for any GEMM and array."""
    plan = fold_plan(m, n, k, rows, cols, df)
    assert 0 < float(plan.utilization) <= 1 and 0 < float(plan.mapping_efficiency) <= 1


def test_batch_equals_one_by_one() -> None:
    """Folding 50 random GEMMs at once gives the same plans and traffic as folding each alone."""
    rng = np.random.default_rng(7)
    m, n, k = rng.integers(1, 500, size=(3, 50))
    rows, cols = rng.choice([4, 8, 16, 32, 128], size=(2, 50))
    for df in DATAFLOWS:
        plan = fold_plan(m, n, k, rows, cols, df)
        traffic = sram_traffic(plan, m, n, k, df)
        for i in range(50):
            one = fold_plan(m[i], n[i], k[i], rows[i], cols[i], df)
            t1 = sram_traffic(one, m[i], n[i], k[i], df)
            assert int(one.compute_cycles) == plan.compute_cycles[i]
            assert float(one.utilization) == plan.utilization[i]
            assert int(t1.total) == traffic.total[i] and int(t1.ofmap_reads) == traffic.ofmap_reads[i]


def test_diannao_runs_a_batch_one_classifier_layer_at_the_nfu_rate() -> None:
    """A 4096 -> 4096 classifier layer at batch 1 (16-bit inputs, synapses and outputs) on arch_configs/diannao.yaml.

    Hand derivation (Chen et al., ASPLOS 2014, sec. 5): the NFU multiplies Ti = 16 inputs by a Tn x Ti = 16 x 16
    block of synapses each cycle and sums them in Tn adder trees: 4096 x 4096 / 256 = 65,536 cycles, one block a
    cycle (operand_delivery: broadcast, pipelined), and its three pipeline stages fill once, 3 cycles (the first
    block's one-cycle write and two stages). As a systolic os array the same config ran 1,048,576 cycles (one
    output row of 16 on the array at batch 1), and as a systolic ws array 3,080,192 (a 16-row load and the
    30-cycle skew per block). The config gives SB one port of 512 B a cycle, which the DMA's fill of the 32 MiB of
    synapses and the NFU's reads of them share: 2 x 33,554,432 / 512 = 131,072 cycles bound the layer.
    """
    workload = gemm(1, 4096, 4096, bits=16)
    cost = evaluate(load_arch(ROOT / "arch_configs" / "diannao.yaml"), workload).einsums[0].cost
    assert cost.compute_cycles == 65_536
    assert cost.fill_drain_cycles == 3
    assert cost.total_cycles == 131_072


def test_broadcast_delivery_loads_a_block_in_a_cycle_and_fills_the_pipeline_once_per_fold() -> None:
    """A 4 x 4 broadcast array, 3 pipeline stages, ws, a 16 x 8 x 16 GEMM (M x N x K): 4 x 2 = 8 folds of T = 16.
    Single-buffered, a fold costs load 1 + skew 2 + T 16 = 19 cycles: 152; double-buffered each fold after the
    first costs max(T, 1) = 16: 19 + 7 x 16 = 131 (systolic: 2R + C + T - 2 = 26 a fold, 208 and 26 + 7 x 16)."""
    for buffering, broadcast, systolic in (("single", 152, 208), ("double", 131, 138)):
        for delivery, want in (("broadcast", broadcast), ("systolic", systolic)):
            extra = {"operand_delivery": "broadcast", "pipeline_stages": 3} if delivery == "broadcast" else {}
            engine = SystolicEngine.model_validate({"kind": "systolic", "name": "a", "rows": 4, "cols": 4,
                                                    "dataflow": "ws", "stationary_buffering": buffering, **extra})
            plan_cycles = _fold_cycles_of(engine, 16, 8, 16)
            assert plan_cycles == want, (buffering, delivery)


def _fold_cycles_of(engine: SystolicEngine, m: int, n: int, k: int) -> int:
    """Compute and fill/drain cycles of a ws GEMM's implied folds on `engine` (rows: K, cols: N, time: M)."""
    folds = fold_count(k, engine.rows) * fold_count(n, engine.cols)
    one = fold_cycles(m, engine.load_cycles, engine.skew_cycles, False)
    return int(folds * one - hidden_fold_cycles(folds, m, one, engine.load_cycles, engine.stationary_buffering))


def test_pipeline_stages_go_with_broadcast_delivery_only() -> None:
    """A broadcast array without a pipeline depth has no fold fill to charge; a systolic one given one would have
    it ignored: both are refused at their key path."""
    base = ("name: t\nclock: 1 GHz\ntechnology_nm: 28\nmemory:\n  - {name: dram, technology: DRAM, "
            "bandwidth: 10 GB/s}\nengines:\n  - {name: a, kind: systolic, rows: 4, cols: 4, ")
    with pytest.raises(ConfigError, match="needs pipeline_stages") as err:
        arch_from_doc(parse_yaml(base + "operand_delivery: broadcast}\n", "a.yaml"))
    assert err.value.key_path == "engines[0].pipeline_stages"
    with pytest.raises(ConfigError, match="describes a broadcast array") as err:
        arch_from_doc(parse_yaml(base + "pipeline_stages: 3}\n", "a.yaml"))
    assert err.value.key_path == "engines[0].pipeline_stages"


def test_mac_utilization_counts_an_engine_clock_above_the_arch_clock() -> None:
    """tpu_v1's MXU clocked at 1.4 GHz, twice the arch's 700 MHz, does 2 x 65,536 MACs per arch cycle: the run's MAC
    utilization is MACs / (that x the run's arch cycles), the einsum's own figure for a one-einsum run. The summary
    divided by the MXU's peak per arch cycle, reporting twice as much (1.83 on a compute-bound GEMM)."""
    run = evaluate(load_arch("tpu_v1", ["engines.mxu.clock=1.4 GHz"]), gemm(64, 64, 64))
    expected = 64 ** 3 / (2 * 256 * 256 * run.cycles)
    assert run.summary()["mac_utilization"] == pytest.approx(expected, rel=1e-12)
    assert run.einsums[0].cost.utilization == pytest.approx(expected, rel=1e-12)
