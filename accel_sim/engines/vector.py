"""Vector engine: SIMD lanes for elementwise, reduction, softmax and normalization operators."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from accel_sim.energy import dtype_mac_area_mm2, regfile_area_mm2
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.base import EngineBase, width_weighted_mac_peak
from accel_sim.engines.costing import vector_cost
from accel_sim.folds import fold_count
from accel_sim.spec.fields import Bytes, PositiveInt
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from collections.abc import Sequence

    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


class VectorEngine(EngineBase):
    """SIMD lanes for elementwise, reduction, softmax and normalization operators (and MACs)."""

    kind: Literal["vector"]
    lanes: PositiveInt
    lane_bits: PositiveInt = 16  # datapath width of one lane (fp16 unless the design says otherwise); wider data
    # spans several lanes (`element_passes`)
    # the lanes' arithmetic: int (fixed point) or fp; None: energy.components.dtype_of_bits's rule
    number: Literal["int", "fp"] | None = None
    contractions: bool = True    # a SIMD core also multiply-accumulates; a fixed-function activation unit does not
    # True: each lane chains an einsum's operators in a pipeline (exp(x - m) in one pass), one iteration point
    # per lane per cycle; False: one operator application per lane per cycle
    chained_ops: bool = False
    # register bytes per lane that can keep a tensor tile between the einsums of a chain on this unit
    register_bytes_per_lane: Bytes | None = Field(None, alias="lane_registers")

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """One operator application per lane per cycle, or one iteration point with `chained_ops` (contractions
        only if the unit runs them)."""
        if einsum.op == "mac":
            return float(self.lanes) if self.contractions else 0.0
        return self.lanes * einsum.ops / einsum.iteration_points if self.chained_ops else float(self.lanes)

    def element_passes(self, einsum: Einsum, workload: Workload) -> int:
        """Lane-cycles per element: data wider than a lane (`lane_bits`) spans ceil(width / lane_bits) lanes, as
        a SIMD register holds half as many 32-bit elements as 16-bit ones; the width is the einsum's widest
        tensor. Narrower data is not packed (one element a lane)."""
        widest = max(workload.tensor_map[t].bits for t in {a.tensor for a in (*einsum.inputs, einsum.output)})
        return fold_count(widest, self.lane_bits)

    def roof_per_cycle(self, einsum: Einsum, workload: Workload) -> float:
        """peak_per_cycle at the einsum's widths (`element_passes`)."""
        return self.peak_per_cycle(einsum) / self.element_passes(einsum, workload)

    def mac_peak_on(self, einsums: Sequence[Einsum], workload: Workload) -> float:
        """The MAC rate at the contractions' widths, weighted by their MACs (`width_weighted_mac_peak`)."""
        return width_weighted_mac_peak(self, einsums, workload)

    def on_cores(self, cores: int) -> VectorEngine:
        """The SIMD lanes of `cores` cores."""
        return self.model_copy(update={"lanes": self.lanes * cores})

    def peak_macs_per_cycle(self) -> float:
        """One MAC per lane per cycle."""
        return float(self.lanes)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Operator applications / lanes against the compulsory traffic of every level."""
        return vector_cost(einsum, workload, arch, self)

    def register_capacity_bytes(self) -> float:
        """lanes x the register bytes of one lane."""
        return self.lanes * (self.register_bytes_per_lane or 0.0)

    def resident_cost(self, einsum: Einsum, workload: Workload, arch: Arch, resident: frozenset[str]) -> Cost | None:
        """The usual cost (the lanes read resident operands from their registers; the scheduler drops the
        accesses); None without registers."""
        return self.cost(einsum, workload, arch) if self.register_capacity_bytes() else None

    def area_mm2(self, node_nm: float) -> float:
        """One multiply-accumulate unit per lane at the lane width and arithmetic, and the lane's registers that
        keep values between einsums (`lane_registers`, flip-flops)."""
        dtype = dtype_of_bits(self.lane_bits, self.number)
        kept = regfile_area_mm2(self.register_bytes_per_lane, node_nm) if self.register_bytes_per_lane else 0.0
        return self.lanes * (dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm) + kept)
