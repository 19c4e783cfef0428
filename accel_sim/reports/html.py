"""Self-contained HTML reports (plots embedded as PNG data URIs) and Markdown summaries, for runs and sweeps."""
from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from accel_sim.dse.pareto import hypervolume, objective_matrix, pareto_front
from accel_sim.dse.store import load_results, read_meta
from accel_sim.energy.components import level_area_mm2
from accel_sim.errors import ConfigError
from accel_sim.reports.figures import _figure, breakdown_figure, parallel_figure, pareto_figure

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.evaluate import Result

TABLE_ROWS = 60
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
pre{background:#f7f7f7;padding:.6em;font-size:12px;overflow:auto}.note{color:#666;font-size:13px}"""


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _html_table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="", border=0)


class _Doc:
    """Sections of one report, rendered both as HTML and as Markdown."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.html: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.md: list[str] = [f"# {title}", ""]

    def heading(self, text: str) -> None:
        self.html.append(f"<h2>{html.escape(text)}</h2>")
        self.md += [f"## {text}", ""]

    def text(self, text: str) -> None:
        self.html.append(f"<p class='note'>{html.escape(text)}</p>")
        self.md += [text, ""]

    def table(self, frame: pd.DataFrame, limit: int = TABLE_ROWS) -> None:
        shown = frame.head(limit)
        self.html.append(_html_table(shown))
        self.md += [_md_table(shown), ""]
        if len(frame) > limit:
            self.text(f"{len(frame) - limit} more rows not shown.")

    def figure(self, fig: Figure, caption: str, png: Path | None = None) -> None:
        self.html.append(f"<figure><img alt='{html.escape(caption)}' src='{_png(fig)}'>"
                         f"<figcaption class='note'>{html.escape(caption)}</figcaption></figure>")
        if png is not None:
            fig.savefig(png, dpi=100)
            self.md += [f"![{caption}]({png.name})", ""]

    def image(self, png: Path, caption: str) -> None:
        data = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
        self.html.append(f"<figure><img alt='{html.escape(caption)}' src='{data}'>"
                         f"<figcaption class='note'>{html.escape(caption)}</figcaption></figure>")
        self.md += [f"![{caption}]({png.name})", ""]

    def pre(self, text: str) -> None:
        self.html.append(f"<pre>{html.escape(text)}</pre>")
        self.md += ["```yaml", text.rstrip(), "```", ""]

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{STYLE}</style></head><body>{''.join(self.html)}</body></html>\n")
        html_path, md_path = out_dir / "report.html", out_dir / "report.md"
        html_path.write_text(page)
        md_path.write_text("\n".join(self.md).rstrip() + "\n")
        return html_path, md_path


def _totals_frame(summary: Mapping[str, object]) -> pd.DataFrame:
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    rows = [(k, v) for k, v in summary.items() if not isinstance(v, (dict, list))]
    return pd.DataFrame(rows, columns=["metric", "value"]).astype({"value": object})


def area_breakdown(result: Result) -> dict[str, float]:
    """mm² per engine and per on-chip memory level (the parts of Result.area_mm2)."""
    node = result.arch.technology_nm
    parts = {e.name: e.area_mm2(node) for e in result.arch.engines}
    parts.update({level.name: level_area_mm2(level, node) for level in result.arch.memory})
    return {k: v for k, v in parts.items() if v > 0}


def write_run_report(result: Result, out_dir: str | Path) -> tuple[Path, Path]:
    """report.html and report.md for one evaluated run: totals, per-einsum table, energy, area, roofline."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = result.summary()
    doc = _Doc(f"{result.workload.name} on {result.arch.name}")
    _run_sections(doc, summary, result.per_einsum(), out_dir)
    doc.heading("Area by block")
    parts = area_breakdown(result)
    doc.figure(breakdown_figure(parts, "modelled area", "mm²"), "area by engine and on-chip memory level",
               out_dir / "area.png")
    doc.heading("Roofline")
    doc.figure(result.plot_roofline(), "hierarchical roofline: each einsum's bound and achieved point",
               out_dir / "roofline.png")
    return doc.write(out_dir)


def write_folder_report(folder: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.html and report.md from the files `accel-sim run -o DIR` wrote (summary.json, per_einsum.csv)."""
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use


    folder = Path(folder)
    out = Path(out_dir) if out_dir is not None else folder
    summary_path = folder / "summary.json"
    if not summary_path.exists():
        raise ConfigError("the folder holds no summary.json", file=folder,
                          fix="give a folder written by `accel-sim run -o DIR`, or a sweep store")
    try:
        summary = json.loads(summary_path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=summary_path, line=exc.lineno,
                          fix="rerun `accel-sim run -o DIR` to rewrite it") from None
    per_einsum = pd.read_csv(folder / "per_einsum.csv") if (folder / "per_einsum.csv").exists() else None
    doc = _Doc(f"{summary.get('workload', '?')} on {summary.get('arch', '?')}")
    out.mkdir(parents=True, exist_ok=True)
    _run_sections(doc, summary, per_einsum, out)
    if (folder / "roofline.png").exists():
        doc.heading("Roofline")
        doc.image(folder / "roofline.png", "hierarchical roofline (from the run folder)")
    trace = folder / "trace.csv"
    if trace.exists():
        _timeline(doc, pd.read_csv(trace), out)
    return doc.write(out)


def _run_sections(doc: _Doc, summary: Mapping[str, object], per_einsum: pd.DataFrame | None, out_dir: Path) -> None:
    doc.heading("Totals")
    doc.table(_totals_frame(summary))
    energy = summary.get("energy_by_component_j") or {}
    if energy:
        doc.heading("Energy by component")
        doc.figure(breakdown_figure(energy, "energy per run", "J"), "energy by component", out_dir / "energy.png")
    if per_einsum is not None and len(per_einsum):
        doc.heading("Per einsum (heaviest first)")
        doc.table(per_einsum.sort_values("cycles", ascending=False), limit=TABLE_ROWS)


def _timeline(doc: _Doc, trace: pd.DataFrame, out_dir: Path) -> None:
    """A Gantt chart from a trace with einsum, engine, start and end columns."""
    needed = {"einsum", "engine", "start", "end"}
    if not needed <= set(trace.columns):
        doc.text(f"trace.csv lacks {', '.join(sorted(needed - set(trace.columns)))}: no timeline drawn.")
        return
    fig = _figure(8.0, 3.5)
    ax = fig.add_subplot()
    engines = sorted(trace["engine"].unique())
    for i, engine in enumerate(engines):
        rows = trace[trace["engine"] == engine]
        ax.broken_barh(list(zip(rows["start"], rows["end"] - rows["start"])), (i - 0.4, 0.8), color=f"C{i}")
    ax.set_yticks(range(len(engines)), engines)
    ax.set_xlabel("time")
    doc.heading("Timeline")
    doc.figure(fig, "einsums on engines over time (trace.csv)", out_dir / "timeline.png")


def write_sweep_report(store: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.html, report.md and pareto.csv for a sweep store: counts, fronts, Pareto scatter, parallel coordinates."""
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    store = Path(store)
    out = Path(out_dir) if out_dir is not None else store.parent
    out.mkdir(parents=True, exist_ok=True)
    meta = read_meta(store)
    objectives: dict[str, str] = json.loads(meta.get("objectives", "{}"))
    axes: list[str] = json.loads(meta.get("axes", "[]"))
    frame = load_results(store)
    doc = _Doc(f"sweep {meta.get('spec_name', store.stem)}")
    doc.text(f"store {store}: {len(frame)} of {meta.get('points', '?')} points finished.")
    doc.heading("Points by status")
    counts = frame.groupby(["workload", "status"]).size().reset_index(name="points") if len(frame) else frame
    doc.table(counts)
    problems = frame[frame["status"].isin(["invalid", "error"])] if len(frame) else frame
    if len(problems):
        doc.heading("Points that could not be evaluated")
        doc.table(problems[["point_id", "workload", "status", "error"]], limit=20)
    fronts = []
    for workload, group in (frame.groupby("workload") if len(frame) else []):
        feasible = group[group["status"] == "ok"]
        if feasible.empty or not objectives:
            continue
        front = pareto_front(feasible, objectives)
        fronts.append(front)
        doc.heading(f"{workload}: Pareto front over {', '.join(f'{m} ({g})' for m, g in objectives.items())}")
        matrix = objective_matrix(feasible, objectives)
        lo, hi = matrix.min(axis=0), matrix.max(axis=0)
        span = (hi - lo) if (hi > lo).all() else None
        if span is not None:
            hv = hypervolume((objective_matrix(front, objectives) - lo) / span, [1.1] * len(objectives))
            doc.text(f"{len(front)} of {len(feasible)} feasible points are on the front; hypervolume "
                     f"{hv:.4f} of the objectives scaled to [0, 1] with reference point 1.1 per objective.")
        knee = front[front["knee"]]
        if len(knee):
            doc.text("knee: " + ", ".join(f"{p} = {_fmt(knee.iloc[0][p])}" for p in axes + list(objectives)
                                          if p in knee.columns))
        stem = "".join(c if c.isalnum() else "_" for c in workload)
        doc.figure(pareto_figure(group, objectives, front, str(workload)),
                   "Pareto scatter: front circled, knee starred",
                   out / f"pareto_{stem}.png")
        columns = [a for a in axes if a in group.columns and group[a].nunique() > 1] + list(objectives)
        doc.figure(parallel_figure(feasible, columns, set(front["point_id"]), str(workload)),
                   "parallel coordinates of parameters and objectives", out / f"parallel_{stem}.png")
        doc.table(front[["point_id", *[a for a in axes if a in front.columns], *objectives, "knee"]]
                  .sort_values(list(objectives)[0]))
    if fronts:
        pd.concat(fronts).to_csv(out / "pareto.csv", index=False)
    if meta.get("spec_text"):
        doc.heading("Sweep spec")
        doc.pre(meta["spec_text"])
    return doc.write(out)
