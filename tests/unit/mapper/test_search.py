"""The mapper: exact against exhaustive search on small spaces, legal results, clear infeasibility, determinism."""
from __future__ import annotations

import functools
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim.engines.costing import implied_batch, systolic_scores
from accel_sim.engines.loopnest import analyze
from accel_sim.engines.systolic_mapspace import systolic_mapspace
from accel_sim.engines.rows import any_along, distinct_indices, product_along, unique_rows
from accel_sim.engines.systolic_space import COLS, ROWS, ordered_factorizations, spatial_choices, systolic_space
from accel_sim.errors import InfeasibleError
from accel_sim.folds import fold_count, fold_plan
from accel_sim.mapper.search import best_index, search
from accel_sim.spec.arch import Arch
from accel_sim.spec.mapping import MappingBatch
from accel_sim.spec.mapspace import tie_break

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
from builders import three_level_arch  # noqa: E402
from test_costing import conv, gemm, two_level_arch  # noqa: E402

ARCHS = [dict(rows=4, cols=4, sram="1 KiB", dataflow="ws"),
         dict(rows=4, cols=8, sram="512 B", dataflow="os", dram_gbps=4),
         dict(rows=8, cols=4, sram="2 KiB", dataflow="is", dram_gbps=100)]
PROBLEMS = [("gemm", (8, 8, 8)), ("gemm", (12, 20, 16)), ("gemm", (16, 16, 4)), ("gemm", (6, 10, 14)),
            ("gemm", (32, 8, 8)), ("gemm", (24, 12, 6)), ("conv", (4, 8, 10, 3, 1)), ("conv", (3, 6, 9, 3, 2)),
            ("conv", (8, 4, 6, 1, 1))]


def test_ordered_factorizations_count_closed_form() -> None:
    """Ordered factorizations of p^a into k factors: C(a + k - 1, k - 1); 12 = 2^2 * 3 over 3 slots: 6 * 3 = 18."""
    assert len(ordered_factorizations(2**5, 3)) == 21
    assert len(ordered_factorizations(12, 3)) == 18
    assert (ordered_factorizations(12, 3).prod(axis=1) == 12).all()


def test_spatial_choices_are_divisors_plus_the_even_uneven_split() -> None:
    """Size 10 on 4 PEs: divisors 1, 2 fit; ceil(10 / ceil(10 / 4)) = 4 is the even uneven split."""
    assert spatial_choices(10, 4) == [1, 2, 4]


def test_implied_mapping_timing_equals_scalesim_folds() -> None:
    """The scorer's fold timing for the dataflow-implied mapping of a conv equals fold_plan on its im2col view
    (SCALE-Sim's flattened folds, Samajdar et al. ISPASS 2020): M = P*Q, N = K, K = C*R*S. 8-bit operands on the
    8-bit PEs: one MAC a cycle, as SCALE-Sim times every operand."""
    w, arch = conv(3, 6, 9, 3, 2, bits=8), two_level_arch(rows=4, cols=4)
    e = w.einsums[0]
    batch, flows = implied_batch(e, w, arch, arch.engine("mxu"))
    s = systolic_scores(e, w, arch, arch.engine("mxu"), batch, flows)
    plan = fold_plan(4 * 4, 6, 3 * 3 * 3, 4, 4, "ws")
    assert s.compute_cycles[0] == plan.folds * plan.temporal
    assert s.fill_drain_cycles[0] == plan.fill_drain_cycles


def _cases():
    for (kind, args), a, objective in itertools.product(PROBLEMS, ARCHS, ("latency", "energy", "edp")):
        yield kind, args, a, objective


@functools.cache
def _cpsat_gaps() -> tuple[float, ...]:
    """found / best - 1 of the CP-SAT mapper against exhaustive search on every case with at most 1e5 mappings."""
    gaps = []
    for kind, args, a, objective in _cases():
        w = gemm(*args) if kind == "gemm" else conv(*args)
        arch = two_level_arch(**a)
        e, engine = w.einsums[0], arch.engine("mxu")
        space = systolic_mapspace(e, w, arch, engine)
        if space.size() > 100_000:
            continue
        best = search(space, objective, "exhaustive").score
        found = search(space, objective, "cpsat", time_limit_s=1.0).score
        gaps.append(found / best - 1)
    return tuple(gaps)


def test_cpsat_matches_exhaustive_optimum_on_small_spaces(capsys: pytest.CaptureFixture) -> None:
    """On GEMMs and convs with at most 1e5 mappings (3 arrays/dataflows, 3 objectives), the CP-SAT mapper's
    exact score equals the exhaustive optimum of the same cost model in >= 95% of cases and is never better
    (issue 4 acceptance; the oracle is `search(method='exhaustive')`, every mapping of the space)."""
    gaps_arr = np.array(_cpsat_gaps())
    with capsys.disabled():
        print(f"\nmapper vs exhaustive: {len(gaps_arr)} problems, {np.mean(gaps_arr < 1e-9):.1%} optimal, "
              f"worst gap {gaps_arr.max():.3%}")
    assert len(gaps_arr) >= 40
    assert np.mean(gaps_arr < 1e-9) >= 0.95
    assert gaps_arr.min() >= -1e-12


def test_cpsat_is_never_more_than_5_percent_worse_than_exhaustive() -> None:
    """The same cases: the CP-SAT mapper is never more than 5 % worse than the exhaustive optimum (issue 4). Once an
    expected failure (issue 15: conv (3, 6, 9, 3, 2) on the 4 x 8 os array, whose optimum is three rank moves from
    every other mapping): the proxy, its element tables capped at the hint's value, now solves it."""
    assert max(_cpsat_gaps()) <= 0.05


def test_cpsat_matches_exhaustive_with_double_buffered_folds() -> None:
    """With `stationary_buffering: double` (folds cost max(T, R) after the first) the CP-SAT proxy states that
    timing too: on the GEMMs of PROBLEMS, a 4 x 8 ws array and the three objectives, its exact score equals the
    exhaustive optimum in >= 95% of cases and is never > 5% worse (issue 4's bound)."""
    gaps = []
    for (kind, args), objective in itertools.product(PROBLEMS, ("latency", "energy", "edp")):
        if kind != "gemm":
            continue
        w = gemm(*args)
        arch = two_level_arch(rows=4, cols=8, sram="1 KiB", dram_gbps=4, buffering="double")
        space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))
        best = search(space, objective, "exhaustive").score
        gaps.append(search(space, objective, "cpsat", time_limit_s=1.0).score / best - 1)
    gaps_arr = np.array(gaps)
    assert len(gaps) == 18
    assert np.mean(gaps_arr < 1e-9) >= 0.95
    assert gaps_arr.max() <= 0.05 and gaps_arr.min() >= -1e-12


def test_mapper_never_worse_than_the_dataflow_implied_mapping() -> None:
    """The implied mappings are always among the scored candidates, so any method is at least as good."""
    w, arch = gemm(64, 48, 80), two_level_arch(rows=8, cols=8, sram="4 KiB", dataflow="any")
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))
    implied = search(space, "edp", "dataflow").score
    assert search(space, "edp", "local").score <= implied
    assert search(space, "edp", "cpsat", time_limit_s=0.5).score <= implied


def test_cpsat_is_deterministic() -> None:
    """Two runs with the same seed give the same mapping (one worker, fixed seed, deterministic time)."""
    w, arch = gemm(24, 12, 6), two_level_arch(**ARCHS[0])
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))
    first = search(space, "edp", "cpsat", time_limit_s=0.5)
    second = search(space, "edp", "cpsat", time_limit_s=0.5)
    assert first.mapping == second.mapping and first.score == second.score


def test_search_reports_solver_statistics() -> None:
    """Stats carry the method, candidates scored, solver status, the proxy's bound and its gap."""
    w, arch = gemm(8, 8, 8), two_level_arch(**ARCHS[0])
    r = search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")), "latency", "cpsat", time_limit_s=1.0)
    assert r.stats.method == "cpsat" and r.stats.candidates > 1
    assert r.stats.solver_status == "OPTIMAL" and r.stats.gap == 0.0
    assert r.stats.proxy_bound <= r.stats.proxy_objective


def _occupancy_ok(w, arch, result) -> bool:
    """Independent check: some operand residency puts every on-chip level within capacity."""
    e, engine = w.einsums[0], arch.engine("mxu")
    axes = {"rows": engine.rows, "cols": engine.cols}
    batch = MappingBatch.from_mappings([result.mapping], e, arch, axes)
    used = batch.spatial.prod(axis=2)[0]
    if used[0] > engine.rows or used[1] > engine.cols:
        return False
    la = analyze(e, w.tensor_map, arch, axes, batch)
    bits = np.array([w.tensor(t).bits for t in la.tensor_names]) / 8
    streamed = la.tile_elements[0, 1] * bits * 2
    # kept whole = the elements the einsum touches (a stride-2 1x1 conv never reads every other row)
    access = {acc.tensor: acc for acc in (e.output, *e.inputs)}
    whole = np.array([e.footprint(access[t], w.tensor(t)) for t in la.tensor_names]) * bits
    cap = arch.memory[1].capacity_bytes
    return any(np.where(np.array(c, bool), whole, streamed).sum() <= cap
               for c in itertools.product((0, 1), repeat=len(bits)))


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.builds(gemm, st.integers(1, 64), st.integers(1, 64), st.integers(1, 64)),
                 st.builds(conv, st.integers(1, 8), st.integers(1, 8), st.integers(5, 12),
                           st.sampled_from([1, 3]), st.sampled_from([1, 2]))),
       st.builds(two_level_arch, rows=st.integers(1, 16), cols=st.integers(1, 16),
                 sram=st.sampled_from(["512 B", "4 KiB", "64 KiB"]), dataflow=st.sampled_from(["os", "ws", "is", "any"])))
def test_found_mapping_respects_capacity_and_pe_count(w, arch) -> None:
    """Whatever the mapper returns fits the array and the SRAM (property over random einsums and arrays)."""
    try:
        result = search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")), "edp", "local")
    except InfeasibleError:
        return
    assert _occupancy_ok(w, arch, result)


def test_pinned_factor_that_cannot_fit_raises_naming_the_pe_constraint() -> None:
    """Pinning 16 on a 4-row array leaves the rank no legal option: the error names the PE-count family."""
    w, arch = gemm(16, 16, 16), two_level_arch(rows=4, cols=4)
    with pytest.raises(InfeasibleError, match=r"spatial/PE-count constraints leave rank 'k' \(size 16\)"):
        search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"), {"k": {"rows": 16}}), "edp", "local")


def test_a_buffer_too_small_for_any_tile_stages_every_operand_from_dram_down_to_two_cycles_of_edge_transfer() -> None:
    """A 24-byte SRAM cannot keep the 4 x 4 ws array's double-buffered tiles (W alone: 2 x 16 B) but stages every
    operand from DRAM without reuse (A, W and Z each cross a 4-PE edge a cycle: 2 x (4 + 4 + 4) = 24 B), so
    DRAM serves more than with 1 MiB. A 4-byte SRAM stages nothing, even on one PE (2 x (1 + 1 + 1) = 6 B): the
    search fails naming it (the hand-derived staging case is tests/unit/engines/test_tile_capacity.py)."""
    w = gemm(8, 8, 8)
    found = {sram: search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")), "edp", "exhaustive")
             for sram in ("24 B", "1 MiB") for arch in [two_level_arch(sram=sram)]}
    dram = {sram: sum(v for (level, _, _), v in r.cost.accesses.items() if level == "dram") for sram, r in found.items()}
    assert dram["24 B"] > dram["1 MiB"] and found["24 B"].cost.total_cycles >= found["1 MiB"].cost.total_cycles
    arch = two_level_arch(sram="4 B")
    with pytest.raises(InfeasibleError, match="'sram' holds 4 bytes"):
        search(systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")), "edp", "exhaustive")


@settings(max_examples=40, deadline=None)
@given(sizes=st.tuples(*(st.sampled_from((2, 4, 8)) for _ in range(3))), bits=st.sampled_from((8, 16)),
       buf=st.integers(4, 200), small=st.integers(2, 40), dataflow=st.sampled_from(("os", "ws", "is")))
def test_local_search_finds_a_mapping_wherever_one_exists(sizes: tuple[int, int, int], bits: int, buf: int,
                                                          small: int, dataflow: str) -> None:
    """A GEMM in tight buffers: where exhaustive search finds a mapping, the default method's local search finds
    one too; where it finds none, both raise. Before the local search went on from the one-PE mappings when no
    default fitted (Mapspace.frugal), 16 of 150 random cases like these were called infeasible although a mapping
    fitted (e.g. 2 x 4 x 2 at 16 bits, buffers of 140 and 18 B, input stationary: none, where 84 cycles exist)."""
    w = gemm(*sizes, bits)
    arch = three_level_arch(buf, min(small, buf),
                            ({"name": "sa", "kind": "systolic", "rows": 2, "cols": 2, "dataflow": dataflow},))
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("sa"))
    found = {}
    for method in ("local", "exhaustive"):
        try:
            found[method] = search(space, "latency", method, time_limit_s=60).cost.total_cycles
        except InfeasibleError:
            found[method] = None
    assert (found["local"] is None) == (found["exhaustive"] is None), found


def test_ties_in_the_objective_go_to_the_other_metric() -> None:
    """Hand case: cycles (3, 2, 2) and joules (1, 5, 4): latency picks the 2-cycle candidate with 4 J (index 2),
    energy the 1 J one; cycles (2, 2) and joules (3, 3) tie on both: the first."""
    cycles, joules = np.array([3.0, 2.0, 2.0]), np.array([1.0, 5.0, 4.0])
    assert best_index(cycles, tie_break(cycles, joules, "latency")) == 2
    assert best_index(joules, tie_break(cycles, joules, "energy")) == 0
    tied_cycles, tied_joules = np.array([2.0, 2.0]), np.array([3.0, 3.0])
    assert best_index(tied_cycles, tie_break(tied_cycles, tied_joules, "latency")) == 0


def test_unique_rows_equals_numpy_unique_along_rows():
    """The factor options' dedupe (one lexsort) gives np.unique(a, axis=0) exactly: the same rows in the same
    lexicographic order, on random small-integer arrays with repeats, one column and no rows."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = rng.integers(0, rng.integers(1, 6), (rng.integers(0, 40), rng.integers(1, 6)))
        np.testing.assert_array_equal(unique_rows(a), np.unique(a, axis=0))


def test_distinct_indices_equal_numpys_unique():
    """`distinct_indices` (the prepared rows' lookups) gives np.unique's sorted values and inverse exactly, on random
    index arrays with repeats, empty ones included."""
    rng = np.random.default_rng(2)
    for _ in range(300):
        bound = int(rng.integers(1, 50))
        values = rng.integers(0, bound, int(rng.integers(0, 80)))
        expected, inverse = np.unique(values, return_inverse=True)
        got, places = distinct_indices(values, bound)
        np.testing.assert_array_equal(got, expected, strict=True)
        np.testing.assert_array_equal(places, inverse.reshape(-1), strict=True)


def test_short_axis_reductions_equal_numpys():
    """`product_along` and `any_along` (the batch's short-axis reductions) give numpy's prod and any exactly, with
    its dtypes, on random 1- to 3-D arrays along every axis, empty axes included."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(0, 5, rng.integers(1, 4)))
        a = rng.integers(-3, 4, shape)
        for axis in range(-a.ndim, a.ndim):
            np.testing.assert_array_equal(product_along(a, axis), a.prod(axis=axis), strict=True)
            np.testing.assert_array_equal(product_along(a > 0, axis), (a > 0).prod(axis=axis), strict=True)
            np.testing.assert_array_equal(any_along(a > 0, axis), (a > 0).any(axis=axis), strict=True)


def test_local_search_maps_on_an_arch_with_one_memory_level() -> None:
    """With DRAM the only level, its outermost level is its innermost: a stream has nowhere to be split, so the
    local method's re-tilings are none (they indexed a level that is not there: a traceback) and it finds what
    exhaustive search finds on this small space."""
    arch = Arch.model_validate({"name": "one level", "clock": "1 GHz", "technology_nm": 28,
                                "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "10 GB/s"}],
                                "engines": [{"name": "sa", "kind": "systolic", "rows": 4, "cols": 4}]})
    w = gemm(8, 8, 8)
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("sa"))
    local, exhaustive = (search(space, "latency", m, time_limit_s=60).cost.total_cycles for m in ("local", "exhaustive"))
    assert local == exhaustive


def test_more_local_rounds_descend_from_the_first_rounds_best_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """LOCAL_ROUNDS above 1 (the shipped value is 1): the first round's batch is the same, and each start whose best
    single move improves descends from it, so the result is never worse than one round's, more candidates are
    scored, and never better than exhaustive search's optimum."""
    searching = sys.modules[search.__module__]   # the module (the package's `search` name is the function)
    w, arch = gemm(64, 48, 80), two_level_arch(rows=8, cols=8, sram="4 KiB", dataflow="any")
    space = lambda: systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu"))  # noqa: E731  (fresh each time)
    one = search(space(), "edp", "local")
    monkeypatch.setattr(searching, "LOCAL_ROUNDS", 3)
    three = search(space(), "edp", "local")
    assert three.score <= one.score and three.stats.candidates > one.stats.candidates
    assert three.score >= search(space(), "edp", "exhaustive", time_limit_s=60).score


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 24), st.integers(1, 24), st.integers(1, 24), st.integers(0, 2 ** 16), st.booleans())
def test_two_step_moves_are_every_pair_of_single_changes(m: int, n: int, k: int, seed: int, near: bool) -> None:
    """A mapping's two-step moves (`SystolicSpace.pair_neighbours`) are, by definition, every mapping with two
    ranks' options changed to any (or to `near`) ones, or one rank's option and one level's loop order, each listed
    once per such pair (the mapping itself among them): checked against that definition spelled out by brute force,
    on a GEMM's space, and counted by `pair_count`."""
    w = gemm(m, n, k)
    arch = two_level_arch(rows=4, cols=4, sram="4 KiB", dataflow="any")
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")).space
    d, choices, orders = space.sample(np.random.default_rng(seed), 1)
    choice, order = choices[0], orders[0]
    subsets = space.near(d, choice) if near else None
    opts = subsets if near else [np.arange(len(o)) for o in space.options[d]]
    expected = []
    for r, r2 in itertools.combinations(range(len(opts)), 2):
        for a, b in itertools.product(opts[r], opts[r2]):
            c = choice.copy()
            c[r], c[r2] = a, b
            expected.append((*c, *order))
    for r in range(len(opts)):
        for level in range(len(space.level_names)):
            for a, b in itertools.product(opts[r], range(space.orders[d].shape[1])):
                c, o = choice.copy(), order.copy()
                c[r], o[level] = a, b
                expected.append((*c, *o))
    got_c, got_o = space.pair_neighbours(d, choice, order, subsets)
    assert [tuple(row) for row in np.concatenate([got_c, got_o], axis=1)] == expected
    assert len(got_c) == space.pair_count(d, subsets)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 24), st.integers(1, 24), st.integers(1, 24), st.integers(0, 2 ** 16))
def test_a_batch_of_several_dataflows_is_its_parts_by_definition(m: int, n: int, k: int, seed: int) -> None:
    """`SystolicSpace.batch_of` (one lookup for parts of every dataflow) gives, row for row, each part's mappings by
    definition: rank r's spatial factor on the axis its dataflow places it (1 on the other) and its temporal factors
    from option choice[r] of that dataflow, level l's loop order order[l] of that dataflow's orders, every bypass
    the space's, the fan-out below the innermost level."""
    w = gemm(m, n, k)
    arch = two_level_arch(rows=4, cols=4, sram="4 KiB", dataflow="any")
    space = systolic_mapspace(w.einsums[0], w, arch, arch.engine("mxu")).space
    rng = np.random.default_rng(seed)
    parts = [space.sample(rng, int(rng.integers(1, 6))) for _ in range(4)]
    got = space.batch_of(parts)
    row = 0
    for d, choices, orders in parts:
        for choice, order in zip(choices, orders):
            for r in range(len(space.rank_names)):
                option = space.options[d][r][choice[r]]
                for axis in (0, 1):
                    assert got.spatial[row, axis, r] == (option[0] if space.places[d][r] == axis else 1)
                np.testing.assert_array_equal(got.temporal[row, :, r], option[1:])
            for level in range(len(space.level_names)):
                np.testing.assert_array_equal(got.order[row, level], space.orders[d][level, order[level]])
            np.testing.assert_array_equal(got.bypass[row], space.bypass)
            assert got.fanout[row] == len(space.level_names) - 1
            row += 1
    assert len(got) == row


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(0, 2 ** 16))
def test_factor_options_are_the_divisor_options_and_the_included_ones(m: int, n: int, k: int, seed: int) -> None:
    """Each rank's factor options (cached per size, axis and level count) are, by definition, the distinct rows of
    (spatial choice s, every ordered factorization of ceil(size / s)) and of the included mappings' own factors, in
    lexicographic order: checked with included mappings drawn from the space, some with a factor changed so that
    they are not options already."""
    w = gemm(m, n, k)
    arch = two_level_arch(rows=4, cols=8, sram="4 KiB", dataflow="any")
    engine, einsum = arch.engine("mxu"), w.einsums[0]
    plain = systolic_space(einsum, w, arch, engine)
    rng = np.random.default_rng(seed)
    d, choices, orders = plain.sample(rng, 6)
    include = plain.batch(d, choices, orders)
    include.temporal[::2, 0, int(rng.integers(0, len(plain.rank_names)))] += 1   # not an option of its rank
    space = systolic_space(einsum, w, arch, engine, include=include, include_flows=np.full(6, d))
    levels = len(space.level_names)
    for flow in space.dataflows:
        for r, size in enumerate(space.sizes):
            axis = {ROWS: 4, COLS: 8}.get(int(space.places[flow, r]))
            rows = [(s, *f) for s in (spatial_choices(size, axis) if axis else [1])
                    for f in ordered_factorizations(fold_count(size, s), levels).tolist()]
            if flow == d:
                rows += [(int(include.spatial[i, :, r].prod()), *include.temporal[i, :, r].tolist()) for i in range(6)]
            np.testing.assert_array_equal(space.options[flow][r], np.unique(np.array(rows), axis=0))
