"""Design-space exploration: sweep specs, executors, the results store and Pareto analysis."""
from accel_sim.dse.pareto import hypervolume, knee_point, pareto_front, pareto_mask
from accel_sim.dse.spec import Sweep, SweepSpec, load_sweep
from accel_sim.dse.store import export_results, load_results
from accel_sim.dse.point import evaluate_point
from accel_sim.dse.sweep import SweepOutcome, run_sweep

__all__ = ["Sweep", "SweepOutcome", "SweepSpec", "evaluate_point", "export_results", "hypervolume", "knee_point",
           "load_results", "load_sweep", "pareto_front", "pareto_mask", "run_sweep"]
