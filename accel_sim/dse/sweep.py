"""Run a sweep: evaluate every point of a spec on an executor and commit each row to the store as it finishes.

Points that cannot be built or costed (a value the arch model rejects, an einsum no engine can run)
are recorded with status 'invalid' and the reason; points that break a constraint are 'infeasible'
with their metrics kept; an unexpected exception in the model is recorded as 'error' with its type
and message. None of them stops the sweep.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from accel_sim.dse.executors import Executor, LocalExecutor
from accel_sim.dse.spec import PointTask, Sweep, check_metric_names, load_sweep
from accel_sim.dse.store import PointRow, open_store

if TYPE_CHECKING:
    from accel_sim.mapper import MapperCache
    from accel_sim.spec.workload import Workload


@dataclass(frozen=True)
class SweepOutcome:
    """Counts of one `run_sweep` call."""

    store: Path
    total: int
    skipped: int
    by_status: dict[str, int]
    elapsed_s: float

    @property
    def evaluated(self) -> int:
        """Points evaluated by this call (not counting resumed ones)."""
        return sum(self.by_status.values())

    @property
    def points_per_s(self) -> float:
        """Throughput of this call."""
        return self.evaluated / self.elapsed_s if self.elapsed_s > 0 else 0.0


@functools.lru_cache(maxsize=64)
def _workload(path: str, overrides: tuple[str, ...]) -> Workload:
    # a worker sees the same few workloads for thousands of points; parse each once per process
    from accel_sim.io.load import load_workload

    return load_workload(path, overrides=overrides)


def metrics_of(summary: dict[str, object]) -> dict[str, float]:
    """The numeric entries of Result.summary(), with dict-valued ones flattened to 'key.sub'."""
    out: dict[str, float] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": float(v) for k, v in value.items() if isinstance(v, (int, float))})
        elif isinstance(value, (int, float)) and not isinstance(value, bool) or hasattr(value, "dtype"):
            out[key] = float(value)  # numpy scalars too
    return out


def evaluate_point(task: PointTask, cache: MapperCache | None = None) -> PointRow:
    """Evaluate one point, reusing `cache`'s mappings; never raises for a bad point (the row says what went wrong)."""
    from accel_sim.errors import AccelSimError
    from accel_sim.evaluate import evaluate
    from accel_sim.io.load import load_arch

    start = time.perf_counter()
    params = dict(task.params)
    workload_name = task.workload_label
    try:
        arch = load_arch(task.arch, task.arch_overrides)
        workload = _workload(task.workload, task.workload_overrides)
        metrics = metrics_of(evaluate(arch, workload, task.objective, cache).summary())
    except AccelSimError as exc:
        return PointRow(task.point_id, task.design_id, workload_name, "invalid", str(exc), params, {},
                        time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a model bug at one point is recorded, not allowed to stop the sweep
        return PointRow(task.point_id, task.design_id, workload_name, "error", f"{type(exc).__name__}: {exc}",
                        params, {}, time.perf_counter() - start)
    broken = [str(c) for c in task.constraints if c.metric in metrics and not c.holds(metrics)]
    status = "infeasible" if broken else "ok"
    reason = None
    if broken:
        reason = "; ".join(f"{c} fails ({c.split()[0]} = {metrics[c.split()[0]]:.6g})" for c in broken)
    return PointRow(task.point_id, task.design_id, workload_name, status, reason, params, metrics,
                    time.perf_counter() - start)


def default_store(sweep: Sweep) -> Path:
    """reports/<sweep name>/results.db"""
    from accel_sim.cli import _slug

    return Path("reports") / _slug(sweep.spec.name) / "results.db"


def run_sweep(sweep: Sweep | str | Path, store: str | Path | None = None, *, executor: Executor | None = None,
              resume: bool = False, overwrite: bool = False, progress: bool = False) -> SweepOutcome:
    """Evaluate the sweep's points not yet in `store`, committing each row as it finishes."""
    import json

    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    store_path = Path(store) if store is not None else default_store(sweep)
    executor = executor or LocalExecutor()
    meta = {"spec_name": sweep.spec.name, "spec_file": sweep.file, "spec_text": Path(sweep.file).read_text(),
            "objectives": json.dumps(sweep.spec.objectives), "points": str(sweep.points),
            "axes": json.dumps([p for p, _ in sweep.free] + [p for p, _ in sweep.tied])}
    counts: dict[str, int] = {}
    start = time.perf_counter()
    with open_store(store_path, spec_hash=sweep.spec_hash, meta=meta, resume=resume, overwrite=overwrite) as db:
        done = db.finished_ids()
        todo = sweep.points - len(done)
        checked = False
        with _progress(progress, sweep.spec.name, total=sweep.points, completed=len(done)) as advance:
            def commit(row: PointRow) -> None:
                nonlocal checked
                if row.status in ("ok", "infeasible") and not checked:
                    check_metric_names(sweep, row.metrics)  # a misspelt objective fails before any row is kept
                    checked = True
                db.put(row)
                counts[row.status] = counts.get(row.status, 0) + 1
                advance()

            if sweep.adaptive:
                from accel_sim.dse.search import run_search

                run_search(sweep, db, executor, commit)
            else:
                for row in executor.map_unordered(evaluate_point, sweep.tasks(skip=done)):
                    commit(row)
    return SweepOutcome(store_path, sweep.points, sweep.points - todo, counts, time.perf_counter() - start)


class _progress:
    """A rich progress bar with ETA on stderr (a no-op when disabled)."""

    def __init__(self, enabled: bool, name: str, total: int, completed: int) -> None:
        self.enabled, self.name, self.total, self.completed = enabled, name, total, completed

    def __enter__(self):  # noqa: ANN204 - returns the advance callback
        if not self.enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            console=Console(stderr=True))
        self.bar.start()
        task = self.bar.add_task(self.name, total=self.total, completed=self.completed)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()
