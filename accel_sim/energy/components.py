"""From arch specs to energy and area: memory levels, operand dtypes. The tables themselves are in model.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

from accel_sim.energy.model import (dram_energy_j_per_bit, phy_area_mm2, regfile_access_energy_j, regfile_area_mm2,
                                    sram_access_energy_j, sram_area_mm2, sram_bank_route_mm, wire_energy_j_per_bit_mm)
from accel_sim.energy.model import Number
from accel_sim.energy.tables import DEFAULT_FLOAT_BY_BITS, REGISTER_FILE_REFERENCE_BITS, SRAM_REFERENCE_ACCESS_BITS
from accel_sim.spec.fields import MemoryKind, memory_kind
from accel_sim.spec.identity import IdentityMemo

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch, MemoryLevel

# Both on-chip models are linear in access width (tables.SRAM_INTERPOLATION_RULE, regfile_access_energy_j), so a
# level's per-bit energy does not depend on its width: we read them at their cited reference widths.
SRAM_PORT_BITS = int(SRAM_REFERENCE_ACCESS_BITS.value)
REGISTER_PORT_BITS = int(REGISTER_FILE_REFERENCE_BITS.value)


def dtype_of_bits(bits: int, number: Number | None = None) -> str:
    """The dtype the energy tables use for `bits`: `number` when the hardware states it (int: an integer of that
    width; fp: the float format of that width), else integers up to 8 bits and floats from 16 bits on.

    Workload tensors carry only a width; low-bit LLM and CNN inference quantize to integers, while 16- and
    32-bit tensors are fp16/fp32 in every model we import (ONNX float exports, fp16 LLM recipes). An engine built
    for fixed-point arithmetic (Eyeriss, DianNao: 16-bit fixed point) says `number: int`.
    """
    if number == "int" or (number is None and bits <= 8):
        return f"int{max(bits, 1)}"
    if number == "fp":
        return DEFAULT_FLOAT_BY_BITS.get(bits, "fp16" if bits <= 16 else "fp32")
    return "fp16" if bits <= 16 else "fp32"


def is_off_chip(level: MemoryLevel) -> bool:
    """Whether the level is an off-chip DRAM of some kind (spec.fields.memory_kind)."""
    return memory_kind(level.technology) == "off_chip"


def derived_energy_per_bit(level: MemoryLevel, node_nm: float) -> float:
    """Joules per bit read or written by the level's technology model, ignoring any figure the config pins.

    Off-chip: the DRAM kind's cited pJ/bit (no node scaling: the device is not on our die). SRAM: Horowitz's
    cache reads at the capacity of one bank, node-scaled, plus the wire from the level's port to the bank across
    the other banks (zero for one bank). Registers: Eyeriss' register-file access at its capacity.
    """
    kind = memory_kind(level.technology)
    if kind == "off_chip":
        return dram_energy_j_per_bit(level.technology)
    bank = storage_energy_per_bit(kind, level.capacity_bytes / level.banks, node_nm)
    if kind == "sram":
        route_mm = sram_bank_route_mm(level_area_mm2(level, node_nm), level.banks)
        return bank + route_mm * wire_energy_j_per_bit_mm(node_nm)
    return bank


def storage_energy_per_bit(kind: MemoryKind, capacity_bytes: float, node_nm: float) -> float:
    """Joules per bit read or written in one on-chip array of `capacity_bytes`: Horowitz's cache reads (SRAM) or
    Eyeriss' register-file access (registers), at the node; a memory level's bank or a PE's scratchpad alike."""
    if kind == "sram":
        return sram_access_energy_j(capacity_bytes, SRAM_PORT_BITS, node_nm) / SRAM_PORT_BITS
    return regfile_access_energy_j(capacity_bytes, REGISTER_PORT_BITS, node_nm) / REGISTER_PORT_BITS


def storage_area_mm2(kind: MemoryKind, capacity_bytes: float, node_nm: float, banks: int = 1) -> float:
    """Die area of one on-chip array of `capacity_bytes`: SRAM macros of capacity / banks each, or a flip-flop
    register file; a memory level or a PE's scratchpad alike."""
    if kind == "sram":
        return sram_area_mm2(capacity_bytes, node_nm, banks)
    return regfile_area_mm2(capacity_bytes, node_nm)


def level_energy_per_bit(level: MemoryLevel, node_nm: float) -> tuple[float, float]:
    """(read, write) joules per bit: each the config's pinned figure when given, else the technology model.

    A write figure left out follows the read figure (pinned or derived).
    """
    # a search prices the same levels for every batch it scores: once per level object (it is frozen)
    return _PER_BIT.get((level,), lambda: _level_energy_per_bit(level, node_nm), (node_nm,))


_PER_BIT = IdentityMemo()


def _level_energy_per_bit(level: MemoryLevel, node_nm: float) -> tuple[float, float]:
    """`level_energy_per_bit`, computed."""
    read = level.read_energy_j_per_bit
    write = level.write_energy_j_per_bit
    if read is None or write is None:
        derived = derived_energy_per_bit(level, node_nm)
        read = derived if read is None else read
        write = read if write is None else write
    return read, write


def level_area_mm2(level: MemoryLevel, node_nm: float) -> float:
    """Die area of a level: none off chip; else the pinned area, or an SRAM macro / flip-flop register file of
    its capacity at the node."""
    kind = memory_kind(level.technology)
    if kind == "off_chip":
        return 0.0
    if level.area_mm2 is not None:
        return level.area_mm2
    return storage_area_mm2(kind, level.capacity_bytes, node_nm, level.banks)


def io_area_mm2(arch: Arch) -> float:
    """Die area of the arch's off-die interface PHYs (its `io:` list); controllers are not counted."""
    return sum(phy_area_mm2(port.kind, port.count) for port in arch.io)
