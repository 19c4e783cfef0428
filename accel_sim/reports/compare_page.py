"""A page comparing two runs, B against A (the baseline): the headline numbers with their change, the two designs side
by side with what differs, memory traffic and energy by component side by side, the einsums that moved (those that
changed their bound first), every total, and both provenance footers. `accel-sim report A B` and
`accel-sim check B --baseline A --html DIR` write it."""
from __future__ import annotations

import html
import math
from typing import Any, Mapping, Sequence

from accel_sim.reports.format import MISSING, change_text, format_metric, metric_label, relative_change, si_format
from accel_sim.reports.headline import HIGHER_IS_BETTER, headline_values
from accel_sim.reports.interactive import stacked_bars
from accel_sim.reports.page import Cell, Page
from accel_sim.reports.regression import IGNORED, flat_numbers, moved
from accel_sim.reports.run_files import RunFiles, number
from accel_sim.reports.run_page import NO_RECORD, design_card_markup, provenance_footer
from accel_sim.reports.view import group_repeats

SIDES = ("A", "B")
MEMORY_FIELDS = ("read_bytes", "write_bytes", "peak_bytes", "spilled_bytes", "bandwidth_utilization")
EINSUM_METRICS = ("cycles", "energy_j", "stall_cycles", "utilization")   # beside each level's bytes


def comparison(a: RunFiles, b: RunFiles, rtol: float) -> Page:
    """The comparison page of run `b` against run `a`; einsums and totals count as moved beyond `rtol`."""
    title = a.title if a.title == b.title else f"{a.title} vs {b.title}"
    page = Page(f"Comparison: {title}")
    page.text(f"A (baseline) is {a.path}; B is {b.path}. Every change is B relative to A; metrics count as moved "
              f"when they differ by more than {rtol:.3g} of A's value.")
    headline_section(page, a, b)
    design_section(page, a, b)
    breakdown_section(page, a, b)
    memory_section(page, a, b, rtol)
    einsum_section(page, a, b, rtol)
    totals_section(page, a, b, rtol)
    provenance_footer(page, a.record, "provenance-a", f"A ({a.path})")
    provenance_footer(page, b.record, "provenance-b", f"B ({b.path})")
    return page


def _tone(label: str, change: float) -> str:
    """'better' or 'worse' for a headline change (lower latency and energy are better), '' when unchanged."""
    if change == 0 or math.isnan(change):
        return ""
    return "better" if (change > 0) == (label in HIGHER_IS_BETTER) else "worse"


def headline_section(page: Page, a: RunFiles, b: RunFiles) -> None:
    """B's five numbers and utilization, each with its change from A's; one sentence on latency and energy."""
    tiles, md = [], []
    values = list(zip(headline_values(a.summary), headline_values(b.summary)))
    for (label, before, before_text), (_, after, after_text) in values:
        change = relative_change(before, after)
        data = "" if math.isnan(change) or math.isinf(change) else f" data-change='{change!r}'"
        tiles.append(f"<div class='kpi' data-kpi='{html.escape(label)}'{data}><b>{html.escape(after_text)}</b>"
                     f"<i class='{_tone(label, change)}'>{change_text(before, after)} vs "
                     f"{html.escape(before_text)}</i><span>{html.escape(label)}</span></div>")
        md.append(f"**{after_text}** {label} ({change_text(before, after)} vs {before_text})")
    page.heading("Headline: B against A", anchor="headline")
    page.raw(f"<div class='kpis'>{''.join(tiles)}</div>", [" · ".join(md)])
    page.text(change_sentence(values[0][0][1], values[0][1][1], values[2][0][0], values[2][0][1], values[2][1][1]),
              css="sentence")


def change_sentence(latency_a: float, latency_b: float, energy_label: str, energy_a: float, energy_b: float) -> str:
    """'B is 35.0 % faster than A and uses 12.0 % less energy per inference.' (or slower, more, the same)."""
    def phrase(before: float, after: float, less: str, more: str) -> str:
        change = relative_change(before, after)
        if math.isnan(change) or change == 0:
            return "the same"
        return f"{change_text(before, after).lstrip('+−')} {less if change < 0 else more}"

    speed = phrase(latency_a, latency_b, "faster", "slower")
    energy = phrase(energy_a, energy_b, "less", "more")
    first = "B runs as fast as A" if speed == "the same" else f"B is {speed} than A"
    second = (f"uses the same {energy_label}" if energy == "the same" else f"uses {energy} {energy_label}")
    return f"{first} and {second}."


def design_section(page: Page, a: RunFiles, b: RunFiles) -> None:
    """The two design cards side by side, then a table of every design field that differs."""
    page.heading("Designs side by side", anchor="designs")
    if not (a.record and b.record):
        page.text(NO_RECORD, css="warn")
        return
    cards = [design_card_markup(run.record, f"design-{side.lower()}") for side, run in zip(SIDES, (a, b))]  # type: ignore[arg-type]
    page.raw("<div class='pair'>" + "".join(f"<div><h3>{side}: {html.escape(str(run.path))}</h3>{markup}</div>"
                                            for side, run, (markup, _) in zip(SIDES, (a, b), cards)) + "</div>",
             [line for side, (_, lines) in zip(SIDES, cards) for line in (f"**{side}**", *lines)])
    fields_a, fields_b = design_fields(a.record), design_fields(b.record)
    differ = [key for key in dict.fromkeys([*fields_a, *fields_b]) if fields_a.get(key) != fields_b.get(key)]
    if not differ:
        page.text("The two designs are the same (engines, memory levels, clock, workload and overrides).")
        return
    page.text(f"{len(differ)} design fields differ:")
    page.table(["field", "A", "B"], [[_field_label(key), _field_text(key, fields_a.get(key)), _field_text(key, fields_b.get(key))]
                                     for key in differ], scroll=False, filterable=False)


def design_fields(record: Mapping[str, Any]) -> dict[str, object]:
    """A run record's design and workload as flat 'engine.field' / 'level.field' keys, to find what differs."""
    design, work = record["design"], record["workload"]
    out: dict[str, object] = {"arch": design["arch"], "clock_hz": design["clock_hz"],
                              "technology_nm": design["technology_nm"]}
    out.update({f"execution {k}": v for k, v in design["execution"].items()})
    for e in design["engines"]:
        out.update({f"{e['name']}.{k}": v for k, v in {"kind": e["kind"], "count": e["count"], **e["fields"],
                                                        "clock_hz": e["clock_hz"]}.items()})
    for m in design["memory"]:
        out.update({f"{m['name']}.{k}": m[k] for k in ("technology", "capacity_bytes", "bandwidth_bytes_per_s")})
    out.update({"workload": work["name"], "einsums": work["einsums"], "total_macs": work["total_macs"],
                "overrides": ", ".join(record.get("provenance", {}).get("overrides") or []) or "none"})
    return out


def _field_label(key: str) -> str:
    """'dram.bandwidth_bytes_per_s' -> 'dram bandwidth'."""
    owner, _, leaf = key.rpartition(".")
    return f"{owner} {metric_label(leaf)}" if owner else metric_label(key)


def _field_text(key: str, value: object) -> str:
    """A design field's value with its unit; an unbounded capacity says so; absent on this side is a dash."""
    if value is None:
        return "unbounded" if key.endswith("capacity_bytes") else MISSING
    return format_metric(key.rsplit(".", 1)[-1], value)


def breakdown_section(page: Page, a: RunFiles, b: RunFiles) -> None:
    """Energy by component and einsum cycles by bound, A's bar beside B's."""
    page.heading("Energy and cycles side by side", anchor="breakdown")
    for key, unit, what, name, part_name in (
            ("energy_by_component_j", "j", "energy by component", "energy", "component"),
            ("cycles_by_bound", "cycles", "einsum cycles by what bounds them", "cycles", "bound")):
        table = {side: {k: float(v) for k, v in (run.summary.get(key) or {}).items()}
                 for side, run in zip(SIDES, (a, b))}
        page.plot(stacked_bars(table, unit, what), f"{what}: A's bar beside B's", name)
        parts = list(dict.fromkeys([*table["A"], *table["B"]]))
        page.table([part_name, "A", "B", "change"],
                   [_compared(part, f"x_{unit}", table["A"].get(part, math.nan), table["B"].get(part, math.nan))
                    for part in parts], scroll=False, filterable=False)


def _compared(label: str, key: str, before: float, after: float, unit: str | None = None) -> list[Cell | str]:
    """A table row: label, A's value, B's value (formatted by `key`'s unit, or in `unit` with SI prefixes), the
    change (sorts by its size)."""
    def text(value: float) -> str:
        return format_metric(key, value) if unit is None or math.isnan(value) else si_format(value, unit)

    change = relative_change(before, after)
    return [label, Cell(text(before), before if math.isfinite(before) else None),
            Cell(text(after), after if math.isfinite(after) else None),
            Cell(change_text(before, after), change if math.isfinite(change) else None)]


def memory_section(page: Page, a: RunFiles, b: RunFiles, rtol: float) -> None:
    """Per memory level: traffic of A beside B (a plot), then each level's fields with their change."""
    memory = {side: run.summary.get("memory") or {} for side, run in zip(SIDES, (a, b))}
    levels = list(dict.fromkeys([*memory["A"], *memory["B"]]))
    if not levels:
        return
    page.heading("Memory levels side by side", anchor="memory")
    traffic = {side: {lv: (use.get("read_bytes") or 0.0) + (use.get("write_bytes") or 0.0)
                      for lv, use in memory[side].items()} for side in SIDES}
    page.plot(stacked_bars(traffic, "bytes", "bytes read and written per level"),
              "memory traffic per level (reads + writes): A's bar beside B's", "traffic")
    rows = []
    for level in levels:
        for field in MEMORY_FIELDS:
            before, after = (number(memory[side].get(level, {}), field) for side in SIDES)
            if not (math.isnan(before) and math.isnan(after)):
                row = _compared(level, field, before, after)
                rows.append([row[0], metric_label(field), *row[1:], "moved" if moved(before, after, rtol) else ""])
    page.table(["level", "metric", "A", "B", "change", ""], rows, text_columns=2, scroll=False, filterable=False)


def einsum_section(page: Page, a: RunFiles, b: RunFiles, rtol: float) -> None:
    """The einsums whose bound changed or whose metrics moved, layer repeats folded, bound changes first."""
    if not (a.rows and b.rows):
        return
    levels = list(dict.fromkeys([*a.levels, *b.levels]))
    metrics = (*EINSUM_METRICS, *(f"{lv}_bytes" for lv in levels))
    rows_a, rows_b = ({str(r["einsum"]): r for r in run.rows} for run in (a, b))
    changed = [row for name in dict.fromkeys([*rows_a, *rows_b])
               if (row := _einsum_change(name, rows_a.get(name), rows_b.get(name), metrics, rtol)) is not None]
    page.heading("Einsums that moved", anchor="einsums")
    rebound = [r for r in changed if r["bound_changed"]]
    page.text(f"{len(changed)} of {len(dict.fromkeys([*rows_a, *rows_b]))} einsums changed their bound or moved "
              f"beyond {rtol:.3g}; {len(rebound)} changed their bound"
              + (": " + ", ".join(f"{k} ×{n}" for k, n in _counts(r["bound"] for r in rebound).items()) if rebound
                 else "") + ".", css="sentence" if changed else "note")
    if not changed:
        return
    grouped = group_repeats(changed, ("bound", "cycles_a", "cycles_b", "energy_a", "energy_b", "others"))
    grouped.sort(key=lambda r: (not r["bound_changed"], -abs(r["cycles_b"] - r["cycles_a"]) * r["repeats"]
                                if math.isfinite(r["cycles_b"] - r["cycles_a"]) else -math.inf))
    table = []
    for r in grouped:
        cycles = _compared("", "cycles", r["cycles_a"], r["cycles_b"])
        energy = _compared("", "energy_j", r["energy_a"], r["energy_b"])
        table.append([r["bound"], r["einsum"], r["engine"], Cell(str(r["repeats"]), r["repeats"]), *cycles[1:],
                      *energy[1:], r["others"]])
    page.text("Click a header to sort; type to filter. Layers that changed alike are one row (× n).")
    page.table(["bound A → B", "einsum", "engine", "× n", "cycles A", "cycles B", "cycles change", "energy A",
                "energy B", "energy change", "other metrics that moved"], table, text_columns=3)


def _einsum_change(name: str, ra: Mapping[str, Any] | None, rb: Mapping[str, Any] | None, metrics: Sequence[str],
                   rtol: float) -> dict[str, Any] | None:
    """One einsum's row of the moved-einsums table, or None when nothing about it moved."""
    ra_, rb_ = ra or {}, rb or {}
    bound_a, bound_b = str(ra_.get("bound", "absent")), str(rb_.get("bound", "absent"))
    shifted = [m for m in metrics if moved(number(ra_, m), number(rb_, m), rtol)]
    if bound_a == bound_b and not shifted:
        return None
    others = [f"{metric_label(m)} {change_text(number(ra_, m), number(rb_, m))}" for m in shifted
              if m not in ("cycles", "energy_j")]
    return {"einsum": name, "engine": str(rb_.get("engine", ra_.get("engine", MISSING))),
            "bound": bound_a if bound_a == bound_b else f"{bound_a} → {bound_b}", "bound_changed": bound_a != bound_b,
            "cycles_a": number(ra_, "cycles"), "cycles_b": number(rb_, "cycles"),
            "energy_a": number(ra_, "energy_j"), "energy_b": number(rb_, "energy_j"), "others": ", ".join(others)}


def _counts(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def totals_section(page: Page, a: RunFiles, b: RunFiles, rtol: float) -> None:
    """Every number of the two summaries (nested ones as 'memory.dram.read_bytes'), the moved ones first."""
    flat_a, flat_b = (flat_numbers({k: v for k, v in run.summary.items() if k != "provenance"}) for run in (a, b))
    keys = [k for k in dict.fromkeys([*flat_a, *flat_b]) if k not in IGNORED]
    keys.sort(key=lambda k: not moved(flat_a.get(k, math.nan), flat_b.get(k, math.nan), rtol))
    rows = []
    for key in keys:
        before, after = float(flat_a.get(key, math.nan)), float(flat_b.get(key, math.nan))
        unit = str(b.summary.get("throughput_unit", "/s")) if key == "throughput_per_s" else None
        row = _compared(total_label(key), _unit_key(key), before, after, unit)
        rows.append([*row, "moved" if moved(before, after, rtol) else ""])
    page.heading("Every total", anchor="totals")
    page.table(["metric", "A", "B", "change", ""], rows)


_NESTED_LABELS = {"energy_by_component_j": "energy in {}", "cycles_by_bound": "einsum cycles bound by {}",
                  "utilization": "{} utilization", "memory": "{}"}


def total_label(key: str) -> str:
    """A flattened summary key for people: 'energy_by_component_j.dram' -> 'energy in dram',
    'memory.dram.read_bytes' -> 'dram read bytes', 'latency_s' -> 'latency'."""
    top, _, rest = key.partition(".")
    if not rest or top not in _NESTED_LABELS:
        return metric_label(key)
    name, _, leaf = rest.rpartition(".")
    return f"{name} {metric_label(leaf)}" if name else _NESTED_LABELS[top].format(rest)


_NESTED_UNITS = {"energy_by_component_j": "x_j", "cycles_by_bound": "cycles", "utilization": "utilization"}


def _unit_key(key: str) -> str:
    """The field name whose unit a flattened summary key takes ('energy_by_component_j.dram' -> joules,
    'memory.dram.read_bytes' -> bytes)."""
    head, _, leaf = key.rpartition(".")
    return _NESTED_UNITS.get(key.split(".")[0], leaf) if head else key
