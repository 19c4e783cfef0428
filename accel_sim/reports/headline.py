"""What a run comes to, in a few numbers and one sentence: shared by the terminal table and the HTML report.

Both work from the summary dict (`Result.summary()`, or summary.json read back), so a report rebuilt from a run
folder says exactly what the run printed.
"""
from __future__ import annotations

from typing import Mapping

from accel_sim.reports.format import format_metric, format_quantity, percent, si_format


def _share(parts: Mapping[str, float]) -> tuple[str, float] | None:
    """The largest part and its share of the total; None when there is nothing to share."""
    total = sum(parts.values())
    if not parts or total <= 0:
        return None
    name = max(parts, key=parts.__getitem__)
    return name, parts[name] / total


def bound_sentence(summary: Mapping[str, object], bandwidth_by_level: Mapping[str, float]) -> str:
    """One sentence on what bounds a run: the kind that bounds most einsum cycles (a level with its bandwidth) and
    where most energy goes, e.g. "99 % of einsum cycles are bound by dram (34 GB/s); 94 % of energy is in dram."."""
    by_bound = {k: float(v) for k, v in (summary.get("cycles_by_bound") or {}).items()}  # type: ignore[union-attr]
    by_energy = {k: float(v) for k, v in (summary.get("energy_by_component_j") or {}).items()}  # type: ignore[union-attr]
    parts = []
    top = _share(by_bound)
    if top is not None:
        kind, share = top
        what = "compute" if kind == "compute" else kind
        if kind in bandwidth_by_level:
            what += f" ({si_format(bandwidth_by_level[kind], 'B/s')})"
        parts.append(f"{percent(share, 0)} of einsum cycles are bound by {what}")
    top = _share(by_energy)
    if top is not None:
        parts.append(f"{percent(top[1], 0)} of energy is in {top[0]}")
    if not parts:
        return "No einsum ran: nothing bounds this run."
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."


def headline_numbers(summary: Mapping[str, object]) -> list[tuple[str, str]]:
    """The five numbers of a run with units, then its utilization: latency, throughput (tokens/s where the model
    counts tokens), energy per inference or token, energy per MAC, modelled area, MAC utilization."""
    unit = str(summary.get("throughput_unit", "inferences/s"))
    item = unit.removesuffix("s/s") or "inference"
    energy = float(summary["energy_j"])  # type: ignore[arg-type]
    macs = float(summary.get("total_macs") or 0)  # type: ignore[arg-type]
    throughput = float(summary["throughput_per_s"])  # type: ignore[arg-type]
    latency = float(summary["latency_s"])  # type: ignore[arg-type]
    items_per_run = throughput * latency  # throughput is items per run over the latency of one run
    rows = [("latency", format_metric("latency_s", latency)),
            ("throughput", si_format(throughput, unit))]
    if "tokens_per_s" in summary:
        rows[1] = ("throughput", format_metric("tokens_per_s", summary["tokens_per_s"]))
    rows += [(f"energy per {item}", si_format(energy / items_per_run if items_per_run > 0 else energy, "J")),
             ("energy per MAC", si_format(energy / macs, "J/MAC") if macs else "–"),
             ("modelled area", format_quantity(float(summary["area_mm2"]), "mm²")),  # type: ignore[arg-type]
             ("MAC utilization", percent(float(summary.get("mac_utilization") or 0)))]  # type: ignore[arg-type]
    return rows
