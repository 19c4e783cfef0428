"""`accel-sim check` exit codes and diff table; `accel-sim report` files for runs and sweeps."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from accel_sim.cli import main
from accel_sim.dse import load_sweep, run_sweep
from accel_sim.dse.executors import LocalExecutor
from accel_sim.reports.regression import compare

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder (summary.json, per_einsum.csv, roofline.png) of the MLP cascade on the edge NPU."""
    out = tmp_path_factory.mktemp("run") / "mlp"
    assert main(["run", "edge_npu", "mlp.einsum", "-o", str(out), "--json"]) == 0
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_identical_results_exit_0(run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    """A run compared with itself holds at rtol 0."""
    assert main(["check", str(run_dir), "--baseline", str(run_dir), "--rtol", "0"]) == 0
    assert "hold within rtol 0" in capsys.readouterr().out


def test_five_percent_latency_change_exits_1_and_names_the_metric(run_dir: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """latency_s raised by 5% in the baseline fails at rtol 0.02; the table names latency_s and -4.76 %
    (result / baseline - 1 = 1 / 1.05 - 1)."""
    base = _copy(run_dir, tmp_path / "base")
    summary = json.loads((base / "summary.json").read_text())
    summary["latency_s"] *= 1.05
    (base / "summary.json").write_text(json.dumps(summary))
    assert main(["check", str(run_dir), "--baseline", str(base), "--rtol", "0.02"]) == 1
    out = capsys.readouterr().out
    assert "latency_s" in out and "-4.76 %" in out and "(total)" in out
    assert "energy_j" not in out


def test_a_memory_level_figure_is_checked_too(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """summary.json's per-level memory figures (memory.<level>.<field>, two levels deep) are metrics: the global
    buffer's read bytes doubled in the baseline fail the check and are named."""
    base = _copy(run_dir, tmp_path / "base")
    summary = json.loads((base / "summary.json").read_text())
    level = next(name for name, use in summary["memory"].items() if use["read_bytes"] > 0)
    summary["memory"][level]["read_bytes"] *= 2
    (base / "summary.json").write_text(json.dumps(summary))
    assert main(["check", str(run_dir), "--baseline", str(base), "--rtol", "0.02"]) == 1
    assert f"memory.{level}.read_bytes" in capsys.readouterr().out


@pytest.mark.parametrize("gone", ["dropped", "null"])
def test_a_metric_the_result_lacks_is_a_regression(run_dir: Path, tmp_path: Path, gone: str,
                                                   capsys: pytest.CaptureFixture) -> None:
    """cycles left out of the result's summary (or null there, as NaN is) fails as 'missing in result': only the
    metrics both sides share were compared before, so a result without its numbers passed."""
    result = _copy(run_dir, tmp_path / "result")
    summary = json.loads((result / "summary.json").read_text())
    if gone == "dropped":
        del summary["cycles"]
    else:
        summary["cycles"] = None
    (result / "summary.json").write_text(json.dumps(summary))
    report = compare(result, run_dir)
    assert [(c.item, c.metric) for c in report.changes] == [("(total)", "cycles")]
    assert main(["check", str(result), "--baseline", str(run_dir)]) == 1
    assert "missing in result" in capsys.readouterr().out


def test_change_within_tolerance_passes(run_dir: Path, tmp_path: Path) -> None:
    """A 1% change in one einsum's cycles holds at rtol 0.02 and fails at rtol 0.005."""
    base = _copy(run_dir, tmp_path / "base")
    frame = pd.read_csv(base / "per_einsum.csv")
    frame.loc[0, "cycles"] *= 1.01
    frame.to_csv(base / "per_einsum.csv", index=False)
    assert compare(run_dir, base, rtol=0.02).passed
    failed = compare(run_dir, base, rtol=0.005)
    assert [(c.item, c.metric) for c in failed.changes] == [(str(frame.loc[0, "einsum"]), "cycles")]


def test_malformed_baseline_exits_2(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A truncated summary.json baseline is bad input: exit 2 naming the file, line and fix."""
    bad = tmp_path / "summary.json"
    bad.write_text('{"workload": "mlp",\n "latency_s": ')
    assert main(["check", str(run_dir), "--baseline", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "summary.json, line 2" in err and "invalid JSON" in err and "Fix:" in err


def test_an_infinite_baseline_holds_only_an_equal_result(run_dir: Path, tmp_path: Path) -> None:
    """A baseline latency of Infinity (JSON's) against the run's finite one moves: rtol x inf would hold anything."""
    base = _copy(run_dir, tmp_path / "base")
    summary = json.loads((base / "summary.json").read_text())
    summary["latency_s"] = float("inf")
    (base / "summary.json").write_text(json.dumps(summary))
    assert [(c.item, c.metric) for c in compare(run_dir, base).changes] == [("(total)", "latency_s")]
    assert compare(base, base).passed


@pytest.mark.parametrize("damage", ["word for a number", "short csv row"])
def test_report_on_a_damaged_run_folder_exits_2(run_dir: Path, tmp_path: Path, damage: str,
                                                capsys: pytest.CaptureFixture) -> None:
    """A summary whose latency is a word, or a per-einsum row with one field too many, is bad input for `report`:
    exit 2 naming the file and the key or line."""
    folder = _copy(run_dir, tmp_path / "run")
    if damage == "word for a number":
        summary = json.loads((folder / "summary.json").read_text())
        summary["latency_s"] = "fast"
        (folder / "summary.json").write_text(json.dumps(summary))
        expected = "summary.json at 'latency_s'"
    else:
        csv_file = folder / "per_einsum.csv"
        lines = csv_file.read_text().splitlines()
        csv_file.write_text("\n".join([lines[0], lines[1] + ",1"] + lines[2:]) + "\n")
        expected = "per_einsum.csv, line 2"
    assert main(["report", str(folder), "-o", str(tmp_path / "page")]) == 2
    assert expected in capsys.readouterr().err


def test_missing_row_is_a_regression(run_dir: Path, tmp_path: Path) -> None:
    """An einsum present in the baseline but gone from the result is reported as missing."""
    base = _copy(run_dir, tmp_path / "base")
    frame = pd.read_csv(base / "per_einsum.csv")
    extra = frame.iloc[[0]].assign(einsum="ghost")
    pd.concat([frame, extra]).to_csv(base / "per_einsum.csv", index=False)
    report = compare(run_dir, base)
    assert [c.item for c in report.changes] == ["ghost"]


def test_sweep_stores_compare_per_point(tmp_path: Path) -> None:
    """Two stores of the same spec hold; check works on stores as well as run folders."""
    for name in ("a", "b"):
        run_sweep(load_sweep(DATA / "random.yaml"), tmp_path / f"{name}.db", executor=LocalExecutor(1))
    assert main(["check", str(tmp_path / "a.db"), "--baseline", str(tmp_path / "b.db"), "--rtol", "0"]) == 0


def test_stores_that_number_other_designs_alike_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The same 2-point sweep with its dataflow values reversed numbers ws as point 1 on one side and point 0 on
    the other: pairing by number compared unrelated designs (a list of 'regressions'); it is a usage error
    naming the point and the axis that differs."""
    spec = tmp_path / "spec.yaml"
    for name, flows in (("a", "[ws, os]"), ("b", "[os, ws]")):
        spec.write_text(f"name: two\narch: edge_npu\nworkloads: [mlp.einsum]\naxes:\n"
                        f"  - path: engines.pe_array.dataflow\n    values: {flows}\nstrategy: grid\n")
        run_sweep(load_sweep(spec), tmp_path / f"{name}.db", executor=LocalExecutor(1))
    assert main(["check", str(tmp_path / "a.db"), "--baseline", str(tmp_path / "b.db")]) == 2
    err = capsys.readouterr().err
    assert "point 0 (mlp.einsum) is another design in each store (engines.pe_array.dataflow: 'os' -> 'ws')" in err


def test_absolute_tolerance_absorbs_small_counts(run_dir: Path, tmp_path: Path) -> None:
    """A stall count of 1 -> 6.5 cycles is +550 %, beyond any rtol; --atol stall_cycles=10 holds it (|6.5 - 1| = 5.5
    <= 10 + 0.02 x 1), while the other metrics keep their relative gate."""
    base = _copy(run_dir, tmp_path / "base")
    frame = pd.read_csv(base / "per_einsum.csv")
    frame.loc[0, "stall_cycles"] = 1.0
    frame.to_csv(base / "per_einsum.csv", index=False)
    result = _copy(base, tmp_path / "result")
    moved = pd.read_csv(result / "per_einsum.csv")
    moved.loc[0, "stall_cycles"] = 6.5
    moved.to_csv(result / "per_einsum.csv", index=False)
    assert [c.metric for c in compare(result, base).changes] == ["stall_cycles"]
    assert compare(result, base, atol={"stall_cycles": 10}).passed
    assert main(["check", str(result), "--baseline", str(base), "--atol", "stall_cycles=10"]) == 0
    assert not compare(result, base, atol={"stall_cycles": 5}).passed


def test_totals_come_first_in_the_diff(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A large per-einsum change and a small total change: the total's row is printed first."""
    base = _copy(run_dir, tmp_path / "base")
    summary = json.loads((base / "summary.json").read_text())
    summary["energy_j"] *= 1.03
    (base / "summary.json").write_text(json.dumps(summary))
    frame = pd.read_csv(base / "per_einsum.csv")
    frame.loc[0, "cycles"] *= 2
    frame.to_csv(base / "per_einsum.csv", index=False)
    assert main(["check", str(run_dir), "--baseline", str(base)]) == 1
    out = capsys.readouterr().out
    assert out.index("(total)") < out.index(str(frame.loc[0, "einsum"]))


@pytest.mark.parametrize("bad", ["stall_cycles=-1", "stall_cycles=inf", "ten"])
def test_bad_atol_exits_2(run_dir: Path, bad: str, capsys: pytest.CaptureFixture) -> None:
    """A negative, infinite or unparsable --atol is a usage error."""
    with pytest.raises(SystemExit) as exited:
        main(["check", str(run_dir), "--baseline", str(run_dir), "--atol", bad])
    assert exited.value.code == 2 and "Fix:" in capsys.readouterr().err


def test_a_run_against_a_sweep_or_another_workload_exits_2(run_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    """Comparing a run folder with a sweep store, or runs of different workloads, is a usage error (exit 2)."""
    run_sweep(load_sweep(DATA / "random.yaml"), tmp_path / "s.db", executor=LocalExecutor(1))
    assert main(["check", str(run_dir), "--baseline", str(tmp_path / "s.db")]) == 2
    assert "cannot compare a run" in capsys.readouterr().err
    other = tmp_path / "other"
    assert main(["run", "edge_npu", "gemm.einsum", "-o", str(other), "--json"]) == 0
    capsys.readouterr()
    assert main(["check", str(other), "--baseline", str(run_dir)]) == 2
    assert "none in common" in capsys.readouterr().err


def test_sweep_report_has_interactive_plots_pngs_and_front(tmp_path: Path) -> None:
    """The sweep report is one HTML file with the interactive Pareto and parallel-coordinates plots, the 3-objective
    note and the hypervolume explained; PNGs for papers beside it; Markdown; pareto.csv whose rows are all feasible
    and exactly one is the knee."""
    store = tmp_path / "s.db"
    run_sweep(load_sweep(DATA / "random.yaml"), store, executor=LocalExecutor(1))
    assert main(["report", str(store), "-o", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "id='plot-pareto-conv2d_einsum'" in page and "id='plot-parallel-conv2d_einsum'" in page
    assert "3 objectives but a scatter shows two" in page and "reference point 1.1" in page
    assert (tmp_path / "rep" / "pareto_conv2d_einsum.png").exists()
    assert "Pareto front" in (tmp_path / "rep" / "report.md").read_text()
    front = pd.read_csv(tmp_path / "rep" / "pareto.csv")
    assert (front["status"] == "ok").all() and front["knee"].sum() == 1


def test_run_report_has_energy_area_and_roofline(tmp_path: Path) -> None:
    """report ARCH WORKLOAD evaluates and writes the design card, totals, per-einsum table, the cycle and energy
    breakdowns, area and the interactive roofline, with the command in the provenance footer."""
    assert main(["report", "edge_npu", "mlp.einsum", "-o", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    for section in ("Totals", "Where the cycles and the energy go", "Per einsum", "Area by block", "id='plot-roofline'",
                    "id='design'", "accel-sim report edge_npu mlp.einsum -o"):
        assert section in page
