"""Mapping search: CP-SAT (the mapper), exhaustive (the oracle on small spaces) and random (a baseline).

All three score candidates with the same exact, vectorized model (`engines.costing.systolic_scores`) and
always include the mappings the engine's dataflows imply (SCALE-Sim's folds), so a search never returns
something worse than the fixed-dataflow cost.

Cache. A search's chosen mapping is cached under the einsum's shape (`Workload.shape_key`), the engine, the
parts of the arch that decide which mappings are legal (each memory level's name, capacity, technology - which
decides on-chip or off - and the tensor classes it holds), the objective, the method and its limits. Bandwidths,
clocks and access energies are not in the key: a later search that differs from a cached one only in those
skips the search and re-scores the cached mapping, together with the dataflow-implied mappings, on its own
arch with the exact scorer (one small batch), so its costs are exact for the new bandwidths and clocks. The
reused mapping is legal there (same capacities, same array), but it is the optimum found for the arch it was
searched on and may not be the optimum for the new bandwidths, clock or energies. A search on an arch equal to
the one the mapping was found on returns the cached result itself, identical to an uncached run. This is what
lets a sweep over bandwidths and clocks map each layer of a network once per array configuration.
"""
from __future__ import annotations

import itertools
import multiprocessing
import sys
import time
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from accel_sim.engines.costing import (DATAFLOW_CODES, SystolicScores, implied_batch, systolic_analyses,
                                       systolic_cost_of, systolic_scores)
from accel_sim.errors import InfeasibleError
from accel_sim.mapper.mapspace import CHUNK, SystolicSpace, systolic_space
from accel_sim.spec.mapping import Mapping, MappingBatch, concat_batches

if TYPE_CHECKING:
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload

Method = Literal["cpsat", "local", "exhaustive", "random", "dataflow"]
METHODS: tuple[str, ...] = ("cpsat", "local", "exhaustive", "random", "dataflow")


@dataclass(frozen=True)
class SearchStats:
    """How a search went: candidates scored, solver status and the proxy's bound and gap, wall time."""

    method: str
    candidates: int
    space_size: int
    solver_status: str = ""        # CP-SAT: OPTIMAL | FEASIBLE | INFEASIBLE | UNKNOWN
    proxy_objective: float = float("nan")
    proxy_bound: float = float("nan")
    gap: float = float("nan")      # (objective - bound) / objective of the solver's proxy; 0.0 when proven
    wall_s: float = 0.0
    hinted: int = 0                # CP-SAT: dataflows whose solve started from a local-search optimum (hint)
    reused: bool = False           # True: a cached mapping re-scored on this arch (no search ran; see module doc)


@dataclass(frozen=True)
class SearchResult:
    """The best mapping found, its dataflow and exact cost, and the search statistics."""

    mapping: Mapping
    dataflow: str
    cost: Cost
    score: float
    stats: SearchStats


class _Best:
    """Running best over scored batches (keeps the batch row so only the winner becomes a Mapping)."""

    def __init__(self, objective: str) -> None:
        self.objective = objective
        self.score = np.inf
        self.found: tuple[MappingBatch, np.ndarray, SystolicScores, int] | None = None
        self.scored = 0

    def offer(self, batch: MappingBatch, dataflow: np.ndarray, scores: SystolicScores) -> np.ndarray:
        values = scores.objective(self.objective)
        self.scored += len(batch)
        i = int(np.argmin(values))
        if values[i] < self.score:
            self.score = float(values[i])
            self.found = (batch, dataflow, scores, i)
        return values


def score(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, batch: MappingBatch,
          dataflow: np.ndarray) -> SystolicScores:
    """Exact scores of a batch (chunked so that no call holds more than CHUNK candidates' arrays)."""
    if len(batch) <= CHUNK:
        return systolic_scores(einsum, workload, arch, engine, batch, dataflow)
    parts = [systolic_scores(einsum, workload, arch, engine, _rows(batch, slice(s, s + CHUNK)),
                             dataflow[s:s + CHUNK]) for s in range(0, len(batch), CHUNK)]
    return SystolicScores(*(np.concatenate([getattr(p, f) for p in parts])
                            for f in SystolicScores.__dataclass_fields__))


def _rows(batch: MappingBatch, rows: slice | np.ndarray) -> MappingBatch:
    return MappingBatch(batch.rank_names, batch.level_names, batch.axis_names, batch.tensor_names,
                        batch.temporal[rows], batch.order[rows], batch.spatial[rows], batch.bypass[rows],
                        batch.fanout[rows])


@dataclass(frozen=True)
class _Cached:
    """A search's outcome kept for reuse: the arch it ran on, its result, and the re-scoring batch.

    The batch is the winner (row 0) and, unpinned, the dataflow-implied mappings, with its loop-nest analyses,
    which only the key's parts of the arch decide (`costing.systolic_analyses`).
    """

    arch: Arch
    result: SearchResult
    batch: MappingBatch
    dataflow: np.ndarray
    analyses: tuple
    tensors: tuple[str, ...]   # the searched einsum's tensors in shape-key order (a hit renames the cost's records)


_CACHE: dict[tuple, _Cached] = {}
CACHE_LIMIT = 8192  # entries (einsum shapes x array configs); the oldest go first, so long sessions stay bounded
PAIR_LIMIT = 20_000  # two-step moves are tried when they are at most this many candidates (one chunk)
DESCENT_ROUNDS = 20  # local-search moves per start after the solver
STARTS = 8  # best exactly-scored solver solutions that local search starts from
SOLVER_SHARE = 0.2  # of the time limit for CP-SAT (deterministic time); local search takes a candidate budget
BUDGET = 12_000  # candidates the CP-SAT method scores (about 0.1 s): whole networks map in seconds
SAMPLE = 1024  # uniform samples per dataflow whose best SAMPLE_KEEP seed the CP-SAT method's local search
SAMPLE_KEEP = 2
LOCAL_ROUNDS = 1  # moves of the 'local' method: whole networks map in about a second (ResNet-50 on TPU v1)


def search(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine, objective: str = "edp",
           method: Method = "cpsat", time_limit_s: float = 1.0, seed: int = 0,
           pinned: MappingType[str, MappingType[str, int]] | None = None) -> SearchResult:
    """Best mapping of a contraction on a systolic engine for `objective` (latency | energy | edp).

    `method`: 'cpsat' (the CP-SAT mapper, `mapper/cpsat.py`, then exact local search from its solutions),
    'local' (LOCAL_ROUNDS exact local-search moves from the dataflow-implied mappings; deterministic, no
    clock), 'exhaustive' (every mapping),
    'random' (uniform samples until `time_limit_s`), 'dataflow' (only the dataflow-implied mappings).
    `pinned` fixes factors, {rank: {'rows' | 'cols' | level name: factor}}. Raises InfeasibleError naming
    the constraint family and numbers when no candidate fits.
    """
    if objective not in ("latency", "energy", "edp"):
        raise ValueError(f"objective must be latency, energy or edp, got {objective!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    key = (workload.shape_key(einsum)[0], engine, mapping_key(arch), objective, method, time_limit_s, seed,
           tuple(sorted((r, tuple(sorted(s.items()))) for r, s in (pinned or {}).items())))
    cached = _CACHE.get(key)
    if cached is not None:
        if cached.arch == arch:
            # the key ignores names: the cached cost and mapping name the tensors of the einsum searched first
            names = workload.shape_key(einsum)[1]
            if names == cached.tensors:
                return cached.result
            rename = dict(zip(cached.tensors, names))
            return replace(cached.result, cost=cached.result.cost.with_tensor_names(rename),
                           mapping=cached.result.mapping.with_tensor_names(rename))
        return _rescore(cached, einsum, workload, arch, engine, objective)
    start = time.perf_counter()
    best = _Best(objective)
    seeds, seed_flows = implied_batch(einsum, workload, arch, engine)
    if not pinned:
        best.offer(seeds, seed_flows, score(einsum, workload, arch, engine, seeds, seed_flows))
    space = None if method == "dataflow" else systolic_space(einsum, workload, arch, engine, pinned,
                                                             None if pinned else seeds, seed_flows)
    extra: dict[str, object] = {}

    def offer(d: int | np.ndarray, choice: np.ndarray, order: np.ndarray) -> np.ndarray:
        flows = np.broadcast_to(np.asarray(d, dtype=np.int64), (len(choice),)).copy()
        parts = []
        for flow in np.unique(flows):
            rows = flows == flow
            batch = space.batch(int(flow), choice[rows], order[rows])
            parts.append((rows, best.offer(batch, flows[rows], score(einsum, workload, arch, engine, batch,
                                                                   flows[rows]))))
        values = np.empty(len(choice))
        for rows, v in parts:
            values[rows] = v
        return values

    if method == "exhaustive":
        for batch, flows in space.enumerate():
            best.offer(batch, flows, score(einsum, workload, arch, engine, batch, flows))
    elif method == "random":
        rng = np.random.default_rng(seed)
        while True:
            offer(*space.sample(rng, 2048))
            if time.perf_counter() - start >= time_limit_s:
                break
    elif method == "local":  # deterministic (no clock): `run` results must not depend on machine load
        for start_ in _implied_starts(space, seeds, seed_flows):
            _descend(space, *start_, offer, max_rounds=LOCAL_ROUNDS, pairs=False)
    elif method == "cpsat":
        from accel_sim.mapper.cpsat import solve

        # exact local search first (from the implied mappings and the best of a seeded random sample): its
        # optima are the solver's hints, so CP-SAT starts from a solution and reports a bound and gap at once
        rng = np.random.default_rng(seed)
        implied = [] if pinned else _implied_starts(space, seeds, seed_flows)
        for start_ in implied:   # the 'local' method's moves first: never worse than it, whatever the budget
            _descend(space, *start_, offer, max_rounds=LOCAL_ROUNDS, pairs=False)
        starts = implied + _sampled_starts(space, offer, rng)
        spent = lambda: best.scored >= BUDGET   # noqa: E731  (counted, not timed: deterministic)
        optima = _distinct([_descend(space, d, c, o, offer, spent, DESCENT_ROUNDS, pairs=False)
                            for d, c, o in starts])
        hints: dict[int, list[np.ndarray]] = {}
        for _, d, choice, _ in optima:
            hints.setdefault(d, []).append(choice)
        found = solve(space, einsum, workload, arch, engine, objective, time_limit_s * SOLVER_SHARE, seed,
                      reference=_reference(best, einsum, workload, arch, engine), hints=hints)
        extra = found.stats
        polish = optima[:STARTS]
        if len(found.choice):
            values = offer(found.dataflow, found.choice, found.order)
            polish += [(float(values[i]), int(found.dataflow[i]), found.choice[i], found.order[i])
                       for i in np.argsort(values, kind="stable")[:STARTS]]
        for _, d, choice, order in _distinct(polish)[:STARTS]:
            _descend(space, d, choice, order, offer, spent, DESCENT_ROUNDS)
    if best.found is None or not np.isfinite(best.score):
        raise _infeasible(einsum, workload, arch, engine, space)
    batch, flows, scores, i = best.found
    result = SearchResult(batch.mapping(i), DATAFLOW_CODES[int(flows[i])],
                          systolic_cost_of(einsum, workload, arch, engine, scores, i), best.score,
                          SearchStats(method, best.scored, space.size() if space is not None else len(seeds),
                                      wall_s=time.perf_counter() - start, **extra))
    if len(_CACHE) >= CACHE_LIMIT:
        del _CACHE[next(iter(_CACHE))]
    keep, keep_flows = _rows(batch, slice(i, i + 1)), flows[i:i + 1].copy()
    if not pinned:  # re-scored with the winner: a reuse is never worse than the fixed-dataflow cost either
        keep, keep_flows = concat_batches([keep, seeds]), np.concatenate([keep_flows, seed_flows])
    _CACHE[key] = _Cached(arch, result, keep, keep_flows, systolic_analyses(einsum, workload, arch, engine, keep),
                          workload.shape_key(einsum)[1])
    return result


def mapping_key(arch: Arch) -> tuple:
    """The parts of an arch that decide which mappings are legal: per level, name, capacity, technology, holds."""
    return tuple((lv.name, lv.capacity_bytes, lv.technology, lv.holds) for lv in arch.memory)


def _rescore(cached: _Cached, einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
             objective: str) -> SearchResult:
    """The cached winner (and, unpinned, the dataflow-implied mappings) scored exactly on `arch`; best kept."""
    start = time.perf_counter()
    batch, flows = cached.batch, cached.dataflow
    scores = systolic_scores(einsum, workload, arch, engine, batch, flows, analyses=cached.analyses)
    values = scores.objective(objective)
    i = int(np.argmin(values))  # ties go to the cached winner (row 0)
    if not np.isfinite(values[i]):  # cannot happen with equal capacities; raise as a search would
        raise _infeasible(einsum, workload, arch, engine, None)
    old = cached.result.stats
    return SearchResult(batch.mapping(i), DATAFLOW_CODES[int(flows[i])],
                        systolic_cost_of(einsum, workload, arch, engine, scores, i), float(values[i]),
                        SearchStats(old.method, len(batch), old.space_size, wall_s=time.perf_counter() - start,
                                    reused=True))


def _implied_starts(space: SystolicSpace, seeds: MappingBatch, flows: np.ndarray) -> list:
    """The dataflow-implied mappings as (dataflow, option indices, declared orders) local-search starts."""
    out = []
    for i in range(len(seeds)):
        d = int(flows[i])
        choice = space.locate(d, seeds, i)
        if choice is not None:
            out.append((d, choice, np.zeros(len(space.level_names), dtype=np.int64)))
    return out


def _descend(space: SystolicSpace, d: int, choice: np.ndarray, order: np.ndarray, offer, stop=lambda: False,
             max_rounds: int = 1_000, pairs: bool = True) -> tuple[float, int, np.ndarray, np.ndarray]:
    """Exact local search: move to the best neighbour (one rank's option or one level's order) while it improves.

    When no single move improves, two-step moves are tried (if `pairs`): over all options of two ranks when
    that is affordable, else over the options one factor move away (`SystolicSpace.near`). Stops at a local
    optimum, after `max_rounds` moves, or when `stop()` says so (checked between rounds); returns the state
    reached as (value, dataflow, option indices, order indices).
    """
    current = float(offer(d, choice[None], order[None])[0])
    for _ in range(max_rounds):
        if stop():
            break
        choices, orders = space.neighbours(d, choice, order)
        values = offer(d, choices, orders)
        i = int(np.argmin(values))
        if not values[i] < current * (1 - 1e-12):
            if not pairs:
                break
            subsets = None if space.pair_count(d) <= PAIR_LIMIT else space.near(d, choice)
            if space.pair_count(d, subsets) > PAIR_LIMIT:
                break
            choices, orders = space.pair_neighbours(d, choice, order, subsets)   # a wider move out of the optimum
            values = offer(d, choices, orders)
            i = int(np.argmin(values))
            if not values[i] < current * (1 - 1e-12):
                break
        current, choice, order = float(values[i]), choices[i], orders[i]
    return current, d, choice, order


def _sampled_starts(space: SystolicSpace, offer, rng: np.random.Generator) -> list:
    """The best SAMPLE_KEEP of SAMPLE uniformly drawn mappings per dataflow, as local-search starts."""
    out = []
    for _ in space.dataflows:
        d, choice, order = space.sample(rng, SAMPLE)
        values = offer(d, choice, order)
        for i in np.argsort(values, kind="stable")[:SAMPLE_KEEP]:
            if np.isfinite(values[i]):
                out.append((d, choice[i], order[i]))
    return out


def _distinct(states: list) -> list:
    """States (value, dataflow, choice, order) best first, each mapping once."""
    seen, out = set(), []
    for s in sorted(states, key=lambda s: s[0]):
        key = (s[1], s[2].tobytes(), s[3].tobytes())
        if key not in seen and np.isfinite(s[0]):
            seen.add(key)
            out.append(s)
    return out


def search_many(einsums: list[Einsum], workload: Workload, arch: Arch, engine: SystolicEngine,
                objective: str = "edp", method: Method = "cpsat", time_limit_s: float = 1.0, seed: int = 0,
                jobs: int = 1) -> list[SearchResult]:
    """`search` for each einsum, spread over `jobs` forked processes (Linux); results in input order.

    Each search is independent and deterministic, so the results equal a one-process loop's. Worker results
    do not enter this process's cache.
    """
    shared = (workload, arch, engine, objective, method, time_limit_s, seed)
    if jobs <= 1 or len(einsums) <= 1 or not sys.platform.startswith("linux"):
        return [search(e, *shared) for e in einsums]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(jobs, len(einsums)),
                             mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(search, einsums, *(itertools.repeat(v) for v in shared)))


def clear_cache() -> None:
    """Forget cached search results (tests of determinism; long sessions)."""
    _CACHE.clear()


def _reference(best: _Best, einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine
               ) -> tuple[float, float]:
    """(cycles, joules) that normalize the solver's proxy: the dataflow-implied mapping's, when it fits."""
    if best.found is not None and np.isfinite(best.score):
        _, _, scores, i = best.found
        return float(scores.total_cycles[i]), float(scores.energy_j[i])
    batch, flows = implied_batch(einsum, workload, arch, engine)
    scores = systolic_scores(einsum, workload, arch, engine, batch, flows)
    return float(scores.total_cycles.min()), float(scores.energy_j.min())


def _infeasible(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                space: SystolicSpace | None) -> InfeasibleError:
    """The constraint family at fault: empty spatial options, or the smallest tile exceeding a buffer."""
    if space is not None:
        for d in space.dataflows:
            for r, opts in zip(space.rank_names, space.options[d]):
                if len(opts) == 0:
                    return InfeasibleError(
                        f"einsum '{einsum.name}' on '{engine.name}' ({DATAFLOW_CODES[d]}): spatial/PE-count "
                        f"constraints leave rank '{r}' (size {einsum.sizes[r]}) no legal factor on a "
                        f"{engine.rows} x {engine.cols} array with the pinned factors. Fix: pin factors that "
                        f"multiply to at least {einsum.sizes[r]} and fit the array")
    tensors = workload.tensor_map
    smallest = sum(tensors[t].bits for t in {a.tensor for a in (*einsum.inputs, einsum.output)}) / 8
    tight = [(lv.name, lv.capacity_bytes) for lv in arch.memory if lv.capacity_bytes is not None]
    name, capacity = min(tight, key=lambda x: x[1]) if tight else ("?", float("nan"))
    return InfeasibleError(
        f"einsum '{einsum.name}' on '{engine.name}': buffer capacity constraints admit no mapping; the "
        f"smallest level '{name}' holds {capacity:,.0f} bytes, and even single-element tiles of every operand "
        f"({smallest:g} bytes, twice that double-buffered) or the array's operand slices do not fit. "
        f"Fix: raise the capacity of '{name}' or narrow the operands")


def loop_nest_text(result: SearchResult, arch: Arch) -> str:
    """The mapping as a loop nest, one line per loop, level by level (like Timeloop's map.txt)."""
    m = result.mapping
    orders = dict(m.order)
    lines, indent = [], ""
    for level in arch.memory:
        skip = m.bypassed(level.name)
        lines.append(f"{indent}{level.name}" + (f"  [bypass: {', '.join(skip)}]" if skip else ""))
        factors = m.factors(level.name)
        for rank in orders.get(level.name, tuple(factors)):
            if factors.get(rank, 1) > 1:
                lines.append(f"{indent}| for {rank} in [0:{factors[rank]})")
                indent += "  "
    for axis, factors in m.spatial:
        for rank, f in factors:
            if f > 1:
                lines.append(f"{indent}| parallel-for {rank} in [0:{f}) on {axis}")
                indent += "  "
    lines.append(f"{indent}<< MAC, {result.dataflow} dataflow >>")
    return "\n".join(lines)
