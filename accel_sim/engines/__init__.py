"""Engine families. Each is a pydantic spec with a `kind` tag; `AnyEngine` is their discriminated union."""
from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from accel_sim.energy.model import NODE_RANGE_NM
from accel_sim.engines.base import EngineBase
from accel_sim.engines.fpga import FpgaEngine
from accel_sim.engines.gpu import GpuEngine
from accel_sim.engines.lut_tensor_core import LutTensorCoreEngine, MacTensorCoreEngine
from accel_sim.engines.pim import PimEngine
from accel_sim.engines.systolic import SystolicEngine
from accel_sim.engines.vector import VectorEngine
from accel_sim.spec.arch import Arch

# New engine families are added to this one line.
AnyEngine = Annotated[Union[SystolicEngine, VectorEngine, LutTensorCoreEngine, MacTensorCoreEngine, PimEngine, FpgaEngine, GpuEngine], Field(discriminator="kind")]

# spec/arch.py names the union only in an annotation (specs sit below engines): bind it here, and the nodes the
# energy tables scale to (specs sit below energy too), which Arch checks technology_nm against
Arch.model_rebuild(_types_namespace={"AnyEngine": AnyEngine, "EngineBase": EngineBase})
Arch.node_range_nm = NODE_RANGE_NM

__all__ = ["AnyEngine", "FpgaEngine", "GpuEngine", "LutTensorCoreEngine", "MacTensorCoreEngine", "PimEngine", "SystolicEngine", "VectorEngine"]
