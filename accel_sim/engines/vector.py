"""Vector engine: SIMD lanes for elementwise, reduction, softmax and normalization operators."""
from __future__ import annotations

from typing import Literal

from accel_sim.engines.base import EngineBase
from accel_sim.spec.fields import PositiveInt
from accel_sim.spec.workload import Einsum


class VectorEngine(EngineBase):
    """SIMD lanes for elementwise, reduction, softmax and normalization operators (and MACs)."""

    kind: Literal["vector"]
    lanes: PositiveInt

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """One operator application per lane per cycle, for every operator."""
        return float(self.lanes)
