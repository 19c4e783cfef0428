"""Cited tables of per-action energy, area and technology scaling: data only, every entry with its source.

Units are in the names (`_pj`, `_um2`, `_v`); `model.py` turns them into SI. Where a figure is not
published for a case and we derive it from published inputs by a stated rule, the entry says
`evidence="derived"` (or `"proxy"` when a sibling's figure is reused) and its `source` gives the
inputs and the rule, so nobody mistakes an estimate for a measurement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Evidence = Literal["published", "derived", "proxy"]


@dataclass(frozen=True)
class Cited:
    """One number, its unit, and where it comes from."""

    value: float
    unit: str
    source: str


# --- Arithmetic at 45 nm ---------------------------------------------------------------------

HOROWITZ_2014 = ("M. Horowitz, 'Computing's energy problem (and what we can do about it)', "
                 "ISSCC 2014, pp. 10-14, energy table (45 nm, 0.9 V)")
HOROWITZ_AREA = ("M. Horowitz, ISSCC 2014 keynote slides, 'relative area cost' table (45 nm), "
                 "reproduced in W. Dally, 'High-Performance Hardware for Machine Learning', NIPS 2015 "
                 "tutorial, and V. Sze et al., 'Efficient Processing of Deep Neural Networks', Proc. IEEE 2017")

# Energy per operation, pJ. Keys: <int|fp><bits>_<add|mult>.
HOROWITZ_45NM_ENERGY_PJ: dict[str, Cited] = {
    "int8_add": Cited(0.03, "pJ", HOROWITZ_2014),
    "int32_add": Cited(0.1, "pJ", HOROWITZ_2014),
    "fp16_add": Cited(0.4, "pJ", HOROWITZ_2014),
    "fp32_add": Cited(0.9, "pJ", HOROWITZ_2014),
    "int8_mult": Cited(0.2, "pJ", HOROWITZ_2014),
    "int32_mult": Cited(3.1, "pJ", HOROWITZ_2014),
    "fp16_mult": Cited(1.1, "pJ", HOROWITZ_2014),
    "fp32_mult": Cited(3.7, "pJ", HOROWITZ_2014),
}

# Area per functional unit, um^2, same keys.
HOROWITZ_45NM_AREA_UM2: dict[str, Cited] = {
    "int8_add": Cited(36.0, "um2", HOROWITZ_AREA),
    "int32_add": Cited(137.0, "um2", HOROWITZ_AREA),
    "fp16_add": Cited(1360.0, "um2", HOROWITZ_AREA),
    "fp32_add": Cited(4184.0, "um2", HOROWITZ_AREA),
    "int8_mult": Cited(282.0, "um2", HOROWITZ_AREA),
    "int32_mult": Cited(3495.0, "um2", HOROWITZ_AREA),
    "fp16_mult": Cited(1640.0, "um2", HOROWITZ_AREA),
    "fp32_mult": Cited(7700.0, "um2", HOROWITZ_AREA),
}

# Width-scaling rules used to go between the two anchors of each unit (model.py fits them exactly).
SCALING_RULES: dict[str, str] = {
    "int_add": ("ripple/prefix adder cost ~ linear in width (N. Weste, D. Harris, 'CMOS VLSI Design', "
                "4th ed., ch. 11 'Datapath subsystems'); implemented as a power law through Horowitz's "
                "8- and 32-bit points, whose fitted exponent (0.87 energy, 0.96 area) is close to 1"),
    "int_mult": ("array multiplier cost ~ a*b partial-product bits (Weste & Harris, ch. 11.9 "
                 "'Multiplication'); power law in a*b through the 8x8 and 32x32 points, fitted exponent "
                 "0.99 (energy) and 0.91 (area)"),
    "fp_mult": ("significand multiplier cost ~ square of the significand width (S. Wang, P. Kanwar, "
                "'BFloat16: the secret to high performance on Cloud TPUs', Google Cloud blog 2019: bf16 "
                "multiplier about half an fp16 one, eight times smaller than fp32) plus exponent add, "
                "normalisation and rounding ~ linear in width (Weste & Harris, ch. 11); modelled as "
                "k_lin * (m_a + m_b) + k_pp * m_a * m_b with m the significand bits (hidden bit included), "
                "solved exactly through Horowitz's fp16 (11x11) and fp32 (24x24) points"),
    "fp_add": ("floating-point adder (alignment shifter, significand adder, normaliser) ~ linear in the "
               "significand width (Weste & Harris, ch. 11); power law in m through fp16 (m=11) and fp32 "
               "(m=24), fitted exponent 1.04 (energy) and 1.44 (area)"),
}


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: exponent and stored fraction bits."""

    name: str
    exponent_bits: int
    fraction_bits: int
    source: str

    @property
    def bits(self) -> int:
        """Total width: sign + exponent + fraction."""
        return 1 + self.exponent_bits + self.fraction_bits

    @property
    def significand_bits(self) -> int:
        """Multiplier width: fraction plus the hidden bit."""
        return self.fraction_bits + 1


_IEEE = "IEEE 754-2008"
_OCP_FP8 = "OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, 2023"
_OCP_MX = "OCP Microscaling Formats (MX) Specification v1.0, 2023"
FLOAT_FORMATS: dict[str, FloatFormat] = {
    "fp32": FloatFormat("fp32", 8, 23, _IEEE),
    "tf32": FloatFormat("tf32", 8, 10, "NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020"),
    "fp16": FloatFormat("fp16", 5, 10, _IEEE),
    "bf16": FloatFormat("bf16", 8, 7, "Kalamkar et al., 'A Study of BFLOAT16 for Deep Learning Training', "
                        "arXiv:1905.12322"),
    "fp8_e4m3": FloatFormat("fp8_e4m3", 4, 3, _OCP_FP8),
    "fp8_e5m2": FloatFormat("fp8_e5m2", 5, 2, _OCP_FP8),
    "fp6_e2m3": FloatFormat("fp6_e2m3", 2, 3, _OCP_MX),
    "fp6_e3m2": FloatFormat("fp6_e3m2", 3, 2, _OCP_MX),
    "fp4_e2m1": FloatFormat("fp4_e2m1", 2, 1, _OCP_MX),
}

# Which format a bare floating-point width means (`mac_energy_j(8, 8, number="fp")`).
DEFAULT_FLOAT_BY_BITS: dict[int, str] = {32: "fp32", 16: "fp16", 8: "fp8_e4m3", 6: "fp6_e2m3", 4: "fp4_e2m1"}

# Accumulator defaults when the caller does not give one.
DEFAULT_INT_ACCUMULATOR_BITS = Cited(
    32, "bits", "N. Jouppi et al., 'In-Datacenter Performance Analysis of a Tensor Processing Unit', "
    "ISCA 2017: 8-bit MACs feed 4 MiB of 32-bit accumulators")
DEFAULT_FP_ACCUMULATOR_FORMAT = "fp32"
DEFAULT_FP_ACCUMULATOR_SOURCE = ("P. Micikevicius et al., 'Mixed Precision Training', ICLR 2018: fp16 products "
                                 "accumulated in fp32, as in NVIDIA tensor cores")


# --- On-chip storage --------------------------------------------------------------------------

# Horowitz's 64-bit cache reads at 45 nm: (capacity in bytes, energy).
SRAM_45NM_READ_64BIT_PJ: tuple[tuple[int, Cited], ...] = (
    (8 * 1024, Cited(10.0, "pJ", HOROWITZ_2014 + ": 8 KB cache, 64-bit read")),
    (32 * 1024, Cited(20.0, "pJ", HOROWITZ_2014 + ": 32 KB cache, 64-bit read")),
    (1024 * 1024, Cited(100.0, "pJ", HOROWITZ_2014 + ": 1 MB cache, 64-bit read")),
)
SRAM_REFERENCE_ACCESS_BITS = Cited(64, "bits", HOROWITZ_2014 + ": the cache figures are per 64-bit read")
SRAM_INTERPOLATION_RULE = ("log-log interpolation in capacity between Horowitz's points, extrapolated with "
                           "the nearest segment's slope (0.5 below 32 KB, the square-root growth of "
                           "word/bit-line length in a square array); energy linear in access width")


@dataclass(frozen=True)
class SramCell:
    """A published high-density 6T SRAM bit cell."""

    node_nm: float
    cell_um2: float
    source: str


SRAM_CELLS: tuple[SramCell, ...] = (
    SramCell(90, 1.0, "S. Thompson et al. (Intel), IEDM 2002, '90 nm logic technology ... 1 um2 SRAM cell'"),
    SramCell(65, 0.570, "P. Bai et al. (Intel), IEDM 2004, '65nm logic technology ... 0.57 um2 SRAM cell'"),
    SramCell(45, 0.346, "K. Mistry et al. (Intel), IEDM 2007, '45nm logic technology with high-k+metal "
                        "gate ... 0.346 um2 SRAM cell'"),
    SramCell(32, 0.171, "S. Natarajan et al. (Intel), IEDM 2008, '32nm logic technology ... 0.171 um2 "
                        "SRAM cell'"),
    SramCell(22, 0.092, "C. Auth et al. (Intel), VLSI 2012, '22nm ... tri-gate' (0.092 um2 HD cell)"),
    SramCell(16, 0.070, "S.-Y. Wu et al. (TSMC), IEDM 2013, '16nm FinFET CMOS technology' (0.07 um2 cell)"),
    SramCell(14, 0.0588, "S. Natarajan et al. (Intel), IEDM 2014, '14nm logic technology ... 0.0588 um2 "
                         "SRAM cell'"),
    SramCell(10, 0.0312, "C. Auth et al. (Intel), IEDM 2017, '10nm high performance ... 0.0312 um2 HD cell'"),
    SramCell(7, 0.027, "S.-Y. Wu et al. (TSMC), IEDM 2016, '7nm CMOS platform ... 0.027 um2 high density "
                       "6-T SRAM cell'"),
)

# Macro area / bit-cell area by macro (bank) capacity: the share of a macro that is bit cells falls as the macro
# shrinks, because decoders, sense amplifiers, column muxes and I/O are a per-macro cost. LLMCompass derives these
# from CACTI runs for macros of 4 KiB to 1 MiB (`cache_area_efficiency_arr`) and prices a larger memory as tiles of
# macros; we read the same table by the capacity of one bank (capacity / banks) and hold its end values beyond its
# ends. (It replaces 0.67, the N5 high-density macro figure, which overstated a small or wide macro's density.)
LLMCOMPASS_2024 = ("H. Zhang, A. Ning, R. B. Prabhakar, D. Wentzlaff, 'LLMCompass: Enabling Efficient Hardware "
                   "Design for Large Language Model Inference', ISCA 2024; area model in "
                   "github.com/PrincetonUniversity/LLMCompass cost_model/cost_model.py")
_CACTI_EFFICIENCY = LLMCOMPASS_2024 + ": 'cache size overheads derived from cacti', cache_area_efficiency_arr"
SRAM_MACRO_EFFICIENCY: tuple[tuple[int, Cited], ...] = tuple(
    (4096 * 2**i, Cited(value, "fraction", f"{_CACTI_EFFICIENCY}[{i}] ({4 * 2**i} KiB macro)"))
    for i, value in enumerate((0.076, 0.142, 0.247, 0.393, 0.559, 0.704, 0.526, 0.602, 0.561)))
SRAM_EFFICIENCY_RULE = ("linear in log2(bank capacity) between LLMCompass' CACTI-derived points, held at the end "
                        "values outside 4 KiB-1 MiB")

# Eyeriss' normalised energy per 16-bit access relative to one 16-bit MAC in the ALU (65 nm).
EYERISS_2016 = ("Y.-H. Chen, J. Emer, V. Sze, 'Eyeriss: A Spatial Architecture for Energy-Efficient "
                "Dataflow for Convolutional Neural Networks', ISCA 2016, normalised energy table "
                "(commercial 65 nm, 16-bit); also V. Sze et al., Proc. IEEE 2017")
EYERISS_RELATIVE_ENERGY: dict[str, Cited] = {
    "alu_mac": Cited(1.0, "x MAC", EYERISS_2016),
    "register_file_0.5KB": Cited(1.0, "x MAC", EYERISS_2016 + ": RF (0.5 kB)"),
    "noc_pe_to_pe": Cited(2.0, "x MAC", EYERISS_2016 + ": NoC / inter-PE"),
    "global_buffer_100-500KB": Cited(6.0, "x MAC", EYERISS_2016 + ": global buffer (100-500 kB)"),
    "dram": Cited(200.0, "x MAC", EYERISS_2016 + ": DRAM"),
}
REGISTER_FILE_REFERENCE_BYTES = Cited(512, "bytes", EYERISS_2016 + ": the 0.5 kB RF the 1x refers to")
REGISTER_FILE_REFERENCE_BITS = Cited(16, "bits", EYERISS_2016 + ": 16-bit words")

DFF_45NM_UM2 = Cited(4.522, "um2", "NanGate FreePDK45 Open Cell Library, DFF_X1 cell area "
                                   "(NangateOpenCellLibrary_typical.lib)")


# --- Wires --------------------------------------------------------------------------------------

WIRE_CAPACITANCE_PF_PER_MM = Cited(
    0.2, "pF/mm", "R. Ho, K. Mai, M. Horowitz, 'The Future of Wires', Proc. IEEE 89(4), 2001: capacitance "
    "per unit length ~0.2 fF/um, nearly constant across nodes")
WIRE_ACTIVITY = Cited(0.5, "transitions/bit", "uniformly random data toggles a wire on half the transfers")
WIRE_CROSSCHECK = ("S. Keckler, W. Dally et al., 'GPUs and the Future of Parallel Computing', IEEE Micro "
                   "2011: on-chip wires ~0.1-0.2 pJ/bit/mm at 40-28 nm")


# --- Chip I/O ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PhyArea:
    """Die area of one unit of a chip-to-outside interface's physical layer (analog, not node-scaled)."""

    kind: str
    unit: str          # what `count` counts in an arch's `io:` list
    mm2_per_unit: float
    evidence: Evidence
    source: str


_LLMCOMPASS_PHY = (LLMCOMPASS_2024 + ": PHY areas per lane / link unit, measured on die shots ('memory controllers "
                   "scale with process node, but PHYs do not')")
# Keys: every kind an arch's `io:` entry may name (spec.fields.PHY_KINDS). Controllers (digital, node-scaled) are
# not in these figures.
PHY_AREA: dict[str, PhyArea] = {
    "PCIe5": PhyArea("PCIe5", "lane", 0.64, "published", _LLMCOMPASS_PHY + ": pcie5_phy_mm2_per_lane"),
    "PCIe4": PhyArea("PCIe4", "lane", 0.48, "published", _LLMCOMPASS_PHY + ": pcie4_phy_mm2_per_lane"),
    "PCIe3": PhyArea("PCIe3", "lane", 0.48, "proxy",
                     "PCIe4's figure: a PCIe 3.0 lane (8 GT/s) has the same serdes structure at half the rate; "
                     "we know no published per-lane area, so errs high"),
    "DDR5": PhyArea("DDR5", "32-bit channel", 1.45, "published",
                    _LLMCOMPASS_PHY + ": ddr5_phy_mm2_per_link_unit (a link unit is 32 bits)"),
    "DDR4": PhyArea("DDR4", "32-bit channel", 1.45, "proxy",
                    "DDR5's figure per 32 data bits: the same single-ended DQ/DQS I/O ring; no separate figure"),
    "DDR3": PhyArea("DDR3", "32-bit channel", 1.45, "proxy",
                    "DDR5's figure per 32 data bits: the same single-ended DQ/DQS I/O ring; no separate figure"),
    "HBM2E": PhyArea("HBM2E", "stack (1024 bits)", 10.45, "published",
                     _LLMCOMPASS_PHY + ": hbm2e_phy_mm2_per_link_unit (a link unit is one 1024-bit stack)"),
    "HBM2": PhyArea("HBM2", "stack (1024 bits)", 10.45, "proxy",
                    "HBM2E's figure: the same 1024-bit interface per stack (JESD235) at a lower rate"),
    "HBM3": PhyArea("HBM3", "stack (1024 bits)", 10.45, "proxy",
                    "HBM2E's figure: HBM3 keeps 1024 data bits per stack (JESD238); no separate figure"),
    "NVLink3": PhyArea("NVLink3", "link", 1.888, "published", _LLMCOMPASS_PHY + ": nvlink3_phy_mm2_per_link_unit"),
    "NVLink4": PhyArea("NVLink4", "link", 0.965, "published", _LLMCOMPASS_PHY + ": nvlink4_phy_mm2_per_link_unit"),
}


# --- Off-chip DRAM ------------------------------------------------------------------------------

@dataclass(frozen=True)
class DramEnergy:
    """Energy per bit moved to or from a DRAM device (array, on-die data path and I/O)."""

    kind: str
    pj_per_bit: float
    evidence: Evidence
    source: str


_OCONNOR_2017 = ("M. O'Connor et al., 'Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth "
                 "Systems', MICRO 2017")
_TPUV4I_2021 = ("N. Jouppi et al., 'Ten Lessons From Three Generations Shaped Google's TPUv4i', ISCA 2021, "
                "Table 2 (Horowitz's table updated to 7 nm)")
_AMD_HBM_2015 = ("AMD, 'High-Bandwidth Memory (HBM): Reinventing memory technology' (HBM whitepaper and launch "
                 "slides, 2015): GDDR5 10.66 GB/s per W, HBM more than 35 GB/s per W")
_HOROWITZ_DRAM = HOROWITZ_2014 + ": DRAM 1.3-2.6 nJ per 64-bit access; midpoint 1.95 nJ / 64 bits"
# Keys: every off-chip technology a memory level may name (spec.fields.OFF_CHIP_TECHNOLOGIES).
DRAM_ENERGY: dict[str, DramEnergy] = {
    "DRAM": DramEnergy("DRAM", 1950.0 / 64, "published", _HOROWITZ_DRAM + " (a commodity DRAM of its day)"),
    "DDR3": DramEnergy("DDR3", 1950.0 / 64, "published", _HOROWITZ_DRAM),
    "DDR4": DramEnergy("DDR4", 1950.0 / 64 * (1.2 / 1.5) ** 2, "derived",
                       "DDR3's 30.5 pJ/bit x (VDD 1.2 V / 1.5 V)^2 (JEDEC JESD79-4 vs JESD79-3 supply; "
                       "dynamic energy ~ C V^2); inside the 20-41 pJ/bit range " + _TPUV4I_2021
                       + " gives for DDR3/4"),
    "DDR5": DramEnergy("DDR5", 1950.0 / 64 * (1.1 / 1.5) ** 2, "derived",
                       "DDR3's 30.5 pJ/bit x (VDD 1.1 V / 1.5 V)^2 (JEDEC JESD79-5 vs JESD79-3 supply), the "
                       "rule of the DDR4 row"),
    "LPDDR4": DramEnergy("LPDDR4", 13.5, "published",
                         "H. Ha, Stanford PhD thesis (DramDSE), 32 Gb LPDDR4: 14.0 pJ/bit, 4x8 Gb QDP: "
                         "13.0 pJ/bit (as tabulated in github.com/Dongyunkam/DRAM_info); mean of the two"),
    "LPDDR4X": DramEnergy("LPDDR4X", 13.5, "proxy",
                          "LPDDR4's figure: LPDDR4X (JESD209-4-1) lowers only the I/O supply VDDQ (1.1 V -> "
                          "0.6 V) and keeps the core VDD2 1.1 V, so it errs high"),
    "LPDDR5": DramEnergy("LPDDR5", 13.5 * (1.05 / 1.1) ** 2, "derived",
                         "LPDDR4's 13.5 pJ/bit x (VDD2H 1.05 V / VDD2 1.1 V)^2 (JEDEC JESD209-5 vs "
                         "JESD209-4); ignores the lower LPDDR5 VDDQ (0.5 V), so errs high"),
    "LPDDR5X": DramEnergy("LPDDR5X", 13.5 * (1.05 / 1.1) ** 2, "proxy",
                          "LPDDR5's figure: LPDDR5X (JESD209-5B) keeps LPDDR5's VDD2H 1.05 V core supply; we "
                          "know no separate published per-bit figure"),
    "GDDR5": DramEnergy("GDDR5", 14.0, "published",
                        _OCONNOR_2017 + ", Fig. 1 (GDDR5 ~14 pJ/bit); " + _AMD_HBM_2015 + " gives "
                        "10.66 GB/s/W for GDDR5, i.e. 11.7 pJ/bit"),
    "GDDR6": DramEnergy("GDDR6", 415.0 / 64, "published",
                        _TPUV4I_2021 + ": GDDR6 350-480 pJ per 64-bit access; midpoint 415 pJ / 64 bits"),
    "GDDR6X": DramEnergy("GDDR6X", 415.0 / 64, "proxy",
                         "GDDR6's figure: GDDR6X (Micron, PAM4 signalling) keeps GDDR6's 1.35 V supply; we know "
                         "no separate per-bit figure from the sources of this table"),
    "HBM": DramEnergy("HBM", 1e3 / (35 * 8), "published",
                      _AMD_HBM_2015 + ": 35 GB/s per W = 1 J / (35e9 x 8 bits) = 3.57 pJ/bit (a bound: 'more "
                      "than 35', so errs high)"),
    "HBM2": DramEnergy("HBM2", 3.9, "published",
                       _OCONNOR_2017 + ": HBM2 ~3.9 pJ/bit (" + _TPUV4I_2021 + ": 250-450 pJ/64 bits)"),
    "HBM2E": DramEnergy("HBM2E", 3.9, "proxy",
                        "HBM2's figure: HBM2E (JESD235C/D) keeps HBM2's 1.2 V VDD/VDDQ and array "
                        "organisation, and we know no separate published per-bit figure"),
    "HBM3": DramEnergy("HBM3", 3.9 * (1.1 / 1.2) ** 2, "derived",
                       "HBM2's 3.9 pJ/bit x (VDD 1.1 V / 1.2 V)^2 (JEDEC JESD238 vs JESD235); ignores "
                       "HBM3's VDDQ drop to 0.4 V, so errs high"),
    "HBM3E": DramEnergy("HBM3E", 3.9 * (1.1 / 1.2) ** 2, "proxy",
                        "HBM3's figure: HBM3E keeps HBM3's 1.1 V VDD (JESD238A); we know no separate published "
                        "per-bit figure"),
}


# --- Technology scaling -------------------------------------------------------------------------

STILLMAKER_2017 = ("A. Stillmaker, B. Baas, 'Scaling equations for the accurate prediction of CMOS device "
                   "performance from 180 nm to 7 nm', Integration 58 (2017) 74-81")
STILLMAKER_TRANSCRIPTION = ("coefficients as transcribed in UCLA NanoCAD's nodeScale "
                            "(github.com/wromaszkan/nodeScale, MIT) and in Accelergy's technology-scaling "
                            "module; both transcriptions agree")


@dataclass(frozen=True)
class TechNode:
    """One node of the Stillmaker-Baas tables: area relative to 45 nm, energy fit a V^2 + b V + c, and
    the supply voltage our tables' values at that node are taken to be at."""

    node_nm: float
    area_vs_45nm: float
    energy_fit: tuple[float, float, float]
    vdd_v: float
    source: str


_AREA_SRC = STILLMAKER_2017 + ", area scaling table, 45 nm row; " + STILLMAKER_TRANSCRIPTION
_BULK = "bulk fit, " + STILLMAKER_2017 + "; " + STILLMAKER_TRANSCRIPTION
_HP = "PTM high-performance fit, " + STILLMAKER_2017 + "; " + STILLMAKER_TRANSCRIPTION
_PTM_VDD = "nominal Vdd of the Predictive Technology Model (ptm.asu.edu) cards the paper fits"
TECH_NODES: tuple[TechNode, ...] = (
    TechNode(180, 19.0, (0.0, 24.64, -17.98), 1.8, f"{_AREA_SRC}; {_BULK}; 1.8 V nominal"),
    TechNode(130, 6.4, (7.171, -6.709, 2.904), 1.3, f"{_AREA_SRC}; {_BULK}; 1.3 V nominal"),
    TechNode(90, 2.8, (4.762, -4.781, 2.092), 1.2, f"{_AREA_SRC}; {_BULK}; 1.2 V nominal"),
    TechNode(65, 1.5, (3.755, -4.398, 1.975), 1.1, f"{_AREA_SRC}; {_BULK}; 1.1 V nominal"),
    # 0.9 V, not PTM's 1.0 V: the 45 nm anchors of this package (Horowitz) were taken at 0.9 V.
    TechNode(45, 1.0, (1.018, -0.3107, 0.1539), 0.9, f"{_AREA_SRC}; {_HP}; 0.9 V = {HOROWITZ_2014}"),
    TechNode(32, 0.46, (0.8367, -0.4341, 0.1701), 0.9, f"{_AREA_SRC}; {_HP}; 0.9 V, {_PTM_VDD}"),
    TechNode(20, 0.21, (0.373, -0.1582, 0.04104), 0.9, f"{_AREA_SRC}; {_HP}; 0.9 V, {_PTM_VDD}"),
    TechNode(16, 0.19, (0.2958, -0.1241, 0.03024), 0.85, f"{_AREA_SRC}; {_HP}; 0.85 V, {_PTM_VDD}"),
    TechNode(14, 0.17, (0.2363, -0.09675, 0.02239), 0.8, f"{_AREA_SRC}; {_HP}; 0.8 V, {_PTM_VDD}"),
    TechNode(10, 0.1, (0.2068, -0.09311, 0.02375), 0.75, f"{_AREA_SRC}; {_HP}; 0.75 V, {_PTM_VDD}"),
    TechNode(7, 0.059, (0.1776, -0.09097, 0.02447), 0.7, f"{_AREA_SRC}; {_HP}; 0.7 V, {_PTM_VDD}"),
)
NODE_INTERPOLATION_RULE = "between tabulated nodes, log(factor) is interpolated linearly in log(node)"
