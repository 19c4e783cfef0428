"""accel-sim: simulator and design-space explorer for deep-learning accelerators.

Public API: `load_arch(path)`, `load_workload(path)`, `evaluate(arch, workload)` -> `Result`.
"""
from accel_sim.errors import AccelSimError, ConfigError, InfeasibleError
from accel_sim.evaluate import Result, evaluate
from accel_sim.io.load import load_arch, load_workload

__all__ = ["AccelSimError", "ConfigError", "InfeasibleError", "Result", "evaluate", "load_arch", "load_workload"]
__version__ = "0.1.0"
