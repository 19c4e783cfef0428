"""LUT tensor core and its MAC baseline: hand-derived operation counts, bit-serial timing, storage and errors."""
from __future__ import annotations

import itertools
from dataclasses import replace
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.energy.components import level_energy_per_bit
from accel_sim.engines.costing import gemm_array_traffic
from accel_sim.engines.lut_tensor_core import (LutTensorCoreEngine, MacTensorCoreEngine, lut_engine_area_mm2,
                                               lut_work, mac_work, precompute_adds, table_entries)
from accel_sim.errors import ConfigError, InfeasibleError
from accel_sim.io.yaml import parse_yaml, validate
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank


def lut(**kw) -> LutTensorCoreEngine:
    """A LUT engine with small defaults (one unit of M2 x N4 x K2 groups, g = 4)."""
    base = dict(name="lut", kind="lut_tensor_core", tile_m=2, tile_n=4, k_groups=2, units=1)
    return LutTensorCoreEngine(**{**base, **kw})


def mac(**kw) -> MacTensorCoreEngine:
    """A MAC engine with small defaults (one unit of 2 x 4 x 4 fp16 MACs)."""
    base = dict(name="mac", kind="mac_tensor_core", tile_m=2, tile_n=4, tile_k=4)
    return MacTensorCoreEngine(**{**base, **kw})


def gemm(m: int, n: int, k: int, w_bits: int, a_bits: int = 16) -> Workload:
    """Z[m,n] = A[m,k] * W[k,n] with W a weight of `w_bits`."""
    e = Einsum("gemm", Access("Z", (R("m"), R("n"))),
               Call("mul", (Access("A", (R("m"), R("k"))), Access("W", (R("k"), R("n"))))),
               {"m": m, "n": n, "k": k})
    return Workload("gemm", (Tensor("A", ("M", "K"), (m, k), a_bits),
                             Tensor("W", ("K", "N"), (k, n), w_bits, "weight"),
                             Tensor("Z", ("M", "N"), (m, n), 16)), (e,))


def fast_arch(*engines) -> Arch:
    """One unbounded level with bandwidth so high that every cost is compute-bound."""
    return Arch.model_validate({"name": "t", "clock": "1 GHz", "technology_nm": 28,
                                "memory": [{"name": "mem", "technology": "DRAM", "bandwidth": "1e18 B/s"}],
                                "engines": [e.model_dump(by_alias=False) for e in engines]})


def gray_walk_adds(acts: np.ndarray, symmetrize: bool) -> tuple[dict[int, float], int]:
    """Build one table by visiting its entries in Gray-code order; return entries by index and adds made.

    Plain: entry[idx] = sum of a_i over the set bits of idx. Symmetrized: entry[idx] = a_0 + sum over i >= 1
    of (+a_i if bit i else -a_i) for idx with bit 0 set (the stored half); the first costs g - 1 adds.
    """
    g = len(acts)
    adds = 0
    if not symmetrize:
        entries, value, prev = {0: 0.0}, 0.0, 0
        for step in range(1, 2 ** g):
            code = step ^ (step >> 1)
            bit = (code ^ prev).bit_length() - 1
            value = value + acts[bit] if code >> bit & 1 else value - acts[bit]
            adds += 1
            entries[code], prev = value, code
        return entries, adds
    value = acts[0]
    for i in range(1, g):
        value, adds = value - acts[i], adds + 1
    entries, prev = {1: value}, 0
    for step in range(1, 2 ** (g - 1)):
        code = step ^ (step >> 1)
        bit = (code ^ prev).bit_length() - 1      # flips sign of a_(bit+1)
        value = value + 2 * acts[bit + 1] if code >> bit & 1 else value - 2 * acts[bit + 1]
        adds += 1
        entries[(code << 1) | 1], prev = value, code
    return entries, adds


@pytest.mark.parametrize("g", [1, 2, 3, 4, 5])
def test_table_entries_are_subset_sums_built_with_the_counted_adds(g: int) -> None:
    """A Gray-code walk builds 2^g subset sums with 2^g - 1 adds (the walk itself is the oracle)."""
    acts = np.arange(1.0, g + 1) * 1.5
    entries, adds = gray_walk_adds(acts, symmetrize=False)
    assert len(entries) == table_entries(g, False) == 2 ** g
    assert adds == precompute_adds(g, False)
    for idx, value in entries.items():
        assert value == pytest.approx(sum(acts[i] for i in range(g) if idx >> i & 1))


@pytest.mark.parametrize("g", [2, 3, 4, 5])
def test_symmetrized_table_stores_half_and_takes_its_counted_adds(g: int) -> None:
    """Symmetrized tables hold 2^(g-1) signed sums, built with 2^(g-1) + g - 2 adds (Gray-code walk)."""
    acts = np.arange(1.0, g + 1)
    entries, adds = gray_walk_adds(acts, symmetrize=True)
    assert len(entries) == table_entries(g, True) == 2 ** (g - 1)
    assert adds == precompute_adds(g, True)
    for idx, value in entries.items():
        assert value == pytest.approx(sum(acts[i] if idx >> i & 1 else -acts[i] for i in range(g)))


def test_g4_tables_hand_counts() -> None:
    """g = 4: 16 entries and 15 adds plain; 8 entries and 10 adds symmetrized (2^3 + 4 - 2)."""
    assert (table_entries(4, False), precompute_adds(4, False)) == (16, 15)
    assert (table_entries(4, True), precompute_adds(4, True)) == (8, 10)


def test_symmetrization_halves_table_storage_area() -> None:
    """Register tables hold half the bits with symmetrization, so their area halves (DFF area is per bit)."""
    plain = lut_engine_area_mm2(lut(symmetrize=False), 28)["tables"]
    sym = lut_engine_area_mm2(lut(symmetrize=True), 28)["tables"]
    assert sym == pytest.approx(plain / 2)


def test_small_mpgemm_lookups_reproduce_the_product() -> None:
    """M=2, N=3, K=8, g=4, 2-bit weights: 4 tables, 24 lookups; bit-serial lookups give A @ W exactly.

    Hand count: tables = M * K/g = 2 * 2 = 4; lookups = tables * N * bits = 4 * 3 * 2 = 24; with one
    k group per step, tree adds = 0 and each lookup is shift-accumulated.
    """
    rng = np.random.default_rng(0)
    m, n, k, g, bits = 2, 3, 8, 4, 2
    a = rng.integers(-8, 8, (m, k)).astype(float)
    w = rng.integers(0, 2 ** bits, (k, n))
    out = np.zeros((m, n))
    lookups = 0
    for row in range(m):
        for grp in range(k // g):
            table, _ = gray_walk_adds(a[row, grp * g:(grp + 1) * g], symmetrize=False)
            for col in range(n):
                for plane in range(bits):
                    index = sum(((w[grp * g + i, col] >> plane) & 1) << i for i in range(g))
                    out[row, col] += table[index] * 2 ** plane
                    lookups += 1
    np.testing.assert_allclose(out, a @ w)
    work = lut_work(m, n, k, 1, bits, lut(k_groups=1, symmetrize=False))
    assert (work.tables, work.lookups, work.precompute_adds) == (4, lookups, 4 * 15) == (4, 24, 60)
    assert (work.tree_adds, work.accumulates) == (0, 24)


def test_adder_tree_sums_k_groups_lookups_per_output_value() -> None:
    """With k_groups = 2 and K = 16 (4 groups, 2 k steps): tree adds = lookups / 2, accumulates = lookups / 2."""
    work = lut_work(2, 4, 16, 1, 2, lut(k_groups=2))
    assert work.lookups == 2 * 4 * 4 * 2
    assert work.tree_adds == work.accumulates == work.lookups // 2


def test_bit_serial_cycles_double_from_2_to_4_bit_weights() -> None:
    """At a fixed shape, 4-bit weights take exactly twice the array steps and compute cycles of 2-bit ones."""
    engine = lut()
    arch = fast_arch(engine)
    c2 = engine.cost(gemm(4, 64, 256, 2).einsums[0], gemm(4, 64, 256, 2), arch)
    c4 = engine.cost(gemm(4, 64, 256, 4).einsums[0], gemm(4, 64, 256, 4), arch)
    assert c4.compute_cycles == pytest.approx(2 * c2.compute_cycles)
    # hand count: ceil(4/2) * ceil(64/4) * ceil((256/4)/2) * bits = 2 * 16 * 32 * 2 = 2048 steps
    assert c2.compute_cycles == pytest.approx(2048)


def test_table_is_reused_across_the_n_tile() -> None:
    """Tables load once per N tile: N = 64 on tile_n = 4 loads each of the M*K/g tables 16 times."""
    work = lut_work(2, 64, 16, 1, 2, lut())
    assert work.table_loads == work.tables * 16
    assert lut_work(2, 64, 16, 1, 2, lut(tile_n=64)).table_loads == work.tables


def test_peak_macs_scale_inversely_with_weight_bits() -> None:
    """Peak MACs per cycle = units * tile_m * tile_n * k_groups * g / bits (1 unit: 2*4*2*4 = 64 at 1 bit)."""
    engine = lut()
    assert engine.peak_macs_per_cycle() == 64
    assert [engine.macs_per_cycle(b) for b in (1, 2, 4)] == [64, 32, 16]


def test_inline_precompute_adds_cycles_and_a_unit_overlaps_them() -> None:
    """Inline: steps + adds/rate; unit: max(steps, adds/rate); fused: steps (hand count below)."""
    w = gemm(2, 4, 64, 2)
    # tables = 2 * 16 = 32, adds = 32 * 10 = 320; steps = 1 * 1 * ceil(16/2) * 2 = 16
    rate = 4.0
    got = {mode: lut(precompute=mode, precompute_adds_per_cycle=None if mode == "fused" else rate)
           for mode in ("fused", "unit", "inline")}
    cycles = {mode: e.cost(w.einsums[0], w, fast_arch(e)).compute_cycles for mode, e in got.items()}
    assert cycles == pytest.approx({"fused": 16, "unit": 80, "inline": 96})


def test_tables_built_on_one_core_do_not_shrink_with_cores() -> None:
    """M2 x N16 x K64, 2-bit: 32 tables of 10 adds. On 4 cores the lookups split 4 ways (64 steps -> 16). Inline
    tables at 4 adds/cycle per core: split over the cores, 320 / 16 = 20 cycles; built by one core while the
    others wait, 320 / 4 = 80 (as on one core)."""
    w = gemm(2, 4 * 4, 64, 2)
    shared, alone = (lut(precompute="inline", precompute_adds_per_cycle=4.0, precompute_cores=c).on_cores(4)
                     for c in ("all", "one"))
    assert shared.cost(w.einsums[0], w, fast_arch(shared)).compute_cycles == pytest.approx(16 + 20)
    assert alone.cost(w.einsums[0], w, fast_arch(alone)).compute_cycles == pytest.approx(16 + 80)


def test_mac_baseline_dequantizes_each_weight_once_per_m_tile() -> None:
    """2-bit weights on fp16 MACs: dequants = N * K * ceil(M / tile_m); none when weights are already fp16."""
    assert mac_work(5, 4, 8, 1, 2, mac()).dequants == 4 * 8 * 3
    assert mac_work(5, 4, 8, 1, 16, mac()).dequants == 0
    assert mac_work(5, 4, 8, 1, 2, mac()).macs == 5 * 4 * 8


def test_inline_dequant_adds_to_mac_cycles() -> None:
    """Inline dequant at 8 weights/cycle: steps (ceil(4/2)*1*ceil(64/4) = 32) + 4*64*2/8 = 64 -> 96 cycles."""
    w = gemm(4, 4, 64, 2)
    engine = mac(dequant="inline", dequant_per_cycle=8)
    assert engine.cost(w.einsums[0], w, fast_arch(engine)).compute_cycles == pytest.approx(96)
    unit = mac(dequant="unit", dequant_per_cycle=8)
    assert unit.cost(w.einsums[0], w, fast_arch(unit)).compute_cycles == pytest.approx(64)


def test_lut_energy_has_every_component() -> None:
    """Energy is split into precompute, table reads/writes, adder tree, shift-accumulate and index reads."""
    engine = lut(activation="int8")
    w = gemm(2, 8, 64, 2, a_bits=8)
    energy = engine.cost(w.einsums[0], w, fast_arch(engine)).energy_j
    comps = {c for c, _ in energy}
    assert {"table_precompute", "table_buffer", "adder_tree", "shift_accumulate", "weight_registers",
            "sign_select"} <= comps
    assert all(v >= 0 for v in energy.values())


def test_lut_energy_per_mac_grows_linearly_with_weight_bits() -> None:
    """Lookup, tree and accumulate energy double from 2- to 4-bit weights (precompute does not)."""
    engine = lut()
    e = {}
    for bits in (2, 4):
        w = gemm(2, 64, 256, bits)
        e[bits] = engine.cost(w.einsums[0], w, fast_arch(engine)).energy_j
    for comp in ("adder_tree", "shift_accumulate"):
        assert e[4][(comp, "compute")] == pytest.approx(2 * e[2][(comp, "compute")])
    assert e[4][("table_precompute", "compute")] == pytest.approx(e[2][("table_precompute", "compute")])


@pytest.mark.parametrize(("yaml_engine", "needle"), [
    ("{name: l, kind: lut_tensor_core, g: 9}", "group_size"),
    ("{name: l, kind: lut_tensor_core, precompute: unit}", "precompute_adds_per_cycle"),
    ("{name: l, kind: lut_tensor_core, activation: fp8}", "activation"),
])
def test_bad_lut_specs_raise_config_errors_with_a_fix(yaml_engine: str, needle: str) -> None:
    """Bad LUT parameters are ConfigErrors naming the line, key path and a fix."""
    text = ("name: t\nclock: 1 GHz\ntechnology_nm: 28\nmemory:\n  - {name: m, technology: DRAM, bandwidth: 1 GB/s}\n"
            f"engines:\n  - {yaml_engine}\n")
    with pytest.raises(ConfigError) as info:
        validate(Arch, parse_yaml(text, "bad.yaml"))
    message = str(info.value)
    assert needle in message and "Fix:" in message and "line 7" in message


def test_lut_beats_mac_area_per_mac_at_two_bits_and_ratio_halves_with_bits() -> None:
    """Compute density (MACs/cycle/mm^2) ratio LUT/MAC halves from 2- to 4-bit weights (bit-serial LUT,
    fixed-cost MAC)."""
    lut_e, mac_e = lut(), mac()
    ratio = {b: (lut_e.macs_per_cycle(b) / lut_e.area_mm2(28)) / (mac_e.macs_per_cycle(b) / mac_e.area_mm2(28))
             for b in (2, 4)}
    assert ratio[2] > 1
    assert ratio[4] == pytest.approx(ratio[2] / 2)


def test_counts_match_brute_force_loops_on_odd_shapes() -> None:
    """lut_work on ragged shapes equals counting the loop nest directly (ceil on every tiled dimension)."""
    engine = lut(tile_m=3, tile_n=5, k_groups=3)
    for m, n, k, bits in itertools.product((1, 4, 7), (1, 6, 11), (3, 9, 17), (1, 3)):
        groups = math.ceil(k / 4)
        steps = 0
        for _m0, _n0, k0 in itertools.product(range(0, m, 3), range(0, n, 5), range(0, groups, 3)):
            steps += bits
        work = lut_work(m, n, k, 1, bits, engine)
        assert work.steps == steps
        assert work.lookups == m * groups * n * bits


def test_single_level_memory_streams_and_overlaps_with_compute() -> None:
    """With DRAM as the only level (a CPU), a GEMV's operands stream while the datapath works: total cycles =
    max(lookup cycles + one step's operands, DRAM bytes / bandwidth), not their sum (the shared first-tile
    prologue would be the whole weight here). Hand-derived compute: 1 x 256 x 256, 2-bit weights, one
    M1 x N4 x K2-group unit (g = 4): 256 * (256 / 8) * 2 / 4 = 4096 steps of one cycle. Weights alone are
    256 * 256 * 2 / 8 = 16384 B, so at 1 B/cycle memory dominates and the sum would exceed 20480 cycles."""
    engine = lut(tile_m=1, precompute="unit", precompute_adds_per_cycle=1e6)  # no fused-table traffic
    arch = Arch.model_validate({"name": "cpu", "clock": "1 GHz", "technology_nm": 28,
                                "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s"}],
                                "engines": [engine.model_dump(by_alias=False)]})
    w = gemm(1, 256, 256, 2)
    cost = engine.cost(w.einsums[0], w, arch)
    assert cost.compute_cycles == pytest.approx(4096)
    dram_cycles = gemm_array_traffic(w.einsums[0], w, arch, engine, 1, 4, "os").level_cycles[0]
    assert dram_cycles >= 16384
    step_cycles = 2 * 4 * (1 * 16 + 4 * 2) / 8   # k_groups * g * (one activation row + N4 weight columns) bits
    assert cost.total_cycles == pytest.approx(max(4096 + step_cycles, dram_cycles))


def test_a_cache_too_small_to_stage_the_tiles_is_infeasible_not_faster() -> None:
    """attention_3pass on the M2 Ultra llama.cpp config (16 cores' 1 x 64 MAC columns, activations in each core's
    L1): at 1 KiB K's tiles are staged through the cache; at 512 B not even a staged tile fits (Q, K and QK need
    516 B double-buffered). The engine's fixed output-stationary mapping was then costed as if its tiles fitted,
    with K read from DRAM once: 0.22 ms against 0.63 ms at 1 KiB. It is refused, naming the cache and the bytes."""
    root = Path(__file__).resolve().parents[3]
    config = root / "arch_configs" / "lut" / "m2_ultra_llamacpp.yaml"
    workload = root / "workloads" / "attention_3pass.einsum.yaml"
    larger = evaluate(load_arch(config, ["memory.l1d.capacity=1 KiB"]), load_workload(workload), "latency")
    assert larger.summary()["latency_s"] > 0
    with pytest.raises(InfeasibleError, match=r"'l1d' holds 512 bytes .* need 516 bytes"):
        evaluate(load_arch(config, ["memory.l1d.capacity=512 B"]), load_workload(workload), "latency")


@settings(max_examples=40, deadline=None)
@given(m=st.sampled_from((1, 4, 16, 64)), n=st.sampled_from((16, 64, 256)), k=st.sampled_from((16, 64, 256)),
       units=st.sampled_from((1, 4, 16)), big=st.integers(4, 14), shrink=st.integers(1, 10), table=st.booleans())
def test_shrinking_the_activation_buffer_never_speeds_a_tensor_core_up(m: int, n: int, k: int, units: int, big: int,
                                                                       shrink: int, table: bool) -> None:
    """A LUT tensor core's GEMM, or a MAC tensor core's product of two activations (attention's Q x K^T), on its
    fixed output-stationary tile (units side by side along N, as a multi-core CPU's cores are) under a smaller
    activation buffer stages what it cannot keep, or is infeasible (infinite): its cycles and DRAM bytes never
    fall as the buffer shrinks (a buffer too small to stage the tiles was costed as if they fitted)."""
    engine = (lut(tile_m=1, tile_n=4, k_groups=4, units=units) if table
              else mac(tile_m=1, tile_n=4, tile_k=16, units=units))
    work = gemm(m, n, k, 2 if table else 8, 8)
    if not table:   # attention's Q x K^T: both operands are activations, both in the buffer
        work = Workload("qk", tuple(replace(t, kind="activation") for t in work.tensors), work.einsums)
    results = []
    for capacity in (2 ** big, 2 ** max(0, big - shrink)):
        arch = Arch.model_validate({
            "name": "t", "clock": "1 GHz", "technology_nm": 28,
            "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "10 GB/s"},
                       {"name": "buf", "technology": "SRAM", "capacity": f"{capacity} B", "bandwidth": "1 TB/s",
                        "holds": ["activations"]}],
            "engines": [engine.model_dump(by_alias=False)]})
        try:
            cost = engine.cost(work.einsums[0], work, arch)
        except InfeasibleError:
            results.append((np.inf, np.inf))
            continue
        dram = sum(v for (level, _, _), v in cost.accesses.items() if level == "dram")
        results.append((cost.total_cycles, dram))
    assert results[1][0] >= results[0][0] * (1 - 1e-12) and results[1][1] >= results[0][1] * (1 - 1e-12)


def test_fused_tables_are_in_the_levels_bytes_as_in_its_energy() -> None:
    """Fused precompute: the producer writes tables (2^g entries per g activations) where the activations live and
    the array reads them there; the level's recorded bytes carry that growth, so they price to exactly the level's
    energy (bytes x 8 x its per-bit read and write energy) and the reported bandwidth use follows them."""
    arch = load_arch(Path(__file__).resolve().parents[3] / "arch_configs" / "lut" / "lut_tensor_core.yaml")
    workload = gemm(16, 4096, 4096, w_bits=2)
    cost = arch.engines[0].cost(workload.einsums[0], workload, arch)
    level = arch.memory[1]
    read_e, write_e = level_energy_per_bit(level, arch.technology_nm)
    moved = cost.read_write_bytes_by_level({t.name: t.bits for t in workload.tensors})[level.name]
    priced = 8 * (moved[0] * read_e + moved[1] * write_e)
    assert priced == pytest.approx(cost.energy_j[(level.name, "read")] + cost.energy_j[(level.name, "write")],
                                   rel=1e-12)
    assert moved[1] > 0   # the tables written, beyond the activations read
