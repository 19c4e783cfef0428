"""Sweeps: every point lands in the store once, bad points are recorded, resume and kill lose nothing,
and local processes, one process and a dask cluster give the same table."""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from accel_sim.cli import main
from accel_sim.dse import load_results, load_sweep, run_sweep
from accel_sim.dse.executors import DaskExecutor, LocalExecutor, aligned_chunk, sweep_chunk
from accel_sim.dse.store import export_results
from accel_sim.errors import ConfigError

DATA = Path(__file__).parent / "data"
SMALL = DATA / "small.yaml"
REPO = Path(__file__).resolve().parents[3]


def _table(store: Path) -> pd.DataFrame:
    """The store without wall-clock columns, for row-for-row comparison."""
    return load_results(store).drop(columns=["elapsed_s"]).sort_values("point_id").reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """small.yaml run once in this process, uninterrupted."""
    store = tmp_path_factory.mktemp("ref") / "ref.db"
    run_sweep(load_sweep(SMALL), store, executor=LocalExecutor(1))
    return _table(store)


def test_every_point_is_stored_once_with_its_status(reference: pd.DataFrame) -> None:
    """64 points; rows = 0 (16 points) is rejected by the arch model; area > 11.7 mm² points are infeasible."""
    assert list(reference["point_id"]) == list(range(64))
    counts = reference["status"].value_counts().to_dict()
    assert counts["invalid"] == 16
    assert set(counts) <= {"ok", "infeasible", "invalid"}
    invalid = reference[reference["status"] == "invalid"]
    assert (invalid["engines.pe_array.rows"] == 0).all()
    assert invalid["error"].str.contains("engines[0].rows", regex=False).all()
    infeasible = reference[reference["status"] == "infeasible"]
    assert (infeasible["area_mm2"] > 11.7).all() and (reference.loc[reference["status"] == "ok", "area_mm2"] <= 11.7).all()
    assert infeasible["error"].str.contains("area_mm2 <= 11.7 fails").all()


def test_two_processes_give_the_same_table(reference: pd.DataFrame, tmp_path: Path) -> None:
    """Two local worker processes finish points in any order; the table sorted by id is identical."""
    run_sweep(load_sweep(SMALL), tmp_path / "p2.db", executor=LocalExecutor(2))
    pd.testing.assert_frame_equal(_table(tmp_path / "p2.db"), reference)


def test_dask_local_cluster_gives_the_same_table(reference: pd.DataFrame, dask_client, tmp_path: Path) -> None:
    """A 2-worker dask LocalCluster produces the local executor's table row for row."""
    run_sweep(load_sweep(SMALL), tmp_path / "dask.db", executor=DaskExecutor(dask_client))
    pd.testing.assert_frame_equal(_table(tmp_path / "dask.db"), reference)


def test_existing_store_needs_resume_or_overwrite(tmp_path: Path) -> None:
    """Running into a store that holds points without --resume is refused, naming the fix."""
    store = tmp_path / "s.db"
    sweep = load_sweep(DATA / "random.yaml")
    run_sweep(sweep, store, executor=LocalExecutor(1))
    with pytest.raises(ConfigError, match="--resume"):
        run_sweep(sweep, store, executor=LocalExecutor(1))
    again = run_sweep(sweep, store, executor=LocalExecutor(1), resume=True)
    assert again.skipped == 20 and again.evaluated == 0


def test_resume_refuses_a_store_of_another_spec(tmp_path: Path) -> None:
    """A store written by random.yaml cannot be resumed with small.yaml (different spec hash)."""
    store = tmp_path / "s.db"
    run_sweep(load_sweep(DATA / "random.yaml"), store, executor=LocalExecutor(1))
    with pytest.raises(ConfigError, match="different sweep spec"):
        run_sweep(load_sweep(SMALL), store, executor=LocalExecutor(1), resume=True)


def test_store_is_wal_and_exports_csv(tmp_path: Path) -> None:
    """The store runs in WAL mode; the CSV export has one row per point and the parameter columns."""
    store = tmp_path / "s.db"
    run_sweep(load_sweep(DATA / "random.yaml"), store, executor=LocalExecutor(1))
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    frame = pd.read_csv(export_results(store, tmp_path / "out.csv"))
    assert len(frame) == 20 and "memory.global_buffer.capacity" in frame.columns
    # a folder that does not exist yet is created, as the store's is (before: pandas' OSError after the sweep)
    assert pd.read_csv(export_results(store, tmp_path / "new" / "sub" / "out.csv")).equals(frame)


def test_parquet_export_round_trips(tmp_path: Path) -> None:
    """Parquet export reads back with the same values as load_results."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (pip install .[parquet])")
    store = tmp_path / "s.db"
    run_sweep(load_sweep(DATA / "random.yaml"), store, executor=LocalExecutor(1))
    back = pd.read_parquet(export_results(store, tmp_path / "out.parquet"))
    pd.testing.assert_frame_equal(back, load_results(store))


def test_misspelt_objective_fails_before_any_row_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An objective that evaluate() does not report is a ConfigError at the spec's line when the spec loads (as
    `validate` loads it); where the load found no point to judge it on, the sweep's first finished row is checked
    and the store stays empty."""
    import accel_sim.dse.spec as spec_module

    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\narch: edge_npu\nworkloads: [gemm.einsum]\naxes:\n  - {path: engines.0.rows, values: [8]}\n"
                    "objectives: {latency_s: min, energy_uj: min}\n")
    with pytest.raises(ConfigError) as info:
        load_sweep(spec)
    assert "line 6" in str(info.value) and "energy_uj" in str(info.value) and "energy_j" in str(info.value)
    monkeypatch.setattr(spec_module, "_check_metrics_up_front", lambda sweep: None)
    with pytest.raises(ConfigError) as info:
        run_sweep(load_sweep(spec), tmp_path / "s.db", executor=LocalExecutor(1))
    assert "line 6" in str(info.value) and "energy_uj" in str(info.value)
    assert len(load_results(tmp_path / "s.db")) == 0


def _count(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sweep_killed_three_times_resumes_to_the_uninterrupted_table(reference: pd.DataFrame, tmp_path: Path) -> None:
    """SIGKILL a CLI sweep at random moments three times, resume each time: the final table equals the reference."""
    store = tmp_path / "killed.db"
    rng = random.Random(5)
    cmd = [sys.executable, "-m", "accel_sim.cli", "sweep", str(SMALL), "--store", str(store), "--workers", "1",
           "--quiet", "--no-report", "--resume"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kills = 0
    for _ in range(3):
        before = _count(store)
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        # kill after a random number of this run's own commits: a moment that does not depend on how fast the
        # machine or the model is (a random delay after the first commit let a fast sweep finish first)
        target = before + rng.randint(1, 4)
        while _count(store) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        assert _count(store) > before
    assert kills == 3, "a sweep finished before its kill: make small.yaml slower"
    assert _count(store) < 64
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pd.testing.assert_frame_equal(_table(store), reference)


def _sweep_processes(store: Path) -> list[int]:
    """Pids of live processes whose command line names `store` (a driver and its forked pool workers)."""
    psutil = pytest.importorskip("psutil")
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if str(store) in (proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def test_killed_driver_leaves_no_worker_and_resumes_to_the_same_table(reference: pd.DataFrame,
                                                                      tmp_path: Path) -> None:
    """SIGKILL a CLI sweep with two pool workers three times, once its workers run: within 10 s no process of the
    sweep is left (the workers die with their driver), and resuming gives the uninterrupted table."""
    psutil = pytest.importorskip("psutil")
    store = tmp_path / "orphans.db"
    cmd = [sys.executable, "-m", "accel_sim.cli", "sweep", str(SMALL), "--store", str(store), "--workers", "2",
           "--quiet", "--no-report", "--resume"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(3):
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        driver = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        while len(driver.children()) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the sweep finished before its workers were seen"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while _sweep_processes(store) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _sweep_processes(store) == []
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pd.testing.assert_frame_equal(_table(store), reference)


def test_a_second_sweep_on_a_store_in_use_refuses(tmp_path: Path) -> None:
    """While one sweep holds a store, a second one, with --overwrite or --resume or neither, is a ConfigError
    naming the holder's pid; once the first closes, the store opens again."""
    from accel_sim.dse.store import open_store

    store = tmp_path / "busy.db"
    with open_store(store, spec_hash="a", meta={}):
        for flags in ({}, {"overwrite": True}, {"resume": True}):
            with pytest.raises(ConfigError, match=f"another sweep \\(pid {os.getpid()}\\) is writing this store"):
                open_store(store, spec_hash="a", meta={}, **flags)
        code = main(["sweep", str(SMALL), "--store", str(store), "--overwrite", "--quiet", "--no-report"])
        assert code == 2
    with open_store(store, spec_hash="a", meta={}, resume=True):
        pass


def test_an_unreachable_dask_scheduler_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--dask to an address nobody listens on (port 9, discard) fails within the connect timeout as a ConfigError
    naming --dask and the fix, not distributed's OSError after 30 s."""
    import accel_sim.dse.executors as executors

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    began = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        run_sweep(load_sweep(SMALL), tmp_path / "s.db", executor=DaskExecutor("tcp://127.0.0.1:9"))
    assert time.monotonic() - began < 15
    assert caught.value.key_path == "--dask" and "dask scheduler" in caught.value.fix


def test_a_wrong_dask_address_leaves_no_store_behind(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`sweep --dask notanaddress` exits 2 before the store is opened: no results.db (the bad-input corpus' case
    used to leave an empty store in the repository's reports/ folder)."""
    store = tmp_path / "s" / "results.db"
    code = main(["sweep", str(SMALL), "--store", str(store), "--dask", "notanaddress", "--quiet", "--no-report"])
    assert code == 2 and "--dask" in capsys.readouterr().err
    assert not store.exists() and not store.parent.exists()


def test_progress_without_a_terminal_is_log_lines(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With stderr not a terminal (captured here) and a log interval of 0 s, every finished point writes a plain
    line 'k of 64 points', the last one 64 of 64, and no rich bar control codes."""
    import accel_sim.dse.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "LOG_EVERY_S", 0.0)
    run_sweep(load_sweep(SMALL), tmp_path / "s.db", executor=LocalExecutor(1), progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert "small-test-sweep: 1 of 64 points (2 %)" in lines[0] and "64 of 64 points (100 %)" in lines[-1]
    assert len(lines) == 65 and not any("\x1b" in line for line in lines)


def test_workers_announce_each_finished_point_and_the_table_is_unchanged(reference: pd.DataFrame,
                                                                       tmp_path: Path) -> None:
    """With two worker processes, results come back a chunk (25 points) at a time, but each worker announces every
    point it finishes: the driver's callback runs once per point (64), so a progress bar moves per point; the
    table is the one-process reference."""
    ticks: list[int] = []
    run_sweep(load_sweep(SMALL), tmp_path / "t.db", executor=LocalExecutor(2, on_point=lambda: ticks.append(1)))
    assert len(ticks) == 64
    pd.testing.assert_frame_equal(_table(tmp_path / "t.db"), reference)


def test_progress_with_workers_counts_every_point_once(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress with two workers (log lines, 0 s interval): one line per announced point, ending at 64 of 64,
    not a count doubled by the chunk results the driver also commits."""
    import accel_sim.dse.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "LOG_EVERY_S", 0.0)
    run_sweep(load_sweep(SMALL), tmp_path / "w.db", executor=LocalExecutor(2), progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 65 and "64 of 64 points (100 %)" in lines[-1]


def test_sweep_chunks_keep_each_run_of_the_fastest_axis_together() -> None:
    """aligned_chunk: the largest multiple of the run length up to the chunk size (the size itself when one run is
    longer); tpu_array_resnet50's runs are its 4 buffer sizes, so its chunks are 24 points, never 25."""
    assert [aligned_chunk(g, 25) for g in (1, 4, 5, 7, 25, 26, 100)] == [25, 24, 25, 21, 25, 25, 25]
    assert load_sweep(Path(__file__).parents[3] / "dse" / "tpu_array_resnet50.yaml").neighbour_points == 4


def test_tasks_keep_rescored_runs_together_and_are_otherwise_small_enough_to_balance() -> None:
    """sweep_chunk by hand. bench_resnet50_500 (500 points; its fastest axis, the clock, in runs of 5): its last
    three axes (DRAM and Unified Buffer bandwidths, clock) change only what the scorer reads, so 5 x 5 x 5 = 125
    consecutive points re-score one search, and its tasks stay 25 points. tpu_array_resnet50 (200 points in runs of
    4 buffer sizes): a capacity is in the search key, so no two runs share a search; ceil(200 / 32) = 7 points a
    task, rounded down to whole runs: 4. A run longer than the task size is still cut at it (26 -> 25)."""
    dse = Path(__file__).parents[3] / "dse"
    bench, array = load_sweep(dse / "bench_resnet50_500.yaml"), load_sweep(dse / "tpu_array_resnet50.yaml")
    assert (bench.neighbour_points, bench.rescored_points) == (5, 125)
    assert (array.neighbour_points, array.rescored_points) == (4, 1)
    assert sweep_chunk(500, 5, 125) == 25 and sweep_chunk(200, 4, 1) == 4
    assert sweep_chunk(10_000, 4, 1) == 24   # 313 points a task would be balanced; 25 caps it, in whole runs
    assert sweep_chunk(200, 26, 1) == 25 and sweep_chunk(6, 1, 1) == 1 and sweep_chunk(40, 4, 1) == 4


def test_a_point_an_execution_model_refuses_names_the_arch_and_the_axis(tmp_path: Path) -> None:
    """execution: fpga on TPU v1 (no FPGA engine) is refused as the design's arch loads: the point's row names the
    arch file and the axis assignment (before, it failed inside the execution model: '<input> at
    'execution.engine'')."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\narch: tpu_v1\nworkloads: [gemm.einsum]\n"
                    "axes:\n  - {path: execution, values: [sequential, fpga]}\n")
    run_sweep(load_sweep(spec), tmp_path / "s.db", executor=LocalExecutor(1))
    table = load_results(tmp_path / "s.db").set_index("execution")
    assert table.loc["sequential", "status"] == "ok" and table.loc["fpga", "status"] == "invalid"
    error = table.loc["fpga", "error"]
    assert "tpu_v1.yaml at 'execution': --set 'execution=fpga'" in error and "<input>" not in error
