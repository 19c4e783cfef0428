"""The residency choice of the systolic scorer (residency.array_traffic) equals its definition evaluated eagerly.

array_traffic analyses the spilled layout only for candidates where no choice without a spill fits, and each
distinct collapsed (all-resident) candidate once. The reference here analyses all three layouts of every
candidate and tries every combination of them per tensor, keeping the first that fits with the fewest spills,
then the least outermost-level traffic, then the least total traffic (the rule array_traffic documents).
Buffers are sized so that some candidates keep everything, some stage an operand and some fit nowhere.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from builders import gemm

from accel_sim.energy.components import is_off_chip
from accel_sim.engines.residency import (_staged, _staged_widened, array_analyses, array_traffic, collapsed, spilled,
                                         spilled_occupancy)
from accel_sim.engines.rows import distinct_rows
from accel_sim.engines.loopnest import analyze
from accel_sim.spec.arch import Arch
from accel_sim.spec.mapspace import Candidates


def _arch(act_bytes: int, weight_bytes: int, dram_holds: tuple[str, ...] = ("weights", "activations")) -> Arch:
    """DRAM (holding `dram_holds`), an activations buffer and a weights buffer of the given sizes beside a 4 x 4
    array (any dataflow)."""
    return Arch.model_validate({
        "name": "small buffers", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "read_energy_per_bit": "10 pJ",
                    "holds": list(dram_holds)},
                   {"name": "act", "technology": "SRAM", "capacity": f"{act_bytes} B", "bandwidth": "64 GB/s",
                    "read_energy_per_bit": "1 pJ", "holds": ["activations"]},
                   {"name": "wbuf", "technology": "SRAM", "capacity": f"{weight_bytes} B", "bandwidth": "64 GB/s",
                    "read_energy_per_bit": "1 pJ", "holds": ["weights"]}],
        "engines": [{"name": "sa", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": "any"}]})


def _eager_choice(arch: Arch, layouts: list, moved: list, spilled_held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fits, choice) over every combination of the three layouts per tensor, by the documented rule; `moved`
    holds each layout's bytes per level and tensor, and the spilled layout holds `spilled_held` bytes (its tiles
    and staging, `spilled_occupancy`)."""
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])
    capacity = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes for lv in arch.memory])
    held = []
    for variant, layout in enumerate(layouts[:2]):   # streamed tiles are double-buffered on chip
        tiles = layout.tile_bytes
        held.append(np.where(on_chip[None, :, None], 2 * tiles, tiles) if variant != 1 else tiles)
    held.append(spilled_held)
    b, _, n_t = held[0].shape
    fits, choice = np.zeros(b, dtype=bool), np.zeros((b, n_t), dtype=np.int64)
    best = np.full((b, 3), np.inf)
    for combo in itertools.product(range(3), repeat=n_t):
        occupancy = sum(held[v][:, :, t] for t, v in enumerate(combo))
        traffic = sum(moved[v][:, :, t] for t, v in enumerate(combo))
        ok = ~(on_chip & (occupancy > capacity)).any(axis=1)
        key = np.stack([np.full(b, float(combo.count(2))), traffic[:, 0], traffic.sum(axis=1)], axis=1)
        less = np.array([tuple(k) < tuple(c) for k, c in zip(key, best)])
        better = ok & (~fits | less)
        choice[better], best[better] = combo, key[better]
        fits |= ok
    return fits, choice


def _sampled(space, n: int, seed: int = 0) -> Candidates:  # noqa: ANN001 (a SystolicMapspace)
    """`n` uniformly drawn mappings of every dataflow, in one batch."""
    rng = np.random.default_rng(seed)
    parts = []
    for d in space.groups:
        choice = np.stack([rng.integers(0, len(o), n) for o in space.space.options[d]], axis=1)
        order = rng.integers(0, space.space.orders[d].shape[1], (n, len(space.space.level_names)))
        parts.append(space.candidates(d, choice, order))
    return Candidates.concat(parts)


@pytest.mark.parametrize("act_bytes, weight_bytes, dram_holds", [
    (4096, 2048, ("weights", "activations")),   # nothing spills
    (192, 96, ("weights", "activations")),      # some candidates spill, some keep operands resident
    (256, 32, ("weights",)),                    # activations live only on chip: some candidates fit nowhere
])
def test_lazy_spills_and_shared_collapsed_analyses_choose_as_the_eager_definition(
        act_bytes: int, weight_bytes: int, dram_holds: tuple[str, ...]) -> None:
    """2,100 sampled mappings of a 12 x 8 x 16 int8 GEMM with 32-bit partial sums: the same fit, choice and
    accesses per level and tensor."""
    arch, work = _arch(act_bytes, weight_bytes, dram_holds), gemm(12, 8, 16)
    einsum, engine = work.einsums[0], arch.engines[0]
    candidates = _sampled(engine.mapspace(einsum, work, arch), 700)
    batch = candidates.mappings
    analyses = array_analyses(einsum, work, arch, 4, 4, batch, candidates.group, accumulator_bits=32)
    got = array_traffic(einsum, work, arch, 4, 4, analyses)

    axes, folds = {"rows": 4, "cols": 4}, analyses.folds
    layouts = [analyze(einsum, work.tensor_map, arch, axes, view, pe_folds=folds, accumulator_bits=32)
               for view in (batch, collapsed(batch), spilled(batch))]
    flows = [(v.read_elements, v.fill_elements, v.update_elements, v.write_elements) for v in layouts[:2]]
    flows.append(_staged(batch, layouts[2]))
    bits = np.array([work.tensor_map[t].bits for t in batch.tensor_names], dtype=float)
    staged_wide = _staged_widened(einsum, arch, batch, layouts[2], flows[2])
    out = batch.tensor_names.index(einsum.output.tensor)
    staged_bits = sum(flows[2]) * bits
    staged_bits[..., out] += staged_wide.sum(axis=1)      # only the output has partial sums to widen
    moved = [v.moved_bytes for v in layouts[:2]] + [staged_bits / 8]
    fits, choice = _eager_choice(arch, layouts, moved, spilled_occupancy(einsum, work, arch, batch, layouts[2]))
    fits &= (batch.spatial.prod(axis=2) <= 4).all(axis=1)

    np.testing.assert_array_equal(got.fits, fits)
    np.testing.assert_array_equal(got.choice, choice)
    for a, name in enumerate(("read", "fill", "update", "write")):
        np.testing.assert_array_equal(getattr(got, name), np.choose(choice[:, None, :], [f[a] for f in flows]))
    wide = [layouts[0].widened_bits, layouts[1].widened_bits, staged_wide]
    np.testing.assert_array_equal(got.widened_bits, np.choose(choice[:, None, None, out], wide))
    if act_bytes == 256:   # the case mixes every outcome
        spills = (choice == 2).any(axis=1)
        assert (fits & spills).any() and (fits & ~spills).any() and (~fits).any()


def test_distinct_rows_finds_each_rows_first_occurrence_and_maps_every_row_back() -> None:
    """Small keys (one integer sort) and keys too wide for 62 bits (by bytes) alike."""
    narrow = np.array([[1, 5, 0], [2, 5, 0], [1, 5, 0], [3, 5, 1], [2, 5, 0]])
    wide = np.array([[1, 2 ** 40, 0], [1, 0, 2 ** 40], [1, 2 ** 40, 0], [7, 0, 0]])
    for key, distinct in ((narrow, 3), (wide, 3)):
        first, inverse = distinct_rows(key)
        assert len(first) == distinct
        np.testing.assert_array_equal(key[first][inverse], key)
        for row in first:   # each kept row is the first of its kind
            assert not (key[:row] == key[row]).all(axis=1).any()
    first, inverse = distinct_rows(np.array([[4, 4], [4, 4]]))
    assert list(first) == [0] and list(inverse) == [0, 0]


def test_distinct_rows_of_keys_wider_than_62_bits_in_narrow_columns() -> None:
    """Columns that fit 62 bits one by one but not together: grouped codes, still each row's first occurrence."""
    rng = np.random.default_rng(3)
    key = rng.integers(0, 2 ** 21, (300, 5))[rng.integers(0, 40, 300)]   # 40 distinct rows, repeated
    first, inverse = distinct_rows(key)
    assert len(first) == len(np.unique(key, axis=0))
    np.testing.assert_array_equal(key[first][inverse], key)
    for row in first:
        assert not (key[:row] == key[row]).all(axis=1).any()


def test_collapsed_keeps_the_nesting_of_each_ranks_outermost_non_unit_loop() -> None:
    """Per candidate, by its definition: unit ranks first in rank order, then ranks by (level, slot) of their
    outermost non-unit loop; every factor of a rank at the innermost level."""
    arch, work = _arch(4096, 2048), gemm(12, 8, 16)
    batch = _sampled(arch.engines[0].mapspace(work.einsums[0], work, arch), 300).mappings
    got = collapsed(batch)
    for i in range(len(batch)):
        temporal, order = batch.temporal[i], batch.order[i]
        def outermost(r: int) -> tuple[int, int]:   # noqa: E306
            levels = [lv for lv in range(temporal.shape[0]) if temporal[lv, r] > 1]
            return (-1, r) if not levels else (levels[0], list(order[levels[0]]).index(r))
        expected = sorted(range(len(batch.rank_names)), key=outermost)
        assert list(got.order[i, -1]) == expected
        np.testing.assert_array_equal(got.temporal[i, -1], temporal.prod(axis=0))
        assert (got.temporal[i, :-1] == 1).all()


def test_a_batch_with_repeated_candidates_scores_each_as_on_its_own() -> None:
    """The mapspace scores each distinct candidate once and maps the scores back: every field bit-identical to
    scoring the whole batch as it is."""
    from accel_sim.engines.costing import systolic_scores

    arch, work = _arch(192, 96), gemm(12, 8, 16)
    einsum, engine = work.einsums[0], arch.engines[0]
    sampled = _sampled(engine.mapspace(einsum, work, arch), 100)
    candidates = sampled.rows(np.random.default_rng(1).integers(0, len(sampled), 500))   # repeats
    got = engine.mapspace(einsum, work, arch).score(candidates)
    whole = systolic_scores(einsum, work, arch, engine, candidates.mappings, candidates.group)
    for name in whole.ARRAYS:
        np.testing.assert_array_equal(getattr(got, name), getattr(whole, name))


def test_one_analysis_scored_at_several_capacities_equals_a_fresh_analysis_at_each() -> None:
    """array_traffic keeps an analysed batch's traffic per residency choice (a sweep's capacity variants): the
    same analyses priced at 4096/2048, 8192/4096, then 4096/2048 again, at 192/96 (some candidates spill) and at
    192/96 again give every field of a fresh analysis at that size, and the kept arrays cannot be written."""
    work = gemm(12, 8, 16)
    einsum = work.einsums[0]
    first = _arch(4096, 2048)
    candidates = _sampled(first.engines[0].mapspace(einsum, work, first), 300)
    batch = candidates.mappings
    shared = array_analyses(einsum, work, first, 4, 4, batch, candidates.group, accumulator_bits=32)
    for act_bytes, weight_bytes in ((4096, 2048), (8192, 4096), (4096, 2048), (192, 96), (192, 96)):
        arch = _arch(act_bytes, weight_bytes)
        got = array_traffic(einsum, work, arch, 4, 4, shared)
        fresh = array_traffic(einsum, work, arch, 4, 4,
                              array_analyses(einsum, work, arch, 4, 4, batch, candidates.group, accumulator_bits=32))
        for name in ("fits", "choice", "read", "fill", "update", "write", "widened_bits", "level_read_bytes",
                     "level_write_bytes", "level_energy_j"):
            np.testing.assert_array_equal(getattr(got, name), getattr(fresh, name))
    # the first two sizes choose alike (one entry); 192/96 adds its spilled layout and its own choice
    assert sorted(type(v).__name__ for v in shared.traffic_memo.values()) == ["SpillChoice", "tuple", "tuple"]
    with pytest.raises(ValueError):
        got_again = array_traffic(einsum, work, first, 4, 4, shared)
        got_again.read[0, 0, 0] = -1
