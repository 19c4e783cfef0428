"""Shared fixtures: repository paths; the hypothesis profile (deterministic unless asked otherwise)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Arch names the engine union only in an annotation (specs sit below engines); the public API imports the
# engines first (accel_sim/__init__.py), and tests that call Arch.model_validate directly need the same, whatever
# order they run in (tests/test_import_cost.py checks the public path in fresh interpreters)
import accel_sim.engines  # noqa: E402,F401

# CI draws the same examples every run (a property test's failure is then a change, not luck); explore with
# HYPOTHESIS_PROFILE=explore pytest ... (fresh random examples each run)
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO.parent / "shared" / "models"


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI paths in tests are relative to the repository root."""
    monkeypatch.chdir(REPO)


# pytest.approx keeps an absolute tolerance of 1e-12 even when only `rel` is given, so any two energies in
# picojoules or times in nanoseconds compare equal (a MAC energy of 1.765 pJ passed as 1.598 pJ at rel=1e-9).
# Here a comparison is relative unless it gives `abs` itself; an expected exact zero keeps pytest's default.
_pytest_approx = pytest.approx


def _relative_approx(expected: object, rel: float | None = None, abs: float | None = None,  # noqa: A002
                     nan_ok: bool = False) -> object:
    """pytest.approx with no absolute tolerance unless asked for (or the expected value is exactly zero)."""
    if abs is None and not (isinstance(expected, (int, float)) and expected == 0):
        abs = 0.0  # noqa: A001
        rel = 1e-6 if rel is None else rel   # pytest's default, which it drops once `abs` is given
    return _pytest_approx(expected, rel=rel, abs=abs, nan_ok=nan_ok)


pytest.approx = _relative_approx
