"""Vector engine: SIMD lanes for elementwise, reduction, softmax and normalization operators."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from accel_sim.engines.base import EngineBase
from accel_sim.spec.fields import PositiveInt
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Workload


class VectorEngine(EngineBase):
    """SIMD lanes for elementwise, reduction, softmax and normalization operators (and MACs)."""

    kind: Literal["vector"]
    lanes: PositiveInt
    lane_bits: PositiveInt = 16  # datapath width of one lane (fp16 unless the design says otherwise)
    contractions: bool = True    # a SIMD core also multiply-accumulates; a fixed-function activation unit does not

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """One operator application per lane per cycle (contractions only if the unit runs them)."""
        return 0.0 if einsum.op == "mac" and not self.contractions else float(self.lanes)

    def peak_macs_per_cycle(self) -> float:
        """One MAC per lane per cycle."""
        return float(self.lanes)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Operator applications / lanes against the compulsory traffic of every level."""
        from accel_sim.engines.costing import vector_cost

        return vector_cost(einsum, workload, arch, self)

    def area_mm2(self, node_nm: float) -> float:
        """One multiply-accumulate unit per lane at the lane width."""
        from accel_sim.energy import dtype_mac_area_mm2
        from accel_sim.energy.components import dtype_of_bits

        dtype = dtype_of_bits(self.lane_bits)
        return self.lanes * dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
