"""Mapping search, engine-agnostic: CP-SAT (the mapper), local, exhaustive (the oracle on small spaces), random.

An engine hands the mapper a mapspace (`spec.mapspace.Mapspace`: its legal choices and an exact, vectorized
scorer, `EngineBase.mapspace`); the search only enumerates, samples and walks its index space, scoring every
candidate with that scorer. Every method first scores the engine's default mappings (for a systolic array, the
mappings its dataflows imply: SCALE-Sim's folds), so a search never returns something worse than `engine.cost`.
`best_cost` is the pipeline stage: the best mapping and cost of an einsum on an engine, or the engine's own
cost when it has no choices.

Cache (`MapperCache`, passed in explicitly). A search's chosen mapping is kept under the mapspace's key - the
einsum's shape (`Workload.shape_key`), the engine, the parts of the arch that decide which mappings are legal
(each memory level's name, capacity, technology - which decides on-chip or off - and the tensor classes it
holds) and the pins - with the objective, the method and its limits. Bandwidths, clocks and access energies
are not in the key: a later search that differs from a cached one only in those skips the search and
re-scores the cached mapping, together with the default mappings, on its own arch with the exact scorer (one
small batch), so its costs are exact for the new bandwidths and clocks. The reused mapping is legal there
(same capacities, same array), but it is the optimum found for the arch it was searched on and may not be the
optimum for the new bandwidths, clock or energies. A search on an arch equal to the one the mapping was found
on returns the cached result itself, identical to an uncached run. This is what lets a sweep over bandwidths
and clocks map each layer of a network once per array configuration.

A design that differs in a capacity is a new problem and is searched again, but not from scratch: the cache's
`shelf` keeps, per mapspace structure (the key without capacities), the work that structure alone decides - the
legal candidates and the part of their scores that capacities, bandwidths, clocks and energies do not change
(`Mapspace.shared`; for a systolic array, the loop-nest analyses and fold timing). The search then scores the same
candidates with the same exact scorer, so its result is identical to an uncached one; only the work is shared.
Bounds keep different candidates of a batch on each capacity, so a search scores the ones it keeps as rows of the
batch (`Mapspace.score_rows`), and a scorer may keep its work per row: a systolic array's capacity variants then
prepare only the rows no earlier design of the structure scored.

Bounds. Where a mapspace gives each candidate a cheap lower bound on its score (`Mapspace.bounds`; a systolic
array's: its fold timing against the compulsory traffic at each tensor's backing store), the 'local' method scores
the least-bounded few first and then only the candidates whose bound does not exceed their best: the others score
above it. A descent (`_descend`) scores only the moves whose bound is below the value it stands at: no other move
is taken. The result, its ties and the order they break in are those of scoring every candidate, and a budget
counts the candidates passed over as well as those scored, so it ends where it did; on TPU v1 about a sixth of
ResNet-50's, BERT-base's and Llama-2-7B's candidates are scored, and the CP-SAT method on ResNet-18 (ZigZag's
tpu_like) scores 44 thousand where it scored 156 thousand.
"""
from __future__ import annotations

import itertools
import math
import multiprocessing
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from accel_sim.errors import ConfigError
from accel_sim.spec.mapspace import AxisLayout, Candidates, Mapspace, Scores, concat_scores, no_moves, tie_break

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.mapper.rooms import RoomChecks
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.mapping import Mapping
    from accel_sim.spec.workload import Einsum, Workload

Method = Literal["cpsat", "local", "exhaustive", "random", "dataflow"]
METHODS: tuple[str, ...] = ("cpsat", "local", "exhaustive", "random", "dataflow")
CHUNK = 20_000  # candidates per scored batch: about 0.3 GB of loop-nest arrays at 7 ranks and 4 levels
CACHE_LIMIT = 8192  # entries (einsum shapes x array configs); the oldest go first, so long sessions stay bounded
SHELF_LIMIT = 32  # structures whose shared work a cache keeps (~3 KiB per kept candidate): a design's distinct shapes
PAIR_LIMIT = 20_000  # two-step moves are tried when they are at most this many candidates (one chunk)
DESCENT_ROUNDS = 20  # local-search moves per start after the solver
STARTS = 8  # best exactly-scored solver solutions that local search starts from
SOLVER_SHARE = 0.2  # of the time limit for CP-SAT (deterministic time); local search takes a candidate budget
BUDGET = 12_000  # candidates the CP-SAT method scores (about 0.1 s): whole networks map in seconds
SAMPLE = 1024  # uniform samples per group whose best SAMPLE_KEEP seed the CP-SAT method's local search
SAMPLE_KEEP = 2
# Exhaustive search scores every mapping (0.47 M a second measured: a GEMM on TPU v1, one core) and proves its
# optimum only by finishing, so a space it cannot score within the time limit is refused before it starts (993 M
# mappings of a 1024^3 GEMM on TPU v1 would take half an hour; the limit was ignored)
EXHAUSTIVE_MAPPINGS_PER_S = 500_000
LOCAL_ROUNDS = 1  # moves of the 'local' method: whole networks map in about a second (ResNet-50 on TPU v1)
# the 'local' method's batch scores first the PROBE candidates of least bound (`Mapspace.bounds`); the best of those
# is the bar every other candidate's bound must reach to be scored at all
PROBE = 256
BOUND_SLACK = 1e-9  # relative: a bound that equals a score, summed in another order, may round above it

Offer = Callable[..., np.ndarray]   # offer(group(s), choices, orders, bar=None) -> objective values
State = tuple[float, int, np.ndarray, np.ndarray]   # (value, group, choice, order)


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
    hinted: int = 0                # CP-SAT: groups whose solve started from a local-search optimum (hint)
    reused: bool = False           # True: a cached mapping re-scored on this arch (no search ran; see module doc)


@dataclass(frozen=True)
class SearchResult:
    """The best mapping found, its group's label (e.g. 'ws dataflow'), its exact cost and the search statistics;
    `layout` is the spatial layout the cost assumed where the mapping's per-rank factors do not state it."""

    mapping: Mapping
    variant: str
    cost: Cost
    score: float
    stats: SearchStats
    layout: tuple[AxisLayout, ...] = ()
    mac_cycles: int = 1   # cycles the innermost MAC takes (`Mapspace.mac_cycles`)


@dataclass(frozen=True)
class MappedCost:
    """An einsum's cost on an engine and the mapping it was costed with (None: the engine has no choices)."""

    mapping: Mapping | None
    cost: Cost


@dataclass(frozen=True)
class _Cached:
    """A search's outcome kept for reuse: the arch it ran on, its result, and the re-scoring batch (the winner,
    row 0, and, unpinned, the default mappings)."""

    arch: Arch
    result: SearchResult
    candidates: Candidates
    tensors: tuple[str, ...]   # the searched einsum's tensors in shape-key order (a hit renames the cost's records)


class Shelf(MutableMapping):
    """At most `limit` entries, the least recently stored or got (`get`) going first: where mapspaces keep the work
    their structure decides (`Mapspace.shared`)."""

    def __init__(self, limit: int = SHELF_LIMIT) -> None:
        self.limit = limit
        self._items: OrderedDict[tuple, object] = OrderedDict()

    def get(self, key: tuple, default: object = None) -> object:
        """The entry under `key` (now the most recently used), else `default`."""
        if key not in self._items:
            return default
        self._items.move_to_end(key)
        return self._items[key]

    def __getitem__(self, key: tuple) -> object:
        return self._items[key]

    def __setitem__(self, key: tuple, value: object) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __delitem__(self, key: tuple) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class MapperCache:
    """Searched mappings kept across einsums and designs (see the module docstring); the oldest go first. Its
    `shelf` keeps what the mapspaces' structures decide, for mapspaces of other designs (`Mapspace.shared`)."""

    def __init__(self, limit: int = CACHE_LIMIT) -> None:
        self.limit = limit
        self._entries: dict[tuple, _Cached] = {}
        self.shelf = Shelf()
        # (shape, engine, arch's mapping key, objective) -> what `rooms.fits_room` learnt of the rooms its best
        # mapping keeps its cost in
        self.fitted_rooms: dict[tuple, RoomChecks] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple) -> _Cached | None:
        """The entry under `key`, if any."""
        return self._entries.get(key)

    def put(self, key: tuple, entry: _Cached) -> None:
        """Keep `entry`, dropping the oldest when full."""
        if len(self._entries) >= self.limit:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = entry


class _Best:
    """Running best over scored batches (keeps the batch row so only the winner becomes a Mapping)."""

    def __init__(self, objective: str) -> None:
        self.objective = objective
        self.score = np.inf
        self.second = np.inf
        self.found: tuple[Candidates, Scores, int] | None = None
        self.scored = 0       # candidates scored exactly
        self.considered = 0   # candidates weighed: scored, or passed over by their bounds (the budget counts these)

    def offer(self, candidates: Candidates, scores: Scores) -> np.ndarray:
        """Keep the batch's best if it beats the running best; the batch's objective values."""
        values, second = scores.objective(self.objective), _second(scores, self.objective)
        i = self._counted(values, second)
        if self._beats(values[i], second[i]):
            self.found = (candidates, scores, i)
        return values

    def offer_rows(self, candidates: Candidates, rows: np.ndarray, scores: Scores, at: np.ndarray) -> np.ndarray:
        """`offer` of the candidates at `rows` of a batch, scored in `scores` (which has `rows`, as a bounded
        mapspace's do) at `at`, without gathering either: only the winner's row is kept (a search's scored rows
        are most of its batches')."""
        values, second = scores.objective(self.objective)[at], _second(scores, self.objective)[at]
        i = self._counted(values, second)
        if self._beats(values[i], second[i]):
            self.found = (candidates.rows(rows[i:i + 1]), scores.rows(at[i:i + 1]), 0)
        return values

    def _counted(self, values: np.ndarray, second: np.ndarray) -> int:
        """Count a scored batch; the index of its best (`best_index`)."""
        self.scored += len(values)
        self.considered += len(values)
        return best_index(values, second)

    def _beats(self, value: float, second: float) -> bool:
        """Whether a batch's best (`value`, tie-break `second`) beats the running best; if so it becomes it."""
        if value < self.score or (value == self.score and np.isfinite(value) and second < self.second):
            self.score, self.second = float(value), float(second)
            return True
        return False


def _second(scores: Scores, objective: str) -> np.ndarray:
    """The tie-break of each candidate under `objective` (spec.mapspace.tie_break)."""
    return tie_break(scores.total_cycles, scores.energy_j, objective)


def best_index(values: np.ndarray, second: np.ndarray) -> int:
    """The index of the least objective value, ties broken by the least `second` (`_second`), then the first."""
    return int(np.lexsort((second, values))[0])


def best_cost(engine: EngineBase, einsum: Einsum, workload: Workload, arch: Arch, objective: str = "edp",
              cache: MapperCache | None = None) -> MappedCost:
    """The pipeline's mapper stage: the best mapping of `einsum` on `engine` for `objective` and its cost.

    The engine's `mapper:` settings choose the method; engines without choices for the einsum give their
    `cost` (mapping None). A search that finds nothing fitting raises the InfeasibleError that names the level
    and bytes (the engine's `cost` raises it too: no mapping is ever charged as if it fitted).
    """
    space = engine.mapspace(einsum, workload, arch)
    if space is None:
        return MappedCost(None, engine.cost(einsum, workload, arch))
    spec = space.settings
    found = search(space, objective, spec.method, spec.time_limit_s, spec.seed, cache)
    return MappedCost(found.mapping, found.cost)


def search(space: Mapspace, objective: str = "edp", method: Method = "cpsat", time_limit_s: float = 1.0,
           seed: int = 0, cache: MapperCache | None = None) -> SearchResult:
    """Best mapping of `space` for `objective` (latency | energy | edp).

    `method`: 'cpsat' (exact local search, then the space's CP-SAT proxy when it has one, then local search from
    its solutions), 'local' (LOCAL_ROUNDS exact local-search moves and the two-step moves from the default
    mappings; deterministic, no clock), 'exhaustive' (every mapping), 'random' (uniform samples until
    `time_limit_s`), 'dataflow' (only the default mappings). `cache` keeps and reuses results (module docstring).
    Raises InfeasibleError naming the constraint family and numbers when no candidate fits.
    """
    if objective not in ("latency", "energy", "edp"):
        raise ValueError(f"objective must be latency, energy or edp, got {objective!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "exhaustive" and exhaustive_seconds(space) > time_limit_s:
        raise _unenumerable(space, time_limit_s)
    problem, tensors = space.key()
    key = (problem, objective, method, time_limit_s, seed)
    cached = None
    if cache is not None:
        space = space.shared(cache.shelf)
        cached = cache.get(key)
    if cached is not None:
        return _reuse(cached, space, objective, tensors)
    result, keep = _search(space, objective, method, time_limit_s, seed)
    if cache is not None:
        cache.put(key, _Cached(space.arch, result, keep, tensors))
    return result


def searched_batch(space: Mapspace, objective: str, cache: MapperCache) -> tuple[SearchResult, Candidates]:
    """The search of `space` at its own mapper settings, through `cache`, and the batch the cache re-scores its result
    from (its winner and, unpinned, the default mappings), named for the space's einsum."""
    spec = space.settings
    found = search(space, objective, spec.method, spec.time_limit_s, spec.seed, cache)
    problem, tensors = space.key()
    key = (problem, objective, spec.method, spec.time_limit_s, spec.seed)
    cached = cache.get(key)
    if cached is None:   # dropped by the cache's limit since: search again for the winner's batch
        result, keep = _search(space.shared(cache.shelf), objective, spec.method, spec.time_limit_s, spec.seed)
        cached = _Cached(space.arch, result, keep, tensors)
        cache.put(key, cached)
    return found, _named(cached, tensors)


def exhaustive_seconds(space: Mapspace) -> float:
    """About how long exhaustive search takes on `space` (it scores every mapping)."""
    return space.size() / EXHAUSTIVE_MAPPINGS_PER_S


def _unenumerable(space: Mapspace, time_limit_s: float) -> ConfigError:
    """The error of an exhaustive search its time limit cannot hold, at the engine's mapper settings."""
    engine = getattr(space, "engine", None)
    index = next((i for i, e in enumerate(space.arch.engines) if e is engine), None)
    where = f"engines[{index}].mapper.method" if index is not None else "mapper.method"
    seconds = exhaustive_seconds(space)
    return ConfigError(f"exhaustive search of a {space.size():,}-mapping space scores every one, about "
                       f"{EXHAUSTIVE_MAPPINGS_PER_S:,} a second: about {seconds:,.{0 if seconds >= 10 else 2}f} s, "
                       f"past its time limit of "
                       f"{time_limit_s:g} s, and it proves nothing until it finishes", key_path=where,
                       fix=f"use method local or cpsat, which search within the limit, or raise the mapper's "
                           f"time_limit to at least {math.ceil(seconds)} s")


def _reuse(cached: _Cached, space: Mapspace, objective: str, tensors: tuple[str, ...]) -> SearchResult:
    """A cache hit: the cached result itself on an equal arch (renamed to this einsum's tensors), else re-scored."""
    if cached.arch != space.arch:
        return _rescore(cached, space, objective, tensors)
    # the key ignores names: the cached cost and mapping name the tensors of the einsum searched first
    if tensors == cached.tensors:
        return cached.result
    rename = dict(zip(cached.tensors, tensors))
    return replace(cached.result, cost=cached.result.cost.with_tensor_names(rename),
                   mapping=cached.result.mapping.with_tensor_names(rename))


def _search(space: Mapspace, objective: str, method: str, time_limit_s: float, seed: int
            ) -> tuple[SearchResult, Candidates]:
    """Run one method; (its result, the batch a cache re-scores: the winner and, unpinned, the defaults)."""
    start = time.perf_counter()
    best = _Best(objective)
    seeds = space.defaults()
    # the default mappings are offered first (a search is never worse than them); local moves score them in their
    # own first batch
    lead = None if space.pinned else seeds
    if lead is not None and method not in ("local", "cpsat"):
        best.offer(seeds, space.score(seeds))
    offer = _offerer(space, best)
    extra: dict[str, object] = {}
    if method == "exhaustive":
        for candidates in space.enumerate(CHUNK):
            best.offer(candidates, score(space, candidates))
    elif method == "random":
        rng = np.random.default_rng(seed)
        while True:
            offer(*space.sample(rng, 2048))
            if time.perf_counter() - start >= time_limit_s:
                break
    elif method == "local":  # deterministic (no clock): `run` results must not depend on machine load
        _local_moves(space, _implied_starts(space, seeds), best, offer, lead)
    elif method == "cpsat":
        extra = _cpsat(space, best, offer, seeds, objective, time_limit_s, seed, lead)
    if (best.found is None or not np.isfinite(best.score)) and method in ("local", "random", "cpsat") \
            and not space.pinned:
        # every start fits nowhere, and so may each move from it: the mappings that need the least room decide
        # whether anything fits (those `infeasible` judges by), and the search goes on from them
        frugal = space.frugal()
        best.offer(frugal, space.score(frugal))
        for start_ in _implied_starts(space, frugal):
            _descend(space, *start_, offer, max_rounds=LOCAL_ROUNDS, pairs=False)
    if best.found is None or not np.isfinite(best.score):
        raise space.infeasible(searched=method != "dataflow")
    candidates, scores, i = best.found
    result = SearchResult(candidates.mappings.mapping(i), space.label(int(candidates.group[i])),
                          space.cost_of(candidates, scores, i), best.score,
                          SearchStats(method, best.scored, space.size() if method != "dataflow" else len(seeds),
                                      wall_s=time.perf_counter() - start, **extra), space.layout(candidates, i),
                          space.mac_cycles())
    keep = candidates.rows(slice(i, i + 1))
    if not space.pinned:  # re-scored with the winner: a reuse is never worse than the default cost either
        keep = Candidates.concat([keep, seeds])
    return result, keep


def _cpsat(space: Mapspace, best: _Best, offer: Offer, seeds: Candidates, objective: str, time_limit_s: float,
           seed: int, lead: Candidates | None) -> dict[str, object]:
    """The 'cpsat' method; returns the proxy's statistics for SearchStats.

    Exact local search first (from the default mappings and the best of a seeded random sample): its optima are
    the proxy's hints, so CP-SAT starts from a solution and reports a bound and gap at once; then local search
    from the best of those optima and of the proxy's solutions.
    """
    rng = np.random.default_rng(seed)
    implied = [] if space.pinned else _implied_starts(space, seeds)
    _local_moves(space, implied, best, offer, lead)   # the 'local' method's moves first: never worse than it
    starts = implied + _sampled_starts(space, offer, rng)
    spent = lambda: best.considered >= BUDGET   # noqa: E731  (counted, not timed: deterministic)
    optima = _distinct([_descend(space, d, c, o, offer, spent, DESCENT_ROUNDS, pairs=False) for d, c, o in starts])
    hints: dict[int, list[np.ndarray]] = {}
    for _, d, choice, _ in optima:
        hints.setdefault(d, []).append(choice)
    found = space.proxy(objective, time_limit_s * SOLVER_SHARE, seed, _reference(best, space), hints)
    polish = optima[:STARTS]
    if found is not None and len(found.choice):
        values = offer(found.group, found.choice, found.order)
        polish += [(float(values[i]), int(found.group[i]), found.choice[i], found.order[i])
                   for i in np.argsort(values, kind="stable")[:STARTS]]
    for _, d, choice, order in _distinct(polish)[:STARTS]:
        _descend(space, d, choice, order, offer, spent, DESCENT_ROUNDS)
    return found.stats if found is not None else {}


def _local_moves(space: Mapspace, starts: list[tuple[int, np.ndarray, np.ndarray]], best: _Best, offer: Offer,
                 lead: Candidates | None = None) -> None:
    """The 'local' method from the default mappings: each one's best single moves (LOCAL_ROUNDS), its two-step
    moves (`_pair_moves`) and its re-tilings (`Mapspace.retiled`), which single moves pass by when the default does
    not fit. Every candidate scored follows from the defaults alone, so the result never improves as a capacity
    shrinks.

    `lead` (the default mappings themselves, when the search offers them), the first round of every start (the
    start and its neighbours) and the re-tilings are scored together, in batches of up to CHUNK in that order (a
    batch's ties go to its first row, as they would offered one by one): most of a small batch's scoring is
    set-up. Later rounds, if any, descend from each start's best neighbour."""
    parts, firsts = [], []
    for d, choice, order in starts:
        choices, orders = space.neighbours(d, choice, order)
        firsts.append((len(parts), d, choice, order, choices, orders))
        parts.append((d, np.concatenate([choice[None], choices]), np.concatenate([order[None], orders])))
        retiled = space.retiled(d, choice, order)
        if len(retiled[0]):
            parts.append((d, *retiled))
        pairs = _pair_moves(space, d, choice, order)
        if len(pairs[0]):
            parts.append((d, *pairs))
    if not parts and lead is None:
        return
    values: list[np.ndarray] = []
    led = 0 if lead is None else len(lead)
    for i, packed in enumerate(_packed(parts, led)):
        candidates = space.batch_of(packed, lead if i == 0 else None)
        # later rounds descend from each start's best neighbour, which a bound cannot skip
        offered = _offer_bounded(space, best, candidates) if LOCAL_ROUNDS <= 1 \
            else best.offer(candidates, score(space, candidates))
        scored = offered[led if i == 0 else 0:]
        for _, choice, _ in packed:
            values.append(scored[:len(choice)])
            scored = scored[len(choice):]
    if LOCAL_ROUNDS <= 1:
        return
    for part, d, choice, order, choices, orders in firsts:
        start_value, moves = values[part][0], values[part][1:]
        i = int(np.argmin(moves)) if len(moves) else 0
        if len(moves) and moves[i] < start_value * (1 - 1e-12):
            _descend(space, d, choices[i], orders[i], offer, max_rounds=LOCAL_ROUNDS - 1, pairs=False)


def _offer_bounded(space: Mapspace, best: _Best, candidates: Candidates, bar: float | None = None) -> np.ndarray:
    """`best.offer` of a batch, scoring exactly only the candidates whose bound (`Mapspace.bounds`) does not exceed
    `bar` or, without one, the best score of the PROBE least-bounded ones (or the best so far): the rest score
    above it, so the batch's best, its ties and their order are those of scoring it all, and a descent that moves
    only below `bar` moves alike. Returns the objective values, +inf where passed over."""
    bounds = space.bounds(candidates, best.objective)
    if bounds is None or (bar is None and len(candidates) <= PROBE):
        return best.offer(candidates, score(space, candidates))
    values = np.full(len(candidates), np.inf)
    if bar is not None:
        kept = np.flatnonzero(~(bounds > bar * (1 + BOUND_SLACK)))   # a bound that is not a number skips nothing
        best.considered += len(candidates) - len(kept)
        if len(kept):
            values[kept] = best.offer_rows(candidates, kept, score_rows(space, candidates, kept),
                                           np.arange(len(kept)))
        return values
    probe = np.sort(np.argsort(bounds, kind="stable")[:PROBE])   # in row order: scored rows in order need no gather
    probe_scores = score_rows(space, candidates, probe)
    bar = min(best.score, float(probe_scores.objective(best.objective).min()))
    kept = np.flatnonzero(~(bounds > bar * (1 + BOUND_SLACK)))   # every candidate while nothing probed fits
    probed = np.zeros(len(candidates), dtype=bool)
    probed[probe] = True
    rest = kept[~probed[kept]]
    where = np.empty(len(candidates), dtype=np.int64)      # each kept row's place among the probe's and rest's scores
    where[probe] = np.arange(len(probe))
    where[rest] = len(probe) + np.arange(len(rest))
    both = concat_scores([probe_scores, score_rows(space, candidates, rest)]) if len(rest) else probe_scores
    values[kept] = best.offer_rows(candidates, kept, both, where[kept])
    best.scored += int(len(probe) - probed[kept].sum())   # the probe's rows above the bar were scored too
    best.considered += len(candidates) - len(kept)
    return values


def _pair_moves(space: Mapspace, d: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A mapping's two-step moves (two ranks' options, or one's and a level's order), over every option when
    there are at most PAIR_LIMIT of them, else over the options one factor move away (`Mapspace.near`), else none.
    Single moves miss what a buffer's reuse needs two of: on Eyeriss v1 (edge_npu) ResNet-50's convolutions mapped
    with single moves alone came to 2.1x the CP-SAT mapper's EDP (5.1x at worst), with these to 1.07x (1.4x)."""
    subsets = None if space.pair_count(d) <= PAIR_LIMIT else space.near(d, choice)
    if space.pair_count(d, subsets) > PAIR_LIMIT:
        return no_moves(choice, order)
    return space.pair_neighbours(d, choice, order, subsets)


def _packed(parts: list[tuple[int, np.ndarray, np.ndarray]], led: int = 0
            ) -> list[list[tuple[int, np.ndarray, np.ndarray]]]:
    """Consecutive parts gathered into batches of at most CHUNK candidates (a larger part alone in its own), the
    first after `led` candidates of its own."""
    batches: list[list[tuple[int, np.ndarray, np.ndarray]]] = [[]]
    size = led
    for part in parts:
        if batches[-1] and size + len(part[1]) > CHUNK:
            batches.append([])
            size = 0
        batches[-1].append(part)
        size += len(part[1])
    return batches


def _offerer(space: Mapspace, best: _Best) -> Offer:
    """offer(group(s), choices, orders, bar=None): score index arrays exactly, keep the best, return the objective
    values; given `bar`, only the candidates whose bound could score below it (`_offer_bounded`; the rest +inf)."""
    def offer(group: int | np.ndarray, choice: np.ndarray, order: np.ndarray, bar: float | None = None
              ) -> np.ndarray:
        groups = np.broadcast_to(np.asarray(group, dtype=np.int64), (len(choice),)).copy()
        values = np.empty(len(choice))
        for g in np.unique(groups):
            rows = groups == g
            candidates = space.candidates(int(g), choice[rows], order[rows])
            values[rows] = best.offer(candidates, score(space, candidates)) if bar is None \
                else _offer_bounded(space, best, candidates, bar)
        return values
    return offer


def score(space: Mapspace, candidates: Candidates) -> Scores:
    """Exact scores of a batch (chunked so that no call holds more than CHUNK candidates' arrays)."""
    if len(candidates) <= CHUNK:
        return space.score(candidates)
    return score_rows(space, candidates, np.arange(len(candidates)))


def score_rows(space: Mapspace, candidates: Candidates, rows: np.ndarray) -> Scores:
    """Exact scores of the candidates at `rows` (an index array) of a batch (`Mapspace.score_rows`, chunked as
    `score`)."""
    if len(rows) <= CHUNK:
        return space.score_rows(candidates, rows)
    return concat_scores([space.score_rows(candidates, rows[s:s + CHUNK]) for s in range(0, len(rows), CHUNK)])


def _named(cached: _Cached, tensors: tuple[str, ...]) -> Candidates:
    """The cached re-scoring batch for the einsum whose tensors, in shape-key order, are `tensors`: the batch names
    the tensors of the einsum searched first, and a scorer reads its own einsum's."""
    candidates = cached.candidates
    if tensors == cached.tensors:
        return candidates
    rename = dict(zip(cached.tensors, tensors))
    batch = candidates.mappings
    return Candidates(replace(batch, tensor_names=tuple(rename.get(t, t) for t in batch.tensor_names)),
                      candidates.group)


def _rescore(cached: _Cached, space: Mapspace, objective: str, tensors: tuple[str, ...]) -> SearchResult:
    """The cached winner (and, unpinned, the default mappings) scored exactly on `space`'s arch (for the einsum
    whose tensors are `tensors`); best kept."""
    start = time.perf_counter()
    candidates = _named(cached, tensors)
    scores = space.score(candidates)
    values = scores.objective(objective)
    i = int(np.argmin(values))  # ties go to the cached winner (row 0)
    if not np.isfinite(values[i]):  # cannot happen with equal capacities; raise as a search would
        raise space.infeasible(searched=False)
    old = cached.result.stats
    return SearchResult(candidates.mappings.mapping(i), space.label(int(candidates.group[i])),
                        space.cost_of(candidates, scores, i), float(values[i]),
                        SearchStats(old.method, len(candidates), old.space_size, wall_s=time.perf_counter() - start,
                                    reused=True), space.layout(candidates, i), space.mac_cycles())


def _implied_starts(space: Mapspace, seeds: Candidates) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The default mappings as (group, option indices, declared orders) local-search starts."""
    out = []
    for i in range(len(seeds)):
        choice = space.locate(seeds, i)
        if choice is not None:
            out.append((int(seeds.group[i]), choice, np.zeros(len(seeds.mappings.level_names), dtype=np.int64)))
    return out


def _reference(best: _Best, space: Mapspace) -> tuple[float, float]:
    """(cycles, joules) that normalize the proxy: the best mapping's so far, else the default mappings' least."""
    if best.found is not None and np.isfinite(best.score):
        _, scores, i = best.found
        return float(scores.total_cycles[i]), float(scores.energy_j[i])
    scores = space.score(space.defaults())
    return float(scores.total_cycles.min()), float(scores.energy_j.min())


def _never() -> bool:
    """A stop condition that never holds."""
    return False


def _descend(space: Mapspace, d: int, choice: np.ndarray, order: np.ndarray, offer: Offer,
             stop: Callable[[], bool] = _never, max_rounds: int = 1_000, pairs: bool = True) -> State:
    """Exact local search: move to the best neighbour (one rank's option or one level's order) while it improves.

    When no single move improves, two-step moves are tried (if `pairs`): over all options of two ranks when
    that is affordable, else over the options one factor move away (`Mapspace.near`). Stops at a local
    optimum, after `max_rounds` moves, or when `stop()` says so (checked between rounds); returns the state
    reached as (value, group, option indices, order indices).
    """
    first = None
    if stop is _never and max_rounds > 0:
        # nothing can stop the first round: the start and its neighbours are scored in one batch (the same
        # values and the same best, a batch's ties going to its first row, as the start scored on its own first)
        choices, orders = space.neighbours(d, choice, order)
        values = offer(d, np.concatenate([choice[None], choices]), np.concatenate([order[None], orders]))
        current, first = float(values[0]), (choices, orders, values[1:])
    else:
        current = float(offer(d, choice[None], order[None])[0])
    for _ in range(max_rounds):
        if stop():
            break
        if first is not None:
            (choices, orders, values), first = first, None
        else:
            # only a move below the current value is taken: the others need not be scored (nor can they beat the
            # best so far, which is at most the current value)
            choices, orders = space.neighbours(d, choice, order)
            values = offer(d, choices, orders, current)
        i = int(np.argmin(values))
        if not values[i] < current * (1 - 1e-12):
            if not pairs:
                break
            choices, orders = _pair_moves(space, d, choice, order)   # a wider move out of the optimum
            if not len(choices):
                break
            values = offer(d, choices, orders, current)
            i = int(np.argmin(values))
            if not values[i] < current * (1 - 1e-12):
                break
        current, choice, order = float(values[i]), choices[i], orders[i]
    return current, d, choice, order


def _sampled_starts(space: Mapspace, offer: Offer, rng: np.random.Generator
                    ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The best SAMPLE_KEEP of SAMPLE uniformly drawn mappings per group, as local-search starts."""
    out = []
    for _ in space.groups:
        d, choice, order = space.sample(rng, SAMPLE)
        values = offer(d, choice, order)
        for i in np.argsort(values, kind="stable")[:SAMPLE_KEEP]:
            if np.isfinite(values[i]):
                out.append((d, choice[i], order[i]))
    return out


def _distinct(states: list[State]) -> list[State]:
    """States (value, group, choice, order) best first, each mapping once."""
    seen, out = set(), []
    for s in sorted(states, key=lambda s: s[0]):
        key = (s[1], s[2].tobytes(), s[3].tobytes())
        if key not in seen and np.isfinite(s[0]):
            seen.add(key)
            out.append(s)
    return out


def search_many(spaces: Sequence[Mapspace], objective: str = "edp", method: Method = "cpsat",
                time_limit_s: float = 1.0, seed: int = 0, jobs: int = 1, cache: MapperCache | None = None
                ) -> list[SearchResult]:
    """`search` of each space, spread over `jobs` forked processes (Linux); results in input order.

    Each search is independent and deterministic, so the results equal a one-process loop's. Worker results
    do not enter `cache` (one process uses and fills it).
    """
    shared = (objective, method, time_limit_s, seed)
    if jobs <= 1 or len(spaces) <= 1 or not sys.platform.startswith("linux"):
        return [search(s, *shared, cache) for s in spaces]
    with ProcessPoolExecutor(max_workers=min(jobs, len(spaces)),
                             mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(search, spaces, *(itertools.repeat(v) for v in shared)))
