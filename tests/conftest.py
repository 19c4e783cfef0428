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
