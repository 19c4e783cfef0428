"""Systolic arrays: output-, weight- and input-stationary dataflows as one model with a dataflow parameter.

A contraction is seen in its im2col (GEMM) view: M = output pixels (rows of the streamed operand),
N = filters (output channels), K = reduction (window x channels). Per dataflow the array's rows, its
columns and time take (os: M, N, K), (ws: K, N, M), (is: K, M, N); the spatial extents are cut into
folds of rows x cols that run one after another (SCALE-Sim, Samajdar et al., ISPASS 2020, Sec. III).
Each fold costs its temporal extent plus the cycles to fill and drain the array:
os: T + R + C - 2 (operands skew in over R + C - 2 cycles while outputs accumulate in place);
ws/is: 2R + C + T - 2 (R cycles to load the stationary operand, then T streamed rows and R + C - 2 of skew).

That is `stationary_buffering: single`, SCALE-Sim's timing (the emulator in compat/scalesim/ uses
it). With `double` the array holds a second copy of the stationary tile (TPU v1: "one 64 KiB tile of weights
plus one for double-buffering (to hide the 256 cycles it takes to shift a tile in)", Jouppi et al., ISCA 2017,
Sec. 2): the next fold's tile shifts in while the current fold streams, and the next fold's rows enter right
behind the current fold's last row, so the skew of one fold overlaps the next. A run of F ws/is folds then takes

    R + (F - 1) * max(T, R) + T + (R + C - 2)  =  (2R + C + T - 2) + (F - 1) * max(T, R)

(the first load, each later fold waiting for the longer of its predecessor's T rows and its own R-cycle
load, the last fold's T rows, then one drain of R + C - 2). One fold costs what it costs single-buffered;
with T < R the load is exposed (each later fold costs R, not T). Output-stationary folds pipeline the same way
with a second accumulator per PE (the stationary operand is the output): the next fold's operands stream in
right behind the current fold's while its finished outputs shift out of the array, R per column through one
port per column, so a later fold waits for the longer of its T operands and that R-cycle drain:

    (T + R + C - 2) + (F - 1) * max(T, R)

(derived as above: the first fold with its skew, then one max(T, R) step per later fold). Both forms are one
fold's cost plus (F - 1) * max(T, R).

Between einsums the same holds (`pipeline_tail_cycles`): on a double-buffered array the next contraction's
operands enter right behind the previous one's last rows, so two back-to-back contractions pay the R + C - 2
skew once; the graph scheduler and the replay start the next one that many cycles before the previous ends.
A successor without such a tail (a map, or a contraction bound by a memory level) waits for the end, since
its last PE only frees when the previous wavefront has passed.

Operands need not shift from PE to PE (`operand_delivery: broadcast`, DianNao's NFU, Chen et al., ASPLOS 2014,
sec. 4): the streamed operand is broadcast to every multiplier, a stationary block is written into the array in
one cycle from its buffer, and adder trees reduce the products in a pipeline of `pipeline_stages`. The forms
above hold with the load taking 1 cycle instead of R and the skew `pipeline_stages` - 1 instead of R + C - 2
(`load_cycles`, `skew_cycles`): a fold costs T + S (os) or 1 + S + T (ws/is), and a double-buffered (pipelined)
run of F folds one fold plus (F - 1) * max(T, 1).

Operands wider than the multipliers (`operand_bits`) take several passes: each MAC of a-bit and w-bit operands
takes ceil(a / operand_bits) x ceil(w / operand_bits) cycles, so T above counts each streamed element that many
times (TPU v1's 8-bit MXU runs 8 x 16-bit products at half speed and 16 x 16-bit at quarter speed: Jouppi et al.,
ISCA 2017, sec. 2). The tensors carry widths, not number formats, so a 16-bit float on an integer array is timed
as a 16-bit integer.

A tensor that stays in the PE registers between two einsums of a chain on this array (`resident_cost`, chosen
by the graph scheduler) is never loaded into or drained out of the array: its folds run back to back behind
one skew, F * T + R + C - 2, and it moves through no memory level.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from accel_sim.engines.base import EngineBase, width_weighted_mac_peak
from accel_sim.engines.costing import elementwise_cost, systolic_cost, systolic_pe_area_mm2, systolic_resident_cost
from accel_sim.engines.loopnest import gemm_operands
from accel_sim.engines.systolic_mapspace import SystolicMapspace, systolic_mapspace
from accel_sim.energy.tables import DEFAULT_INT_ACCUMULATOR_BITS
from accel_sim.folds import Buffering, Dataflow, multiplier_passes
from accel_sim.spec.arch import LevelReference
from accel_sim.spec.fields import SPEC_CONFIG, Bytes, PositiveFloat, PositiveInt, located
from accel_sim.spec.mapspace import MapperSpec, pins_for
from accel_sim.spec.workload import MAP_OPS, Einsum, map_ops_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


class PeStore(BaseModel):
    """One operand's storage inside every PE, a scratchpad or a register: its bytes and technology."""

    model_config = SPEC_CONFIG

    capacity_bytes: Bytes = Field(alias="capacity")
    # priced like a memory level of that technology and capacity (energy.components.storage_area_mm2)
    technology: Literal["registers", "SRAM"]


class PeStorage(BaseModel):
    """What every PE stores per operand: the streamed input, the weight (the stationary operand of ws) and the
    partial sum. Each is read (inputs, weights) or written (psums) once per MAC."""

    model_config = SPEC_CONFIG

    inputs: PeStore
    weights: PeStore
    psums: PeStore

    def stores(self) -> tuple[PeStore, ...]:
        """The three stores: inputs, weights, psums."""
        return self.inputs, self.weights, self.psums


class SystolicEngine(EngineBase):
    """A rows x cols array of multiply-accumulate units (TPU MXU, Eyeriss-style PE arrays)."""

    kind: Literal["systolic"]
    rows: PositiveInt
    cols: PositiveInt
    dataflow: Dataflow | Literal["any"] = "ws"  # "any": the mapper chooses the dataflow per einsum
    operand_bits: PositiveInt = 8  # multiplier width: sets area, and the passes wider operands take (docstring)
    # the PEs' arithmetic: int (fixed point: Eyeriss, DianNao) or fp; None: energy.components.dtype_of_bits's rule
    # (integers up to 8 bits, floats from 16)
    number: Literal["int", "fp"] | None = None
    # width of a partial sum while its reduction is open: in the PEs and in any level that keeps it between folds.
    # None: 32 bits, for int and fp alike (int8 products accumulate in 32 bits, Jouppi et al., ISCA 2017, Sec. 2;
    # fp16/bf16 products in fp32, Micikevicius et al., ICLR 2018, as NVIDIA tensor cores: energy/tables.py)
    accumulator_bits: PositiveInt | None = None
    # each PE's storage per operand (Eyeriss' scratchpads); None: one register per operand and the accumulator,
    # one register file (engines/costing.py pe_registers_bytes)
    pe_storage: PeStorage | None = None
    # "double": a second stationary-tile register per PE hides the next fold's load (module docstring);
    # "single": every ws/is fold loads its tile first (SCALE-Sim's timing)
    stationary_buffering: Buffering = "single"
    mapper: MapperSpec = MapperSpec()
    # operator -> MAC-equivalent cycles one PE takes per application, for maps and reductions the PEs also run
    # (FuseMax: exp as 6 MACs); YAML gives a mapping, e.g. {exp: 6, add: 1}; empty: only contractions run here
    elementwise_ops: tuple[tuple[str, PositiveFloat], ...] = ()
    # register bytes per PE that can keep an operand or result between the einsums of a chain on this array
    # (FuseMax keeps QK's scores in the PEs for exp, max and sum); None: values only pass through
    register_bytes_per_pe: Bytes | None = Field(None, alias="pe_registers")
    # how operands reach the PEs: "systolic", shifted PE to PE (a stationary tile shifts in over R cycles, a fold
    # fills and drains over R + C - 2); "broadcast", DianNao's NFU (Chen et al., ASPLOS 2014, sec. 4): the streamed
    # operand goes to every multiplier at once, a stationary block is written in one cycle, and adder trees sum
    # the products in a pipeline of `pipeline_stages` (module docstring)
    operand_delivery: Literal["systolic", "broadcast"] = "systolic"
    pipeline_stages: PositiveInt | None = None   # broadcast only: the multiply-reduce pipeline's depth

    @model_validator(mode="after")
    def _stages_with_broadcast(self) -> SystolicEngine:
        if self.operand_delivery == "broadcast" and self.pipeline_stages is None:
            raise located("operand_delivery 'broadcast' needs pipeline_stages: the depth of the multiply and "
                          "adder-tree pipeline, whose fill and drain a fold pays (DianNao's NFU: 3). Fix: give "
                          "pipeline_stages with its source", "pipeline_stages")
        if self.operand_delivery == "systolic" and self.pipeline_stages is not None:
            raise located("pipeline_stages describes a broadcast array's adder trees; a systolic array fills and "
                          "drains over its rows and columns. Fix: remove pipeline_stages, or set "
                          "operand_delivery: broadcast", "pipeline_stages")
        return self

    @property
    def load_cycles(self) -> int:
        """Cycles to bring a stationary tile into the array: shifted in a row a cycle, or written at once."""
        return self.rows if self.operand_delivery == "systolic" else 1

    @property
    def skew_cycles(self) -> int:
        """Cycles one fold spends filling and draining: the wavefront across the array, or the pipeline's depth."""
        if self.operand_delivery == "systolic":
            return self.rows + self.cols - 2
        return (self.pipeline_stages or 1) - 1

    @field_validator("elementwise_ops", mode="before")
    @classmethod
    def _known_ops(cls, value: object) -> object:
        if isinstance(value, Mapping):
            unknown = sorted(str(k) for k in value if k not in MAP_OPS)
            if unknown:
                raise ValueError(f"unknown operator(s) {unknown}. Fix: use operators of the einsum language: "
                                 f"{', '.join(sorted(MAP_OPS))}")
            return tuple(sorted(value.items()))
        return value

    @field_validator("accumulator_bits", mode="after")
    @classmethod
    def _accumulator_holds_an_operand(cls, value: int | None, info: ValidationInfo) -> int | None:
        operand = info.data.get("operand_bits")
        if value is not None and operand is not None and value < operand:
            raise ValueError(f"accumulator_bits ({value}) is narrower than operand_bits ({operand}): a partial sum "
                             f"cannot hold one operand. Fix: give at least {operand} (32 for int8 or fp16 "
                             f"operands), or remove accumulator_bits for the 32-bit default")
        return value

    @property
    def accumulator_width_bits(self) -> int:
        """Bits of an open partial sum: `accumulator_bits`, else the cited 32-bit default (field comment)."""
        return self.accumulator_bits if self.accumulator_bits is not None else int(DEFAULT_INT_ACCUMULATOR_BITS.value)

    def elementwise_cycles_per_point(self, einsum: Einsum) -> float:
        """PE cycles per iteration point of a non-contraction einsum (0.0: an operator the PEs lack)."""
        rates = dict(self.elementwise_ops)
        ops = list(map_ops_of(einsum.expr))
        if einsum.reduced_ranks:
            ops.append({"sum": "add", "prod": "mul"}.get(einsum.reduce, einsum.reduce))
        if einsum.op == "mac" or not ops or any(op not in rates for op in ops):
            return 0.0
        return sum(rates[op] for op in ops)

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """rows * cols MACs per cycle for contractions; maps and reductions at the `elementwise_ops` rates."""
        if einsum.op == "mac":
            return float(self.rows * self.cols)
        per_point = self.elementwise_cycles_per_point(einsum)
        return self.rows * self.cols * einsum.ops / (einsum.iteration_points * per_point) if per_point else 0.0

    def peak_macs_per_cycle(self) -> float:
        """One MAC per PE per cycle."""
        return float(self.rows * self.cols)

    def operand_passes(self, einsum: Einsum, workload: Workload) -> int:
        """Cycles a PE takes per MAC of the contraction's operands: ceil(a / operand_bits) x ceil(w / operand_bits)
        (module docstring); 1 for operands no wider than the multipliers."""
        a_access, w_access = gemm_operands(einsum, workload.tensor_map)
        a_bits, w_bits = (workload.tensor_map[access.tensor].bits for access in (a_access, w_access))
        return multiplier_passes(a_bits, w_bits, self.operand_bits)

    def roof_per_cycle(self, einsum: Einsum, workload: Workload) -> float:
        """A contraction's rate at its operands' widths (rows x cols over the passes); others as peak_per_cycle."""
        if einsum.op == "mac":
            return self.peak_per_cycle(einsum) / self.operand_passes(einsum, workload)
        return self.peak_per_cycle(einsum)

    def mac_peak_on(self, einsums: Sequence[Einsum], workload: Workload) -> float:
        """The rate at the contractions' operand widths, weighted by their MACs (`width_weighted_mac_peak`)."""
        return width_weighted_mac_peak(self, einsums, workload)

    def waits_for_first_tiles(self) -> bool:
        """A contraction's cycles are max(compute + fill/drain + first-tile prologue, busiest level)."""
        return True

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Fold timing of the im2col view plus loop-nest traffic of the dataflow (engines/costing.py); maps and
        reductions as elementwise work over rows x cols lanes."""
        if einsum.op != "mac":
            return elementwise_cost(einsum, workload, arch, self, self.rows * self.cols,
                                    einsum.iteration_points * self.elementwise_cycles_per_point(einsum))
        return systolic_cost(einsum, workload, arch, self)

    def register_capacity_bytes(self) -> float:
        """rows x cols x the register bytes of one PE."""
        return self.rows * self.cols * (self.register_bytes_per_pe or 0.0)

    def resident_cost(self, einsum: Einsum, workload: Workload, arch: Arch, resident: frozenset[str]) -> Cost | None:
        """Maps and reductions cost as usual; a contraction runs the dataflow that holds its one resident tensor
        stationary, folds back to back behind one skew (module docstring); None without registers."""
        if not self.register_capacity_bytes():
            return None
        if einsum.op != "mac":
            return self.cost(einsum, workload, arch)
        return systolic_resident_cost(einsum, workload, arch, self, resident)

    def pipeline_tail_cycles(self, einsum: Einsum, workload: Workload, arch: Arch, cost: Cost) -> float:
        """A contraction's last R + C - 2 skew cycles, which the next contraction's operands overlap on a
        double-buffered array (module docstring); none single-buffered, for maps, or while a level is still busy."""
        if einsum.op != "mac" or self.stationary_buffering == "single":
            return 0.0
        skew = self.skew_cycles * arch.clock_hz / arch.engine_clock_hz(self)
        # the next einsum's operands cannot arrive early through a level this one keeps busy to its end
        busiest = max(self.level_busy_cycles(cost, workload, arch).values(), default=0.0)
        return max(0.0, min(skew, cost.fill_drain_cycles, cost.total_cycles - busiest))

    def level_references(self) -> tuple[LevelReference, ...]:
        """The slots `mapper.pin` names: a memory level, or the array's rows or cols."""
        return tuple(LevelReference(("mapper", "pin", i, "slot"), pin.slot, others=("rows", "cols"))
                     for i, pin in enumerate(self.mapper.pin))

    def mapspace(self, einsum: Einsum, workload: Workload, arch: Arch) -> SystolicMapspace | None:
        """A contraction's tilings, loop orders and (`dataflow: any`) dataflows with the exact scorer, for the
        mapper (engines/systolic_mapspace.py), pinned as `mapper.pin` says; None for maps and reductions."""
        if einsum.op != "mac":
            return None
        return systolic_mapspace(einsum, workload, arch, self, pins_for(self.mapper, {r for r, _ in einsum.rank_sizes}))

    def area_mm2(self, node_nm: float) -> float:
        """rows x cols PEs, each a MAC at `operand_bits` with its operand and accumulator storage."""
        return self.rows * self.cols * systolic_pe_area_mm2(self, node_nm)
