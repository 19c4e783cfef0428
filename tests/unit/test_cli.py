"""The accel-sim CLI: run writes a report, --json prints machine-readable output, list and validate work."""
from __future__ import annotations

import json
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


def test_set_override_changes_the_result(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Halving the DRAM bandwidth of a DRAM-bound decode step doubles its DRAM-bound cycles."""
    args = ["run", "tpu_v1", "workloads/llama2-7b-decode.yaml", "--json", "-o", str(tmp_path)]
    assert main(args) == 0
    base = json.loads(capsys.readouterr().out)
    assert main(args + ["--set", "memory.0.bandwidth=17 GB/s"]) == 0
    slow = json.loads(capsys.readouterr().out)
    dram = next(iter(base["cycles_by_bound"]))
    assert slow["cycles"] > 1.5 * base["cycles"], (dram, base, slow)


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
    """Every shipped arch config and workload file validates."""
    root = Path.cwd()
    files = sorted(str(p.relative_to(root)) for p in [*root.glob("arch_configs/*.yaml"), *root.glob("workloads/*.yaml")])
    assert files
    assert main(["validate", *files]) == 0
    assert capsys.readouterr().out.count("ok ") == len(files)


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
])
def test_bad_option_values_exit_2_with_the_fix(args: list[str], message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    """An output path that is a file, a negative time limit and zero processes are refused before any work."""
    existing = tmp_path / "file"
    existing.write_text("")
    with pytest.raises(SystemExit) as exited:
        main([a.replace("{file}", str(existing)) for a in args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Fix:" in err
