"""What `GpuEngine.mapspace` hands the mapper (the `spec.mapspace.Mapspace` protocol): a contraction's GEMM kernels.

Groups are the engine's CTA tiles (`GpuEngine.tiles`, CUTLASS's shapes); within a group the one choice is the
split-K factor (`GpuEngine.splits`, those no larger than the einsum's largest reduced rank, which carries the
split). The defaults are every tile unsplit; local search then tries every split of each, so 'local' sees the
whole space (a few dozen kernels). The scorer is `gpu_kernel.kernel_scores`, vectorized over candidates.

A candidate is also a `Mapping` for printing and caching: the outer memory level holds the grid (tile counts
along M and N, the batch, the split), the innermost the CTA tile (BM rows and BN columns, spread innermost rank
first over the ranks of M and of N, and K / S of the reduction).
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.engines.gpu_kernel import (GemmProblem, KernelScores, TileArrays, cta_limits, gemm_problem, kernel_cost,
                                          kernel_scores, level_roles)
from accel_sim.engines.loopnest import gemm_roles
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count
from accel_sim.spec.mapping import MappingBatch, rank_names, tensor_names
from accel_sim.spec.mapspace import (AxisLayout, Candidates, MapperSpec, ProxyFound, joined_batch, mapping_key,
                                     no_moves)

if TYPE_CHECKING:
    from accel_sim.engines.gpu import GpuEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload

AXIS = "sms"


@dataclass(frozen=True, eq=False)
class GpuMapspace:
    """A contraction's CTA tiles and split-K factors on a GPU engine within an arch."""

    einsum: Einsum
    workload: Workload
    arch: Arch
    engine: GpuEngine
    pinned: bool = False
    resident: frozenset[str] = frozenset()   # tensors a fused kernel keeps in the SMs (GpuEngine.resident_cost)

    @property
    def settings(self) -> MapperSpec:
        """The engine's `mapper:` settings."""
        return self.engine.mapper

    @property
    def groups(self) -> tuple[int, ...]:
        """One group per CTA tile."""
        return tuple(range(len(self.engine.tiles)))

    def key(self) -> tuple[tuple, tuple[str, ...]]:
        """Einsum shape, engine and the arch's mapping-relevant parts; the tensors in shape-key order."""
        shape, names = self.arch.shape_key(self.workload, self.einsum)
        return (shape, self.engine, mapping_key(self.arch), tuple(sorted(self.resident))), names

    @cached_property
    def problem(self) -> GemmProblem:
        """The GEMM view with its operands' footprints."""
        return gemm_problem(self.einsum, self.workload)

    @cached_property
    def roles(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(M, N, K, batch) ranks."""
        return gemm_roles(self.einsum, self.workload.tensor_map)

    @cached_property
    def split_rank(self) -> str | None:
        """The reduced rank that carries the split (the largest; None when nothing is reduced)."""
        k_ranks = self.roles[2]
        return max(k_ranks, key=lambda r: self.einsum.sizes[r]) if k_ranks else None

    @cached_property
    def splits(self) -> np.ndarray:
        """The split-K factors allowed for this einsum."""
        largest = self.einsum.sizes[self.split_rank] if self.split_rank else 1
        return np.array([s for s in self.engine.splits if s <= largest], dtype=np.int64)

    def label(self, group: int) -> str:
        """'128x256x64/4 CTA tile' (tile and stages)."""
        return f"{self.engine.tiles[group].label} CTA tile"

    def size(self, group: int | None = None) -> int:
        """Number of kernels, of one tile or all."""
        return len(self.splits) * (1 if group is not None else len(self.groups))

    def tile_arrays(self, group: np.ndarray, choice: np.ndarray) -> TileArrays:
        """The tiles of `group` with the splits of `choice` as arrays."""
        tiles = self.engine.tiles
        pick = lambda attr: np.array([getattr(tiles[g], attr) for g in group], dtype=np.int64)  # noqa: E731
        return TileArrays(pick("m"), pick("n"), pick("k"), pick("stages"), pick("warps"), self.splits[choice[:, 0]])

    def candidates(self, group: int, choice: np.ndarray, order: np.ndarray) -> Candidates:
        """Kernels of one tile from split indices `choice` (B, 1)."""
        groups = np.full(len(choice), group, dtype=np.int64)
        return Candidates(self._batch(groups, choice), groups)

    def batch_of(self, parts: Sequence[tuple[int, np.ndarray, np.ndarray]], lead: Candidates | None = None
                 ) -> Candidates:
        """The candidates of several (tile, split indices, order) batches as one, after `lead`'s."""
        return joined_batch(self, parts, lead)

    def all(self) -> Candidates:
        """Every kernel: each tile with each split."""
        n_g, n_s = len(self.groups), len(self.splits)
        groups = np.repeat(np.arange(n_g, dtype=np.int64), n_s)
        choice = np.tile(np.arange(n_s, dtype=np.int64), n_g)[:, None]
        return Candidates(self._batch(groups, choice), groups)

    def _batch(self, groups: np.ndarray, choice: np.ndarray) -> MappingBatch:
        """Mappings of kernels: the grid at the outer level, the CTA tile at the innermost (module docstring)."""
        ranks, levels = rank_names(self.einsum), tuple(lv.name for lv in self.arch.memory)
        b, n_l, n_r = len(groups), len(levels), len(ranks)
        tiles = self.tile_arrays(groups, choice)
        sizes = self.einsum.sizes
        outer = np.ones((b, n_r), dtype=np.int64)
        inner = np.ones((b, n_r), dtype=np.int64)
        m_ranks, n_ranks, k_ranks, batch_ranks = self.roles
        for role_ranks, extent in ((m_ranks, tiles.bm), (n_ranks, tiles.bn)):
            left = extent.copy()
            for r in reversed(role_ranks):   # innermost rank first
                i = ranks.index(r)
                inner[:, i] = np.minimum(sizes[r], left)
                outer[:, i] = fold_count(sizes[r], inner[:, i])
                left = np.maximum(left // inner[:, i], 1)
        for r in k_ranks:
            i = ranks.index(r)
            split = tiles.split if r == self.split_rank else 1
            outer[:, i] = split
            inner[:, i] = fold_count(sizes[r], split)
        for r in batch_ranks:
            outer[:, ranks.index(r)] = sizes[r]
        temporal = np.ones((b, n_l, n_r), dtype=np.int64)
        temporal[:, 0] = outer
        temporal[:, -1] *= inner
        order = np.tile(np.arange(n_r, dtype=np.int64), (b, n_l, 1))
        return MappingBatch(ranks, levels, (AXIS,), tensor_names(self.einsum), temporal, order,
                            np.ones((b, 1, n_r), dtype=np.int64),
                            np.zeros((b, n_l, len(tensor_names(self.einsum))), dtype=bool),
                            np.full(b, n_l - 1, dtype=np.int64))

    def defaults(self) -> Candidates:
        """Every tile unsplit."""
        groups = np.arange(len(self.groups), dtype=np.int64)
        return Candidates(self._batch(groups, np.zeros((len(groups), 1), dtype=np.int64)), groups)

    def frugal(self) -> Candidates:
        """The defaults: every tile is one of them, the smallest included."""
        return self.defaults()

    def enumerate(self, chunk: int) -> Iterator[Candidates]:
        """Every kernel, in batches of at most `chunk`."""
        every = self.all()
        for start in range(0, len(every), chunk):
            yield every.rows(slice(start, start + chunk))

    def sample(self, rng: np.random.Generator, n: int) -> tuple[int, np.ndarray, np.ndarray]:
        """(a tile, split indices (n, 1), orders) drawn uniformly."""
        group = int(rng.integers(0, len(self.groups)))
        return group, rng.integers(0, len(self.splits), (n, 1)), np.zeros((n, len(self.arch.memory)), np.int64)

    def locate(self, candidates: Candidates, i: int) -> np.ndarray | None:
        """The split index of candidate `i` (read from the outer level's factor of the split rank)."""
        if self.split_rank is None or len(self.arch.memory) < 2:
            return np.zeros(1, dtype=np.int64)
        batch = candidates.mappings
        split = int(batch.temporal[i, 0, batch.rank_names.index(self.split_rank)])
        found = np.flatnonzero(self.splits == split)
        return found[:1] if len(found) else None

    def neighbours(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every split of the same tile."""
        n = len(self.splits)
        return np.arange(n, dtype=np.int64)[:, None], np.tile(order, (n, 1))

    def near(self, group: int, choice: np.ndarray) -> list[np.ndarray]:
        """The splits next to the current one."""
        c = int(choice[0])
        return [np.arange(max(c - 1, 0), min(c + 2, len(self.splits)), dtype=np.int64)]

    def pair_neighbours(self, group: int, choice: np.ndarray, order: np.ndarray,
                        subsets: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One choice only: the neighbours."""
        return self.neighbours(group, choice, order)

    def pair_count(self, group: int, subsets: list[np.ndarray] | None = None) -> int:
        """Size of `pair_neighbours`."""
        return len(self.splits)

    def retiled(self, group: int, choice: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """None: a kernel's one choice, its split, is all `neighbours` already walks."""
        return no_moves(choice, order)

    def shared(self, shelf: MutableMapping[tuple, object]) -> GpuMapspace:
        """Itself: nothing is worth keeping between scorings."""
        return self

    def _split_indices(self, candidates: Candidates) -> np.ndarray:
        """Split index per candidate (from its mapping)."""
        if self.split_rank is None or len(self.arch.memory) < 2:
            return np.zeros((len(candidates), 1), dtype=np.int64)
        batch = candidates.mappings
        split = batch.temporal[:, 0, batch.rank_names.index(self.split_rank)]
        return np.searchsorted(self.splits, split)[:, None]

    def score(self, candidates: Candidates) -> KernelScores:
        """Exact kernel costs of every candidate (`gpu_kernel.kernel_scores`)."""
        tiles = self.tile_arrays(candidates.group, self._split_indices(candidates))
        keeps = level_roles(self.problem, self.workload, self.einsum, self.arch, self.resident)
        return kernel_scores(self.engine, self.problem, keeps, self.arch, tiles)

    def score_rows(self, candidates: Candidates, rows: np.ndarray) -> KernelScores:
        """`score` of the candidates at `rows` (a search scores every kernel candidate: `bounds`)."""
        return self.score(candidates.rows(rows))

    def bounds(self, candidates: Candidates, objective: str) -> None:
        """None: a kernel's candidates are few (its CTA tiles and split-K counts), so every one is scored."""
        return None

    def cost_of(self, candidates: Candidates, scores: KernelScores, i: int) -> Cost:
        """Candidate `i` as a Cost."""
        keeps = level_roles(self.problem, self.workload, self.einsum, self.arch, self.resident)
        return kernel_cost(self.engine, self.problem, keeps, self.arch, scores, i, self.einsum.macs)

    def layout(self, candidates: Candidates, i: int) -> tuple[AxisLayout, ...]:
        """The mapping states the grid and the tile."""
        return ()

    def mac_cycles(self) -> int:
        """One: a width's tensor-core rate is the engine's rate table (`mac_rate`), not passes."""
        return 1

    def infeasible(self, searched: bool) -> InfeasibleError:
        """No CTA tile runs: name the per-CTA limit (shared memory, registers, threads) that excludes them."""
        p = self.problem
        every = self.all()
        tiles = self.tile_arrays(every.group, np.zeros((len(every), 1), dtype=np.int64))
        limits = cta_limits(self.engine, tiles, p.a_bits, p.b_bits)
        where = f"einsum '{self.einsum.name}' on '{self.engine.name}'"
        binding = next((limit for limit in limits if limit.exceeded.all()), None)
        if binding is not None:
            return InfeasibleError(
                f"{where}: no CTA tile fits an SM: every tile exceeds the limit of {binding.what} (the least any "
                f"needs is {binding.need.min():,.0f} {binding.unit}, against {binding.allowed:,.0f}). "
                f"Fix: {binding.fix}")
        excluded = np.logical_or.reduce([limit.exceeded for limit in limits])
        if excluded.all():   # each tile is over some limit, but no one limit excludes them all
            counts = ", ".join(f"{len(set(every.group[limit.exceeded].tolist()))} by {limit.what}"
                               for limit in limits if limit.exceeded.any())
            return InfeasibleError(f"{where}: no CTA tile fits an SM ({len(self.groups)} tiles excluded: {counts}). "
                                   f"Fix: list tiles within the limits under 'tiles', or raise the limits")
        return InfeasibleError(f"{where}: no kernel has a finite time or energy (some tiles fit an SM). Fix: check "
                               f"launch_overhead, memory_latency, tdp and the memory levels' bandwidths for values "
                               f"far outside any GPU")

    def proxy(self, objective: str, time_limit_s: float, seed: int, reference: tuple[float, float],
              hints: dict[int, list[np.ndarray]]) -> ProxyFound | None:
        """No proxy model: the space is small enough to score whole."""
        return None
