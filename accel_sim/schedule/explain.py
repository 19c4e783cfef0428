"""Why a schedule is infeasible, in plain words: the constraint families at fault and the tensors or engines in them.

The model guards each family with an assumption literal (`model.FAMILIES`); CP-SAT returns a subset of
assumptions sufficient for infeasibility. Each family in that subset is then described by the parts of
the problem that can break it: tensors too large for every memory, required fusions that form a cycle
or put both halves on one engine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from accel_sim.schedule.model import ModelVars, build_model, make_solver

if TYPE_CHECKING:
    from accel_sim.schedule.problem import Problem

_FAMILY_WORDS = {
    "precedence": "precedence (a consumer waits for its producer's data)",
    "no_overlap": "no-overlap (an engine runs one einsum at a time)",
    "placement": "placement (each intermediate tensor is kept on chip, spilled to the backing level or fused)",
    "capacity": "on-chip capacity (live tensors must fit the on-chip buffer)",
    "addresses": "address allocation (live tensors need disjoint address ranges in the on-chip buffer)",
    "fusion": "required fusion (each listed producer-consumer pair runs as one pipeline)",
}


def families_at_fault(problem: Problem, solver: cp_model.CpSolver, v: ModelVars, addresses: bool = True,
                      time_limit_s: float = 2.0) -> tuple[str, ...]:
    """A minimal set of constraint families that is infeasible on its own (deletion filter over CP-SAT's core)."""
    core = set(solver.SufficientAssumptionsForInfeasibility())
    families = [f for f, lit in v.enabled.items() if lit.Index() in core] or list(v.enabled)
    for family in list(families):
        trial = [f for f in families if f != family]
        model, w = build_model(problem, "latency", addresses=addresses)
        model.AddAssumptions([w.enabled[f] for f in trial])
        for f in set(w.enabled) - set(trial):
            model.Add(w.enabled[f] == 0)
        if make_solver(time_limit_s, 0).Solve(model) == cp_model.INFEASIBLE:
            families = trial
    return tuple(families)


def _oversized(problem: Problem) -> list[str]:
    cap, spill = problem.capacity_bytes, problem.spill_capacity_bytes
    lines = []
    for b in problem.buffers:
        fits_chip = cap is None or b.bytes <= cap or (b.tiles and 2 * b.tile_bytes <= cap)
        fits_spill = spill is None or b.bytes <= spill
        if not fits_chip and not fits_spill:
            lines.append(f"tensor '{b.tensor}' ({b.bytes:,} bytes) fits no memory: the on-chip level "
                         f"'{problem.on_chip_level}' holds {cap:,} bytes and the backing level "
                         f"'{problem.spill_level}' {spill:,} bytes")
    return lines


def _fusion_cycle(problem: Problem) -> list[str]:
    import networkx as nx  # networkx is heavy to import: loaded on first use

    g = nx.DiGraph(list(problem.required_fusions))
    g.add_edges_from(problem.edges)
    lines = []
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = []
    required = set(problem.required_fusions)
    if cycle:
        steps = " -> ".join([cycle[0][0]] + [c for _, c in cycle])
        lines.append(f"the required fusions form a cycle {steps}: each einsum must start after the one "
                     f"before it in the cycle, so none can start first "
                     f"(required pairs in it: {', '.join(f'{p}->{c}' for p, c in cycle if (p, c) in required)})")
    for p, c in problem.required_fusions:
        shared = ({o.engine for o in problem.task(p).options} & {o.engine for o in problem.task(c).options})
        if len(problem.task(p).options) == 1 and len(problem.task(c).options) == 1 and shared:
            lines.append(f"required fusion {p}->{c} needs two engines but only engine '{shared.pop()}' can run both")
    return lines


def explain(problem: Problem, solver: cp_model.CpSolver, v: ModelVars, addresses: bool = True) -> str:
    """One paragraph: 'schedule infeasible:', the families at fault, and the tensors or engines in them."""
    families = families_at_fault(problem, solver, v, addresses)
    details = []
    if {"placement", "capacity"} & set(families):
        details += _oversized(problem)
    if "fusion" in families:
        details += _fusion_cycle(problem)
    text = ("schedule infeasible: the constraint families at fault are "
            + "; ".join(_FAMILY_WORDS[f] for f in families) + ".")
    if details:
        text += " " + ". ".join(d[0].upper() + d[1:] for d in details) + "."
    fixes = []
    if {"placement", "capacity"} & set(families):
        fixes.append("give the arch a larger on-chip or backing memory, or split the tensor")
    if "fusion" in families:
        fixes.append("drop one of the required fusions in the cycle")
    if fixes:
        text += " Fix: " + "; or ".join(fixes) + "."
    return text
