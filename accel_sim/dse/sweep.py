"""Run a sweep: evaluate every point of a spec on an executor and commit each row to the store as it finishes.

A bad point never stops the sweep: its row says why (dse/point.py).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from accel_sim.dse.executors import DaskExecutor, Executor, LocalExecutor, sweep_chunk
from accel_sim.dse.point import evaluate_point
from accel_sim.dse.search import run_search
from accel_sim.dse.spec import Sweep, check_metric_names, load_sweep
from accel_sim.dse.store import PointRow, open_store
from accel_sim.io.names import slug


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


def default_store(sweep: Sweep) -> Path:
    """reports/<sweep name>/results.db"""
    return Path("reports") / slug(sweep.spec.name) / "results.db"


def run_sweep(sweep: Sweep | str | Path, store: str | Path | None = None, *, executor: Executor | None = None,
              resume: bool = False, overwrite: bool = False, progress: bool = False) -> SweepOutcome:
    """Evaluate the sweep's points not yet in `store`, committing each row as it finishes."""
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    store_path = Path(store) if store is not None else default_store(sweep)
    executor = executor or LocalExecutor()
    if isinstance(executor, (LocalExecutor, DaskExecutor)):   # either gives the same table for the same chunks
        executor = replace(executor, chunk=sweep_chunk(sweep.points, sweep.neighbour_points, sweep.rescored_points,
                                                       executor.chunk))
    meta = {"spec_name": sweep.spec.name, "spec_file": sweep.file, "spec_text": Path(sweep.file).read_text(),
            "objectives": json.dumps(sweep.spec.objectives), "points": str(sweep.points),
            "axes": json.dumps([p for p, _ in sweep.free] + [p for p, _, _ in sweep.tied])}
    counts: dict[str, int] = {}
    start = time.perf_counter()
    with open_store(store_path, spec_hash=sweep.spec_hash, meta=meta, resume=resume, overwrite=overwrite) as db:
        done = db.finished_ids()
        todo = sweep.points - len(done)
        checked = False
        with _progress(progress, sweep.spec.name, total=sweep.points, completed=len(done)) as advance:
            # local workers announce each finished point, so the bar moves per point, not per returned chunk
            ticking = progress and isinstance(executor, LocalExecutor) and executor.workers > 1
            if ticking:
                executor = replace(executor, on_point=advance)

            def commit(row: PointRow) -> None:
                nonlocal checked
                if row.status in ("ok", "infeasible") and not checked:
                    check_metric_names(sweep, row.metrics)  # a misspelt objective fails before any row is kept
                    checked = True
                db.put(row)
                counts[row.status] = counts.get(row.status, 0) + 1
                if not ticking:
                    advance()

            if sweep.adaptive:
                run_search(sweep, db, executor, commit)
            else:
                for row in executor.map_unordered(evaluate_point, sweep.tasks(skip=done)):
                    commit(row)
    return SweepOutcome(store_path, sweep.points, sweep.points - todo, counts, time.perf_counter() - start)


LOG_EVERY_S = 10.0  # without a terminal, a progress line this often (and one at the end)


class _progress:
    """A rich progress bar with ETA on a terminal's stderr; without a terminal (a log file, CI), a plain line every
    LOG_EVERY_S seconds and one at the end; a no-op when disabled."""

    def __init__(self, enabled: bool, name: str, total: int, completed: int) -> None:
        self.enabled, self.name, self.total, self.completed = enabled, name, total, completed
        self.logging = enabled and not sys.stderr.isatty()

    def __enter__(self):  # noqa: ANN204 - returns the advance callback
        if not self.enabled:
            return lambda: None
        if self.logging:
            self.start = self.last = time.perf_counter()
            return self._log_advance
        from rich.console import Console  # rich loads on first use: a quiet sweep starts without it
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            console=Console(stderr=True))
        self.bar.start()
        task = self.bar.add_task(self.name, total=self.total, completed=self.completed)
        return lambda: self.bar.advance(task)

    def _log_advance(self) -> None:
        self.completed += 1
        now = time.perf_counter()
        if now - self.last >= LOG_EVERY_S:
            self.last = now
            self._log_line(now)

    def _log_line(self, now: float) -> None:
        share = 100 * self.completed / self.total if self.total else 100.0
        sys.stderr.write(f"{self.name}: {self.completed:,} of {self.total:,} points ({share:.0f} %), "
                         f"{now - self.start:.0f} s\n")
        sys.stderr.flush()

    def __exit__(self, *exc: object) -> None:
        if self.logging:
            self._log_line(time.perf_counter())
        elif self.enabled:
            self.bar.stop()
