"""Energy and area tables: cited anchors reproduced exactly, rules between them, scaling, errors."""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel_sim.energy import (
    EnergyTableError,
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
    wire_energy_j_per_bit_mm,
)
from accel_sim.energy import tables
from accel_sim.errors import ConfigError

PJ = 1e-12
UM2 = 1e-6  # in mm^2
NODES = st.floats(min_value=7.0, max_value=180.0, allow_nan=False)

# Hand-derived: int16 x int16 multiply by the power law through Horowitz's 8x8 (0.2 pJ) and 32x32 (3.1 pJ)
# points in a*b, plus an int16 add by the power law through 8-bit (0.03) and 32-bit (0.1) adds.
INT16_MULT_PJ = 0.2 * 4 ** (math.log(15.5) / math.log(16))
INT16_ADD_PJ = 0.03 * 2 ** (math.log(0.1 / 0.03) / math.log(4))
EYERISS_MAC16_PJ = INT16_MULT_PJ + INT16_ADD_PJ


@pytest.mark.parametrize(("kind", "energy_j", "pj"), [
    ("int8 add", lambda: add_energy_j("int8"), 0.03),
    ("int32 add", lambda: add_energy_j("int32"), 0.1),
    ("fp16 add", lambda: add_energy_j("fp16"), 0.4),
    ("fp32 add", lambda: add_energy_j("fp32"), 0.9),
    ("int8 mult", lambda: mult_energy_j("int8", "int8"), 0.2),
    ("int32 mult", lambda: mult_energy_j("int32", "int32"), 3.1),
    ("fp16 mult", lambda: mult_energy_j("fp16", "fp16"), 1.1),
    ("fp32 mult", lambda: mult_energy_j("fp32", "fp32"), 3.7),
])
def test_horowitz_45nm_operations_are_reproduced_exactly(kind, energy_j, pj):
    """At 45 nm each operation Horowitz tabulates (ISSCC 2014) costs exactly his figure."""
    assert energy_j() == pytest.approx(pj * PJ, rel=1e-12), kind


def test_int8_mac_is_horowitz_multiply_plus_32_bit_accumulate():
    """An int8 MAC at 45 nm = 0.2 pJ multiply + 0.1 pJ 32-bit add (TPUv1's 32-bit accumulators) = 0.3 pJ."""
    assert mac_energy_j(8, 8, node_nm=45) == pytest.approx(0.3 * PJ, rel=1e-12)


def test_fp16_mac_accumulates_in_fp32_by_default():
    """An fp16 MAC = 1.1 pJ fp16 multiply + 0.9 pJ fp32 add (mixed precision, Micikevicius et al. 2018)."""
    assert mac_energy_j(16, 16, number="fp") == pytest.approx(2.0 * PJ, rel=1e-12)


def test_explicit_accumulator_width_replaces_the_default():
    """With an 8-bit accumulator an int8 MAC = 0.2 pJ multiply + 0.03 pJ 8-bit add."""
    assert mac_energy_j(8, 8, acc_bits=8) == pytest.approx(0.23 * PJ, rel=1e-12)


def test_int16_multiplier_follows_the_power_law_between_anchors():
    """int16 x int16: 0.2 pJ x (256/64)^p, p = ln(3.1/0.2)/ln(1024/64) = 0.9885 -> 0.787 pJ."""
    assert mult_energy_j("int16", "int16") == pytest.approx(INT16_MULT_PJ * PJ, rel=1e-12)
    assert INT16_MULT_PJ == pytest.approx(0.7874, abs=1e-4)


def test_bf16_multiplier_follows_the_significand_rule():
    """bf16 (8-bit significand): k_lin*(8+8) + k_pp*64 with k_pp = 1.3/312, k_lin = (1.1 - 121 k_pp)/22,
    solved by hand from fp16 (22, 121) -> 1.1 pJ and fp32 (48, 576) -> 3.7 pJ: 0.700 pJ."""
    k_pp = 1.3 / 312
    k_lin = (1.1 - 121 * k_pp) / 22
    assert mult_energy_j("bf16", "bf16") == pytest.approx((16 * k_lin + 64 * k_pp) * PJ, rel=1e-12)
    assert mult_energy_j("bf16", "bf16") == pytest.approx(0.700 * PJ, rel=1e-3)


def test_bf16_multiplier_is_about_half_an_fp16_one():
    """Google (Wang & Kanwar 2019): a bf16 multiplier is about half the size of an fp16 one."""
    ratio = dtype_mac_area_mm2("bf16", "bf16", acc_dtype="bf16") / dtype_mac_area_mm2("fp16", "fp16",
                                                                                     acc_dtype="fp16")
    assert 0.5 <= ratio < 1.0


def test_low_bit_integer_macs_are_positive_and_finite_for_every_width():
    """Every integer width 1..32 for either operand gives a positive, finite MAC energy and area."""
    for bits in range(1, 33):
        for energy in (mac_energy_j(bits, 8), mac_energy_j(8, bits), mac_area_mm2(bits, bits)):
            assert math.isfinite(energy) and energy > 0


@given(st.integers(1, 31), st.integers(1, 32))
def test_integer_mac_energy_grows_with_operand_width(a_bits, b_bits):
    """A wider integer operand never makes a MAC (fixed 32-bit accumulator) cheaper."""
    assert mac_energy_j(a_bits + 1, b_bits, acc_bits=32) > mac_energy_j(a_bits, b_bits, acc_bits=32)


def test_float_mac_energy_grows_with_format_width():
    """fp4 < fp8 < fp16 < fp32 MACs (same fp32 accumulator)."""
    energies = [mac_energy_j(bits, bits, number="fp") for bits in (4, 8, 16, 32)]
    assert energies == sorted(energies) and len(set(energies)) == 4


def test_mixed_integer_and_float_operands_use_the_float_datapath():
    """int4 x fp16: the int enters as a 4-bit significand: k_lin*(4+11) + k_pp*44, then an fp32 add."""
    k_pp = 1.3 / 312
    k_lin = (1.1 - 121 * k_pp) / 22
    expected = (15 * k_lin + 44 * k_pp + 0.9) * PJ
    assert dtype_mac_energy_j("int4", "fp16") == pytest.approx(expected, rel=1e-12)


def test_mac_area_is_horowitz_multiplier_plus_adder_area():
    """int8 MAC area at 45 nm = 282 um^2 multiplier + 137 um^2 32-bit adder; fp32 = 7700 + 4184."""
    assert mac_area_mm2(8, 8) == pytest.approx(419 * UM2, rel=1e-12)
    assert mac_area_mm2(32, 32, number="fp") == pytest.approx((7700 + 4184) * UM2, rel=1e-12)


def test_floating_point_width_without_a_format_is_rejected():
    """A 12-bit float names no format: the error lists the widths that do."""
    with pytest.raises(EnergyTableError, match="4, 6, 8, 16, 32"):
        mac_energy_j(12, 12, number="fp")


def test_unknown_dtype_is_rejected_with_the_valid_names():
    """An unknown dtype name raises and lists valid ones (bf16 among them)."""
    with pytest.raises(EnergyTableError, match="bf16"):
        dtype_mac_energy_j("posit8", "int8")


@pytest.mark.parametrize(("capacity", "pj"), [(8 * 1024, 10.0), (32 * 1024, 20.0), (1 << 20, 100.0)])
def test_sram_reads_at_horowitz_points_are_exact(capacity, pj):
    """64-bit reads at 45 nm: 8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ (Horowitz ISSCC 2014)."""
    assert sram_access_energy_j(capacity, 64, 45) == pytest.approx(pj * PJ, rel=1e-12)


def test_sram_energy_interpolates_log_log_in_capacity():
    """16 KB sits halfway (in log) between 8 KB and 32 KB: sqrt(10 x 20) = 14.142 pJ."""
    assert sram_access_energy_j(16 * 1024, 64, 45) == pytest.approx(math.sqrt(200) * PJ, rel=1e-12)


def test_sram_energy_is_linear_in_width():
    """A 128-bit read of a 32 KB SRAM costs twice the 64-bit read (2 x 20 pJ)."""
    assert sram_access_energy_j(32 * 1024, 128, 45) == pytest.approx(40 * PJ, rel=1e-12)


@given(st.floats(64, 64e6), st.floats(1.01, 4.0), st.integers(1, 1024), st.integers(1, 8), NODES)
def test_sram_energy_grows_with_capacity_and_width(capacity, grow, width, extra, node):
    """A bigger or wider SRAM access never costs less, at any node."""
    base = sram_access_energy_j(capacity, width, node)
    assert sram_access_energy_j(capacity * grow, width, node) > base
    assert sram_access_energy_j(capacity, width + extra, node) > base


def test_sram_area_is_cells_over_array_efficiency():
    """1 MiB at 45 nm: 8,388,608 bits x 0.346 um^2 (Intel 45 nm cell) / 0.561 (bit-cell share of a 1 MiB macro,
    LLMCompass' CACTI-derived table) = 5.174 mm^2."""
    expected = 8 * 2**20 * 0.346 / 0.561 * UM2
    assert sram_area_mm2(2**20, 45) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(5.174, abs=1e-3)


@pytest.mark.parametrize(("node", "um2"), [(90, 1.0), (45, 0.346), (22, 0.092), (14, 0.0588), (7, 0.027)])
def test_sram_cell_area_at_published_nodes(node, um2):
    """At a node with a published cell (Intel IEDM 2002-2017, TSMC IEDM 2016) that cell's area is used."""
    assert sram_cell_area_um2(node) == pytest.approx(um2, rel=1e-12)


def test_regfile_reference_access_costs_one_eyeriss_mac():
    """Eyeriss: a 16-bit access of the 0.5 kB RF costs 1x a 16-bit MAC (here 0.787 + 0.055 = 0.842 pJ)."""
    assert regfile_access_energy_j(512, 16, 45) == pytest.approx(EYERISS_MAC16_PJ * PJ, rel=1e-12)


def test_regfile_energy_grows_with_square_root_of_capacity():
    """Four times the capacity doubles the access energy (sqrt rule)."""
    assert regfile_access_energy_j(2048, 16, 45) == pytest.approx(2 * regfile_access_energy_j(512, 16, 45))


def test_regfile_area_is_one_flip_flop_per_bit():
    """64 B at 45 nm = 512 x 4.522 um^2 (NanGate45 DFF_X1) = 2315.264 um^2."""
    assert regfile_area_mm2(64, 45) == pytest.approx(2315.264 * UM2, rel=1e-12)


def test_dram_per_bit_energies_match_their_sources():
    """HBM2 3.9 pJ/bit (O'Connor MICRO 2017); DDR3 1.95 nJ per 64 bits (Horowitz's 1.3-2.6 nJ midpoint)."""
    assert dram_energy_j_per_bit("HBM2") == pytest.approx(3.9 * PJ)
    assert dram_energy_j_per_bit("DDR3") == pytest.approx(1950 / 64 * PJ)


def test_dram_kinds_order_hbm_below_lpddr_below_ddr():
    """Every HBM kind costs less per bit than every LPDDR kind, which costs less than every DDR kind."""
    def family(prefix):
        return [dram_energy_j_per_bit(k) for k in dram_kinds() if k.startswith(prefix)]
    assert max(family("HBM")) < min(family("LPDDR"))
    assert max(family("LPDDR")) < min(family("DDR"))


def test_required_dram_kinds_are_present():
    """The kinds the issue and brief name all have an entry."""
    assert {"DDR3", "DDR4", "LPDDR4", "LPDDR5", "GDDR6", "HBM2", "HBM2E", "HBM3"} <= set(dram_kinds())


def test_dram_kind_lookup_ignores_case():
    """'lpddr5' and 'LPDDR5' name the same entry."""
    assert dram_energy_j_per_bit("lpddr5") == dram_energy_j_per_bit("LPDDR5")


def test_unknown_dram_kind_is_a_config_error_listing_valid_kinds():
    """An unknown kind raises a ConfigError (and ValueError) whose fix lists every valid kind."""
    with pytest.raises(ConfigError) as err:
        dram_energy_j_per_bit("DDR9")
    assert isinstance(err.value, ValueError)
    assert "Fix:" in str(err.value) and all(kind in str(err.value) for kind in dram_kinds())


@given(NODES)
def test_scaling_a_node_to_itself_is_the_identity(node):
    """Energy and area scaled from a node to the same node are unchanged."""
    assert scale_energy(1.0, node, node) == pytest.approx(1.0)
    assert scale_area(1.0, node, node) == pytest.approx(1.0)


def test_scaling_45_to_45_is_exactly_the_identity():
    """45 -> 45 nm returns the value itself."""
    assert scale_energy(3.7e-12, 45, 45) == 3.7e-12 and scale_area(0.5, 45, 45) == 0.5


@given(NODES, NODES)
def test_smaller_node_means_less_energy_and_area(a, b):
    """Moving to a smaller node lowers energy and area (never raises them)."""
    big, small = max(a, b), min(a, b)
    if big - small > 1e-6:
        assert energy_scale_factor(big, small) < 1.0
        assert area_scale_factor(big, small) < 1.0


def test_energy_factor_45_to_7_is_the_stillmaker_fit_ratio():
    """45 nm @ 0.9 V -> 7 nm @ 0.7 V: (0.1776*0.49 - 0.09097*0.7 + 0.02447) /
    (1.018*0.81 - 0.3107*0.9 + 0.1539) = 0.0684 (Stillmaker & Baas 2017 HP fits)."""
    hand = (0.1776 * 0.49 - 0.09097 * 0.7 + 0.02447) / (1.018 * 0.81 - 0.3107 * 0.9 + 0.1539)
    assert energy_scale_factor(45, 7) == pytest.approx(hand, rel=1e-12)
    assert hand == pytest.approx(0.0684, abs=1e-4)


def test_area_factor_45_to_7_is_the_stillmaker_table_entry():
    """Stillmaker & Baas' area table gives 0.059 for 45 nm -> 7 nm."""
    assert area_scale_factor(45, 7) == pytest.approx(0.059, rel=1e-12)


def test_intermediate_node_interpolates_between_table_nodes():
    """28 nm lies between 32 and 20 nm: its area factor is between theirs."""
    assert area_scale_factor(45, 20) < area_scale_factor(45, 28) < area_scale_factor(45, 32)


def test_mac_energy_at_7nm_is_the_45nm_value_scaled():
    """An int8 MAC at 7 nm = 0.3 pJ x the 45 -> 7 nm energy factor."""
    assert mac_energy_j(8, 8, node_nm=7) == pytest.approx(0.3 * PJ * energy_scale_factor(45, 7))


@pytest.mark.parametrize("node", [5, 3.0, 250, float("nan"), True])
def test_node_outside_the_tables_is_rejected(node):
    """Nodes outside 7-180 nm (or not numbers) raise with the valid range in the message."""
    with pytest.raises(EnergyTableError, match="7 and 180 nm"):
        mac_energy_j(8, 8, node_nm=node)


@pytest.mark.parametrize("capacity", [0, -1, float("inf")])
def test_non_positive_capacity_is_rejected(capacity):
    """An SRAM of zero, negative or infinite size raises naming the argument."""
    with pytest.raises(EnergyTableError, match="capacity_bytes"):
        sram_access_energy_j(capacity, 64, 45)


def test_wire_energy_is_activity_times_capacitance_times_vdd_squared():
    """45 nm: 0.5 x 0.2 pF/mm (Ho, Mai, Horowitz 2001) x (0.9 V)^2 = 0.081 pJ/bit/mm."""
    assert wire_energy_j_per_bit_mm(45) == pytest.approx(0.081 * PJ, rel=1e-12)


def test_noc_hop_costs_two_eyeriss_macs_per_16_bit_word():
    """Eyeriss: a PE-to-PE transfer costs 2x a 16-bit MAC per 16-bit word -> 2 x 0.842 / 16 pJ/bit."""
    assert noc_hop_energy_j_per_bit(45) == pytest.approx(2 * EYERISS_MAC16_PJ / 16 * PJ, rel=1e-12)


def test_every_table_entry_names_its_source():
    """Each cited number in tables.py carries a non-empty source string."""
    entries = [*tables.HOROWITZ_45NM_ENERGY_PJ.values(), *tables.HOROWITZ_45NM_AREA_UM2.values(),
               *(c for _, c in tables.SRAM_45NM_READ_64BIT_PJ), *tables.SRAM_CELLS, *tables.DRAM_ENERGY.values(),
               *tables.TECH_NODES, *tables.FLOAT_FORMATS.values(), *tables.EYERISS_RELATIVE_ENERGY.values(),
               *(c for _, c in tables.SRAM_MACRO_EFFICIENCY), *tables.PHY_AREA.values(), tables.DFF_45NM_UM2, tables.WIRE_CAPACITANCE_PF_PER_MM,
               tables.DEFAULT_INT_ACCUMULATOR_BITS]
    for entry in entries:
        assert dataclasses.is_dataclass(entry) and len(entry.source) > 10, entry
