"""accel-sim: simulator and design-space explorer for deep-learning accelerators.

Public API: `load_arch(path)`, `load_workload(path)`, `evaluate(arch, workload)` -> `Result`;
`sweep(spec, store)` runs a design-space sweep and `load_results(store)` reads it as a DataFrame.
"""
from accel_sim.errors import AccelSimError, ConfigError, InfeasibleError
from accel_sim.evaluate import Result, evaluate
from accel_sim.io.load import load_arch, load_workload
from accel_sim.dse.store import load_results
from accel_sim.dse.sweep import run_sweep as sweep

__all__ = ["AccelSimError", "ConfigError", "InfeasibleError", "Result", "evaluate", "load_arch", "load_results",
           "load_workload", "sweep"]
__version__ = "0.1.0"
