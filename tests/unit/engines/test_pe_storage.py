"""Per-PE storage of the systolic engine (`pe_storage`, `number`), derived by hand from the cited tables.

Inputs of the hand derivations: Intel's 65 nm 6T cell 0.570 um2 (Bai et al., IEDM 2004); LLMCompass' CACTI
bit-cell share of a 4 KiB macro 0.076, held below 4 KiB; NanGate 45 nm DFF_X1 4.522 um2; Stillmaker & Baas area
45 -> 65 nm x 1.5; Horowitz's 45 nm 8 KB cache read 10 pJ per 64 b, sqrt in capacity below it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim import load_arch
from accel_sim.energy import dtype_mac_area_mm2, energy_scale_factor, regfile_access_energy_j, regfile_area_mm2
from accel_sim.engines.systolic import SystolicEngine
from accel_sim.engines.vector import VectorEngine
from accel_sim.errors import ConfigError
from tests.builders import gemm

ROOT = Path(__file__).resolve().parents[3]
UM2 = 1e-6
EYERISS_SPADS = {"inputs": {"capacity": "24 B", "technology": "registers"},
                 "weights": {"capacity": "448 B", "technology": "SRAM"},
                 "psums": {"capacity": "48 B", "technology": "registers"}}


def _array(**fields: object) -> SystolicEngine:
    return SystolicEngine.model_validate({"kind": "systolic", "name": "pe_array", "rows": 12, "cols": 14,
                                          "operand_bits": 16, **fields})


def test_eyeriss_scratchpads_area_by_hand() -> None:
    """168 PEs x (448 B filter SRAM + 72 B of registers): the SRAM is 3,584 bits x 0.570 um2 / 0.076 = 26,880 um2,
    the registers 576 bits x 4.522 um2 x 1.5 = 3,907.0 um2, so the scratchpads add 168 x 30,787.0 um2 = 5.172 mm2
    to the int16 MACs."""
    engine = _array(number="int", pe_storage=EYERISS_SPADS)
    mac = dtype_mac_area_mm2("int16", "int16", node_nm=65)
    assert engine.area_mm2(65) == pytest.approx(168 * mac + 168 * (26_880 + 3_907.008) * UM2, rel=1e-9)
    assert engine.area_mm2(65) - 168 * mac == pytest.approx(5.1722, rel=1e-4)


def test_registers_kept_between_einsums_take_area() -> None:
    """pe_registers: 32 B per PE (FuseMax's 16 x 16-bit reg_file) is 256 flip-flops beside the operand storage:
    168 PEs x 256 bits x 4.522 um2 x 1.5 (45 -> 65 nm) = 291,722.6 um2 = 0.2917 mm2 more, whatever the operand
    storage; a vector unit's lane_registers, 64 B per lane on 16 lanes, 16 x 512 x 4.522 x 1.5 um2 = 0.05557 mm2."""
    for storage in ({}, {"pe_storage": EYERISS_SPADS}):
        added = _array(pe_registers="32 B", **storage).area_mm2(65) - _array(**storage).area_mm2(65)
        assert added == pytest.approx(168 * 256 * 4.522 * 1.5 * UM2, rel=1e-9)
        assert added == pytest.approx(0.29172, rel=1e-4)
    lanes = {"kind": "vector", "name": "v", "lanes": 16, "lane_bits": 16}
    added = (VectorEngine.model_validate({**lanes, "lane_registers": "64 B"}).area_mm2(65)
             - VectorEngine.model_validate(lanes).area_mm2(65))
    assert added == pytest.approx(16 * 512 * 4.522 * 1.5 * UM2, rel=1e-9)


def test_default_storage_is_one_register_file_of_both_operands_and_the_accumulator() -> None:
    """Without `pe_storage` a 16-bit PE keeps (16 + 16 + 32) / 8 = 8 B of flip-flops: what was modelled before."""
    engine = _array()
    mac = dtype_mac_area_mm2("fp16", "fp16", node_nm=65)
    assert engine.area_mm2(65) == pytest.approx(168 * (mac + regfile_area_mm2(8, 65)), rel=1e-12)
    assert regfile_area_mm2(8, 65) == pytest.approx(64 * 4.522 * 1.5 * UM2, rel=1e-12)


def test_fixed_point_pes_use_an_integer_multiplier() -> None:
    """`number: int` prices a 16-bit PE's MAC as int16 x int16 into 32 bits, not fp16 into fp32."""
    mac = dtype_mac_area_mm2("int16", "int16", node_nm=65)
    assert _array(number="int").area_mm2(65) == pytest.approx(168 * (mac + regfile_area_mm2(8, 65)), rel=1e-12)
    assert _array(number="int").area_mm2(65) < _array().area_mm2(65) / 3


def test_scratchpad_reads_priced_by_their_technology_and_size() -> None:
    """Every MAC reads its 16-bit weight from the 448 B filter SRAM (Horowitz: 10 pJ x sqrt(448 / 8192) per 64 b
    = 0.58463 pJ per 16 b at 45 nm), its input from the 24 B register file, and writes its psum to the 48 B one
    at the engine's 16-bit accumulator width (Eyeriss' psum spad is 24 x 16 b); each carried to 65 nm."""
    arch = load_arch(ROOT / "arch_configs" / "edge_npu.yaml")
    engine = next(e for e in arch.engines if e.name == "pe_array")
    workload = gemm(64, 64, 64, bits=16)
    cost = engine.cost(workload.einsums[0], workload, arch)
    macs = 64**3
    sram_pj = 10 * (448 / 8192) ** 0.5 * 16 / 64 * energy_scale_factor(45, 65)
    read = macs * (sram_pj * 1e-12 + regfile_access_energy_j(24, 16, 65))
    assert cost.energy_j[("pe_registers", "read")] == pytest.approx(read, rel=1e-9)
    assert cost.energy_j[("pe_registers", "write")] == pytest.approx(macs * regfile_access_energy_j(48, 16, 65),
                                                                     rel=1e-9)


def test_pe_storage_needs_every_operand_and_an_on_chip_technology() -> None:
    """A PE store must say where each operand lives, in registers or SRAM; anything else is a config error."""
    partial = {k: v for k, v in EYERISS_SPADS.items() if k != "psums"}
    with pytest.raises((ConfigError, ValueError)):
        _array(pe_storage=partial)
    with pytest.raises((ConfigError, ValueError)):
        _array(pe_storage={**EYERISS_SPADS, "weights": {"capacity": "448 B", "technology": "DDR4"}})
    with pytest.raises((ConfigError, ValueError)):
        _array(pe_storage={**EYERISS_SPADS, "filters": EYERISS_SPADS["weights"]})
