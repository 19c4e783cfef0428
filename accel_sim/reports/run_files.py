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
    for key in (k for k in NUMBERS if k in summary or k in REQUIRED_NUMBERS):
        if not is_number(summary.get(key)):
            raise ConfigError(f"'{key}' is {summary.get(key)!r}, not a number" if key in summary else
                              f"the summary has no '{key}'", file=summary_path, key_path=key,
                              fix="give the summary.json that `accel-sim run -o DIR` writes (rerun it to rewrite one)")
    beside = summary_path.name == SUMMARY_FILE  # another JSON file may sit among unrelated CSVs
    record = read_json(folder / RECORD_FILE, required=False) if beside else None
    if record is not None and not _is_record(record):
        raise ConfigError("not a run record (no title, or no design with a clock and memory levels)",
                          file=folder / RECORD_FILE, fix="rerun `accel-sim run -o DIR` to rewrite it, or delete it")
    return RunFiles(path, summary, record, read_csv(folder / EINSUM_FILE) if beside else [],
                    read_csv(folder / TIMELINE_FILE) if beside else [])


# The summary keys the reports read as numbers: those every run writes, and those some runs add.
REQUIRED_NUMBERS = ("latency_s", "energy_j", "throughput_per_s", "area_mm2")
NUMBERS = REQUIRED_NUMBERS + ("cycles", "total_macs", "mac_utilization", "tokens_per_s")


def is_number(value: object) -> bool:
    """Whether a JSON or CSV value is a number (true and false are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_record(record: object) -> bool:
    """Whether run.json has what the reports read from it."""
    if not isinstance(record, dict) or not isinstance(record.get("title"), str):
        return False
    design = record.get("design")
    return (isinstance(design, dict) and is_number(design.get("clock_hz"))
            and isinstance(design.get("memory"), list)
            and all(isinstance(m, dict) and isinstance(m.get("name"), str) for m in design["memory"]))


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
        reader = csv.DictReader(handle)
        rows = []
        for row in reader:
            if None in row or None in row.values():   # DictReader's marks of too many or too few fields
                raise ConfigError(f"row {reader.line_num} has {len(reader.fieldnames or [])} columns in its header "
                                  f"but a different number of fields", file=path, line=reader.line_num,
                                  fix="rerun `accel-sim run -o DIR` to rewrite it, or delete the file")
            rows.append({k: _number(v) for k, v in row.items()})
        return rows


def _number(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text


def number(row: Mapping[str, Any], key: str) -> float:
    """A numeric field of a summary or CSV row as a float; NaN when absent or empty."""
    value = row.get(key)
    return float(value) if is_number(value) else float("nan")
