"""The legal mappings of a contraction on a systolic array, as per-rank factor options and per-level orders.

A candidate is, per dataflow (os | ws | is, or all three when the engine says `dataflow: any`):
- for every rank, one *factor option*: its spatial factor on the array axis the dataflow gives its GEMM role
  (rows or cols; 1 for the time and batch roles) and its temporal factors at each memory level, outer ->
  inner. Spatial factors are the divisors of the rank that fit the axis plus the most even uneven split
  (ceil(size / ceil(size / axis)), a partial last fold as SCALE-Sim runs it); the temporal factors are the
  ordered factorizations of what is left (ceil(size / spatial)) over the levels, the prime factors of the
  rank distributed over (level, temporal | spatial) slots;
- for every level, one loop order out of the *stationarity orders*: the declared order, or for one tensor the
  ranks that do not index it innermost (that tensor stays in place across them). At the innermost level the
  dataflow's time role (the streamed rows) is always innermost: that is how the array consumes it.
- bypass follows each level's `holds` (a level keeps only the tensor classes it holds).
Options are numpy arrays; `SystolicSpace.batch` turns index arrays into a `MappingBatch` the scorer takes.
`engines/systolic_mapspace.py` wraps it for the mapper; `engines/systolic_cpsat.py` models it for CP-SAT.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Mapping as MappingType, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.engines.fold_timing import DATAFLOW_CODES
from accel_sim.engines.loopnest import SYSTOLIC_ROLES, gemm_roles
from accel_sim.engines.rows import unique_rows
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count
from accel_sim.spec.mapping import MappingBatch, rank_names, tensor_names
from accel_sim.spec.mapspace import no_moves

if TYPE_CHECKING:
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload

ROWS, COLS, TIME, OTHER = 0, 1, 2, 3  # the place a dataflow gives a rank


@functools.lru_cache(maxsize=4096)
def ordered_factorizations(n: int, slots: int) -> np.ndarray:
    """int64 (F, slots): every ordered tuple of positive integers whose product is n (cached; do not modify)."""
    if slots == 1:
        return np.array([[n]], dtype=np.int64)
    parts = [np.concatenate([np.full((len(rest), 1), d), rest], axis=1)
             for d in _divisors(n) for rest in [ordered_factorizations(n // d, slots - 1)]]
    return np.concatenate(parts, axis=0)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _option_index(options: np.ndarray, wanted: list, missing: int) -> int:
    """Index of the factor option equal to `wanted` (spatial, then temporal per level), else `missing`."""
    hit = np.flatnonzero((options == np.asarray(wanted, dtype=options.dtype)).all(axis=1))
    return int(hit[0]) if len(hit) else missing


@functools.lru_cache(maxsize=4096)
def _factor_options(size: int, axis: int | None, levels: int) -> tuple[np.ndarray, frozenset[tuple[int, ...]]]:
    """(every (spatial, temporal per level) factor option of a rank of `size`, in lexicographic order; the same as a
    set of tuples) on an axis of `axis` PEs (None: the rank is not unrolled). Cached: ranks of one size recur across
    a network's layers and a sweep's designs; do not modify."""
    per_spatial = [(s, ordered_factorizations(fold_count(size, s), levels))
                   for s in (spatial_choices(size, axis) if axis is not None else [1])]
    options = unique_rows(np.concatenate([np.concatenate([np.full((len(t), 1), s), t], axis=1)
                                          for s, t in per_spatial]))
    options.flags.writeable = False
    return options, frozenset(map(tuple, options.tolist()))


def spatial_choices(size: int, axis: int) -> list[int]:
    """Spatial factors for a rank on an axis of `axis` PEs: divisors that fit plus the most even uneven split."""
    choices = [d for d in _divisors(size) if d <= axis]
    even = fold_count(size, fold_count(size, axis))
    return sorted(set(choices) | {even})


@dataclass(frozen=True)
class SystolicSpace:
    """The mapspace of one contraction on one systolic engine within an arch (see the module docstring)."""

    einsum_name: str
    rank_names: tuple[str, ...]
    level_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    sizes: tuple[int, ...]
    rows: int
    cols: int
    dataflows: tuple[int, ...]                       # codes into DATAFLOW_CODES
    places: np.ndarray                               # int (3, R): ROWS | COLS | TIME | OTHER per dataflow
    options: tuple[tuple[np.ndarray, ...], ...]      # [dataflow code][rank] -> int64 (n, 1 + L): spatial, temporal
    orders: tuple[np.ndarray, ...]                   # [dataflow code] -> int64 (L, O, R) candidate loop orders
    bypass: np.ndarray                               # bool (L, T)
    relevant: np.ndarray                             # bool (T, R): rank indexes tensor

    def size(self, dataflow: int | None = None) -> int:
        """Number of mappings (factor options x loop orders), for one dataflow or all allowed."""
        flows = self.dataflows if dataflow is None else (dataflow,)
        return sum(math.prod(len(o) for o in self.options[d]) * self.orders[d].shape[1] ** len(self.level_names)
                   for d in flows)

    @functools.cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(every dataflow's and rank's factor options stacked (N, 1 + L), each (dataflow, rank)'s first row there
        (3, R), every dataflow's loop orders side by side (L, O, R), each dataflow's first order there (3,)): a
        batch's factors and loop orders are one lookup each, whatever dataflows its rows have."""
        per_rank = [options for per_flow in self.options for options in per_flow]
        table = np.concatenate([np.zeros((0, 1 + len(self.level_names)), dtype=np.int64), *per_rank])
        first = np.cumsum([0, *(len(o) for o in per_rank)])[:-1].reshape(len(self.options), len(self.rank_names))
        order_first = np.cumsum([0, *(o.shape[1] for o in self.orders)])[:-1]
        return table, first, np.concatenate(self.orders, axis=1), order_first

    def batch(self, dataflow: int, choice: np.ndarray, order: np.ndarray) -> MappingBatch:
        """Candidates from option indices `choice` (B, R) and per-level order indices `order` (B, L)."""
        return self.batch_of([(dataflow, choice, order)])

    def batch_of(self, parts: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> MappingBatch:
        """The candidates of several (dataflow, option indices (B, R), order indices (B, L)) parts, rows in order, built
        as one batch (where a batch per part and their join copied every array twice)."""
        flows = np.concatenate([np.full(len(c), d, dtype=np.int64) for d, c, _ in parts])
        choice = np.concatenate([c for _, c, _ in parts])
        order = np.concatenate([o for _, _, o in parts])
        b, n_l = len(flows), len(self.level_names)
        table, first, orders, order_first = self._tables
        factors = table[choice + first[flows]]                                          # (B, R, 1+L)
        place = self.places[flows]                                                      # (B, R)
        spatial = np.stack([np.where(place == axis, factors[:, :, 0], 1) for axis in (ROWS, COLS)], axis=1)
        temporal = np.transpose(factors[:, :, 1:], (0, 2, 1)).copy()
        loops = orders[np.arange(n_l)[None, :], order + order_first[flows][:, None]]   # (B, L, R)
        return MappingBatch(self.rank_names, self.level_names, ("rows", "cols"), self.tensor_names, temporal,
                            loops, spatial, np.broadcast_to(self.bypass, (b, n_l, len(self.tensor_names))).copy(),
                            np.full(b, n_l - 1, dtype=np.int64))

    def enumerate(self, chunk: int) -> Iterator[tuple[MappingBatch, np.ndarray]]:
        """Every mapping of the space, in batches of at most `chunk` with their dataflow codes."""
        n_l = len(self.level_names)
        for d in self.dataflows:
            counts = [len(o) for o in self.options[d]] + [self.orders[d].shape[1]] * n_l
            total = math.prod(counts)
            for start in range(0, total, chunk):
                flat = np.arange(start, min(start + chunk, total), dtype=np.int64)
                idx = np.stack(np.unravel_index(flat, counts), axis=1)
                n_r = len(self.rank_names)
                yield self.batch(d, idx[:, :n_r], idx[:, n_r:]), np.full(len(flat), d, dtype=np.int64)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[int, np.ndarray, np.ndarray]:
        """(dataflow, option indices (n, R), order indices (n, L)) drawn uniformly (random search)."""
        d = int(rng.choice(self.dataflows))
        choice = np.stack([rng.integers(0, len(o), n) for o in self.options[d]], axis=1)
        order = rng.integers(0, self.orders[d].shape[1], (n, len(self.level_names)))
        return d, choice, order

    def locate(self, dataflow: int, batch: MappingBatch, i: int) -> np.ndarray | None:
        """Option indices (R,) of candidate i's factors, or None when some rank's factors are not an option."""
        out = []
        for r, opts in enumerate(self.options[dataflow]):
            row = np.concatenate([[batch.spatial[i, :, r].prod()], batch.temporal[i, :, r]])
            hit = np.flatnonzero((opts == row).all(axis=1))
            if not len(hit):
                return None
            out.append(int(hit[0]))
        return np.array(out, dtype=np.int64)

    def neighbours(self, dataflow: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every mapping one step away: one rank's factor option or one level's loop order changed."""
        choices, orders = [], []
        for r, opts in enumerate(self.options[dataflow]):
            c = np.tile(choice, (len(opts), 1))
            c[:, r] = np.arange(len(opts))
            choices.append(c)
            orders.append(np.tile(order, (len(opts), 1)))
        n_o = self.orders[dataflow].shape[1]
        for level in range(len(self.level_names)):
            o = np.tile(order, (n_o, 1))
            o[:, level] = np.arange(n_o)
            orders.append(o)
            choices.append(np.tile(choice, (n_o, 1)))
        return np.concatenate(choices), np.concatenate(orders)

    def near(self, dataflow: int, choice: np.ndarray) -> list[np.ndarray]:
        """Per rank, the option indices within one factor move of the current one (at most two slots differ)."""
        return [np.flatnonzero((opts != opts[c]).sum(axis=1) <= 2) for opts, c in zip(self.options[dataflow], choice)]

    def pair_neighbours(self, dataflow: int, choice: np.ndarray, order: np.ndarray,
                        subsets: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every mapping two steps away: two ranks' options, or one rank's option and one level's order.

        `subsets` restricts each rank's options to the given indices (e.g. `near`), else all options count.
        """
        opts = subsets if subsets is not None else [np.arange(len(o)) for o in self.options[dataflow]]
        n_o = self.orders[dataflow].shape[1]
        total = self.pair_count(dataflow, subsets)
        # every move starts as the mapping itself; each block of rows then sets its two changed indices (filled in
        # place: the blocks are many and small, and building each apart cost more than filling them)
        choices = np.broadcast_to(choice, (total, len(choice))).copy()
        orders = np.broadcast_to(order, (total, len(order))).copy()
        start = 0
        for r, r2 in itertools.combinations(range(len(opts)), 2):
            rows = slice(start, start + len(opts[r]) * len(opts[r2]))
            choices[rows, r], choices[rows, r2] = np.repeat(opts[r], len(opts[r2])), np.tile(opts[r2], len(opts[r]))
            start = rows.stop
        levels = np.arange(n_o)
        for r in range(len(opts)):
            for level in range(len(self.level_names)):
                rows = slice(start, start + len(opts[r]) * n_o)
                choices[rows, r], orders[rows, level] = np.repeat(opts[r], n_o), np.tile(levels, len(opts[r]))
                start = rows.stop
        return choices, orders

    def streamed_splits(self, dataflow: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mapping `choice` with one streamed (time-role) rank's loops split at the outermost level, by each
        divisor of its extent, as it is and with every other rank's temporal loops moved out to that level too.

        This is how a compiler fits a stream to a buffer (the accumulators hold a stream's partial sums, a weight
        tile is reloaded per chunk): the next fitting mapping after a default mapping that does not fit is often
        such a re-tiling, two or more single moves away. The set depends on the mapping alone, not on capacities.
        """
        options = self.options[dataflow]
        if len(self.level_names) < 2:   # one level is both the outermost and the innermost: nothing to split over
            return no_moves(choice, order)
        outer = choice.copy()
        for r, opts in enumerate(options):
            if self.places[dataflow, r] != TIME:
                now = opts[choice[r]]
                outer[r] = _option_index(opts, [now[0], now[1:].prod(), *[1] * (len(now) - 2)], choice[r])
        out = [outer] if (outer != choice).any() else []
        for r, opts in enumerate(options):
            if self.places[dataflow, r] != TIME:
                continue
            now = opts[choice[r]]
            extent = int(now[1:].prod())
            for factor in _divisors(extent)[1:]:
                index = _option_index(opts, [now[0], factor, *[1] * (len(now) - 3), extent // factor], -1)
                if index >= 0:
                    for base in (choice, outer):
                        split = base.copy()
                        split[r] = index
                        out.append(split)
        if not out:
            return no_moves(choice, order)
        choices = unique_rows(np.array(out, dtype=np.int64))
        return choices, np.tile(order, (len(choices), 1))

    def pair_count(self, dataflow: int, subsets: list[np.ndarray] | None = None) -> int:
        """Size of `pair_neighbours` (to decide whether the wider move is affordable)."""
        sizes = [len(o) for o in (subsets if subsets is not None else self.options[dataflow])]
        n_o = self.orders[dataflow].shape[1]
        return sum(a * b for a, b in itertools.combinations(sizes, 2)) + sum(sizes) * n_o * len(self.level_names)


def systolic_space(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                   pinned: MappingType[str, MappingType[str, int]] | None = None,
                   include: MappingBatch | None = None, include_flows: np.ndarray | None = None) -> SystolicSpace:
    """The mapspace of `einsum` on `engine`; `pinned` fixes factors: {rank: {'rows'|'cols'|level: factor}}.

    `include` adds the factor options of given mappings (with dataflow codes `include_flows`), e.g. the
    dataflow-implied ones whose uneven spatial splits the divisor options may lack.
    """
    roles = gemm_roles(einsum, workload.tensor_map)
    ranks, tensors = rank_names(einsum), tensor_names(einsum)
    levels = tuple(lv.name for lv in arch.memory)
    sizes = tuple(einsum.sizes[r] for r in ranks)
    named = dict(zip("MNK", roles[:3]))
    flows = tuple(range(3)) if engine.dataflow == "any" else (DATAFLOW_CODES.index(engine.dataflow),)
    places = np.full((3, len(ranks)), OTHER, dtype=np.int64)
    for d, flow in enumerate(DATAFLOW_CODES):
        for place, role in enumerate(SYSTOLIC_ROLES[flow]):
            places[d, [r in named[role] for r in ranks]] = place
    access = {a.tensor: a for a in einsum.inputs}
    access[einsum.output.tensor] = einsum.output
    relevant = np.array([[r in access[t].ranks for r in ranks] for t in tensors])
    roles = workload.roles(einsum)
    bypass = np.array([[not lv.keeps(roles[t], t) for t in tensors] for lv in arch.memory])
    pinned = pinned or {}
    for rank, slots in pinned.items():
        if rank not in ranks:
            raise InfeasibleError(f"pinned mapping of einsum '{einsum.name}' names rank '{rank}', which it does not "
                                  f"have; ranks: {', '.join(ranks)}. Fix: pin only these ranks")
        for slot in slots:
            if slot not in ("rows", "cols", *levels):
                raise InfeasibleError(f"pinned mapping of einsum '{einsum.name}', rank '{rank}': unknown slot "
                                      f"'{slot}'; slots: rows, cols, {', '.join(levels)}. Fix: use one of them")
    options = []
    orders = []
    for d in range(3):
        if d not in flows:
            options.append(tuple(np.zeros((0, 1 + len(levels)), np.int64) for _ in ranks))
            orders.append(np.zeros((len(levels), 0, len(ranks)), np.int64))
            continue
        per_rank = []
        for ri, (rank, size) in enumerate(zip(ranks, sizes)):
            place = places[d, ri]
            opts, listed = _factor_options(size, {ROWS: engine.rows, COLS: engine.cols}.get(int(place)), len(levels))
            if include is not None:
                mine = include_flows == d
                spatial_in = include.spatial[mine][:, :, ri].prod(axis=1)[:, None]
                extra = np.concatenate([spatial_in, include.temporal[mine][:, :, ri]], axis=1)
                if any(tuple(row) not in listed for row in extra.tolist()):
                    opts = unique_rows(np.concatenate([opts, extra], axis=0))
            keep = np.ones(len(opts), dtype=bool)
            for slot, factor in pinned.get(rank, {}).items():
                col = 0 if slot in ("rows", "cols") else 1 + levels.index(slot)
                keep &= opts[:, col] == factor
            per_rank.append(opts[keep])
        options.append(tuple(per_rank))
        orders.append(_stationarity_orders(ranks, relevant, places[d], len(levels)))
    return SystolicSpace(einsum.name, ranks, levels, tensors, sizes, engine.rows, engine.cols, flows, places,
                         tuple(options), tuple(orders), bypass, relevant)


def _stationarity_orders(ranks: tuple[str, ...], relevant: np.ndarray, place: np.ndarray, n_levels: int
                         ) -> np.ndarray:
    """int64 (L, O, R): per level, the declared order and one per tensor with its irrelevant ranks innermost.

    At the innermost level the time role is moved innermost after that (the array streams it).
    """
    declared = list(range(len(ranks)))
    base = [declared] + [sorted(declared, key=lambda r, t=t: (not relevant[t, r], r)) for t in range(len(relevant))]
    per_level = []
    for level in range(n_levels):
        level_orders = base
        if level == n_levels - 1:
            level_orders = [sorted(o, key=lambda r: place[r] == TIME) for o in base]
        per_level.append(level_orders)
    return np.array(per_level, dtype=np.int64)


def distinct_orders(space: SystolicSpace, dataflow: int, temporal: np.ndarray) -> list[tuple[int, ...]]:
    """Per-level order-index combinations that differ in effect for factors `temporal` (L, R).

    Loops of factor 1 are no loops, so orders that agree on the non-unit ranks are the same mapping.
    """
    per_level = []
    for level in range(len(space.level_names)):
        seen: dict[tuple[int, ...], int] = {}
        for oi, order in enumerate(space.orders[dataflow][level]):
            effective = tuple(int(r) for r in order if temporal[level, r] > 1)
            seen.setdefault(effective, oi)
        per_level.append(sorted(seen.values()))
    return list(itertools.product(*per_level))
