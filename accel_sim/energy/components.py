"""From arch specs to energy and area: memory levels, operand dtypes. The tables themselves are in model.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

from accel_sim.energy.model import dram_energy_j_per_bit, dram_kinds, sram_access_energy_j, sram_area_mm2

if TYPE_CHECKING:
    from accel_sim.spec.arch import MemoryLevel

SRAM_PORT_BITS = 64  # Horowitz's SRAM figures are per 64-bit access; we charge per bit at that width


def dtype_of_bits(bits: int) -> str:
    """The dtype the energy tables use for a tensor of `bits`: integers up to 8 bits, floats from 16 bits on.

    Workload tensors carry only a width; low-bit LLM and CNN inference quantize to integers, while 16- and
    32-bit tensors are fp16/fp32 in every model we import (ONNX float exports, fp16 LLM recipes).
    """
    if bits <= 8:
        return f"int{max(bits, 1)}"
    return "fp16" if bits <= 16 else "fp32"


def is_off_chip(level: MemoryLevel) -> bool:
    """A DRAM-kind technology or an unbounded backing store."""
    return level.capacity_bytes is None or (level.technology or "").upper() in dram_kinds()


def level_energy_per_bit(level: MemoryLevel, node_nm: float) -> tuple[float, float]:
    """(read, write) joules per bit: the config's figures when given, else the cited tables.

    DRAM kinds use their pJ/bit (energy/tables.py); on-chip levels an SRAM of their capacity read at 64 bits.
    """
    if level.read_energy_j_per_bit > 0 or level.write_energy_j_per_bit:
        return level.read_energy_j_per_bit, level.write_energy_j_per_bit or level.read_energy_j_per_bit
    technology = (level.technology or "").upper()
    if technology in dram_kinds():
        per_bit = dram_energy_j_per_bit(technology)
    elif level.capacity_bytes is None:
        per_bit = 0.0  # an unbounded store of unknown kind: nothing cited to charge
    else:
        per_bit = sram_access_energy_j(level.capacity_bytes, SRAM_PORT_BITS, node_nm) / SRAM_PORT_BITS
    return per_bit, per_bit


def level_area_mm2(level: MemoryLevel, node_nm: float) -> float:
    """Silicon area of an on-chip level (an SRAM macro of its capacity); off-chip levels take none."""
    return 0.0 if is_off_chip(level) else sram_area_mm2(level.capacity_bytes, node_nm)
