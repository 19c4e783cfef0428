"""Graph scheduling: which einsum runs on which engine and when, and where intermediate tensors live.

problem.py builds the problem (light); model.py, cpsat.py, explain.py and periodic.py hold the CP-SAT model and
its solvers, which import ortools (heavy): import them by module, so that a run that schedules nothing never loads
the solver.
"""
