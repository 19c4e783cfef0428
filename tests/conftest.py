"""Shared fixtures: repository paths; the hypothesis profile (deterministic unless asked otherwise)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

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
