"""Argument types the subcommands share: each rejects a bad value at parse time with the fix (argparse exits 2)."""
from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path


def output_folder(text: str) -> Path:
    """A report folder: new or an existing folder, never an existing file; one it could not create is refused."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder. Fix: give a new or existing folder")
    problem = unwritable(path)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}. Fix: give a folder under one you can write to")
    return path


def output_file(text: str) -> Path:
    """A file the command writes (a store, an export): new or an existing file, never a folder, in a folder that
    exists or can be created."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file. Fix: give a file path, e.g. "
                                         f"{path / 'results.db'}")
    problem = unwritable(path.parent) if path.exists() else unwritable(path)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}. Fix: give a path in a folder you can write to")
    return path


def unwritable(path: Path) -> str | None:
    """Why `path` (a folder or file to create, or an existing folder) cannot be written, or None if it can.

    Judged at the nearest folder that exists: it must be a folder (not a file) and accept a new entry. The test
    creates and removes a temporary file there, since permission bits do not tell (root passes every access check,
    yet /proc refuses new files)."""
    target = Path(os.path.abspath(path))
    ancestor = target
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so {path} cannot be created under it"
    try:
        handle, probe = tempfile.mkstemp(dir=ancestor, prefix=".accel-sim-probe-")
    except OSError as exc:
        where = "" if ancestor == target else f" (to create {path})"
        return f"cannot write in the folder {ancestor}{where}: {exc.strerror or exc}"
    os.close(handle)
    os.unlink(probe)
    return None


def positive_int(text: str) -> int:
    """An integer >= 1 (process counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number. Fix: give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1. Fix: give 1 or more")
    return value


def positive_seconds(text: str) -> float:
    """A finite time limit > 0 in seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds. Fix: give e.g. 1.0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds above 0. Fix: give e.g. 1.0")
    return value


def metric_tolerance(text: str) -> tuple[str, float]:
    """METRIC=VALUE (or VALUE alone: every metric) -> (metric or '*', a finite tolerance >= 0)."""
    name, _, value = text.rpartition("=")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not METRIC=VALUE. Fix: e.g. --atol stall_cycles=10") from None
    if not (math.isfinite(number) and number >= 0):
        raise argparse.ArgumentTypeError(f"{text}: a tolerance is a finite number >= 0. Fix: e.g. --atol cycles=1")
    return name or "*", number
