"""One design point of a sweep: build its arch and workload, evaluate, and turn the outcome into a store row.

Points that cannot be built or costed (a value the arch model rejects, an einsum no engine can run)
are recorded with status 'invalid' and the reason; points that break a constraint are 'infeasible'
with their metrics kept; an unexpected exception in the model is recorded as 'error' with its type
and message. None of them stops the sweep.
"""
from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

from accel_sim.dse.store import PointRow
from accel_sim.errors import AccelSimError, ConfigError
from accel_sim.evaluate import evaluate, sourced
from accel_sim.io.load import load_arch, load_workload
from accel_sim.mapper import MapperCache
from accel_sim.spec.workload import Workload

if TYPE_CHECKING:  # the spec module runs points itself (to check metric names): no import back at run time
    from accel_sim.dse.spec import PointTask


@functools.lru_cache(maxsize=64)
def _workload(path: str, overrides: tuple[str, ...]) -> Workload:
    # a worker sees the same few workloads for thousands of points; parse each once per process
    return load_workload(path, overrides=overrides)


def metrics_of(summary: dict[str, object]) -> dict[str, float]:
    """The numeric entries of Result.summary(), dict-valued ones flattened to 'key.sub' at any depth (a level's
    'memory.unified_buffer.peak_bytes')."""
    out: dict[str, float] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in metrics_of(value).items()})
        elif isinstance(value, (int, float)) and not isinstance(value, bool) or hasattr(value, "dtype"):
            out[key] = float(value)  # numpy scalars too
    return out


def evaluate_point(task: PointTask, cache: MapperCache | None = None) -> PointRow:
    """Evaluate one point, reusing `cache`'s mappings; never raises for a bad point (the row says what went wrong)."""
    start = time.perf_counter()
    params = dict(task.params)
    workload_name = task.workload_label
    try:
        arch = load_arch(task.arch, task.arch_overrides)
        workload = _workload(task.workload, task.workload_overrides)
        metrics = metrics_of(evaluate(arch, workload, task.objective, cache).summary())
    except AccelSimError as exc:
        if isinstance(exc, ConfigError):  # raised by an execution model, which knows no file: the row names it
            exc = sourced(exc, task.arch, task.workload,
                          (*task.arch_overrides, *(f"workload.{o}" for o in task.workload_overrides)))
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
