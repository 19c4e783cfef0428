"""Interactive figures for the HTML reports, as plotly.js figure specs (plain dicts: data, layout).

The page inlines plotly.js from the plotly package (reports/page.py), so nothing loads from the network. Figures
are built as dicts, not through plotly's Python objects: they are small, JSON-ready and need no plotly import.
Every number a figure shows goes through reports/format.py (axis ticks excepted: plotly draws those with SI
prefixes itself, `exponentformat: "SI"`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from accel_sim.sim.trace import fold_resources
from accel_sim.reports.format import bytes_format, cycles_format, format_metric, percent, si_format
from accel_sim.reports.view import above_roof

Figure = dict[str, Any]
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC",
           "#EECA3B", "#1F77B4", "#17BECF")
TRANSFER = "#C7C7C7"   # memory transfers on a timeline: grey, behind the einsums' colours


def color(i: int) -> str:
    """The i-th colour of the report palette (Tableau 10-like, colour-blind safe first four)."""
    return PALETTE[i % len(PALETTE)]


def time_unit(seconds: float) -> tuple[str, float]:
    """The one unit a timeline's axis uses for a run of `seconds`: ('µs', 1e-6), ('ms', 1e-3) or ('s', 1)."""
    for unit, scale in (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3)):
        if seconds < 1000 * scale:
            return unit, scale
    return "s", 1.0


def fold_rows(spans: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Rows of a timeline.csv's spans with identical resources folded ('pim.ch × 32'; sim/trace.fold_resources)."""
    return fold_resources((str(s["resource"]), str(s["label"]), float(s["start"]), float(s["end"])) for s in spans)


def timeline_figure(spans: Sequence[Mapping[str, Any]], clock_hz: float, einsums: Mapping[str, Mapping[str, Any]]
                    ) -> Figure:
    """Gantt chart: one row per (folded) resource, one bar per einsum labelled with its name and coloured by its
    operator, transfers in grey; hover gives start, end, duration, bound and bytes. `einsums`: op and bound by name."""
    rows, row_of = fold_rows(spans)
    first = {}
    for s in spans:  # a folded row draws its first member's bars only
        first.setdefault(row_of[str(s["resource"])], str(s["resource"]))
    shown = [s for s in spans if first[row_of[str(s["resource"])]] == str(s["resource"])]
    end_s = max((float(s["end"]) for s in spans), default=0.0) / clock_hz
    unit, scale = time_unit(end_s)
    ops = sorted({str(einsums.get(_base(s["label"]), {}).get("op", s["kind"])) for s in shown})
    traces = []
    for i, op in enumerate(ops):
        members = [s for s in shown if str(einsums.get(_base(s["label"]), {}).get("op", s["kind"])) == op]
        transfer = all(s["kind"] == "transfer" for s in members)
        traces.append({
            "type": "bar", "orientation": "h", "name": op if not transfer else f"{op} (memory)",
            "y": [row_of[str(s["resource"])] for s in members],
            "base": [float(s["start"]) / clock_hz / scale for s in members],
            "x": [(float(s["end"]) - float(s["start"])) / clock_hz / scale for s in members],
            "text": [str(s["label"]) for s in members], "textposition": "inside", "insidetextanchor": "middle",
            "marker": {"color": TRANSFER if transfer else color(i), "line": {"width": 0.5, "color": "white"}},
            "customdata": [_span_hover(s, clock_hz, einsums) for s in members],
            "hovertemplate": "<b>%{text}</b><br>%{customdata[0]}<extra>%{fullData.name}</extra>"})
    height = 160 + 28 * len(rows)
    return {"data": traces, "layout": {
        "barmode": "overlay", "height": min(height, 900), "margin": {"l": 140, "r": 20, "t": 30, "b": 50},
        "xaxis": {"title": {"text": f"time ({unit})"}, "exponentformat": "SI", "zeroline": False},
        "yaxis": {"categoryorder": "array", "categoryarray": list(reversed(rows)), "automargin": True},
        "legend": {"title": {"text": "operator"}}, "uniformtext": {"mode": "hide", "minsize": 9}}}


def _base(label: object) -> str:
    """The einsum a span's label names ('qk#3', an unrolled copy, is einsum 'qk')."""
    return str(label).split("#")[0]


def _span_hover(span: Mapping[str, Any], clock_hz: float, einsums: Mapping[str, Mapping[str, Any]]) -> list[str]:
    start, end = float(span["start"]), float(span["end"])
    info = einsums.get(_base(span["label"]), {})
    parts = [f"{span['resource']}", f"start {si_format(start / clock_hz, 's')} (cycle {cycles_format(start)})",
             f"end {si_format(end / clock_hz, 's')} (cycle {cycles_format(end)})",
             f"duration {cycles_format(end - start)} cycles"]
    if info.get("bound"):
        parts.append(f"bound by {info['bound']}")
    moved = float(span.get("bytes") or 0) or float(info.get("bytes") or 0)
    if moved:
        parts.append(f"bytes {bytes_format(moved)}")
    return ["<br>".join(parts)]


def roofline_figure(record: Mapping[str, Any]) -> Figure:
    """Hierarchical roofline: per engine group a ceiling per compute peak and a slope per memory level its einsums
    use (as that engine sees the level: PIM banks read their own DRAM faster); points coloured by engine group,
    sized by their share of einsum time, hover with every figure. A point above its roof is drawn as a red cross."""
    points, roofs = record["points"], record["roofs"]
    groups = list(dict.fromkeys([p["engine"] for p in points] + [r["engine"] for r in roofs]))
    xs = [p["intensity"] for p in points] or [1e-2, 1e3]
    lo, hi = min(xs) / 8, max(xs) * 8
    span = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    traces: list[dict[str, Any]] = []
    for g, group in enumerate(groups):
        peaks = [r for r in roofs if r["engine"] == group and "peak_ops_per_s" in r and math.isfinite(r["peak_ops_per_s"])]
        top = max((r["peak_ops_per_s"] for r in peaks), default=None)
        for r in peaks:
            traces.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [r["peak_ops_per_s"]] * 2,
                           "name": f"{group} peak ({r['op']}) {si_format(r['peak_ops_per_s'], 'op/s')}",
                           "line": {"color": color(g), "dash": "dash", "width": 1.5}, "legendgroup": group,
                           "hoverinfo": "name"})
        for r in (r for r in roofs if r["engine"] == group and "bandwidth_bytes_per_s" in r):
            bw = r["bandwidth_bytes_per_s"]
            traces.append({"type": "scatter", "mode": "lines", "x": span,
                           "y": [min(bw * x, top) if top else bw * x for x in span],
                           "name": f"{group} ← {r['level']} {si_format(bw, 'B/s')}", "legendgroup": group,
                           "line": {"color": color(g), "width": 1.5}, "hoverinfo": "name"})
        mine = [p for p in points if p["engine"] == group]
        if mine:
            traces.append(_points_trace(mine, group, color(g)))
    above = above_roof(points)
    if above:
        traces.append({"type": "scatter", "mode": "markers", "x": [p["intensity"] for p in above],
                       "y": [p["ops_per_s"] for p in above], "name": f"above its roof ({len(above)}): a model bug",
                       "marker": {"symbol": "x", "size": 14, "color": "crimson"},
                       "text": [p["einsum"] for p in above], "hovertemplate": "%{text} is above its roof<extra></extra>"})
    return {"data": traces, "layout": {
        "height": 560, "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
        "xaxis": {"type": "log", "title": {"text": "operational intensity (op per compulsory byte)"},
                  "exponentformat": "SI"},
        "yaxis": {"type": "log", "title": {"text": "achieved throughput (op/s)"}, "exponentformat": "SI"},
        "legend": {"font": {"size": 11}}}}


def _points_trace(points: Sequence[Mapping[str, Any]], group: str, colour: str) -> dict[str, Any]:
    sizes = [8 + 40 * math.sqrt(p["share"]) for p in points]
    hover = ["<br>".join([f"{p['op']} on {p['engine']}, measured at {p['level']}",
                          f"intensity {si_format(p['intensity'], 'op/B')}",
                          f"achieved {si_format(p['ops_per_s'], 'op/s')} of a roof of {si_format(p['roof_ops_per_s'], 'op/s')}",
                          f"cycles {cycles_format(p['cycles'])} (roofline {cycles_format(p['roofline_cycles'])})",
                          f"bound by {p['bound']}; {percent(p['share'])} of einsum time",
                          f"bytes {bytes_format(p['bytes'])}"]) for p in points]
    return {"type": "scatter", "mode": "markers", "name": f"{group} einsums", "legendgroup": group,
            "x": [p["intensity"] for p in points], "y": [p["ops_per_s"] for p in points],
            "text": [p["einsum"] for p in points], "customdata": hover,
            "marker": {"color": colour, "size": sizes, "opacity": 0.75, "line": {"width": 1, "color": "#333"}},
            "hovertemplate": "<b>%{text}</b><br>%{customdata}<extra></extra>"}


_AXES = {"cycles": "cycles", "j": "J", "bytes": "B"}   # stacked_bars' units: the field suffix and the axis title


def stacked_bars(table: Mapping[str, Mapping[str, float]], unit: str, title: str) -> Figure:
    """Stacked bars: one bar per category (operator, run), one stack per part (bound kind, energy component, memory
    level); `unit` is 'cycles', 'j' or 'bytes'."""
    categories = list(table)
    parts = list(dict.fromkeys(p for row in table.values() for p in row))
    traces = []
    for i, part in enumerate(parts):
        values = [table[c].get(part, 0.0) for c in categories]
        traces.append({"type": "bar", "name": part, "x": categories, "y": values, "marker": {"color": color(i)},
                       "customdata": [format_metric(f"x_{unit}", v) if unit in _AXES else si_format(v) for v in values],
                       "hovertemplate": f"%{{x}}: {part} %{{customdata}}<extra></extra>"})
    axis = _AXES.get(unit, "")
    return {"data": traces, "layout": {"barmode": "stack", "height": 380, "title": {"text": title},
                                       "margin": {"l": 70, "r": 20, "t": 40, "b": 60},
                                       "yaxis": {"title": {"text": axis}, "exponentformat": "SI"}}}


def utilization_bars(utilization: Mapping[str, float]) -> Figure:
    """Horizontal bars of each engine's (or resource group's) busy fraction, in %."""
    names = list(utilization)
    values = [100 * utilization[n] for n in names]
    return {"data": [{"type": "bar", "orientation": "h", "y": names, "x": values, "marker": {"color": color(0)},
                      "text": [percent(utilization[n]) for n in names], "textposition": "auto",
                      "hovertemplate": "%{y}: %{text} busy<extra></extra>"}],
            "layout": {"height": 120 + 30 * len(names), "margin": {"l": 140, "r": 20, "t": 20, "b": 50},
                       "xaxis": {"title": {"text": "busy (%)"}, "range": [0, 105]}, "yaxis": {"automargin": True}}}


def occupancy_bars(memory: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Per bounded memory level, its peak occupancy over the run as a share of its capacity (hover: bytes, spilled)."""
    levels = [name for name, use in memory.items() if use.get("capacity_bytes")]
    shares = [memory[n]["peak_bytes"] / memory[n]["capacity_bytes"] for n in levels]
    hover = [f"{n}: peak {bytes_format(memory[n]['peak_bytes'])} of {bytes_format(memory[n]['capacity_bytes'])}, "
             f"spilled {bytes_format(memory[n].get('spilled_bytes') or 0)}" for n in levels]
    return {"data": [{"type": "bar", "orientation": "h", "y": levels, "x": [100 * v for v in shares],
                      "marker": {"color": color(1)}, "text": [percent(v) for v in shares], "textposition": "auto",
                      "customdata": hover, "hovertemplate": "%{customdata}<extra></extra>"}],
            "layout": {"height": 120 + 30 * len(levels), "margin": {"l": 140, "r": 20, "t": 20, "b": 50},
                       "xaxis": {"title": {"text": "peak occupancy (% of capacity)"}, "range": [0, 105]},
                       "yaxis": {"automargin": True, "autorange": "reversed"}}}
