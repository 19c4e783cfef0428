"""Pareto fronts over k objectives (all minimized), hypervolume and knee point, on numpy arrays.

Callers turn a "max" objective into "min" by negating its column (see `objective_matrix`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def pareto_mask(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of an (n, k) array, every column minimized.

    A row is dominated when another row is <= in every column and < in at least one. Duplicated
    non-dominated rows are all kept (neither dominates the other).

    >>> pareto_mask(np.array([[1, 4], [2, 2], [3, 3], [4, 1]])).tolist()
    [True, True, False, True]
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2:
        raise ValueError(f"points must be a 2-D array (n, k), got shape {pts.shape}")
    n = len(pts)
    keep = np.ones(n, dtype=bool)
    # sorting by the column sum puts every dominator before the rows it dominates, so one pass suffices
    order = np.argsort(pts.sum(axis=1), kind="stable")
    front: list[int] = []
    for i in order:
        p = pts[i]
        if front:
            f = pts[front]
            if np.any(np.all(f <= p, axis=1) & np.any(f < p, axis=1)):
                keep[i] = False
                continue
        front.append(i)
    return keep


def hypervolume(points: np.ndarray, reference: np.ndarray) -> float:
    """Volume dominated by `points` (minimized) and bounded by `reference` (exact, slicing over the last axis).

    Points not strictly better than the reference in every objective add nothing. For two objectives
    this is the area of the staircase; for k objectives the volume is summed slice by slice
    (Zitzler's "hypervolume by slicing objectives"), exact and fine for fronts of a few hundred points.

    >>> hypervolume(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([3.0, 3.0]))
    3.0
    """
    pts = np.asarray(points, dtype=float)
    ref = np.asarray(reference, dtype=float)
    if pts.size == 0:
        return 0.0
    if pts.ndim != 2 or pts.shape[1] != ref.shape[0]:
        raise ValueError(f"points {pts.shape} and reference {ref.shape} disagree on the number of objectives")
    pts = pts[np.all(pts < ref, axis=1)]
    if len(pts) == 0:
        return 0.0
    return _hv(pts[pareto_mask(pts)], ref)


def hypervolume_by_round(points: np.ndarray, rounds: np.ndarray, reference: np.ndarray) -> tuple[list[int], list[float]]:
    """The hypervolume of the points found up to each round (rounds in ascending order, and the volume after each):
    how a search's front grew. Never decreases; after the last round it is `hypervolume` of all points.

    >>> hypervolume_by_round(np.array([[2.0, 2.0], [1.0, 2.0], [2.0, 1.0]]), np.array([1, 2, 2]), np.array([3.0, 3.0]))
    ([1, 2], [1.0, 3.0])
    """
    order = sorted({int(r) for r in np.asarray(rounds)})
    return order, [hypervolume(points[np.asarray(rounds) <= r], reference) for r in order]


def _hv(pts: np.ndarray, ref: np.ndarray) -> float:
    if pts.shape[1] == 1:
        return float(ref[0] - pts[:, 0].min())
    if pts.shape[1] == 2:
        order = np.argsort(pts[:, 0])
        xs, ys = pts[order, 0], pts[order, 1]
        best_y = np.minimum.accumulate(ys)
        widths = np.diff(np.append(xs, ref[0]))
        return float(np.sum(widths * (ref[1] - best_y)))
    order = np.argsort(pts[:, -1])
    pts = pts[order]
    bounds = np.append(pts[:, -1], ref[-1])
    total = 0.0
    for i in range(len(pts)):
        depth = bounds[i + 1] - bounds[i]
        if depth > 0:
            head = pts[: i + 1, :-1]
            total += depth * _hv(head[pareto_mask(head)], ref[:-1])
    return total


def knee_point(front: np.ndarray) -> int:
    """Index (into `front`) of the knee: the point farthest below the hyperplane through the extremes.

    Objectives are first scaled to [0, 1] over the front. With two objectives the plane is the line
    joining the two extreme points (Das, "On characterizing the knee of the Pareto curve", 1999; the
    same construction as Kneedle); with k objectives it is the hyperplane through the k per-objective
    minima, and where those do not span one, the point nearest the ideal point (all zeros) is the knee.

    >>> knee_point(np.array([[0.0, 10.0], [1.0, 2.0], [10.0, 0.0]]))
    1
    """
    pts = np.asarray(front, dtype=float)
    if len(pts) == 0:
        raise ValueError("the front is empty: no feasible design point to choose a knee from")
    if len(pts) <= 2:
        return int(np.argmin(pts.sum(axis=1)))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    z = (pts - lo) / span
    k = z.shape[1]
    extremes = z[[int(np.argmin(z[:, j])) for j in range(k)]]
    try:
        # the plane n . x = 1 through the k extreme points; points below it (n . x < 1) bulge towards the ideal
        normal = np.linalg.solve(extremes, np.ones(k))
    except np.linalg.LinAlgError:
        return int(np.argmin(np.linalg.norm(z, axis=1)))
    distance = (1.0 - z @ normal) / np.linalg.norm(normal)
    return int(np.argmax(distance))


def objective_matrix(frame: pd.DataFrame, objectives: Mapping[str, str]) -> np.ndarray:
    """The (n, k) array of `frame`'s objective columns, negated where the goal is 'max' so all are minimized."""
    cols = []
    for metric, goal in objectives.items():
        values = frame[metric].to_numpy(dtype=float)
        cols.append(-values if goal == "max" else values)
    return np.column_stack(cols) if cols else np.empty((len(frame), 0))


def pareto_front(frame: pd.DataFrame, objectives: Mapping[str, str]) -> pd.DataFrame:
    """Rows of `frame` on the Pareto front of `objectives` ({metric: 'min' | 'max'}), with a `knee` column."""
    ok = frame.dropna(subset=list(objectives))
    if ok.empty:
        return ok.assign(knee=[])
    matrix = objective_matrix(ok, objectives)
    front = ok[pareto_mask(matrix)].copy()
    knee = knee_point(objective_matrix(front, objectives))
    front["knee"] = [i == knee for i in range(len(front))]
    return front
