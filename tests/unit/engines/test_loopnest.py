"""Loop-nest analysis: hand-derived fills/reads/updates, halos, imperfect factors, bypass, multicast, capacity,
batch == one-by-one, properties over random legal mappings, and systolic dataflows against the fold plan."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim.engines.loopnest import analyze, gemm_roles, split_fold, systolic_mapping, tile_footprint
from accel_sim.folds import fold_plan
from accel_sim.spec.arch import Arch
from accel_sim.spec.mapping import Mapping, MappingBatch, rank_names, tensor_names
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor

R = Affine.rank
AXES = {"rows": 16, "cols": 16}


def make_arch(sram: str = "64 KiB", levels: int = 2) -> Arch:
    """1 GHz, DRAM (unbounded) -> SRAM [-> RF]; one 16 x 16 array."""
    memory = [{"name": "dram", "technology": "DRAM", "bandwidth": "10 GB/s", "read_energy_per_bit": "10 pJ"},
              {"name": "sram", "technology": "SRAM",
               "capacity": sram, "bandwidth": "100 GB/s", "read_energy_per_bit": "1 pJ"}]
    if levels == 3:
        memory.append({"name": "rf", "technology": "registers",
                       "capacity": "1 KiB", "bandwidth": "1 TB/s", "read_energy_per_bit": "0.1 pJ"})
    return Arch.model_validate({"name": "t", "clock": "1 GHz", "technology_nm": 28, "memory": memory,
                                "engines": [{"name": "mxu", "kind": "systolic", "rows": 16, "cols": 16}]})


def gemm(m: int, n: int, k: int) -> tuple[Einsum, dict[str, Tensor]]:
    """Z[m,n] = A[m,k] * B[k,n]; A, B 8-bit, Z 32-bit, B a weight."""
    e = Einsum("gemm", Access("Z", (R("m"), R("n"))),
               Call("mul", (Access("A", (R("m"), R("k"))), Access("B", (R("k"), R("n"))))),
               {"m": m, "n": n, "k": k})
    return e, {"A": Tensor("A", ("M", "K"), (m, k), 8), "B": Tensor("B", ("K", "N"), (k, n), 8, "weight"),
               "Z": Tensor("Z", ("M", "N"), (m, n), 32)}


def conv(c: int, k: int, p: int, rs: int, stride: int, pad: int = 0) -> tuple[Einsum, dict[str, Tensor]]:
    """O[k,p,q] = I[c, stride*p + r - pad, stride*q + s - pad] * W[k,c,r,s], input H = stride*(p-1) + rs - 2 pad."""
    h = stride * (p - 1) + rs - 2 * pad
    ix = lambda out, win: Affine(((out, stride), (win, 1)), -pad)
    e = Einsum("conv", Access("O", (R("k"), R("p"), R("q"))),
               Call("mul", (Access("I", (R("c"), ix("p", "r"), ix("q", "s"))),
                            Access("W", (R("k"), R("c"), R("r"), R("s"))))),
               {"k": k, "p": p, "q": p, "c": c, "r": rs, "s": rs})
    return e, {"I": Tensor("I", ("C", "H", "W"), (c, h, h), 8),
               "W": Tensor("W", ("K", "C", "R", "S"), (k, c, rs, rs), 8),
               "O": Tensor("O", ("K", "P", "Q"), (k, p, p), 32)}


def run(einsum, tensors, arch, mappings, double_buffered=()):
    for m in mappings:
        m.check(einsum, arch, AXES)
    return analyze(einsum, tensors, arch, AXES, MappingBatch.from_mappings(mappings, einsum, arch, AXES),
                   double_buffered)


def at(analysis, action: str, level: str, tensor: str, i: int = 0) -> int:
    arr = {"read": analysis.read_elements, "fill": analysis.fill_elements, "update": analysis.update_elements,
           "write": analysis.write_elements}[action]
    return int(arr[i, analysis.level_names.index(level), analysis.tensor_names.index(tensor)])


# GEMM 64 x 32 x 48 on a 16 x 16 array, weight-stationary: k on rows, n on cols, m streamed in time at the
# SRAM, folds (n: 32/16 = 2, k: 48/16 = 3) at DRAM with n outer.
WS = Mapping.of({"dram": {"n": 2, "k": 3}, "sram": {"m": 64}}, {"dram": ("m", "n", "k"), "sram": ("n", "k", "m")},
                {"rows": {"k": 16}, "cols": {"n": 16}})


def test_weight_stationary_reads_weights_from_dram_once():
    """B[k,n] is indexed by both fold loops, so each of its 48 x 32 elements comes from DRAM once: 1536."""
    e, t = gemm(64, 32, 48)
    a = run(e, t, make_arch(), [WS])
    assert at(a, "read", "dram", "B") == 48 * 32
    assert at(a, "fill", "sram", "B") == 48 * 32


def test_input_reread_once_per_output_channel_tile():
    """A[m,k] does not use n; the n fold loop (2 tiles) sits outside the k loop, so A is fetched 2 x 64 x 48 = 6144."""
    e, t = gemm(64, 32, 48)
    a = run(e, t, make_arch(), [WS])
    assert at(a, "read", "dram", "A") == 2 * 64 * 48


def test_irrelevant_innermost_loop_keeps_tile_stationary():
    """DRAM order (k, n): n is innermost and A does not use it, so A stays: 64 x 48 = 3072 fetched once."""
    e, t = gemm(64, 32, 48)
    m = Mapping.of({"dram": {"n": 2, "k": 3}, "sram": {"m": 64}}, {"dram": ("m", "k", "n"), "sram": ("n", "k", "m")},
                   {"rows": {"k": 16}, "cols": {"n": 16}})
    a = run(e, t, make_arch(), [m])
    assert at(a, "read", "dram", "A") == 64 * 48


def test_reduction_loop_outside_output_tile_causes_partial_sum_updates():
    """DRAM order (k, n): Z's SRAM tile (64 x 16) changes 3 x 2 times but has 2 positions: 2048 first writes at DRAM
    (= 64 x 32), 2 x 2048 updates, and the same 4096 partial sums read back from DRAM and filled into SRAM."""
    e, t = gemm(64, 32, 48)
    m = Mapping.of({"dram": {"n": 2, "k": 3}, "sram": {"m": 64}}, {"dram": ("m", "k", "n"), "sram": ("n", "k", "m")},
                   {"rows": {"k": 16}, "cols": {"n": 16}})
    a = run(e, t, make_arch(), [m])
    assert (at(a, "write", "dram", "Z"), at(a, "update", "dram", "Z")) == (2048, 4096)
    assert (at(a, "read", "dram", "Z"), at(a, "fill", "sram", "Z")) == (4096, 4096)


def test_output_written_once_when_reduction_is_innermost_fold():
    """Order (n, k): k is innermost and Z does not use it, so Z leaves SRAM once per n tile:
    64 x 32 writes, no updates."""
    e, t = gemm(64, 32, 48)
    a = run(e, t, make_arch(), [WS])
    assert (at(a, "write", "dram", "Z"), at(a, "update", "dram", "Z"), at(a, "read", "dram", "Z")) == (2048, 0, 0)


def test_spatial_reduction_and_multicast_at_the_pes():
    """WS at the SRAM per fold (6 folds, 64 cycles each): A reads 16 (k rows; multicast along n) x 64 = 1024,
    B loads 16 x 16 = 256 once (m innermost is irrelevant: stationary), Z arrivals 16 (reduced over k) x 64 = 1024;
    totals 6144, 1536, 6144 of which 2048 first writes and 4096 updates."""
    e, t = gemm(64, 32, 48)
    a = run(e, t, make_arch(), [WS])
    assert at(a, "read", "sram", "A") == 6 * 16 * 64
    assert at(a, "read", "sram", "B") == 6 * 256
    assert (at(a, "write", "sram", "Z"), at(a, "update", "sram", "Z")) == (2048, 4096)


def test_output_stationary_multicasts_inputs_across_columns():
    """OS (m rows, n cols, k in time): A[m,k] is shared by the 16 columns, so SRAM reads of A are
    M x K x (N / 16) = 64 x 48 x 2 = 6144, not M x N x K / 16; Z is written once per element (k innermost)."""
    e, t = gemm(64, 32, 48)
    m = Mapping.of({"dram": {"n": 2, "m": 4}, "sram": {"k": 48}}, {"dram": ("k", "n", "m")},
                   {"rows": {"m": 16}, "cols": {"n": 16}})
    a = run(e, t, make_arch(), [m])
    assert at(a, "read", "sram", "A") == 64 * 48 * 2
    assert at(a, "read", "sram", "B") == 48 * 32 * 4
    assert (at(a, "write", "sram", "Z"), at(a, "update", "sram", "Z")) == (64 * 32, 0)


def test_strided_sliding_window_tile_extent():
    """Stride 2: input rows for a P-tile of 4 and an R-tile of 3 span 2 x (4 - 1) + (3 - 1) + 1 = 9; channels 2;
    so a (c=2, p=4, r=3, q=1, s=1) tile touches 2 x 9 x 1 = 18 elements; with R-tile 1 the stride gaps are not
    data: 2 x 4 rows = 8."""
    e, t = conv(c=2, k=4, p=8, rs=3, stride=2)
    ranks = rank_names(e)
    tile = np.array([[{"k": 1, "p": 4, "q": 1, "c": 2, "r": 3, "s": 1}[r] for r in ranks],
                     [{"k": 1, "p": 4, "q": 1, "c": 2, "r": 1, "s": 1}[r] for r in ranks]])
    assert tile_footprint(tile, e.inputs[0], t["I"].shape, ranks).tolist() == [18, 8]


def test_conv_halo_refetch_across_p_tiles():
    """Conv c=1, p=q=8, 3x3, stride 2 (input 17 x 17). SRAM holds a p-tile of 4 rows with the full window:
    rows 2 x 3 + 2 + 1 = 9, columns 17; two p tiles fetch 2 x 9 x 17 = 306 elements (row 8 twice: the halo)."""
    e, t = conv(c=1, k=1, p=8, rs=3, stride=2)
    m = Mapping.of({"dram": {"p": 2}, "sram": {"p": 4, "q": 8, "r": 3, "s": 3}})
    a = run(e, t, make_arch(), [m])
    assert at(a, "fill", "sram", "I") == 306
    assert 306 - 17 * 17 == 17  # one shared row of 17 elements fetched twice


def test_imperfect_factorization_counts_real_macs():
    """M = 10 covered by factors 4 x 3 = 12: MACs are the real 10 x 8 x 8 = 640, compute cycles the padded 12 x 8
    (per fold; one fold), utilization 640 / (256 PEs x 96 cycles)."""
    e, t = gemm(10, 8, 8)
    m = Mapping.of({"dram": {"m": 4}, "sram": {"m": 3}}, spatial={"rows": {"k": 8}, "cols": {"n": 8}})
    a = run(e, t, make_arch(), [m])
    assert int(a.macs[0]) == e.macs == 640
    assert int(a.padded_iterations[0]) == 12 * 8 * 8
    assert int(a.compute_cycles[0]) == 12
    assert a.utilization[0] == pytest.approx(640 / (256 * 12))


def test_bypassed_level_passes_traffic_to_the_next_kept_level():
    """SRAM bypasses B: the PEs read B straight from DRAM (WS: 256 per fold x 6 folds = 1536) and SRAM sees no B."""
    e, t = gemm(64, 32, 48)
    m = Mapping.of({"dram": {"n": 2, "k": 3}, "sram": {"m": 64}},
                   {"dram": ("m", "n", "k"), "sram": ("n", "k", "m")},
                   {"rows": {"k": 16}, "cols": {"n": 16}}, {"sram": ["B"]})
    a = run(e, t, make_arch(), [m])
    assert at(a, "read", "dram", "B") == 1536
    assert sum(at(a, x, "sram", "B") for x in ("read", "fill", "update", "write")) == 0
    assert int(a.tile_elements[0, 1, a.tensor_names.index("B")]) == 0


def test_levels_below_the_fanout_hold_one_copy_per_pe():
    """Fan-out below the SRAM, a per-PE RF holding A[m,k] tiles of 1 x 4 (k 4 at the RF; m 16 on rows, n 16 on cols).
    Loops above the RF: m 4, n 2 (DRAM), k 12 (SRAM, innermost, uses A) -> 96 changes per PE; 256 PEs x 4 x 96
    = 98304 fills; the SRAM sends each tile once to the 16 PEs of a row (n is multicast): 16 x 4 x 96 = 6144 reads."""
    e, t = gemm(64, 32, 48)
    m = Mapping.of({"dram": {"m": 4, "n": 2}, "sram": {"k": 12}, "rf": {"k": 4}},
                   spatial={"rows": {"m": 16}, "cols": {"n": 16}}, spatial_below="sram")
    a = run(e, t, make_arch(levels=3), [m])
    assert at(a, "fill", "rf", "A") == 64 * 32 * 48
    assert at(a, "read", "sram", "A") == 64 * 32 * 48 // 16
    assert int(a.tile_elements[0, 2, 0]) == 4


def test_capacity_check_and_double_buffering():
    """WS SRAM tiles: A 64 x 16 x 1 B + B 16 x 16 x 1 B + Z 64 x 16 x 4 B = 5376 B: fits 8 KiB, not 4 KiB;
    double-buffered 10752 B does not fit 8 KiB. DRAM is unbounded."""
    e, t = gemm(64, 32, 48)
    a = run(e, t, make_arch("8 KiB"), [WS])
    assert a.occupancy_bytes[0, 1] == 5376 and a.fits[0].tolist() == [True, True]
    assert run(e, t, make_arch("4 KiB"), [WS]).fits[0].tolist() == [True, False]
    doubled = run(e, t, make_arch("8 KiB"), [WS], double_buffered=("sram",))
    assert doubled.occupancy_bytes[0, 1] == 10752 and not doubled.fits[0, 1]


def test_level_bytes_energy_and_cycles():
    """WS at DRAM: reads A 6144 + B 1536 (1 B each) and writes Z 2048 x 4 B = 15872 B; at 10 GB/s and 1 GHz that is
    1587.2 cycles at the bandwidth the engine sees; energy 15872 x 8 bit x 10 pJ."""
    e, t = gemm(64, 32, 48)
    arch = make_arch()
    a = run(e, t, arch, [WS])
    assert a.level_bytes[0, 0] == 15872
    cycles = arch.engines[0].levels_transfer_cycles(a.level_read_bytes, a.level_write_bytes, arch)
    assert cycles[0, 0] == pytest.approx(1587.2)
    assert a.level_energy_j[0, 0] == pytest.approx(15872 * 8 * 10e-12)


# ---------------------------------------------------------------------------------------------
# Random legal mappings: batch == one by one, and properties
# ---------------------------------------------------------------------------------------------
def random_mapping(einsum: Einsum, arch: Arch, rng: np.random.Generator) -> Mapping:
    """A legal mapping: per rank a random spatial factor (within the axis), inner-level factor, outer factor covering
    the rest (possibly imperfect), random loop orders and bypass choices that keep each tensor somewhere."""
    levels = [m.name for m in arch.memory]
    temporal = {lv: {} for lv in levels}
    spatial = {"rows": {}, "cols": {}}
    room = dict(AXES)
    for rank, size in einsum.rank_sizes:
        axis = str(rng.choice(["rows", "cols"]))
        s = int(rng.integers(1, min(size, room[axis]) + 1))
        room[axis] //= s
        spatial[axis][rank] = s
        left = -(-size // s)
        for lv in levels[:0:-1]:
            f = int(rng.integers(1, left + 1))
            temporal[lv][rank] = f
            left = -(-left // f)
        temporal[levels[0]][rank] = left
    order = {lv: [str(r) for r in rng.permutation(rank_names(einsum))] for lv in levels}
    bypass = {lv: [t for t in tensor_names(einsum) if rng.random() < 0.3] for lv in levels[1:]}
    return Mapping.of(temporal, order, spatial, bypass)


def workloads():
    return st.one_of(
        st.tuples(st.integers(1, 24), st.integers(1, 24), st.integers(1, 24)).map(lambda s: gemm(*s)),
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.integers(1, 3), st.integers(1, 2),
                  st.integers(0, 1)).map(lambda s: conv(*s)))


@settings(max_examples=40, deadline=None)
@given(workloads(), st.integers(0, 2**31), st.integers(2, 3))
def test_fills_cover_compulsory_footprint_and_macs_are_exact(work, seed, levels):
    """For every legal mapping: each tensor's traffic into a non-home level and out of its home is at least its
    compulsory footprint (distinct in-bounds elements, Einsum.footprint), and MACs equal the einsum's MACs."""
    e, t = work
    arch = make_arch(levels=levels)
    rng = np.random.default_rng(seed)
    mappings = [random_mapping(e, arch, rng) for _ in range(8)]
    a = run(e, t, arch, mappings)
    assert (a.macs == e.macs).all()
    batch = MappingBatch.from_mappings(mappings, e, arch, AXES)
    assert batch.legal(e, AXES).all()
    for ti, name in enumerate(a.tensor_names):
        access = e.output if name == e.output.tensor else next(x for x in e.inputs if x.tensor == name)
        need = e.footprint(access, t[name])
        kept = ~batch.bypass[:, :, ti]
        home = kept.argmax(axis=1)
        for i in range(len(mappings)):
            if name == e.output.tensor:
                assert a.write_elements[i, home[i], ti] + a.update_elements[i, home[i], ti] >= need
            else:
                assert a.read_elements[i, home[i], ti] >= need
            for lv in np.flatnonzero(kept[i])[1:]:
                traffic = a.fill_elements if name != e.output.tensor else a.read_elements
                assert traffic[i, lv, ti] >= need


@settings(max_examples=15, deadline=None)
@given(workloads(), st.integers(0, 2**31))
def test_batch_equals_one_by_one(work, seed):
    """Scoring 6 mappings in one batch gives exactly the arrays of scoring each alone."""
    e, t = work
    arch = make_arch(levels=3)
    rng = np.random.default_rng(seed)
    mappings = [random_mapping(e, arch, rng) for _ in range(6)]
    together = run(e, t, arch, mappings)
    for i, m in enumerate(mappings):
        alone = run(e, t, arch, [m])
        for field in ("tile_elements", "read_elements", "fill_elements", "update_elements", "write_elements",
                      "occupancy_bytes", "fits", "level_energy_j", "macs", "compute_cycles", "used_pes"):
            np.testing.assert_array_equal(getattr(together, field)[i], getattr(alone, field)[0], err_msg=field)


# ---------------------------------------------------------------------------------------------
# GEMM roles and systolic dataflows as mappings
# ---------------------------------------------------------------------------------------------
def test_gemm_roles_of_conv_and_batched_matmul():
    """Conv: M = (p, q) output pixels, N = (k) filters, K = (c, r, s); attention S[h,i,j] = Q[h,i,d] K[h,j,d]:
    batch (h), M (i), N (j) from the second operand, K (d)."""
    e, t = conv(c=3, k=4, p=5, rs=3, stride=1)
    assert gemm_roles(e, t) == (("p", "q"), ("k",), ("c", "r", "s"), ())
    s = Einsum("S", Access("S", (R("h"), R("i"), R("j"))),
               Call("mul", (Access("Q", (R("h"), R("i"), R("d"))), Access("K", (R("h"), R("j"), R("d"))))),
               {"h": 2, "i": 3, "j": 4, "d": 5})
    assert gemm_roles(s) == (("i",), ("j",), ("d",), ("h",))


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("m,n,k,rows,cols", [(64, 32, 48, 16, 16), (100, 7, 300, 16, 8), (1, 512, 256, 32, 64)])
def test_systolic_mapping_agrees_with_fold_plan_on_gemms(dataflow, m, n, k, rows, cols):
    """Folds (product of the fold-level factors) and the temporal extent (innermost-level factors) equal
    fold_plan's row_folds x col_folds and T for the same GEMM and array (SCALE-Sim's fold arithmetic)."""
    e, t = gemm(m, n, k)
    arch = make_arch()
    mapping = systolic_mapping(e, arch, rows, cols, dataflow, gemm_roles(e, t))
    mapping.check(e, arch, {"rows": rows, "cols": cols})
    plan = fold_plan(m, n, k, rows, cols, dataflow)
    assert math.prod(mapping.factors("dram").values()) == int(plan.folds)
    assert math.prod(mapping.factors("sram").values()) == int(plan.temporal)
    batch = MappingBatch.from_mappings([mapping], e, arch, {"rows": rows, "cols": cols})
    a = analyze(e, t, arch, {"rows": rows, "cols": cols}, batch)
    assert int(a.compute_cycles[0]) == int(plan.folds * plan.temporal)
    assert int(a.macs[0]) == m * n * k


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_systolic_mapping_agrees_with_fold_plan_on_conv(dataflow):
    """Conv c=64, k=96, 14x14 output, 3x3 window: im2col M = 196, N = 96, K = 576 on a 32 x 14 array. fold_plan:
    os 7 x 7, ws 18 x 7, is 18 x 14 folds; the per-rank splits reach the same counts (M = 14 x 14 on 32 rows as
    p-tiles of 2 x q 14, on 14 columns as q 14; K = 64 x 3 x 3 on 32 rows as c 32 in 2 folds x r 3 x s 3), and the
    temporal extent equals T."""
    e, t = conv(c=64, k=96, p=14, rs=3, stride=1, pad=1)
    arch = make_arch()
    mapping = systolic_mapping(e, arch, 32, 14, dataflow, gemm_roles(e, t))
    plan = fold_plan(196, 96, 576, 32, 14, dataflow)
    assert math.prod(mapping.factors("dram").values()) == int(plan.folds)
    assert math.prod(mapping.factors("sram").values()) == int(plan.temporal)


def test_systolic_weight_stationary_mapping_loop_order_matches_scalesim():
    """WS folds run column fold (n) outer, row fold (k) inner, m streamed innermost at the SRAM; levels that do not
    keep a tensor in its role bypass it."""
    e, t = gemm(64, 32, 48)
    arch = Arch.model_validate({"name": "t", "clock": "1 GHz", "technology_nm": 28, "memory": [
        {"name": "dram", "technology": "DRAM", "bandwidth": "10 GB/s"},
        {"name": "sram", "technology": "SRAM",
         "capacity": "64 KiB", "bandwidth": "100 GB/s", "holds": ["activations"]}],
        "engines": [{"name": "mxu", "kind": "systolic", "rows": 16, "cols": 16}]})
    mapping = systolic_mapping(e, arch, 16, 16, "ws", gemm_roles(e, t), {"A": "inputs", "B": "weights",
                                                                          "Z": "outputs"})
    assert mapping.loop_order("dram", e)[-2:] == ("n", "k")
    assert mapping.loop_order("sram", e)[-1] == "m"
    assert mapping.bypassed("sram") == ("B",)
    assert mapping.spatial_factors("rows") == {"k": 16} and mapping.spatial_factors("cols") == {"n": 16}


def test_split_fold_over_ranks_cannot_always_match_flattened_folds():
    """A 7 x 7 window (K = 49) on 10 rows: SCALE-Sim folds the flattened 49 into ceil(49/10) = 5 folds, but per-rank
    factors f_r, f_s with f_r x f_s <= 10 need at least 7 folds (1 x 7 -> 7; 2 x 4 -> 4 x 2 = 8; 3 x 3 -> 9)."""
    split = split_fold(("r", "s"), {"r": 7, "s": 7}, 10)
    assert math.prod(split.values()) <= 10
    assert math.prod(-(-7 // f) for f in split.values()) == 7


def test_split_fold_prefers_least_padding_among_fewest_folds():
    """K = c x r x s = 3 x 7 x 7 = 147 on 128 rows: the fewest folds are 2 (ceil(147/128)); of the splits with 2 folds,
    c=3, r=4, s=7 (84 rows, r in 2 folds) pads least: 2 x 84 = 168 slots, against 2 x 98 = 196 for c=2, r=7, s=7."""
    assert split_fold(("c", "r", "s"), {"c": 3, "r": 7, "s": 7}, 128) == {"c": 3, "r": 4, "s": 7}
