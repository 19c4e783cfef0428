"""Fields and behaviour every engine shares."""
from __future__ import annotations

from pydantic import BaseModel, Field

from accel_sim.spec.fields import SPEC_CONFIG, Hertz
from accel_sim.spec.workload import Einsum


class EngineBase(BaseModel):
    """Fields every engine has; subclasses add their parameters, a `kind` tag and their peak."""

    model_config = SPEC_CONFIG

    name: str
    clock_hz: Hertz | None = Field(None, alias="clock")  # None: runs at the arch clock

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """Operator applications per cycle for this einsum; 0.0 means the engine cannot run it."""
        raise NotImplementedError(f"{type(self).__name__} does not define peak_per_cycle")
