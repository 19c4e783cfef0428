"""Shared fixtures: repository paths."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = REPO.parent / "shared" / "models"


@pytest.fixture(autouse=True)
def _run_from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """CLI paths in tests are relative to the repository root."""
    monkeypatch.chdir(REPO)
