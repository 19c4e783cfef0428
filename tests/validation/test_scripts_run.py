"""The validation scripts run both as `python -m validation.NAME` and as `python validation/NAME.py`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("form", ["module", "file"])
def test_flightllm_runs_as_module_and_as_file(form: str, tmp_path: Path) -> None:
    """Both invocations print the same comparison table (FlightLLM: about a second); the file form runs from
    another folder with nothing on PYTHONPATH, so only the script's own path guard makes `validation` importable."""
    if form == "module":
        command, cwd, env = [sys.executable, "-m", "validation.flightllm"], ROOT, os.environ
    else:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        command, cwd = [sys.executable, str(ROOT / "validation" / "flightllm.py")], tmp_path
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "VHK158 decode (tokens/s)" in done.stdout and "U280 on-board decode" in done.stdout
