"""What a run comes to, in a few numbers and one sentence: shared by the terminal table and the HTML report.

Both work from the summary dict (`Result.summary()`, or summary.json read back), so a report rebuilt from a run
folder says exactly what the run printed.
"""
from __future__ import annotations

import math
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


HIGHER_IS_BETTER = frozenset({"throughput", "MAC utilization"})  # headline labels where more is better


def headline_values(summary: Mapping[str, object]) -> list[tuple[str, float, str]]:
    """The five numbers of a run and its utilization as (label, value, text): latency, throughput (tokens/s where
    the model counts tokens), energy per inference or token, energy per MAC, modelled area, MAC utilization."""
    unit = str(summary.get("throughput_unit", "inferences/s"))
    item = unit.removesuffix("s/s") or "inference"
    energy = float(summary["energy_j"])  # type: ignore[arg-type]
    macs = float(summary.get("total_macs") or 0)  # type: ignore[arg-type]
    throughput = float(summary["throughput_per_s"])  # type: ignore[arg-type]
    latency = float(summary["latency_s"])  # type: ignore[arg-type]
    items_per_run = throughput * latency  # throughput is items per run over the latency of one run
    per_item = energy / items_per_run if items_per_run > 0 else energy
    area = float(summary["area_mm2"])  # type: ignore[arg-type]
    utilization = float(summary.get("mac_utilization") or 0)  # type: ignore[arg-type]
    rows = [("latency", latency, format_metric("latency_s", latency)),
            ("throughput", throughput, si_format(throughput, unit))]
    if "tokens_per_s" in summary:
        tokens = float(summary["tokens_per_s"])  # type: ignore[arg-type]
        rows[1] = ("throughput", tokens, format_metric("tokens_per_s", tokens))
    rows += [(f"energy per {item}", per_item, si_format(per_item, "J")),
             ("energy per MAC", energy / macs if macs else math.nan, si_format(energy / macs, "J/MAC") if macs else "–"),
             ("modelled area", area, format_quantity(area, "mm²")),
             ("MAC utilization", utilization, percent(utilization))]
    return rows


def headline_numbers(summary: Mapping[str, object]) -> list[tuple[str, str]]:
    """The five numbers of a run with units, then its utilization, as (label, text) (see headline_values)."""
    return [(label, text) for label, _, text in headline_values(summary)]
