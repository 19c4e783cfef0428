"""Fuzzing (issue 16): every shipped arch config, workload recipe, einsum cascade and sweep spec, mutated.

One mutation per example: a key dropped, a key renamed, a value replaced by one of another type, by an extreme
number or by a non-finite one. Each mutated file goes through the command that reads it, in process (cli.main):
an arch runs a small workload, a cascade runs on TPU v1, a recipe is summarised, a sweep spec is validated (which
builds one design). Every outcome must be exit 2 with an error paragraph, or exit 0 with finite numbers; an
exception escaping main() is a crash the fuzzer found.

CI runs a fixed budget: FUZZ_EXAMPLES examples per file (3), derandomized, so every run tries the same mutations.
ACCEL_SIM_FUZZ_EXAMPLES=200 runs a larger, random campaign.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_sim.cli import main

ROOT = Path(__file__).resolve().parents[1]
FUZZ_EXAMPLES = int(os.environ.get("ACCEL_SIM_FUZZ_EXAMPLES", "3"))
SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                    derandomize="ACCEL_SIM_FUZZ_EXAMPLES" not in os.environ,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ARCHES = sorted(ROOT.glob("arch_configs/**/*.yaml"))
EINSUMS = sorted(ROOT.glob("workloads/*.einsum.yaml"))
RECIPES = sorted(p for p in ROOT.glob("workloads/*.yaml") if not p.name.endswith(".einsum.yaml"))
SWEEPS = sorted(ROOT.glob("dse/*.yaml"))
# Metrics a finished run must report as finite numbers.
TOTALS = ("cycles", "latency_s", "energy_j", "area_mm2", "throughput_per_s", "edp_js")

WRONG_TYPES = ("x", "12 parsecs", True, None, [1, 2], {"a": 1}, "")
EXTREMES = (0, -1, 1, 2**63, 10**15, 1e300, -1e300, 1e-300, 0.5)
NON_FINITE = (math.inf, -math.inf, math.nan)


def _key_paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in nested mappings and lists (the root excluded)."""
    paths = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        paths.append(prefix + (key,))
        paths += _key_paths(value, prefix + (key,))
    return paths


def _mutated(data: Any, path: tuple, op: str, value: Any) -> Any:
    """A copy of `data` with the entry at `path` dropped, renamed or replaced by `value`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(data) if isinstance(data, dict) else list(data)
    if rest:
        copy[head] = _mutated(copy[head], rest, op, value)
    elif op == "drop":
        del copy[head]
    elif op == "rename" and isinstance(copy, dict):
        copy = {(f"{k}x" if k == head else k): v for k, v in copy.items()}
    else:
        copy[head] = value
    return copy


@st.composite
def mutations(draw: st.DrawFn, data: Any) -> tuple[Any, str]:
    """One mutation of `data` and its description (shown when an example fails)."""
    path = draw(st.sampled_from(_key_paths(data)))
    op = draw(st.sampled_from(("drop", "rename", "wrong_type", "extreme", "non_finite")))
    value = draw(st.sampled_from({"wrong_type": WRONG_TYPES, "extreme": EXTREMES,
                                  "non_finite": NON_FINITE}.get(op, (None,))))
    return _mutated(data, path, op, value), f"{op} at {'.'.join(map(str, path))} ({value!r})"


def _absolute_paths(spec: dict, folder: Path) -> dict:
    """A sweep spec whose arch and workloads written relative to its folder are absolute (it is written elsewhere)."""
    def fixed(name: Any) -> Any:
        return str((folder / name).resolve()) if isinstance(name, str) and (folder / name).exists() else name
    return {**spec, "arch": fixed(spec.get("arch")),
            "workloads": [fixed(w) for w in spec.get("workloads", [])]}


def _check_outcome(args: list[str], capsys: pytest.CaptureFixture, what: str) -> None:
    """Exit 2 with an error paragraph and no traceback, or exit 0 with finite totals (when it printed JSON)."""
    code = main(args)
    out, err = capsys.readouterr()
    assert code in (0, 2), f"{what}: exit {code}\n{err}"
    assert "Traceback" not in err, f"{what}: {err}"
    if code == 2:
        assert err.startswith("error: ") and len(err) > 20, f"{what}: no message: {err!r}"
        return
    if "--json" in args:
        assert "NaN" not in out and "Infinity" not in out, f"{what}: non-finite number in {out}"
        summary = json.loads(out)
        for key in TOTALS:
            if key in summary:
                assert isinstance(summary[key], (int, float)) and math.isfinite(summary[key]), \
                    f"{what}: {key} = {summary[key]!r}"


def _write(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _arch_workload(arch: dict) -> list[str]:
    """A small workload the arch's execution model takes: one decode layer for NPU+PIM designs, else a GEMM."""
    execution = arch.get("execution") if isinstance(arch, dict) else None
    kind = execution.get("kind") if isinstance(execution, dict) else execution
    if kind == "npu_pim":
        return ["workloads/llama2-7b-decode.yaml", "--set", "workload.n_layers=1"]
    return ["workloads/gemm.einsum.yaml"]


def _fuzz(base: Any, name: str, tmp_path: Path, capsys: pytest.CaptureFixture,
          command: Callable[[Path], list[str]]) -> None:
    """Write each mutation of `base` to tmp_path/name and check the outcome of the CLI `command(path)`."""

    @SETTINGS
    @given(case=mutations(base))
    def run(case: tuple[Any, str]) -> None:
        data, what = case
        _check_outcome(command(_write(tmp_path, name, data)), capsys, f"{name}: {what}")

    run()


@pytest.mark.parametrize("source", ARCHES, ids=lambda p: str(p.relative_to(ROOT)))
def test_mutated_arch_config_exits_2_or_gives_finite_results(source: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    """A mutated arch config runs a small workload to exit 2 with a message or finite totals."""
    base = yaml.safe_load(source.read_text())
    _fuzz(base, source.name, tmp_path, capsys,
          lambda path: ["run", str(path), *_arch_workload(base), "-o", str(tmp_path / "out"), "--json"])


@pytest.mark.parametrize("source", EINSUMS, ids=lambda p: p.name)
def test_mutated_einsum_cascade_exits_2_or_gives_finite_results(source: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    """A mutated einsum cascade runs on TPU v1 to exit 2 with a message or finite totals."""
    _fuzz(yaml.safe_load(source.read_text()), source.name, tmp_path, capsys,
          lambda path: ["run", "arch_configs/tpu_v1.yaml", str(path), "-o", str(tmp_path / "out"), "--json"])


@pytest.mark.parametrize("source", RECIPES, ids=lambda p: p.name)
def test_mutated_recipe_exits_2_or_loads(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A mutated workload recipe is summarised (built and checked) or exits 2 with a message."""
    _fuzz(yaml.safe_load(source.read_text()), source.name, tmp_path, capsys,
          lambda path: ["workload", str(path), "--json"])


@pytest.mark.parametrize("source", SWEEPS, ids=lambda p: p.name)
def test_mutated_sweep_spec_exits_2_or_validates(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A mutated sweep spec validates (schema, paths, size, one design built) or exits 2 with a message."""
    _fuzz(_absolute_paths(yaml.safe_load(source.read_text()), source.parent), source.name, tmp_path, capsys,
          lambda path: ["validate", str(path)])
