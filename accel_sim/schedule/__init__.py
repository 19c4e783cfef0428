"""Graph scheduling: which einsum runs on which engine and when, and where intermediate tensors live."""
from accel_sim.schedule.cpsat import Schedule, schedule, solve
from accel_sim.schedule.problem import Buffer, Option, Problem, Task, build_problem

__all__ = ["Buffer", "Option", "Problem", "Schedule", "Task", "build_problem", "schedule", "solve"]
