"""What a run report shows, as plain JSON-ready data: the design card, the workload, the roofline and provenance.

`run_record(result, provenance)` builds it from a Result; `accel-sim run` writes it beside summary.json as run.json,
so `accel-sim report FOLDER` draws exactly what `accel-sim report ARCH WORKLOAD` draws without evaluating again.
Nothing here imports pandas, plotly or matplotlib: the CLI's run path stays light.
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from accel_sim.energy.components import level_area_mm2
from accel_sim.io.names import slug
from accel_sim.spec.identity import IdentityMemo
from accel_sim.zoo.cnn import ResNetSpec
from accel_sim.zoo.transformer import TransformerSpec

if TYPE_CHECKING:
    from accel_sim.evaluate import Result

RECORD_FILE = "run.json"
_SKIP_FIELDS = {"name", "kind", "clock_hz"}   # shown apart (the engine's title, its clock)


def git_revision(where: Path) -> str:
    """The git commit of the checkout that holds `where` (with '+dirty' when it has changes), or 'unknown'."""
    try:
        rev = subprocess.run(["git", "-C", str(where), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout (an installed wheel)
        return "unknown"
    return rev + ("+dirty" if dirty else "")


OPS_PER_MAC = 2  # a multiply and an add: vendors' peak TOPS count both (TPU v1: 65,536 MACs x 700 MHz x 2 = 92 TOPS,
                 # Jouppi et al., ISCA 2017, Table 2)


def counted_ops(op: str, ops: float) -> float:
    """Operations as a roofline counts them: a contraction's MACs as OPS_PER_MAC each, other operators as they are."""
    return ops * OPS_PER_MAC if op == "mac" else ops


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, first 16 hex digits (enough to tell two inputs apart)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def provenance(command: str, inputs: Iterable[str | Path], overrides: Sequence[str]) -> dict[str, object]:
    """Where a report came from: version, git revision, the command, its overrides, input file hashes, the date."""
    from accel_sim import __version__  # the package's own version (accel_sim/__init__ imports reports lazily)

    hashes = {str(p): file_digest(Path(p)) for p in inputs if Path(p).is_file()}
    return {"version": __version__, "git_revision": git_revision(Path(__file__).parent),
            "command": command, "overrides": list(overrides), "inputs": hashes,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def _engine_fields(engine: Any) -> dict[str, object]:
    """The engine's own scalar parameters (rows, cols, dataflow, lanes, ...), nested and empty ones left out."""
    dumped = engine.model_dump()
    return {k: v for k, v in dumped.items()
            if k not in _SKIP_FIELDS and isinstance(v, (int, float, str, bool)) and v not in ("", None)}


def design_card(result: Result) -> dict[str, object]:
    """The design at a glance: clock, node, execution, engines (identical ones combined) and memory levels."""
    arch = result.arch
    groups: dict[str, dict[str, Any]] = {}
    for engine in arch.engines:
        fields = _engine_fields(engine)
        clock = arch.engine_clock_hz(engine)
        key = repr((engine.kind, sorted(fields.items()), clock))
        group = groups.setdefault(key, {"names": [], "kind": engine.kind, "fields": fields, "clock_hz": clock,
                                        "peak_macs_per_s": engine.peak_macs_per_cycle() * clock,
                                        "area_mm2": engine.area_mm2(arch.technology_nm)})
        group["names"].append(engine.name)
    engines = [{**g, "name": group_name(g["names"]), "count": len(g["names"])} for g in groups.values()]
    memory = [{"name": level.name, "technology": str(level.technology), "capacity_bytes": level.capacity_bytes,
               "bandwidth_bytes_per_s": level.ports.peak_bytes_per_s,
               "area_mm2": level_area_mm2(level, arch.technology_nm)} for level in arch.memory]
    execution = arch.execution.model_dump()
    return {"arch": arch.name, "source": arch.source, "clock_hz": arch.clock_hz, "technology_nm": arch.technology_nm,
            "execution": {k: v for k, v in execution.items() if isinstance(v, (int, float, str)) and v is not None},
            "engines": engines, "memory": memory}


def group_name(names: Sequence[str]) -> str:
    """One name for identical things: ['sa0', ..., 'sa7'] -> 'sa0..sa7'; ['pim'] -> 'pim'."""
    return names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"


def workload_card(result: Result) -> dict[str, object]:
    """The workload at a glance: name, einsums, MACs, what one run delivers, operators."""
    w = result.workload
    ops: dict[str, int] = {}
    for e in w.einsums:
        ops[e.op] = ops.get(e.op, 0) + 1
    return {"name": w.name, "einsums": len(w.einsums), "total_macs": w.total_macs,
            "items_per_run": w.items_per_run, "item_unit": w.item_unit, "ops": ops}


# a run's roofline is read for its record and again for the terminal's check: a few results, by identity
_ROOFLINES = IdentityMemo(limit=8)


def roofline_record(result: Result) -> dict[str, object]:
    """Roofs and points of the hierarchical roofline, by engine group (`_roofline_record`), once per result."""
    return _ROOFLINES.get((result,), lambda: _roofline_record(result))


def _roofline_record(result: Result) -> dict[str, object]:
    """Roofs and points of the hierarchical roofline, by engine group.

    A point is one einsum: x its operational intensity (ops per compulsory byte through the level it is measured
    against: the level that bounds it, else the outermost one it moves data through), y its achieved op/s. Its roof
    is min(compute peak of its engine for its operator, that level's bandwidth as its engine sees it, times x), so
    it lies on or under its roof exactly when its achieved cycles are at least its roofline bound's.
    """
    arch = result.arch
    card = design_card(result)
    group_of = {name: g["name"] for g in card["engines"] for name in g["names"]}  # type: ignore[index, union-attr]
    engines = {e.name: e for e in arch.engines}
    levels = [lv.name for lv in arch.memory]
    points, roofs = [], {}
    einsum_cycles = sum(r.cost.total_cycles for r in result.einsums) or 1.0
    bandwidths: dict[str, dict[str, float]] = {}   # engine -> level -> bytes/s as the engine sees it (per engine once)
    for r in result.einsums:
        b = r.bound
        level = b.kind if b.kind in levels else next((lv for lv in levels if b.level_bytes[lv] > 0), None)
        if level is None or b.ops <= 0 or r.cost.total_cycles <= 0:
            continue
        engine = engines[r.engine]
        if r.engine not in bandwidths:
            clock = arch.engine_clock_hz(engine)
            bandwidths[r.engine] = {lv.name: engine.level_ports(lv, clock).peak_bytes_per_s for lv in arch.memory}
        seen = bandwidths[r.engine]
        bandwidth = seen[level]
        ops = counted_ops(r.op, b.ops)
        peak = ops / b.compute_cycles * arch.clock_hz if b.compute_cycles > 0 else float("inf")
        group = group_of[r.engine]
        for used in (lv for lv in levels if b.level_bytes[lv] > 0 or lv == level):  # a roof per level it uses
            roofs[f"{group}|{used}"] = {"engine": group, "level": used, "bandwidth_bytes_per_s": seen[used]}
        roofs.setdefault(f"{group}|peak|{peak:.6g}", {"engine": group, "peak_ops_per_s": peak, "op": r.op})
        achieved_s = r.cost.total_cycles / arch.clock_hz
        intensity = ops / b.level_bytes[level]
        points.append({"einsum": r.einsum, "engine": group, "op": r.op, "level": level, "intensity": intensity,
                       "ops_per_s": ops / achieved_s, "roof_ops_per_s": min(peak, bandwidth * intensity),
                       "share": r.cost.total_cycles / einsum_cycles, "bound": b.kind, "cycles": r.cost.total_cycles,
                       "roofline_cycles": b.cycles, "bytes": b.level_bytes[level]})
    return {"roofs": list(roofs.values()), "points": points}


def above_roof(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The roofline points (roofline_record) that run faster than their roof allows: a model bug, never a result."""
    return [p for p in points if p["ops_per_s"] > p["roof_ops_per_s"] * (1 + 1e-6)]


def run_record(result: Result, origin: Mapping[str, object] | None = None) -> dict[str, object]:
    """Everything a run report shows beyond summary.json, per_einsum.csv and timeline.csv."""
    return {"title": f"{short_name(result.workload.name)} on {result.arch.name}", "design": design_card(result),
            "workload": workload_card(result), "roofline": roofline_record(result),
            "bandwidth_by_level": {lv.name: lv.ports.peak_bytes_per_s for lv in result.arch.memory},
            "provenance": dict(origin or {})}


def _generated_name() -> re.Pattern[str]:
    """model, then '-<parameter><value>' for each parameter a recipe changed, then the generator's own tail
    ('-decode-b1-kv1024', '-b1-s128', '-b1-224', with '-w4a16kv16' when a width is not 16): see the zoo's build."""
    fields = {f.name for spec in (TransformerSpec, ResNetSpec) for f in dataclasses.fields(spec)}
    params = "|".join(sorted((re.escape(f) for f in fields), key=len, reverse=True))
    return re.compile(rf"^(?P<model>.+?)(?:-(?:{params})[^-]*(?:-\d+)?)+"
                      r"(?P<tail>-(?:(?:prefill|decode)-)?b\d+-(?:kv|s)?\d+(?:-w\d+a\d+(?:kv\d+)?)?)$")


_GENERATED = _generated_name()


def short_name(name: str, limit: int = 60) -> str:
    """A workload name people can read: a generated 'model-<parameter values>-phase-bN-length' keeps model, phase,
    batch and length (the parameters are in the provenance); any other long name is cut with an ellipsis."""
    match = _GENERATED.match(name)
    if match:
        return match.group("model") + match.group("tail")
    return name if len(name) <= limit else name[: limit - 1] + "…"


def folder_name(name: str) -> str:
    """A workload name as a short, stable file or folder name: the name itself when it is already short, else its
    short name ('llama2-7b-decode-b8-kv4096') and the first 8 hex digits of the full name's SHA-256, so that two
    recipes that differ only in a parameter the short name leaves out still get folders of their own."""
    short = short_name(name)
    if short == name:
        return slug(name)
    return f"{slug(short.rstrip('…'))}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


_DIGITS = re.compile(r"\d+")


def group_repeats(rows: Sequence[Mapping[str, Any]], same: Sequence[str]) -> list[dict[str, Any]]:
    """Rows whose names differ only in their numbers (layer repeats, 'L0.qk' .. 'L31.qk') and that agree on every
    column in `same` folded into one row: the first, with `einsum` 'L0.qk … L31.qk' and `repeats` the count."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (_DIGITS.sub("#", str(row["einsum"])), *(_rounded(row[c]) for c in same))
        groups.setdefault(key, []).append(row)
    out = []
    for members in groups.values():
        first = dict(members[0])
        if len(members) > 1:
            first["einsum"] = f"{members[0]['einsum']} … {members[-1]['einsum']}"
        first["repeats"] = len(members)
        out.append(first)
    return out


def _rounded(value: object) -> object:
    """Floats compared to 9 significant digits, so float noise does not split a group of equal layers."""
    return float(f"{value:.9g}") if isinstance(value, float) else value
