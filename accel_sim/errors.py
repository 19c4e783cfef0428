"""Errors that reach users: each names where the problem is and how to fix it."""
from __future__ import annotations

from pathlib import Path


class AccelSimError(Exception):
    """Base of every error accel-sim raises on purpose (the CLI turns these into exit code 2)."""


class ConfigError(AccelSimError):
    """Bad user input: a config, workload or model file that cannot be used as written."""

    def __init__(
        self,
        problem: str,
        *,
        fix: str,
        file: str | Path | None = None,
        line: int | None = None,
        key_path: str = "",
    ) -> None:
        self.problem = problem.rstrip(".")
        self.fix = fix.rstrip(".")
        self.file = str(file) if file is not None else None
        self.line = line
        self.key_path = key_path
        super().__init__(self.message())

    def message(self) -> str:
        """One paragraph: location, key path, problem, fix."""
        if self.file is None and self.key_path.startswith("--"):  # a command-line option: named as typed
            return f"{self.key_path}: {self.problem}. Fix: {self.fix}."
        where = self.file or "<input>"
        if self.line is not None:
            where += f", line {self.line}"
        key = f" at '{self.key_path}'" if self.key_path else ""
        return f"{where}{key}: {self.problem}. Fix: {self.fix}."


class InfeasibleError(AccelSimError):
    """A mapping or schedule that no assignment can satisfy; the message names the constraints."""
