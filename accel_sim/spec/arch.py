"""Architecture specs: memory levels outer -> inner and compute engines, frozen and validated once.

Python attribute names carry SI units (`capacity_bytes`, `clock_hz`); YAML keys are short and take unit
strings (`capacity: 24 MiB`, `clock: 700 MHz`) through aliases; the annotated types live in `spec/fields.py`.
Engine families are defined in `accel_sim/engines/` and joined in the `AnyEngine` union there. Specs sit below
engines (and energy) in the layering, so `Arch.engines` names the union only in its annotation; `accel_sim.engines`
resolves it (`Arch.model_rebuild`) when it is imported, and binds `Arch.node_range_nm` (the nodes the energy tables
scale to) with it: the public API (`accel_sim.load_arch`, ...) imports it first (accel_sim/__init__.py), and so does
every path through the evaluator; code that loads an Arch through `accel_sim.io` directly must import
`accel_sim.engines` itself.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from accel_sim.spec.cpu import Cpu
from accel_sim.spec.execution import AnyExecution, SequentialExecution, execution_mapping
from accel_sim.spec.fields import (ACTIVATION_ROLES, SPEC_CONFIG, Bytes, BytesPerSecond, Hertz, JoulesPerBit, PositiveFloat,
                                   PositiveInt, MemoryTechnology, PhyKind, SquareMillimetres, HoldsEntry, TensorRole,
                                   located, memory_kind, named_entries)
from accel_sim.spec.identity import IdentityMemo

if TYPE_CHECKING:
    from accel_sim.engines import AnyEngine
    from accel_sim.engines.base import EngineBase
    from accel_sim.spec.workload import Einsum, Workload

# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------
ByteCount = TypeVar("ByteCount", float, np.ndarray)


@dataclass(frozen=True)
class LevelReference:
    """An engine field that names a memory level (`EngineBase.level_references`): its key path inside the engine, the
    name it gives, the other names the field also takes, and whether the level must be off-chip DRAM."""

    at: tuple[str | int, ...]
    name: str
    others: tuple[str, ...] = ()   # names that are no level (a systolic pin's engine axes, rows and cols)
    off_chip: bool = False         # the engine models the level's DRAM itself (PIM banks)


@dataclass(frozen=True)
class Ports:
    """The bandwidths at which a memory level is read and written: one port both share, or two independent ones."""

    read_bytes_per_s: float
    write_bytes_per_s: float
    shared: bool   # True: one port (read and write bandwidths are the same number and their bytes add)

    def seconds(self, read_bytes: ByteCount, write_bytes: ByteCount) -> ByteCount:
        """Time to read and write these bytes: (read + write) / bandwidth through a shared port,
        max(read / read bandwidth, write / write bandwidth) through separate ones."""
        if self.shared:
            return (read_bytes + write_bytes) / self.read_bytes_per_s
        return np.maximum(read_bytes / self.read_bytes_per_s, write_bytes / self.write_bytes_per_s)

    @property
    def peak_bytes_per_s(self) -> float:
        """Bytes per second in both directions together at most."""
        return self.read_bytes_per_s if self.shared else self.read_bytes_per_s + self.write_bytes_per_s

    @property
    def round_trip_bytes_per_s(self) -> float:
        """Bytes per second of a write followed by a read of the same bytes, per direction: 2 / (1/r + 1/w)."""
        return 2 / (1 / self.read_bytes_per_s + 1 / self.write_bytes_per_s)


# the direction an access role moves a tensor at a level: read out of it, or written into it
_DIRECTION = {"inputs": "read", "outputs": "write", "results": "write", "psums": "write"}


def holds_entry(role: str) -> str:
    """The `holds:` entry that admits an access role: a map's output ('results', no partial sums) is held where
    outputs are; every other role is its own entry."""
    return "outputs" if role == "results" else role


_SHAPE_KEYS = IdentityMemo()   # (arch, workload, einsum) -> Arch.shape_key's key
_ROUTES = IdentityMemo(limit=64)   # (arch,) -> Arch._router's route function; an entry keeps its arch alive: a few


class MemoryLevel(BaseModel):
    """One level of the memory hierarchy: technology, size, ports, per-bit access energy, and what it may hold
    (roles, and tensors by name pattern).

    Ports: `bandwidth` is one port shared by reads and writes; `read_bandwidth` with `write_bandwidth` are two
    independent ports. A level has exactly one of the two forms (`Ports.seconds` turns bytes into time), except one
    on-chip level an FPGA design's buffers build, which may leave capacity and bandwidth to them (Arch).
    Per-bit energies and area left out are derived from technology, capacity and node (energy/components.py).
    """

    model_config = SPEC_CONFIG

    name: str
    # off-chip DRAM kind (DDR4, LPDDR5, HBM2, ...), SRAM or registers (spec/fields.py TECHNOLOGIES); required
    technology: MemoryTechnology = Field(None, validate_default=True)  # type: ignore[assignment]
    capacity_bytes: Bytes | None = Field(None, alias="capacity")  # None: unbounded backing store
    # one shared port (None when the level has separate read and write ports)
    bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="bandwidth")
    read_bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="read_bandwidth")
    write_bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="write_bandwidth")
    # pinned per-bit energies; None: derived from technology, capacity and node (energy.level_energy_per_bit)
    read_energy_j_per_bit: JoulesPerBit | None = Field(None, alias="read_energy_per_bit")
    # None in the file means "same as read" (pinned or derived)
    write_energy_j_per_bit: JoulesPerBit | None = Field(None, alias="write_energy_per_bit", validate_default=True)
    area_mm2: SquareMillimetres | None = Field(None, alias="area")  # pinned macro area of an on-chip level
    # equal SRAM macros the capacity is split into: an access reads one bank of capacity / banks (energy), and each
    # bank carries its own periphery (area); energy/components.py
    banks: PositiveInt = 1
    # the roles it may hold; 'activations' in a config stands for every non-weight role (ACTIVATION_ROLES)
    holds: tuple[HoldsEntry, ...] = ("weights", *ACTIVATION_ROLES)  # after validation: roles only
    tensors: tuple[str, ...] = ()  # glob patterns of tensor names it also holds, whatever their role
    # (tensor, 'read' | 'write') pairs this level passes by for one evaluation: set by the pipeline, never by a
    # config (sim/placement.py route_homes: an intermediate that lives in a level further in)
    _bypass: frozenset[tuple[str, str]] = PrivateAttr(default_factory=frozenset)
    # (tensor, bytes) of the tensors living here that one einsum does not touch: they take room its tiles cannot
    # use (sim/placement.py crowding_homes, mapper.fits_room); set by the pipeline, never by a config
    _reserved: tuple[tuple[str, float], ...] = PrivateAttr(default=())

    @field_validator("write_energy_j_per_bit", mode="after")
    @classmethod
    def _write_defaults_to_read(cls, value: float | None, info: ValidationInfo) -> float | None:
        return info.data.get("read_energy_j_per_bit") if value is None else value

    @model_validator(mode="after")
    def _technology_fits(self) -> MemoryLevel:
        if memory_kind(self.technology) == "off_chip":
            if self.area_mm2 is not None:
                raise located(f"level '{self.name}' is off-chip ({self.technology}) and adds no die area. "
                              "Fix: remove 'area', or set technology to SRAM or registers", "area")
        # an on-chip level without a capacity is refused by Arch (`_on_chip_from_buffers`) unless the engines' own
        # buffers (an FPGA design's) give it one
        if self.banks > 1 and memory_kind(self.technology) != "sram":
            raise located(f"level '{self.name}' ({self.technology}) has {self.banks} banks, but only an SRAM level is "
                          "priced per bank. Fix: remove 'banks', or set technology to SRAM", "banks")
        if self.banks > 1 and self.capacity_bytes is not None and self.banks > self.capacity_bytes:
            raise located(f"level '{self.name}' splits {self.capacity_bytes:,.0f} bytes into {self.banks} banks, "
                          "less than a byte each. Fix: give fewer banks than the capacity in bytes", "banks")
        return self

    @field_validator("holds", mode="after")
    @classmethod
    def _holds_roles(cls, entries: tuple[HoldsEntry, ...]) -> tuple[TensorRole, ...]:
        if not entries:
            raise ValueError("a memory level must hold at least one role. Fix: list roles such as 'weights', "
                             "'inputs', 'outputs', 'psums', 'kv_cache' (or 'activations' for every non-weight "
                             "role), or remove the level")
        roles = [r for entry in entries for r in (ACTIVATION_ROLES if entry == "activations" else (entry,))]
        if len(set(roles)) != len(roles):
            raise ValueError(f"holds lists a role twice ({list(entries)}; 'activations' covers "
                             f"{', '.join(ACTIVATION_ROLES)}). Fix: list each role once")
        return tuple(roles)

    @model_validator(mode="after")
    def _one_port_form(self) -> MemoryLevel:
        shared = self.bandwidth_bytes_per_s is not None
        split = (self.read_bandwidth_bytes_per_s is not None, self.write_bandwidth_bytes_per_s is not None)
        if shared and any(split):
            raise located(f"level '{self.name}' gives both 'bandwidth' (one port shared by reads and writes) and "
                          f"{'read_bandwidth' if split[0] else 'write_bandwidth'} (separate ports). Fix: keep one "
                          f"form: either 'bandwidth', or both 'read_bandwidth' and 'write_bandwidth'", "bandwidth")
        if not shared and not any(split) and memory_kind(self.technology) != "off_chip":
            return self   # the engines' buffers may give it one (Arch._on_chip_from_buffers), or Arch refuses it
        if not shared and not all(split):
            given = "read_bandwidth" if split[0] else "write_bandwidth" if split[1] else "bandwidth"
            missing = "'write_bandwidth'" if split[0] else "'read_bandwidth'" if split[1] else "bandwidth"
            raise located(_no_bandwidth(self.name, missing), given)
        return self

    @property
    def ports(self) -> Ports:
        """The level's read and write bandwidths as its own ports give them."""
        if self.bandwidth_bytes_per_s is not None:
            return Ports(self.bandwidth_bytes_per_s, self.bandwidth_bytes_per_s, shared=True)
        return Ports(self.read_bandwidth_bytes_per_s, self.write_bandwidth_bytes_per_s, shared=False)

    def admits(self, role: str, tensor: str = "") -> bool:
        """Whether this level may hold a tensor of `role` (a role, or the storage class 'activations': any
        non-weight role) or, by name pattern, `tensor` itself."""
        # read from pydantic's private store directly: `self._bypass` goes through BaseModel.__getattr__, 1.5 us a
        # call, and the engines ask `admits` thousands of times a run
        bypass = self.__pydantic_private__["_bypass"]
        if bypass and (tensor, _DIRECTION.get(role, "")) in bypass:
            return False
        role = holds_entry(role)
        held = (any(r in self.holds for r in ACTIVATION_ROLES) if role == "activations" else role in self.holds)
        return held or any(fnmatch.fnmatchcase(tensor, pattern) for pattern in self.tensors)

    def bypassing(self, entries: frozenset[tuple[str, str]]) -> MemoryLevel:
        """This level, also passing by the (tensor, 'read' | 'write') `entries` (route_homes)."""
        level = self.model_copy()
        level._bypass = self._bypass | entries
        return level

    def reserving(self, entries: tuple[tuple[str, float], ...]) -> MemoryLevel:
        """This level with the (tensor, bytes) `entries` taking room an einsum's tiles cannot use."""
        level = self.model_copy()
        level._reserved = entries
        return level

    @property
    def reserved(self) -> tuple[tuple[str, float], ...]:
        """The (tensor, bytes) of live tensors the current einsum does not touch, which its tiles must leave room
        for."""
        return self.__pydantic_private__["_reserved"]

    @property
    def reserved_bytes(self) -> float:
        """Bytes of the reserved tensors."""
        return sum(size for _, size in self.__pydantic_private__["_reserved"])

    @property
    def room_bytes(self) -> float | None:
        """Bytes an einsum's tiles may use: the capacity less the reserved tensors' (None: unbounded)."""
        return None if self.capacity_bytes is None else self.capacity_bytes - self.reserved_bytes

    @property
    def bypassed(self) -> frozenset[tuple[str, str]]:
        """The (tensor, direction) pairs this level passes by in this evaluation."""
        return self.__pydantic_private__["_bypass"]

    def keeps(self, role: str, tensor: str = "") -> bool:
        """Whether an einsum keeps `tensor`, accessed in `role` (`Workload.roles`), at this level: as `admits`, and
        an output also stays where its partial sums accumulate ('psums'), draining out to a level holding 'outputs'
        (a map's output, role 'results', has no partial sums: only where outputs are)."""
        return self.admits(role, tensor) or (role == "outputs" and self.admits("psums", tensor))


def _no_bandwidth(level: str, missing: str = "bandwidth", also: str = "") -> str:
    """The message of a level without the bandwidth it needs."""
    return (f"level '{level}' has no {missing}. Fix: give 'bandwidth' (one port shared by reads and writes, e.g. "
            f"'bandwidth: 34 GB/s'), or both 'read_bandwidth' and 'write_bandwidth' (separate ports){also}")


def _nested(levels: tuple[MemoryLevel, ...], *where: str) -> tuple[MemoryLevel, ...]:
    """`levels`, checked: a level nests inside the outer levels that hold what it holds (its roles' routes) and may
    not be larger than them; levels on disjoint routes are siblings whatever their order (tpu_v1's Accumulators hold
    only partial sums, which no Unified Buffer of any size holds, so the buffer may be the smaller). An error's key
    path starts with `where` (the levels' own path from where the check runs)."""
    for index, level in enumerate(levels):
        if level.capacity_bytes is None:
            continue
        for outer_index, outer in enumerate(levels[:index]):
            shared = [r for r in level.holds if r in outer.holds] or [p for p in level.tensors if p in outer.tensors]
            if not shared or outer.capacity_bytes is None:
                continue
            if level.capacity_bytes > outer.capacity_bytes:
                raise located(
                    f"level '{level.name}' ({level.capacity_bytes:,.0f} bytes) is larger than '{outer.name}' "
                    f"(memory[{outer_index}], {outer.capacity_bytes:,.0f} bytes), an outer level that also "
                    f"holds {', '.join(shared)}; on a route the levels go outer -> inner with non-increasing "
                    f"capacity. Fix: list the levels outermost first, correct the capacity, or give the two "
                    f"levels disjoint 'holds'", *where, index, "capacity")
    return levels


class IoPort(BaseModel):
    """One off-die interface of the chip: its PHY kind and how many units (lanes, 32-bit channels, stacks, links)."""

    model_config = SPEC_CONFIG

    kind: PhyKind
    count: PositiveInt  # units as energy/tables.py PHY_AREA counts them for the kind


# ---------------------------------------------------------------------------------------------
# Architecture
# ---------------------------------------------------------------------------------------------
class Arch(BaseModel):
    """An accelerator: clock, technology node, memory levels outer -> inner, and compute engines."""

    model_config = SPEC_CONFIG
    # the technology nodes the energy and area scaling tables cover (energy.model.NODE_RANGE_NM): specs sit below
    # energy in the layering, so accel_sim.engines binds it when it binds the engine union (module docstring)
    node_range_nm: ClassVar[tuple[float, float]]

    name: str
    source: str | None = None  # citation of the design
    clock_hz: Hertz = Field(alias="clock")
    technology_nm: PositiveFloat = Field(alias="technology_nm")
    area_mm2: SquareMillimetres | None = Field(None, alias="area")
    memory: tuple[MemoryLevel, ...]
    # the chip's off-die interfaces: each PHY kind with its count of lanes, channels, stacks or links
    io: tuple[IoPort, ...] = ()
    engines: tuple[AnyEngine, ...]
    # how a workload runs (spec/execution.py): a kind and its options; `execution: scheduled` is {kind: scheduled}
    execution: AnyExecution = Field(default_factory=SequentialExecution)
    # a multi-core CPU (spec/cpu.py): its engines describe one core, `cpu` the clusters and the thread count
    cpu: Cpu | None = None

    @field_validator("execution", mode="before")
    @classmethod
    def _execution_shorthand(cls, value: object) -> object:
        return execution_mapping(value)

    @field_validator("memory", mode="after")
    @classmethod
    def _check_memory(cls, levels: tuple[MemoryLevel, ...]) -> tuple[MemoryLevel, ...]:
        named_entries(levels, "memory level", "memory",
                      "no memory levels. Fix: list at least one level, outermost (e.g. DRAM) first")
        return _nested(levels)

    @model_validator(mode="after")
    def _on_chip_from_buffers(self) -> Arch:
        # an FPGA design's on-chip memory is what its buffers build (block RAM and UltraRAM): one on-chip level left
        # without a capacity takes the bytes of the engines' buffers less the other on-chip levels', and one left
        # without a bandwidth the bytes per cycle their units read from them at the engines' clocks, so resizing or
        # widening a buffer changes the memory the placement, the mapper and the timing see; every other on-chip
        # level gives its own
        self._on_chip_bandwidth()
        missing = [i for i, lv in enumerate(self.memory)
                   if lv.capacity_bytes is None and memory_kind(lv.technology) != "off_chip"]
        if not missing:
            return self
        built = sum(engine.on_chip_buffer_bytes() for engine in self.engines)
        index = missing[0]
        level = self.memory[index]
        if len(missing) > 1 or not built:
            also = (", or leave only one on-chip level without a capacity: it takes the engines' buffers" if built
                    else "")
            raise located(f"on-chip level '{level.name}' ({level.technology}) has no capacity. Fix: give "
                          "'capacity:' (e.g. 256 KiB), or set technology to an off-chip kind such as DRAM for an "
                          f"unbounded backing store{also}", "memory", index, "capacity")
        others = sum(lv.capacity_bytes or 0.0 for lv in self.memory if memory_kind(lv.technology) != "off_chip")
        if built <= others:
            raise located(f"on-chip level '{level.name}' has no capacity, and the engines' buffers ({built:,.0f} "
                          f"bytes) leave none for it beyond the other on-chip levels ({others:,.0f} bytes). Fix: give "
                          "its capacity, or shrink the other on-chip levels", "memory", index, "capacity")
        self._replace_level(index, capacity_bytes=built - others)
        return self

    def _on_chip_bandwidth(self) -> None:
        """Give the one on-chip level without a bandwidth the engines' buffers' bytes per second, or refuse it."""
        portless = [i for i, lv in enumerate(self.memory)
                    if lv.bandwidth_bytes_per_s is None and lv.read_bandwidth_bytes_per_s is None
                    and lv.write_bandwidth_bytes_per_s is None]
        if not portless:
            return
        rate = sum(engine.on_chip_buffer_bytes_per_cycle() * self.engine_clock_hz(engine) for engine in self.engines)
        index = portless[0]
        if len(portless) > 1 or not rate:
            also = (", or leave only one on-chip level without a bandwidth: it takes the engines' buffers'" if rate
                    else "")
            raise located(_no_bandwidth(self.memory[index].name, also=also), "memory", index, "bandwidth")
        self._replace_level(index, bandwidth_bytes_per_s=rate)

    def _replace_level(self, index: int, **update: float) -> None:
        """Level `index` with `update` applied (a frozen model: only in validation, before anything has read it)."""
        memory = list(self.memory)
        memory[index] = memory[index].model_copy(update=update)
        object.__setattr__(self, "memory", _nested(tuple(memory), "memory"))

    @field_validator("engines", mode="after")
    @classmethod
    def _check_engines(cls, engines: tuple[EngineBase, ...]) -> tuple[EngineBase, ...]:
        return named_entries(engines, "engine", "engines", "no engines. Fix: add at least one engine, e.g. "
                                                           "{name: mxu, kind: systolic, rows: 128, cols: 128}")

    @model_validator(mode="before")
    @classmethod
    def _cpu_clock_from_its_cores(cls, data: object) -> object:
        # a CPU runs at its clusters' clocks (engines/multicore.py); the arch clock is only the unit its cycles are
        # counted in, so a CPU arch may leave it out and count in the first (reference) cluster's cycles
        if isinstance(data, Mapping) and "clock" not in data and isinstance(data.get("cpu"), Mapping):
            clusters = data["cpu"].get("clusters")
            if isinstance(clusters, Sequence) and clusters and isinstance(clusters[0], Mapping) \
                    and "clock" in clusters[0]:
                return {**data, "clock": clusters[0]["clock"]}
        return data

    @model_validator(mode="after")
    def _cpu_clock_is_its_reference_cores(self) -> Arch:
        # another arch clock would change no time (the clusters' clocks decide every operator's pace), only the
        # unit of the reported cycles: a knob that seems to do something and does not
        if self.cpu is not None and self.clock_hz != self.cpu.clusters[0].clock_hz:
            first = self.cpu.clusters[0]
            raise located(f"clock {self.clock_hz / 1e9:g} GHz differs from the clock of the CPU's first cluster "
                          f"'{first.name}' ({first.clock_hz / 1e9:g} GHz); a CPU's time follows its clusters' "
                          f"clocks, and the arch clock is only the unit of its cycles. Fix: leave clock out (it is "
                          f"then cpu.clusters.{first.name}.clock), or change the clusters' clocks", "clock")
        return self

    @model_validator(mode="after")
    def _engine_clocks_within_their_boost(self) -> Arch:
        # a GPU's power limit lowers the clock from its boost clock, never raises it above: an engine configured
        # faster would be modelled at the boost clock, slower than asked (engines/gpu.py, "Power limit")
        for index, engine in enumerate(self.engines):
            dvfs = getattr(engine, "dvfs", None)
            if dvfs is None:
                continue
            clock = engine.clock_hz if engine.clock_hz is not None else self.clock_hz
            if clock > dvfs.boost_clock_hz:
                raise located(f"engine '{engine.name}' runs at {clock / 1e6:g} MHz, above its dvfs.boost_clock "
                              f"({dvfs.boost_clock_hz / 1e6:g} MHz), the fastest its power limit lets it run. Fix: "
                              f"raise dvfs.boost_clock with the clock, or remove dvfs (no power limit)",
                              "engines", index, "dvfs", "boost_clock")
            # the main loop's ceiling (tensor_efficiency at the configured clock) must be reachable at the boost
            # clock, or every kernel would run below the rate the config states even with no limit binding
            ceiling, reach = engine.tensor_efficiency * clock, dvfs.clock_bound_efficiency * dvfs.boost_clock_hz
            if reach < ceiling:
                raise located(f"engine '{engine.name}': dvfs.clock_bound_efficiency x boost_clock "
                              f"({dvfs.clock_bound_efficiency:g} x {dvfs.boost_clock_hz / 1e6:g} MHz) is below "
                              f"tensor_efficiency x clock ({engine.tensor_efficiency:g} x {clock / 1e6:g} MHz): the "
                              f"main loop could not reach its stated rate even at the boost clock. Fix: give the "
                              f"fraction of the peak at the running clock that a clock-bound main loop sustains "
                              f"(0.957 on the H100), or lower tensor_efficiency",
                              "engines", index, "dvfs", "clock_bound_efficiency")
        return self

    @model_validator(mode="after")
    def _cpu_engines_are_cores(self) -> Arch:
        if self.cpu is not None:
            for index, engine in enumerate(self.engines):
                try:
                    engine.on_cores(1)
                except NotImplementedError as error:
                    raise located(f"{error}. Fix: describe one core with such an engine, or remove 'cpu:'",
                                  "engines", index, "kind") from None
        return self

    @model_validator(mode="after")
    def _execution_has_its_engines(self) -> Arch:
        # an execution model that drives one kind of engine fails mid-run without it: refuse the arch at load, so
        # that validate, run and a sweep's probes all say so at the execution's key
        kinds = {engine.name: engine.kind for engine in self.engines}
        execution = self.execution
        if execution.kind == "fpga":
            fpga = [name for name, kind in kinds.items() if kind == "fpga"]
            if execution.engine is not None and execution.engine not in fpga:
                raise located(f"execution kind 'fpga' names engine '{execution.engine}', which is not an engine of "
                              f"kind 'fpga' (FPGA engines: {', '.join(fpga) or 'none'}). Fix: name an engine of kind "
                              f"'fpga', or drop 'engine' to use the first", "execution", "engine")
            if not fpga:
                raise located("execution kind 'fpga' needs an engine of kind 'fpga', and the arch has none. Fix: add "
                              "one, or use another execution kind (e.g. sequential)", "execution", "kind")
        if execution.kind == "npu_pim" and execution.policy in ("naive", "neupims") and "pim" not in kinds.values():
            raise located(f"execution policy '{execution.policy}' runs attention in PIM, and the arch has no engine "
                          f"of kind 'pim'. Fix: add one, or use policy 'npu_only'", "execution", "policy")
        return self

    @model_validator(mode="after")
    def _engine_buffers_fit_on_chip(self) -> Arch:
        # an engine that declares its own buffers (an FPGA design) builds them from the on-chip memory the levels
        # describe: levels too small for them would be a design the engine's timing ignores
        on_chip = [lv for lv in self.memory if memory_kind(lv.technology) != "off_chip"]
        held = sum(lv.capacity_bytes or 0.0 for lv in on_chip)
        for index, engine in enumerate(self.engines):
            need = engine.on_chip_buffer_bytes()
            if need > held:
                levels = ", ".join(f"{lv.name} {lv.capacity_bytes:,.0f}" for lv in on_chip) or "none"
                last = on_chip[-1] if on_chip else None
                fix = (f"raise memory.{last.name}.capacity to at least {need - held + (last.capacity_bytes or 0):,.0f} "
                       "bytes or leave it out (it then takes the buffers' bytes)" if last is not None
                       else "add an on-chip (SRAM) level that holds them")
                raise located(f"engine '{engine.name}' declares {need:,.0f} bytes of on-chip buffers, more than the "
                              f"arch's on-chip levels hold ({held:,.0f} bytes: {levels}). Fix: {fix}, or shrink the "
                              f"engine's buffers", "engines", index, "buffers")
        built = sum(engine.on_chip_buffer_bytes() for engine in self.engines)
        if built and held > built:
            # the design's buffers are all the on-chip memory it has: more in the levels is memory it does not build
            last = self.memory.index(on_chip[-1])
            raise located(f"the arch's on-chip levels hold {held:,.0f} bytes, more than the {built:,.0f} bytes of "
                          f"buffers its engines build: memory the design does not have. Fix: leave "
                          f"memory.{on_chip[-1].name}.capacity out (it is then the buffers' bytes less the other "
                          f"on-chip levels'), or declare the buffers that build it", "memory", last, "capacity")
        return self

    @model_validator(mode="after")
    def _off_chip_outside_on_chip(self) -> Arch:
        # memory is listed outer -> inner: a DRAM inside an SRAM would have every einsum fetch through the SRAM
        # from the DRAM beneath it, a hierarchy no chip has (usually the two entries swapped)
        on_chip = next((lv for lv in self.memory if memory_kind(lv.technology) != "off_chip"), None)
        if on_chip is None:
            return self
        first = self.memory.index(on_chip)
        for index, level in enumerate(self.memory[first + 1:], start=first + 1):
            if memory_kind(level.technology) == "off_chip":
                raise located(f"memory level '{level.name}' ({level.technology}, off-chip) is listed inside the "
                              f"on-chip level '{on_chip.name}' ({on_chip.technology}), but memory is listed outer to "
                              f"inner. Fix: list '{level.name}' before '{on_chip.name}'",
                              "memory", index, "technology")
        return self

    @model_validator(mode="after")
    def _engines_name_levels(self) -> Arch:
        # an engine looks its levels up by name when it runs (PIM banks, GPU efficiencies, systolic pins): a name
        # the arch lacks would be a KeyError mid-run, or silently ignored
        levels = {level.name: level for level in self.memory}
        for index, engine in enumerate(self.engines):
            for ref in engine.level_references():
                if ref.name in ref.others:
                    continue
                level = levels.get(ref.name)
                if level is None:
                    named = (f"'{ref.name}', which is neither {' nor '.join(ref.others)} nor a memory level of the arch"
                             if ref.others else f"memory level '{ref.name}', which the arch does not have")
                    raise located(f"engine '{engine.name}' names {named} (levels: {', '.join(levels)}). Fix: use one of "
                                  f"{', '.join((*ref.others, *levels))}, or add the level under 'memory:'",
                                  "engines", index, *ref.at)
                if ref.off_chip and memory_kind(level.technology) != "off_chip":
                    off_chip = [lv.name for lv in self.memory if memory_kind(lv.technology) == "off_chip"]
                    raise located(f"engine '{engine.name}' ({engine.kind}) computes in the banks of a DRAM level, but "
                                  f"'{ref.name}' is {level.technology}. Fix: name an off-chip level"
                                  f"{' (' + ', '.join(off_chip) + ')' if off_chip else ''}, or set its technology "
                                  f"to a DRAM kind such as HBM2", "engines", index, *ref.at)
        return self

    @model_validator(mode="after")
    def _node_in_scaling_range(self) -> Arch:
        # energies and areas not pinned in the file are carried to the node by the scaling tables, which cover only
        # node_range_nm; a config that pins every one of them (the GPUs at 4 nm) may name any node
        low, high = self.node_range_nm
        if low <= self.technology_nm <= high:
            return self
        scaled = [f"engine '{e.name}' ({e.kind})" for e in self.engines if e.scales_with_node()]
        unpinned = [level for level in self.memory if memory_kind(level.technology) != "off_chip"
                    and (level.read_energy_j_per_bit is None or level.area_mm2 is None)]
        for level in unpinned:
            missing = [key for key, value in (("read_energy_per_bit", level.read_energy_j_per_bit),
                                              ("area", level.area_mm2)) if value is None]
            scaled.append(f"level '{level.name}' (no pinned {' or '.join(missing)})")
        if scaled:
            pin = (f", or pin read_energy_per_bit and area of {', '.join(repr(lv.name) for lv in unpinned)}"
                   if len(scaled) == len(unpinned) else "")
            raise located(f"technology node {self.technology_nm:g} nm is outside the {low:g}-{high:g} nm range of the "
                          f"energy and area scaling tables (Stillmaker & Baas 2017), which price "
                          f"{', '.join(scaled[:3])}{f' and {len(scaled) - 3} more' if len(scaled) > 3 else ''}. Fix: use a node between {low:g} and {high:g} nm (the nearest one "
                          f"for a newer process){pin}", "technology_nm")
        return self

    def engine_clock_hz(self, engine: EngineBase | str) -> float:
        """Clock of an engine (given or by name): its own clock, else the arch clock."""
        found = self.engine(engine) if isinstance(engine, str) else engine
        return found.clock_hz if found.clock_hz is not None else self.clock_hz

    def reserving(self, held: Mapping[str, Sequence[tuple[str, float]]]) -> Arch:
        """This arch with each level named in `held` reserving its (tensor, bytes) entries for live tensors an
        einsum does not touch (`MemoryLevel.reserving`): the room its tiles are mapped into."""
        memory = tuple(lv.reserving(tuple(held[lv.name])) if held.get(lv.name) else lv for lv in self.memory)
        return self.model_copy(update={"memory": memory})

    def engine(self, name: str) -> EngineBase:
        """The engine called `name`."""
        for engine in self.engines:
            if engine.name == name:
                return engine
        raise KeyError(f"arch '{self.name}' has no engine '{name}'; engines: "
                       f"{', '.join(e.name for e in self.engines)}")

    def shape_key(self, workload: Workload, einsum: Einsum) -> tuple[tuple, tuple[str, ...]]:
        """`Workload.shape_key` on this arch: einsums of one shape share a cost only if the levels' name patterns
        (`tensors:`) and bypasses route their tensors alike, so the key also holds, per tensor, the levels whose
        patterns admit it and those that pass it by (nothing more when no level has either)."""
        key, names = workload.shape_key(einsum)
        # the pipeline asks for every einsum's key several times a run: each einsum's routes once per arch object
        return _SHAPE_KEYS.get((self, workload, einsum), lambda: self._routed_key(key, names)), names

    def _routed_key(self, key: tuple, names: tuple[str, ...]) -> tuple:
        """`key` with its tensors' routes (`shape_key`), where some level has name patterns or bypasses."""
        if not any(level.tensors or level.bypassed for level in self.memory):
            return key
        route = _ROUTES.get((self,), self._router)
        return key, tuple(route(name) for name in names)

    def _router(self) -> Callable[[str], tuple[tuple[int, ...], tuple[tuple[int, str], ...]]]:
        """route(tensor name) -> (the levels whose name patterns admit it, the (level, direction) pairs that pass it
        by, in level order, reads first): the bypasses are read once per arch, not once per einsum and level."""
        patterned = [(i, level.tensors) for i, level in enumerate(self.memory) if level.tensors]
        passed: dict[str, list[tuple[int, str]]] = {}
        for i, level in enumerate(self.memory):
            for name, direction in sorted(level.bypassed, key=lambda entry: entry[1] != "read"):
                passed.setdefault(name, []).append((i, direction))

        def route(name: str) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
            """The routes of tensor `name`."""
            return (tuple(i for i, patterns in patterned if any(fnmatch.fnmatchcase(name, p) for p in patterns)),
                    tuple(passed.get(name, ())))
        return route

    def level(self, name: str) -> MemoryLevel:
        """The memory level called `name`."""
        for level in self.memory:
            if level.name == name:
                return level
        raise KeyError(f"arch '{self.name}' has no memory level '{name}'; levels: "
                       f"{', '.join(m.name for m in self.memory)}")
