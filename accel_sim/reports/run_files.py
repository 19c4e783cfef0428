"""A run folder read back: what `accel-sim run -o DIR` wrote (summary.json, run.json, per_einsum.csv, timeline.csv),
as plain data for the run report and the comparison page. A bare summary.json reads as a run without the rest."""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from accel_sim.errors import ConfigError
from accel_sim.reports.tables import TIMELINE_FILE
from accel_sim.reports.view import RECORD_FILE, short_name

SUMMARY_FILE = "summary.json"
EINSUM_FILE = "per_einsum.csv"


@dataclass(frozen=True)
class RunFiles:
    """One run as its files hold it: the summary, the run record (None in folders older than run.json), the
    per-einsum rows and the timeline's spans (none for runs whose engines never overlap)."""

    path: Path
    summary: dict[str, Any]
    record: dict[str, Any] | None
    rows: list[dict[str, Any]]
    spans: list[dict[str, Any]]

    @property
    def title(self) -> str:
        """'<workload> on <arch>', as the run's own report is titled."""
        if self.record:
            return str(self.record["title"])
        return f"{short_name(str(self.summary.get('workload', '?')))} on {self.summary.get('arch', '?')}"

    @property
    def clock_hz(self) -> float:
        """The arch clock: from run.json, else implied by the summary (cycles over latency)."""
        if self.record:
            return float(self.record["design"]["clock_hz"])
        latency = float(self.summary.get("latency_s") or 0)
        return float(self.summary.get("cycles") or 0) / latency if latency > 0 else 1.0

    @property
    def levels(self) -> list[str]:
        """Memory levels outer to inner: from run.json, else the per-einsum CSV's '<level>_bytes' columns."""
        if self.record:
            return [m["name"] for m in self.record["design"]["memory"]]
        first = self.rows[0] if self.rows else {}
        return [c.removesuffix("_bytes") for c in first if c.endswith("_bytes") and c != "bytes"]


def read_run(path: str | Path) -> RunFiles:
    """A run folder, or a summary.json (with run.json and the CSVs beside it when it is a run folder's own)."""
    path = Path(path)
    if path.is_dir():
        folder, summary_path = path, path / SUMMARY_FILE
    elif path.suffix == ".json" and path.is_file():
        folder, summary_path = path.parent, path
    else:
        raise ConfigError("not a run folder or a run's summary.json" if path.exists() else "file not found",
                          file=path, fix="give a folder written by `accel-sim run -o DIR` (or its summary.json)")
    summary = read_json(summary_path, required=True)
    if not isinstance(summary, dict) or not isinstance(summary.get("workload"), str):
        raise ConfigError("not a run summary (no 'workload' name)", file=summary_path, line=1, key_path="workload",
                          fix="give the summary.json that `accel-sim run -o DIR` writes")
    beside = summary_path.name == SUMMARY_FILE  # another JSON file may sit among unrelated CSVs
    return RunFiles(path, summary, read_json(folder / RECORD_FILE, required=False) if beside else None,
                    read_csv(folder / EINSUM_FILE) if beside else [], read_csv(folder / TIMELINE_FILE) if beside else [])


def read_json(path: Path, required: bool) -> Any:
    """A JSON file `accel-sim run` wrote; None when absent and not `required` (ConfigError when required)."""
    if not path.exists():
        if required:
            raise ConfigError(f"the folder holds no {path.name}", file=path.parent,
                              fix="give a folder written by `accel-sim run -o DIR`, or a sweep store")
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno,
                          fix="rerun `accel-sim run -o DIR` to rewrite it") from None


def read_csv(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV file that `accel-sim run` wrote, numbers as floats; none when the file is absent."""
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def _number(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text


def number(row: Mapping[str, Any], key: str) -> float:
    """A numeric field of a summary or CSV row as a float; NaN when absent or empty."""
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")
