"""Architecture specs: memory levels outer -> inner and compute engines, frozen and validated once.

Python attribute names carry SI units (`capacity_bytes`, `clock_hz`); YAML keys are short and take unit
strings (`capacity: 24 MiB`, `clock: 700 MHz`) through aliases. The conversion lives in the annotated types
below, one per dimension. Validator messages end with " Fix: ..." so `accel_sim.io.yaml.config_error` can
split problem and fix; a `PydanticCustomError` whose context has `at` points the error at a sub-location
(e.g. the duplicate `memory[2].name`), so its line is the offending line.
"""
from __future__ import annotations

from typing import Annotated, Any, Callable, Literal, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from accel_sim.spec.workload import Einsum
from accel_sim.units import Dimension, example_quantity, parse_quantity

_SPEC = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
TensorClass = Literal["weights", "activations"]


# ---------------------------------------------------------------------------------------------
# One annotated type per dimension: unit strings -> SI floats, with a fix on failure
# ---------------------------------------------------------------------------------------------
def _si(dimension: Dimension, per_bit: bool = False) -> Callable[[Any], Any]:
    """A before-validator converting a number or unit string of `dimension` to SI."""

    def convert(value: Any) -> Any:
        if value is None:  # optional fields; required ones reject None in their float schema
            return None
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


def _positive(unit: str = "", example: str = "") -> Callable[[Any], Any]:
    """An after-validator rejecting zero and negative values (quoted in `unit`, fix showing `example`)."""

    def check(value: float | int | None) -> float | int | None:
        if value is not None and not value > 0:
            shown = f"{value:g}{' ' + unit if unit else ''}"
            raise ValueError(f"must be greater than zero (got {shown}). "
                             f"Fix: give a positive value{', e.g. ' + example if example else ''}")
        return value

    return check


def _non_negative(value: float | None) -> float | None:
    if value is not None and not value >= 0:
        raise ValueError(f"must not be negative (got {value}). Fix: give zero or a positive value")
    return value


def _area_mm2(value: Any) -> Any:
    """Area in mm^2, the unit the field name carries: a bare number is mm^2, a unit string is converted."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    # m^2 -> mm^2, rounded to 12 significant digits to drop binary noise (331 mm2 -> 331.0, not 330.999...)
    return float(f"{_si('area')(value) * 1e6:.12g}")


Bytes = Annotated[float, BeforeValidator(_si("bytes")), AfterValidator(_positive("bytes", "'24 MiB'"))]
BytesPerSecond = Annotated[float, BeforeValidator(_si("bandwidth")),
                           AfterValidator(_positive("bytes/s", "'900 GB/s'"))]
Hertz = Annotated[float, BeforeValidator(_si("frequency")), AfterValidator(_positive("Hz", "'700 MHz'"))]
JoulesPerBit = Annotated[float, BeforeValidator(_si("energy", per_bit=True)), AfterValidator(_non_negative)]
SquareMillimetres = Annotated[float, BeforeValidator(_area_mm2), AfterValidator(_positive("mm^2", "'331 mm2'"))]
PositiveFloat = Annotated[float, AfterValidator(_positive())]
PositiveInt = Annotated[int, AfterValidator(_positive())]


def _located(message: str, *at: str | int) -> PydanticCustomError:
    """A validation error placed at the sub-location `at` of the field being validated."""
    return PydanticCustomError("spec_invalid", message, {"at": at})


def _unique_names(items: tuple[Any, ...], what: str, key: str) -> None:
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.name in first:
            raise _located(f"duplicate {what} name '{item.name}' (first used by {key}[{first[item.name]}]). "
                           f"Fix: give each {what} a distinct name", index, "name")
        first[item.name] = index


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------
class MemoryLevel(BaseModel):
    """One level of the memory hierarchy: size, bandwidth, per-bit access energy, tensor classes held."""

    model_config = _SPEC

    name: str
    technology: str | None = None  # "DDR3", "LPDDR5", "HBM2", "SRAM", ...: free text for reports
    capacity_bytes: Bytes | None = Field(None, alias="capacity")  # None: unbounded backing store
    bandwidth_bytes_per_s: BytesPerSecond = Field(alias="bandwidth")
    read_energy_j_per_bit: JoulesPerBit = Field(0.0, alias="read_energy_per_bit")
    # None in the file means "same as read"; after validation it is always a float
    write_energy_j_per_bit: JoulesPerBit | None = Field(None, alias="write_energy_per_bit", validate_default=True)
    holds: tuple[TensorClass, ...] = ("weights", "activations")

    @field_validator("write_energy_j_per_bit", mode="after")
    @classmethod
    def _write_defaults_to_read(cls, value: float | None, info: ValidationInfo) -> float | None:
        return info.data.get("read_energy_j_per_bit") if value is None else value

    @field_validator("holds", mode="after")
    @classmethod
    def _holds_something(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("a memory level must hold at least one tensor class. "
                             "Fix: list 'weights', 'activations' or both, or remove the level")
        if len(set(value)) != len(value):
            raise ValueError(f"holds lists a class twice ({list(value)}). Fix: list each class once")
        return value


# ---------------------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------------------
class EngineBase(BaseModel):
    """Fields every engine has; subclasses add their parameters, a `kind` tag and their peak."""

    model_config = _SPEC

    name: str
    clock_hz: Hertz | None = Field(None, alias="clock")  # None: runs at the arch clock

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """Operator applications per cycle for this einsum; 0.0 means the engine cannot run it."""
        raise NotImplementedError(f"{type(self).__name__} does not define peak_per_cycle")


class SystolicEngine(EngineBase):
    """A rows x cols array of multiply-accumulate units (TPU MXU, Eyeriss-style PE arrays)."""

    kind: Literal["systolic"]
    rows: PositiveInt
    cols: PositiveInt
    dataflow: Literal["os", "ws", "is"] = "ws"

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """rows * cols MACs per cycle for contractions; other operators do not run on the array."""
        return float(self.rows * self.cols) if einsum.op == "mac" else 0.0


class VectorEngine(EngineBase):
    """SIMD lanes for elementwise, reduction, softmax and normalization operators (and MACs)."""

    kind: Literal["vector"]
    lanes: PositiveInt

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """One operator application per lane per cycle, for every operator."""
        return float(self.lanes)


# New engine families are added to this one line.
AnyEngine = Annotated[Union[SystolicEngine, VectorEngine], Field(discriminator="kind")]


# ---------------------------------------------------------------------------------------------
# Architecture
# ---------------------------------------------------------------------------------------------
class Arch(BaseModel):
    """An accelerator: clock, technology node, memory levels outer -> inner, and compute engines."""

    model_config = _SPEC

    name: str
    source: str | None = None  # citation of the design
    clock_hz: Hertz = Field(alias="clock")
    technology_nm: PositiveFloat = Field(alias="technology_nm")
    area_mm2: SquareMillimetres | None = Field(None, alias="area")
    memory: tuple[MemoryLevel, ...]
    engines: tuple[AnyEngine, ...]

    @field_validator("memory", mode="after")
    @classmethod
    def _check_memory(cls, levels: tuple[MemoryLevel, ...]) -> tuple[MemoryLevel, ...]:
        if not levels:
            raise ValueError("no memory levels. Fix: list at least one level, outermost (e.g. DRAM) first")
        _unique_names(levels, "memory level", "memory")
        outer: tuple[int, MemoryLevel] | None = None
        for index, level in enumerate(levels):
            if level.capacity_bytes is None:
                continue
            if outer is not None and level.capacity_bytes > outer[1].capacity_bytes:
                raise _located(
                    f"level '{level.name}' ({level.capacity_bytes:,.0f} bytes) is larger than the outer level "
                    f"'{outer[1].name}' (memory[{outer[0]}], {outer[1].capacity_bytes:,.0f} bytes); levels go "
                    f"outer -> inner with non-increasing capacity. Fix: list the levels outermost first, "
                    f"or correct the capacity", index, "capacity")
            outer = (index, level)
        return levels

    @field_validator("engines", mode="after")
    @classmethod
    def _check_engines(cls, engines: tuple[EngineBase, ...]) -> tuple[EngineBase, ...]:
        if not engines:
            raise ValueError("no engines. Fix: add at least one engine, e.g. {name: mxu, kind: systolic, "
                             "rows: 128, cols: 128}")
        _unique_names(engines, "engine", "engines")
        return engines

    def engine_clock_hz(self, engine: EngineBase | str) -> float:
        """Clock of an engine (given or by name): its own clock, else the arch clock."""
        found = self.engine(engine) if isinstance(engine, str) else engine
        return found.clock_hz if found.clock_hz is not None else self.clock_hz

    def engine(self, name: str) -> EngineBase:
        """The engine called `name`."""
        for engine in self.engines:
            if engine.name == name:
                return engine
        raise KeyError(f"arch '{self.name}' has no engine '{name}'; engines: "
                       f"{', '.join(e.name for e in self.engines)}")

    def level(self, name: str) -> MemoryLevel:
        """The memory level called `name`."""
        for level in self.memory:
            if level.name == name:
                return level
        raise KeyError(f"arch '{self.name}' has no memory level '{name}'; levels: "
                       f"{', '.join(m.name for m in self.memory)}")
