"""The sections of a run report, drawn from plain data: the summary, the per-einsum rows, the trace's spans and the
run record (reports/view.py). A report rebuilt from a run folder and one from a fresh Result are the same page."""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

from accel_sim.reports.format import (MISSING, bytes_format, cycles_format, format_metric, format_quantity,
                                      metric_label, percent, si_format)
from accel_sim.reports.headline import bound_sentence, headline_numbers
from accel_sim.reports.interactive import (occupancy_bars, roofline_figure, stacked_bars, timeline_figure,
                                          utilization_bars)
from accel_sim.reports.page import Cell, Page
from accel_sim.reports.view import above_roof, group_repeats, short_name

Row = Mapping[str, Any]


NO_RECORD = ("This run folder has no run.json (written by `accel-sim run` since this report format): the design "
             "card, roofline and provenance need it. Rerun `accel-sim run ... -o DIR`.")


def design_section(page: Page, record: Mapping[str, Any] | None, summary: Mapping[str, Any]) -> None:
    """The headline card: engines with their parameters and clock, memory levels, the workload, the overrides."""
    if not record:
        page.text(NO_RECORD, css="warn")
        return
    markup, markdown = design_card_markup(record, "design")
    page.raw(markup, markdown)


def design_card_markup(record: Mapping[str, Any], ident: str) -> tuple[str, list[str]]:
    """The design card of a run record as HTML (a div with id `ident`) and as Markdown lines."""
    design, work = record["design"], record["workload"]
    engines = [f"<li><b>{html.escape(e['name'])}</b>{' ×' + str(e['count']) if e['count'] > 1 else ''}: "
               f"{html.escape(e['kind'])}, {html.escape(_fields(e['fields']))}; "
               f"{si_format(e['clock_hz'], 'Hz')}, peak {si_format(e['peak_macs_per_s'], 'MAC/s')}"
               f"{' each, ' + si_format(e['count'] * e['peak_macs_per_s'], 'MAC/s') + ' in all' if e['count'] > 1 else ''}"
               "</li>" for e in design["engines"]]
    memory = [f"<li><b>{html.escape(m['name'])}</b> ({html.escape(m['technology'])}): "
              f"{bytes_format(m['capacity_bytes']) if m['capacity_bytes'] else 'unbounded'}, "
              f"{si_format(m['bandwidth_bytes_per_s'], 'B/s')}</li>" for m in design["memory"]]
    execution = ", ".join(f"{k} {v}" for k, v in design["execution"].items() if k != "kind")
    overrides = record.get("provenance", {}).get("overrides") or []
    workload = [f"<li><b>{html.escape(short_name(work['name']))}</b></li>",
                f"<li>{work['einsums']} einsums, {format_metric('total_macs', work['total_macs'])}</li>",
                f"<li>one run: {work['items_per_run']} {html.escape(work['item_unit'])}"
                f"{'s' if work['items_per_run'] != 1 else ''}</li>",
                "<li>operators: " + html.escape(", ".join(f"{op} ×{n}" for op, n in work["ops"].items())) + "</li>"]
    if short_name(work["name"]) != work["name"]:
        workload.append(f"<li class='note'>full name: {html.escape(work['name'])}</li>")
    return (
        f"<div class='card' id='{html.escape(ident)}'>"
        f"<div><h3>Design: {html.escape(design['arch'])}</h3><ul><li>clock {si_format(design['clock_hz'], 'Hz')}, "
        f"{format_quantity(design['technology_nm'], '')} nm, execution "
        f"{html.escape(design['execution'].get('kind', '?'))}{' (' + html.escape(execution) + ')' if execution else ''}"
        f"</li>{''.join(engines)}</ul></div>"
        f"<div><h3>Memory (outer → inner)</h3><ul>{''.join(memory)}</ul></div>"
        f"<div><h3>Workload</h3><ul>{''.join(workload)}</ul></div>"
        f"<div><h3>Overrides</h3><ul>{''.join(f'<li><code>{html.escape(o)}</code></li>' for o in overrides) or '<li>none</li>'}"
        "</ul></div></div>",
        [f"**Design** {design['arch']}: " + "; ".join(f"{e['name']} ({e['kind']})" for e in design["engines"]),
         "**Memory** " + "; ".join(f"{m['name']} {bytes_format(m['capacity_bytes']) if m['capacity_bytes'] else 'unbounded'}"
                                   for m in design["memory"]),
         f"**Workload** {work['name']}", "**Overrides** " + (", ".join(overrides) or "none")])


def _fields(fields: Mapping[str, Any]) -> str:
    """An engine's parameters as 'rows 128, cols 128, dataflow ws' (units from the field names)."""
    return ", ".join(f"{metric_label(k)} {format_metric(k, v)}" for k, v in fields.items()) or "no parameters"


def headline_section(page: Page, summary: Mapping[str, Any], record: Mapping[str, Any] | None) -> None:
    """The five numbers with units and the utilization, then the sentence on what bounds the run."""
    page.kpis(headline_numbers(summary))
    page.text(bound_sentence(summary, (record or {}).get("bandwidth_by_level", {})), css="sentence")
    points = (record or {}).get("roofline", {}).get("points", [])
    above = [p["einsum"] for p in above_roof(points)]
    if above:
        page.text(f"{len(above)} einsums run faster than their roofline allows ({', '.join(above[:8])}"
                  f"{' …' if len(above) > 8 else ''}): the engine model beats its bound, which is a bug.", css="warn")


def breakdown_section(page: Page, summary: Mapping[str, Any], rows: Sequence[Row]) -> None:
    """Stacked bars of cycles by bound and energy by component, per operator; per-engine utilization."""
    if rows:
        cycles: dict[str, dict[str, float]] = {}
        for r in rows:
            by_op = cycles.setdefault(str(r["op"]), {})
            by_op[str(r["bound"])] = by_op.get(str(r["bound"]), 0.0) + float(r["cycles"])
        components = list(summary.get("energy_by_component_j", {}))
        energy: dict[str, dict[str, float]] = {}
        for r in rows:
            by_op = energy.setdefault(str(r["op"]), {})
            for column, joules in r.items():
                part = next((c for c in components if column.startswith(f"energy_{c}_")), None)
                if part is not None and joules:
                    by_op[part] = by_op.get(part, 0.0) + float(joules)
        page.heading("Where the cycles and the energy go", anchor="breakdown")
        page.plot(stacked_bars(cycles, "cycles", "einsum cycles by what bounds them, per operator"),
                  "cycles per operator class, stacked by the roofline bound of each einsum", "cycles")
        page.plot(stacked_bars(energy, "j", "energy by component, per operator"),
                  "energy per operator class, stacked by component (one instance of the workload)", "energy")
    utilization = summary.get("utilization") or {}
    if utilization:
        page.heading("Engine utilization", anchor="utilization")
        page.plot(utilization_bars(utilization), "busy fraction of each engine over the run", "utilization")


def timeline_section(page: Page, spans: Sequence[Row], clock_hz: float, rows: Sequence[Row]) -> None:
    """The Gantt chart of what ran when (scheduled, NPU+PIM, pipelined and FPGA dataflow runs)."""
    if not spans:
        return
    info = {str(r["einsum"]): {"op": r["op"], "bound": r["bound"], "bytes": r.get("bytes")} for r in rows}
    page.heading("Timeline", anchor="timeline")
    page.plot(timeline_figure(spans, clock_hz, info), "einsums on engines over time: drag to zoom, double-click to "
              "reset; identical rows folded (× n)", "timeline")


def roofline_section(page: Page, record: Mapping[str, Any] | None) -> None:
    """The interactive hierarchical roofline."""
    if not record or not record["roofline"]["points"]:
        return
    page.heading("Roofline", anchor="roofline")
    page.plot(roofline_figure(record["roofline"]), "each einsum against the roofs of the engine it ran on: a "
              "ceiling per compute peak, a slope per memory level as that engine sees it; marker size is the share "
              "of einsum time", "roofline")


def einsum_section(page: Page, rows: Sequence[Row], levels: Sequence[str]) -> None:
    """The per-einsum table, layer repeats folded ('× 32'), `bound` first, sortable and filterable."""
    if not rows:
        return
    grouped = group_repeats(rows, ("engine", "op", "cycles", "energy_j", "bound"))
    grouped.sort(key=lambda r: -float(r["cycles"]) * r["repeats"])
    columns = ["bound", "einsum", "engine", "op", "× n", "cycles", "cycles × n", "roofline", "stall",
               "utilization", "energy", "MACs", *[f"{lv} bytes" for lv in levels]]
    table = []
    for r in grouped:
        n = r["repeats"]
        table.append([str(r["bound"]), str(r["einsum"]), str(r["engine"]), str(r["op"]), Cell(f"{n}", n),
                      Cell(cycles_format(r["cycles"]), float(r["cycles"])),
                      Cell(cycles_format(n * float(r["cycles"])), n * float(r["cycles"])),
                      Cell(cycles_format(r["roofline_cycles"]), float(r["roofline_cycles"])),
                      Cell(cycles_format(r["stall_cycles"]), float(r["stall_cycles"])),
                      Cell(percent(float(r["utilization"])), float(r["utilization"])),
                      Cell(si_format(float(r["energy_j"]), "J"), float(r["energy_j"])),
                      Cell(si_format(float(r["macs"])), float(r["macs"])),
                      *[Cell(bytes_format(float(r.get(f"{lv}_bytes", 0.0))), float(r.get(f"{lv}_bytes", 0.0)))
                        for lv in levels]])
    page.heading("Per einsum", anchor="einsums")
    page.text(f"{len(rows)} einsums in {len(grouped)} rows (layers that cost the same are one row, × n). "
              "Click a header to sort; type to filter.")
    page.table(columns, table, text_columns=4)


def totals_section(page: Page, summary: Mapping[str, Any]) -> None:
    """Every summary field with its unit, nested ones (per memory level) as their own table."""
    skip = {"arch", "workload", "energy_by_component_j", "cycles_by_bound", "utilization", "memory",
            "schedule_notes", "throughput_unit"}
    rows = []
    for key, value in summary.items():
        if key in skip or isinstance(value, (dict, list)):
            continue
        text = (si_format(float(value), str(summary.get("throughput_unit", "/s"))) if key == "throughput_per_s"
                and isinstance(value, (int, float)) else format_metric(key, value))
        rows.append([metric_label(key), text])
    for kind, cycles in (summary.get("cycles_by_bound") or {}).items():
        rows.append([f"einsum cycles bound by {kind}", cycles_format(cycles)])
    for part, joules in (summary.get("energy_by_component_j") or {}).items():
        rows.append([f"energy in {part}", si_format(joules, "J")])
    for note in summary.get("schedule_notes") or ():
        rows.append(["schedule note", str(note)])
    page.heading("Totals", anchor="totals")
    page.table(["metric", "value"], rows, scroll=False, filterable=False)
    memory = summary.get("memory") or {}
    if memory:
        fields = ("capacity_bytes", "peak_bytes", "spilled_bytes", "read_bytes", "write_bytes", "bandwidth_utilization")
        page.heading("Memory levels (outer → inner)", anchor="memory")
        page.table(["level", *(metric_label(f) for f in fields)],
                   [[level, *(format_metric(f, use.get(f)) if not (f == "capacity_bytes" and use.get(f) is None)
                              else "unbounded" for f in fields)] for level, use in memory.items()],
                   scroll=False, filterable=False)
        if any(use.get("capacity_bytes") for use in memory.values()):
            page.plot(occupancy_bars(memory), "Peak occupancy of each bounded level over the run, as a share of its "
                      "capacity (the lifetime placement's homes; hover for bytes and what spilled).", "occupancy")


def area_section(page: Page, record: Mapping[str, Any] | None) -> None:
    """mm² per engine group and per on-chip memory level."""
    if not record:
        return
    design = record["design"]
    parts = [(f"{e['name']} ({e['kind']})", e["count"] * e["area_mm2"]) for e in design["engines"]]
    parts += [(m["name"], m["area_mm2"]) for m in design["memory"]]
    parts = [(k, v) for k, v in parts if v > 0]
    total = sum(v for _, v in parts) or 1.0
    page.heading("Area by block", anchor="area")
    page.table(["block", "area", "share"], [[k, Cell(format_quantity(v, "mm²"), v), Cell(percent(v / total), v)]
                                            for k, v in sorted(parts, key=lambda kv: -kv[1])],
               scroll=False, filterable=False)


def provenance_footer(page: Page, record: Mapping[str, Any] | None, ident: str = "provenance", label: str = "") -> None:
    """Version, git revision, command, overrides, input hashes and date (`label` heads it when a page has two)."""
    origin = (record or {}).get("provenance") or {}
    lead = f"<b>{html.escape(label)}</b>: " if label else ""
    if not origin:
        page.raw(f"<footer id='{html.escape(ident)}'>{lead}provenance not recorded (no run.json in this folder)"
                 "</footer>", [f"_{label + ': ' if label else ''}provenance not recorded_"])
        return
    inputs = "; ".join(f"{html.escape(p)} <code>sha256:{h}</code>" for p, h in origin.get("inputs", {}).items())
    overrides = ", ".join(origin.get("overrides") or []) or "none"
    page.raw(f"<footer id='{html.escape(ident)}'><p>{lead}accel-sim {html.escape(str(origin.get('version', MISSING)))}, git "
             f"<code>{html.escape(str(origin.get('git_revision', MISSING)))}</code>, {html.escape(str(origin.get('date', '')))}"
             f"</p><p>command: <code>{html.escape(str(origin.get('command', MISSING)))}</code></p>"
             f"<p>overrides: <code>{html.escape(overrides)}</code></p><p>inputs: {inputs or 'none recorded'}</p></footer>",
             [f"_{label + ': ' if label else ''}accel-sim {origin.get('version')}, git {origin.get('git_revision')}, {origin.get('date')}; "
              f"command `{origin.get('command')}`; overrides {overrides}_"])
