"""The run report's roofline drawn in a forked child equals the one drawn in-process (same PNG size and data); the
child never outlives a caller that no longer waits for it."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from accel_sim.cli import main
from accel_sim.reports.plots import RooflineData, write_roofline
from accel_sim.reports.render import FigureWorker


def small_roofline() -> RooflineData:
    """One engine ceiling, one memory slope, two einsum points (values chosen by hand)."""
    points = {"level": np.array(["dram", "dram"]), "ops": np.array([1e9, 4e9]),
              "bound_bytes": np.array([1e8, 1e7]), "achieved_bytes": np.array([2e8, 1e7]),
              "bound_s": np.array([1e-3, 1e-3]), "achieved_s": np.array([2e-3, 1.5e-3])}
    return RooflineData("test", (("pe peak 1 Top/s", 1e12),), (("dram 100 GB/s", 1e11),), points)


def test_child_and_in_process_drawings_are_the_same_image(tmp_path: Path) -> None:
    """The child process draws exactly the PNG the parent would (deterministic Agg rendering)."""
    FigureWorker().draw(small_roofline(), tmp_path / "child.png", dpi=60)
    write_roofline(small_roofline(), tmp_path / "parent.png", dpi=60)
    assert (tmp_path / "child.png").read_bytes() == (tmp_path / "parent.png").read_bytes()


def test_a_drawing_failure_in_the_child_is_raised_in_the_parent(tmp_path: Path) -> None:
    """A path the child cannot write surfaces as an error naming the path, not as a missing file."""
    with pytest.raises(RuntimeError, match="missing-dir"):
        FigureWorker().draw(small_roofline(), tmp_path / "missing-dir" / "x.png", dpi=60)


def test_a_worker_whose_parent_end_closes_stops_its_child() -> None:
    """The child reads the end of file once the parent's end of the pipe is closed (a caller that dropped the worker,
    or died), because it closed its own inherited copy of that end; before, it kept the pipe open and waited forever."""
    worker = FigureWorker()
    process = worker._process
    assert process is not None and process.is_alive()
    worker._conn.close()
    process.join(timeout=30)
    assert not process.is_alive()


def test_a_failed_run_in_process_leaves_no_child(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`accel-sim run` called in-process (a notebook, a test, the fuzzer) on a workload that does not exist exits 2
    and leaves no drawing child behind: the fuzzer's in-process runs once left hundreds of them waiting."""
    before = {p.pid for p in multiprocessing.active_children()}
    assert main(["run", "arch_configs/tpu_v1.yaml", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "out")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert {p.pid for p in multiprocessing.active_children()} <= before
