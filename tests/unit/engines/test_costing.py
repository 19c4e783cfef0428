"""Engine cost models: hand-checked systolic and vector costs, and the contract with the roofline."""
from __future__ import annotations

import math

import pytest
from builders import conv, gemm
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.energy import dram_energy_j_per_bit
from accel_sim.engines.roofline import bound_on
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank


def two_level_arch(*, dram_gbps: float = 1.0, sram: str = "1 MiB", rows: int = 4, cols: int = 4,
                   dataflow: str = "ws", lanes: int = 8, buffering: str = "single") -> Arch:
    """1 GHz clock, so a bandwidth in GB/s is bytes per cycle; DDR4 DRAM energies from the cited table."""
    return Arch.model_validate({
        "name": "t", "clock": "1 GHz", "technology_nm": 45,
        "memory": [{"name": "dram", "technology": "DDR4", "bandwidth": f"{dram_gbps} GB/s"},
                   {"name": "sram", "technology": "SRAM", "capacity": sram, "bandwidth": "1000 GB/s"}],
        "engines": [{"name": "mxu", "kind": "systolic", "rows": rows, "cols": cols, "dataflow": dataflow,
                     "stationary_buffering": buffering},
                    {"name": "vec", "kind": "vector", "lanes": lanes, "contractions": False}],
    })


def test_small_gemm_cycles_by_hand_memory_bound() -> None:
    """8x8x8 int8 GEMM, 4x4 weight-stationary array, 1 B/cycle DRAM, 1 MiB SRAM.

    Folds: K=8 on rows and N=8 on cols -> 2 x 2 = 4 folds, T = M = 8 streamed rows each:
    compute 4 x 8 = 32 cycles, fill/drain 4 x (2*4 + 4 + 8 - 2) - 32 = 40. Everything fits on chip, so DRAM
    moves A, W and Z once: 3 x 64 bytes = 192 cycles at 1 B/cycle, longer than 72 + prologue: total 192.
    """
    w = gemm(8, 8, 8)
    cost = two_level_arch().engine("mxu").cost(w.einsums[0], w, two_level_arch())
    assert cost.compute_cycles == 32 and cost.fill_drain_cycles == 40
    assert cost.total_cycles == pytest.approx(192)
    assert cost.accesses[("dram", "W", "read")] == 64 and cost.accesses[("dram", "A", "read")] == 64


def test_small_gemm_cycles_by_hand_compute_bound() -> None:
    """The same GEMM at 100 B/cycle: compute path 32 + 40 = 72 cycles plus the prologue that brings the
    first fold's tiles (ws: a 4x4 weight tile and the 8x4 input slice = 48 bytes, 0.48 cycles)."""
    arch = two_level_arch(dram_gbps=100)
    w = gemm(8, 8, 8)
    cost = arch.engine("mxu").cost(w.einsums[0], w, arch)
    assert cost.total_cycles == pytest.approx(72.48)
    assert cost.utilization == pytest.approx(512 / (16 * 72.48))


@pytest.mark.parametrize(("a_bits", "w_bits", "passes"), [(8, 8, 1), (8, 16, 2), (16, 8, 2), (16, 16, 4), (4, 8, 1)])
def test_operands_wider_than_the_multipliers_take_passes(a_bits: int, w_bits: int, passes: int) -> None:
    """The 8 x 8 x 8 GEMM on the 4 x 4 array of 8-bit PEs at 100 B/cycle (above: compute 32, fill/drain 40): each
    MAC of a-bit and w-bit operands takes ceil(a / 8) x ceil(w / 8) cycles (TPU v1 runs 8 x 16-bit products at
    half speed, 16 x 16-bit at quarter speed: Jouppi et al., ISCA 2017, sec. 2), so compute is 32 x passes; the
    fill and drain of the 4 folds, 40, do not change; utilization is against the rate at those widths."""
    arch = two_level_arch(dram_gbps=100)
    base = gemm(8, 8, 8)
    widths = {"A": a_bits, "W": w_bits}
    w = Workload(base.name, tuple(Tensor(t.name, t.ranks, t.shape, widths.get(t.name, t.bits), t.kind)
                                  for t in base.tensors), base.einsums)
    engine = arch.engine("mxu")
    cost = engine.cost(w.einsums[0], w, arch)
    assert engine.operand_passes(w.einsums[0], w) == passes
    assert (cost.compute_cycles, cost.fill_drain_cycles) == (32 * passes, 40)
    assert engine.roof_per_cycle(w.einsums[0], w) == 16 / passes
    assert cost.utilization == pytest.approx(512 / (16 / passes * cost.total_cycles))


def test_wider_multipliers_run_16_bit_operands_faster_on_tpu_v1() -> None:
    """A compute-bound 16-bit GEMM (256 x 4096 x 4096, fp16 as the zoo's default width) on tpu_v1: with its 8-bit
    MXU each MAC takes 4 cycles; rebuilt with 16-bit multipliers the same array takes 1, so the compute cycles
    fall 4x and the design's answer moves with its operand_bits."""
    work = gemm(256, 4096, 4096, bits=16)
    narrow = evaluate(load_arch("tpu_v1"), work, "latency").einsums[0].cost
    wide = evaluate(load_arch("tpu_v1", ["engines.mxu.operand_bits=16"]), work, "latency").einsums[0].cost
    assert narrow.compute_cycles == pytest.approx(4 * wide.compute_cycles)


def test_tiny_sram_streams_operands_fold_by_fold() -> None:
    """When SRAM cannot hold an operand whole, it is re-fetched fold by fold: DRAM reads exceed its size."""
    w = gemm(64, 64, 64)
    roomy = two_level_arch(rows=8, cols=8, sram="1 MiB")
    tight = two_level_arch(rows=8, cols=8, sram="2 KiB")
    reads = [a.engine("mxu").cost(w.einsums[0], w, a).accesses[("dram", "A", "read")] for a in (roomy, tight)]
    assert reads[0] == 64 * 64 and reads[1] > reads[0]


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize(("m", "n", "k", "rows", "cols"), [(10, 9, 7, 4, 4), (13, 5, 11, 4, 3), (33, 2, 40, 8, 8)])
def test_native_sram_traffic_is_physical(dataflow: str, m: int, n: int, k: int, rows: int, cols: int) -> None:
    """run's engine reads and writes the array's SRAM as a real array does (systolic.sram_traffic), partial folds
    included: e.g. os on 10x9x7 over 4x4 reads the ifmap once per column fold, 3 x 70 = 210 words (not 3 x 84).
    Of the ofmap writes, each output's last carries its final int8 value and the others open partial sums, which
    the engine's 32-bit accumulators (its default) write 4 bytes wide: 4 int8 elements each in `Cost.accesses`."""
    from accel_sim.folds import fold_plan, sram_traffic

    arch = two_level_arch(rows=rows, cols=cols, dataflow=dataflow, dram_gbps=100)
    w = gemm(m, n, k)
    acc = arch.engine("mxu").cost(w.einsums[0], w, arch).accesses
    phys = sram_traffic(fold_plan(m, n, k, rows, cols, dataflow), m, n, k, dataflow)
    assert acc[("sram", "A", "read")] == phys.ifmap_reads
    assert acc[("sram", "W", "read")] == phys.filter_reads
    final = m * n
    assert acc.get(("sram", "Z", "write"), 0) + acc.get(("sram", "Z", "update"), 0) == \
        final + 32 / 8 * (phys.ofmap_writes - final)


def test_vector_cost_is_ops_over_lanes_against_traffic() -> None:
    """exp over 4096 int8 values on 8 lanes: 512 cycles; traffic 8 KiB at 100 B/cycle = 81.92 cycles."""
    arch = two_level_arch(dram_gbps=100)
    e = Einsum("exp", Access("Y", (R("i"),)), Call("exp", (Access("X", (R("i"),)),)), {"i": 4096})
    w = Workload("exp", (Tensor("X", ("I",), (4096,), 8), Tensor("Y", ("I",), (4096,), 8)), (e,))
    cost = arch.engine("vec").cost(e, w, arch)
    assert cost.total_cycles == pytest.approx(512)
    assert cost.accesses[("dram", "X", "read")] == 4096


@pytest.mark.parametrize(("bits", "cycles"), [(8, 512), (16, 512), (32, 1024), (64, 2048)])
def test_data_wider_than_a_lane_spans_several(bits: int, cycles: int) -> None:
    """exp over 4096 values on 8 lanes of 16 bits at 10 TB/s (traffic never binds): one value a lane a cycle up to
    16 bits (512 cycles; 8-bit data is not packed two to a lane), a 32-bit value spans 2 lanes (1,024), a 64-bit
    one 4 (2,048), as a SIMD register holds half as many 32-bit elements as 16-bit ones; utilization is against
    the rate at that width, so it stays 1."""
    arch = two_level_arch(dram_gbps=10_000)
    e = Einsum("exp", Access("Y", (R("i"),)), Call("exp", (Access("X", (R("i"),)),)), {"i": 4096})
    w = Workload("exp", (Tensor("X", ("I",), (4096,), bits), Tensor("Y", ("I",), (4096,), bits)), (e,))
    cost = arch.engine("vec").cost(e, w, arch)
    assert cost.compute_cycles == pytest.approx(cycles)
    assert cost.utilization == pytest.approx(1.0)
    assert arch.engine("vec").roof_per_cycle(e, w) == 8 * 512 / cycles


def test_llama_decode_projection_on_tpu_by_hand() -> None:
    """Llama-2-7B decode q_proj on TPU v1: a 1x4096x4096 GEMV with int8 weights (the fp16 model's 13.2 GB of
    weights outgrow the 8 GiB Weight Memory; workloads/llama2-7b-decode-int8.yaml).

    The weights cross the 34 GB/s DDR3 once: 4096*4096*1 B / 34e9 B/s * 700e6 cycles/s = 345,413.2 cycles,
    more than the array needs, so that is the total. The array: 16 x 16 = 256 weight folds of T = 1 row; the
    weight tile is double-buffered (tpu_v1.yaml), so the first fold pays its load, skew and drain
    (2*256 + 256 + 1 - 2 = 767) and each later one the 256-cycle shift of the next tile: 767 + 255 * 256 = 66,047.
    """
    arch = load_arch("tpu_v1")
    workload = load_workload("workloads/llama2-7b-decode-int8.yaml")
    result = evaluate(arch, workload)
    row = next(r for r in result.einsums if r.einsum == "L0.attn.q_proj")
    assert row.engine == "mxu"
    assert row.cost.total_cycles == pytest.approx(4096 * 4096 * 1 / 34e9 * 700e6)
    # the array time is the dataflow-implied mapping's (the mapper may pick another tiling at the same total)
    implied = arch.engine("mxu").cost(workload.einsum("L0.attn.q_proj"), workload, arch)
    assert implied.fill_drain_cycles + implied.compute_cycles == (2 * 256 + 256 + 1 - 2) + 255 * 256
    assert implied.total_cycles == pytest.approx(4096 * 4096 * 1 / 34e9 * 700e6)
    assert result.summary()["cycles"] == pytest.approx(sum(r.cost.total_cycles for r in result.einsums))


@pytest.mark.parametrize("workload", ["../shared/models/resnet50.onnx", "workloads/llama2-7b-decode-int8.yaml",
                                      "workloads/llama2-7b-prefill-int8.yaml"])
def test_networks_run_end_to_end_within_the_roofline(workload: str) -> None:
    """Whole networks evaluate on the TPU config, and no einsum beats its roofline bound."""
    if workload.startswith("../") and not __import__("pathlib").Path(workload).exists():
        pytest.skip("shared models folder not present")
    result = evaluate(load_arch("tpu_v1"), load_workload(workload))
    for r in result.einsums:
        assert r.cost.total_cycles >= r.bound.cycles * (1 - 1e-9), r.einsum
        assert 0 < r.cost.utilization <= 1 + 1e-12 or r.cost.macs == 0
    assert result.summary()["total_macs"] == load_workload(workload).total_macs


arches = st.builds(two_level_arch, dram_gbps=st.floats(0.5, 500), sram=st.sampled_from(["1 KiB", "16 KiB", "1 MiB"]),
                   rows=st.integers(1, 32), cols=st.integers(1, 32), dataflow=st.sampled_from(["os", "ws", "is"]))
contractions = st.one_of(st.builds(gemm, st.integers(1, 96), st.integers(1, 96), st.integers(1, 96)),
                         st.builds(conv, st.integers(1, 16), st.integers(1, 16), st.integers(5, 20),
                                   st.sampled_from([1, 3]), st.sampled_from([1, 2]), bits=st.just(8)))


@settings(max_examples=60, deadline=None)
@given(contractions, arches)
def test_systolic_cost_never_beats_roofline(w: Workload, arch: Arch) -> None:
    """Cycles >= the roofline bound on the same engine; utilization in (0, 1]."""
    e = w.einsums[0]
    cost = arch.engine("mxu").cost(e, w, arch)
    assert cost.total_cycles >= bound_on(e, w, arch, "mxu").cycles * (1 - 1e-9)
    assert 0 < cost.utilization <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(contractions, arches)
def test_energy_at_least_compulsory_dram_traffic(w: Workload, arch: Arch) -> None:
    """Energy >= compulsory DRAM bytes x 8 x the DDR4 energy per bit."""
    e = w.einsums[0]
    cost = arch.engine("mxu").cost(e, w, arch)
    compulsory = bound_on(e, w, arch, "mxu").level_bytes["dram"]
    assert cost.total_energy_j >= compulsory * 8 * dram_energy_j_per_bit("DDR4") * (1 - 1e-9)
    assert math.isfinite(cost.total_energy_j)
