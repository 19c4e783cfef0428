"""The comparison page (`accel-sim report A B`, `accel-sim check B --baseline A --html DIR`): deltas from the two
summaries, einsums that changed their bound first, the design fields that differ; bad inputs exit 2."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from accel_sim.cli import main
from accel_sim.reports.compare_page import change_sentence, design_fields, total_label
from accel_sim.reports.headline import headline_values

DRAM_10X = "memory.dram.bandwidth=7.2 GB/s"   # ten times the edge NPU's DRAM bus: the MLP leaves the DRAM bound


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The MLP on the edge NPU (A) and on the same design with ten times the DRAM bandwidth (B)."""
    root = tmp_path_factory.mktemp("compare")
    assert main(["run", "edge_npu", "mlp.einsum", "-o", str(root / "a"), "--json"]) == 0
    assert main(["run", "edge_npu", "mlp.einsum", "-o", str(root / "b"), "--json", "--set", DRAM_10X]) == 0
    return root / "a", root / "b"


def _page(runs: tuple[Path, Path], out: Path) -> str:
    a, b = runs
    assert main(["report", str(a), str(b), "-o", str(out)]) == 0
    return (out / "compare.html").read_text()


def test_headline_changes_match_the_two_summaries(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """Each headline tile carries (B - A) / A of that number, computed here from the two summary.json files."""
    page = _page(runs, tmp_path)
    a, b = (json.loads((r / "summary.json").read_text()) for r in runs)
    tiles = dict(re.findall(r"data-kpi='([^']+)' data-change='([^']+)'", page))
    expected = {label: (after - before) / before
                for (label, before, _), (_, after, _) in zip(headline_values(a), headline_values(b)) if before}
    assert tiles.keys() == expected.keys()
    assert {k: float(v) for k, v in tiles.items()} == pytest.approx(expected, rel=1e-9)
    latency = (b["latency_s"] - a["latency_s"]) / a["latency_s"]
    assert latency < -0.05  # ten times the bandwidth makes a DRAM-bound run faster
    assert f"B is {100 * -latency:.1f} % faster than A" in page


def test_einsums_that_changed_bound_are_listed_first(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """With ten times the DRAM bandwidth the ReLUs stop waiting on the DRAM (dram -> compute), H1 then waits on the
    global buffer (dram -> global_buffer) and Y no longer does (global_buffer -> compute); H2 waits on the global
    buffer in both. The sentence counts each change, their rows come first, and the counts add up to the rows'
    repeats."""
    _page(runs, tmp_path)
    md = (tmp_path / "compare.md").read_text()
    section = md.split("## Einsums that moved")[1].split("## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and not line.startswith("| bound")]
    rebound = [r for r in rows if "→" in r[0]]
    assert rebound and rows[:len(rebound)] == rebound
    changes = {r[1]: r[0].removeprefix("| ") for r in rebound}
    assert changes == {"A1": "dram → compute", "A2": "dram → compute", "H1": "dram → global_buffer",
                       "Y": "global_buffer → compute"}
    count = re.search(r"(\d+) changed their bound: ([^.]+)\.", section)
    assert count and int(count[1]) == sum(int(r[3]) for r in rebound)
    assert sum(int(n) for n in re.findall(r"×(\d+)", count[2])) == int(count[1])
    # H2's roofline is the DRAM's, but its mapping waits on the global buffer: the same cycles at either bandwidth
    h2 = [next(r for r in csv.DictReader((run / "per_einsum.csv").open()) if r["einsum"] == "H2") for run in runs]
    assert [(r["bound"], r["roofline_bound"]) for r in h2] == [("global_buffer", "dram"), ("global_buffer", "compute")]
    assert h2[0]["cycles"] == h2[1]["cycles"]
    names = {r.split(",")[0] for r in (runs[0] / "per_einsum.csv").read_text().splitlines()[1:]}
    assert {r[1] for r in rows} <= names


def test_design_differences_name_the_override(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """The only design fields that differ are the DRAM bandwidth and the override that set it."""
    records = [json.loads((r / "run.json").read_text()) for r in runs]
    fields = [design_fields(r) for r in records]
    assert [k for k in fields[0] if fields[0][k] != fields[1][k]] == ["dram.bandwidth_bytes_per_s", "overrides"]
    md = (_page(runs, tmp_path), (tmp_path / "compare.md").read_text())[1]
    assert "| dram bandwidth | 720 MB/s | 7.2 GB/s |" in md


def test_check_writes_the_same_page(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """`check B --baseline A --html DIR` exits 1 (the run moved) and writes the comparison page into DIR."""
    a, b = runs
    assert main(["check", str(b), "--baseline", str(a), "--html", str(tmp_path / "diff")]) == 1
    page = (tmp_path / "diff" / "compare.html").read_text()
    assert "Einsums that moved" in page and "provenance-a" in page and "provenance-b" in page


def test_a_summary_json_compares_with_a_run_folder(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """A baseline given as a bare summary.json (as `check` takes it) still gives the headline and totals."""
    a, b = runs
    baseline = tmp_path / "baseline.json"
    shutil.copy(a / "summary.json", baseline)
    assert main(["report", str(baseline), str(b), "-o", str(tmp_path)]) == 0
    md = (tmp_path / "compare.md").read_text()
    assert "## Every total" in md and "faster than A" in md and "no run.json" in md


@pytest.mark.parametrize("which", ["a", "b"])
def test_a_folder_that_is_no_run_exits_2(runs: tuple[Path, Path], tmp_path: Path, which: str,
                                         capsys: pytest.CaptureFixture) -> None:
    """`report A B` with either side not a run: exit 2, one line naming the folder and the fix, no traceback."""
    empty = tmp_path / "empty"
    empty.mkdir()
    sides = [str(empty), str(runs[1])] if which == "a" else [str(runs[0]), str(empty)]
    assert main(["report", *sides]) == 2
    err = capsys.readouterr().err
    assert f"error: {empty}: the folder holds no summary.json" in err
    assert "accel-sim run -o DIR" in err and "Traceback" not in err


def test_check_html_refuses_non_runs_before_checking(runs: tuple[Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    """--html with a CSV side exits 2 naming the file, before any diff table is printed."""
    csv = tmp_path / "points.csv"
    csv.write_text("point_id,workload,latency_s\n0,mlp,1.0\n")
    assert main(["check", str(csv), "--baseline", str(runs[0]), "--html", str(tmp_path / "diff")]) == 2
    out = capsys.readouterr()
    assert f"{csv}: not a run folder or a run's summary.json" in out.err and out.out == ""


def test_total_labels() -> None:
    """Nested summary keys read as words: a component's energy, a bound's cycles, a level's field."""
    assert total_label("energy_by_component_j.dram") == "energy in dram"
    assert total_label("cycles_by_bound.compute") == "einsum cycles bound by compute"
    assert total_label("memory.global_buffer.read_bytes") == "global_buffer read bytes"
    assert total_label("latency_s") == "latency"


def test_change_sentence() -> None:
    """Slower and cheaper, faster and dearer, and unchanged read as such."""
    assert change_sentence(2.0, 3.0, "energy per token", 4.0, 3.0) == \
        "B is 50.0 % slower than A and uses 25.0 % less energy per token."
    assert change_sentence(2.0, 2.0, "energy per inference", 1.0, 1.0) == \
        "B runs as fast as A and uses the same energy per inference."
