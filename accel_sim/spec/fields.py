"""Validated field types shared by every spec: unit strings -> SI floats, positivity, located errors.

Validator messages end with " Fix: ..." so `accel_sim.io.yaml.config_error` can split problem and fix; a
`PydanticCustomError` whose context has `at` points the error at a sub-location (e.g. the duplicate
`memory[2].name`), so its line is the offending line.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Callable, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError

from accel_sim.units import Dimension, example_quantity, parse_quantity

# allow_inf_nan=False: every plain float of a spec (a DRAM's vdd, a scale) is finite too, not only the typed ones
SPEC_CONFIG = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)
# What a memory level may hold, by role; Workload.roles gives the role of each tensor an einsum accesses.
# 'activations' in a config is the shorthand for every non-weight role. 'results' is no config role: it is the
# output of an einsum that reduces no rank (a map: ReLU, a residual add), which has no partial sums, so it is held
# where 'outputs' are (MemoryLevel.admits) and never at a level of partial sums only (MemoryLevel.keeps).
TensorRole = Literal["weights", "inputs", "outputs", "psums", "kv_cache", "results"]
HoldsEntry = Literal["weights", "inputs", "outputs", "psums", "kv_cache", "activations"]
ACTIVATION_ROLES: tuple[str, ...] = ("inputs", "outputs", "psums", "kv_cache")

# What a memory level is built from. Off-chip kinds are the DRAM standards energy/tables.py prices per bit
# (JEDEC DDR, LPDDR, GDDR, HBM families; 'DRAM' a generic commodity part); on chip a level is SRAM or registers.
OffChipTechnology = Literal["DRAM", "DDR3", "DDR4", "DDR5", "LPDDR4", "LPDDR4X", "LPDDR5", "LPDDR5X",
                            "GDDR5", "GDDR6", "GDDR6X", "HBM", "HBM2", "HBM2E", "HBM3", "HBM3E"]
Technology = Literal[OffChipTechnology, "SRAM", "registers"]
MemoryKind = Literal["off_chip", "sram", "registers"]
OFF_CHIP_TECHNOLOGIES: tuple[str, ...] = get_args(OffChipTechnology)
TECHNOLOGIES: tuple[str, ...] = (*OFF_CHIP_TECHNOLOGIES, "SRAM", "registers")
# Interfaces whose PHY an arch's `io:` list may name; energy/tables.py PHY_AREA prices each (same keys).
PhyKind = Literal["PCIe3", "PCIe4", "PCIe5", "DDR3", "DDR4", "DDR5", "HBM2", "HBM2E", "HBM3", "NVLink3", "NVLink4"]
PHY_KINDS: tuple[str, ...] = get_args(PhyKind)


# ---------------------------------------------------------------------------------------------
# One annotated type per dimension: unit strings -> SI floats, with a fix on failure
# ---------------------------------------------------------------------------------------------
def _si(dimension: Dimension, per_bit: bool = False) -> Callable[[Any], Any]:
    """A before-validator converting a number or unit string of `dimension` to SI."""

    def convert(value: Any) -> Any:
        if value is None:  # optional fields; required ones reject None in their float schema
            return None
        _reject_bool(value, example_quantity(dimension))
        text = value
        if per_bit and isinstance(value, str):
            # "10 pJ/bit" reads naturally for per-bit energies; the key already says per bit
            text = value.strip().removesuffix("/bit").removesuffix("/b")
        try:
            return parse_quantity(text, dimension)
        except ValueError as exc:
            raise ValueError(f"{exc}. Fix: write a number with a {dimension} unit, "
                             f"e.g. {example_quantity(dimension)}") from None

    return convert


def _reject_bool(value: Any, example: str = "") -> Any:
    """YAML's true/false are not numbers (pydantic's lax int would read `rows: true` as 1)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}. Fix: give a number"
                         f"{', e.g. ' + example if example else ''}")
    return value


def _plain_number(value: Any) -> Any:
    """A count or plain number is a YAML number: '256' in quotes is refused, as a recipe's integers are, rather
    than read as one (and true/false are not numbers either)."""
    if isinstance(value, str):
        numeric = value.strip().lstrip("-").replace(".", "", 1).isdigit()
        raise ValueError(f"expected a number, got the string {value!r}. Fix: "
                         + (f"write the number without quotes, e.g. {value.strip()}" if numeric else "give a number"))
    return _reject_bool(value)


def _finite(value: float | int | None) -> float | int | None:
    """Infinities and NaN are not sizes, rates or energies (`clock: .inf` gave a null latency)."""
    if value is not None and not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {value}). Fix: give a finite value")
    return value


def _positive(unit: str = "", example: str = "") -> Callable[[Any], Any]:
    """An after-validator rejecting zero, negative and non-finite values (quoted in `unit`, fix showing `example`)."""

    def check(value: float | int | None) -> float | int | None:
        _finite(value)
        if value is not None and not value > 0:
            shown = f"{value:g}{' ' + unit if unit else ''}"
            raise ValueError(f"must be greater than zero (got {shown}). "
                             f"Fix: give a positive value{', e.g. ' + example if example else ''}")
        return value

    return check


def _within(low: float, high: float, unit: str) -> Callable[[Any], Any]:
    """An after-validator bounding a quantity to what hardware can have: a bandwidth of 1e-300 B/s gave infinite
    cycles (a null latency), 2^63 rows overflowed the cost arrays. Bounds are far outside any real design."""

    def check(value: float | int | None) -> float | int | None:
        if value is not None and not low <= value <= high:
            unit_text = f" {unit}" if unit else ""
            raise ValueError(f"{value:g}{unit_text} is outside the range this model accepts ({low:g} to {high:g}"
                             f"{unit_text}). Fix: give a value in that range (check the unit)")
        return value

    return check


def _non_negative(value: float | None) -> float | None:
    _finite(value)
    if value is not None and not value >= 0:
        raise ValueError(f"must not be negative (got {value}). Fix: give zero or a positive value")
    return value


_FRACTION_FIX = "Fix: give the achievable fraction of the peak, e.g. 0.9"


def _fraction_number(value: Any) -> Any:
    """A fraction is a plain number: not a word (`high`), a string ('nan') or YAML's true/false."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"expected a number in (0, 1], got {value!r}. {_FRACTION_FIX}")
    return value


def _fraction(value: float | None) -> float | None:
    """A share of a peak (an achievable efficiency): above zero, at most one, finite."""
    if value is not None and not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(f"must lie in (0, 1] (got {value:g}). {_FRACTION_FIX}")
    return value


def _area_mm2(value: Any) -> Any:
    """Area in mm^2, the unit the field name carries: a bare number is mm^2, a unit string is converted."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    # m^2 -> mm^2, rounded to 12 significant digits to drop binary noise (331 mm2 -> 331.0, not 330.999...)
    return float(f"{_si('area')(value) * 1e6:.12g}")


_TECHNOLOGY_FIX = (f"set 'technology:' to one of {', '.join(OFF_CHIP_TECHNOLOGIES)} (off-chip), SRAM (on-chip) "
                   "or registers")


def memory_kind(technology: str) -> MemoryKind:
    """Off-chip DRAM of some kind, on-chip SRAM, or registers: the one classification of a level's technology."""
    if technology in OFF_CHIP_TECHNOLOGIES:
        return "off_chip"
    if technology == "SRAM":
        return "sram"
    if technology == "registers":
        return "registers"
    raise ValueError(f"unknown memory technology {technology!r}. Fix: {_TECHNOLOGY_FIX}")


def _canonical_technology(value: Any, choices: tuple[str, ...], what: str, fix: str) -> Any:
    """`value` as the canonical spelling of one of `choices` (case-insensitive); missing or unknown is an error."""
    if value is None:
        raise ValueError(f"no memory technology given. Fix: {fix}")
    canonical = {t.upper(): t for t in choices}.get(str(value).strip().upper())
    if canonical is None:
        raise ValueError(f"unknown {what} {value!r}. Fix: {fix}")
    return canonical


def _technology(value: Any) -> Any:
    """A level's technology in its canonical spelling (case-insensitive); missing or unknown is an error."""
    return _canonical_technology(value, TECHNOLOGIES, "memory technology", _TECHNOLOGY_FIX)


_OFF_CHIP_FIX = f"set 'technology:' to one of {', '.join(OFF_CHIP_TECHNOLOGIES)}"


def _off_chip_technology(value: Any) -> Any:
    """An off-chip memory's DRAM kind in its canonical spelling (case-insensitive), one a memory level takes."""
    return _canonical_technology(value, OFF_CHIP_TECHNOLOGIES, "off-chip memory technology", _OFF_CHIP_FIX)


# Physical bounds: 1 byte to 1 EiB of storage, 1 B/s to 1 ZB/s of bandwidth (an "ideal" memory is often 1e18 B/s),
# 1 Hz to 1 THz of clock, counts (rows, lanes, channels) below 2^31.
MAX_BYTES, MAX_BYTES_PER_S, MAX_HZ, MAX_COUNT = 2.0**60, 1e21, 1e12, 2**31 - 1
Bytes = Annotated[float, BeforeValidator(_si("bytes")), AfterValidator(_positive("bytes", "'24 MiB'")),
                  AfterValidator(_within(1, MAX_BYTES, "bytes"))]
BytesPerSecond = Annotated[float, BeforeValidator(_si("bandwidth")),
                           AfterValidator(_positive("bytes/s", "'900 GB/s'")),
                           AfterValidator(_within(1, MAX_BYTES_PER_S, "bytes/s"))]
Hertz = Annotated[float, BeforeValidator(_si("frequency")), AfterValidator(_positive("Hz", "'700 MHz'")),
                  AfterValidator(_within(1, MAX_HZ, "Hz"))]
JoulesPerBit = Annotated[float, BeforeValidator(_si("energy", per_bit=True)), AfterValidator(_non_negative)]
Joules = Annotated[float, BeforeValidator(_si("energy")), AfterValidator(_positive("J", "'1.8 pJ'"))]
Seconds = Annotated[float, BeforeValidator(_si("time")), AfterValidator(_non_negative)]
Watts = Annotated[float, BeforeValidator(_si("power")), AfterValidator(_non_negative)]
SquareMillimetres = Annotated[float, BeforeValidator(_area_mm2), AfterValidator(_positive("mm^2", "'331 mm2'"))]
PositiveFloat = Annotated[float, BeforeValidator(_plain_number), AfterValidator(_positive())]
Fraction = Annotated[float, BeforeValidator(_fraction_number), AfterValidator(_fraction)]
MemoryTechnology = Annotated[Technology, BeforeValidator(_technology)]
OffChipMemoryTechnology = Annotated[OffChipTechnology, BeforeValidator(_off_chip_technology)]
PositiveInt = Annotated[int, BeforeValidator(_plain_number), AfterValidator(_positive()),
                        AfterValidator(_within(1, MAX_COUNT, ""))]
NonNegativeCount = Annotated[int, BeforeValidator(_plain_number), AfterValidator(_non_negative),
                             AfterValidator(_within(0, MAX_COUNT, ""))]


def located(message: str, *at: str | int) -> PydanticCustomError:
    """A validation error placed at the sub-location `at` of the field being validated."""
    return PydanticCustomError("spec_invalid", message, {"at": at})


def named_entries(items: tuple[Any, ...], what: str, key: str, if_empty: str) -> tuple[Any, ...]:
    """`items` when there is at least one (else ValueError `if_empty`, its fix included) and no two share a name."""
    if not items:
        raise ValueError(if_empty)
    unique_names(items, what, key)
    return items


def unique_names(items: tuple[Any, ...], what: str, key: str) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.name in first:
            raise located(f"duplicate {what} name '{item.name}' (first used by {key}[{first[item.name]}]). "
                           f"Fix: give each {what} a distinct name", index, "name")
        first[item.name] = index


