"""Roofline bounds: hand-checked cases and monotonicity properties over random GEMMs, convs and arches."""
from __future__ import annotations

import math

import pytest
from builders import conv, elementwise_exp, gemm
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim.engines.roofline import COMPUTE, bound_on, compulsory_traffic, roofline
from accel_sim.errors import InfeasibleError
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Workload


def make_arch(*, dram_gbps: float = 100.0, sram_gbps: float = 1000.0, rows: int = 16, cols: int = 16,
              lanes: int = 64, engine_clock: str | None = None, dram_holds=("weights", "activations")) -> Arch:
    """A 1 GHz test arch: so bytes/cycle = GB/s, and cycles are easy to check by hand; 16-bit PEs, so int8 and
    fp16 contractions alike take one MAC a cycle."""
    systolic = {"name": "mxu", "kind": "systolic", "rows": rows, "cols": cols, "operand_bits": 16}
    if engine_clock:
        systolic["clock"] = engine_clock
    return Arch.model_validate({
        "name": "test", "clock": "1 GHz", "technology_nm": 28,
        "memory": [
            {"name": "dram", "technology": "DRAM", "bandwidth": f"{dram_gbps} GB/s", "holds": list(dram_holds),
             "read_energy_per_bit": "10 pJ"},
            {"name": "sram", "technology": "SRAM",
             "capacity": "1 MiB", "bandwidth": f"{sram_gbps} GB/s", "read_energy_per_bit": "1 pJ"},
        ],
        "engines": [systolic, {"name": "vec", "kind": "vector", "lanes": lanes}],
    })


def test_large_gemm_is_compute_bound() -> None:
    """256^3 int8 GEMM on 16x16 MACs: 256^3/256 = 65,536 cycles; traffic 3*64 KiB/100 B/cycle = 1,966 cycles."""
    w = gemm(256, 256, 256)
    b = roofline(w.einsums[0], w, make_arch())
    assert b.engine == "mxu" and b.kind == COMPUTE
    assert b.cycles == pytest.approx(65536)
    assert b.level_cycles["dram"] == pytest.approx(3 * 65536 / 100)


def test_gemv_decode_is_dram_bound() -> None:
    """1x4096x4096 fp16 GEMV: (2*4096^2 + 2*2*4096) bytes / 100 B/cycle = 335,708.16 cycles > 65,536 compute."""
    w = gemm(1, 4096, 4096, bits=16)
    b = roofline(w.einsums[0], w, make_arch())
    assert b.kind == "dram"
    assert b.cycles == pytest.approx((2 * 4096**2 + 2 * 2 * 4096) / 100)
    assert b.compute_cycles == pytest.approx(4096 * 4096 / 256)


def test_elementwise_runs_on_vector_engine_and_is_memory_bound() -> None:
    """exp over 2^20 fp16 values: 2^20/64 = 16,384 compute cycles; 4 MiB / 100 B/cycle = 41,943.04."""
    w = elementwise_exp(2**20)
    b = roofline(w.einsums[0], w, make_arch())
    assert b.engine == "vec" and b.kind == "dram"
    assert b.compute_cycles == pytest.approx(16384)
    assert b.cycles == pytest.approx(4 * 2**20 / 100)


def test_strided_pointwise_conv_reads_a_quarter_of_its_input() -> None:
    """1x1 stride-2 conv, 64->128 ch, 56x56 fp16: input footprint 64*28*28 elements (not 64*56*56).

    bytes = 2*(64*28*28 + 128*64 + 128*28*28) = 317,440; at 10 B/cycle: 31,744 cycles > 6,422,528/256 = 25,088.
    """
    w = conv(c=64, k=128, h=56, rs=1, stride=2, pad=0)
    b = roofline(w.einsums[0], w, make_arch(dram_gbps=10))
    assert b.level_bytes["dram"] == pytest.approx(317440)
    assert b.kind == "dram" and b.cycles == pytest.approx(31744)
    assert b.macs == 128 * 28 * 28 * 64


def test_padded_conv_footprint_is_clipped_to_the_tensor() -> None:
    """3x3 pad-1 conv on 8x8x8: the window reaches rows -1..8, but only the 8x8x8 input exists."""
    w = conv(c=8, k=8, h=8, rs=3, stride=1, pad=1)
    traffic = compulsory_traffic(w.einsums[0], w)
    reads = {traffic.roles[t]: b for t, b in traffic.read_bytes.items()}
    assert reads == {"inputs": 8 * 8 * 8 * 2, "weights": 8 * 8 * 9 * 2}


def test_slower_engine_clock_scales_compute_cycles() -> None:
    """An engine at 500 MHz under a 1 GHz arch clock needs twice the arch cycles."""
    w = gemm(256, 256, 256)
    b = bound_on(w.einsums[0], w, make_arch(engine_clock="500 MHz"), "mxu")
    assert b.compute_cycles == pytest.approx(2 * 65536)


def test_level_that_holds_only_weights_sees_only_weight_traffic() -> None:
    """TPU-v1 style: DRAM holds weights; activations stay in the on-chip buffer."""
    w = gemm(1, 4096, 4096, bits=8)
    b = roofline(w.einsums[0], w, make_arch(dram_holds=("weights",)))
    assert b.level_bytes["dram"] == 4096 * 4096
    assert b.level_bytes["sram"] == 4096 * 4096 + 2 * 4096


def test_data_movement_energy_uses_per_bit_energy() -> None:
    """Energy = bits through each level x its pJ/bit (10 pJ DRAM, 1 pJ SRAM here)."""
    w = elementwise_exp(1000)
    b = roofline(w.einsums[0], w, make_arch())
    bits = 2 * 1000 * 16
    assert b.level_energy_j["dram"] == pytest.approx(bits * 10e-12)
    assert b.level_energy_j["sram"] == pytest.approx(bits * 1e-12)


def test_no_engine_for_the_operator_is_infeasible() -> None:
    """A systolic-only arch cannot run exp; the error says to add a vector engine."""
    arch = make_arch()
    arch = arch.model_copy(update={"engines": arch.engines[:1]})
    w = elementwise_exp(16)
    with pytest.raises(InfeasibleError, match="vector"):
        roofline(w.einsums[0], w, arch)


# --- properties -------------------------------------------------------------------------------------
sizes = st.integers(1, 300)
arch_params = st.fixed_dictionaries({
    "dram_gbps": st.floats(1, 2000), "sram_gbps": st.floats(1, 20000),
    "rows": st.integers(1, 256), "cols": st.integers(1, 256), "lanes": st.integers(1, 512)})
workloads = st.one_of(
    st.builds(gemm, sizes, sizes, sizes, st.sampled_from([4, 8, 16])),
    st.builds(conv, st.integers(1, 64), st.integers(1, 64), st.integers(7, 40), st.sampled_from([1, 3, 5]),
              st.sampled_from([1, 2]), st.sampled_from([0, 1, 2])),
    st.builds(elementwise_exp, st.integers(1, 10**6)),
)
growth = st.floats(1.0, 16.0)


@settings(max_examples=150, deadline=None)
@given(workloads, arch_params, growth, st.sampled_from(["dram_gbps", "sram_gbps", "rows", "cols", "lanes"]))
def test_bound_never_grows_when_a_resource_grows(w: Workload, params: dict, factor: float, knob: str) -> None:
    """More peak compute or more bandwidth never makes the bound larger."""
    bigger = dict(params)
    bigger[knob] = params[knob] * factor if knob.endswith("gbps") else math.ceil(params[knob] * factor)
    before = roofline(w.einsums[0], w, make_arch(**params)).cycles
    after = roofline(w.einsums[0], w, make_arch(**bigger)).cycles
    assert after <= before * (1 + 1e-12)


@settings(max_examples=150, deadline=None)
@given(workloads, arch_params)
def test_bound_never_below_ops_over_peak(w: Workload, params: dict) -> None:
    """cycles >= MACs / peak MACs per cycle (and ops / lanes for map operators)."""
    arch = make_arch(**params)
    e = w.einsums[0]
    b = roofline(e, w, arch)
    best_peak = max(eng.peak_per_cycle(e) for eng in arch.engines)
    work = e.macs if e.op == "mac" else e.ops
    assert b.cycles >= work / best_peak * (1 - 1e-12)
    assert b.cycles >= max(b.level_cycles.values()) * (1 - 1e-12)
