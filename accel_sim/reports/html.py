"""Self-contained, interactive HTML reports (plotly.js inlined: they open offline) and Markdown summaries, for runs
and sweeps. Matplotlib PNGs for papers are written beside them at 200 dpi; every plot's camera button saves SVG."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from accel_sim.dse.pareto import hypervolume, hypervolume_by_round, objective_matrix, pareto_front
from accel_sim.dse.store import load_results, read_meta
from accel_sim.errors import AccelSimError, ConfigError
from accel_sim.reports import compare_page, run_page, sweep_page
from accel_sim.reports.figures import parallel_figure, pareto_figure
from accel_sim.reports.page import Page
from accel_sim.reports.run_files import RunFiles, read_run
from accel_sim.reports.tables import write_report
from accel_sim.reports.view import folder_name, short_name

if TYPE_CHECKING:
    import pandas as pd

    from accel_sim.evaluate import Result

DPI = 200            # PNGs for papers
DESIGN_REPORTS = 12  # front points of a sweep that get their own run report (the knee first)


def write_run_report(result: Result, out_dir: str | Path, origin: Mapping[str, object] | None = None,
                     provenance: Mapping[str, object] | None = None) -> tuple[Path, Path]:
    """The run folder `accel-sim run -o` writes (`origin`: the report's provenance, reports/view.provenance;
    `provenance`: the run's inputs for summary.json), then report.html and report.md from it: one page, whether
    the run was evaluated now or earlier."""
    write_report(result, Path(out_dir), origin=origin, provenance=provenance)
    return write_folder_report(out_dir)


def write_folder_report(folder: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.html and report.md from the files `accel-sim run -o DIR` wrote (summary.json, per_einsum.csv,
    run.json and, for runs whose engines overlap, timeline.csv)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError("not a run folder", file=folder, fix="give a folder written by `accel-sim run -o DIR`")
    run = read_run(folder)
    out = Path(out_dir) if out_dir is not None else folder
    return _run_page(run).write(out)


def write_compare_report(before: str | Path, after: str | Path, out_dir: str | Path | None = None,
                         rtol: float = 0.02) -> tuple[Path, Path]:
    """compare.html and compare.md: run `after` (B) against run `before` (A), each a run folder or a summary.json;
    written into `out_dir`, by default B's folder. Einsums and metrics count as moved beyond `rtol`."""
    a, b = read_run(before), read_run(after)
    out = Path(out_dir) if out_dir is not None else (b.path if b.path.is_dir() else b.path.parent)
    return compare_page.comparison(a, b, rtol).write(out, stem="compare")


def _run_page(run: RunFiles) -> Page:
    record, summary, rows = run.record, run.summary, run.rows
    page = Page(run.title)
    run_page.design_section(page, record, summary)
    run_page.headline_section(page, summary, record)
    run_page.breakdown_section(page, summary, rows)
    run_page.timeline_section(page, run.spans, run.clock_hz, rows)
    run_page.roofline_section(page, record)
    run_page.einsum_section(page, rows, run.levels)
    run_page.totals_section(page, summary)
    run_page.area_section(page, record)
    run_page.provenance_footer(page, record)
    return page


def write_sweep_report(store: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.html, report.md and pareto.csv for a sweep store: counts, per workload a Pareto view whose points open
    their design's report (designs/point_N/), parallel coordinates, hypervolume; a ranking across workloads."""
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    store = Path(store)
    out = Path(out_dir) if out_dir is not None else store.parent
    out.mkdir(parents=True, exist_ok=True)
    meta = read_meta(store)
    objectives: dict[str, str] = json.loads(meta.get("objectives", "{}"))
    axes: list[str] = json.loads(meta.get("axes", "[]"))
    frame = load_results(store)
    page = Page(f"sweep {meta.get('spec_name', store.stem)}")
    page.text(f"store {store}: {len(frame)} of {meta.get('points', '?')} points finished.")
    page.heading("Points by status")
    counts = frame.groupby(["workload", "status"]).size().reset_index(name="points") if len(frame) else frame
    page.table(list(counts.columns), [[str(v) for v in row] for row in counts.itertuples(index=False)],
               scroll=False, filterable=False)
    problems = frame[frame["status"].isin(["invalid", "error"])] if len(frame) else frame
    if len(problems):
        page.heading("Points that could not be evaluated")
        page.table(["point", "workload", "status", "error"],
                   [[str(r.point_id), str(r.workload), str(r.status), str(r.error)] for r in problems.itertuples()])
    fronts = [_workload_sections(page, str(w), g, objectives, axes, meta, out)
              for w, g in (frame.groupby("workload") if len(frame) and objectives else [])]
    fronts = [f for f in fronts if f is not None]
    if fronts:
        pd.concat(fronts).to_csv(out / "pareto.csv", index=False)
    if objectives and len(frame):
        sweep_page.ranking_table(page, frame, objectives, [a for a in axes if a in frame.columns])
    if meta.get("spec_text"):
        page.heading("Sweep spec")
        page.pre(meta["spec_text"])
    return page.write(out)


def _workload_sections(page: Page, workload: str, group: pd.DataFrame, objectives: Mapping[str, str],
                       axes: Sequence[str], meta: Mapping[str, str], out: Path) -> pd.DataFrame | None:
    """One workload's front: hypervolume explained, the Pareto view, parallel coordinates, the front table."""
    feasible = group[group["status"] == "ok"]
    if feasible.empty:
        return None
    front = pareto_front(feasible, objectives)
    shown_axes = [a for a in axes if a in group.columns]
    page.heading(f"{short_name(workload)}: Pareto front over "
                 f"{', '.join(f'{m} ({g})' for m, g in objectives.items())}", anchor=f"front-{_stem(workload)}")
    matrix = objective_matrix(feasible, objectives)
    lo, hi = matrix.min(axis=0), matrix.max(axis=0)
    if (hi > lo).all():
        reference = [1.1] * len(objectives)
        hv = hypervolume((objective_matrix(front, objectives) - lo) / (hi - lo), reference)
        page.text(sweep_page.hypervolume_text(hv, len(objectives), len(front), len(feasible)))
        if "round" in feasible.columns and feasible["round"].notna().all():  # a search: the front round by round
            rounds, volumes = hypervolume_by_round((matrix - lo) / (hi - lo), feasible["round"].to_numpy(), reference)
            sweep_page.hypervolume_plot(page, rounds, volumes, len(objectives), _stem(workload))
    if len(objectives) > 2:
        page.text(f"The front is over {len(objectives)} objectives but a scatter shows two: a front point can look "
                  "dominated in this view because it is better in an objective not on an axis. Pick the axes above "
                  "the plot to see each pair.", css="sentence")
    knee_ids = {int(p) for p in front.loc[front["knee"], "point_id"]}
    links = _design_reports(front, knee_ids, workload, meta, out)
    front_ids = {int(p) for p in front["point_id"]}
    stem = _stem(workload)
    sweep_page.pareto_plot(page, group, objectives, shown_axes, front_ids, knee_ids, links, stem)
    columns = [a for a in shown_axes if group[a].nunique() > 1] + list(objectives)
    sweep_page.parallel_plot(page, feasible, columns, front_ids, stem)
    sweep_page.front_table(page, front, shown_axes, objectives, links)
    pareto_figure(group, objectives, front, workload).savefig(out / f"pareto_{stem}.png", dpi=DPI)
    parallel_figure(feasible, columns, front_ids, workload).savefig(out / f"parallel_{stem}.png", dpi=DPI)
    return front


def _stem(name: str) -> str:
    """A workload's short folder name (view.folder_name) with only letters, digits and '_': PNG names, plot ids."""
    return "".join(c if c.isalnum() else "_" for c in folder_name(name))


def _design_reports(front: pd.DataFrame, knee_ids: set[int], workload: str, meta: Mapping[str, str], out: Path
                    ) -> dict[int, str]:
    """Run reports of up to DESIGN_REPORTS front points (knee first), evaluated again from the sweep spec the store
    names; point id -> the report's path relative to `out`. None when the spec file is gone."""
    # lazy: the sweep spec and the evaluation pipeline load only when a sweep report writes design pages
    from accel_sim.dse.spec import load_sweep
    from accel_sim.evaluate import evaluate
    from accel_sim.io.load import load_arch, load_workload
    from accel_sim.reports.view import provenance

    spec_file = meta.get("spec_file")
    if not spec_file or not Path(spec_file).is_file():
        return {}
    try:
        sweep = load_sweep(spec_file)
    except AccelSimError:  # the spec changed since the sweep ran: no design pages rather than wrong ones
        return {}
    ids = sorted(int(p) for p in front["point_id"])
    chosen = sorted(ids, key=lambda p: (p not in knee_ids, p))[:DESIGN_REPORTS]
    designs = {int(r.point_id): int(r.design_id) for r in front.itertuples()}
    links = {}
    for pid in chosen:
        task = next((t for t in sweep.tasks(designs=[designs[pid]]) if t.point_id == pid), None)
        if task is None or task.workload_label != workload:
            continue
        try:
            result = evaluate(load_arch(task.arch, task.arch_overrides),
                              load_workload(task.workload, overrides=task.workload_overrides), task.objective)
        except AccelSimError:
            continue
        command = f"accel-sim report {task.arch} {task.workload} " + " ".join(
            f"--set {o}" for o in (*task.arch_overrides, *(f"workload.{w}" for w in task.workload_overrides)))
        origin = provenance(command.strip(), [task.arch, task.workload, spec_file],
                            [*task.arch_overrides, *(f"workload.{w}" for w in task.workload_overrides)])
        folder = out / "designs" / f"point_{pid}"
        write_run_report(result, folder, origin)
        links[pid] = f"designs/point_{pid}/report.html"
    return links
