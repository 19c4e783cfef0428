"""Unit strings ("24 MiB", "700 MHz", "0.6 pJ", "900 GB/s", "int8") to SI numbers, in one place."""
from __future__ import annotations

import re
from typing import Literal

Dimension = Literal["bytes", "frequency", "energy", "bandwidth", "time", "power", "area", "bits"]

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_SMALL = {"": 1.0, "m": 1e-3, "u": 1e-6, "µ": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}


def _prefixed(base: str, prefixes: dict[str, float], scale: float = 1.0) -> dict[str, float]:
    return {p + base: v * scale for p, v in prefixes.items()}


UNITS: dict[str, dict[str, float]] = {
    "bytes": {**_prefixed("B", _DECIMAL), **_prefixed("B", _BINARY),
              **_prefixed("b", _DECIMAL, 1 / 8), **_prefixed("bit", _DECIMAL, 1 / 8)},
    "bits": {**_prefixed("b", _DECIMAL), **_prefixed("bit", _DECIMAL), **_prefixed("B", _DECIMAL, 8.0)},
    "frequency": _prefixed("Hz", _DECIMAL),
    "energy": _prefixed("J", _SMALL),
    "bandwidth": {**_prefixed("B/s", _DECIMAL), **_prefixed("B/s", _BINARY),
                  **_prefixed("b/s", _DECIMAL, 1 / 8), **_prefixed("bps", _DECIMAL, 1 / 8)},
    "time": _prefixed("s", _SMALL),
    "power": {**_prefixed("W", _SMALL), **_prefixed("W", _DECIMAL)},
    "area": {"mm2": 1e-6, "mm^2": 1e-6, "um2": 1e-12, "um^2": 1e-12, "m2": 1.0, "m^2": 1.0},
}

SI_NAMES = {"bytes": "bytes", "bits": "bits", "frequency": "Hz", "energy": "J", "bandwidth": "bytes/s",
            "time": "s", "power": "W", "area": "m^2"}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\s\d].*?)?\s*$")


def parse_quantity(value: str | int | float, dimension: Dimension) -> float:
    """Convert a number or a unit string of the given dimension to SI (bytes, Hz, J, bytes/s, s, W, m^2)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a {dimension} quantity, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY.match(str(value))
    if not match:
        raise ValueError(f"'{value}' is not a {dimension} quantity; write a number and a unit, "
                         f"e.g. {example_quantity(dimension)}")
    number, unit = float(match.group(1)), (match.group(2) or "")
    table = UNITS[dimension]
    if unit == "":
        return number
    if unit not in table:
        raise ValueError(f"unknown {dimension} unit '{unit}' in '{value}'; valid units: "
                         f"{', '.join(sorted(table, key=table.__getitem__))}")
    return number * table[unit]


def example_quantity(dimension: Dimension) -> str:
    """A sample value for error messages."""
    return {"bytes": "'24 MiB'", "bits": "'8 b'", "frequency": "'700 MHz'", "energy": "'0.6 pJ'",
            "bandwidth": "'900 GB/s'", "time": "'10 ns'", "power": "'40 W'", "area": "'331 mm2'"}[dimension]


DTYPE_BITS: dict[str, int] = {
    "int1": 1, "int2": 2, "int3": 3, "int4": 4, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "fp8": 8, "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "bool": 8,
}


def parse_bits(value: str | int) -> int:
    """Bit width of a dtype name ("int4", "bf16") or a plain integer."""
    if isinstance(value, bool):
        raise ValueError("expected a bit width or dtype, got a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"bit width must be positive, got {value}")
        return value
    text = str(value).strip().lower()
    if text.isdigit() and int(text) > 0:
        return int(text)
    if text not in DTYPE_BITS:
        raise ValueError(f"unknown dtype '{value}'; valid: {', '.join(DTYPE_BITS)} or a positive integer")
    return DTYPE_BITS[text]
