"""Matplotlib figures (imported lazily, Agg backend so it works without a screen)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.reports.format import si_format
from accel_sim.reports.view import OPS_PER_MAC, counted_ops, short_name

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from accel_sim.evaluate import Result


def _points(result: Result) -> dict[str, np.ndarray]:
    """Per einsum: the level its intensity is measured against, ops, and bytes and seconds bound vs achieved."""
    levels = [lv.name for lv in result.arch.memory]
    level, ops, bound_bytes, achieved_bytes, bound_s, achieved_s = [], [], [], [], [], []
    for r, row in zip(result.einsums, result.per_einsum_records):
        b = r.bound
        # the binding level, else the outermost level the einsum moves data through
        name = b.kind if b.kind in levels else next((lv for lv in levels if b.level_bytes[lv] > 0), None)
        if name is None or b.ops <= 0:
            continue
        level.append(name)
        ops.append(counted_ops(r.op, b.ops))
        bound_bytes.append(b.level_bytes[name])
        achieved_bytes.append(max(row[f"{name}_bytes"], b.level_bytes[name]))
        bound_s.append(b.cycles / result.arch.clock_hz)
        achieved_s.append(row["latency_s"])
    return {k: np.asarray(v) for k, v in (("level", level), ("ops", ops), ("bound_bytes", bound_bytes),
                                            ("achieved_bytes", achieved_bytes), ("bound_s", bound_s),
                                            ("achieved_s", achieved_s))}


def _plain_log_labels(ax: object) -> None:
    """Plain labels on log axes (0.1, 100; 10 G op/s), major ticks only: matplotlib's default 10^x labels go through
    mathtext, whose parser set-up costs about 0.2 s of a 1.5 s `accel-sim run`, and the unlabelled minor ticks of
    two log axes (a hundred tick artists) cost a third of the drawing."""
    from matplotlib.ticker import FuncFormatter, NullLocator  # matplotlib is heavy to import: loaded on first use

    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))  # type: ignore[attr-defined]
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: si_format(value)))  # type: ignore[attr-defined]
    for axis in (ax.xaxis, ax.yaxis):  # type: ignore[attr-defined]
        axis.set_minor_locator(NullLocator())


@dataclass(frozen=True)
class RooflineData:
    """Everything the roofline figure draws, as plain values (picklable, so a child process can draw it)."""

    title: str
    ceilings: tuple[tuple[str, float], ...]   # (engine label, peak op/s)
    slopes: tuple[tuple[str, float], ...]     # (memory level label, bytes/s)
    points: dict[str, np.ndarray]


def roofline_data(result: Result) -> RooflineData:
    """The ceilings, slopes and per-einsum points of a result's roofline."""
    arch = result.arch
    ceilings = []
    for engine in arch.engines:
        peak = OPS_PER_MAC * engine.peak_macs_per_cycle() * arch.engine_clock_hz(engine)
        ceilings.append((f"{engine.name} peak {si_format(peak, 'op/s')}", peak))
    slopes = tuple((f"{level.name} {si_format(level.ports.peak_bytes_per_s, 'B/s')}", level.ports.peak_bytes_per_s)
                   for level in arch.memory)
    # names cut to a readable length: a title far wider than the figure cannot be drawn at all
    title = f"{short_name(result.workload.name)} on {short_name(arch.name)}"
    return RooflineData(title, tuple(ceilings), slopes, _points(result))


def roofline_figure(result: Result) -> Figure:
    """Hierarchical roofline: a ceiling per engine, a slope per memory level, each einsum's bound and achieved point."""
    return draw_roofline(roofline_data(result))


def write_roofline(data: RooflineData, path: Path, dpi: int) -> None:
    """Draw the roofline of `data` and write it to `path` as PNG (light zlib compression: the default level takes
    as long as drawing the figure, for a file about 10 % smaller)."""
    partial = path.with_name(path.name + ".partial")   # renamed when whole: an interrupted drawing leaves no PNG
    draw_roofline(data).savefig(partial, dpi=dpi, format="png", pil_kwargs={"compress_level": 1})
    partial.replace(path)


def draw_roofline(data: RooflineData) -> Figure:
    """The roofline figure of `data` (log-log: op/s against op per byte)."""
    import matplotlib  # matplotlib is heavy to import: loaded on first use

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # matplotlib is heavy to import: loaded on first use

    pts = data.points
    fig = Figure(figsize=(8.0, 5.5))
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.93)  # fixed margins: constrained layout costs ~0.5 s
    ax = fig.add_subplot()
    intensity = np.concatenate([pts["ops"] / pts["bound_bytes"], pts["ops"] / pts["achieved_bytes"]]) \
        if len(pts["ops"]) else np.array([1e-2, 1e4])
    span = np.logspace(np.log10(max(intensity.min() / 4, 1e-3)), np.log10(intensity.max() * 4), 200)
    for i, (label, peak) in enumerate(data.ceilings):
        ax.axhline(peak, ls="--", lw=1.2, color=f"C{i}", label=label)
    top = max((peak for _, peak in data.ceilings), default=1.0)
    for i, (label, bandwidth) in enumerate(data.slopes):
        ax.plot(span, np.minimum(bandwidth * span, top), lw=1.2, color=f"C{i + 3}", label=label)
    if len(pts["ops"]):
        ax.scatter(pts["ops"] / pts["bound_bytes"], pts["ops"] / pts["bound_s"], s=22, facecolors="none",
                   edgecolors="k", lw=0.8, label="einsums: roofline bound (compulsory traffic)")
        ax.scatter(pts["ops"] / pts["achieved_bytes"], pts["ops"] / pts["achieved_s"], s=12, color="crimson",
                   alpha=0.7, label="einsums: achieved (engine model)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_labels(ax)
    ax.set_xlabel("operational intensity (op per byte through the binding level; a MAC is one op)")
    ax.set_ylabel("throughput (op/s)")
    ax.set_title(data.title, y=1.0)  # a fixed place: placing it clear of the top axis measures every tick label
    ax.grid(True, which="major", alpha=0.3)  # minor log gridlines triple the drawing time
    ax.legend(fontsize=7, loc="lower right")
    return fig
