"""Figures for reports and notebooks: breakdown bars, Pareto scatter, parallel coordinates (matplotlib, Agg)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

from accel_sim.reports.format import param_quantity, param_text, param_value

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def _figure(width: float, height: float) -> Figure:
    import matplotlib  # matplotlib is heavy to import: loaded on first use

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # matplotlib is heavy to import: loaded on first use

    return Figure(figsize=(width, height), layout="constrained")


def breakdown_figure(parts: Mapping[str, float], title: str, unit: str) -> Figure:
    """Horizontal bars of a breakdown (energy by component, area by block), largest first, with shares."""
    fig = _figure(7.0, 0.45 * max(len(parts), 2) + 1.2)
    ax = fig.add_subplot()
    items = sorted(parts.items(), key=lambda kv: kv[1])
    total = sum(v for _, v in items) or 1.0
    ax.barh([k for k, _ in items], [v for _, v in items], color="C0")
    for i, (_, v) in enumerate(items):
        ax.text(v, i, f" {100 * v / total:.1f} %", va="center", fontsize=8)
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.margins(x=0.15)
    return fig


def pareto_figure(frame: pd.DataFrame, objectives: Mapping[str, str], front: pd.DataFrame, title: str) -> Figure:
    """Scatter of the first two objectives: every point, infeasible ones crossed, the front ringed, the knee a black
    star (outside any colour scale), each in the legend.

    With a third objective the points are coloured by it (colour bar) and the title says the view is a projection.
    """
    names = list(objectives)
    x, y = names[0], names[1] if len(names) > 1 else names[0]
    fig = _figure(7.5, 5.0)
    ax = fig.add_subplot()
    ok = frame[frame["status"] == "ok"]
    bad = frame[frame["status"] == "infeasible"]
    if len(names) > 2:
        sc = ax.scatter(ok[x], ok[y], c=ok[names[2]], s=14, cmap="viridis", alpha=0.7, label="feasible")
        fig.colorbar(sc, ax=ax, label=names[2])
    else:
        ax.scatter(ok[x], ok[y], s=14, color="0.6", alpha=0.7, label="feasible")
    if len(bad):
        ax.scatter(bad[x], bad[y], s=14, marker="x", color="crimson", alpha=0.6, label="infeasible (constraint)")
    if len(front):
        f = front.sort_values(x)
        ax.scatter(f[x], f[y], s=40, facecolors="none", edgecolors="k", lw=1.2, label=f"Pareto front ({len(f)})")
        knee = f[f["knee"]]
        # black, not a colour: on a colour bar's scale a coloured knee reads as a value of the third objective
        ax.scatter(knee[x], knee[y], s=220, marker="*", color="black", edgecolors="white", linewidths=0.8, zorder=5,
                   label="knee (balanced trade-off)")
    for axis, name in ((ax.set_xscale, x), (ax.set_yscale, y)):
        values = frame[name].dropna().to_numpy(dtype=float)
        if len(values) and values.min() > 0 and values.max() / values.min() > 20:
            axis("log")
    ax.set_xlabel(f"{x} ({objectives[x]})")
    ax.set_ylabel(f"{y} ({objectives[y]})")
    ax.set_title(title if len(names) < 3 else f"{title}\n{len(names)} objectives shown on 2 axes: a front point can "
                 f"look dominated here", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def parallel_figure(frame: pd.DataFrame, columns: list[str], front_ids: set[int], title: str) -> Figure:
    """Parallel coordinates over parameters and objectives, each axis scaled to [0, 1]; front points in colour."""
    fig = _figure(max(7.0, 1.4 * len(columns)), 4.5)
    ax = fig.add_subplot()
    codes, ticks = [], []
    for col in columns:
        values = frame[col]
        numeric = np.asarray([param_value(v) for v in values], dtype=float)
        if np.isnan(numeric).all():  # categorical axis (a dataflow name): evenly spaced codes
            cats = sorted({str(v) for v in values})
            numeric = np.asarray([cats.index(str(v)) for v in values], dtype=float)
            ticks.append(" / ".join(cats))
        else:
            dimension = next((param_quantity(v)[1] for v in values if isinstance(v, str)), None)
            ticks.append(f"{param_text(col, float(np.nanmin(numeric)), dimension)} .. "
                         f"{param_text(col, float(np.nanmax(numeric)), dimension)}")
        lo, hi = np.nanmin(numeric), np.nanmax(numeric)
        codes.append((numeric - lo) / (hi - lo) if hi > lo else np.full_like(numeric, 0.5))
    matrix = np.column_stack(codes) if codes else np.empty((len(frame), 0))
    xs = np.arange(len(columns))
    on_front = np.asarray([pid in front_ids for pid in frame["point_id"]])
    for row in matrix[~on_front]:
        ax.plot(xs, row, color="0.75", lw=0.6, alpha=0.5)
    for row in matrix[on_front]:
        ax.plot(xs, row, color="C3", lw=1.4, alpha=0.9)
    ax.set_xticks(xs, [f"{c}\n{t}" for c, t in zip(columns, ticks)], fontsize=7)
    ax.set_yticks([0, 1], ["min", "max"])
    ax.set_title(f"{title} (red: Pareto front)")
    return fig
