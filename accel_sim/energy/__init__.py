"""Component energy and area per technology node, every number with its source (see `tables.py`)."""
from accel_sim.energy.model import (
    NODE_RANGE_NM,
    EnergyTableError,
    add_area_mm2,
    add_energy_j,
    area_scale_factor,
    dram_energy_j_per_bit,
    dram_kinds,
    dtype_mac_area_mm2,
    dtype_mac_energy_j,
    energy_scale_factor,
    mac_area_mm2,
    mac_energy_j,
    mult_energy_j,
    noc_hop_energy_j_per_bit,
    regfile_access_energy_j,
    regfile_area_mm2,
    scale_area,
    scale_energy,
    sram_access_energy_j,
    sram_area_mm2,
    sram_cell_area_um2,
    supply_voltage_v,
    wire_energy_j_per_bit_mm,
)

__all__ = [
    "NODE_RANGE_NM", "EnergyTableError", "add_area_mm2", "add_energy_j", "area_scale_factor", "dram_energy_j_per_bit",
    "dram_kinds", "dtype_mac_area_mm2", "dtype_mac_energy_j", "energy_scale_factor", "mac_area_mm2",
    "mac_energy_j", "mult_energy_j", "noc_hop_energy_j_per_bit", "regfile_access_energy_j",
    "regfile_area_mm2", "scale_area", "scale_energy", "sram_access_energy_j", "sram_area_mm2",
    "sram_cell_area_um2", "supply_voltage_v", "wire_energy_j_per_bit_mm",
]
