"""Numbers as people read them: one formatter with SI prefixes and units for the terminal, tables, plots and pages.

The unit of a summary or per-einsum field follows from its name (units live in names: `_s`, `_j`, `_bytes`,
`_cycles`, `_mm2`, `_hz`, `_per_s`); `format_metric(key, value)` formats any such field. Bytes take binary prefixes
(a 16 MiB buffer reads "16 MiB", not "16.8 MB"), rates and everything else decimal ones. Cycles are whole.
"""
from __future__ import annotations

import math

from accel_sim.units import UNITS, parse_quantity

_DECIMAL = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
            (1e-9, "n"), (1e-12, "p"), (1e-15, "f"))
_BINARY = ((2.0**50, "Pi"), (2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"))
MISSING = "–"   # a field with no value (None, NaN): shown as a dash, never as "None" or "nan"

# field names whose unit is not in a suffix
_NAMED_UNITS = {"cycles": "cycles", "bytes": "B", "macs": "MACs", "total_macs": "MACs", "ops": "op", "einsums": "",
                "instances": "", "copies_in_flight": "", "edp_js": "J·s"}
_SUFFIX_UNITS = (("_cycles", "cycles"), ("_bytes", "B"), ("_per_s", "/s"), ("_mm2", "mm²"), ("_hz", "Hz"),
                 ("_js", "J·s"), ("_j", "J"), ("_s", "s"))
_SYMBOLS = {"B", "s", "J", "op", "Hz", "W", "b", "J·s"}   # prefixes attach to these; a word unit gets a space
_LABELS = {"latency_s": "latency", "energy_j": "energy", "area_mm2": "modelled area",
           "published_area_mm2": "published die area", "throughput_per_s": "throughput", "edp_js": "energy-delay",
           "total_macs": "MACs", "mac_utilization": "MAC utilization", "roofline_cycles": "roofline bound",
           "cycles_over_roofline": "achieved / roofline", "fill_drain_cycles": "fill / drain",
           "replay_over_schedule": "replay / schedule makespan", "replay_gap_flagged": "replay gap over 10 %",
           "bandwidth_utilization": "bandwidth used", "npu_dram_bytes": "NPU DRAM traffic",
           "bandwidth_bytes_per_s": "bandwidth", "clock_hz": "clock", "technology_nm": "technology node (nm)"}


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits, never in exponent notation: 0.000123 -> "0.000123", 1234 -> "1,234"."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else MISSING if math.isnan(value) else ("∞" if value > 0 else "-∞")
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{round(value):,}"
    text = f"{value:.{digits - 1 - magnitude}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def si_format(value: float, unit: str = "") -> str:
    """A number with an SI prefix and 3 significant digits: 4.59e13, "op/s" -> "45.9 Top/s"; 0, "B" -> "0 B"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if value == 0 or not math.isfinite(value):
        return f"{significant(value)} {unit}".rstrip()
    for factor, prefix in _DECIMAL:
        # rounding can carry into the next prefix (999.7 k -> "1.00e3 k"): go up one when it does
        if abs(value) >= factor * (1 - 5e-4):
            joined = prefix + unit if unit.split("/")[0] in _SYMBOLS or not prefix else f"{prefix} {unit}"
            return f"{significant(value / factor)} {joined}".rstrip()
    return f"{significant(value)} {unit}".rstrip()


def bytes_format(value: float) -> str:
    """Bytes with binary prefixes: 16777216 -> "16 MiB", 1536 -> "1.5 KiB", 100 -> "100 B"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    for factor, prefix in _BINARY:
        if abs(value) >= factor * (1 - 5e-4):
            return f"{significant(value / factor)} {prefix}B"
    return f"{significant(round(value))} B"


def cycles_format(value: float) -> str:
    """Whole cycles: 286.87 -> "287", 6574 -> "6,574", 2.748e8 -> "275 M" (no fractional cycle counts)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    whole = round(value)
    return f"{whole:,}" if abs(whole) < 1_000_000 else si_format(whole)


def percent(fraction: float, digits: int = 1) -> str:
    """A fraction as a percentage: 0.3103 -> "31.0 %"; below 0.1 % keeps 2 significant digits (0.0003818 -> "0.038 %")."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return MISSING
    share = 100 * fraction
    if share != 0 and abs(share) < 0.1:
        return f"{significant(share, 2)} %"
    return f"{share:.{digits}f} %"


def relative_change(before: float, after: float) -> float:
    """(after - before) / |before|: 0 when both are 0, inf when only `before` is, NaN when either is missing."""
    if before is None or after is None or math.isnan(before) or math.isnan(after):
        return math.nan
    if before == 0:
        return 0.0 if after == 0 else math.copysign(math.inf, after)
    return (after - before) / abs(before)


def change_text(before: float, after: float) -> str:
    """The change from `before` to `after` as a signed percentage: 10, 12 -> "+20.0 %"; 0, 5 -> "new"; equal -> "0 %"."""
    change = relative_change(before, after)
    if math.isnan(change):
        return MISSING
    if math.isinf(change):
        return "new"
    if change == 0:
        return "0 %"
    share = 100 * abs(change)
    return ("+" if change > 0 else "−") + (f"{share:.1f}" if share >= 0.1 else significant(share, 2)) + " %"


def metric_unit(key: str) -> str:
    """The unit a field's name carries: "latency_s" -> "s", "global_buffer_bytes" -> "B", "mac_utilization" -> "%"."""
    if key in _NAMED_UNITS:
        return _NAMED_UNITS[key]
    if "utilization" in key or key.endswith("_share"):
        return "%"
    if "_over_" in key:
        return "×"
    if key.endswith("_bytes_per_s"):
        return "B/s"
    if key.endswith("_per_s") and key != "throughput_per_s":  # tokens_per_s -> tokens/s
        return f"{key[:-len('_per_s')]}/s"
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    return ""


def format_quantity(value: float, unit: str) -> str:
    """`value` in `unit` as people read it: cycles whole, bytes binary, % and × plain, the rest with SI prefixes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if unit == "cycles":
        return cycles_format(value)
    if unit == "B":
        return bytes_format(value)
    if unit == "%":
        return percent(value)
    if unit == "×":
        return f"{significant(value)}×"
    if unit == "mm²":
        # a block under 0.01 mm² (a few lanes, one PE) reads better in µm² than as 0.00678 mm²
        return f"{significant(value * 1e6)} µm²" if 0 < abs(value) < 0.01 else f"{significant(value)} mm²"
    if unit in ("", "MACs", "op") and float(value).is_integer() and abs(value) < 10_000:
        return f"{int(value):,} {unit}".rstrip()
    return si_format(value, unit)


def format_metric(key: str, value: object) -> str:
    """A summary or per-einsum field as text, its unit taken from its name; None and NaN are a dash."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, (int, float)):
        return format_quantity(float(value), metric_unit(key))
    return str(value)


def metric_label(key: str) -> str:
    """A field's name for people: "latency_s" -> "latency", "global_buffer_bytes" -> "global_buffer bytes"."""
    if key in _LABELS:
        return _LABELS[key]
    for suffix in ("_cycles", "_bytes", "_per_s", "_mm2", "_hz", "_js", "_j", "_s"):
        if key.endswith(suffix) and key != suffix[1:]:
            stem = key[: -len(suffix)]
            return f"{stem} cycles" if suffix == "_cycles" else f"{stem} bytes" if suffix == "_bytes" else stem
    return key


def param_quantity(value: object) -> tuple[float, str | None]:
    """A parameter as a number and the dimension its text named: 128 -> (128, None), '8 MiB' -> (8388608, 'bytes'),
    text that is no quantity ('ws') -> (NaN, None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), None
    for dimension in UNITS:
        try:
            return float(parse_quantity(str(value), dimension)), dimension  # type: ignore[arg-type]
        except ValueError:
            continue
    return math.nan, None


def param_value(value: object) -> float:
    """A parameter as a number: 128 -> 128, '8 MiB' -> 8388608, 'ws' -> NaN."""
    return param_quantity(value)[0]


_BY_DIMENSION = {"bytes": bytes_format, "frequency": lambda v: si_format(v, "Hz"),  # type: ignore[dict-item]
                 "bandwidth": lambda v: si_format(v, "B/s"), "energy": lambda v: si_format(v, "J"),
                 "time": lambda v: si_format(v, "s"), "power": lambda v: si_format(v, "W"),
                 "bits": lambda v: f"{significant(v)} b"}


def param_text(name: str, value: object, dimension: str | None = None) -> str:
    """A parameter or objective value as people read it: '8 MiB' as written, 0.0012 latency_s as '1.2 ms'; a number
    of a column whose values named a dimension ('64 KiB') in that dimension's unit."""
    if isinstance(value, str):
        return value
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number):
        return "–"
    if dimension in _BY_DIMENSION:
        return _BY_DIMENSION[dimension](number)
    key = name.rsplit(".", 1)[-1]
    if metric_unit(key) or metric_unit(name):
        return format_metric(key if metric_unit(key) else name, number)
    return f"{int(number):,}" if number.is_integer() else significant(number)
