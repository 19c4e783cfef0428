"""Scoring some rows of a batch (`SystolicMapspace.score_rows`): each distinct candidate's loop nests are prepared
once and kept with the batch, for its other rows and for the designs of the same structure (a sweep's buffer
capacities) that keep other rows of it; every score equals scoring those rows afresh (issue 20)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from builders import conv, gemm, three_level_arch
from hypothesis import given, settings
from hypothesis import strategies as st

import accel_sim.engines.systolic_mapspace as systolic_mapspace_module
from accel_sim.engines.costing import candidate_key, score_key, systolic_scores
from accel_sim.engines.rows import distinct_rows
from accel_sim.engines.systolic_mapspace import systolic_mapspace
from accel_sim.mapper.search import Shelf
from accel_sim.spec.mapspace import concat_scores


def _space(w, buf: int, shelf: Shelf):
    """The first einsum of `w` on a 4 x 4 array under a `buf`-byte buffer, its structure's work on `shelf`."""
    arch = three_level_arch(buf, min(64, buf), ({"name": "sa", "kind": "systolic", "rows": 4, "cols": 4,
                                                 "dataflow": "any"},))
    return systolic_mapspace(w.einsums[0], w, arch, arch.engine("sa")).shared(shelf)


def _same(a, b) -> bool:
    """Every per-candidate array of two SystolicScores equal, NaN where NaN."""
    return all(np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True) for name in a.ARRAYS)


@settings(max_examples=20, deadline=None)
@given(st.one_of(st.builds(gemm, st.integers(1, 64), st.integers(1, 64), st.integers(1, 64)),
                 st.builds(conv, st.integers(1, 8), st.integers(1, 8), st.integers(5, 10), st.sampled_from([1, 3]),
                           st.sampled_from([1, 2]))),
       st.lists(st.integers(16, 4096), min_size=2, max_size=4), st.integers(0, 2 ** 16))
def test_scoring_rows_equals_scoring_them_afresh(w, buffers: list[int], seed: int) -> None:
    """Property over random einsums, buffer sizes (designs of one structure, sharing its work) and overlapping row
    subsets of one sampled batch, repeated rows included: `score_rows` equals `score` of those rows."""
    shelf = Shelf()
    first = _space(w, buffers[0], shelf)
    rng = np.random.default_rng(seed)
    batch = first.candidates(*first.sample(rng, 300))
    for buf in buffers:
        space = _space(w, buf, shelf)
        for _ in range(3):
            rows = rng.choice(len(batch), size=int(rng.integers(1, len(batch) + 1)))
            assert _same(space.score_rows(batch, rows), space.score(batch.rows(rows)))


def test_gathered_and_joined_scores_keep_every_array_aligned() -> None:
    """Scores share their per-level detail when rows are gathered (`SystolicScores.rows`) and joined
    (`concat_scores`, as the search joins its probe's and the rest's): every array equals numpy's gather and join of
    the scored arrays, for parts that share one detail and for parts of two scorings."""
    shelf = Shelf()
    space = _space(gemm(24, 16, 40), 512, shelf)
    batch = space.candidates(*space.sample(np.random.default_rng(3), 200))
    whole, other = space.score(batch), space.score(batch.rows(np.arange(50)))
    rng = np.random.default_rng(4)
    picks = [rng.integers(0, 200, 70), rng.integers(0, 200, 30), rng.integers(0, 50, 40)]
    parts = [whole.rows(picks[0]), whole.rows(picks[1]), other.rows(picks[2])]
    joined = concat_scores(parts)
    assert len(joined.detail) == 250   # the two scorings' details, each once
    for name in whole.ARRAYS:
        expected = np.concatenate([getattr(whole, name)[picks[0]], getattr(whole, name)[picks[1]],
                                   getattr(other, name)[picks[2]]])
        np.testing.assert_array_equal(getattr(joined, name), expected, strict=True)


def test_a_row_is_prepared_once_across_designs(monkeypatch) -> None:
    """Two designs of one structure (buffer capacities) score overlapping rows of a batch: the loop nests of the
    distinct candidates among the rows a call adds are prepared once, the second design's only for the rows the
    first did not score, and rows already scored are never prepared again."""
    prepared: list[int] = []
    real = systolic_mapspace_module.systolic_prepare

    def counting(*args, **kwargs):
        prepared.append(len(args[4]))   # the batch of mappings prepared
        return real(*args, **kwargs)

    monkeypatch.setattr(systolic_mapspace_module, "systolic_prepare", counting)
    w, shelf = gemm(48, 40, 56), Shelf()
    small, large = _space(w, 256, shelf), _space(w, 4096, shelf)
    batch = small.candidates(*small.sample(np.random.default_rng(0), 400))

    def distinct(rows: np.ndarray) -> int:
        """Distinct candidates among `rows`."""
        return len(distinct_rows(candidate_key(batch.mappings.rows(rows), batch.group[rows]))[0])

    small.score_rows(batch, np.arange(0, 200))
    assert prepared == [distinct(np.arange(0, 200))]
    large.score_rows(batch, np.arange(100, 300))
    assert prepared == [distinct(np.arange(0, 200)), distinct(np.arange(200, 300))]
    large.score_rows(batch, np.arange(50, 250))
    small.score_rows(batch, np.arange(0, 300))
    assert len(prepared) == 2


def _unit_loops_moved(batch, rng: np.random.Generator):
    """`batch` with each level's loops of factor 1 moved to random places (the other loops keep their order)."""
    order = batch.order.copy()
    for b, level in np.ndindex(order.shape[:2]):
        loops = order[b, level]
        real = [r for r in loops if batch.temporal[b, level, r] > 1]
        unit = [r for r in loops if batch.temporal[b, level, r] == 1]
        rng.shuffle(unit)
        at = set(rng.choice(len(loops), size=len(real), replace=False).tolist())
        real_iter, unit_iter = iter(real), iter(unit)
        order[b, level] = [next(real_iter) if i in at else next(unit_iter) for i in range(len(loops))]
    return replace(batch, order=order)


@settings(max_examples=20, deadline=None)
@given(st.one_of(st.builds(gemm, st.integers(1, 64), st.integers(1, 64), st.integers(1, 64)),
                 st.builds(conv, st.integers(1, 8), st.integers(1, 8), st.integers(5, 10), st.sampled_from([1, 3]),
                           st.sampled_from([1, 2]))),
       st.integers(16, 4096), st.integers(0, 2 ** 16))
def test_candidates_that_differ_in_unit_loops_alone_score_alike(w, buf: int, seed: int) -> None:
    """What lets candidates of one `score_key` share an analysis: moving a level's loops of factor 1 (no loop at
    all) leaves every score field bit for bit the same, each batch scored on its own (no sharing), and their
    `score_key`s equal; swapping two loops of factor above 1 changes the key."""
    space = _space(w, buf, Shelf())
    rng = np.random.default_rng(seed)
    batch = space.candidates(*space.sample(rng, 64))
    moved = _unit_loops_moved(batch.mappings, rng)
    scored = [systolic_scores(space.einsum, space.workload, space.arch, space.engine, b, batch.group)
              for b in (batch.mappings, moved)]
    assert _same(*scored)
    assert np.array_equal(score_key(batch.mappings, batch.group), score_key(moved, batch.group))
    # and the key still tells apart what it must: two loops of factor above 1 swapped at a level is another nest
    swapped = moved.order.copy()
    for b, level in np.ndindex(swapped.shape[:2]):
        real = [i for i, r in enumerate(swapped[b, level]) if moved.temporal[b, level, r] > 1]
        if len(real) >= 2:
            swapped[b, level, real[:2]] = swapped[b, level, real[1::-1][:2]]
            break
    else:
        return
    keys = score_key(moved, batch.group), score_key(replace(moved, order=swapped), batch.group)
    assert (keys[0] != keys[1]).any(axis=1).sum() == 1
