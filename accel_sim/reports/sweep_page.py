"""The sections of a sweep report: a Pareto view with selectable axes whose points open their design's report,
parallel coordinates with brushing and readable units, hypervolume explained, and the front as a table."""
from __future__ import annotations

import html
import json
import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from accel_sim.reports.format import metric_label, metric_unit, param_quantity, param_text, param_value, significant
from accel_sim.reports.page import Cell, Page

if TYPE_CHECKING:
    import pandas as pd

FRONT, KNEE, OTHER, INFEASIBLE = "#D62728", "#000000", "#AAAAAA", "#FF7F0E"


def hypervolume_text(hv: float, n_objectives: int, front: int, feasible: int) -> str:
    """What the hypervolume number means, with the number."""
    most = 1.1 ** n_objectives
    return (f"{front} of {feasible} feasible points are on the front. Hypervolume {significant(hv)} "
            f"({significant(100 * hv / most)} % of the most possible, {significant(most)}): with every objective "
            f"scaled to [0, 1] over the feasible points (0 the best seen, 1 the worst), it is the volume that the front "
            f"dominates up to the reference point 1.1 in each objective. A larger value is a front that is better, "
            f"wider or both; compare it between runs of the same sweep only, since the scaling depends on the points.")


def hypervolume_plot(page: Page, rounds: Sequence[int], volumes: Sequence[float], n_objectives: int,
                     name: str) -> None:
    """The hypervolume of the feasible points found up to each round of a search: flat rounds found nothing that
    widened the front; a curve still climbing at the end says more rounds would pay."""
    most = 1.1 ** n_objectives
    figure = {"data": [{"type": "scatter", "mode": "lines+markers", "x": list(rounds), "y": list(volumes),
                        "line": {"color": FRONT}, "customdata": [f"{significant(v)} ({significant(100 * v / most)} % "
                                                                 "of the most possible)" for v in volumes],
                        "hovertemplate": "after round %{x}: hypervolume %{customdata}<extra></extra>"}],
              "layout": {"height": 300, "margin": {"l": 70, "r": 20, "t": 20, "b": 50},
                         "xaxis": {"title": {"text": "search round"}, "dtick": 1},
                         "yaxis": {"title": {"text": "hypervolume"}, "rangemode": "tozero"}}}
    page.plot(figure, "hypervolume of the front of every feasible point found up to each search round (same scaling "
              "as above): a flat tail means the search stopped finding better designs", f"hypervolume-{name}")


def pareto_plot(page: Page, group: pd.DataFrame, objectives: Mapping[str, str], axes: Sequence[str],
                front_ids: set[int], knee_ids: set[int], links: Mapping[int, str], name: str) -> None:
    """Scatter of every point on two selectable axes (objectives and numeric parameters), front in red, knee as a
    black star; hover lists every parameter and objective; clicking a point with a report opens it."""
    choices = [c for c in [*objectives, *axes] if c in group.columns
               and np.isfinite([param_value(v) for v in group[c]]).any()]
    x0, y0 = choices[0], choices[1] if len(choices) > 1 else choices[0]
    hover, kinds = [], []
    for _, row in group.iterrows():
        pid = int(row["point_id"])
        lines = [f"point {pid} ({row['status']})"] + [f"{metric_label(c)}: {param_text(c, row[c])}"
                                                       for c in [*axes, *objectives] if c in group.columns]
        lines.append("click to open its report" if pid in links else "no report written for this point")
        hover.append("<br>".join(lines))
        kinds.append("knee" if pid in knee_ids else "front" if pid in front_ids else
                     "feasible" if row["status"] == "ok" else "infeasible")
    traces = []
    styles = {"feasible": (OTHER, "circle", 8), "infeasible": (INFEASIBLE, "x", 8),
              "front": (FRONT, "circle", 11), "knee": (KNEE, "star", 18)}
    for kind, (colour, symbol, size) in styles.items():
        idx = [i for i, k in enumerate(kinds) if k == kind]
        if not idx:
            continue
        ids = [int(group.iloc[i]["point_id"]) for i in idx]
        traces.append({"type": "scatter", "mode": "markers", "name": kind, "x": [_num(group.iloc[i][x0]) for i in idx],
                       "y": [_num(group.iloc[i][y0]) for i in idx], "customdata": [[hover[i], links.get(p, "")]
                                                                                     for i, p in zip(idx, ids)],
                       "cols": {c: [_num(group.iloc[i][c]) for i in idx] for c in choices},
                       "marker": {"color": colour, "symbol": symbol, "size": size, "line": {"width": 1, "color": "#333"}},
                       "hovertemplate": "%{customdata[0]}<extra></extra>"})
    layout = {"height": 520, "margin": {"l": 80, "r": 20, "t": 60, "b": 60},
              "xaxis": {"title": {"text": _axis_title(x0)}, "type": _scale(group, x0), "tickformat": "~s"},
              "yaxis": {"title": {"text": _axis_title(y0)}, "type": _scale(group, y0), "tickformat": "~s"}}
    page.plot({"data": traces, "layout": layout}, "every point on the two axes chosen above the plot; red: on the "
              "Pareto front, black star: knee; click a point that has a report to open it", f"pareto-{name}")
    page.raw(_axis_picker(f"plot-pareto-{name}", choices, x0, y0, group))


def _axis_picker(plot_id: str, choices: Sequence[str], x0: str, y0: str, group: pd.DataFrame) -> str:
    """Two selects that restyle the scatter's x and y from each trace's `cols`, and a click handler that opens the
    clicked point's report."""
    options = "".join(f"<option value='{html.escape(c)}'>{html.escape(metric_label(c))}</option>" for c in choices)
    scales = json.dumps({c: _scale(group, c) for c in choices})
    labels = json.dumps({c: _axis_title(c) for c in choices})
    return (f"<p class='note'>x <select id='{plot_id}-x'>{options}</select> y <select id='{plot_id}-y'>{options}"
            f"</select></p><script>(function(){{var d=document.getElementById('{plot_id}'),s={scales},l={labels};"
            f"var sx=document.getElementById('{plot_id}-x'),sy=document.getElementById('{plot_id}-y');"
            f"sx.value={json.dumps(x0)};sy.value={json.dumps(y0)};"
            "function upd(){var xs=d.data.map(function(t){return t.cols[sx.value];}),"
            "ys=d.data.map(function(t){return t.cols[sy.value];});"
            "Plotly.update(d,{x:xs,y:ys},{'xaxis.title.text':l[sx.value],'yaxis.title.text':l[sy.value],"
            "'xaxis.type':s[sx.value],'yaxis.type':s[sy.value]});}"
            "sx.addEventListener('change',upd);sy.addEventListener('change',upd);"
            "d.on('plotly_click',function(e){var u=e.points[0].customdata[1];if(u){window.location.href=u;}});"
            "})();</script>")


def _axis_title(column: str) -> str:
    """An axis title with the unit its ticks are in ('energy (J)'; ticks carry SI prefixes: 3.6m is 3.6 mJ)."""
    unit = metric_unit(column.rsplit(".", 1)[-1])
    return f"{metric_label(column)} ({unit})" if unit and unit not in ("%", "×") else metric_label(column)


def _num(value: object) -> float | None:
    number = param_value(value)
    return number if math.isfinite(number) else None


def _scale(group: pd.DataFrame, column: str) -> str:
    """'log' for a positive column spanning more than 20x, else 'linear'."""
    values = np.asarray([param_value(v) for v in group[column]], dtype=float)
    values = values[np.isfinite(values)]
    return "log" if len(values) and values.min() > 0 and values.max() / values.min() > 20 else "linear"


def parallel_plot(page: Page, frame: pd.DataFrame, columns: Sequence[str], front_ids: set[int], name: str) -> None:
    """Parallel coordinates over parameters and objectives with ticks in units ('4 MiB', '1.2 ms'); drag along an
    axis to brush; front points in red."""
    dims = []
    for c in columns:
        raw = list(frame[c])
        values = [param_value(v) for v in raw]
        if all(math.isnan(v) for v in values):  # a categorical axis (a dataflow name): codes with names as ticks
            cats = sorted({str(v) for v in raw})
            dims.append({"label": metric_label(c), "values": [cats.index(str(v)) for v in raw],
                         "tickvals": list(range(len(cats))), "ticktext": cats})
            continue
        finite = sorted({v for v in values if math.isfinite(v)})
        ticks = finite if len(finite) <= 8 else [float(t) for t in np.linspace(finite[0], finite[-1], 6)]
        dimension = next((param_quantity(v)[1] for v in raw if isinstance(v, str)), None)
        dims.append({"label": metric_label(c), "values": [v if math.isfinite(v) else None for v in values],
                     "tickvals": ticks, "ticktext": [param_text(c, t, dimension) for t in ticks]})
    on_front = [1 if int(p) in front_ids else 0 for p in frame["point_id"]]
    trace = {"type": "parcoords", "dimensions": dims,
             "line": {"color": on_front, "colorscale": [[0, OTHER], [1, FRONT]], "cmin": 0, "cmax": 1}}
    page.plot({"data": [trace], "layout": {"height": 460, "margin": {"l": 80, "r": 80, "t": 60, "b": 30}}},
              "parallel coordinates of the swept parameters and the objectives (red: Pareto front); drag along an "
              "axis to keep only the lines through that range", f"parallel-{name}")


def front_table(page: Page, front: pd.DataFrame, axes: Sequence[str], objectives: Mapping[str, str],
                links: Mapping[int, str]) -> None:
    """The front's points: id (a link to its report where there is one), parameters, objectives, knee."""
    columns = ["point", *[metric_label(a) for a in axes], *[metric_label(o) for o in objectives], "knee"]
    rows = []
    for _, r in front.sort_values(list(objectives)[0]).iterrows():
        pid = int(r["point_id"])
        rows.append([Cell(str(pid), pid), *[Cell(param_text(a, r[a]), _num(r[a])) for a in axes],
                     *[Cell(param_text(o, r[o]), _num(r[o])) for o in objectives], "knee" if r["knee"] else ""])
    page.table(columns, rows, text_columns=1)
    if links:
        items = "".join(f"<li><a class='design-link' href='{html.escape(u)}'>point {p}</a></li>"
                        for p, u in links.items())
        page.raw(f"<p class='note'>design reports:</p><ul class='note'>{items}</ul>",
                 [", ".join(f"[point {p}]({u})" for p, u in links.items())])


def ranking_table(page: Page, frame: pd.DataFrame, objectives: Mapping[str, str], axes: Sequence[str]) -> None:
    """Designs ranked across workloads: the mean over workloads of each design's rank on the sum of its objectives
    scaled to [0, 1] within the workload (1 is best); only designs feasible on every workload are ranked."""
    ok = frame[frame["status"] == "ok"]
    workloads = list(dict.fromkeys(ok["workload"]))
    if len(workloads) < 2:
        return
    ranks: dict[int, list[float]] = {}
    for _, group in ok.groupby("workload"):
        score = np.zeros(len(group))
        for o, goal in objectives.items():
            v = group[o].to_numpy(dtype=float) * (1 if goal == "min" else -1)
            span = v.max() - v.min()
            score += (v - v.min()) / span if span > 0 else 0.0
        for design, rank in zip(group["design_id"], score.argsort().argsort() + 1):
            ranks.setdefault(int(design), []).append(float(rank))
    complete = {d: r for d, r in ranks.items() if len(r) == len(workloads)}
    ordered = sorted(complete.items(), key=lambda kv: sum(kv[1]) / len(kv[1]))[:30]
    params = ok.drop_duplicates("design_id").set_index("design_id")
    page.heading("Designs ranked across workloads", anchor="ranking")
    page.text("Each design's rank within a workload is by the sum of its objectives scaled to [0, 1] there; the "
              "mean rank over the workloads orders the table (designs infeasible on any workload are left out).")
    page.table(["design", "mean rank", *[metric_label(a) for a in axes]],
               [[Cell(str(d), d), Cell(significant(sum(r) / len(r)), sum(r) / len(r)),
                 *[param_text(a, params.at[d, a]) for a in axes if a in params.columns]] for d, r in ordered])
