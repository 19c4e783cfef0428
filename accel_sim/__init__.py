"""accel-sim: simulator and design-space explorer for deep-learning accelerators.

Public API: `load_arch(path)`, `load_workload(path)`, `evaluate(arch, workload)` -> `Result`;
`sweep(spec, store)` runs a design-space sweep and `load_results(store)` reads it as a DataFrame.
Each name loads its modules on first use (PEP 562), so `import accel_sim` costs no numpy, pydantic or solver.
"""
import importlib
import sys
import types
from typing import TYPE_CHECKING

from accel_sim.errors import AccelSimError, ConfigError, InfeasibleError

if TYPE_CHECKING:
    from accel_sim.dse.store import load_results
    from accel_sim.dse.sweep import run_sweep as sweep
    from accel_sim.evaluate import Result, evaluate
    from accel_sim.io.load import load_arch, load_workload

__all__ = ["AccelSimError", "ConfigError", "InfeasibleError", "Result", "evaluate", "load_arch", "load_results",
           "load_workload", "sweep"]
__version__ = "0.1.0"

# public name -> (module, attribute): the pipeline (numpy, pydantic, the engines) and the sweep machinery
_LAZY = {"Result": ("accel_sim.evaluate", "Result"), "evaluate": ("accel_sim.evaluate", "evaluate"),
         "load_arch": ("accel_sim.io.load", "load_arch"), "load_workload": ("accel_sim.io.load", "load_workload"),
         "load_results": ("accel_sim.dse.store", "load_results"), "sweep": ("accel_sim.dse.sweep", "run_sweep")}


ENGINES = "accel_sim.engines"


def __getattr__(name: str) -> object:
    """A public name's module is imported on first use, then the name is kept here like an eager import."""
    if name not in _LAZY:
        raise AttributeError(f"module 'accel_sim' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    importlib.import_module(ENGINES)  # the engine union completes `Arch` (spec/arch.py) before anything loads one
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, loaded or not."""
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """This package's module type: importing the submodule `accel_sim.evaluate` binds it on the package, which
    would hide the public function `evaluate`; the binding is dropped so the name stays the function."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
