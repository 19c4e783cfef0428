"""Mappings: how an einsum's iteration space is tiled over memory levels, ordered, and unrolled onto PEs.

The loop nest a mapping describes, outermost first (Timeloop's convention, Parashar et al., ISPASS 2019):

    for <loops of memory level 0>         # temporal factors of level 0, in its loop order
      for <loops of memory level 1>
        ...
          for <loops of level `spatial_below`>
            parallel-for <spatial loops>  # one factor per (engine axis, rank)
              for <loops of the levels below the fan-out>  (per-PE levels)
                PE: one operator application

The tile a level holds is the data touched by its own loops and every loop inside it (inner levels and,
when the fan-out sits below it, the spatial loops). `bypass` lists, per level, the tensors that level
does not keep; their traffic passes to the next level that keeps them.

`Mapping` is one candidate as named data; `MappingBatch` is B candidates as numpy arrays, the form the
mapper generates and `accel_sim.engines.loopnest.analyze` scores in one vectorized pass.
"""
from __future__ import annotations

import math
from collections.abc import Mapping as MappingType
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.errors import InfeasibleError

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum

Factors = tuple[tuple[str, int], ...]


def _frozen_factors(table: MappingType[str, MappingType[str, int]] | None) -> tuple[tuple[str, Factors], ...]:
    return tuple((key, tuple((rank, int(f)) for rank, f in inner.items())) for key, inner in (table or {}).items())


def tensor_names(einsum: Einsum) -> tuple[str, ...]:
    """Tensors of an einsum in the fixed order mappings use: distinct inputs (first use), then the output."""
    out = einsum.output.tensor
    inputs = dict.fromkeys(a.tensor for a in einsum.inputs if a.tensor != out)
    return (*inputs, out)


def rank_names(einsum: Einsum) -> tuple[str, ...]:
    """Ranks of an einsum's iteration space, in its declared order."""
    return tuple(r for r, _ in einsum.rank_sizes)


@dataclass(frozen=True)
class Mapping:
    """One candidate mapping; build it with `Mapping.of(...)` from plain dicts."""

    temporal: tuple[tuple[str, Factors], ...] = ()          # level -> ((rank, factor), ...); missing: 1
    order: tuple[tuple[str, tuple[str, ...]], ...] = ()      # level -> ranks outer -> inner; missing: declared
    spatial: tuple[tuple[str, Factors], ...] = ()           # engine axis -> ((rank, factor), ...)
    bypass: tuple[tuple[str, tuple[str, ...]], ...] = ()     # level -> tensors it does not keep
    spatial_below: str | None = None                         # level the fan-out sits below; None: innermost

    @staticmethod
    def of(temporal: MappingType[str, MappingType[str, int]] | None = None,
           order: MappingType[str, Sequence[str]] | None = None,
           spatial: MappingType[str, MappingType[str, int]] | None = None,
           bypass: MappingType[str, Sequence[str]] | None = None,
           spatial_below: str | None = None) -> Mapping:
        """A Mapping from dicts, e.g. ``Mapping.of({"dram": {"n": 4}}, spatial={"rows": {"k": 16}})``."""
        return Mapping(_frozen_factors(temporal),
                       tuple((lv, tuple(ranks)) for lv, ranks in (order or {}).items()),
                       _frozen_factors(spatial),
                       tuple((lv, tuple(ts)) for lv, ts in (bypass or {}).items()),
                       spatial_below)

    def factors(self, level: str) -> dict[str, int]:
        """Temporal factors given for `level` (ranks not listed have factor 1)."""
        return dict(dict(self.temporal).get(level, ()))

    def loop_order(self, level: str, einsum: Einsum) -> tuple[str, ...]:
        """Loop order of `level`, outer -> inner (the einsum's declared rank order when not given)."""
        return dict(self.order).get(level, rank_names(einsum))

    def spatial_factors(self, axis: str) -> dict[str, int]:
        """Spatial factors on engine axis `axis` (ranks not listed have factor 1)."""
        return dict(dict(self.spatial).get(axis, ()))

    def with_tensor_names(self, names: MappingType[str, str]) -> Mapping:
        """The same mapping with its bypassed tensors renamed (reusing a mapping for a same-shaped einsum)."""
        return replace(self, bypass=tuple((lv, tuple(names.get(t, t) for t in ts)) for lv, ts in self.bypass))

    def bypassed(self, level: str) -> tuple[str, ...]:
        """Tensors that `level` does not keep."""
        return dict(self.bypass).get(level, ())

    def fanout_level(self, arch: Arch) -> str:
        """Name of the level the spatial fan-out sits below."""
        return self.spatial_below if self.spatial_below is not None else arch.memory[-1].name

    def check(self, einsum: Einsum, arch: Arch, axes: MappingType[str, int]) -> None:
        """Raise InfeasibleError naming the first illegal choice (names, permutations, factor products)."""
        levels = [m.name for m in arch.memory]
        ranks = rank_names(einsum)
        tensors = tensor_names(einsum)
        where = f"mapping of einsum '{einsum.name}'"

        def known(kind: str, name: str, valid: Sequence[str], context: str) -> None:
            if name not in valid:
                raise InfeasibleError(f"{where}: unknown {kind} '{name}' in {context}; valid {kind}s: "
                                      f"{', '.join(valid)}. Fix: use one of them")

        for level, factors in self.temporal:
            known("level", level, levels, "temporal")
            for rank, f in factors:
                known("rank", rank, ranks, f"temporal[{level}]")
                if f < 1:
                    raise InfeasibleError(f"{where}: temporal[{level}][{rank}] = {f} is not a positive integer. "
                                          f"Fix: use factors >= 1")
        for level, loop_order in self.order:
            known("level", level, levels, "order")
            if sorted(loop_order) != sorted(ranks):
                raise InfeasibleError(f"{where}: order[{level}] = {list(loop_order)} is not a permutation of the "
                                      f"ranks {list(ranks)}. Fix: list every rank exactly once, outer to inner")
        for axis, factors in self.spatial:
            known("axis", axis, list(axes), "spatial")
            for rank, f in factors:
                known("rank", rank, ranks, f"spatial[{axis}]")
                if f < 1:
                    raise InfeasibleError(f"{where}: spatial[{axis}][{rank}] = {f} is not a positive integer. "
                                          f"Fix: use factors >= 1")
            used = math.prod(f for _, f in factors)
            if used > axes[axis]:
                raise InfeasibleError(f"{where}: spatial factors on axis '{axis}' multiply to {used}, more than "
                                      f"its {axes[axis]} PEs. Fix: reduce the factors on '{axis}' so their "
                                      f"product is at most {axes[axis]}")
        for level, names in self.bypass:
            known("level", level, levels, "bypass")
            for t in names:
                known("tensor", t, tensors, f"bypass[{level}]")
        if self.spatial_below is not None:
            known("level", self.spatial_below, levels, "spatial_below")
        for t in tensors:
            if all(t in self.bypassed(lv) for lv in levels):
                raise InfeasibleError(f"{where}: tensor '{t}' is bypassed at every level, so nothing stores it. "
                                      f"Fix: keep it in at least one level (its backing store)")
        for rank, size in einsum.rank_sizes:
            product = math.prod(self.factors(lv).get(rank, 1) for lv in levels) * \
                math.prod(self.spatial_factors(ax).get(rank, 1) for ax in axes)
            if product < size:
                raise InfeasibleError(f"{where}: the factors of rank '{rank}' multiply to {product}, less than its "
                                      f"size {size}, so some iterations would never run. Fix: raise the factors "
                                      f"so their product is at least {size} (a partial last tile is allowed)")


@dataclass(frozen=True)
class MappingBatch:
    """B candidate mappings of one einsum as arrays (candidate-major)."""

    rank_names: tuple[str, ...]
    level_names: tuple[str, ...]
    axis_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    temporal: np.ndarray   # int64 (B, L, R): temporal factor of rank r at level l
    order: np.ndarray      # int64 (B, L, R): order[b, l, j] = rank index of the j-th loop (outer -> inner)
    spatial: np.ndarray    # int64 (B, A, R): spatial factor of rank r on engine axis a
    bypass: np.ndarray     # bool  (B, L, T): level l does not keep tensor t
    fanout: np.ndarray     # int64 (B,): index of the level the spatial fan-out sits below

    def __len__(self) -> int:
        return int(self.temporal.shape[0])

    def rows(self, rows: slice | np.ndarray) -> MappingBatch:
        """The candidates at `rows` (a slice or an index/boolean array)."""
        return replace(self, temporal=self.temporal[rows], order=self.order[rows], spatial=self.spatial[rows],
                       bypass=self.bypass[rows], fanout=self.fanout[rows])

    @staticmethod
    def from_mappings(mappings: Sequence[Mapping], einsum: Einsum, arch: Arch,
                      axes: MappingType[str, int]) -> MappingBatch:
        """Arrays for a list of mappings (names resolved against the einsum, the arch and the engine axes)."""
        ranks, tensors = rank_names(einsum), tensor_names(einsum)
        levels, axis_names = tuple(m.name for m in arch.memory), tuple(axes)
        b, n_l, n_r = len(mappings), len(levels), len(ranks)
        temporal = np.ones((b, n_l, n_r), dtype=np.int64)
        order = np.tile(np.arange(n_r, dtype=np.int64), (b, n_l, 1))
        spatial = np.ones((b, len(axis_names), n_r), dtype=np.int64)
        bypass = np.zeros((b, n_l, len(tensors)), dtype=bool)
        fanout = np.full(b, n_l - 1, dtype=np.int64)
        r_ix = {r: i for i, r in enumerate(ranks)}
        t_ix = {t: i for i, t in enumerate(tensors)}
        for i, m in enumerate(mappings):
            for li, level in enumerate(levels):
                for rank, f in m.factors(level).items():
                    temporal[i, li, r_ix[rank]] = f
                order[i, li] = [r_ix[r] for r in m.loop_order(level, einsum)]
                for t in m.bypassed(level):
                    bypass[i, li, t_ix[t]] = True
            for ai, axis in enumerate(axis_names):
                for rank, f in m.spatial_factors(axis).items():
                    spatial[i, ai, r_ix[rank]] = f
            fanout[i] = levels.index(m.fanout_level(arch))
        return MappingBatch(ranks, levels, axis_names, tensors, temporal, order, spatial, bypass, fanout)

    def legal(self, einsum: Einsum, axes: MappingType[str, int]) -> np.ndarray:
        """bool (B,): the candidates `Mapping.check` would accept (the vectorized form, for mapper batches)."""
        sizes = np.array([einsum.sizes[r] for r in self.rank_names], dtype=np.int64)
        covered = (self.temporal.prod(axis=1) * self.spatial.prod(axis=1) >= sizes).all(axis=1)
        within = (self.spatial.prod(axis=2) <= np.array([axes[a] for a in self.axis_names])).all(axis=1)
        positive = (self.temporal >= 1).all(axis=(1, 2)) & (self.spatial >= 1).all(axis=(1, 2))
        stored = (~self.bypass).any(axis=1).all(axis=1)
        n_r = len(self.rank_names)
        permutations = (np.sort(self.order, axis=2) == np.arange(n_r)).all(axis=(1, 2))
        return covered & within & positive & stored & permutations

    def mapping(self, i: int) -> Mapping:
        """Candidate `i` as a named Mapping (every rank's temporal factor listed, spatial factors above 1)."""
        temporal = {lv: {r: int(self.temporal[i, li, ri]) for ri, r in enumerate(self.rank_names)}
                    for li, lv in enumerate(self.level_names)}
        order = {lv: [self.rank_names[j] for j in self.order[i, li]] for li, lv in enumerate(self.level_names)}
        spatial = {ax: {r: int(self.spatial[i, ai, ri]) for ri, r in enumerate(self.rank_names)
                        if self.spatial[i, ai, ri] != 1} for ai, ax in enumerate(self.axis_names)}
        bypass = {lv: [t for ti, t in enumerate(self.tensor_names) if self.bypass[i, li, ti]]
                  for li, lv in enumerate(self.level_names) if self.bypass[i, li].any()}
        return Mapping.of(temporal, order, {a: f for a, f in spatial.items() if f}, bypass,
                          self.level_names[int(self.fanout[i])])


def concat_batches(batches: list[MappingBatch]) -> MappingBatch:
    """One batch from several batches of the same einsum (rows in order)."""
    first = batches[0]
    return MappingBatch(first.rank_names, first.level_names, first.axis_names, first.tensor_names,
                        *(np.concatenate([getattr(b, f) for b in batches])
                          for f in ("temporal", "order", "spatial", "bypass", "fanout")))
