"""Memory levels -> energy and area: technology classes, capacity-aware SRAM and registers, pins, off-chip area."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.energy import dram_energy_j_per_bit, dram_kinds, energy_scale_factor
from accel_sim.energy.components import io_area_mm2, is_off_chip, level_area_mm2, level_energy_per_bit
from accel_sim.energy.tables import PHY_AREA
from accel_sim.spec.arch import MemoryLevel
from accel_sim.spec.fields import OFF_CHIP_TECHNOLOGIES, PHY_KINDS, TECHNOLOGIES, memory_kind

REPO = Path(__file__).resolve().parents[3]
PJ = 1e-12
KIB, MIB = 1024, 1024 * 1024
# Macro area per bit at 45 nm: Intel's 0.346 um2 cell (Mistry, IEDM 2007) over the bit-cell share of a 32 KiB macro,
# 0.393 (LLMCompass' CACTI-derived table, tables.SRAM_MACRO_EFFICIENCY), in mm2.
SRAM_45NM_MM2_PER_BIT = 0.346 / 0.393 * 1e-6
# Eyeriss' 1x, a 16-bit MAC at 45 nm: Horowitz's int multiply by the power law through 8x8 (0.2 pJ) and 32x32
# (3.1 pJ) in a*b, plus an int16 add by the power law through the 8-bit (0.03 pJ) and 32-bit (0.1 pJ) adds.
MAC16_PJ = 0.2 * 4 ** (math.log(15.5) / math.log(16)) + 0.03 * 2 ** (math.log(0.1 / 0.03) / math.log(4))


def level(technology: str, capacity: float | None = None, **pins: str) -> MemoryLevel:
    """A level of `technology` and `capacity` bytes, with optional pinned figures (YAML keys)."""
    return MemoryLevel.model_validate({"name": "m", "technology": technology, "capacity": capacity,
                                       "bandwidth": "1 TB/s", **pins})


def test_every_off_chip_technology_has_a_cited_dram_energy():
    """The validated list of off-chip kinds and the DRAM energy table are the same set: none is priced as SRAM."""
    assert set(dram_kinds()) == set(OFF_CHIP_TECHNOLOGIES)
    assert {"DDR3", "DDR4", "DDR5", "LPDDR4", "LPDDR4X", "LPDDR5", "LPDDR5X", "HBM", "HBM2", "HBM2E", "HBM3",
            "HBM3E", "GDDR5", "GDDR6", "GDDR6X", "DRAM"} == set(OFF_CHIP_TECHNOLOGIES)


def test_memory_kind_classifies_every_technology():
    """Off-chip kinds -> off_chip, SRAM -> sram, registers -> registers; anything else is an error."""
    kinds = {t: memory_kind(t) for t in TECHNOLOGIES}
    assert {t for t, k in kinds.items() if k == "off_chip"} == set(OFF_CHIP_TECHNOLOGIES)
    assert (kinds["SRAM"], kinds["registers"]) == ("sram", "registers")
    with pytest.raises(ValueError, match="unknown memory technology 'eDRAM'"):
        memory_kind("eDRAM")


def test_technology_is_case_insensitive_and_kept_canonical():
    """'ddr5', 'Sram' and 'REGISTERS' are read as DDR5, SRAM and registers."""
    assert [level(t, KIB).technology for t in ("ddr5", "Sram", "REGISTERS")] == ["DDR5", "SRAM", "registers"]


def test_ddr5_is_off_chip_and_priced_as_dram_not_sram():
    """A DDR5 level (issue 16: once costed as a 14,124 mm2 SRAM) adds no area and costs DDR5's pJ/bit."""
    ddr5 = level("DDR5", 64 * 2**30)
    assert is_off_chip(ddr5) and level_area_mm2(ddr5, 7) == 0.0
    # DDR3's 1.95 nJ / 64 bits x (1.1 V / 1.5 V)^2 (JESD79-5 vs JESD79-3 supply)
    assert level_energy_per_bit(ddr5, 7) == pytest.approx((1950 / 64 * (1.1 / 1.5) ** 2 * PJ,) * 2)


@pytest.mark.parametrize("capacity", [None, 1 * MIB, 8 * 2**30, 512 * 2**30])
@pytest.mark.parametrize("technology", ["HBM3", "LPDDR5", "DRAM"])
def test_off_chip_area_is_zero_at_any_capacity(technology, capacity):
    """An off-chip device is not on the die: zero area whatever its size."""
    assert level_area_mm2(level(technology, capacity), 16) == 0.0


def test_sram_energy_and_area_by_hand_at_32_kib_and_1_mib():
    """Horowitz ISSCC 2014 at 45 nm, 64-bit reads: 32 KB 20 pJ, 1 MB 100 pJ -> 0.3125 and 1.5625 pJ/bit.
    Area: bits x 0.346 um2 / 0.393 (a 32 KiB macro) -> 0.23079 mm2 at 32 KiB; 1 MiB macros are 0.561 cells, so
    32 x 0.393 / 0.561 of that (5.1737 mm2) at 1 MiB."""
    small, large = level("SRAM", 32 * KIB), level("SRAM", 1 * MIB)
    assert level_energy_per_bit(small, 45) == pytest.approx((20 / 64 * PJ,) * 2, rel=1e-12)
    assert level_energy_per_bit(large, 45) == pytest.approx((100 / 64 * PJ,) * 2, rel=1e-12)
    assert level_area_mm2(small, 45) == pytest.approx(32 * KIB * 8 * SRAM_45NM_MM2_PER_BIT, rel=1e-12)
    assert level_area_mm2(small, 45) == pytest.approx(0.230793, rel=1e-5)
    assert level_area_mm2(large, 45) == pytest.approx(32 * 0.393 / 0.561 * level_area_mm2(small, 45), rel=1e-12)


def test_sram_energy_follows_the_node():
    """At 28 nm the same SRAM costs the 45 nm figure times Stillmaker & Baas' energy factor 45 -> 28 nm."""
    sram = level("SRAM", 1 * MIB)
    assert level_energy_per_bit(sram, 28)[0] == pytest.approx(100 / 64 * PJ * energy_scale_factor(45, 28))


@pytest.mark.parametrize("technology", ["SRAM", "registers"])
def test_capacity_sweep_moves_energy_and_area_up_together(technology):
    """All else equal, a larger on-chip level costs strictly more per bit and takes strictly more area."""
    capacities = [2**k for k in range(6, 28, 2)]   # 64 B .. 64 MiB
    energy = [level_energy_per_bit(level(technology, c), 28)[0] for c in capacities]
    area = [level_area_mm2(level(technology, c), 28) for c in capacities]
    assert all(a < b for a, b in zip(energy, energy[1:])) and all(a < b for a, b in zip(area, area[1:]))


def test_registers_cost_eyeriss_register_file_access_by_hand():
    """Eyeriss (ISCA 2016): a 0.5 kB RF access is 1x a 16-bit MAC per 16-bit word, so per bit 1/16 of it; area is
    one FreePDK45 DFF_X1 (4.522 um2) per bit."""
    regs = level("registers", 512)
    assert level_energy_per_bit(regs, 45) == pytest.approx((MAC16_PJ / 16 * PJ,) * 2, rel=1e-12)
    assert level_area_mm2(regs, 45) == pytest.approx(512 * 8 * 4.522e-6, rel=1e-12)


def test_pinned_energies_and_area_override_the_model():
    """read_energy_per_bit pins both directions unless write is pinned too; a pinned area replaces the macro's."""
    both = level("SRAM", 1 * MIB, read_energy_per_bit="2 pJ", area="3 mm2")
    assert level_energy_per_bit(both, 45) == pytest.approx((2 * PJ, 2 * PJ))
    assert level_area_mm2(both, 45) == 3.0
    split = level("SRAM", 1 * MIB, read_energy_per_bit="2 pJ", write_energy_per_bit="5 pJ")
    assert level_energy_per_bit(split, 45) == pytest.approx((2 * PJ, 5 * PJ))


def test_pinned_write_alone_keeps_the_derived_read():
    """write_energy_per_bit without a read figure: reads from the model, writes at the pin."""
    only_write = level("HBM2", None, write_energy_per_bit="9 pJ")
    assert level_energy_per_bit(only_write, 7) == pytest.approx((dram_energy_j_per_bit("HBM2"), 9 * PJ))


def test_a_pinned_zero_energy_is_kept():
    """read_energy_per_bit: 0 is a pin (an idealised free memory), not 'unset'."""
    assert level_energy_per_bit(level("DRAM", None, read_energy_per_bit=0), 7) == (0.0, 0.0)


def test_tpu_v1_unified_buffer_sweep_moves_energy_and_area_together():
    """tpu_v1 on the 64x128x32 GEMM with the Unified Buffer at 4, 8, 16, 24 MiB, mapped for latency so that the
    mapping, hence cycles and traffic, stays put (EDP would re-map as the per-bit energy moves): the buffer's energy
    grows as its per-bit energy, (C / 4 MiB) ** p with p = ln 5 / ln 32 (Horowitz's 32 KB -> 1 MB slope, extended
    above 1 MB), and total energy and area rise together."""
    workload = load_workload(REPO / "workloads" / "gemm.einsum.yaml")
    sizes = (4, 8, 16, 24)
    runs = [evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml", [f"memory.unified_buffer.capacity={c} MiB"]),
                     workload, objective="latency").summary() for c in sizes]
    assert len({r["cycles"] for r in runs}) == 1
    energy, area = [r["energy_j"] for r in runs], [r["area_mm2"] for r in runs]
    assert all(a < b for a, b in zip(energy, energy[1:])) and all(a < b for a, b in zip(area, area[1:]))
    buffer = [r["energy_by_component_j"]["unified_buffer"] for r in runs]
    slope = math.log(5) / math.log(32)
    assert [b / buffer[0] for b in buffer] == pytest.approx([(c / 4) ** slope for c in sizes], rel=1e-9)


def test_banks_price_an_access_as_one_bank_plus_the_route_to_it():
    """4 MiB in 256 banks at 45 nm (TPU v1's accumulators): a bank is 16 KiB, whose 64-bit read is Horowitz's 32 KB
    20 pJ x (16/32)^0.5 = 14.142 pJ (0.2210 pJ/bit). Area: 33,554,432 bits x 0.346 um2 / 0.247 (a 16 KiB macro)
    = 47.003 mm2; the route from the centre to a bank is (sqrt(A) - sqrt(A)/16) / 2 = 3.2140 mm, at 0.5 x 0.2 pF/mm
    x (0.9 V)^2 = 0.081 pJ/bit/mm -> 0.2603 pJ/bit. Total 0.4813 pJ/bit, against 2.97 pJ/bit for one 4 MiB array."""
    banked = level("SRAM", 4 * MIB, banks=256)
    assert level_area_mm2(banked, 45) == pytest.approx(4 * MIB * 8 * 0.346 / 0.247 * 1e-6, rel=1e-12)
    area = 4 * MIB * 8 * 0.346 / 0.247 * 1e-6
    route_mm = (math.sqrt(area) - math.sqrt(area) / 16) / 2
    expected = 20 * math.sqrt(0.5) / 64 * PJ + route_mm * 0.5 * 0.2e-12 * 0.9**2
    assert level_energy_per_bit(banked, 45)[0] == pytest.approx(expected, rel=1e-9)
    assert level_energy_per_bit(banked, 45)[0] == pytest.approx(0.4813 * PJ, rel=1e-3)
    assert level_energy_per_bit(banked, 45)[0] < level_energy_per_bit(level("SRAM", 4 * MIB), 45)[0] / 5


def test_more_banks_take_more_area_for_the_same_bits():
    """Each bank carries its own periphery: 108 KiB as 27 banks of 4 KiB (Eyeriss' global buffer) is bits x cell /
    0.076 against bits x cell / 0.6685 as one macro (0.559 at 64 KiB + (0.704 - 0.559) x log2(108/64)): 8.80x."""
    one, split = level("SRAM", 108 * KIB), level("SRAM", 108 * KIB, banks=27)
    one_macro = 0.559 + (0.704 - 0.559) * math.log2(108 / 64)
    assert level_area_mm2(split, 65) / level_area_mm2(one, 65) == pytest.approx(one_macro / 0.076, rel=1e-12)


def test_tpu_v1_io_phys_add_their_cited_area():
    """TPU v1 lists two 64-bit DDR3 channels (4 x 32-bit units x 1.45 mm2) and PCIe Gen3 x16 (16 lanes x 0.48 mm2):
    13.48 mm2 of PHY, not node-scaled (LLMCompass' per-unit PHY areas, tables.PHY_AREA)."""
    arch = load_arch(REPO / "arch_configs" / "tpu_v1.yaml")
    assert io_area_mm2(arch) == pytest.approx(4 * 1.45 + 16 * 0.48, rel=1e-12)
    assert io_area_mm2(arch.model_copy(update={"io": ()})) == 0.0


def test_every_phy_kind_the_spec_admits_has_an_area():
    """spec.fields.PHY_KINDS and energy.tables.PHY_AREA name the same interfaces."""
    assert set(PHY_KINDS) == set(PHY_AREA)
