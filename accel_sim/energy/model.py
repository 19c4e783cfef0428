"""Per-action energy and area of hardware components, as pure functions over the cited tables.

SI inside: joules, joules per bit, and mm^2 where a name ends in `_mm2`. Every function reads
`tables.py`; the rules that carry a number from its anchor to another width, capacity or node are
stated in the docstrings and cited in `tables.SCALING_RULES` and friends.

Technology: values in the tables are 45 nm figures (Horowitz) unless a row says otherwise; any other
node in [7, 180] nm is reached with Stillmaker & Baas (2017): area by their scaling table, energy by
their per-node polynomial in Vdd evaluated at each node's supply voltage (`tables.TECH_NODES`).
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from typing import Literal

import accel_sim.energy.tables as T
from accel_sim.errors import ConfigError

Number = Literal["int", "fp"]

_PJ = 1e-12
_UM2_IN_MM2 = 1e-6
# The mapper prices every scored batch's levels and MACs through these pure functions of a few numbers: the
# node-scaling and per-access ones are memoized (the same few arguments recur thousands of times a run)
_memoized = functools.lru_cache(maxsize=4096)


class EnergyTableError(ConfigError, ValueError):
    """A request the energy tables cannot answer (unknown DRAM kind or dtype, node out of range, bad size).

    It is a ConfigError, so the CLI reports it with exit code 2, and a ValueError, so callers that
    validate a config field can let pydantic or their own handler turn it into a located error.
    """


# --- Helpers -----------------------------------------------------------------------------------

def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise EnergyTableError(f"{name} must be a positive number, got {value!r}",
                               fix=f"give {name} as a positive number")
    return float(value)


def _bits(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise EnergyTableError(f"{name} must be a positive integer number of bits, got {value!r}",
                               fix=f"give {name} as an integer such as 8")
    return int(value)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise EnergyTableError(f"{name} must be a positive integer, got {value!r}",
                               fix=f"give {name} as an integer such as 4")
    return int(value)


def _interp_loglog(x: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear in log-log space over increasing xs, extrapolated with the end segments' slopes."""
    lx = math.log(x)
    lxs = [math.log(v) for v in xs]
    lys = [math.log(v) for v in ys]
    i = 0
    while i < len(xs) - 2 and lx > lxs[i + 1]:
        i += 1
    slope = (lys[i + 1] - lys[i]) / (lxs[i + 1] - lxs[i])
    return math.exp(lys[i] + slope * (lx - lxs[i]))


def _power_law(x: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """y = y0 * (x / x0) ** p with p chosen so that the curve passes through (x1, y1)."""
    p = math.log(y1 / y0) / math.log(x1 / x0)
    return y0 * (x / x0) ** p


# --- Technology scaling --------------------------------------------------------------------------

_NODES = sorted(T.TECH_NODES, key=lambda n: n.node_nm)
NODE_RANGE_NM: tuple[float, float] = (_NODES[0].node_nm, _NODES[-1].node_nm)


def _check_node(node_nm: float) -> float:
    lo, hi = NODE_RANGE_NM
    if (isinstance(node_nm, bool) or not isinstance(node_nm, numbers.Real) or not math.isfinite(node_nm)
            or not (lo <= node_nm <= hi)):
        raise EnergyTableError(
            f"technology node {node_nm!r} nm is outside the {lo:g}-{hi:g} nm range of the scaling tables "
            "(Stillmaker & Baas 2017)",
            fix=f"use a node between {lo:g} and {hi:g} nm, or give per-access energies and areas explicitly "
                "in the architecture file")
    return float(node_nm)


def _node_curve(node_nm: float, values: list[float]) -> float:
    return _interp_loglog(_check_node(node_nm), [n.node_nm for n in _NODES], values)


@_memoized
def supply_voltage_v(node_nm: float) -> float:
    """Supply voltage the tables assume at a node (0.9 V at 45 nm, Horowitz's operating point)."""
    return _node_curve(node_nm, [n.vdd_v for n in _NODES])


def _energy_level(node: T.TechNode) -> float:
    a, b, c = node.energy_fit
    return a * node.vdd_v**2 + b * node.vdd_v + c


@_memoized
def energy_scale_factor(from_nm: float, to_nm: float) -> float:
    """Energy at `to_nm` over energy at `from_nm` (Stillmaker & Baas 2017 fits at each node's Vdd)."""
    levels = [_energy_level(n) for n in _NODES]
    return _node_curve(to_nm, levels) / _node_curve(from_nm, levels)


@_memoized
def area_scale_factor(from_nm: float, to_nm: float) -> float:
    """Area at `to_nm` over area at `from_nm` (Stillmaker & Baas 2017 area table, 45 nm row)."""
    areas = [n.area_vs_45nm for n in _NODES]
    return _node_curve(to_nm, areas) / _node_curve(from_nm, areas)


def scale_energy(value_j: float, from_nm: float, to_nm: float) -> float:
    """Carry an energy from one technology node to another."""
    return value_j * energy_scale_factor(from_nm, to_nm)


def scale_area(value_mm2: float, from_nm: float, to_nm: float) -> float:
    """Carry an area from one technology node to another."""
    return value_mm2 * area_scale_factor(from_nm, to_nm)


# --- Arithmetic ----------------------------------------------------------------------------------

_FLOAT_ALIASES = {"fp8": "fp8_e4m3", "fp6": "fp6_e2m3", "fp4": "fp4_e2m1", "float32": "fp32",
                  "float16": "fp16", "bfloat16": "bf16", "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"}
_FLOATS = {**T.FLOAT_FORMATS, "fp64": T.FloatFormat("fp64", 11, 52, "IEEE 754-2008")}
_INT_NAME = re.compile(r"^u?int(\d+)$")


class _Operand:
    """An operand as the datapath sees it: integer width, or float with its significand width."""

    __slots__ = ("kind", "bits", "significand_bits", "name")

    def __init__(self, kind: Number, bits: int, significand_bits: int, name: str) -> None:
        self.kind, self.bits, self.significand_bits, self.name = kind, bits, significand_bits, name


def _float_operand(fmt: T.FloatFormat) -> _Operand:
    return _Operand("fp", fmt.bits, fmt.significand_bits, fmt.name)


def _valid_dtypes() -> str:
    return "int1..int32, uint1..uint32, " + ", ".join(sorted({*_FLOATS, *_FLOAT_ALIASES}))


def _dtype_operand(dtype: str, role: str) -> _Operand:
    text = str(dtype).strip().lower()
    text = _FLOAT_ALIASES.get(text, text)
    if text in _FLOATS:
        return _float_operand(_FLOATS[text])
    match = _INT_NAME.match(text)
    if match and 1 <= int(match.group(1)) <= 64:
        return _Operand("int", int(match.group(1)), int(match.group(1)), text)
    raise EnergyTableError(f"unknown {role} dtype '{dtype}'", fix=f"use one of {_valid_dtypes()}")


def _bits_operand(bits: int, number: Number, role: str) -> _Operand:
    bits = _bits(role, bits)
    if number == "int":
        return _Operand("int", bits, bits, f"int{bits}")
    if number == "fp":
        if bits not in T.DEFAULT_FLOAT_BY_BITS:
            widths = ", ".join(str(b) for b in sorted(T.DEFAULT_FLOAT_BY_BITS))
            raise EnergyTableError(f"no floating-point format of {bits} bits for {role}",
                                   fix=f"use a width among {widths}, or name the format with "
                                       "dtype_mac_energy_j (e.g. 'bf16', 'fp8_e5m2')")
        return _float_operand(T.FLOAT_FORMATS[T.DEFAULT_FLOAT_BY_BITS[bits]])
    raise EnergyTableError(f"number kind '{number}' is not 'int' or 'fp'", fix="pass number='int' or number='fp'")


def _anchor(table: dict[str, T.Cited], key: str) -> float:
    return table[key].value


def _adder(op: _Operand, table: dict[str, T.Cited]) -> float:
    """Adder cost at 45 nm in the table's unit, for an accumulator operand."""
    if op.kind == "int":
        return _power_law(op.bits, 8, _anchor(table, "int8_add"), 32, _anchor(table, "int32_add"))
    return _power_law(op.significand_bits, 11, _anchor(table, "fp16_add"), 24, _anchor(table, "fp32_add"))


def _multiplier(a: _Operand, b: _Operand, table: dict[str, T.Cited]) -> float:
    """Multiplier cost at 45 nm in the table's unit."""
    if a.kind == "int" and b.kind == "int":
        return _power_law(a.bits * b.bits, 64, _anchor(table, "int8_mult"), 1024, _anchor(table, "int32_mult"))
    # A float datapath; an integer operand enters it as a significand of its own width.
    # cost = k_lin * (m_a + m_b) + k_pp * m_a * m_b, solved exactly through fp16 (11, 11) and fp32 (24, 24).
    e16, e32 = _anchor(table, "fp16_mult"), _anchor(table, "fp32_mult")
    s16, p16, s32, p32 = 22, 121, 48, 576
    k_pp = (e32 - e16 * s32 / s16) / (p32 - p16 * s32 / s16)
    k_lin = (e16 - k_pp * p16) / s16
    ma, mb = a.significand_bits, b.significand_bits
    return k_lin * (ma + mb) + k_pp * ma * mb


def _accumulator(a: _Operand, b: _Operand, acc: _Operand | None) -> _Operand:
    if acc is not None:
        return acc
    if a.kind == "int" and b.kind == "int":
        bits = max(int(T.DEFAULT_INT_ACCUMULATOR_BITS.value), a.bits + b.bits)
        return _Operand("int", bits, bits, f"int{bits}")
    widest = max((a, b), key=lambda o: o.significand_bits)
    default = _float_operand(T.FLOAT_FORMATS[T.DEFAULT_FP_ACCUMULATOR_FORMAT])
    return widest if widest.kind == "fp" and widest.significand_bits > default.significand_bits else default


def _mac_energy(a: _Operand, b: _Operand, acc: _Operand, node_nm: float) -> float:
    pj = _multiplier(a, b, T.HOROWITZ_45NM_ENERGY_PJ) + _adder(acc, T.HOROWITZ_45NM_ENERGY_PJ)
    return scale_energy(pj * _PJ, 45, node_nm)


def _mac_area(a: _Operand, b: _Operand, acc: _Operand, node_nm: float) -> float:
    um2 = _multiplier(a, b, T.HOROWITZ_45NM_AREA_UM2) + _adder(acc, T.HOROWITZ_45NM_AREA_UM2)
    return scale_area(um2 * _UM2_IN_MM2, 45, node_nm)


def _acc_from_bits(acc_bits: int | None, number: Number) -> _Operand | None:
    return None if acc_bits is None else _bits_operand(acc_bits, number, "acc_bits")


def mac_energy_j(a_bits: int, b_bits: int, *, number: Number = "int", node_nm: float = 45.0,
                 acc_bits: int | None = None) -> float:
    """Energy of one multiply-accumulate: an a x b multiply plus an add at accumulator width.

    Integers: the accumulator defaults to max(32, a + b) bits (TPUv1's 32-bit accumulators). Floats:
    a width means fp32/fp16/fp8_e4m3/fp6_e2m3/fp4_e2m1 and accumulation defaults to fp32.

    >>> round(mac_energy_j(8, 8) * 1e12, 6)  # Horowitz 45 nm: 0.2 pJ mult + 0.1 pJ 32-bit add
    0.3
    """
    _check_node(node_nm)
    a, b = _bits_operand(a_bits, number, "a_bits"), _bits_operand(b_bits, number, "b_bits")
    return _mac_energy(a, b, _accumulator(a, b, _acc_from_bits(acc_bits, number)), node_nm)


def mac_area_mm2(a_bits: int, b_bits: int, *, number: Number = "int", node_nm: float = 45.0,
                 acc_bits: int | None = None) -> float:
    """Area of one MAC unit's multiplier and accumulator adder (registers not included)."""
    _check_node(node_nm)
    a, b = _bits_operand(a_bits, number, "a_bits"), _bits_operand(b_bits, number, "b_bits")
    return _mac_area(a, b, _accumulator(a, b, _acc_from_bits(acc_bits, number)), node_nm)


def dtype_mac_energy_j(a_dtype: str, b_dtype: str, *, acc_dtype: str | None = None,
                       node_nm: float = 45.0) -> float:
    """Energy of one MAC for named dtypes ('int4', 'bf16', 'fp8_e5m2', ...); mixed int x fp allowed."""
    _check_node(node_nm)
    a, b = _dtype_operand(a_dtype, "a"), _dtype_operand(b_dtype, "b")
    acc = None if acc_dtype is None else _dtype_operand(acc_dtype, "accumulator")
    return _mac_energy(a, b, _accumulator(a, b, acc), node_nm)


def dtype_mac_area_mm2(a_dtype: str, b_dtype: str, *, acc_dtype: str | None = None,
                       node_nm: float = 45.0) -> float:
    """Area of one MAC unit for named dtypes (multiplier + accumulator adder)."""
    _check_node(node_nm)
    a, b = _dtype_operand(a_dtype, "a"), _dtype_operand(b_dtype, "b")
    acc = None if acc_dtype is None else _dtype_operand(acc_dtype, "accumulator")
    return _mac_area(a, b, _accumulator(a, b, acc), node_nm)


def add_energy_j(dtype: str, *, node_nm: float = 45.0) -> float:
    """Energy of one addition in a dtype (elementwise and reduction engines)."""
    _check_node(node_nm)
    pj = _adder(_dtype_operand(dtype, "adder"), T.HOROWITZ_45NM_ENERGY_PJ)
    return scale_energy(pj * _PJ, 45, node_nm)


def add_area_mm2(dtype: str, *, node_nm: float = 45.0) -> float:
    """Area of one adder in a dtype (Horowitz's adder areas, width rule and node scaling as for MACs)."""
    _check_node(node_nm)
    um2 = _adder(_dtype_operand(dtype, "adder"), T.HOROWITZ_45NM_AREA_UM2)
    return scale_area(um2 * _UM2_IN_MM2, 45, node_nm)


def mult_energy_j(a_dtype: str, b_dtype: str, *, node_nm: float = 45.0) -> float:
    """Energy of one multiplication of two dtypes."""
    _check_node(node_nm)
    a, b = _dtype_operand(a_dtype, "a"), _dtype_operand(b_dtype, "b")
    return scale_energy(_multiplier(a, b, T.HOROWITZ_45NM_ENERGY_PJ) * _PJ, 45, node_nm)


# --- SRAM and register files ------------------------------------------------------------------------

@_memoized
def sram_access_energy_j(capacity_bytes: float, width_bits: int, node_nm: float) -> float:
    """Energy of one read (writes taken equal) of `width_bits` from an SRAM of `capacity_bytes`.

    Horowitz's 45 nm 64-bit reads (8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ), log-log in capacity,
    linear in width, then technology-scaled.
    """
    capacity = _positive("capacity_bytes", capacity_bytes)
    width = _bits("width_bits", width_bits)
    _check_node(node_nm)
    caps = [float(c) for c, _ in T.SRAM_45NM_READ_64BIT_PJ]
    pjs = [e.value for _, e in T.SRAM_45NM_READ_64BIT_PJ]
    pj = _interp_loglog(capacity, caps, pjs) * width / 64
    return scale_energy(pj * _PJ, 45, node_nm)


def sram_cell_area_um2(node_nm: float) -> float:
    """High-density 6T bit-cell area at a node from published cells (log-log between them)."""
    node = _check_node(node_nm)
    cells = sorted(T.SRAM_CELLS, key=lambda c: c.node_nm)
    largest = cells[-1]
    if node > largest.node_nm:
        return largest.cell_um2 * area_scale_factor(largest.node_nm, node)
    return _interp_loglog(node, [c.node_nm for c in cells], [c.cell_um2 for c in cells])


def sram_macro_efficiency(bank_bytes: float) -> float:
    """Share of an SRAM macro of `bank_bytes` that is bit cells (LLMCompass' CACTI-derived table,
    tables.SRAM_EFFICIENCY_RULE).

    >>> sram_macro_efficiency(16 * 1024), sram_macro_efficiency(8 * 1024 * 1024)
    (0.247, 0.561)
    """
    points = T.SRAM_MACRO_EFFICIENCY
    x = math.log2(_positive("bank_bytes", bank_bytes))
    xs = [math.log2(c) for c, _ in points]
    ys = [e.value for _, e in points]
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = max(j for j in range(len(xs) - 1) if xs[j] <= x)
    return ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])


@_memoized
def sram_area_mm2(capacity_bytes: float, node_nm: float, banks: int = 1) -> float:
    """Area of an SRAM of `banks` equal macros: bits x bit-cell area / the bit-cell share of one macro of
    capacity / banks (smaller macros carry more periphery per bit)."""
    capacity = _positive("capacity_bytes", capacity_bytes)
    banks = _count("banks", banks)
    return capacity * 8 * sram_cell_area_um2(node_nm) / sram_macro_efficiency(capacity / banks) * _UM2_IN_MM2


def sram_bank_route_mm(area_mm2: float, banks: int) -> float:
    """Mean Manhattan distance from a banked memory's port at its centre to a bank, beyond what one bank's own
    access spans: (side - bank side) / 2 for a square of `banks` square macros; 0 for one bank.

    The mean |x| + |y| from the centre of a square of side s to a uniform point in it is s / 2.
    """
    side = math.sqrt(_positive("area_mm2", area_mm2))
    return (side - side / math.sqrt(_count("banks", banks))) / 2


def _eyeriss_mac_pj() -> float:
    """The 1x of Eyeriss' table in our units: a 16-bit fixed-point MAC at 45 nm."""
    int16 = _Operand("int", 16, 16, "int16")
    return _multiplier(int16, int16, T.HOROWITZ_45NM_ENERGY_PJ) + _adder(int16, T.HOROWITZ_45NM_ENERGY_PJ)


@_memoized
def regfile_access_energy_j(capacity_bytes: float, width_bits: int, node_nm: float) -> float:
    """Energy of one register-file access: Eyeriss' 0.5 kB RF costs 1x a 16-bit MAC per 16-bit word;
    other sizes scale with sqrt(capacity) (Horowitz's small-SRAM slope), linear in width."""
    capacity = _positive("capacity_bytes", capacity_bytes)
    width = _bits("width_bits", width_bits)
    _check_node(node_nm)
    ref_pj = T.EYERISS_RELATIVE_ENERGY["register_file_0.5KB"].value * _eyeriss_mac_pj()
    pj = (ref_pj * math.sqrt(capacity / T.REGISTER_FILE_REFERENCE_BYTES.value)
          * width / T.REGISTER_FILE_REFERENCE_BITS.value)
    return scale_energy(pj * _PJ, 45, node_nm)


def regfile_area_mm2(capacity_bytes: float, node_nm: float) -> float:
    """Area of a flip-flop register file: one 45 nm DFF_X1 per bit, technology-scaled (no read mux)."""
    bits = _positive("capacity_bytes", capacity_bytes) * 8
    _check_node(node_nm)
    return scale_area(bits * T.DFF_45NM_UM2.value * _UM2_IN_MM2, 45, node_nm)


# --- DRAM, wires, NoC -------------------------------------------------------------------------------

def phy_area_mm2(kind: str, count: int) -> float:
    """Die area of `count` units (lanes, channels, stacks, links) of an interface PHY; not node-scaled."""
    if kind not in T.PHY_AREA:
        raise EnergyTableError(f"unknown I/O PHY kind '{kind}'", fix=f"use one of {', '.join(T.PHY_AREA)}")
    return T.PHY_AREA[kind].mm2_per_unit * _count("count", count)


def dram_kinds() -> tuple[str, ...]:
    """DRAM kinds with a per-bit energy in the tables."""
    return tuple(T.DRAM_ENERGY)


def dram_energy_j_per_bit(kind: str) -> float:
    """Energy per bit read or written at a DRAM device of the given kind ('HBM2', 'lpddr5', ...)."""
    key = str(kind).strip().upper()
    if key not in T.DRAM_ENERGY:
        raise EnergyTableError(f"unknown DRAM kind '{kind}'", fix=f"use one of {', '.join(dram_kinds())}")
    return T.DRAM_ENERGY[key].pj_per_bit * _PJ


@_memoized
def wire_energy_j_per_bit_mm(node_nm: float) -> float:
    """Energy to move one bit 1 mm on chip: activity x C_wire x Vdd^2 (C_wire 0.2 pF/mm at every node)."""
    vdd = supply_voltage_v(node_nm)
    return T.WIRE_ACTIVITY.value * T.WIRE_CAPACITANCE_PF_PER_MM.value * 1e-12 * vdd**2


def noc_hop_energy_j_per_bit(node_nm: float) -> float:
    """Energy per bit of one PE-to-PE (NoC) hop: Eyeriss' 2x a 16-bit MAC per 16-bit word."""
    _check_node(node_nm)
    pj = (T.EYERISS_RELATIVE_ENERGY["noc_pe_to_pe"].value * _eyeriss_mac_pj()
          / T.REGISTER_FILE_REFERENCE_BITS.value)
    return scale_energy(pj * _PJ, 45, node_nm)
