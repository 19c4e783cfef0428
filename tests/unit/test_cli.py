"""The accel-sim CLI: run writes a report, --json prints machine-readable output, list and validate work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_sim.cli import main

SUMMARY_KEYS = {"cycles", "latency_s", "energy_j", "area_mm2", "throughput_per_s"}


def test_default_run_writes_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """With no arguments, run evaluates Llama-2-7B decode on the TPU-like design and writes three files."""
    assert main(["run", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "totals" in out and "MACs" in out
    for name in ("per_einsum.csv", "summary.json", "roofline.png"):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert SUMMARY_KEYS <= summary.keys()
    assert "llama2-7b" in summary["workload"]


def test_run_prints_its_answer_before_waiting_for_the_figure(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The totals table is on stdout by the time `run` waits for its roofline PNG (plotting never holds it back)."""
    from accel_sim.reports.render import FigureWorker

    printed_before_wait = []
    real_wait = FigureWorker.wait

    def observed_wait(self: FigureWorker) -> None:
        printed_before_wait.append(capsys.readouterr().out)
        real_wait(self)

    monkeypatch.setattr(FigureWorker, "wait", observed_wait)
    assert main(["run", "tpu_v1", "workloads/gemm.einsum.yaml", "-o", str(tmp_path)]) == 0
    assert len(printed_before_wait) == 1 and "totals" in printed_before_wait[0]
    assert (tmp_path / "roofline.png").stat().st_size > 0


def test_run_json_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--json prints Result.summary() as one JSON object on stdout."""
    assert main(["run", "tpu_v1", "workloads/gemm.einsum.yaml", "--json", "-o", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert SUMMARY_KEYS <= summary.keys()
    assert summary["cycles"] > 0 and summary["latency_s"] > 0


def test_run_json_prints_the_summary_file_provenance_included(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--json prints summary.json as written: with its provenance (the inputs and overrides), which it lacked."""
    assert main(["run", "edge_npu", "gemm.einsum", "-o", str(tmp_path / "r"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "r" / "summary.json").read_text()) and "provenance" in printed


def test_a_rerun_into_a_folder_leaves_no_file_of_the_earlier_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A report page and a timeline of an earlier run (a timeline only runs whose engines overlap draw) do not stay
    beside the new run's files; summary.json is written whole, last."""
    out = tmp_path / "r"
    out.mkdir()
    for stale in ("report.html", "report.md", "timeline.csv", "timeline.png", "summary.json"):
        (out / stale).write_text("earlier run")
    assert main(["run", "edge_npu", "gemm.einsum", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["per_einsum.csv", "roofline.png", "run.json", "summary.json"]
    assert json.loads((out / "summary.json").read_text())["workload"] == "gemm"


def test_ctrl_c_exits_130_with_a_line_and_writes_no_summary(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the files are written (here: in the per-einsum CSV) ends the command with exit 130 and one
    line, no traceback, and no summary.json (the file `check` and `report` take as a finished run)."""
    import accel_sim.reports.tables as tables  # the module whose writer the interrupt lands in

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tables, "write_csv", interrupted)
    assert main(["run", "edge_npu", "gemm.einsum", "-o", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted:") and "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r" / "summary.json").exists()


def test_cp_sat_leaves_ctrl_c_to_python() -> None:
    """CP-SAT catches SIGINT by default and returns its best solution so far: an interrupted run then finished
    with exit 0 and other numbers than an uninterrupted one. Every solver of the mapper and scheduler leaves it."""
    from accel_sim.engines.systolic_cpsat import new_solver  # ortools loads on first use
    from accel_sim.schedule.model import make_solver  # ortools loads on first use

    assert new_solver(0).parameters.catch_sigint_signal is False
    assert make_solver(1.0, 0).parameters.catch_sigint_signal is False


def test_set_override_changes_the_result(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Halving the DRAM bandwidth of a DRAM-bound decode step doubles its DRAM-bound cycles."""
    args = ["run", "tpu_v1", "workloads/llama2-7b-decode-int8.yaml", "--json", "-o", str(tmp_path)]
    assert main(args) == 0
    base = json.loads(capsys.readouterr().out)
    assert main(args + ["--set", "memory.0.bandwidth=17 GB/s"]) == 0
    slow = json.loads(capsys.readouterr().out)
    dram = next(iter(base["cycles_by_bound"]))
    assert slow["cycles"] > 1.5 * base["cycles"], (dram, base, slow)


def test_changing_a_kind_by_set_names_the_old_kinds_key_and_the_set_that_replaces_it(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """InTAR's MLP design runs `execution: {kind: fpga, mode: dataflow, ...}`; `--set execution.kind=scheduled` keeps
    the fpga kind's `mode`, which a scheduled execution does not take: exit 2, the error says the key belongs to
    another kind and gives the --set that replaces the mapping whole, and that command runs."""
    args = ["run", "arch_configs/fpga/intar_mlp_dataflow.yaml", "workloads/intar/mlp.einsum.yaml", "--json",
            "-o", str(tmp_path)]
    assert main(args + ["--set", "execution.kind=scheduled"]) == 2
    err = capsys.readouterr().err
    assert "at 'execution.mode': unknown key 'mode'" in err and "'mode' belongs to another kind" in err
    assert "--set 'execution={kind: scheduled}'" in err
    assert main(args + ["--set", "execution={kind: scheduled}"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] > 0


def test_a_misspelt_key_gets_no_other_kind_hint(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A key no kind of engine takes ('rowz') is a misspelling: 'did you mean', and no advice to change kinds."""
    assert main(["run", "tpu_v1", "workloads/gemm.einsum.yaml", "--set", "engines.0.rowz=3", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'rows'?" in err and "another kind" not in err


def test_workload_json_has_counts(capsys: pytest.CaptureFixture) -> None:
    """workload --json gives total_macs, einsums and unsupported_ops."""
    assert main(["workload", "workloads/gemm.einsum.yaml", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"total_macs", "einsums", "unsupported_ops"} <= data.keys()
    assert data["total_macs"] > 0 and data["unsupported_ops"] == []


def test_list_names_shipped_things(capsys: pytest.CaptureFixture) -> None:
    """list shows the TPU config, the zoo presets and the engine kinds."""
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "tpu_v1" in out and "llama2-7b" in out and "systolic" in out


def test_validate_accepts_every_shipped_file(capsys: pytest.CaptureFixture) -> None:
    """Every shipped file the tool reads validates: arch configs (subfolders too), workloads, sweep specs and the
    SCALE-Sim sample's .cfg and topology."""
    root = Path.cwd()
    found = [*root.glob("arch_configs/**/*.yaml"), *root.glob("workloads/*.yaml"), *root.glob("dse/*.yaml"),
             *root.glob("workloads/scalesim/*")]
    files = sorted(str(p.relative_to(root)) for p in found)
    assert any(f.endswith(".cfg") for f in files) and any(f.startswith("dse/") for f in files)
    assert main(["validate", *files]) == 0
    assert capsys.readouterr().out.count("ok ") == len(files)


def test_validate_reports_every_bad_file_and_exits_2(capsys: pytest.CaptureFixture) -> None:
    """Three bad files of three kinds among good ones: each gets its own error paragraph, the good ones their
    'ok' line, and the exit code is 2."""
    bad = ["tests/data/bad/arch_clock_inf.yaml", "tests/data/bad/sweep_misspelt_leaf.yaml",
           "tests/data/bad/scalesim_unknown_key.cfg"]
    assert main(["validate", "workloads/gemm.einsum.yaml", *bad, "dse/npu_pim_batch.yaml"]) == 2
    captured = capsys.readouterr()
    assert captured.out.count("ok ") == 2
    assert all(f"error: {name}" in captured.err for name in bad) and "3 of 5 files are bad" in captured.err


def test_validate_names_a_topology_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A folder named like a topology (x.csv) is reported as unreadable, exit 2, as a missing one is (before: an
    IsADirectoryError traceback)."""
    (tmp_path / "x.csv").mkdir()
    assert main(["validate", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'x.csv'}: cannot read the file" in err and "Fix:" in err


def test_list_names_every_shipped_config_as_run_accepts_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Configs in subfolders (arch_configs/lut, arch_configs/fpga) are listed as 'lut/<name>', which `run` resolves."""
    assert main(["list"]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    shipped = Path(__file__).resolve().parents[2] / "arch_configs"
    for config in shipped.rglob("*.yaml"):
        assert config.relative_to(shipped).with_suffix("").as_posix() in out
    assert main(["run", "fpga/flightllm_u280", "workloads/mlp.einsum.yaml", "--json", "-o", str(tmp_path)]) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["run", "tpu_v1", "workloads/gemm.einsum.yaml", "-o", "{file}"], "is a file, not a folder"),
    (["search", "tpu_v1", "workloads/gemm.einsum.yaml", "--time-limit", "-1"], "seconds above 0"),
    (["search", "tpu_v1", "workloads/gemm.einsum.yaml", "--jobs", "0"], "must be at least 1"),
    (["sweep", "dse/tpu_array_resnet50.yaml", "--workers", "0"], "must be at least 1"),
    # an output under an existing file, or a store that is a folder: refused at parse time, not by a mkdir crash
    (["run", "tpu_v1", "workloads/gemm.einsum.yaml", "-o", "{file}/sub"], "is a file, so"),
    (["report", "reports", "-o", "{file}/r"], "is a file, so"),
    (["check", "a.json", "--baseline", "b.json", "--html", "{file}/d"], "is a file, so"),
    (["sweep", "dse/tpu_array_resnet50.yaml", "--store", "{file}/x.db"], "is a file, so"),
    (["sweep", "dse/tpu_array_resnet50.yaml", "--export", "{file}/x.csv"], "is a file, so"),
    (["sweep", "dse/tpu_array_resnet50.yaml", "--store", "{dir}"], "is a folder, not a file"),
])
def test_bad_option_values_exit_2_with_the_fix(args: list[str], message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    """An output path that is a file, a negative time limit and zero processes are refused before any work."""
    existing = tmp_path / "file"
    existing.write_text("")
    with pytest.raises(SystemExit) as exited:
        main([a.replace("{file}", str(existing)).replace("{dir}", str(tmp_path)) for a in args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Fix:" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_output_folder_that_cannot_be_created_is_refused_up_front(capsys: pytest.CaptureFixture) -> None:
    """/proc takes no new entries, though for root it passes every permission check: the folder is tried, not its
    permission bits."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "tpu_v1", "workloads/gemm.einsum.yaml", "-o", "/proc/accel-sim-out"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "cannot write in the folder /proc (to create /proc/accel-sim-out)" in err and "Fix:" in err


def test_a_run_is_byte_identical_under_two_hash_seeds(tmp_path: Path) -> None:
    """The same run (a recipe whose name lists five overridden parameters, plus --set overrides) under
    PYTHONHASHSEED 1 and 2 writes the same folder name and a byte-identical summary.json (no dates; names built
    in declaration order, not a set's)."""
    repo = Path(__file__).resolve().parents[2]
    folders = []
    for seed in ("1", "2"):
        cwd = tmp_path / seed
        cwd.mkdir()
        proc = subprocess.run([sys.executable, "-m", "accel_sim.cli", "run", str(repo / "arch_configs" / "tpu_v1.yaml"),
                               str(repo / "workloads" / "gpt3-7b-tp4-decode-b256.yaml"), "--set", "workload.n_layers=1",
                               "--set", "engines.mxu.rows=128", "--json"],
                              cwd=cwd, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        (folder,) = (cwd / "reports").iterdir()
        folders.append(folder)
    assert folders[0].name == folders[1].name and "__set-" in folders[0].name
    assert (folders[0] / "summary.json").read_bytes() == (folders[1] / "summary.json").read_bytes()


def test_summary_records_the_run_inputs_and_an_overridden_run_has_its_own_folder(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """summary.json's provenance names the arch and workload files, every --set in order, the recipe after its
    overrides and the tool version; the run with --set writes another folder than the plain run."""
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    arch, work = str(repo / "arch_configs" / "tpu_v1.yaml"), str(repo / "workloads" / "llama2-7b-decode.yaml")
    assert main(["run", arch, work, "--set", "workload.n_layers=1", "--json"]) == 0
    assert main(["run", arch, work, "--set", "workload.n_layers=1", "--set", "engines.mxu.rows=128", "--json"]) == 0
    folders = sorted((tmp_path / "reports").iterdir())
    assert len(folders) == 2
    records = [json.loads((f / "summary.json").read_text())["provenance"] for f in folders]
    both = {tuple(r["overrides"]) for r in records}
    assert both == {("workload.n_layers=1",), ("workload.n_layers=1", "engines.mxu.rows=128")}
    assert all(r["arch_file"] == "arch_configs/tpu_v1.yaml" and r["workload_file"] == "workloads/llama2-7b-decode.yaml"
               and r["workload_recipe"]["n_layers"] == 1 and r["version"] for r in records)


def test_search_maps_a_gpu_contraction(capsys: pytest.CaptureFixture) -> None:
    """The mapper is engine-agnostic, so `search` runs on any engine with a mapspace: on the H100 a 4096^3 GEMM
    prints its chosen CTA tile as a loop nest (grid at HBM, tile at L2) and the engine kind beside its name."""
    assert main(["search", "gpu/h100_sxm5_80gb", "workloads/gemm_fp16.einsum.yaml", "--method", "local"]) == 0
    out = capsys.readouterr().out
    assert "== Z on sm (gpu): {'m': 4096, 'n': 4096, 'k': 4096}" in out
    assert "CTA tile >>" in out and out.index("hbm") < out.index("l2") < out.index("CTA tile")


def test_search_names_the_engines_when_none_can_be_searched(capsys: pytest.CaptureFixture) -> None:
    """An engine without mapping choices for the contraction (TPU v1's activation unit runs maps only) exits 2,
    naming the einsum and the engine, and an unknown --engine lists the arch's engines."""
    for engine, message in (("activation_unit", "einsum 'Z' gives engine 'activation_unit' (activation_unit: vector)"),
                            ("nope", "has no engine named 'nope'. Fix: use one of: mxu, activation_unit")):
        assert main(["search", "tpu_v1", "workloads/gemm.einsum.yaml", "--engine", engine]) == 2
        assert message in capsys.readouterr().err


CONSOLE_PROBE = """
import atexit
from accel_sim import cli

def fake_main():
    atexit.register(lambda: print(" and the exit handler it registered ran", end=""))
    print("main printed, unflushed", end="")
    return 3

cli.main = fake_main
cli.console()
"""


def test_exhaustive_search_refuses_a_space_it_cannot_finish_in_the_time_limit(capsys: pytest.CaptureFixture) -> None:
    """A 1024^3 GEMM on TPU v1 has 993 M mappings (half an hour of scoring): exhaustive search, which takes no clock,
    is refused before it starts, naming the size and the methods that honour the limit; the edge NPU's 64,512
    mappings of a small GEMM fit in the limit and are searched."""
    assert main(["search", "tpu_v1", "workloads/gemm.einsum.yaml", "--method", "exhaustive", "--time-limit", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "error: --method: einsum 'Z' on mxu has 993,484,800 mappings" in err
    assert "--method cpsat" in err and "local" in err and "Fix:" in err
    assert main(["search", "edge_npu", "workloads/gemm.einsum.yaml", "--method", "exhaustive", "--time-limit", "0.5"]) == 0
    assert "search: exhaustive," in (out := capsys.readouterr().out) and "in a space of 64,512 mappings" in out


def test_console_exits_with_main_code_after_its_exit_handlers_and_flushes_stdout() -> None:
    """The console entry point skips the interpreter's teardown, but only after the exit handlers registered while
    main ran and a flush of stdout (piped output is block-buffered): nothing printed or registered is lost."""
    done = subprocess.run([sys.executable, "-c", CONSOLE_PROBE], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "main printed, unflushed and the exit handler it registered ran"
