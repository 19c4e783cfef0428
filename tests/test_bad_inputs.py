"""Every broken input in tests/data/bad/ makes the CLI exit 2 with file, key path and fix, no traceback.

Each case is a file plus a sidecar `<stem>.expect.yaml`: `args` (CLI arguments, `{file}` is the bad file)
and `contains` (substrings the error paragraph must hold); `requires_missing` names an optional package the case
needs absent (it is skipped where that package is installed).
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accel_sim.cli import main

BAD = Path(__file__).parent / "data" / "bad"
EXPECT_SUFFIX = ".expect.yaml"


def _cases() -> list[tuple[Path, dict]]:
    cases = []
    for expect in sorted(BAD.glob(f"*{EXPECT_SUFFIX}")):
        stem = expect.name[: -len(EXPECT_SUFFIX)]
        matches = [p for p in BAD.iterdir() if p.name.startswith(stem + ".") and p != expect]
        cases.append((matches[0] if matches else expect, yaml.safe_load(expect.read_text())))
    return cases


CASES = _cases()


def test_corpus_has_at_least_a_hundred_cases() -> None:
    """Issue 16 asks for at least 100 broken inputs."""
    assert len(CASES) >= 100


@pytest.mark.parametrize(("bad_file", "expect"), CASES, ids=[c[0].name for c in CASES])
def test_bad_input_exits_2_with_location_and_fix(bad_file: Path, expect: dict, capsys: pytest.CaptureFixture) -> None:
    """The error names the file, the key path or line, and says how to fix it."""
    if expect.get("requires_missing") and importlib.util.find_spec(expect["requires_missing"]) is not None:
        pytest.skip(f"{expect['requires_missing']} is installed: the case needs it missing")
    args = [a.replace("{file}", str(bad_file.relative_to(BAD.parents[2]))) for a in expect["args"]]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "Fix:" in err
    for text in expect["contains"]:
        assert text in err, f"{text!r} missing from: {err}"


def test_console_script_exit_code_is_2_without_traceback(tmp_path: Path) -> None:
    """A real process (not just main()) exits 2 and prints no traceback on a bad config."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nclock: 1 GHz\nclock: 2 GHz\n")
    proc = subprocess.run([sys.executable, "-m", "accel_sim.cli", "validate", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "duplicate key 'clock'" in proc.stderr and "line 3" in proc.stderr
