"""`execution: scheduled`: the architecture's engines run concurrently; the graph scheduler places the einsums
and the replay plays them (accel_sim/schedule/run.py). `evaluate` finds this module by the execution name."""
from accel_sim.schedule.run import evaluate_scheduled

__all__ = ["evaluate_scheduled"]
