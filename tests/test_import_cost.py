"""What importing accel-sim loads (issue 20, start-up): heavy dependencies load on first use, not on import.

Each check runs a fresh interpreter and reads its `sys.modules`, so it pins behaviour (which modules load), not
wall-clock time; benchmarks/bench_startup.py measures the time.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("ortools", "pandas", "matplotlib", "onnx", "simpy", "scipy", "plotly", "dask", "optuna")


def loaded_after(code: str) -> set[str]:
    """Top-level names of the modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_accel_sim_loads_no_heavy_dependency() -> None:
    """`import accel_sim` loads none of the heavy dependencies, nor numpy or pydantic (the API loads on use)."""
    loaded = loaded_after("import accel_sim")
    assert loaded.isdisjoint({*HEAVY, "numpy", "pydantic"}), sorted(loaded & {*HEAVY, "numpy", "pydantic"})


def test_cli_module_loads_no_pipeline() -> None:
    """Importing the CLI (what `accel-sim --help` does) loads neither the pipeline's numpy nor pydantic."""
    loaded = loaded_after("import accel_sim.cli")
    assert loaded.isdisjoint({*HEAVY, "numpy", "pydantic"}), sorted(loaded & {*HEAVY, "numpy", "pydantic"})


def test_evaluating_a_sequential_run_loads_no_heavy_dependency() -> None:
    """A whole sequential `evaluate` (load, map, cost) needs no solver, DataFrame, plotting or ONNX library."""
    loaded = loaded_after("import accel_sim\n"
                          "accel_sim.evaluate(accel_sim.load_arch('arch_configs/tpu_v1.yaml'),"
                          " accel_sim.load_workload('workloads/gemm.einsum.yaml')).summary()")
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("first", ["import accel_sim.evaluate", "from accel_sim.evaluate import Result"])
def test_public_evaluate_stays_the_function_after_its_module_is_imported(first: str) -> None:
    """`accel_sim.evaluate` is the function even when the submodule of the same name was imported first."""
    probe = f"{first}\nimport accel_sim\nprint(callable(accel_sim.evaluate), type(accel_sim.evaluate).__name__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    assert done.stdout.split() == ["True", "function"]


def test_unknown_attribute_raises_attribute_error() -> None:
    """A name outside the public API is an AttributeError, as for any module."""
    import accel_sim

    with pytest.raises(AttributeError, match="no attribute 'not_an_api'"):
        accel_sim.not_an_api  # noqa: B018


@pytest.mark.parametrize("code", [
    "from accel_sim import load_arch\nload_arch('arch_configs/edge_npu.yaml')",
    "import accel_sim.energy.model\nfrom accel_sim import load_arch\nload_arch('arch_configs/tpu_v1.yaml')",
])
def test_the_public_loader_works_first_in_a_fresh_interpreter(code: str) -> None:
    """Lazy loading must not leave `Arch` half-built: the engine union completes it whichever public name is used
    first (a fresh interpreter that only loads an arch once raised pydantic's 'Arch is not fully defined')."""
    loaded_after(code)


def test_validate_an_arch_as_the_first_command() -> None:
    """`accel-sim validate ARCH` in a fresh process (its loader path never imports the evaluator) exits 0."""
    done = subprocess.run([sys.executable, "-m", "accel_sim.cli", "validate", "arch_configs/tpu_v1.yaml"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0 and "ok  arch_configs/tpu_v1.yaml" in done.stdout, done.stderr
