"""What an engine offers the mapper: its mapspace (the legal choices for one einsum) and a vectorized scorer.

Engines define the choices and how they score (`EngineBase.mapspace`); the mapper (`accel_sim.mapper`) only
searches. A mapspace is one or more *groups* (independent sub-spaces, e.g. a systolic array's dataflows), each
the product of categorical choices: per rank an index into its factor options (`choice`, shape (R,)) and per
memory level an index into its loop orders (`order`, shape (L,)). `candidates` turns index arrays into a batch
of `Mapping`s the scorer costs all at once. The search moves through index space (neighbours: one choice
changed; pair neighbours: two) and never interprets a choice.

`MapperSpec` is how a YAML engine asks to be mapped (`mapper:` key): the search method, its limit, its seed and
the factors it pins.
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, Field

from accel_sim.spec.fields import SPEC_CONFIG, PositiveFloat, PositiveInt
from accel_sim.spec.mapping import MappingBatch, concat_batches

if TYPE_CHECKING:
    from accel_sim.errors import InfeasibleError
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost

T = TypeVar("T", float, np.ndarray)   # a figure of one choice, or of every candidate of a batch


class PinnedFactor(BaseModel):
    """One factor the mapper must use: rank `rank` takes `factor` at `slot` (an engine axis or a memory level)."""

    model_config = SPEC_CONFIG

    rank: str
    slot: str
    factor: PositiveInt


class MapperSpec(BaseModel):
    """How `accel-sim run` maps each einsum on an engine (YAML key `mapper:` of an engine with choices).

    method: 'local' (default: exact local search from the engine's default mappings, fast enough for whole
    networks), 'cpsat' (the CP-SAT mapper), 'exhaustive', 'random', or 'dataflow' (only the default mappings,
    e.g. SCALE-Sim's folds). `pin` fixes factors for every einsum that has the named rank.
    """

    model_config = SPEC_CONFIG

    method: Literal["local", "cpsat", "exhaustive", "random", "dataflow"] = "local"
    time_limit_s: PositiveFloat = Field(0.03, alias="time_limit")  # seconds per distinct einsum shape
    seed: int = 0
    pin: tuple[PinnedFactor, ...] = ()


def pins_for(spec: MapperSpec, ranks: set[str]) -> dict[str, dict[str, int]]:
    """The pinned factors of `spec` for an einsum with `ranks`, as {rank: {slot: factor}}."""
    pinned: dict[str, dict[str, int]] = {}
    for pin in spec.pin:
        if pin.rank in ranks:
            pinned.setdefault(pin.rank, {})[pin.slot] = pin.factor
    return pinned


def layout_key(arch: Arch) -> tuple:
    """The parts of an arch that decide a mapping's loop nest (which levels keep which tensor, and so its tiles and
    element counts): per level, name, technology and what it holds (roles and name patterns)."""
    return tuple((lv.name, lv.technology, lv.holds, lv.tensors) for lv in arch.memory)


def mapping_key(arch: Arch) -> tuple:
    """The parts of an arch that decide which mappings are legal: its `layout_key` and each level's room for tiles
    (its capacity less the live tensors an einsum does not touch, `MemoryLevel.room_bytes`)."""
    return layout_key(arch), tuple(lv.room_bytes for lv in arch.memory)


@dataclass(frozen=True)
class Candidates:
    """A batch of candidate mappings of one einsum and the group (sub-space) each belongs to."""

    mappings: MappingBatch
    group: np.ndarray   # int64 (B,)

    def __len__(self) -> int:
        return len(self.mappings)

    def rows(self, rows: slice | np.ndarray) -> Candidates:
        """The candidates at `rows` (a slice or an index/boolean array)."""
        return Candidates(self.mappings.rows(rows), self.group[rows])

    @staticmethod
    def concat(parts: list[Candidates]) -> Candidates:
        """One batch from several of the same einsum (rows in order)."""
        return Candidates(concat_batches([p.mappings for p in parts]), np.concatenate([p.group for p in parts]))


class Scores(Protocol):
    """Exact costs of a batch of candidates: a dataclass of arrays whose first axis is the candidate."""

    total_cycles: np.ndarray
    energy_j: np.ndarray

    def __len__(self) -> int: ...

    def objective(self, objective: str) -> np.ndarray:
        """Cycles, joules or their product per candidate; +inf where a candidate does not fit."""
        ...


def objective_figure(cycles: T, joules: T, objective: str) -> T:
    """What `objective` minimizes: cycles (latency), joules (energy) or their product (edp), of scalars or arrays
    alike (the one definition: mappings, engines and whole plans are ranked by it)."""
    if objective == "latency":
        return cycles
    return joules if objective == "energy" else cycles * joules


def tie_break(cycles: T, joules: T, objective: str) -> T:
    """What orders choices of equal `objective_figure`: energy among equally fast ones, cycles among equally frugal
    ones (Timeloop's mapper compares its `optimization-metrics` list in order likewise; edp: energy)."""
    return cycles if objective == "energy" else joules


def fitting_objective(total_cycles: np.ndarray, energy_j: np.ndarray, fits: np.ndarray, objective: str) -> np.ndarray:
    """`objective_figure` per candidate; +inf where a candidate does not fit (what every engine's `Scores.objective`
    returns)."""
    return np.where(fits, objective_figure(total_cycles, energy_j, objective), np.inf)


def concat_scores(parts: list[Scores]) -> Scores:
    """One Scores from the scores of consecutive chunks: the type's own `concat` where it has one (systolic scores
    share their detail arrays), else every array field concatenated along the candidate axis."""
    joined = getattr(type(parts[0]), "concat", None)
    return joined(parts) if joined is not None else joined_rows(parts)


D = TypeVar("D")   # a dataclass whose array fields all have the candidate as their first axis


def rows_of(arrays: D, selection: slice | np.ndarray) -> D:
    """`arrays` (a dataclass whose array fields are all per candidate) for the candidates at `selection` (a slice or
    an index array); its other fields kept."""
    return replace(arrays, **{f.name: getattr(arrays, f.name)[selection] for f in fields(arrays)
                              if isinstance(getattr(arrays, f.name), np.ndarray)})


def joined_rows(parts: Sequence[D]) -> D:
    """One such dataclass of the candidates of `parts`, rows in order (the other fields the first part's)."""
    first = parts[0]
    return replace(first, **{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(first)
                             if isinstance(getattr(first, f.name), np.ndarray)})


@dataclass(frozen=True)
class AxisLayout:
    """How a scorer laid one engine axis out for a candidate: what the printed mapping must show.

    `packed`: the axis ranks are flattened (im2col) and cut into `folds` chunks of `extent` elements, which the
    mapping's per-rank spatial factors cannot state; their tile loops at `level` are those folds.
    """

    axis: str
    ranks: tuple[str, ...]
    extent: int            # elements on the axis per fold
    folds: int
    packed: bool
    level: str | None      # the level whose loops of `ranks` the folds are (packed only)


@dataclass(frozen=True)
class ProxyFound:
    """Candidates a proxy model (CP-SAT) proposes, as index arrays, with solver statistics for SearchStats."""

    group: np.ndarray      # (B,) group of each candidate
    choice: np.ndarray     # (B, R) option index per rank
    order: np.ndarray      # (B, L) order index per level
    stats: dict = field(default_factory=dict)


class Mapspace(Protocol):
    """The legal mappings of one einsum on one engine within an arch, and their exact vectorized scorer."""

    arch: Arch                  # the arch the einsum is mapped within (a cache hit on an equal one is reused as is)
    groups: tuple[int, ...]     # the sub-spaces, searched one by one
    pinned: bool                # factors are pinned: the default mappings are not offered as candidates
    settings: MapperSpec        # how the engine asks to be mapped

    def key(self) -> tuple[tuple, tuple[str, ...]]:
        """(a key equal for problems with the same legal mappings, the einsum's tensors in the key's order)."""
        ...

    def defaults(self) -> Candidates:
        """The engine's own mappings (what `cost` runs): a search is never worse than them."""
        ...

    def frugal(self) -> Candidates:
        """The mappings that need the least room at the levels: where no default fits, a search tries these before it
        calls the einsum infeasible (the mappings `infeasible` judges by)."""
        ...

    def label(self, group: int) -> str:
        """What a group is, for printing ('ws dataflow')."""
        ...

    def size(self, group: int | None = None) -> int:
        """Number of mappings, of one group or all."""
        ...

    def candidates(self, group: int, choice: np.ndarray, order: np.ndarray) -> Candidates:
        """The candidates of index arrays `choice` (B, R) and `order` (B, L) in `group`."""
        ...

    def batch_of(self, parts: Sequence[tuple[int, np.ndarray, np.ndarray]], lead: Candidates | None = None
                 ) -> Candidates:
        """The candidates of several (group, choice, order) index batches, in order, after `lead`'s if given, as one
        batch (scored in one pass, where the per-call set-up of many small batches would dominate)."""
        ...

    def enumerate(self, chunk: int) -> Iterator[Candidates]:
        """Every mapping, in batches of at most `chunk`."""
        ...

    def sample(self, rng: np.random.Generator, n: int) -> tuple[int, np.ndarray, np.ndarray]:
        """(group, choice (n, R), order (n, L)) drawn uniformly."""
        ...

    def locate(self, candidates: Candidates, i: int) -> np.ndarray | None:
        """The choice indices of candidate `i`, or None when it is outside the space."""
        ...

    def neighbours(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every mapping one step away: one rank's option or one level's order changed."""
        ...

    def near(self, group: int, choice: np.ndarray) -> list[np.ndarray]:
        """Per rank, the option indices one small move from the current one."""
        ...

    def pair_neighbours(self, group: int, choice: np.ndarray, order: np.ndarray,
                        subsets: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every mapping two steps away (options restricted to `subsets` when given)."""
        ...

    def pair_count(self, group: int, subsets: list[np.ndarray] | None = None) -> int:
        """Size of `pair_neighbours`."""
        ...

    def retiled(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mappings that re-tile this one as a compiler fits it to smaller buffers, chosen by the mapping alone
        (never by capacities, so a search that scores them stays monotone in capacity); (choices, orders)."""
        ...

    def shared(self, shelf: MutableMapping[tuple, object]) -> Mapspace:
        """This mapspace, keeping on `shelf` the work that only its structure decides (its candidates, and the part
        of their scores that capacities, bandwidths, clocks and energies leave unchanged) under a key of that
        structure, and reusing what the mapspace of another design or einsum with the same structure left there.
        Every result equals the unshared one's; an engine with nothing worth sharing returns `self`."""
        ...

    def score(self, candidates: Candidates) -> Scores:
        """Exact scores of every candidate in one vectorized pass."""
        ...

    def score_rows(self, candidates: Candidates, rows: np.ndarray) -> Scores:
        """`score` of the candidates at `rows` (an index array) of a batch whose `bounds` kept only some: a
        scorer may keep work per batch row for the other rows, or other designs, it scores later."""
        ...

    def bounds(self, candidates: Candidates, objective: str) -> np.ndarray | None:
        """Per candidate, an `objective` value its exact score never falls below, far cheaper than the score (a
        search scores only the candidates whose bound could still win); None: the engine has none."""
        ...

    def cost_of(self, candidates: Candidates, scores: Scores, i: int) -> Cost:
        """Candidate `i` of a scored batch as a full Cost."""
        ...

    def layout(self, candidates: Candidates, i: int) -> tuple[AxisLayout, ...]:
        """The spatial layout candidate `i` was costed with, per axis where it is not the mapping's own
        per-rank factors (empty: the mapping says it all)."""
        ...

    def mac_cycles(self) -> int:
        """Cycles the innermost MAC takes (operands wider than the multipliers take several passes; else 1)."""
        ...

    def infeasible(self, searched: bool) -> InfeasibleError:
        """The error naming the constraint family at fault when no candidate fits."""
        ...

    def proxy(self, objective: str, time_limit_s: float, seed: int, reference: tuple[float, float],
              hints: dict[int, list[np.ndarray]]) -> ProxyFound | None:
        """Near-optimal candidates of a proxy model (CP-SAT), hinted per group; None: the engine has none."""
        ...


def no_moves(choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(choices, orders) of no candidate, shaped like one (choice, order) row: a move set that is empty."""
    return np.empty((0, len(choice)), dtype=np.int64), np.empty((0, len(order)), dtype=np.int64)


def joined_batch(space: Mapspace, parts: Sequence[tuple[int, np.ndarray, np.ndarray]],
                 lead: Candidates | None = None) -> Candidates:
    """`Mapspace.batch_of` for a space that keeps nothing between scorings: `lead`, then each part's candidates."""
    return Candidates.concat([*([] if lead is None else [lead]), *(space.candidates(g, c, o) for g, c, o in parts)])
