"""What `SystolicEngine.mapspace` hands the mapper (the `spec.mapspace.Mapspace` protocol).

A contraction's legal mappings (`engines/systolic_space.py`, built on first use), the dataflow-implied mappings
as defaults, the exact vectorized scorer of `engines/costing.py` and the CP-SAT proxy of `systolic_cpsat.py`.
Groups are dataflow codes (DATAFLOW_CODES).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping as MappingType, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from accel_sim.engines.costing import (BoundParts, PreparedBatch, SystolicScores, array_batch, bound_parts,
                                       candidate_key, implied_batch, prepared_scores, score_key, systolic_bounds,
                                       systolic_cost_of, systolic_prepare, unfit_error)
from accel_sim.engines.fold_timing import DATAFLOW_CODES, axis_folds, role_masks
from accel_sim.engines.rows import distinct_indices, distinct_rows
from accel_sim.engines.loopnest import gemm_roles
from accel_sim.engines.systolic_space import SystolicSpace, systolic_space
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count
from accel_sim.spec.mapspace import (AxisLayout, Candidates, MapperSpec, ProxyFound, layout_key, mapping_key,
                                     objective_figure)

if TYPE_CHECKING:
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload


T = TypeVar("T")
# candidates a structure keeps, per store: the batches built (about 0.6 KiB a candidate on TPU v1) and their bounds'
# parts (0.1 KiB) of a local search (ResNet-50's hold 4,600-7,300 candidates, Llama-2-7B's LM head 18,500), and the
# prepared part (~3 KiB) of the rows its designs score (ResNet-50's shapes on tpu_array_resnet50's arrays: 600-2,000
# on average, up to 4,000, over four Unified Buffer sizes): at most about 26 MB a structure
SHARED_ROWS = {"built": 20_000, "bounded": 20_000, "prepared": 4096}


@dataclass(eq=False)
class PreparedRows:
    """The prepared part (`costing.PreparedBatch`) of the rows of one batch scored so far, in the parts each
    scoring added; candidates that score alike (`costing.score_key`) among the rows a part adds share one
    analysis."""

    candidates: Candidates   # the batch (held, so its id stays its own)
    position: np.ndarray     # int (B,): where each row's analysis sits in the parts, in order (-1: not prepared)
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))  # (P,): a batch row per analysis
    parts: list[PreparedBatch] = field(default_factory=list)

    @staticmethod
    def of(candidates: Candidates) -> PreparedRows:
        """None of the batch's rows prepared yet."""
        return PreparedRows(candidates, np.full(len(candidates), -1, dtype=np.int64))

    def add(self, rows: np.ndarray, prepare: Callable[[np.ndarray], PreparedBatch]) -> int:
        """Prepare, as a new part, the candidates among `rows` not prepared yet, one of each kind that scores alike
        (`prepare` of batch rows); returns how many analyses that added."""
        missing = distinct_indices(rows[self.position[rows] < 0], len(self.position))[0]
        if not len(missing):
            return 0
        first, inverse = distinct_rows(score_key(self.candidates.mappings.rows(missing),
                                                 self.candidates.group[missing]))
        part = prepare(missing[first])
        # the residency ranking every design scoring these rows reads: computed once, and then sliced for each
        part.analyses.ranking  # noqa: B018
        self.position[missing] = len(self.rows) + inverse
        self.rows = np.concatenate([self.rows, missing[first]])
        self.parts.append(part)
        return len(first)

    def prepared(self, at: np.ndarray) -> PreparedBatch:
        """The prepared part of the analyses at positions `at` (sorted, distinct): one part's own rows where they
        lie in one, else from the parts joined (into one part, which later slices share)."""
        start = 0
        for part in self.parts:
            if start <= at[0] and at[-1] < start + len(part):
                return part if len(at) == len(part) else part.rows(at - start)
            start += len(part)
        self.parts = [PreparedBatch.concat(self.parts)]
        return self.parts[0].rows(at)


@dataclass(eq=False)
class SharedWork:
    """What only a mapspace's structure (`SystolicMapspace.structure_key`) decides, computed once and kept for every
    mapspace with that structure: the default mappings, the factor options, single candidates' option indices,
    spatial layouts and neighbour moves, the batches built from option indices, their bounds' parts
    (`costing.BoundParts`) and the prepared part (`costing.PreparedBatch`) of the batches' rows scored
    (`PreparedRows`), the last three up to SHARED_ROWS candidates each."""

    defaults: Candidates | None = None
    space: SystolicSpace | None = None
    per_row: dict[tuple, object] = field(default_factory=dict)   # a candidate's option indices, layout, neighbours
    built: dict[tuple, Candidates] = field(default_factory=dict)   # by (group, option and order indices)
    bounded: dict[int, tuple[Candidates, BoundParts]] = field(default_factory=dict)   # by id of the batch
    prepared_rows: dict[int, PreparedRows] = field(default_factory=dict)   # by id of the batch
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("built", "bounded"), 0))   # `keep`'s

    def keep(self, store: str, key: object, value: object, rows: int) -> None:
        """`value` under `key` in the dict named `store`, if that dict still has room for `rows` candidates."""
        if self.rows[store] + rows <= SHARED_ROWS[store]:
            getattr(self, store)[key] = value
            self.rows[store] += rows

    def keep_rows(self, kept: PreparedRows) -> None:
        """Keep `kept` (just grown) with its batch while every batch's prepared rows fit SHARED_ROWS; else let it
        go, so the store stays within it."""
        key = id(kept.candidates)
        others = sum(len(p.rows) for k, p in self.prepared_rows.items() if k != key)
        if others + len(kept.rows) <= SHARED_ROWS["prepared"]:
            self.prepared_rows[key] = kept
        else:
            self.prepared_rows.pop(key, None)

    def held(self, store: str, candidates: Candidates) -> object | None:
        """What the dict named `store` keeps for this very batch (by its identity: the entry holds the batch, so
        its id stays its own), else None."""
        found = getattr(self, store).get(id(candidates))
        return found[1] if found is not None and found[0] is candidates else None

    def for_batch(self, store: str, candidates: Candidates, compute: Callable[[], T]) -> T:
        """`compute()` of a batch, kept in the dict named `store` by the batch's identity while it has room."""
        found = self.held(store, candidates)
        if found is not None:
            return found
        value = compute()
        self.keep(store, id(candidates), (candidates, value), len(candidates))
        return value


@dataclass(frozen=True, eq=False)
class SystolicMapspace:
    """A contraction on a systolic engine within an arch, as the mapper sees it (`spec.mapspace.Mapspace`).

    Cheap to build: the factor options (`space`) are computed on first use, so a re-score of a cached mapping
    or the 'dataflow' method never builds them. What only the structure decides lives in `work`, which `shared`
    hands to the mapspaces of other designs with the same structure (designs that differ in capacities,
    bandwidths, clocks or energies): they score the same candidates from the same loop nests.
    """

    einsum: Einsum
    workload: Workload
    arch: Arch
    engine: SystolicEngine
    pins: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()   # ((rank, ((slot, factor), ...)), ...)
    work: SharedWork = field(default_factory=SharedWork)

    @property
    def settings(self) -> MapperSpec:
        """The engine's `mapper:` settings."""
        return self.engine.mapper

    @property
    def pinned(self) -> bool:
        """Some factor is pinned (the dataflow-implied mappings then are not candidates)."""
        return bool(self.pins)

    @property
    def groups(self) -> tuple[int, ...]:
        """The allowed dataflows' codes."""
        flow = self.engine.dataflow
        return tuple(range(len(DATAFLOW_CODES))) if flow == "any" else (DATAFLOW_CODES.index(flow),)

    def key(self) -> tuple[tuple, tuple[str, ...]]:
        """Einsum shape, engine, the arch's mapping-relevant parts and the pins; the tensors in shape-key order."""
        shape, names = self.arch.shape_key(self.workload, self.einsum)
        return (shape, self.engine, mapping_key(self.arch), self.pins), names

    def structure_key(self) -> tuple:
        """What decides the candidates and their prepared scores: the einsum's shape and tensors, the engine, the
        arch's level layout (not capacities, bandwidths or energies: `spec.mapspace.layout_key`) and the pins."""
        shape, names = self.workload.shape_key(self.einsum)
        return shape, names, self.engine, layout_key(self.arch), self.pins

    def shared(self, shelf: MutableMapping[tuple, object]) -> SystolicMapspace:
        """This mapspace with the `SharedWork` of its structure on `shelf` (left there if it is the first)."""
        key = self.structure_key()
        work = shelf.get(key)
        if work is None:
            shelf[key] = work = self.work
        return self if work is self.work else replace(self, work=work)

    def defaults(self) -> Candidates:
        """The mapping each allowed dataflow implies (SCALE-Sim's folds: what `SystolicEngine.cost` runs)."""
        if self.work.defaults is None:
            self.work.defaults = Candidates(*implied_batch(self.einsum, self.workload, self.arch, self.engine))
        return self.work.defaults

    def frugal(self) -> Candidates:
        """Each allowed dataflow's mapping onto one PE: every operand crosses the array's edge one element a cycle,
        so its staging needs the least room (`_infeasible` judges by it and by the full-array defaults)."""
        return Candidates(*array_batch(self.einsum, self.workload, self.arch, 1, 1, _flows(self.engine)))

    @property
    def space(self) -> SystolicSpace:
        """The factor options and loop orders (unpinned, they include the implied mappings' uneven splits)."""
        if self.work.space is None:
            seeds = None if self.pinned else self.defaults()
            self.work.space = systolic_space(self.einsum, self.workload, self.arch, self.engine,
                                             {rank: dict(slots) for rank, slots in self.pins} or None,
                                             None if seeds is None else seeds.mappings,
                                             None if seeds is None else seeds.group)
        return self.work.space

    def label(self, group: int) -> str:
        """'os dataflow' | 'ws dataflow' | 'is dataflow'."""
        return f"{DATAFLOW_CODES[group]} dataflow"

    def size(self, group: int | None = None) -> int:
        """Number of mappings, of one dataflow or all allowed."""
        return self.space.size(group)

    def candidates(self, group: int, choice: np.ndarray, order: np.ndarray) -> Candidates:
        """Candidates from option indices `choice` (B, R) and order indices `order` (B, L) of one dataflow (the same
        object for the same indices while `work` has room, so that its prepared scores are found again)."""
        key = (group, choice.shape, order.shape, choice.astype(np.int64).tobytes(), order.astype(np.int64).tobytes())
        found = self.work.built.get(key)
        if found is None:
            found = Candidates(self.space.batch(group, choice, order), np.full(len(choice), group, dtype=np.int64))
            self.work.keep("built", key, found, len(found))
        return found

    def batch_of(self, parts: Sequence[tuple[int, np.ndarray, np.ndarray]], lead: Candidates | None = None
                 ) -> Candidates:
        """The candidates of several (dataflow, option indices, order indices) batches as one, after `lead`'s, kept
        like `candidates` (by the indices and `lead`'s rows) so that a sweep's designs with this structure find its
        prepared scores again."""
        if not parts and lead is not None:
            return lead
        key = ("batch_of", None if lead is None else candidate_key(lead.mappings, lead.group).tobytes(),
               *((g, c.shape, o.shape, c.astype(np.int64).tobytes(), o.astype(np.int64).tobytes())
                 for g, c, o in parts))
        found = self.work.built.get(key)
        if found is None:
            groups = np.concatenate([np.full(len(c), g, dtype=np.int64) for g, c, _ in parts])
            found = Candidates(self.space.batch_of(parts), groups)
            if lead is not None:
                found = Candidates.concat([lead, found])
            self.work.keep("built", key, found, len(found))
        return found

    def enumerate(self, chunk: int) -> Iterator[Candidates]:
        """Every mapping, in batches of at most `chunk`."""
        for batch, flows in self.space.enumerate(chunk):
            yield Candidates(batch, flows)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[int, np.ndarray, np.ndarray]:
        """(dataflow, option indices, order indices) drawn uniformly."""
        return self.space.sample(rng, n)

    def locate(self, candidates: Candidates, i: int) -> np.ndarray | None:
        """Option indices of candidate `i`'s factors, or None when they are not options."""
        found = self._kept(self._row_key("locate", candidates, i),
                           lambda: self.space.locate(int(candidates.group[i]), candidates.mappings, i))
        return None if found is None else found.copy()

    @staticmethod
    def _row_key(what: str, candidates: Candidates, i: int) -> tuple:
        """A key of candidate `i` by what decides answers about it: its dataflow and factors."""
        batch = candidates.mappings
        return what, int(candidates.group[i]), batch.spatial[i].tobytes(), batch.temporal[i].tobytes()

    def _kept(self, key: tuple, compute: Callable[[], object]) -> object:
        """`compute()`, an answer that `key` and the structure decide, kept in `work` (callers do not modify it)."""
        if key not in self.work.per_row:
            self.work.per_row[key] = compute()
        return self.work.per_row[key]

    def neighbours(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One rank's factor option or one level's loop order changed."""
        key = ("neighbours", group, choice.astype(np.int64).tobytes(), order.astype(np.int64).tobytes())
        choices, orders = self._kept(key, lambda: self.space.neighbours(group, choice, order))
        return choices.copy(), orders.copy()

    def near(self, group: int, choice: np.ndarray) -> list[np.ndarray]:
        """Per rank, the options within one factor move."""
        return self.space.near(group, choice)

    def pair_neighbours(self, group: int, choice: np.ndarray, order: np.ndarray,
                        subsets: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Two ranks' options, or one rank's option and one level's order, changed."""
        key = ("pairs", group, choice.astype(np.int64).tobytes(), order.astype(np.int64).tobytes(),
               None if subsets is None else tuple(s.astype(np.int64).tobytes() for s in subsets))
        choices, orders = self._kept(key, lambda: self.space.pair_neighbours(group, choice, order, subsets))
        return choices.copy(), orders.copy()

    def pair_count(self, group: int, subsets: list[np.ndarray] | None = None) -> int:
        """Size of `pair_neighbours`."""
        return self.space.pair_count(group, subsets)

    def retiled(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mapping with its stream split at the outermost level (`SystolicSpace.streamed_splits`)."""
        key = ("retiled", group, choice.astype(np.int64).tobytes(), order.astype(np.int64).tobytes())
        choices, orders = self._kept(key, lambda: self.space.streamed_splits(group, choice, order))
        return choices.copy(), orders.copy()

    def score(self, candidates: Candidates) -> SystolicScores:
        """Fold timing, loop-nest traffic, energy and fit of every candidate (`costing.systolic_scores`, by
        `score_rows`)."""
        return self.score_rows(candidates, np.arange(len(candidates)))

    def score_rows(self, candidates: Candidates, rows: np.ndarray) -> SystolicScores:
        """`score` of the candidates at `rows` of a batch. Each distinct candidate's prepared part is computed once
        and kept with the batch (`PreparedRows`) while `work` has room, so other rows of it, or the same rows on
        another design of this structure (a search keeps different rows of a batch at each capacity), are
        prepared only where new; equal candidates (a third of a CP-SAT descent's merged neighbourhoods) are scored
        once."""
        kept = self.work.prepared_rows.get(id(candidates))
        if kept is None or kept.candidates is not candidates:
            kept = PreparedRows.of(candidates)
        bounded = self.work.held("bounded", candidates)   # its bounds' fold timing, if this batch was bounded
        if kept.add(rows, lambda new: systolic_prepare(
                self.einsum, self.workload, self.arch, self.engine, candidates.mappings.rows(new),
                candidates.group[new], None if bounded is None else bounded.timing.rows(new))):
            self.work.keep_rows(kept)
        at, inverse = distinct_indices(kept.position[rows], len(kept.rows))
        scores = prepared_scores(self.einsum, self.workload, self.arch, self.engine, kept.prepared(at))
        return scores.rows(inverse)   # equal candidates share their detail: six (B,) arrays gathered

    def bounds(self, candidates: Candidates, objective: str) -> np.ndarray:
        """`objective` of each candidate's `costing.systolic_bounds`: its fold timing against compulsory traffic
        (the parts the structure decides kept in `work` by the batch's identity, as `score_rows` keeps its own)."""
        parts = self.work.for_batch("bounded", candidates, lambda: bound_parts(
            self.einsum, self.workload, self.engine, candidates.mappings, candidates.group))
        return objective_figure(*systolic_bounds(self.einsum, self.workload, self.arch, self.engine, parts),
                                objective)

    def cost_of(self, candidates: Candidates, scores: SystolicScores, i: int) -> Cost:
        """Candidate `i` as a Cost."""
        return systolic_cost_of(self.einsum, self.workload, self.arch, self.engine, scores, i)

    def mac_cycles(self) -> int:
        """Cycles a PE takes per MAC of this einsum's operands (`SystolicEngine.operand_passes`)."""
        return self.engine.operand_passes(self.einsum, self.workload)

    def layout(self, candidates: Candidates, i: int) -> tuple[AxisLayout, ...]:
        """The axes whose folds the timing counts im2col-flattened (`fold_timing.axis_folds`): their ranks packed
        ceil(prod of sizes / folds) per fold, not the per-rank spatial factors of the mapping."""
        return self._kept(self._row_key("layout", candidates, i), lambda: self._layout(candidates, i))

    def _layout(self, candidates: Candidates, i: int) -> tuple[AxisLayout, ...]:
        """`layout`, computed."""
        one = candidates.rows(slice(i, i + 1))
        batch = one.mappings
        roles = gemm_roles(self.einsum, self.workload.tensor_map)
        flow_masks = role_masks(self.einsum, roles, batch.rank_names)
        masks = flow_masks[one.group]
        out = []
        for place, axis in enumerate(("rows", "cols")):
            counted = axis_folds(self.einsum, self.engine, flow_masks, one.group, batch, place)
            folds, packed = (int(v[0]) for v in counted)
            if not packed:
                continue
            ranks = tuple(r for r, on in zip(batch.rank_names, masks[0, place]) if on)
            flat = math.prod(self.einsum.sizes[r] for r in ranks)
            level = next(lv for li, lv in enumerate(batch.level_names)
                         if any(batch.temporal[0, li, batch.rank_names.index(r)] > 1 for r in ranks))
            out.append(AxisLayout(axis, ranks, fold_count(flat, folds), folds, True, level))
        return tuple(out)

    def infeasible(self, searched: bool) -> InfeasibleError:
        """The constraint family at fault: empty spatial options (when the space was searched), else the
        smallest tile exceeding a buffer."""
        return _infeasible(self.einsum, self.workload, self.arch, self.engine, self.space if searched else None)

    def proxy(self, objective: str, time_limit_s: float, seed: int, reference: tuple[float, float],
              hints: dict[int, list[np.ndarray]]) -> ProxyFound:
        """The CP-SAT proxy's near-optimal mappings (`systolic_cpsat.solve`)."""
        # ortools is heavy (about 0.7 s to import): only the 'cpsat' method loads it
        from accel_sim.engines.systolic_cpsat import solve

        return solve(self.space, self.einsum, self.workload, self.arch, self.engine, objective, time_limit_s, seed,
                     reference=reference, hints=hints)


def systolic_mapspace(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                      pinned: MappingType[str, MappingType[str, int]] | None = None) -> SystolicMapspace:
    """The mapspace of a contraction on `engine`; `pinned` fixes factors: {rank: {'rows'|'cols'|level: factor}}."""
    pins = tuple(sorted((r, tuple(sorted(s.items()))) for r, s in (pinned or {}).items()))
    return SystolicMapspace(einsum, workload, arch, engine, pins)


def _flows(engine: SystolicEngine) -> tuple[str, ...]:
    """The dataflows `engine` may run."""
    return DATAFLOW_CODES if engine.dataflow == "any" else (engine.dataflow,)


def _infeasible(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                space: SystolicSpace | None) -> InfeasibleError:
    """The constraint family at fault: empty spatial options, or the level that even spilled tiles overfill."""
    if space is not None:
        for d in space.dataflows:
            for r, opts in zip(space.rank_names, space.options[d]):
                if len(opts) == 0:
                    return InfeasibleError(
                        f"einsum '{einsum.name}' on '{engine.name}' ({DATAFLOW_CODES[d]}): spatial/PE-count "
                        f"constraints leave rank '{r}' (size {einsum.sizes[r]}) no legal factor on a "
                        f"{engine.rows} x {engine.cols} array with the pinned factors. Fix: pin factors that "
                        f"multiply to at least {einsum.sizes[r]} and fit the array")
    # a searched space also maps onto part of the array: the least-staging candidates are the full-array mapping's
    # and the one-PE mapping's (every operand crosses the edge one element a cycle), whichever needs less at the
    # level; the 'dataflow' method tries the full-array mapping only
    batch, codes = implied_batch(einsum, workload, arch, engine)
    candidates = [(engine.rows, engine.cols, batch, codes)]
    if space is not None:
        candidates.append((1, 1, *array_batch(einsum, workload, arch, 1, 1, _flows(engine))))
    return unfit_error(einsum, workload, arch, engine.name, engine.rows, engine.cols, candidates,
                       engine.accumulator_width_bits)
