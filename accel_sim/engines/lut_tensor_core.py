"""LUT tensor cores for mixed-precision GEMM (low-bit weights x int8/fp16 activations), and their MAC baseline.

LUT Tensor Core (Mo et al., ISCA 2025, arXiv:2408.06003) and T-MAC (Wei et al., EuroSys 2025) replace
multiplications by table lookups. For every group of g activations of one row, a table holds the 2^g sums
of every subset of the group (2^(g-1) with symmetrization: the other half are their negations). Each
1-bit plane of the weights then forms a g-bit index per (group, output column) that selects one entry;
the lookups are summed over K by an adder tree, and the planes are combined by shift-accumulate
(bit-serial), so cost grows linearly with the weight bits. One table serves all N columns of a tile
(elongated tiles: small M, large N). The table precompute can be fused into the producing operator
(LUT-TC), run on a dedicated unit, or run inline on the same datapath first (T-MAC on CPUs).

The MAC baseline is a dequantize-then-multiply tensor core: weights are converted to the activation type
(int8 sign extension and zero point, or an fp16 convert + scale), then multiplied at full precision.

GEMM view: M activation rows (tokens), N output columns (the weight's output dim), K the reduction, as
`loopnest.gemm_roles` names them. Both engines hold an M x N output tile and stream K, so their memory
traffic is the shared loop-nest analysis of an output-stationary tile (`costing.gemm_array_traffic`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationInfo, field_validator

from accel_sim.energy import (add_area_mm2, add_energy_j, dtype_mac_area_mm2, dtype_mac_energy_j, mult_energy_j,
                              regfile_access_energy_j, regfile_area_mm2, scale_area, sram_access_energy_j,
                              sram_area_mm2)
from accel_sim.energy.components import level_energy_per_bit
from accel_sim.engines.base import EngineBase
from accel_sim.engines.costing import GemmTraffic, gemm_array_traffic
from accel_sim.engines.loopnest import gemm_view
from accel_sim.folds import fold_count
from accel_sim.spec.cost import Cost, merge_sums
from accel_sim.spec.fields import PositiveFloat, PositiveInt
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload

ActivationType = Literal["int8", "fp16", "bf16"]
ACT_BITS: dict[str, int] = {"int8": 8, "fp16": 16, "bf16": 16}
MAX_GROUP_SIZE = 8  # a 2^8-entry table already costs more than the multiplier it replaces (LUT-TC Sec. 3)

# NanGate FreePDK45 Open Cell Library, MUX2_X1 cell area (NangateOpenCellLibrary_typical.lib): a table
# lookup selects one of E entries through a tree of E - 1 two-input multiplexers per bit.
MUX2_45NM_UM2 = 1.862
INT_ACCUMULATOR_BITS = 32  # TPU v1 accumulates int8 products in 32 bits (Jouppi et al., ISCA 2017, Sec. 2)


# ---------------------------------------------------------------------------------------------
# Closed forms of the LUT method (hand-checkable; the tests derive them independently)
# ---------------------------------------------------------------------------------------------
def table_entries(group_size: int, symmetrize: bool) -> int:
    """Entries of one table: 2^g subset sums, or 2^(g-1) when the negated half is folded away."""
    return 2 ** (group_size - 1) if symmetrize else 2 ** group_size


def precompute_adds(group_size: int, symmetrize: bool) -> int:
    """Additions to build one table by walking its entries in Gray-code order (one add per new entry).

    Plain: the 2^g subset sums start from the empty sum 0, each next entry adds or removes one activation:
    2^g - 1 adds. Symmetrized: entries are the signed sums +-a1 +-a2 ... with the first sign fixed; the
    first entry a1 - a2 - ... - ag takes g - 1 adds, each of the other 2^(g-1) - 1 entries flips one sign
    (adds 2*a_i, a shift of a_i): 2^(g-1) + g - 2 adds.
    """
    if symmetrize:
        return 2 ** (group_size - 1) + group_size - 2
    return 2 ** group_size - 1


def entry_bits(activation: ActivationType, group_size: int) -> int:
    """Width of a table entry: float tables keep the activation format; int sums of g values grow log2(g) bits."""
    if activation == "int8":
        return ACT_BITS["int8"] + math.ceil(math.log2(group_size)) if group_size > 1 else ACT_BITS["int8"]
    return ACT_BITS[activation]


def _int_dtype(bits: int) -> str:
    return f"int{bits}"


@dataclass(frozen=True)
class LutWork:
    """Operation counts of one mpGEMM on a LUT engine (every field a count, cycles in engine clocks)."""

    tables: int             # one per (batch, row m, group of g along K)
    entries_per_table: int
    precompute_adds: int    # to build every table once
    lookups: int            # one per (table, output column, weight bit plane)
    tree_adds: int          # adder-tree additions that sum k_groups lookups into one value
    accumulates: int        # shift-accumulate of one adder-tree output into its plane's partial sum
    table_loads: int        # tables written into the array, once per N tile they serve
    steps: int              # array steps: each does tile_m x tile_n x k_groups lookups per unit
    weight_planes: int


def lut_work(m: int, n: int, k: int, batch: int, weight_bits: int, engine: LutTensorCoreEngine) -> LutWork:
    """Counts of the LUT method for a batch of M x N x K mpGEMMs with `weight_bits`-bit weights."""
    g = engine.group_size
    groups = fold_count(k, g)
    tables = batch * m * groups
    k_steps = fold_count(groups, engine.k_groups)
    m_tiles = fold_count(m, engine.tile_m)
    n_tiles = fold_count(n, engine.tile_n * engine.units)
    lookups = tables * n * weight_bits
    # each adder-tree pass sums the lookups of one k step (k_groups, or fewer on the last) into one value
    tree_outputs = batch * m * n * weight_bits * k_steps
    return LutWork(tables=tables, entries_per_table=table_entries(g, engine.symmetrize),
                   precompute_adds=tables * precompute_adds(g, engine.symmetrize), lookups=lookups,
                   tree_adds=lookups - tree_outputs, accumulates=tree_outputs, table_loads=tables * n_tiles,
                   steps=batch * m_tiles * n_tiles * k_steps * weight_bits, weight_planes=weight_bits)


@dataclass(frozen=True)
class MacWork:
    """Operation counts of one mpGEMM on a dequantize-then-MAC engine."""

    macs: int
    dequants: int   # weights converted to the activation type as they enter the array (once per M tile)
    steps: int


def mac_work(m: int, n: int, k: int, batch: int, weight_bits: int, engine: MacTensorCoreEngine) -> MacWork:
    """Counts of the dequantize-then-MAC method for a batch of M x N x K GEMMs."""
    m_tiles = fold_count(m, engine.tile_m)
    n_tiles = fold_count(n, engine.tile_n * engine.units)
    k_tiles = fold_count(k, engine.tile_k)
    narrow = weight_bits < ACT_BITS[engine.activation]
    return MacWork(macs=batch * m * n * k, dequants=batch * m_tiles * n * k if narrow else 0,
                   steps=batch * m_tiles * n_tiles * k_tiles)


# ---------------------------------------------------------------------------------------------
# Engine specs
# ---------------------------------------------------------------------------------------------
def _check_group(value: int) -> int:
    if value > MAX_GROUP_SIZE:
        raise ValueError(f"group_size {value} gives tables of 2^{value} entries. Fix: use a group size of "
                         f"1 to {MAX_GROUP_SIZE} (LUT Tensor Core and T-MAC use 4)")
    return value


class LutTensorCoreEngine(EngineBase):
    """Table-lookup mpGEMM array: units x (tile_m x tile_n) outputs, k_groups weight groups summed per step."""

    kind: Literal["lut_tensor_core"]
    tile_m: PositiveInt = 2                  # activation rows per tile (each row has its own tables)
    tile_n: PositiveInt = 64                 # output columns that share (reuse) each table
    k_groups: PositiveInt = 4                # weight groups looked up per column per step (adder-tree inputs)
    units: PositiveInt = 1                   # identical arrays (tensor cores, CPU cores) on disjoint N slices
    group_size: PositiveInt = Field(4, alias="g")  # activations per table
    symmetrize: bool = True                  # store 2^(g-1) entries and negate by the index's top bit
    activation: ActivationType = "fp16"      # activation (and table entry) type the datapath is built for
    precompute: Literal["fused", "unit", "inline"] = "fused"
    # table-building adds per cycle, needed by 'unit' and 'inline'
    precompute_adds_per_cycle: PositiveFloat | None = Field(None, validate_default=True)
    # as CPU cores (on_cores): 'all' split the table build; 'one' builds every table while the other cores wait
    precompute_cores: Literal["all", "one"] = "all"
    table_storage: Literal["registers", "sram"] = "registers"
    issue_cycles_per_step: PositiveFloat = 1.0  # 1 for a pipelined array; on a CPU, SIMD instructions per
    #                                             lookup vector / SIMD pipes

    @field_validator("group_size", mode="after")
    @classmethod
    def _group_ok(cls, value: int) -> int:
        return _check_group(value)

    @field_validator("precompute_adds_per_cycle", mode="after")
    @classmethod
    def _rate_when_needed(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None and info.data.get("precompute") in ("unit", "inline"):
            raise ValueError(f"precompute '{info.data['precompute']}' builds tables at a rate, but none is given. "
                             "Fix: set precompute_adds_per_cycle (e.g. 32), or use precompute: fused")
        return value

    @property
    def lookups_per_cycle(self) -> float:
        """Table lookups the engine issues per cycle at full use."""
        return self.units * self.tile_m * self.tile_n * self.k_groups / self.issue_cycles_per_step

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """MACs per cycle with 1-bit weights (the engine's best case: wider weights take one pass per bit)."""
        return self.peak_macs_per_cycle() if einsum.op == "mac" else 0.0

    def peak_macs_per_cycle(self) -> float:
        """g MACs per lookup with 1-bit weights; b-bit weights reach 1/b of it."""
        return self.lookups_per_cycle * self.group_size

    def macs_per_cycle(self, weight_bits: int) -> float:
        """Peak MACs per cycle for `weight_bits`-bit weights (bit-serial: one pass per bit plane)."""
        return self.peak_macs_per_cycle() / weight_bits

    def on_cores(self, cores: int) -> LutTensorCoreEngine:
        """`cores` copies on disjoint N slices sharing the tables, which all cores build together at `cores` x the
        per-core rate, or one core alone at its own rate (`precompute_cores: one`)."""
        rate = self.precompute_adds_per_cycle
        split = rate is not None and self.precompute_cores == "all"
        return self.model_copy(update={"units": self.units * cores,
                                       "precompute_adds_per_cycle": rate * cores if split else rate})

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Bit-serial lookup timing (with the table precompute) against the loop-nest traffic of the tile."""
        return lut_cost(einsum, workload, arch, self)

    def area_mm2(self, node_nm: float) -> float:
        """Tables, multiplexers, sign selection, adder trees, accumulators, index registers and precompute."""
        return sum(lut_engine_area_mm2(self, node_nm).values())


class MacTensorCoreEngine(EngineBase):
    """Dequantize-then-MAC tensor core: units x (tile_m x tile_n x tile_k) multipliers at the activation type."""

    kind: Literal["mac_tensor_core"]
    tile_m: PositiveInt = 16
    tile_n: PositiveInt = 16
    tile_k: PositiveInt = 16
    units: PositiveInt = 1
    activation: ActivationType = "fp16"      # MAC type; narrower weights are dequantized to it
    dequant: Literal["unit", "inline"] = "unit"  # converters beside the array, or the same issue slots
    dequant_per_cycle: PositiveFloat | None = None  # weights converted per cycle; None: one per array input
    issue_cycles_per_step: PositiveFloat = 1.0

    @property
    def dequant_rate(self) -> float:
        """Weights dequantized per cycle (default: every weight input of every unit each cycle)."""
        return self.dequant_per_cycle or float(self.units * self.tile_n * self.tile_k)

    def on_cores(self, cores: int) -> MacTensorCoreEngine:
        """`cores` copies on disjoint N slices, each dequantizing its own weights at the per-core rate."""
        rate = self.dequant_per_cycle
        return self.model_copy(update={"units": self.units * cores, "dequant_per_cycle": rate * cores if rate else rate})

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """units x tile_m x tile_n x tile_k MACs per cycle for contractions."""
        return self.peak_macs_per_cycle() if einsum.op == "mac" else 0.0

    def peak_macs_per_cycle(self) -> float:
        """One MAC per multiplier per step."""
        return self.units * self.tile_m * self.tile_n * self.tile_k / self.issue_cycles_per_step

    def macs_per_cycle(self, weight_bits: int) -> float:
        """Peak MACs per cycle at `weight_bits` (dequantization can bound it when it shares the issue slots)."""
        peak = self.peak_macs_per_cycle()
        if weight_bits >= ACT_BITS[self.activation]:
            return peak
        # each weight is dequantized once per M tile and feeds tile_m MACs
        dq = self.dequant_rate * self.tile_m
        return 1 / (1 / peak + 1 / dq) if self.dequant == "inline" else min(peak, dq)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Array steps plus dequantization against the loop-nest traffic of the tile."""
        return mac_cost(einsum, workload, arch, self)

    def area_mm2(self, node_nm: float) -> float:
        """Multipliers with accumulators, operand registers and dedicated dequantizers."""
        return sum(mac_engine_area_mm2(self, node_nm).values())


# ---------------------------------------------------------------------------------------------
# Costs
# ---------------------------------------------------------------------------------------------
def _gemm_shape(einsum: Einsum, workload: Workload) -> tuple[int, int, int, int, int, int, str]:
    """(M, N, K, batch, weight bits, activation bits, activation tensor) of a contraction."""
    view = gemm_view(einsum, workload)   # the weight-like operand is the bit-serial one
    return view.m, view.n, view.k, view.batch, view.weight_bits, view.streamed_bits, view.streamed.tensor


def _finish(einsum: Einsum, arch: Arch, engine: EngineBase, compute: float, traffic: GemmTraffic,
            energy: dict[tuple[str, str], float], extra_level_cycles: dict[int, float] | None = None) -> Cost:
    """Cost with compute overlapped against the busiest level (double-buffered) after the first tiles arrive."""
    level_cycles = list(traffic.level_cycles)
    for li, cycles in (extra_level_cycles or {}).items():
        level_cycles[li] += cycles
    busiest = max(level_cycles, default=0.0)
    total = max(compute + traffic.prologue_cycles, busiest)
    for key, value in traffic.energy_j.items():
        energy[key] = energy.get(key, 0.0) + value
    macs = einsum.macs
    peak = engine.peak_macs_per_cycle() * arch.engine_clock_hz(engine) / arch.clock_hz
    return Cost(macs=macs, compute_cycles=compute, stall_cycles=total - compute, accesses=traffic.accesses,
                energy_j=energy, utilization=min(1.0, macs / (peak * total)) if total > 0 else 0.0)


def _activation_level(einsum: Einsum, workload: Workload, arch: Arch, tensor: str) -> int:
    """Innermost memory level that keeps the activation tensor as this einsum reads it (where tables would live)."""
    role = workload.roles(einsum)[tensor]
    return max(li for li, lv in enumerate(arch.memory) if lv.keeps(role, tensor))


def lut_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: LutTensorCoreEngine) -> Cost:
    """Cycles, traffic and per-component energy of a contraction on a LUT tensor core."""
    m, n, k, batch, w_bits, a_bits, a_name = _gemm_shape(einsum, workload)
    work = lut_work(m, n, k, batch, w_bits, engine)
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    lookup_cycles = work.steps * engine.issue_cycles_per_step
    pre_cycles = 0.0 if engine.precompute == "fused" else work.precompute_adds / engine.precompute_adds_per_cycle
    # a dedicated unit builds the next tables while the array looks up the current ones
    engine_cycles = (max(lookup_cycles, pre_cycles) if engine.precompute == "unit"
                     else lookup_cycles + pre_cycles)
    compute = engine_cycles * clock_ratio

    node = arch.technology_nm
    ebits = entry_bits(engine.activation, engine.group_size)
    is_int = engine.activation == "int8"
    entry_dtype = _int_dtype(ebits) if is_int else engine.activation
    tree_dtype = _int_dtype(ebits + math.ceil(math.log2(engine.k_groups))) if is_int and engine.k_groups > 1 \
        else entry_dtype
    acc_dtype = _int_dtype(INT_ACCUMULATOR_BITS) if is_int else "fp32"
    table_bytes = work.entries_per_table * ebits / 8
    if engine.table_storage == "registers":
        read_j = regfile_access_energy_j(table_bytes, ebits, node)   # a register-file read is its read mux
    else:
        buffer_bytes = engine.tile_m * engine.k_groups * table_bytes
        read_j = sram_access_energy_j(buffer_bytes, ebits, node)
    energy: dict[tuple[str, str], float] = {
        ("table_precompute", "compute"): work.precompute_adds * add_energy_j(entry_dtype, node_nm=node),
        ("table_buffer", "write"): work.table_loads * work.entries_per_table * read_j,
        ("table_buffer", "read"): work.lookups * read_j,
        ("adder_tree", "compute"): work.tree_adds * add_energy_j(tree_dtype, node_nm=node),
        ("shift_accumulate", "compute"): work.accumulates * add_energy_j(acc_dtype, node_nm=node),
        # every lookup reads its g-bit index from the column's weight register (g bits x 8 planes at most)
        ("weight_registers", "read"): work.lookups * regfile_access_energy_j(engine.group_size, engine.group_size,
                                                                             node),
    }
    if engine.symmetrize and is_int:
        # the folded half is the negation of a stored entry: a two's-complement negate per lookup; a float
        # entry is negated by flipping its sign bit (IEEE 754-2008, 5.5.1), one gate we do not charge
        energy[("sign_select", "compute")] = work.lookups * add_energy_j(entry_dtype, node_nm=node)

    step_k = engine.k_groups * engine.group_size
    traffic = gemm_array_traffic(einsum, workload, arch, engine, engine.tile_m, engine.tile_n * engine.units, "os",
                                 step_k * (engine.tile_m * a_bits + engine.tile_n * engine.units * w_bits) / 8)
    extra: dict[int, float] = {}
    if engine.precompute == "fused":
        # the producer writes tables instead of activations and the array reads tables: the activation bytes
        # at the level that holds them grow by entries x entry bits / (g x activation bits)
        li = _activation_level(einsum, workload, arch, a_name)
        level = arch.memory[li]
        act_reads = sum(v for (lv, t, a), v in traffic.accesses.items()
                        if lv == level.name and t == a_name and a == "read")
        growth = max(0.0, work.entries_per_table * ebits / (engine.group_size * a_bits) - 1)
        read_bits = act_reads * a_bits * growth
        write_bits = batch * m * k * a_bits * growth
        r_e, w_e = level_energy_per_bit(level, node)
        energy[(level.name, "read")] = energy.get((level.name, "read"), 0.0) + read_bits * r_e
        energy[(level.name, "write")] = energy.get((level.name, "write"), 0.0) + write_bits * w_e
        extra[li] = engine.transfer_cycles(read_bits / 8, write_bits / 8, level, arch)
        # ... and the level's accesses carry those bytes too (as activation elements), so that its reported bytes
        # and bandwidth use are what its energy and cycles were charged for
        tables = {(level.name, a_name, action): bits / a_bits
                  for action, bits in (("read", read_bits), ("write", write_bits)) if bits}
        traffic = replace(traffic, accesses=merge_sums(traffic.accesses, tables))
    return _finish(einsum, arch, engine, compute, traffic, energy, extra)


def _dequant_energy_j(activation: ActivationType, node: float) -> float:
    """Converting one weight to the MAC type: a zero-point subtract (int8), or int->fp convert + scale (fp)."""
    if activation == "int8":
        return add_energy_j("int8", node_nm=node)
    return add_energy_j(activation, node_nm=node) + mult_energy_j(activation, activation, node_nm=node)


def mac_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: MacTensorCoreEngine) -> Cost:
    """Cycles, traffic and per-component energy of a contraction on a dequantize-then-MAC tensor core."""
    m, n, k, batch, w_bits, a_bits, _ = _gemm_shape(einsum, workload)
    work = mac_work(m, n, k, batch, w_bits, engine)
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    mac_cycles = work.steps * engine.issue_cycles_per_step
    dq_cycles = work.dequants / engine.dequant_rate
    engine_cycles = mac_cycles + dq_cycles if engine.dequant == "inline" else max(mac_cycles, dq_cycles)
    node = arch.technology_nm
    act = engine.activation
    bits = ACT_BITS[act]
    acc_bits = INT_ACCUMULATOR_BITS if act == "int8" else 32
    regs = (2 * bits + acc_bits) / 8
    energy: dict[tuple[str, str], float] = {
        ("mac", "compute"): work.macs * dtype_mac_energy_j(act, act, node_nm=node),
        ("dequantize", "compute"): work.dequants * _dequant_energy_j(act, node),
        ("pe_registers", "read"): work.macs * 2 * regfile_access_energy_j(regs, bits, node),
        ("pe_registers", "write"): work.macs * regfile_access_energy_j(regs, acc_bits, node),
    }
    traffic = gemm_array_traffic(einsum, workload, arch, engine, engine.tile_m, engine.tile_n * engine.units, "os",
                                 engine.tile_k * (engine.tile_m * a_bits + engine.tile_n * engine.units * w_bits) / 8)
    return _finish(einsum, arch, engine, engine_cycles * clock_ratio, traffic, energy)


# ---------------------------------------------------------------------------------------------
# Area
# ---------------------------------------------------------------------------------------------
def lut_engine_area_mm2(engine: LutTensorCoreEngine, node_nm: float) -> dict[str, float]:
    """Area per component of a LUT engine at a node (mm^2)."""
    g = engine.group_size
    ebits = entry_bits(engine.activation, g)
    is_int = engine.activation == "int8"
    entry_dtype = _int_dtype(ebits) if is_int else engine.activation
    tree_dtype = _int_dtype(ebits + math.ceil(math.log2(engine.k_groups))) if is_int and engine.k_groups > 1 \
        else entry_dtype
    acc_dtype = _int_dtype(INT_ACCUMULATOR_BITS) if is_int else "fp32"
    entries = table_entries(g, engine.symmetrize)
    u = engine.units
    lookup_units = u * engine.tile_m * engine.tile_n * engine.k_groups
    outputs = u * engine.tile_m * engine.tile_n
    table_bytes = u * engine.tile_m * engine.k_groups * entries * ebits / 8
    area = {
        "tables": (regfile_area_mm2(table_bytes, node_nm) if engine.table_storage == "registers"
                   else sram_area_mm2(table_bytes, node_nm)),
        "mux": lookup_units * (entries - 1) * ebits * scale_area(MUX2_45NM_UM2 * 1e-6, 45, node_nm),
        "adder_tree": outputs * (engine.k_groups - 1) * add_area_mm2(tree_dtype, node_nm=node_nm),
        "shift_accumulate": outputs * (add_area_mm2(acc_dtype, node_nm=node_nm)
                                       + regfile_area_mm2(INT_ACCUMULATOR_BITS / 8, node_nm)),
        "weight_registers": u * engine.tile_n * engine.k_groups * regfile_area_mm2(g, node_nm),
    }
    if engine.symmetrize and is_int:
        area["sign_select"] = lookup_units * add_area_mm2(entry_dtype, node_nm=node_nm)
    if engine.precompute == "unit":
        area["precompute_unit"] = math.ceil(engine.precompute_adds_per_cycle) * add_area_mm2(entry_dtype,
                                                                                               node_nm=node_nm)
    return area


def mac_engine_area_mm2(engine: MacTensorCoreEngine, node_nm: float) -> dict[str, float]:
    """Area per component of a dequantize-then-MAC engine at a node (mm^2)."""
    act = engine.activation
    bits = ACT_BITS[act]
    macs = engine.units * engine.tile_m * engine.tile_n * engine.tile_k
    area = {"mac": macs * dtype_mac_area_mm2(act, act, node_nm=node_nm),
            "pe_registers": macs * regfile_area_mm2((2 * bits + INT_ACCUMULATOR_BITS) / 8, node_nm)}
    if engine.dequant == "unit":
        # an adder for the zero point (int8), or an fp adder and multiplier for convert and scale
        per = add_area_mm2("int8" if act == "int8" else act, node_nm=node_nm)
        if act != "int8":
            per += dtype_mac_area_mm2(act, act, acc_dtype=act, node_nm=node_nm) - add_area_mm2(act, node_nm=node_nm)
        area["dequantize"] = math.ceil(engine.dequant_rate) * per
    return area
