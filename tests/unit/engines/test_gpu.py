"""The GPU engine (accel_sim/engines/gpu.py): hand-derived kernel times on the shipped A100 and H100 configs.

Every expected number below is derived in its docstring from the config's cited figures (arch_configs/gpu/), not
read back from the model.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import elementwise_exp, gemm
from hypothesis import given, settings, strategies as st

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.engines.gpu import CtaTile
from accel_sim.engines.gpu_kernel import TileArrays, occupancy
from accel_sim.engines.roofline import bound_on
from accel_sim.errors import ConfigError, InfeasibleError
from accel_sim.mapper import best_cost

ROOT = Path(__file__).resolve().parents[3]
A100 = ROOT / "arch_configs" / "gpu" / "a100_sxm4_80gb.yaml"
H100 = ROOT / "arch_configs" / "gpu" / "h100_sxm5_80gb.yaml"


def _with_tiles(path: Path, *tiles: CtaTile, splits: tuple[int, ...] = (1,)):  # noqa: ANN202 - an Arch
    """The shipped arch with its GPU engine restricted to `tiles` and `splits`."""
    arch = load_arch(path)
    engine = arch.engines[0].model_copy(update={"tiles": tiles, "splits": splits})
    return arch.model_copy(update={"engines": (engine,)})


def _without_power_limit(arch):  # noqa: ANN001,ANN202 - an Arch
    """`arch` with its GPU engine's measured mac_energy and dvfs removed: TDP-derived MAC energy and no power limit,
    the board of a short run (the first milliseconds, before the limiter lowers the clock)."""
    engine = arch.engines[0].model_copy(update={"mac_energy": None, "dvfs": None})
    return arch.model_copy(update={"engines": (engine,)})


def test_square_fp16_gemm_on_h100_is_peak_times_efficiency_times_wave_quantization() -> None:
    """4096^3 fp16 on the H100, before its power limit acts (`_without_power_limit`), with CUTLASS's Hopper tile
    128 x 256 x 64, 4 stages (config [CU]):
    - occupancy 1: shared memory 4 x (128 + 256) x 64 x 2 B = 196,608 B per CTA (228 KiB per SM holds one);
      registers 256 threads x (128 x 256 / 256 + 32) x 4 B = 163,840 B (256 KiB holds one);
    - 32 x 16 = 512 CTAs over 132 SMs: ceil(512 / 132) = 4 waves, wave quantization 512 / 528 = 0.9697;
    - compute = 4 waves x 128 x 256 x 4096 MACs / (2,048 MACs per SM per cycle x 0.794) = 330,156.2 cycles,
      i.e. 989.4 TFLOPS (132 x 2048 x 2 x 1.83 GHz) x 0.794 x 0.9697 = 761.8 TFLOPS over the main loop;
    - nothing stalls: L2 serves A 16 times, B 32 / 2 (multicast) = 16 times and C once (33 x 32 MiB) in
      1,107,296,256 / 9.37e12 x 1.83e9 = 216,259 cycles; A + B (64 MiB) exceed the 50 MiB L2, so waves of
      11 x 12 CTAs read A ceil(16 / 12) = 2 and B ceil(32 / 11) = 3 times from HBM: 6 x 32 MiB in 130,927 cycles;
    - fill/drain: the 4 us eager launch (7,320 cycles), the GEMM kernel's 0.82 us set-up (1,500.6 cycles), 400
      cycles of memory latency and the last wave's 116 output tiles (116 x 128 x 256 x 2 B = 7,602,176 B) draining
      at 0.84 x 3.35 TB/s: 4,943.6 cycles."""
    arch = _without_power_limit(_with_tiles(H100, CtaTile(m=128, n=256, k=64, stages=4, warps=8)))
    w = gemm(4096, 4096, 4096, bits=16, out_bits=16)
    cost = evaluate(arch, w, "latency").einsums[0].cost
    compute = 4 * 128 * 256 * 4096 / (2048 * 0.794)
    assert cost.compute_cycles == pytest.approx(compute, rel=1e-12)
    assert cost.stall_cycles == 0
    drain = 116 * 128 * 256 * 2 / (3.35e12 * 0.84) * 1.83e9
    assert cost.fill_drain_cycles == pytest.approx((4e-6 + 0.82e-6) * 1.83e9 + 400 + drain, rel=1e-12)
    main_loop_tflops = 2 * 4096**3 / (cost.compute_cycles / 1.83e9) / 1e12
    peak_tflops = 132 * 2048 * 2 * 1.83e9 / 1e12
    assert peak_tflops == pytest.approx(989.4, rel=1e-3)
    assert main_loop_tflops == pytest.approx(peak_tflops * 0.794 * 512 / 528, rel=1e-12)


def test_the_power_limit_lowers_the_clock_until_the_board_draws_its_tdp() -> None:
    """The same kernel under the H100's 700 W limit (config: dvfs, [PP], [TR]). At the 1,980 MHz boost clock it
    would draw far more than 700 W, so the limiter lowers the clock f until the board draws exactly its TDP:
    - the main loop, once the clock sets its pace, sustains 0.957 of the peak at f, so at f below
      0.794 x 1.83 GHz / 0.957 it takes 330,156.2 x (0.794 x 1.83e9 / 0.957) / f cycles (of the 1.83 GHz arch
      clock); inverted, the reported compute cycles give f;
    - the ends: the 4 us launch and 0.82 us set-up and the drain to HBM keep their time, the 400-cycle first load
      runs on the SM clock: 400 x 1.83e9 / f;
    - energy at f, with r = f / 1.98 GHz: MACs 4096^3 x 3.259 pJ x r^2; L2 1,275,068,416 B x 8 x 6.565 pJ x r^2
      (A and B served 16 times each, filled with 5 x 32 MiB from HBM, C written once); HBM 201,326,592 B x 8 x
      3.28 pJ (its own clock and voltage);
    - board power 72.37 W static + 52.10 W x r^3 (the clocks) + that energy over the kernel's time = 700 W,
    at a clock between the measured sustained GEMMs' 1.2 and 1.45 GHz ([MP])."""
    arch = _with_tiles(H100, CtaTile(m=128, n=256, k=64, stages=4, warps=8))
    result = evaluate(arch, gemm(4096, 4096, 4096, bits=16, out_bits=16), "latency")
    cost = result.einsums[0].cost
    main_loop = 4 * 128 * 256 * 4096 / (2048 * 0.794)
    clock = 0.794 * 1.83e9 / 0.957 * main_loop / cost.compute_cycles
    assert 1.2e9 < clock < 1.45e9
    drain = 116 * 128 * 256 * 2 / (3.35e12 * 0.84) * 1.83e9
    assert cost.fill_drain_cycles == pytest.approx((4e-6 + 0.82e-6) * 1.83e9 + drain + 400 * 1.83e9 / clock,
                                                   rel=1e-12)
    assert cost.stall_cycles == 0
    r = clock / 1.98e9
    energy = 4096**3 * 3.259e-12 * r**2 + 1_275_068_416 * 8 * 6.565e-12 * r**2 + 201_326_592 * 8 * 3.28e-12
    seconds = cost.total_cycles / 1.83e9
    assert 72.37 + 52.10 * r**3 + energy / seconds == pytest.approx(700, rel=1e-9)
    assert result.energy_j / result.latency_s == pytest.approx(700, rel=1e-9)


def test_the_h100_power_constants_follow_from_its_measurements() -> None:
    """[PP] at 1,980 MHz: no kernel 124.467 W, so the clocks draw 124.467 - 72.37 = 52.10 W (to the 0.01 W given);
    less that, an L2-resident GEMV (4096 x 2048 MACs and its measured bytes a kernel) and an L2-resident 1024 x 32 x
    8192 GEMM give two equations in the energy of an fp16 MAC and of an L2 bit: 3.259 pJ and 6.565 pJ (to the
    0.001 pJ given). [TR]: once the cap lowers the clock, the 8192^3 GEMM runs 0.928 of the tensor peak at the
    sampled clock (median over samples at 1,980 MHz less), over its 16 waves' quantization 2,048 / 2,112: 0.957."""
    measured = json.loads((ROOT / "validation" / "gpu_measured_h100.json").read_text())
    paths = {r["name"]: r for r in measured["power_paths"]}
    watts = {name: r["board"]["power_w"]["median"] - paths["idle"]["board"]["power_w"]["median"]
             for name, r in paths.items()}
    engine = load_arch(H100).engines[0]
    assert engine.dvfs.clocked_power_w == pytest.approx(paths["idle"]["board"]["power_w"]["median"] - 72.37,
                                                        abs=0.005)
    kernels = [("gemv 4096x2048 (L2)", 4096 * 2048), ("gemm 1024x32x8192 (L2)", 1024 * 32 * 8192)]
    rates = np.array([[macs / paths[name]["kernel_s"], paths[name]["rate"] * 8] for name, macs in kernels])
    per_mac, per_bit = np.linalg.solve(rates, [watts[name] for name, _ in kernels])
    assert engine.mac_energy.energy_j == pytest.approx(per_mac, abs=0.0005e-12)
    assert load_arch(H100).memory[1].read_energy_j_per_bit == pytest.approx(per_bit, abs=0.0005e-12)
    transient = measured["transient"]
    starts, ends = np.array(transient["start_s"]), np.array(transient["end_s"])
    fractions = []
    for time, _, clock_mhz, *_ in transient["samples"]:
        running = (starts <= time - transient["wall_start"]) & (ends >= time - transient["wall_start"])
        tflops = [t for t, on in zip(transient["tflops"], running) if on and t]
        if tflops and clock_mhz < 1980:
            fractions.append(np.mean(tflops) * 1e12 / (2 * 132 * 2048 * clock_mhz * 1e6))
    assert engine.dvfs.clock_bound_efficiency == pytest.approx(np.median(fractions) / (2048 / 2112), abs=0.0005)


def test_a_measured_mac_energy_carries_to_other_widths_at_equal_power_per_tensor_core() -> None:
    """The H100's tensor cores run 4,096 FP8 and 2,048 FP16 MACs per SM per cycle: at the same power an FP8 MAC
    costs half the measured 3.259 pJ FP16 one, 1.6295 pJ (measured all-in under the power limit: 1.03 vs 1.92 pJ)."""
    engine = load_arch(H100).engines[0]
    assert engine.mac_energy_j(16, 1.83e9) == pytest.approx(3.259e-12, rel=1e-12)
    assert engine.mac_energy_j(8, 1.83e9) == pytest.approx(1.6295e-12, rel=1e-12)


def test_a_gpu_without_dvfs_is_not_power_limited() -> None:
    """The A100 config gives no dvfs (no measured clock range or clocks' power): its TDP-derived MAC energy draws
    the TDP at the sustained peak by construction, so no kernel is held to it and a 4096^3 GEMM's compute cycles are
    its main loop's alone: 4 waves of 128 x 256 tiles (108 SMs: ceil(512 / 108) = 5 CTA-times per SM) of
    128 x 256 x 4096 MACs at 1,024 MACs per SM per cycle x the config's tensor_efficiency."""
    arch = _with_tiles(A100, CtaTile(m=128, n=256, k=32, stages=3, warps=8))
    engine = arch.engines[0]
    assert engine.dvfs is None
    cost = evaluate(arch, gemm(4096, 4096, 4096, bits=16, out_bits=16), "latency").einsums[0].cost
    rate = dict(engine.tensor_macs_per_sm)[16] * engine.tensor_efficiency
    assert cost.compute_cycles == pytest.approx(5 * 128 * 256 * 4096 / rate, rel=1e-12)
    assert ("sm_clocks", "idle") not in cost.energy_j


def test_a_kernel_below_the_limit_runs_at_the_boost_clock_and_pays_its_clocks() -> None:
    """A 16384 x 16384 fp16 GEMV streams 512 MiB of weights from HBM at 0.84 x 3.35 TB/s: on the H100 its power
    stays under 700 W (measured 540 W, [PP]), so the limit leaves it at the boost clock: the same time as with no
    limit, its MAC energy at its boost-clock figure (3.259 pJ), plus the clocks' 52.10 W over its whole time."""
    arch = load_arch(H100, ["engines.sm.launch=graph"])
    w = gemm(1, 16384, 16384, bits=16, out_bits=16)
    limited = evaluate(arch, w)
    free = evaluate(_without_power_limit(arch), w)
    assert limited.latency_s == pytest.approx(free.latency_s, rel=1e-12)
    cost = limited.einsums[0].cost
    energy = cost.energy_j
    assert energy[("sm_clocks", "idle")] == pytest.approx(52.10 * cost.total_cycles / 1.83e9, rel=1e-9)
    # the tensor cores run it on a tile of 16 rows (DEFAULT_TILES), 15 of them padding
    assert energy[("tensor_cores", "mac")] == pytest.approx(16 * 16384**2 * 3.259e-12, rel=1e-9)
    assert energy[("hbm", "read")] == pytest.approx(16384**2 * 2 * 8 * 3.28e-12, rel=1e-3)
    assert limited.energy_j / limited.latency_s < 700


def test_an_older_instruction_family_issues_at_its_fraction_of_the_tensor_rate() -> None:
    """The same 4096^3 kernel written with mma.sync (FlashAttention-2's instruction) on the H100: the config's
    [FA3]/Luo et al. figure lets mma.sync issue 0.667 of the wgmma rate, so the main loop takes
    4 x 128 x 256 x 4096 / (2,048 x 0.794 x 0.667) cycles, 1 / 0.667 of the wgmma kernel's; on the A100, whose
    native instruction is mma.sync (rate 1.0), naming it changes nothing; an unlisted family is an error."""
    arch = _without_power_limit(_with_tiles(H100, CtaTile(m=128, n=256, k=64, stages=4, warps=8)))
    w = gemm(4096, 4096, 4096, bits=16, out_bits=16)
    engine = arch.engines[0].model_copy(update={"instruction": "mma.sync"})
    legacy = arch.model_copy(update={"engines": (engine,)})
    cost = evaluate(legacy, w, "latency").einsums[0].cost
    assert cost.compute_cycles == pytest.approx(4 * 128 * 256 * 4096 / (2048 * 0.794 * 0.667), rel=1e-12)
    a100 = load_arch(A100)
    native = a100.engines[0].cost(w.einsums[0], w, a100)
    named = a100.engines[0].model_copy(update={"instruction": "mma.sync"}).cost(w.einsums[0], w, a100)
    assert named.total_cycles == native.total_cycles
    with pytest.raises(ConfigError, match="not listed in instruction_rates"):
        load_arch(A100, ["engines.sm.instruction=wgmma"])


def test_the_mapper_finds_a_tile_at_least_as_fast_as_the_hopper_default() -> None:
    """Over every shipped tile and split, the mapped 4096^3 fp16 GEMM is no slower than the 128 x 256 x 64 kernel
    of the previous test, and within 15 % of cuBLAS's measured 726.4 TFLOPS (waynehacking8 bench_sm90a.csv)."""
    w = gemm(4096, 4096, 4096, bits=16, out_bits=16)
    pinned = evaluate(_with_tiles(H100, CtaTile(m=128, n=256, k=64, stages=4, warps=8)), w, "latency")
    mapped = evaluate(load_arch(H100), w, "latency")
    assert mapped.cycles <= pinned.cycles
    assert 2 * 4096**3 / mapped.latency_s / 1e12 == pytest.approx(726.4, rel=0.15)


def test_a_gemv_is_hbm_bound_at_the_achievable_bandwidth() -> None:
    """1 x 8192 @ 8192 x 8192 fp16 on the A100: HBM moves the 8192^2 x 2 B weights, the 16 KiB input row and the
    16 KiB output row once each (134,250,496 B: the operands exceed the 40 MiB L2, but M = 1 is a single row of
    tiles, so a wave of CTAs reads every weight panel once and the input row ceil(1 / gn) = 1 time) at
    0.88 x 2,039 GB/s = 1,794.3 GB/s [F25]: 74.82 us, 105,495 cycles at 1.41 GHz. Its tensor-core time is far
    below, so compute + stall is exactly that transfer, and the effective bandwidth is the achievable one."""
    arch = load_arch(A100)
    w = gemm(1, 8192, 8192, bits=16, out_bits=16)
    result = evaluate(arch, w, "latency")
    cost = result.einsums[0].cost
    moved = 8192 * 8192 * 2 + 8192 * 2 + 8192 * 2
    hbm_cycles = moved / (2039e9 * 0.88) * 1.41e9
    assert cost.compute_cycles < hbm_cycles
    assert cost.compute_cycles + cost.stall_cycles == pytest.approx(hbm_cycles, rel=1e-12)
    assert moved / ((cost.compute_cycles + cost.stall_cycles) / 1.41e9) == pytest.approx(0.88 * 2039e9, rel=1e-12)
    assert result.einsums[0].bound.kind == "hbm"


def test_occupancy_falls_when_a_tiles_shared_memory_exceeds_the_sms_share() -> None:
    """128 x 128 x 32 fp16 tiles, 4 warps, on the A100 (164 KiB shared memory per SM, 163 KiB per CTA, 256 KiB of
    registers): each stage holds (128 + 128) x 32 x 2 B = 16 KiB. Registers allow floor(256 KiB / (128 threads x
    (128 + 32) x 4 B = 80 KiB)) = 3 CTAs. Shared memory allows floor(164 / 32) = 5 at 2 stages (occupancy 3, the
    registers bind), floor(164 / 64) = 2 at 4, floor(164 / 96) = 1 at 6, and none at 11 (176 KiB > 163 KiB)."""
    engine = load_arch(A100).engines[0]
    stages = np.array([2, 4, 6, 11])
    tiles = TileArrays(np.full(4, 128), np.full(4, 128), np.full(4, 32), stages, np.full(4, 4), np.ones(4, int))
    assert occupancy(engine, tiles, 16, 16).tolist() == [3, 2, 1, 0]


def test_a_partial_last_wave_costs_its_ctas_not_a_full_wave_of_resident_ones() -> None:
    """1536 x 1280 x 1024 fp16 on the A100 in 128 x 128 x 32 tiles, 2 stages: 12 x 10 = 120 CTAs over 108 SMs.
    The registers allow 3 CTAs per SM (the occupancy test above): one wave of 120 in 324 slots, where the busiest
    SMs hold 2 CTAs sharing their tensor cores, 2 CTA-times; with registers for one CTA (80 KiB) the second wave
    has 12 CTAs, each alone on its SM: 2 CTA-times again. A CTA-time is 128 x 128 x 1024 MACs at 1,024 fp16 MACs
    per SM per cycle ([A20]: 312 TFLOPS / (108 x 1.41 GHz x 2)) x 0.934. Charging the wave occupancy x a CTA-time
    (3) made the larger register file the slower design."""
    arch = _with_tiles(A100, CtaTile(m=128, n=128, k=32, stages=2))
    w = gemm(1536, 1280, 1024, bits=16, out_bits=16)
    cta_time = 128 * 128 * 1024 / (1024 * 0.934)
    for registers in ("256 KiB", "80 KiB"):
        engine = arch.engines[0].model_copy(update={"registers_per_sm_bytes": float(load_arch(
            A100, [f"engines.sm.registers_per_sm={registers}"]).engines[0].registers_per_sm_bytes)})
        sized = arch.model_copy(update={"engines": (engine,)})
        assert evaluate(sized, w, "latency").einsums[0].cost.compute_cycles == pytest.approx(2 * cta_time, rel=1e-12)


def test_a_tile_that_fits_no_sm_is_never_chosen() -> None:
    """With only a 10-stage 128 x 128 x 64 tile (10 x 256 x 64 x 2 B = 320 KiB of shared memory) the mapper has
    nothing that runs, and the engine says which resource is short."""
    arch = _with_tiles(A100, CtaTile(m=128, n=128, k=64, stages=10))
    w = gemm(512, 512, 512, bits=16, out_bits=16)
    with pytest.raises(Exception, match="shared memory"):
        arch.engines[0].cost(w.einsums[0], w, arch)


def test_an_l2_too_small_for_a_blocks_k_slices_loses_the_reuse_by_hand() -> None:
    """4096^3 fp16 GEMM on the H100 with one kernel allowed (128 x 256 x 64 tiles, 4 stages, no split-K): one CTA
    keeps 4 K-slices of its A and B panels in flight, (128 + 256) x 16 bit x 64 x 4 / 8 = 196,608 B. In a 16 KiB L2
    not even one CTA's slices stay, so every CTA fetches its own panels: A (32 MiB) once per tile column
    (4096 / 256 = 16) and B (32 MiB) once per tile row (4096 / 128 = 32): 1,536 MiB read from HBM. In the 50 MiB
    L2 a block of CTAs shares them, so HBM reads less; every halving between reads no less and takes no less
    time (per-bit energies and the L2's area pinned)."""
    one_kernel = ["engines.sm.tiles=[{m: 128, n: 256, k: 64, stages: 4, warps: 8}]", "engines.sm.splits=[1]"]
    work = load_workload(ROOT / "workloads" / "gemm_fp16.einsum.yaml")
    runs = []
    for kib in (50 * 1024, 8 * 1024, 1024, 128, 16):
        result = evaluate(load_arch(H100, [*one_kernel, f"memory.l2.capacity={kib} KiB"]), work)
        hbm = next(u for u in result.trace.memory if u.level == "hbm")
        runs.append((hbm.read_bytes, result.cycles))
    assert runs[-1][0] == 1536 * 2**20
    assert runs[0][0] < runs[-1][0]
    assert all(b[0] >= a[0] and b[1] >= a[1] * (1 - 1e-12) for a, b in zip(runs, runs[1:]))


def test_split_k_serves_a_deep_skinny_gemm() -> None:
    """A deep reduction with few output tiles (M = 64, N = 256, K = 65,536) on the A100: unsplit, no shipped tile
    gives more than 8 CTAs (16 x 128 tiles: 4 x 2) for 108 SMs; splitting K keeps more SMs busy, so the mapper
    splits (the outer level's factor of k exceeds 1) and runs faster than the best unsplit kernel."""
    arch = load_arch(A100)
    w = gemm(64, 256, 65536, bits=16, out_bits=16)
    mapped = best_cost(arch.engines[0], w.einsums[0], w, arch, "latency")
    unsplit = _with_tiles(A100, *arch.engines[0].tiles, splits=(1,))
    assert mapped.mapping.factors("hbm")["k"] > 1
    assert mapped.cost.total_cycles < unsplit.engines[0].cost(w.einsums[0], w, unsplit).total_cycles


def test_precision_picks_tensor_cores_or_cuda_cores() -> None:
    """H100 ([GK]): 16-bit operands on the tensor cores at 2,048 MACs per SM per cycle, 2-bit ones on the
    narrowest tensor width (8-bit, 4,096); an engine without a tensor width for 32 bits runs fp32 on the CUDA
    cores (128 FMA lanes per SM)."""
    engine = load_arch(H100).engines[0]
    assert engine.mac_rate(16) == (2048, True)
    assert engine.mac_rate(2) == (4096, True)
    narrow = engine.model_copy(update={"tensor_macs_per_sm": ((8, 4096.0), (16, 2048.0))})
    assert narrow.mac_rate(32) == (128, False)


def test_elementwise_kernels_are_fused_unless_asked() -> None:
    """exp over 1 Mi fp16 elements on the H100: 2 MiB in and 2 MiB out of HBM at 0.84 x 3.35 TB/s bound it;
    fused (default) it pays no launch, unfused the 4 us launch (7,320 cycles)."""
    arch = load_arch(H100)
    w = elementwise_exp(2**20, bits=16)
    fused = arch.engines[0].cost(w.einsums[0], w, arch)
    unfused_engine = arch.engines[0].model_copy(update={"fuse_elementwise": False})
    unfused = unfused_engine.cost(w.einsums[0], w, arch)
    hbm = 2 * 2**21 / (3.35e12 * 0.84) * 1.83e9
    assert fused.total_cycles == pytest.approx(hbm, rel=1e-12)
    assert unfused.total_cycles - fused.total_cycles == pytest.approx(4e-6 * 1.83e9, rel=1e-12)


def test_the_kernel_never_beats_the_roofline_and_cost_is_the_latency_optimum() -> None:
    """On a few shapes the engine's cost is >= the roofline, and the mapper's latency optimum equals the engine's
    own cost (cost takes the fastest kernel of the same space)."""
    arch = load_arch(H100)
    engine = arch.engines[0]
    for m, n, k in ((1, 4096, 4096), (16, 11008, 4096), (333, 77, 1000), (2048, 2048, 64)):
        w = gemm(m, n, k, bits=16, out_bits=16)
        e = w.einsums[0]
        cost = engine.cost(e, w, arch)
        assert cost.total_cycles >= bound_on(e, w, arch, engine.name).cycles
        assert best_cost(engine, e, w, arch, "latency").cost.total_cycles == pytest.approx(cost.total_cycles)


def test_an_fp16_gemms_roof_and_mac_utilization_are_at_the_fp16_rate() -> None:
    """The H100's dense fp16 tensor rate is 132 SMs x 2,048 MACs a cycle (989.4 TFLOPS at 1.83 GHz), its int8 rate
    twice that: a 4096^3 fp16 GEMM's roof is 4096^3 / (132 x 2,048) = 254,200.2 cycles, and with one einsum the
    run's MAC utilization is that einsum's (the fp16 peak, not the int8 one, in both)."""
    arch = load_arch(H100)
    w = gemm(4096, 4096, 4096, bits=16, out_bits=16)
    result = evaluate(arch, w, "latency")
    assert result.einsums[0].bound.compute_cycles == pytest.approx(4096**3 / (132 * 2048), rel=1e-12)
    summary = result.summary()
    assert summary["roofline_cycles"] == pytest.approx(4096**3 / (132 * 2048), rel=1e-12)
    assert summary["mac_utilization"] == pytest.approx(4096**3 / (132 * 2048) / result.cycles, rel=1e-9)
    int8 = evaluate(arch, gemm(4096, 4096, 4096, bits=8, out_bits=32), "latency")
    assert int8.einsums[0].bound.compute_cycles == pytest.approx(4096**3 / (132 * 4096), rel=1e-12)


@pytest.mark.parametrize("change", [[], ["engines.0.sms=66"], ["clock=915 MHz"]])
def test_a_mac_costs_the_tdp_points_energy_whatever_the_sms_and_clock(change: list[str]) -> None:
    """The H100's TDP is drawn at its tensor peak with 132 SMs at 1,830 MHz (tdp_at): a dense fp16 MAC costs
    (700 - 72.37 W) / (132 x 2,048 x 0.794 x 1.83e9 MAC/s) = 1.598 pJ there, and still costs that on a design with
    half the SMs or half the clock (which only runs longer and pays more static energy); deriving it from the
    configured SMs and clock doubled it on both."""
    arch = _without_power_limit(load_arch(H100, change))
    per_mac = (700 - 72.37) / (132 * 2048 * 0.794 * 1.83e9)
    assert arch.engines[0].mac_energy_j(16, arch.engine_clock_hz(arch.engines[0])) == pytest.approx(per_mac, rel=1e-9)
    result = evaluate(arch, gemm(4096, 4096, 4096, bits=16, out_bits=16), "latency")
    base = evaluate(_without_power_limit(load_arch(H100)), gemm(4096, 4096, 4096, bits=16, out_bits=16), "latency")
    assert result.energy_j >= base.energy_j


def test_decode_through_the_pipeline_is_bandwidth_bound() -> None:
    """Llama-2-7B decode, batch 1, on the H100 through `evaluate`: every contraction is bound by HBM (weights and
    the KV cache stream once), and the step takes at least the 13.5 GB of weights at the achievable 2.81 TB/s."""
    arch = load_arch(H100)
    result = evaluate(arch, load_workload(ROOT / "workloads" / "llama2-7b-decode.yaml"))
    macs = [r for r in result.einsums if r.op == "mac"]
    assert all(r.bound.kind == "hbm" for r in macs)
    weight_bytes = sum(t.bytes for t in result.workload.tensors if t.kind == "weight")
    assert result.latency_s >= weight_bytes / (3.35e12 * 0.84)


def test_lane_and_sfu_instructions_per_point() -> None:
    """exp(x - m) is one lane instruction (the subtract) and one SFU instruction; r * p + s is one fused
    multiply-add; a / b is one SFU instruction (the reciprocal)."""
    from accel_sim.engines.gpu_kernel import issued_ops
    from accel_sim.spec.workload import Access, Affine, Call

    x, y, z = (Access(t, (Affine.rank("i"),)) for t in "XYZ")
    assert issued_ops(Call("exp", (Call("sub", (x, y)),))) == (1, 1)
    assert issued_ops(Call("add", (Call("mul", (x, y)), z))) == (1, 0)
    assert issued_ops(Call("div", (x, y))) == (0, 1)


def test_a_map_pays_per_instruction_issued_and_at_the_lanes_full_rate_draws_no_more_than_the_tdp() -> None:
    """The H100's CUDA-core instruction costs (700 - 72.37 - 52.10 W: TDP less static and the clocks' power) /
    (132 SMs x 256 fp16 lanes x 1.83 GHz) = 9.307 pJ at 16 bits. Y = exp(X) over 2^24 fp16 points issues one lane
    instruction (the copy every point needs) and one SFU instruction a point: 2 x 2^24 x 9.307 pJ. A fused multiply-add, X * X + Y, is one instruction a point, charged
    once (it was charged as its two operators), so at the lanes' full rate it draws the power its energy was set
    from and the power limit does not slow it."""
    from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

    arch = load_arch(H100)
    per_instruction = (700 - 72.37 - 52.10) / (132 * 256 * 1.83e9)
    exp = evaluate(arch, elementwise_exp(2**24), "latency").einsums[0].cost
    assert exp.energy_j[("cuda_cores", "op")] == pytest.approx(2 * 2**24 * per_instruction, rel=1e-9)
    x, y = (Access(t, (Affine.rank("i"),)) for t in "XY")
    fma = Einsum("fma", Access("Z", (Affine.rank("i"),)), Call("add", (Call("mul", (x, x)), y)), {"i": 2**24})
    work = Workload("fma", tuple(Tensor(t, ("I",), (2**24,), 16) for t in "XYZ"), (fma,))
    cost = evaluate(arch, work, "latency").einsums[0].cost
    assert cost.energy_j[("cuda_cores", "op")] == pytest.approx(2**24 * per_instruction, rel=1e-9)
    assert cost.compute_cycles == pytest.approx(2**24 / (132 * 256), rel=1e-9)


def test_fused_attention_keeps_scores_and_probabilities_on_chip() -> None:
    """FlashAttention-2 as the scheduled 1-pass cascade on the H100 (512 heads of 1,024 queries and keys, d = 64):
    HBM reads only Q, K and V (3 x 512 x 64 x 1024 x 2 B = 201,326,592 B) and writes only the output
    (67,108,864 B): the scores and probabilities stay in the SMs, and only the first einsum pays a launch."""
    arch = load_arch(H100, ["execution.kind=scheduled", "execution.time_limit_s=0.5"])
    result = evaluate(arch, load_workload(ROOT / "workloads" / "flash_attention.einsum.yaml"))
    hbm = result.summary()["memory"]["hbm"]
    assert hbm["read_bytes"] == pytest.approx(3 * 512 * 64 * 1024 * 2)
    assert hbm["write_bytes"] == pytest.approx(512 * 64 * 1024 * 2)
    launches = [r.einsum for r in result.einsums if r.cost.fill_drain_cycles >= 4e-6 * 1.83e9]
    assert launches == ["BQK"]


def test_a_softmax_over_more_keys_than_a_cta_tile_cannot_run_in_the_score_gemms_kernel() -> None:
    """The row maximum of unfused scores (the zoo's three-pass softmax, here over 512 keys) reduces a GEMM's output
    across more key columns than any CTA tile holds (256 at most): the CTAs that made those tiles each keep theirs,
    so no kernel fuses the reduction. FlashAttention's running maximum reduces one key block (128 keys) of its
    scores, inside the CTA that made them; and the exp that reads the scores element by element may fuse."""
    arch = load_arch(H100)
    engine = arch.engines[0]
    zoo = load_workload(ROOT / "workloads" / "llama2-7b-prefill.yaml",
                        overrides=["seq_len=512", "n_layers=1", "vocab=0",
                                   "lm_head=false"])
    by_name = {e.name: e for e in zoo.einsums}
    scores = frozenset({"L0.attn.scores"})
    assert engine.resident_cost(by_name["L0.attn.softmax_max"], zoo, arch, scores) is None
    assert engine.resident_cost(by_name["L0.attn.softmax_exp"], zoo, arch, scores) is not None
    flash = load_workload(ROOT / "workloads" / "flash_attention.einsum.yaml")
    lm = next(e for e in flash.einsums if e.name == "LM")
    assert engine.resident_cost(lm, flash, arch, frozenset({"BQK"})) is not None


@pytest.mark.parametrize("value", ["nan", "high", ".nan", ".inf", "true", "0", "1.5", "-0.5"])
def test_tensor_efficiency_is_a_number_in_the_unit_interval(value: str) -> None:
    """A word, NaN, infinity, a boolean or a number outside (0, 1] is a located config error, not a TypeError."""
    with pytest.raises(ConfigError) as error:
        load_arch(A100, [f"engines.sm.tensor_efficiency={value}"])
    assert error.value.key_path == "engines[0].tensor_efficiency"
    assert "Fix:" in error.value.message()


@pytest.mark.parametrize(("override", "limit", "fix"), [
    ("registers_per_sm=1 KiB", "register file per SM", "raise registers_per_sm"),
    ("max_threads_per_sm=64", "threads per SM", "raise max_threads_per_sm"),
    ("base_registers=250", "registers per thread", "lower base_registers"),
    ("shared_memory_per_cta=1 KiB", "shared memory per CTA", "raise shared_memory_per_cta")])
def test_no_tile_fits_names_the_limit_that_excludes_them(override: str, limit: str, fix: str) -> None:
    """When one per-CTA limit excludes every tile, the error names that limit and its fix, not shared memory."""
    arch = load_arch(A100, [f"engines.sm.{override}"])
    w = gemm(512, 512, 512, bits=16, out_bits=16)
    with pytest.raises(InfeasibleError) as error:
        arch.engines[0].cost(w.einsums[0], w, arch)
    assert f"limit of {limit}" in str(error.value) and fix in str(error.value)


def test_a_cta_cannot_take_more_shared_memory_than_its_sm_has() -> None:
    """shared_memory_per_sm below shared_memory_per_cta is refused at load, at the per-CTA key (a CTA runs on one
    SM), so the SM's shared memory never excludes a tile the CTA's own cap admits."""
    with pytest.raises(ConfigError) as error:
        load_arch(A100, ["engines.sm.shared_memory_per_sm=1 KiB"])
    assert error.value.key_path == "engines[0].shared_memory_per_cta" and "exceeds" in error.value.problem


def test_no_tile_fits_by_different_limits_counts_each() -> None:
    """Two tiles, one over the threads (8 warps = 256 > 128) and one over shared memory per CTA (4 x 256 x 64 x 2 B
    = 128 KiB > 100 KiB): no single limit excludes both, so the error counts the tiles each limit excludes."""
    arch = _with_tiles(A100, CtaTile(m=64, n=64, k=32, stages=2, warps=8), CtaTile(m=128, n=128, k=64, stages=4))
    arch = arch.model_copy(update={"engines": (arch.engines[0].model_copy(
        update={"max_threads_per_sm": 128, "smem_per_cta_bytes": 100 * 1024}),)})
    w = gemm(512, 512, 512, bits=16, out_bits=16)
    with pytest.raises(InfeasibleError, match=r"2 tiles excluded: 1 by shared memory per CTA, 1 by threads per SM"):
        arch.engines[0].cost(w.einsums[0], w, arch)


@pytest.mark.parametrize(("override", "key"), [("launch_overhead=1e200 s", "launch_overhead"),
                                               ("launch_overhead=2 s", "launch_overhead"),
                                               ("base_registers=100000", "base_registers"),
                                               ("base_registers=255", "base_registers")])
def test_absurd_launch_overhead_and_base_registers_are_config_errors(override: str, key: str) -> None:
    """A launch over a second (a unit mistake) or base registers that fill a thread's 255 fail validation."""
    with pytest.raises(ConfigError) as error:
        load_arch(A100, [f"engines.sm.{override}"])
    assert error.value.key_path == f"engines[0].{key}"


def test_a_fused_gemm_reads_a_resident_operand_only_within_one_cta() -> None:
    """A contraction may keep an operand in the SMs (register residency) only where the output ranks that operand
    lacks span at most one CTA tile side (256 on the default tiles): else the CTAs along them would share one tile
    of it, held in one SM. Z = A x W with N = 128 may keep A (one CTA spans N); with N = 4,096 (a projection of a
    normed hidden state) it may not, nor keep W with M = 512 rows. FlashAttention-2's PV GEMM keeps the
    probabilities SLN: it spans one head's dimension (64) beyond them."""
    arch = load_arch(H100)
    engine = arch.engine("sm")
    narrow, wide = gemm(512, 128, 4096, 16), gemm(512, 4096, 4096, 16)
    assert engine.resident_cost(narrow.einsums[0], narrow, arch, frozenset({"A"})) is not None
    assert engine.resident_cost(wide.einsums[0], wide, arch, frozenset({"A"})) is None
    assert engine.resident_cost(narrow.einsums[0], narrow, arch, frozenset({"W"})) is None
    flash = load_workload(ROOT / "workloads" / "flash_attention.einsum.yaml")
    assert engine.resident_cost(flash.einsum("SLNV"), flash, arch, frozenset({"SLN"})) is not None


@settings(max_examples=30, deadline=None)
@given(m=st.sampled_from((1, 64, 200, 1000, 4096)), n=st.sampled_from((64, 300, 1024, 4096)),
       k=st.sampled_from((64, 512, 4096)), registers=st.sampled_from((64, 96, 128, 192, 256)),
       shared=st.sampled_from((64, 100, 164)), h100=st.booleans())
def test_fewer_registers_or_less_shared_memory_never_speed_a_gemm_up(m: int, n: int, k: int, registers: int,
                                                                     shared: int, h100: bool) -> None:
    """Random fp16 GEMMs on the A100 or H100, every CTA tile and split searched exhaustively: with the register
    file or the shared memory cut (the per-CTA share kept at most the SM's), the best kernel is never faster (a
    design where no tile fits is infeasible: infinite), since it only admits fewer resident CTAs and fewer tiles."""
    path = H100 if h100 else A100
    work = gemm(m, n, k, bits=16, out_bits=16)
    cycles = []
    for regs, smem in (("256 KiB", "164 KiB"), (f"{registers} KiB", f"{shared} KiB")):
        arch = load_arch(path, [f"engines.sm.registers_per_sm={regs}", f"engines.sm.shared_memory_per_sm={smem}",
                                f"engines.sm.shared_memory_per_cta={smem}", "engines.sm.mapper={method: exhaustive}"])
        try:
            cycles.append(best_cost(arch.engines[0], work.einsums[0], work, arch, "latency").cost.total_cycles)
        except InfeasibleError:
            cycles.append(np.inf)
    assert cycles[1] >= cycles[0] * (1 - 1e-12)


H200 = ROOT / "arch_configs" / "gpu" / "h200_sxm_141gb.yaml"


@settings(max_examples=30, deadline=None)
@given(m=st.sampled_from((1, 16, 128, 1000, 4096, 8192)), n=st.sampled_from((64, 300, 1024, 4096, 12288)),
       k=st.sampled_from((64, 512, 4096, 12288)), bits=st.sampled_from((8, 16)), h100=st.booleans())
def test_a_lower_tdp_never_speeds_a_kernel_and_no_kernel_draws_more_than_its_tdp(m: int, n: int, k: int, bits: int,
                                                                                 h100: bool) -> None:
    """Random fp8 and fp16 GEMMs on the H100 or H200 at TDPs of 700, 450 and 250 W, each at its fastest kernel: the
    board's power over the kernel (static, clocks' and the kernel's energy over its time) never exceeds the TDP,
    and a lower TDP never makes the kernel faster (every candidate's time only grows as its clock falls)."""
    work = gemm(m, n, k, bits=bits, out_bits=16)
    cycles = []
    for tdp in (700, 450, 250):
        result = evaluate(load_arch(H100 if h100 else H200, [f"engines.sm.tdp={tdp} W"]), work, "latency")
        assert result.energy_j / result.latency_s <= tdp * (1 + 1e-9)
        cycles.append(result.cycles)
    assert cycles[0] <= cycles[1] * (1 + 1e-12) and cycles[1] <= cycles[2] * (1 + 1e-12)


def test_a_graph_replay_takes_the_graph_gap_and_a_gemm_kernel_its_set_up() -> None:
    """H100 config: eager kernels start 4 us apart, kernels replayed from a CUDA graph 1.20 us ([ML]); a GEMM kernel
    adds its 0.82 us set-up either way, a map does not. 4096^3 fp16: eager - graph = (4 - 1.20) us x 1.83 GHz =
    5,124 cycles; unfused exp over 1 Mi elements: fill/drain 4 us (7,320 cycles) eager, 1.20 us (2,196) graph."""
    # without the power limit, which lowers the clock less for the kernel whose launch gap idles longer
    eager = _without_power_limit(load_arch(H100))
    graph = _without_power_limit(load_arch(H100, ["engines.sm.launch=graph"]))
    w = gemm(4096, 4096, 4096, bits=16, out_bits=16)
    gemm_eager = evaluate(eager, w, "latency").einsums[0].cost
    gemm_graph = evaluate(graph, w, "latency").einsums[0].cost
    assert gemm_eager.fill_drain_cycles - gemm_graph.fill_drain_cycles == pytest.approx(2.8e-6 * 1.83e9, rel=1e-9)
    no_setup = _without_power_limit(load_arch(H100, ["engines.sm.launch=graph", "engines.sm.gemm_setup=0 us"]))
    gemm_bare = evaluate(no_setup, w, "latency").einsums[0].cost
    assert gemm_graph.fill_drain_cycles - gemm_bare.fill_drain_cycles == pytest.approx(0.82e-6 * 1.83e9, rel=1e-9)
    exp = elementwise_exp(2**20, bits=16)
    for arch, gap in ((eager, 4e-6), (graph, 1.20e-6)):
        engine = arch.engines[0].model_copy(update={"fuse_elementwise": False})
        assert engine.cost(exp.einsums[0], exp, arch).fill_drain_cycles == pytest.approx(gap * 1.83e9, rel=1e-12)


def test_graph_launch_without_its_gap_is_a_config_error() -> None:
    """The A100 config measured no graph gap: asking for graph replay names the missing key and the fix."""
    with pytest.raises(ConfigError, match="graph_launch_overhead") as error:
        load_arch(A100, ["engines.sm.launch=graph"])
    assert error.value.key_path == "engines[0].launch"


CHAIN = """
name: chains
ranks: {m: 256, n: 256, k: 256}
default_bits: 16
tensors:
  W: {kind: weight}
  V: {kind: weight}
einsums:
  - Y[m,n] = A[m,k] * W[k,n]
  - Z[m,n] = exp(Y[m,n])
  - R[m,n] = Z[m,n] + Y[m,n]
  - S[m,k] = R[m,n] * V[n,k]
  - T[m,k] = S[m,k] + A[m,k]
"""


@pytest.mark.parametrize(("fuse", "launching"), [(True, set()), (False, {"Z", "R", "T"}), ("chains", {"Z", "T"})])
def test_maps_pay_a_launch_per_kernel_their_fusion_makes(tmp_path: Path, fuse: object, launching: set[str]) -> None:
    """GEMM, exp, add, GEMM, add: folded into the GEMMs (true) no map launches; unfused (false) each does; as
    inductor fuses them ("chains"), exp starts a kernel (fed by a GEMM), the add fed by exp joins it, and the last
    add, fed by a GEMM and an input, starts its own. A map's fill/drain is its launch alone."""
    path = tmp_path / "chains.einsum.yaml"
    path.write_text(CHAIN)
    work = load_workload(path)
    arch = load_arch(H100, ["engines.sm.launch=graph", f"engines.sm.fuse_elementwise={str(fuse).lower()}"])
    engine = arch.engines[0]
    paid = {e.output.tensor: engine.cost(e, work, arch).fill_drain_cycles for e in work.einsums if e.op != "mac"}
    assert paid == {name: pytest.approx(1.20e-6 * 1.83e9 if name in launching else 0.0, abs=1e-9) for name in paid}


def test_the_h100_kernel_start_constants_follow_from_its_launch_measurement() -> None:
    """[ML]: graph_launch_overhead is the 1-element add's graph time (a kernel the model charges its gap only), and
    gemm_setup is the one-CTA 64^3 GEMM's graph time less what the model charges that GEMM without a set-up;
    each to the 0.01 us the config gives."""
    rows = {r["name"]: r for r in json.loads((ROOT / "validation" / "gpu_measured_h100.json").read_text())["launch"]}
    engine = load_arch(H100).engines[0]
    assert engine.graph_launch_overhead_s == pytest.approx(rows["add_1_element"]["graph_s"], abs=0.005e-6)
    bare = load_arch(H100, ["engines.sm.launch=graph", "engines.sm.gemm_setup=0 us"])
    modelled = evaluate(bare, gemm(64, 64, 64, bits=16, out_bits=16), "latency").latency_s
    assert engine.gemm_setup_s == pytest.approx(rows["matmul_64x64x64"]["graph_s"] - modelled, abs=0.01e-6)


def test_fusion_mode_words_are_case_blind() -> None:
    """'Chains' as written in a YAML file is the chains mode, not a failed boolean."""
    assert load_arch(H100, ["engines.sm.fuse_elementwise=Chains"]).engines[0].fuse_elementwise == "chains"
