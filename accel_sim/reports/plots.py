"""Matplotlib figures (imported lazily, Agg backend so it works without a screen)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.evaluate import Result


def _intensity_level(row: pd.Series, levels: list[str]) -> str:
    """The level an einsum's intensity is measured against: its binding level, else the outermost it touches."""
    if row["bound"] in levels:
        return row["bound"]
    return next((lv for lv in levels if row[f"{lv}_bytes"] > 0), levels[-1])


def roofline_figure(result: Result) -> Figure:
    """Hierarchical roofline: a ceiling per engine, a slope per memory level, one marker per einsum."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from accel_sim.reports.tables import si_format

    arch = result.arch
    levels = [lv.name for lv in arch.memory]
    frame = result.per_einsum()
    frame = frame[frame["ops"] > 0].copy()
    frame["level"] = [_intensity_level(row, levels) for _, row in frame.iterrows()]
    frame["level_bytes"] = [row[f"{row['level']}_bytes"] for _, row in frame.iterrows()]
    frame = frame[frame["level_bytes"] > 0]
    frame["intensity"] = frame["ops"] / frame["level_bytes"]
    frame["attained"] = frame["ops"] / frame["latency_s"]

    fig = Figure(figsize=(8.0, 5.5), layout="constrained")
    ax = fig.add_subplot()
    low = max(frame["intensity"].min() / 4, 1e-3) if len(frame) else 1e-2
    high = frame["intensity"].max() * 4 if len(frame) else 1e4
    span = np.logspace(np.log10(low), np.log10(high), 200)
    peaks = []
    for engine in arch.engines:
        peak = max((engine.peak_per_cycle(e) for e in result.workload.einsums), default=0.0)
        if peak > 0:
            peaks.append(peak * arch.engine_clock_hz(engine))
            ax.axhline(peaks[-1], ls="--", lw=1.2, color=f"C{len(peaks) - 1}",
                       label=f"{engine.name} peak {si_format(peaks[-1], 'op/s')}")
    top = max(peaks, default=1.0)
    for i, level in enumerate(arch.memory):
        ax.plot(span, np.minimum(level.bandwidth_bytes_per_s * span, top), lw=1.2, color=f"C{i + 3}",
                label=f"{level.name} {si_format(level.bandwidth_bytes_per_s, 'B/s')}")
    markers = "osD^v<>"
    for i, (level, group) in enumerate(frame.groupby("level", sort=False)):
        ax.scatter(group["intensity"], group["attained"], s=16, alpha=0.7, marker=markers[i % len(markers)],
                   color="k", label=f"einsums (intensity vs {level})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (op per byte through the level; a MAC is one op)")
    ax.set_ylabel("attained throughput (op/s)")
    ax.set_title(f"{result.workload.name} on {arch.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig
