"""Load an arch and a workload as the CLI names them and evaluate them, so a failure names both files."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from accel_sim.errors import ConfigError, InfeasibleError

if TYPE_CHECKING:
    from accel_sim.evaluate import Result


def evaluate_files(arch: str, workload: str, overrides: Sequence[str], strict: bool = False) -> Result:
    """Evaluate a workload file on an arch file (with --set overrides); an infeasible design names both files, and
    a bad input found while evaluating names the file, line or --set it comes from."""
    # lazy: the pipeline is heavy (numpy, pydantic, the engines), so `accel-sim --help` and `scalesim` skip it
    from accel_sim.evaluate import evaluate, sourced
    from accel_sim.io.load import load_arch, load_workload, resolve, split_overrides

    arch_overrides, workload_overrides = split_overrides(overrides)
    loaded_arch = load_arch(arch, arch_overrides)
    loaded_workload = load_workload(workload, strict=strict, overrides=workload_overrides)
    try:
        return evaluate(loaded_arch, loaded_workload)
    except InfeasibleError as exc:
        # placement and mapping work on loaded specs and cannot know which files the user gave
        given = f" (with --set {', '.join(overrides)})" if overrides else ""
        raise InfeasibleError(f"{resolve(arch, 'arch')} running {resolve(workload, 'workload')}{given}: {exc}"
                              ) from None
    except ConfigError as exc:  # an execution model's check of the arch against the workload, as above
        raise sourced(exc, resolve(arch, "arch"), resolve(workload, "workload"), overrides) from None
