"""The mapping search as a CP-SAT model, in the spirit of CoSA (Huang et al., ISCA 2021).

Each rank picks one factor option (its spatial factor and temporal factor per level: `systolic_mapspace.py`),
a one-hot choice, so every logarithm of a tile, a fold count or a traffic volume is a linear sum of
integer-scaled logs (scale S per octave). PE counts are exact products of the spatial factors. Buffer
occupancy and the proxy objective leave the log domain through element tables (value = 2^(index / S)),
which keeps them linear:
- capacity: for every on-chip level, the double-buffered tiles of the tensors it keeps fit (tile logs
  rounded up, sliding windows bounded by the product of their ranks' tiles: a conservative test);
- latency proxy: the larger of the array's cycles (temporal iterations + fill/drain per fold) and each
  level's traffic time (tile x the iterations of every loop above it, CoSA's bound that loop order refines);
- energy proxy: that traffic at each level's per-bit energies; EDP proxy: latency + energy, both
  normalized to the dataflow-implied mapping (1e6 units each).
Before the model is built, options another option of the same rank dominates (no larger in any coefficient the
proxy reads: `undominated`) are dropped, and once a hint's value V is known every term of the goal is capped at
1.1 V (no term of a goal exceeds it), which cuts the element tables to the octaves around the optimum; neither
changes the proxy's optimum or bound, and both shrink what presolve has to expand (ResNet-18 on tpu_like: 11
of 12 layers proven optimal within 0.05 s of deterministic time, against none before).
The solver proves an optimum of the proxy (or reports its bound and gap); the near-optimal solutions
(within 10% of the proxy optimum, at most MAX_SOLUTIONS) are expanded over loop orders and scored exactly
by the engine in one batch, and the mapper (`accel_sim.mapper.search`) refines the best of them by exact local
search. It is the proxy hook of the systolic mapspace (`SystolicMapspace.proxy`). Runs are deterministic: one
worker, a fixed seed and a deterministic-time limit.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from accel_sim.energy.components import is_off_chip, level_energy_per_bit
from accel_sim.engines.loopnest import access_of
from accel_sim.engines.systolic_space import COLS, ROWS, TIME, SystolicSpace, distinct_orders
from accel_sim.spec.mapspace import ProxyFound

if TYPE_CHECKING:
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload


def new_solver(seed: int) -> cp_model.CpSolver:
    """A CP-SAT solver of one worker and a fixed seed (deterministic) that leaves Ctrl-C to Python: by default
    CP-SAT catches SIGINT and returns its best solution so far, so an interrupted run finished with exit 0 and
    other numbers than an uninterrupted one, and a sweep stored them."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.catch_sigint_signal = False
    return solver


S = 8                  # log scale: 8 steps per octave (a rounded tile log is within 9% per rank)
UNIT = 1_000_000       # proxy units of the reference mapping's cycles and energy
MAX_SOLUTIONS = 24     # near-optimal solutions expanded over orders and scored exactly
WALL_FACTOR = 2       # the limit is CP-SAT's deterministic time (same answer on a busy machine); wall <= 2x
NEAR = 1.10            # near-optimal: proxy within 10% of the best found
PROBING = 0            # presolve probing off: on conv-sized models it takes most of a solve and rarely fixes much;
PRESOLVE_ROUNDS = 1    # presolve rounds of a large model (no symmetry detection either): ResNet-18's main solves
#                        take 15% less CPU with the same 11 of 12 layers proven
USUAL_ROUNDS = 3       # CP-SAT's default max_presolve_iterations
FULL_PRESOLVE = 10**5  # factor-option combinations (after `undominated`) up to which presolve runs its usual rounds:
#                        on small models it is what proves the optimum (one round leaves issue 15's conv unsolved)
MIN_SOLVE = 0.03       # deterministic s the main solve gets at least: loading a complete hint takes about 0.03 s
MIN_SOLVE_WALL = 1.0   # and wall s: presolve's work is not deterministic time, and a loaded machine must not stop
#                        it before the hint is in (the hint is then the FEASIBLE answer, with the bound so far)
HINTS_TRIED = 4        # hint candidates checked against the model per dataflow (the proxy's capacity test is
HINT_TIME = 0.05       # conservative, so an exactly-fitting mapping may be outside it); deterministic s each


def _log_up(v: np.ndarray) -> np.ndarray:
    return np.ceil(S * np.log2(np.maximum(v, 1)) - 1e-9).astype(np.int64)


def _log_round(v: np.ndarray) -> np.ndarray:
    return np.round(S * np.log2(np.maximum(v, 1))).astype(np.int64)


def _exp_table(top: int, scale: float, up: bool = False) -> list[int]:
    values = scale * np.exp2(np.arange(top + 1) / S)
    return (np.ceil(values) if up else np.round(values)).astype(np.int64).tolist()


def _linear(x: list[list[cp_model.IntVar]], coeffs: list[np.ndarray]) -> tuple[cp_model.LinearExpr, int, int]:
    """(sum over ranks of the chosen option's coefficient, lower bound, upper bound)."""
    expr = sum(cp_model.LinearExpr.weighted_sum(xs, [int(c) for c in cs]) for xs, cs in zip(x, coeffs) if len(xs))
    lo = sum(int(cs.min()) for cs in coeffs if len(cs))
    hi = sum(int(cs.max()) for cs in coeffs if len(cs))
    return expr, lo, hi


def _exp_of(model: cp_model.CpModel, expr: cp_model.LinearExpr, lo: int, hi: int, scale: float, up: bool = False,
            cap: int | None = None) -> cp_model.IntVar:
    """A variable equal to scale * 2^(expr / S) (element table over the expression's range), at most `cap`.

    A cap cuts the index's domain where the value exceeds it: presolve's cost grows with the table's distinct
    values, most of which (mappings thousands of times the optimum) a cap leaves out.
    """
    lo = max(lo, 0)
    table = _exp_table(max(hi, lo), scale, up)
    if cap is not None:
        hi = min(hi, max(lo, int(np.searchsorted(table, cap, side="right")) - 1))
        table = table[:max(hi, lo) + 1]
    index = model.new_int_var(lo, max(hi, lo), "")
    model.add(index == expr)
    value = model.new_int_var(table[lo], table[-1], "")
    model.add_element(index, table, value)
    return value


def choose_options(model: cp_model.CpModel, space: SystolicSpace, d: int) -> list[list[cp_model.IntVar]]:
    """One factor option per rank (exactly one boolean per rank is true)."""
    x = []
    for r, opts in enumerate(space.options[d]):
        xs = [model.new_bool_var(f"x{r}_{o}") for o in range(len(opts))]
        model.add_exactly_one(xs)
        x.append(xs)
    return x


def pe_count(model: cp_model.CpModel, space: SystolicSpace, d: int, x: list) -> None:
    """The spatial factors on each array axis multiply to at most its PEs (exact products)."""
    for axis, size in ((ROWS, space.rows), (COLS, space.cols)):
        factors = []
        for r in np.flatnonzero(space.places[d] == axis):
            opts = space.options[d][r][:, 0]
            var = model.new_int_var(int(opts.min()), int(opts.max()), "")
            model.add(var == cp_model.LinearExpr.weighted_sum(x[r], [int(v) for v in opts]))
            factors.append(var)
        if len(factors) > 1:
            product = model.new_int_var(1, size, "")
            model.add_multiplication_equality(product, factors)


def _tile_logs(space: SystolicSpace, d: int, einsum: Einsum, tensor: str, level: int,
               shape: tuple[int, ...]) -> list[tuple[list[np.ndarray], int | None]]:
    """Per tensor dimension: (per-rank log coefficients of its tile at `level`, extent cap for windows)."""
    access = access_of(einsum, tensor)
    r_ix = {r: i for i, r in enumerate(space.rank_names)}
    dims = []
    for index, extent in zip(access.indices, shape):
        terms = [r_ix[r] for r, c in index.terms if c != 0]
        if not terms:
            continue
        coeffs = []
        for r in range(len(space.rank_names)):
            opts = space.options[d][r]
            tile = opts[:, 0] * opts[:, 1 + level:].prod(axis=1)
            coeffs.append(_log_up(np.minimum(tile, space.sizes[r])) if r in terms else np.zeros(len(opts), np.int64))
        dims.append((coeffs, int(_log_up(np.array([extent]))[0]) if len(terms) > 1 else None))
    return dims


def _tile_log_expr(model: cp_model.CpModel, x: list, dims: list) -> tuple[cp_model.LinearExpr, int, int]:
    """Log of a tile's elements: the sum over its dimensions, windows capped at the tensor's extent."""
    total, lo_all, hi_all = 0, 0, 0
    for coeffs, cap in dims:
        expr, lo, hi = _linear(x, coeffs)
        if cap is not None and cap < hi:
            capped = model.new_int_var(min(lo, cap), cap, "")
            model.add_min_equality(capped, [expr, cap])
            expr, lo, hi = capped, min(lo, cap), cap
        total, lo_all, hi_all = total + expr, lo_all + lo, hi_all + hi
    return total, lo_all, hi_all


def buffer_capacity(model: cp_model.CpModel, space: SystolicSpace, d: int, x: list, einsum: Einsum,
                    workload: Workload, arch: Arch) -> dict[tuple[int, int], tuple]:
    """Each on-chip level holds its tensors' double-buffered tiles; returns the tile logs for traffic."""
    tensors = workload.tensor_map
    tiles = {}
    for li, level in enumerate(arch.memory):
        parts = []
        for ti, name in enumerate(space.tensor_names):
            if space.bypass[li, ti]:
                continue
            dims = _tile_logs(space, d, einsum, name, li, tensors[name].shape)
            expr, lo, hi = _tile_log_expr(model, x, dims)
            tiles[(li, ti)] = (expr, lo, hi)
            if not is_off_chip(level):
                parts.append(_exp_of(model, expr, lo, hi, 2 * tensors[name].bits / 8, up=True,
                                     cap=int(level.room_bytes)))
        if parts and not is_off_chip(level):
            model.add(sum(parts) <= int(level.room_bytes))
    return tiles


def array_cycles(model: cp_model.CpModel, space: SystolicSpace, d: int, x: list, engine: SystolicEngine,
                 arch: Arch, ref_cycles: float, cap: int | None = None, passes: int = 1) -> cp_model.IntVar:
    """Temporal iterations (each `passes` cycles: operands wider than the multipliers) plus fill/drain per fold
    (folds = iterations / streamed rows), in proxy units; with a double-buffered stationary operand,
    max(iterations, folds x rows). Each part is at most `cap`."""
    total_c, time_c = [], []
    for r, opts in enumerate(space.options[d]):
        total_c.append(_log_round(opts[:, 1:].prod(axis=1)))
        time_c.append(_log_round(opts[:, -1]) if space.places[d, r] == TIME else np.zeros(len(opts), np.int64))
    ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    overhead = engine.skew_cycles if d == 0 else engine.load_cycles + engine.skew_cycles
    total, lo, hi = _linear(x, total_c)
    folds, flo, fhi = _linear(x, [t - s for t, s in zip(total_c, time_c)])
    scale = ratio * UNIT / ref_cycles
    iterations = _exp_of(model, total, lo, hi, scale * passes, cap=cap)
    cycles = model.new_int_var(0, 2**50, "")
    if engine.stationary_buffering == "double":
        # pipelined folds (engines/systolic.py hidden_fold_cycles): each fold costs max(T, load), so the array takes
        # max(iterations, folds x load) plus one fold's fill, a constant the proxy leaves out; `cycles` only bounds
        # the minimized latency from below, so two lower bounds state the max
        model.add(cycles >= iterations)
        model.add(cycles >= _exp_of(model, folds, min(flo, 0), fhi, scale * engine.load_cycles, cap=cap))
        return cycles
    fill = _exp_of(model, folds, min(flo, 0), fhi, scale * overhead, cap=cap)
    model.add(cycles == iterations + fill)
    return cycles


def traffic(model: cp_model.CpModel, space: SystolicSpace, d: int, x: list, tiles: dict, workload: Workload,
            arch: Arch, engine: SystolicEngine, ref_cycles: float, ref_energy: float,
            caps: tuple[int | None, int | None] = (None, None)) -> tuple[list, list]:
    """(per-level traffic time, energy terms) in proxy units: each kept tile times the loops above its level;
    each time term at most caps[0], each energy term at most caps[1]."""
    tensors = workload.tensor_map
    n_l = len(arch.memory)
    energy_bit = [level_energy_per_bit(lv, arch.technology_nm) for lv in arch.memory]
    level_time: list[list] = [[] for _ in range(n_l)]
    energy = []
    for ti, name in enumerate(space.tensor_names):
        kept = [li for li in range(n_l) if not space.bypass[li, ti]]
        bits = tensors[name].bits
        for child, parent in zip(kept[1:], kept[:-1]):
            expr, lo, hi = tiles[(child, ti)]
            outer_c = [_log_round(opts[:, 1:1 + child].prod(axis=1)) for opts in space.options[d]]
            outer, olo, ohi = _linear(x, outer_c)
            # the parent reads the element, the child is written with it; a proxy that adds the two directions
            for li, per_bit, moved in ((parent, energy_bit[parent][0], (bits / 8, 0.0)),
                                       (child, energy_bit[child][1], (0.0, bits / 8))):
                cycles_per_element = engine.transfer_cycles(*moved, arch.memory[li], arch)
                level_time[li].append(_exp_of(model, expr + outer, lo + olo, hi + ohi,
                                              cycles_per_element * UNIT / ref_cycles, cap=caps[0]))
                if per_bit > 0:
                    energy.append(_exp_of(model, expr + outer, lo + olo, hi + ohi, bits * per_bit * UNIT / ref_energy,
                                          cap=caps[1]))
    return level_time, energy


def undominated(space: SystolicSpace, d: int, einsum: Einsum, workload: Workload, arch: Arch
                ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per rank: the options no other option dominates in the proxy, and for each option the position (among
    those kept) of one that dominates it or is it.

    Every term and constraint of the proxy is nondecreasing in each linear form it reads (spatial factors on an
    array axis, log iterations and folds, each windowed tile dimension, each level's uncapped tile log and
    tile-plus-outer-loops log), and each form is a sum over ranks; an option no larger than another in all of
    its rank's coefficients is as good and fits wherever the other does, so dropping the other keeps the
    proxy's optimum and bound (ties keep the first).
    """
    tensors = workload.tensor_map
    n_r, n_l = len(space.rank_names), len(arch.memory)
    opts = space.options[d]
    cols: list[list[np.ndarray]] = [[] for _ in range(n_r)]

    def add(coeffs: list[np.ndarray]) -> None:
        for r in range(n_r):
            cols[r].append(coeffs[r])

    zero = [np.zeros(len(o), np.int64) for o in opts]
    add([o[:, 0] if space.places[d, r] in (ROWS, COLS) else zero[r] for r, o in enumerate(opts)])
    total = [_log_round(o[:, 1:].prod(axis=1)) for o in opts]
    add(total)
    add([t - (_log_round(o[:, -1]) if space.places[d, r] == TIME else 0) for r, (t, o) in enumerate(zip(total, opts))])
    for ti, name in enumerate(space.tensor_names):
        kept = [li for li in range(n_l) if not space.bypass[li, ti]]
        for li in kept:
            dims = _tile_logs(space, d, einsum, name, li, tensors[name].shape)
            for coeffs, cap in dims:
                if cap is not None:
                    add(coeffs)
            plain = [sum((c[r] for c, cap in dims if cap is None), zero[r]) for r in range(n_r)]
            if not is_off_chip(arch.memory[li]):
                add(plain)
            if li != kept[0]:
                add([p + _log_round(o[:, 1:1 + li].prod(axis=1)) for p, o in zip(plain, opts)])
    keep, where = [], []
    for r in range(n_r):
        kept_r, where_r = _pareto(np.stack(cols[r], axis=1))
        keep.append(kept_r)
        where.append(where_r)
    return keep, where


def _pareto(sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of `sig` no other row is no larger than, and for every row the position among those of one no larger
    than it), ties keeping the first.

    Rows are visited by increasing sum (a row that beats another has a smaller sum, or an equal one and comes
    first), so each is checked against the rows kept so far only: n x kept comparisons, not n^2.
    """
    order = np.lexsort((np.arange(len(sig)), sig.sum(axis=1)))
    kept: list[int] = []
    front = np.empty((0, sig.shape[1]), dtype=sig.dtype)
    where = np.empty(len(sig), dtype=np.int64)
    for i in order:
        hit = np.flatnonzero((front <= sig[i]).all(axis=1)) if len(kept) else ()
        if len(hit):
            where[i] = hit[0]
            continue
        where[i] = len(kept)
        kept.append(int(i))
        front = sig[kept]
    positions = np.argsort(kept)            # report the kept rows in index order, and positions among them
    rank = np.empty(len(kept), dtype=np.int64)
    rank[positions] = np.arange(len(kept))
    return np.array(kept, dtype=np.int64)[positions], rank[where]


def _model(space: SystolicSpace, d: int, einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
           objective: str, reference: tuple[float, float], caps: tuple[int | None, int | None]
           ) -> tuple[cp_model.CpModel, list, cp_model.LinearExpr]:
    """(model, choice booleans, goal) of dataflow `d`: latency terms at most caps[0], energy terms caps[1]."""
    ref_cycles, ref_energy = reference
    model = cp_model.CpModel()
    x = choose_options(model, space, d)
    pe_count(model, space, d, x)
    tiles = buffer_capacity(model, space, d, x, einsum, workload, arch)
    cycles = array_cycles(model, space, d, x, engine, arch, ref_cycles, caps[0],
                          engine.operand_passes(einsum, workload))
    level_time, energy = traffic(model, space, d, x, tiles, workload, arch, engine, ref_cycles, ref_energy, caps)
    latency = model.new_int_var(0, 2**50, "latency")
    model.add(latency >= cycles)
    for terms in level_time:
        if terms:
            model.add(latency >= sum(terms))
    energy_sum = sum(energy) if energy else 0
    goal = {"latency": latency, "energy": energy_sum}.get(objective, latency + energy_sum)
    model.minimize(goal)
    return model, x, goal


def solve(space: SystolicSpace, einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
          objective: str, time_limit_s: float, seed: int, reference: tuple[float, float],
          hints: dict[int, list[np.ndarray]] | None = None) -> ProxyFound:
    """Solve the proxy per allowed dataflow; return the near-optimal mappings expanded over loop orders.

    `hints` gives per dataflow candidate choices of option indices, best first (local-search optima): the first
    one the model admits, completed to every variable, is CP-SAT's starting solution, so even a tight limit
    ends with a solution, a bound and a gap (stats `hinted`: dataflows that started from a hint).
    """
    ref_cycles, ref_energy = (max(v, 1e-30) for v in reference)
    flows, picks, orders = [], [], []
    statuses, objectives, bounds, hinted_flows = [], [], [], 0
    for d in space.dataflows:
        if any(len(o) == 0 for o in space.options[d]):
            statuses.append("INFEASIBLE")
            continue
        keep, where = undominated(space, d, einsum, workload, arch)
        kept = replace(space, options=tuple(tuple(o[k] for o, k in zip(space.options[d], keep)) if f == d else opts
                                             for f, opts in enumerate(space.options)))
        shape = (kept, d, einsum, workload, arch, engine, objective, (ref_cycles, ref_energy))
        model, x, goal = _model(*shape, (None, None))
        tried = [np.array([w[c] for w, c in zip(where, choice)]) for choice in (hints or {}).get(d, [])[:HINTS_TRIED]]
        hint = _complete_hint(model, x, tried, seed)
        hinted_flows += hint is not None
        hinted = None
        if hint is not None:
            # no term of the goal exceeds the goal, so none of a mapping within NEAR of the optimum exceeds NEAR x
            # the hint's value: that cap cuts the element tables to the few octaves around the optimum (the same
            # optimum, bound and near-optimal set; the model is rebuilt, variable for variable, and re-hinted)
            cap = int(hint[1] * NEAR) + 1
            caps = (None if objective == "energy" else cap, None if objective == "latency" else cap)
            model, x, goal = _model(*shape, caps)
            for i, value in enumerate(hint[0]):
                model.add_hint(model.get_int_var_from_proto_index(i), value)
            hinted = (tuple(int(np.argmax([hint[0][v.index] for v in xs])) for xs in x), hint[1])
        rounds = PRESOLVE_ROUNDS if math.prod(len(k) for k in keep) > FULL_PRESOLVE else USUAL_ROUNDS
        status, choices, value, bound = _run(model, x, goal, time_limit_s / len(space.dataflows), seed, hinted, rounds)
        statuses.append(status)
        if choices:
            objectives.append(value)
            bounds.append(bound)
            pick, order = _expand(space, d, [tuple(int(k[c]) for k, c in zip(keep, choice)) for choice in choices])
            flows.append(np.full(len(pick), d, dtype=np.int64))
            picks.append(pick)
            orders.append(order)
    stats = {"solver_status": _overall(statuses), "hinted": hinted_flows}
    if objectives:
        obj, bnd = min(objectives), min(bounds)
        stats.update(proxy_objective=float(obj), proxy_bound=float(bnd),
                     gap=float((obj - bnd) / obj) if obj > 0 else 0.0)
    if not flows:
        return ProxyFound(np.zeros(0, np.int64), np.zeros((0, len(space.rank_names)), np.int64),
                          np.zeros((0, len(space.level_names)), np.int64), stats)
    return ProxyFound(np.concatenate(flows), np.concatenate(picks), np.concatenate(orders), stats)


def _complete_hint(model: cp_model.CpModel, x: list, candidates: list[np.ndarray], seed: int
                   ) -> tuple[list[int], float] | None:
    """Hint every variable with the first candidate choice the model admits; (every variable's value, the
    goal's value) of that hint, or None when no candidate fits.

    A hint of the choice booleans alone leaves CP-SAT to complete the auxiliary log/element variables, which
    it often cannot do within a tight limit; solving with the choice fixed (propagation only) completes it.
    """
    for choice in candidates:
        model.clear_hints()
        for r, pick in enumerate(choice):
            for o, var in enumerate(x[r]):
                model.add_hint(var, o == pick)
        solver = new_solver(seed)
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.max_deterministic_time = HINT_TIME
        if solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            model.clear_hints()
            values = [solver.value(model.get_int_var_from_proto_index(i)) for i in range(len(model.proto.variables))]
            return values, solver.objective_value
    model.clear_hints()
    return None


class _Collector(cp_model.CpSolverSolutionCallback):
    """Records the chosen option per rank of every solution the solver reports."""

    def __init__(self, x: list, limit: int) -> None:
        super().__init__()
        self.x, self.limit, self.found = x, limit, []

    def on_solution_callback(self) -> None:
        self.found.append(tuple(next(i for i, v in enumerate(xs) if self.boolean_value(v)) for xs in self.x))
        if len(self.found) >= self.limit:
            self.stop_search()


def _run(model: cp_model.CpModel, x: list, goal, time_limit_s: float, seed: int,
         hinted: tuple[tuple[int, ...], float] | None = None, rounds: int = USUAL_ROUNDS
         ) -> tuple[str, list[tuple[int, ...]], float, float]:
    """Optimize, then enumerate near-optimal solutions; (status, choices, objective, bound).

    `hinted` is the hint's (choice, goal value): should the limit end before the presolved model has loaded it
    (UNKNOWN), the hint is still a solution, so the result is FEASIBLE with it and the solver's proven bound.
    `rounds`: presolve rounds of the main solve.
    """
    solver = new_solver(seed)
    solver.parameters.cp_model_probing_level = PROBING
    solver.parameters.max_presolve_iterations = rounds
    solver.parameters.symmetry_level = 0
    solver.parameters.max_deterministic_time = max(time_limit_s * 0.8, MIN_SOLVE)
    solver.parameters.max_time_in_seconds = max(WALL_FACTOR * time_limit_s * 0.8, MIN_SOLVE_WALL)
    collector = _Collector(x, 10**9)
    status = solver.solve(model, collector)
    name = solver.status_name(status)
    if status == cp_model.UNKNOWN and hinted is not None:
        collector.found.append(hinted[0])
        name, value, bound = "FEASIBLE", hinted[1], min(solver.best_objective_bound, hinted[1])
    elif status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return name, [], math.nan, math.nan
    else:
        value, bound = solver.objective_value, solver.best_objective_bound
    model.add(goal <= int(value * NEAR) + 1)
    model.clear_objective()
    near = new_solver(seed)
    near.parameters.max_deterministic_time = max(time_limit_s * 0.2, 1e-3)
    near.parameters.max_time_in_seconds = max(WALL_FACTOR * time_limit_s * 0.2, 1e-3)
    near.parameters.enumerate_all_solutions = True
    # no presolve: the enumeration gets a fifth of the limit, and on conv-sized models presolve took most of it
    near.parameters.cp_model_presolve = False
    more = _Collector(x, MAX_SOLUTIONS)
    near.solve(model, more)
    choices = list(dict.fromkeys(collector.found[-MAX_SOLUTIONS:] + more.found))
    return name, choices, value, bound


def _expand(space: SystolicSpace, d: int, choices: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(option indices, order indices): each solution with every loop-order combination that differs in effect."""
    rows, orders = [], []
    for choice in choices:
        temporal = np.stack([space.options[d][r][c, 1:] for r, c in enumerate(choice)], axis=1)   # (L, R)
        for combo in distinct_orders(space, d, temporal):
            rows.append(choice)
            orders.append(combo)
    return np.array(rows, dtype=np.int64), np.array(orders, dtype=np.int64)


def _overall(statuses: list[str]) -> str:
    """OPTIMAL when every dataflow is solved or proven infeasible, else the weakest status."""
    if "FEASIBLE" in statuses:
        return "FEASIBLE"
    if "OPTIMAL" in statuses and set(statuses) <= {"OPTIMAL", "INFEASIBLE"}:
        return "OPTIMAL"
    if statuses and set(statuses) == {"INFEASIBLE"}:
        return "INFEASIBLE"
    return "UNKNOWN"
