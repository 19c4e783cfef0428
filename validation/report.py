"""One validation report: every comparison of every registered script against its target (validation/targets.py).

`python -m validation` runs each script in REGISTRY (each module's `rows()` returns `Comparison`s, all obtained
through `accel_sim.evaluate`), writes validation/REPORT.md and validation/report.json, and with `--check` fails
when the new numbers regress against the committed report.json: a met target no longer met, an error whose
magnitude grew by more than ERROR_GROWTH_POINTS, or a row added or dropped without regenerating the report.
Adding a validation script's rows is one line: its module name in REGISTRY, its targets in targets.py.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from validation.comparison import Comparison
from validation.targets import TARGETS, Target

ROOT = Path(__file__).resolve().parent
REPORT_MD = ROOT / "REPORT.md"
REPORT_JSON = ROOT / "report.json"
COMMAND = "python -m validation"
# A change of an error's magnitude by more than this many percentage points is a regression (issue 17 item 4).
ERROR_GROWTH_POINTS = 2.0

# The validation scripts whose rows the report holds, in report order: one line each.
REGISTRY: tuple[str, ...] = (
    "fusemax",
    "neupims",
    "flightllm",
    "intar",
    "tmac",
    "lut_tensor_core",
    "buffer_sweep",
    "silicon",
    "gpu",
    "versus_gpu",
)


@dataclass(frozen=True)
class Row:
    """One report row: the comparison, its target and whether it is met."""

    key: str
    published: float
    ours: float
    error_pct: float
    tolerance_pct: float
    met: bool
    note: str

    @classmethod
    def of(cls, module: str, comparison: Comparison) -> Row:
        """The row of `comparison` from `module`, judged against its target (KeyError names a missing one)."""
        key = f"{module}: {comparison.quantity}"
        target = target_of(key)
        return cls(key, comparison.published, comparison.ours, comparison.error_pct, 100 * target.tolerance,
                   abs(comparison.error) <= target.tolerance + 1e-12, comparison.note)


def target_of(key: str) -> Target:
    """The target of a row key; a row without one is an error, never a silent pass."""
    if key not in TARGETS:
        raise KeyError(f"validation row '{key}' has no target. Fix: add it to validation/targets.py TARGETS with "
                       f"its tolerance and the reason for it")
    return TARGETS[key]


def module_rows(module: str) -> list[Row]:
    """The judged rows of one registered validation script (`validation.<module>.rows()`)."""
    script = importlib.import_module(f"validation.{module}")
    judged = [Row.of(module, c) for c in script.rows()]
    keys = [r.key for r in judged]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"validation.{module}.rows() names {', '.join(repeated)} more than once. Fix: give each "
                         f"Comparison a unique quantity (the report and its targets are keyed by it)")
    return judged


def collect(modules: tuple[str, ...] = REGISTRY) -> list[Row]:
    """Every row of every registered script, judged against its target."""
    return [row for module in modules for row in module_rows(module)]


def to_json(rows: list[Row]) -> dict:
    """The machine-readable report: provenance and one entry per row key (no wall-clock fields)."""
    return {"_meta": {"command": COMMAND, "targets": "validation/targets.py",
                      "regression_rule": f"a met target must stay met; |error| may not grow by more than "
                                         f"{ERROR_GROWTH_POINTS:g} percentage points"},
            "rows": {r.key: {k: v for k, v in asdict(r).items() if k != "key"} for r in rows}}


def regressions(rows: list[Row], committed: dict) -> list[str]:
    """What got worse against a committed report.json: lost targets, errors grown beyond the allowance, rows
    added or dropped without regenerating the report."""
    old = committed["rows"]
    found = []
    for r in rows:
        if r.key not in old:
            found.append(f"{r.key}: not in the committed report. Fix: run `{COMMAND}` and commit REPORT.md and "
                         f"report.json")
            continue
        before = old[r.key]
        if before["met"] and not r.met:
            found.append(f"{r.key}: target {r.tolerance_pct:g} % was met ({before['error_pct']:+.1f} %) and is "
                         f"not now ({r.error_pct:+.1f} %)")
        elif abs(r.error_pct) > abs(before["error_pct"]) + ERROR_GROWTH_POINTS:
            found.append(f"{r.key}: error grew from {before['error_pct']:+.1f} % to {r.error_pct:+.1f} % "
                         f"(more than {ERROR_GROWTH_POINTS:g} points)")
    dropped = sorted(set(old) - {r.key for r in rows})
    found += [f"{key}: in the committed report but no longer produced. Fix: run `{COMMAND}` and commit"
              for key in dropped]
    return found


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(rows: list[Row]) -> str:
    """REPORT.md: the table of every row, then the unmet targets as gaps with their mechanism, then the reasons."""
    met = sum(r.met for r in rows)
    lines = ["# Validation report", "",
             f"Generated by `{COMMAND}` (validation/report.py); targets and their reasons: validation/targets.py. "
             f"Do not edit by hand. {met} of {len(rows)} targets met.", "",
             "| quantity | published | ours | error % | target | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        note = f" ({_md_cell(r.note)})" if r.note else ""
        lines.append(f"| {_md_cell(r.key)}{note} | {r.published:.4g} | {r.ours:.4g} | {r.error_pct:+.1f} | "
                     f"±{r.tolerance_pct:g} % | {'met' if r.met else '**not met**'} |")
    lines += ["", "## Gaps: targets not met, and the mechanism missing", ""]
    for r in rows:
        if not r.met:
            gap = TARGETS[r.key].gap or "UNEXPLAINED: no mechanism named in validation/targets.py"
            lines.append(f"- **{r.key}** ({r.error_pct:+.1f} % against ±{r.tolerance_pct:g} %): {gap}")
    lines += ["", "## Why each target is what it is", ""]
    reasons: dict[str, list[str]] = {}
    for r in rows:
        reasons.setdefault(TARGETS[r.key].reason, []).append(r.key)
    for reason, keys in reasons.items():
        lines.append(f"- {reason}. Rows: {'; '.join(keys)}.")
    return "\n".join(lines) + "\n"


def write(rows: list[Row], md: Path = REPORT_MD, js: Path = REPORT_JSON) -> None:
    """Write REPORT.md and report.json."""
    md.write_text(render_markdown(rows))
    js.write_text(json.dumps(to_json(rows), indent=1, sort_keys=True) + "\n")
