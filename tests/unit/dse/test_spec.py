"""Sweep specs: axis values, ties, strategies, hashing and the errors bad specs raise."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.dse.spec import load_sweep
from accel_sim.errors import ConfigError

DATA = Path(__file__).parent / "data"


def _spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text("name: t\narch: edge_npu\nworkloads: [gemm.einsum]\n" + body)
    return path


def test_grid_enumerates_the_product_with_ties(tmp_path: Path) -> None:
    """rows in {8, 16} (log range, factor 2) x dataflow {ws, os}; cols tied to rows: 4 designs, cols == rows."""
    sweep = load_sweep(_spec(tmp_path, "axes:\n  - {path: 'engines[0].rows', log_range: {start: 8, stop: 16, factor: 2}}\n"
                                       "  - {path: engines.0.cols, tie: engines.0.rows}\n"
                                       "  - {path: engines.pe_array.dataflow, values: [ws, os]}\n"))
    designs = [sweep.design(i) for i in range(sweep.designs)]
    assert [(d["engines.0.rows"], d["engines.0.cols"], d["engines.pe_array.dataflow"]) for d in designs] == [
        (8, 8, "ws"), (8, 8, "os"), (16, 16, "ws"), (16, 16, "os")]


def test_a_scaled_tie_keeps_the_ratio_and_the_unit(tmp_path: Path) -> None:
    """Global buffer {64, 128} KiB; the DRAM's capacity tied at scale 8: a unit-carrying value scales its number
    and keeps its unit, '512 KiB' and '1024 KiB'; a plain number scales to a number: rows 8, 16 give cols 4, 8."""
    sweep = load_sweep(_spec(tmp_path, "axes:\n  - {path: memory.global_buffer.capacity, values: [64, 128], unit: KiB}\n"
                                       "  - {path: memory.dram.capacity, tie: memory.global_buffer.capacity, "
                                       "scale: 8}\n"))
    assert [sweep.design(i)["memory.dram.capacity"] for i in range(2)] == ["512 KiB", "1024 KiB"]
    halves = load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [8, 16]}\n"
                                        "  - {path: engines.0.cols, tie: engines.0.rows, scale: 0.5}\n"))
    assert [halves.design(i)["engines.0.cols"] for i in range(2)] == [4, 8]


def test_range_includes_stop_and_units_are_appended(tmp_path: Path) -> None:
    """range 64..256 step 64 is 64, 128, 192, 256; with unit KiB each value reads '64 KiB'."""
    sweep = load_sweep(_spec(tmp_path, "axes:\n  - {path: memory.global_buffer.capacity, unit: KiB,"
                                       " range: {start: 64, stop: 256, step: 64}}\n"))
    assert sweep.free[0][1] == ("64 KiB", "128 KiB", "192 KiB", "256 KiB")


def test_log_range_by_count_is_geometric(tmp_path: Path) -> None:
    """num: 3 points from 4 to 64 in log space: 4, 16, 64 (ratio 4)."""
    sweep = load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, log_range: {start: 4, stop: 64, num: 3}}\n"))
    assert sweep.free[0][1] == (4, 16, 64)


def test_random_strategy_draws_distinct_designs_reproducibly() -> None:
    """20 of 192 designs, no repeats, the same 20 for the same seed."""
    ids = list(load_sweep(DATA / "random.yaml").design_ids())
    assert len(ids) == 20 == len(set(ids))
    assert max(ids) < 192
    assert ids == list(load_sweep(DATA / "random.yaml").design_ids())


def test_point_ids_enumerate_designs_times_workloads() -> None:
    """small.yaml: 32 designs x 2 workloads = 64 points with ids 0..63, each design on both workloads."""
    tasks = list(load_sweep(DATA / "small.yaml").tasks())
    assert [t.point_id for t in tasks] == list(range(64))
    assert {t.workload_label for t in tasks[:2]} == {"mlp.einsum", "conv2d.einsum"}


def test_spec_hash_changes_with_the_axes(tmp_path: Path) -> None:
    """Two specs that differ in one value hash differently (resume must tell them apart)."""
    a = load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [8, 16]}\n")).spec_hash
    b = load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [8, 32]}\n")).spec_hash
    assert a != b


@pytest.mark.parametrize(("body", "expected"), [
    ("axes:\n  - {path: engines.nope.rows, values: [8]}\n", ["line 5", "axes[0].path", "no item 'nope'", "pe_array"]),
    ("axes:\n  - path: engines.0.rows\n    values: [8]\n    range: {start: 1, stop: 2, step: 1}\n",
     ["line 5", "axes[0]", "exactly one of values, range, log_range or tie"]),
    ("axes:\n  - {path: engines.0.rows, tie: engines.0.cols}\n", ["axes[0].tie", "names no free axis"]),
    ("axes:\n  - {path: engines.0.rows, values: [8], scale: 2}\n", ["axes[0]", "scale", "with 'tie'"]),
    ("axes:\n  - {path: engines.pe_array.dataflow, values: [ws]}\n"
     "  - {path: engines.0.cols, tie: engines.pe_array.dataflow, scale: 2}\n", ["axes[1].scale", "not numbers"]),
    ("axes:\n  - {path: engines.0.rows, values: [8]}\nconstraints: [area is small]\n",
     ["line 6", "constraints", "'area_mm2 <= 50'"]),
    ("axes:\n  - {path: engines.0.rows, values: [8, 16]}\nstrategy: {kind: random, n: 5}\n",
     ["strategy.n", "at most 2"]),
    ("axis:\n  - {path: engines.0.rows, values: [8]}\n", ["line 4", "unknown key 'axis'", "did you mean 'axes'"]),
])
def test_bad_spec_names_line_key_path_and_fix(tmp_path: Path, body: str, expected: list[str]) -> None:
    """Each broken spec raises ConfigError whose message has the file, line, key path and a fix."""
    with pytest.raises(ConfigError) as info:
        load_sweep(_spec(tmp_path, body))
    message = str(info.value)
    assert "spec.yaml" in message and "Fix:" in message
    for text in expected:
        assert text in message, message


@pytest.mark.parametrize("shipped", sorted((Path(__file__).resolve().parents[3] / "dse").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_shipped_spec_loads(shipped: Path) -> None:
    """Each spec in dse/ loads and names at least one point; a search spec's designs decode back to their index."""
    sweep = load_sweep(shipped)
    assert sweep.points > 0
    if sweep.adaptive:
        assert all(sweep.design_index(sweep.design_indices(i)) == i for i in range(sweep.designs))


def test_a_grid_with_an_invalid_corner_still_loads(tmp_path: Path) -> None:
    """rows {-1, 8}: the first design is refused by the arch model, the last builds, so the sweep loads (the
    corner becomes an 'invalid' row when it runs); rows {-1, -2} builds nothing and is a ConfigError at its axis."""
    assert load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [-1, 8]}\n")).designs == 2
    with pytest.raises(ConfigError, match=r"axes\[0\]\.path.*builds no design"):
        load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [-1, -2]}\n"))


@pytest.mark.parametrize(("axes", "expected"), [
    ("  - {path: engines.0.rows, values: [8, banana]}\n", ["axes[0].values[1]", '"banana"', "expected a number"]),
    ("  - {path: engines.0.rows, range: {start: 1, stop: 3, step: 0.5}}\n",
     ["axes[0].range", "1.5", "fractional part"]),
    ("  - {path: memory.global_buffer.capacity, values: [64 KiB, lots]}\n", ["axes[0].values[1]", "bytes quantity"]),
    ("  - {path: engines.pe_array.dataflow, values: [ws, os]}\n  - {path: engines.0.rows, tie: "
     "engines.pe_array.dataflow}\n", ["axes[1].tie", "engines.0.rows", '"ws"']),
])
def test_an_axis_value_of_the_wrong_kind_is_refused_at_load(tmp_path: Path, axes: str, expected: list[str]) -> None:
    """Each axis value is applied alone to the base arch and validated (nothing evaluated): a word for a count, a
    fraction for a count, a capacity without a number, a tie that copies a dataflow into rows are ConfigErrors at the
    axis; a range's values are sampled one per type."""
    with pytest.raises(ConfigError) as info:
        load_sweep(_spec(tmp_path, "axes:\n" + axes))
    for text in expected:
        assert text in str(info.value), str(info.value)


def test_a_value_out_of_range_is_left_to_its_points(tmp_path: Path) -> None:
    """rows 0 and a negative capacity are of the right kind: a grid may hold such a corner (its points are recorded
    'invalid'), so the sweep loads."""
    assert load_sweep(_spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [0, 8]}\n"
                                      "  - {path: memory.global_buffer.capacity, values: [-5, 64 KiB]}\n")).designs == 4


@pytest.mark.parametrize(("arch", "workload"), [("tpu_v1", "gemm.einsum"), ("neupims_like", "llama2-7b-decode"),
                                                ("fpga/intar_mlp_dataflow", "intar/mlp")])
def test_the_metrics_every_summary_holds_are_in_every_summary(arch: str, workload: str) -> None:
    """SUMMARY_METRICS, which a sweep's names are checked against without evaluating, are numbers of every
    summary, whatever the execution model (sequential, npu_pim, fpga)."""
    from accel_sim import evaluate, load_arch, load_workload
    from accel_sim.dse.point import metrics_of
    from accel_sim.evaluate import SUMMARY_METRICS

    assert SUMMARY_METRICS <= set(metrics_of(evaluate(load_arch(arch), load_workload(workload)).summary()))


def test_an_objective_named_after_the_arch_is_checked_on_an_evaluated_point(tmp_path: Path) -> None:
    """utilization.<engine> exists only for the engines an arch has: the first probe point that evaluates decides
    (rows 0 is invalid, so the next probe is used), at load, as `validate` runs it."""
    ok = "axes:\n  - {path: engines.0.rows, values: [0, 8]}\nobjectives: {utilization.pe_array: max}\n"
    assert load_sweep(_spec(tmp_path, ok)).designs == 2
    with pytest.raises(ConfigError, match=r"objectives\.utilization\.mxu.*unknown metric.*utilization\.pe_array"):
        load_sweep(_spec(tmp_path, ok.replace("pe_array: max", "mxu: max")))


def test_max_points_guards_the_grid_and_none_lifts_it(tmp_path: Path) -> None:
    """A 4 x 4 grid on one workload is 16 points: refused under max_points 10 with the flag to pass, loaded
    with max_points=None."""
    spec = _spec(tmp_path, "axes:\n  - {path: engines.0.rows, values: [4, 8, 16, 32]}\n"
                           "  - {path: engines.0.cols, values: [4, 8, 16, 32]}\n")
    with pytest.raises(ConfigError, match="16 points.*--max-points 16"):
        load_sweep(spec, max_points=10)
    assert load_sweep(spec, max_points=None).points == 16


def test_a_memory_level_metric_is_an_objective(tmp_path: Path) -> None:
    """Summary values nested two deep (memory.<level>.<figure>) are metrics too: a sweep may minimise the global
    buffer's peak occupancy, and a misspelt level is refused naming the metrics there are."""
    from accel_sim import evaluate, load_arch, load_workload
    from accel_sim.dse.point import metrics_of

    summary = evaluate(load_arch("edge_npu"), load_workload("gemm.einsum")).summary()
    metrics = metrics_of(summary)
    assert metrics["memory.global_buffer.capacity_bytes"] == 108 * 1024   # edge_npu.yaml: 108 KiB
    assert metrics["memory.global_buffer.read_bytes"] == summary["memory"]["global_buffer"]["read_bytes"]
    ok = ("axes:\n  - {path: engines.0.rows, values: [4, 8]}\n"
          "objectives: {memory.global_buffer.read_bytes: min}\n")
    assert load_sweep(_spec(tmp_path, ok)).designs == 2
    with pytest.raises(ConfigError, match=r"unknown metric 'memory\.global_bufer\.read_bytes'"):
        load_sweep(_spec(tmp_path, ok.replace("global_buffer", "global_bufer")))
