"""Argument types the subcommands share: each rejects a bad value at parse time with the fix (argparse exits 2)."""
from __future__ import annotations

import argparse
import math
from pathlib import Path


def output_folder(text: str) -> Path:
    """A report folder: new or an existing folder, never an existing file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder. Fix: give a new or existing folder")
    return path


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
