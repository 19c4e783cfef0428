"""accel-sim: simulator and design-space explorer for deep-learning accelerators.

Public API: `load_arch(path)`, `load_workload(path)`, `evaluate(arch, workload)` -> `Result`;
`sweep(spec, store)` runs a design-space sweep and `load_results(store)` reads it as a DataFrame.
"""
from typing import TYPE_CHECKING

from accel_sim.errors import AccelSimError, ConfigError, InfeasibleError
from accel_sim.evaluate import Result, evaluate
from accel_sim.io.load import load_arch, load_workload

if TYPE_CHECKING:
    from accel_sim.dse.store import load_results
    from accel_sim.dse.sweep import run_sweep as sweep

__all__ = ["AccelSimError", "ConfigError", "InfeasibleError", "Result", "evaluate", "load_arch", "load_results",
           "load_workload", "sweep"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """The sweep API loads on first use, so `accel-sim run` does not pay for the DSE modules' import."""
    if name == "load_results":
        # lazy: `import accel_sim` for a single run need not load the sweep modules (store, executors, search)
        from accel_sim.dse.store import load_results
        return load_results
    if name == "sweep":
        from accel_sim.dse.sweep import run_sweep  # lazy, as above
        return run_sweep
    raise AttributeError(f"module 'accel_sim' has no attribute {name!r}")
