"""CI regression check: compare the metrics of a run or sweep with a baseline, per workload and einsum or point.

Both sides may be a run folder (`accel-sim run -o DIR`: summary.json + per_einsum.csv), a summary.json,
a per-einsum CSV, a sweep store (SQLite), or a CSV exported from one. Each becomes a table indexed by
(workload, item) where item is an einsum name, '(total)' for a run's totals, or 'point <id>' for a
sweep point; the numeric columns are the metrics.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

import numpy as np

from accel_sim.dse.store import is_store, iter_rows, load_results
from accel_sim.errors import ConfigError
from accel_sim.reports.run_files import is_number

if TYPE_CHECKING:
    import pandas as pd

TOTAL = "(total)"
# not metrics: identifiers, a search's round, wall-clock timings (differ run to run), and a published constant
IGNORED = {"point_id", "design_id", "round", "elapsed_s", "published_area_mm2"}


@dataclass(frozen=True)
class Change:
    """One metric of one row that moved beyond tolerance (or is missing on one side)."""

    workload: str
    item: str
    metric: str
    baseline: float
    result: float

    @property
    def relative(self) -> float:
        """(result - baseline) / |baseline|; inf when the baseline is 0 and the result is not, NaN when missing."""
        if math.isnan(self.baseline) or math.isnan(self.result):
            return math.nan
        if self.baseline == 0:
            return 0.0 if self.result == 0 else math.inf
        return (self.result - self.baseline) / abs(self.baseline)


@dataclass(frozen=True)
class CheckReport:
    """Outcome of a comparison: what was compared and what moved."""

    rows: int
    metrics: tuple[str, ...]
    changes: tuple[Change, ...]
    rtol: float

    @property
    def passed(self) -> bool:
        """True when nothing moved beyond tolerance."""
        return not self.changes


def metric_table(path: str | Path) -> pd.DataFrame:
    """A run folder, summary.json, CSV or sweep store as a (workload, item)-indexed table of numeric metrics."""
    return _tables(path)[0]


# metric name -> the value that is no number, as found ('"abc"' in JSON, "'abc' on line 3" in a CSV): such a metric is
# no column of the table, and `compare` refuses it when the other side has it as a number
NonNumbers = dict[str, str]


def _tables(path: str | Path) -> tuple[pd.DataFrame, NonNumbers]:
    """`metric_table`, with the metrics whose values are not numbers."""
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    path = Path(path)
    if path.is_dir():
        summary, per_einsum = path / "summary.json", path / "per_einsum.csv"
        if not summary.exists():
            raise ConfigError("the folder holds no summary.json", file=path,
                              fix="give a folder written by `accel-sim run -o DIR`, a sweep store or a CSV")
        frame, odd = _summary_frame(summary)
        frames = [frame]
        if per_einsum.exists():
            per, odd_per = _csv_frame(per_einsum, default_workload=str(frame.index[0][0]))
            frames.append(per)
            odd = {**odd_per, **odd}
        return pd.concat(frames), odd
    if not path.exists():
        raise ConfigError("file not found", file=path, fix="check the path")
    if is_store(path):
        frame = load_results(path)
        frame["item"] = [f"point {i}" for i in frame["point_id"]]
        return _numeric(frame.set_index(["workload", "item"]), path)
    if path.suffix == ".json":
        return _summary_frame(path)
    if path.suffix == ".csv":
        return _csv_frame(path)
    if path.suffix in (".db", ".sqlite", ".sqlite3"):  # named like a store, but its header says otherwise
        raise ConfigError("not a sweep store: the file is not a SQLite database", file=path,
                          fix="give the results.db that `accel-sim sweep` wrote (--store), or a run folder, "
                              "summary.json or .csv")
    raise ConfigError(f"cannot compare a '{path.suffix}' file", file=path,
                      fix="give a run folder, summary.json, a .csv, or a sweep store (the results.db of a sweep)")


def _summary_frame(path: Path) -> tuple[pd.DataFrame, NonNumbers]:
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno,
                          fix="regenerate it with `accel-sim run --json` or `accel-sim run -o DIR`") from None
    if not isinstance(data, dict) or not isinstance(data.get("workload"), str):
        raise ConfigError("not a run summary (no 'workload' name)", file=path, line=1, key_path="workload",
                          fix="give the summary.json that `accel-sim run -o DIR` writes")
    row: dict[str, float] = {}
    odd: NonNumbers = {}
    for key, value in _leaves(data):
        if is_number(value):
            row[key] = value
        elif value is None:  # how a sweep store writes an undefined metric: compared as NaN (missing)
            row[key] = math.nan
        else:
            odd[key] = json.dumps(value)  # as the file writes it: "abc", true, [1]
    for c in IGNORED:
        row.pop(c, None)
    if not row:  # {"workload": "gemm"}: nothing to hold or fail, which must not read as "0 metrics hold"
        raise ConfigError("the summary holds no metrics (no key has a number)", file=path, line=1,
                          fix="give the summary.json that `accel-sim run -o DIR` writes (cycles, latency_s, ...)")
    index = pd.MultiIndex.from_tuples([(data["workload"], TOTAL)], names=["workload", "item"])
    return pd.DataFrame([row], index=index), odd


def moved(baseline: float, result: float, rtol: float) -> bool:
    """Whether a metric moved beyond `rtol` (|result - baseline| > rtol x |baseline|, as `compare` with no atol);
    a value on one side only has moved, NaN on both has not."""
    if math.isnan(baseline) or math.isnan(result):
        return math.isnan(baseline) != math.isnan(result)
    if math.isinf(baseline):
        return result != baseline
    return abs(result - baseline) > rtol * abs(baseline)


def flat_numbers(data: dict, prefix: str = "") -> dict[str, float]:
    """Every number in a summary, nested ones under dotted keys at any depth (memory.unified_buffer.peak_bytes)."""
    return {key: value for key, value in _leaves(data, prefix) if is_number(value)}


def _leaves(data: dict, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted key, value) of every value of a summary that is not a mapping, at any depth."""
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _csv_frame(path: Path, default_workload: str | None = None) -> tuple[pd.DataFrame, NonNumbers]:
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError(f"unreadable CSV ({str(exc).splitlines()[0]})", file=path,
                          fix="regenerate the file with `accel-sim run` or `accel-sim sweep --export`") from None
    if "einsum" in frame.columns:
        frame["item"] = frame["einsum"].astype(str)
    elif "point_id" in frame.columns:
        frame["item"] = [f"point {i}" for i in frame["point_id"]]
    else:
        raise ConfigError("the CSV has neither an 'einsum' nor a 'point_id' column", file=path, line=1,
                          fix="give a per_einsum.csv from `accel-sim run` or a sweep export")
    if "workload" not in frame.columns:
        if default_workload is None:
            raise ConfigError("the CSV has no 'workload' column", file=path, line=1,
                              fix="compare the run folder (it names the workload) instead of its CSV alone")
        frame["workload"] = default_workload
    if frame.duplicated(["workload", "item"]).any():
        raise ConfigError("rows repeat the same workload and einsum/point", file=path,
                          fix="keep one row per einsum or point")
    return _numeric(frame.set_index(["workload", "item"]), path)


def _numeric(frame: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, NonNumbers]:
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    cols = [c for c in frame.columns if c not in IGNORED and frame[c].dtype.kind in "iuf"]
    if not cols:
        raise ConfigError("no numeric metric columns", file=path, fix="give a results table with metric columns")
    odd: NonNumbers = {}
    for c in frame.columns:
        if c in IGNORED or frame[c].dtype.kind in "iuf":
            continue
        column = frame[c]
        words = column.notna() & pd.to_numeric(column, errors="coerce").isna()
        if words.any():  # a text column (op, bound) or a metric with a word in it: `compare` tells them apart
            at = int(words.to_numpy().argmax())
            odd[str(c)] = f"{column.iloc[at]!r} on line {at + 2}"  # line 1 is the header
    return frame[cols].astype(float), odd


def _same_kind(base: pd.DataFrame, new: pd.DataFrame, baseline: str | Path, result: str | Path) -> None:
    """A run compares with a run and a sweep with a sweep, on shared workloads; anything else is a usage error."""
    def is_sweep(frame: pd.DataFrame) -> bool:
        return all(str(item).startswith("point ") for _, item in frame.index)

    if is_sweep(base) != is_sweep(new):
        kinds = ("a sweep" if is_sweep(new) else "a run", "a sweep" if is_sweep(base) else "a run")
        raise ConfigError(f"cannot compare {kinds[0]} ({result}) with {kinds[1]} ({baseline})", file=result,
                          fix="compare two run folders, or two sweep stores / exported sweep tables")
    shared = set(base.index.get_level_values(0)) & set(new.index.get_level_values(0))
    if not shared:
        raise ConfigError(f"the result's workloads ({', '.join(sorted(set(new.index.get_level_values(0))))}) and the "
                          f"baseline's ({', '.join(sorted(set(base.index.get_level_values(0))))}) have none in common",
                          file=result, fix="compare results of the same workload(s), or regenerate the baseline")


def _same_designs(baseline: Path, result: Path) -> None:
    """Two sweep stores pair their points by number: a number that names another design on each side (a spec whose
    axis values were reordered or edited) is a usage error, not a list of regressions between unrelated designs."""
    if not (is_store(baseline) and is_store(result)):
        return
    designs = {(row.workload, row.point_id): row.params for row in iter_rows(baseline)}
    for row in iter_rows(result):
        other = designs.get((row.workload, row.point_id))
        if other is not None and other != row.params:
            differ = ", ".join(f"{k}: {other.get(k)!r} -> {row.params.get(k)!r}"
                               for k in sorted(set(other) | set(row.params)) if other.get(k) != row.params.get(k))
            raise ConfigError(f"point {row.point_id} ({row.workload}) is another design in each store ({differ})",
                              file=result, fix="compare stores of the same sweep spec: points are numbered in the "
                                               "order of its axes' values")


def compare(result: str | Path, baseline: str | Path, *, rtol: float = 0.02,
            metrics: Sequence[str] = (), atol: Mapping[str, float] | None = None) -> CheckReport:
    """Compare `result` with `baseline`: a metric holds when |result - baseline| <= atol + rtol x |baseline|, with
    `atol` per metric name ('*': every metric not named; default 0), as numpy.isclose."""
    if not (rtol >= 0 and math.isfinite(rtol)):
        raise ConfigError(f"{rtol} is not a tolerance", key_path="--rtol",
                          fix="give a non-negative number such as 0.02")
    atol = dict(atol or {})
    for name, value in atol.items():
        if not (value >= 0 and math.isfinite(value)):
            raise ConfigError(f"{name}={value} is not a tolerance", key_path="--atol",
                              fix="give a non-negative number, e.g. --atol stall_cycles=10")
    base, base_words = _tables(baseline)
    new, new_words = _tables(result)
    _same_kind(base, new, baseline, result)
    _same_designs(Path(baseline), Path(result))
    # a metric that is a number on one side and a word (or a list, true) on the other is a malformed file
    for words, numbers, path in ((new_words, base, result), (base_words, new, baseline)):
        for m in [m for m in (metrics or sorted(numbers.columns)) if m in words and m in numbers.columns]:
            raise ConfigError(f"metric '{m}' is {words[m]}, not a number", file=path, key_path=m,
                              fix="regenerate the file with `accel-sim run` (or `sweep --export`); a metric is a "
                                  "number, or null where it is undefined")
    if metrics:
        for m in metrics:
            if m not in base.columns:
                raise ConfigError(f"metric '{m}' is not in the baseline", file=baseline,
                                  fix=f"use some of: {', '.join(sorted(base.columns))}")
        names = list(metrics)
    else:
        # every metric of the baseline: one the result lacks is a change ("missing in result"), not left out
        names = sorted(base.columns)
    unknown = [m for m in atol if m != "*" and m not in names]
    if unknown:
        raise ConfigError(f"--atol names metric '{unknown[0]}', which is not compared", file=baseline,
                          fix=f"use some of: {', '.join(names)} (or '*' for all)")
    changes: list[Change] = []
    keys = base.index.union(new.index, sort=False)
    missing_rows = keys.difference(base.index.intersection(new.index), sort=False)
    for workload, item in missing_rows:  # a missing row is one change, not one per metric
        side = base if (workload, item) in base.index else new
        value = float(side.at[(workload, item), names[0]]) if names and names[0] in side.columns else math.nan
        changes.append(Change(workload, item, names[0] if names else "(row)",
                              value if side is base else math.nan, value if side is new else math.nan))
    shared = base.index.intersection(new.index, sort=False)
    old = base.loc[shared].reindex(columns=names).to_numpy(dtype=float)
    now = new.loc[shared].reindex(columns=names).to_numpy(dtype=float)
    floor = np.array([atol.get(m, atol.get("*", 0.0)) for m in names])
    with np.errstate(invalid="ignore"):
        # an infinite baseline holds only an equal result (its tolerance, rtol x inf, would hold anything)
        same = ((old == now) | (np.isnan(old) & np.isnan(now))
                | (np.isfinite(old) & (np.abs(now - old) <= floor + rtol * np.abs(old))))
    for r, c in zip(*np.nonzero(~same)):
        workload, item = shared[r]
        changes.append(Change(workload, item, names[c], float(old[r, c]), float(now[r, c])))
    return CheckReport(len(keys), tuple(names), tuple(changes), rtol)


def print_check(report: CheckReport, limit: int = 50) -> None:
    """A rich diff table of the changes, or one line saying everything holds."""
    from rich.console import Console  # rich loads on first use: `accel-sim run --json` and workers start without it
    from rich.table import Table  # rich loads on first use: `accel-sim run --json` and workers start without it

    console = Console(width=None if Console().is_terminal else 132)
    if report.passed:
        console.print(f"ok: {len(report.metrics)} metrics on {report.rows} rows hold within rtol {report.rtol:g}")
        return
    table = Table(title=f"{len(report.changes)} metric changes beyond rtol {report.rtol:g}")
    for name, justify in (("workload", "left"), ("einsum / point", "left"), ("metric", "left"),
                          ("baseline", "right"), ("result", "right"), ("change", "right")):
        table.add_column(name, justify=justify, overflow="fold")
    # totals first (they decide a regression), then the largest relative changes
    largest_first = sorted(report.changes, key=lambda c: (c.item != TOTAL,
                                                          -math.inf if math.isnan(c.relative) else -abs(c.relative)))
    for c in largest_first[:limit]:
        change = ("missing in result" if math.isnan(c.result) else "missing in baseline" if math.isnan(c.baseline)
                  else f"{100 * c.relative:+.2f} %")
        table.add_row(c.workload, c.item, c.metric, f"{c.baseline:.6g}", f"{c.result:.6g}", change)
    console.print(table)
    if len(report.changes) > limit:
        console.print(f"[dim]{len(report.changes) - limit} more changes not shown[/dim]")
