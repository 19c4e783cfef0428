"""Report files (CSV, JSON, PNG) and rich tables for the terminal."""
from __future__ import annotations

import csv
import json
import math
import typing
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from accel_sim.engines import AnyEngine
from accel_sim.io.load import SEARCH_DIRS
from accel_sim.reports.format import bytes_format, cycles_format, format_metric, percent, si_format
from accel_sim.reports.headline import bound_sentence, headline_numbers
from accel_sim.reports.plots import roofline_data, write_roofline
from accel_sim.reports.view import RECORD_FILE, above_roof, roofline_record, run_record, short_name
from accel_sim.zoo import list_presets

if TYPE_CHECKING:
    from rich.table import Table

    from accel_sim.evaluate import Result
    from accel_sim.reports.render import FigureWorker
    from accel_sim.spec.workload import Workload


def workload_summary(workload: Workload) -> dict[str, object]:
    """Counts of a workload: einsums, views, MACs, ops, weight and activation bytes, unsupported operators."""
    produced_by_view = {v.output for v in workload.views}
    weights = [t for t in workload.tensors
               if workload.storage_class[t.name] == "weights" and t.name not in produced_by_view]
    outputs = {e.output.tensor for e in workload.einsums}
    return {
        "name": workload.name,
        "einsums": len(workload.einsums),
        "views": len(workload.views),
        "tensors": len(workload.tensors),
        "total_macs": workload.total_macs,
        "total_ops": workload.total_ops,
        "weight_bytes": sum(t.bytes for t in weights),
        "activation_bytes": sum(workload.tensor(name).bytes for name in outputs),
        "ops_by_type": dict(Counter(e.op for e in workload.einsums).most_common()),
        "unsupported_ops": list(workload.unsupported),
        "per_einsum": [{"name": e.name, "op": e.op, "macs": e.macs, "ops": e.ops, "einsum": str(e)}
                       for e in workload.einsums],
    }


def jsonable(value: object) -> object:
    """JSON-safe copy: numpy scalars become Python numbers, infinities and NaN become null."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


TIMELINE_FILE = "timeline.csv"   # the trace's spans, for runs whose engines overlap (read by `accel-sim report DIR`)
PNG_DPI = 200


def write_report(result: Result, out_dir: Path, figures: FigureWorker | None = None,
                 origin: Mapping[str, object] | None = None, provenance: Mapping[str, object] | None = None) -> None:
    """Write per_einsum.csv, summary.json (with `provenance`, the run's inputs and no date, so two identical runs
    write identical files), run.json (design, roofline, the report's `origin`: command, hashes, date) and
    roofline.png into `out_dir`; runs whose engines overlap also get timeline.csv and timeline.png. Given
    `figures`, the roofline PNG is only submitted to it: it is written when `figures.wait()` returns (the caller
    prints its tables first)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # an earlier run's files go first, its summary before anything: a run interrupted while writing leaves no
    # summary (which `check` and `report` read) beside files of two runs, and no report of the earlier run stays
    for name in ("summary.json", *STALE_FILES):
        (out_dir / name).unlink(missing_ok=True)
    write_csv(result.per_einsum_records, out_dir / "per_einsum.csv")
    (out_dir / RECORD_FILE).write_text(json.dumps(jsonable(run_record(result, origin)), indent=1) + "\n")
    if figures is None:
        write_roofline(roofline_data(result), out_dir / "roofline.png", PNG_DPI)
    else:
        figures.submit(roofline_data(result), out_dir / "roofline.png", dpi=PNG_DPI)
    if result.trace.concurrent:  # engines that overlap (arch.execution) also get their timeline drawn
        result.trace.plot_timeline().savefig(out_dir / "timeline.png", dpi=PNG_DPI)
        write_csv([{**s.__dict__, "einsum": s.label, "engine": s.resource} for s in result.trace.spans],
                  out_dir / TIMELINE_FILE)
    summary = {**result.summary(), **({"provenance": dict(provenance)} if provenance is not None else {})}
    written = out_dir / "summary.json.partial"
    written.write_text(json.dumps(jsonable(summary), indent=2) + "\n")
    written.replace(out_dir / "summary.json")   # last, and whole: its presence says the run finished


# what a run folder may hold from an earlier run that this one does not rewrite (its timeline, when the engines no
# longer overlap) or that no longer describes it (the pages `accel-sim report` made of the earlier run)
STALE_FILES = ("timeline.png", TIMELINE_FILE, "report.html", "report.md")


def write_csv(rows: Sequence[dict[str, object]], path: Path) -> None:
    """Rows of equal keys as a CSV file, numbers as Python prints them (no pandas import on the CLI path)."""
    fields = list(rows[0]) if rows else []
    with path.open("w", newline="") as handle:
        # a plain writer over each row's values in the header's order: DictWriter's per-row key checks cost a
        # quarter of writing Llama-2-7B's 837 rows (the same bytes)
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows([_plain(row[k]) for k in fields] for row in rows)


def _plain(value: object) -> object:
    """A numpy scalar as the Python number it holds (printed as Python prints it); anything else as it is."""
    return value.item() if hasattr(value, "item") else value


def print_run(result: Result, out_dir: Path, rows: int | None) -> None:
    """Per-einsum table (the heaviest `rows`, or all), totals, and where the report went."""
    from rich.console import Console  # rich loads on first use: `accel-sim run --json` and workers start without it
    from rich.table import Table  # rich loads on first use: `accel-sim run --json` and workers start without it

    console = Console(width=None if Console().is_terminal else 132)
    records = result.per_einsum_records
    shown = records if rows is None or len(records) <= rows else sorted(records, key=lambda r: -r["cycles"])[:rows]
    table = Table(title=f"{short_name(result.workload.name)} on {result.arch.name}: cost per einsum", show_lines=False)
    for name, justify in (("einsum", "left"), ("engine", "left"), ("op", "left"), ("MACs", "right"),
                          ("cycles", "right"), ("stall", "right"), ("util", "right"), ("energy", "right"),
                          ("roofline", "right"), ("bound by", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    for row in shown:
        table.add_row(str(row["einsum"]), str(row["engine"]), str(row["op"]), format_metric("macs", row["macs"]),
                      cycles_format(row["cycles"]), cycles_format(row["stall_cycles"]), percent(row["utilization"]),
                      si_format(row["energy_j"], "J"), cycles_format(row["roofline_cycles"]), str(row["bound"]))
    console.print(table)
    if len(shown) < len(records):
        console.print(f"[dim]{len(records) - len(shown)} lighter einsums not shown "
                      f"(--all prints them; all are in per_einsum.csv)[/dim]")
    above = [p["einsum"] for p in above_roof(roofline_record(result)["points"])]
    if above:  # the accuracy contract: an engine model that beats its own roofline is a bug to report
        console.print(f"[bold red]warning:[/bold red] {len(above)} einsums run faster than their roofline allows "
                      f"({', '.join(above[:8])}{' …' if len(above) > 8 else ''}): the engine model beats its bound, "
                      "which is a bug")
    summary = result.summary()
    console.print(totals_table(result, summary))
    if result.trace.memory:
        console.print(memory_table(result))
    for engine in result.arch.engines:
        rows = engine.resource_rows()
        if rows:
            resources = Table(title=f"{engine.name}: resource utilization")
            for name in ("resource", "used", "available", "utilization"):
                resources.add_column(name, justify="left" if name == "resource" else "right")
            for row in rows:
                resources.add_row(str(row["resource"]), f"{row['used']:,}", f"{row['available']:,}",
                                  percent(row["utilization"]))
            console.print(resources)
        run_here = {r.einsum for r in result.einsums if r.engine == engine.name}
        buffers = engine.buffer_rows([e for e in result.workload.einsums if e.name in run_here], result.workload)
        if buffers:
            held = Table(title=f"{engine.name}: buffers per core, the most its tiles hold at once")
            for name in ("buffer", "capacity", "peak", "use", "at einsum", "reduction chunks"):
                held.add_column(name, justify="left" if name in ("buffer", "at einsum") else "right")
            for row in buffers:
                held.add_row(str(row["buffer"]), bytes_format(row["capacity_bytes"]), bytes_format(row["peak_bytes"]),
                             percent(row["utilization"]), str(row["einsum"]), f"{row['reduce_splits']:,}")
            console.print(held)
    extra = f", timeline.png, {TIMELINE_FILE}" if result.trace.concurrent else ""
    console.print(f"report: {out_dir}/ (per_einsum.csv, summary.json, {RECORD_FILE}, roofline.png{extra}); "
                  f"`accel-sim report {out_dir}` writes the interactive report.html")


def totals_table(result: Result, summary: dict[str, object]) -> Table:
    """The run's totals: the headline numbers, the cycle split, energy and cycles by part, what bounds it."""
    from rich.table import Table  # rich loads on first use: `accel-sim run --json` and workers start without it

    totals = Table(title="totals", show_header=False, caption=bound_sentence(summary, bandwidths(result)))
    totals.add_column("metric")
    totals.add_column("value", justify="right")
    for label, value in headline_numbers(summary):
        totals.add_row(label, value)
    published = summary["published_area_mm2"]
    if published:
        totals.add_row("  published die area", format_metric("published_area_mm2", published))
    for key in ("einsums", "total_macs", "cycles"):
        totals.add_row(key if key != "total_macs" else "MACs", format_metric(key, summary[key]))
    # each einsum's split, summed: engines that overlap in time sum to more than the cycles above
    split = "  compute / fill-drain / stall" + (" (summed over engines)" if result.trace.concurrent else "")
    totals.add_row(split, " / ".join(cycles_format(summary[k]) for k in  # type: ignore[arg-type]
                                     ("compute_cycles", "fill_drain_cycles", "stall_cycles")))
    totals.add_row("roofline bound", f"{cycles_format(summary['roofline_cycles'])} cycles (achieved is "  # type: ignore[arg-type]
                                     f"{format_metric('cycles_over_roofline', summary['cycles_over_roofline'])})")
    totals.add_row("energy", format_metric("energy_j", summary["energy_j"]))
    energy = float(summary["energy_j"]) or 1.0  # type: ignore[arg-type]
    for component, joules in summary["energy_by_component_j"].items():  # type: ignore[union-attr]
        totals.add_row(f"  energy: {component}", percent(joules / energy))
    einsum_cycles = sum(summary["cycles_by_bound"].values()) or 1.0  # type: ignore[union-attr]  # above the makespan when engines overlap
    for kind, cycles in summary["cycles_by_bound"].items():  # type: ignore[union-attr]
        totals.add_row(f"einsum cycles bound by {kind}", percent(cycles / einsum_cycles))
    if result.trace.concurrent:
        totals.add_row("execution", f"{summary['execution']} ({summary['policy']})")
        if "replay_over_schedule" in summary:  # the scheduler's plan checked by the event-driven replay
            # The replay equals the plan when nothing contends, so a gap is the shared DRAM link the plan omits.
            flag = (" [bold red](over 10 %: transfers contend for the shared DRAM link, which the plan does not "
                    "model)[/bold red]" if summary["replay_gap_flagged"] else "")
            totals.add_row("  replay / schedule makespan",
                           format_metric("replay_over_schedule", summary["replay_over_schedule"]) + flag)
            for note in summary.get("schedule_notes", ()):  # type: ignore[union-attr]
                totals.add_row("  schedule note", str(note))
    for resource, busy in summary["utilization"].items():  # type: ignore[union-attr]
        totals.add_row(f"  utilization: {resource}", percent(busy))
    return totals


def bandwidths(result: Result) -> dict[str, float]:
    """Peak bytes per second of each memory level of the result's arch."""
    return {level.name: level.ports.peak_bytes_per_s for level in result.arch.memory}


def memory_table(result: Result) -> Table:
    """Per memory level: capacity, peak occupancy, spilled bytes, bytes read and written, bandwidth utilization."""
    from rich.table import Table  # rich loads on first use: `accel-sim run --json` and workers start without it

    # the peak counts what lives there across einsums (homes, parameters' copies), not an einsum's own tiles, which
    # the mapper fits beside it: a staging buffer or accumulator can show 0 B while it carries all the traffic
    table = Table(title="memory levels (outer -> inner)",
                  caption="live peak: tensors kept across einsums and parameters, not tiles; spilled: homes refused")
    for name in ("level", "capacity", "live peak", "spilled", "read", "written", "bandwidth used"):
        table.add_column(name, justify="left" if name == "level" else "right")
    for use in result.trace.memory:
        capacity = bytes_format(use.capacity_bytes) if use.capacity_bytes is not None else "unbounded"
        table.add_row(use.level, capacity, bytes_format(use.peak_bytes), bytes_format(use.spilled_bytes),
                      bytes_format(use.read_bytes), bytes_format(use.write_bytes), percent(use.utilization))
    return table


def print_workload(workload: Workload) -> None:
    """Human summary of a workload file."""
    from rich.console import Console  # rich loads on first use: `accel-sim run --json` and workers start without it
    from rich.table import Table  # rich loads on first use: `accel-sim run --json` and workers start without it

    summary = workload_summary(workload)
    table = Table(title=f"workload {workload.name}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for label, key in (("einsums", "einsums"), ("views (zero compute)", "views"), ("tensors", "tensors")):
        table.add_row(label, str(summary[key]))
    table.add_row("MACs", f"{summary['total_macs']:,}")
    table.add_row("operator applications", f"{summary['total_ops']:,}")
    table.add_row("weight bytes", bytes_format(summary["weight_bytes"]))  # type: ignore[arg-type]
    table.add_row("activation bytes", bytes_format(summary["activation_bytes"]))  # type: ignore[arg-type]
    table.add_row("einsums by operator", ", ".join(f"{k} {v}" for k, v in summary["ops_by_type"].items()))
    unsupported = summary["unsupported_ops"]
    table.add_row("unsupported operators", ", ".join(unsupported) if unsupported else "none")
    Console().print(table)


def print_listing() -> None:
    """Shipped architecture configs, workloads, zoo presets and engine kinds."""
    from rich.console import Console  # rich loads on first use: `accel-sim run --json` and workers start without it

    console = Console()
    arch_dir = SEARCH_DIRS["arch"]  # every shipped config, subfolders too, named as `run` accepts them
    console.print("[bold]architectures[/bold] (arch_configs/): " +
                  ", ".join(sorted(p.relative_to(arch_dir).with_suffix("").as_posix()
                                   for p in arch_dir.rglob("*.yaml"))))
    console.print("[bold]workloads[/bold] (workloads/): " +
                  ", ".join(sorted(p.name for p in SEARCH_DIRS["workload"].glob("*")
                                   if p.suffix in (".yaml", ".onnx"))))
    console.print("[bold]zoo presets[/bold]: " + ", ".join(list_presets()))
    union = typing.get_args(typing.get_args(AnyEngine)[0])
    kinds = [typing.get_args(m.model_fields["kind"].annotation)[0] for m in union]
    console.print("[bold]engine kinds[/bold]: " + ", ".join(kinds))
