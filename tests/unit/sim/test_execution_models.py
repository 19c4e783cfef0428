"""Every execution kind through `evaluate`: one Trace type, and on small cases the figures the pre-protocol code
paths gave (evaluate's own loop, schedule/run.evaluate_scheduled, npu_pim.simulate, periodic_schedule and
engines/fpga/modes.plan, measured before they were folded into the execution models)."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.errors import ConfigError
from accel_sim.evaluate import evaluate
from accel_sim.io.einsum import load_einsum_file
from accel_sim.io.load import load_arch, load_workload
from accel_sim.sim.trace import Trace
from accel_sim.zoo import build

ROOT = Path(__file__).resolve().parents[3]
ARCHS = ROOT / "arch_configs"


def small_attention():
    """One small head of the 1-pass cascade (E = F = 16, 64 keys in 2 chunks, 64 queries)."""
    return load_einsum_file(ROOT / "workloads" / "attention_1pass.einsum.yaml",
                            {"e": 16, "f": 16, "m1": 2, "m0": 32, "p": 64})


def test_sequential_trace_is_the_einsums_back_to_back() -> None:
    """Sequential: the makespan is the sum of the einsums' cycles, the first span starts at cycle 0, each later one
    where the previous ended, on the einsum's engine; one einsum alone is one span of its own cycles."""
    result = evaluate(load_arch(ARCHS / "tpu_v1.yaml"), load_workload(ROOT / "workloads" / "mlp.einsum.yaml"))
    trace = result.trace
    assert isinstance(trace, Trace) and trace.execution == "sequential"
    assert result.cycles == trace.makespan_cycles == sum(r.cost.total_cycles for r in result.einsums)
    assert [(s.label, s.resource) for s in trace.spans] == [(r.einsum, r.engine) for r in result.einsums]
    assert all(a.end == b.start for a, b in zip(trace.spans, trace.spans[1:]))
    assert trace.spans[0].start == 0
    gemm = evaluate(load_arch(ARCHS / "tpu_v1.yaml"), load_workload(ROOT / "workloads" / "gemm.einsum.yaml"))
    (span,) = gemm.trace.spans
    assert (span.start, span.end) == (0, gemm.einsums[0].cost.total_cycles) and gemm.cycles == span.end


def test_scheduled_gives_the_replayed_makespan() -> None:
    """Scheduled (fusemax_like's shorthand): 1,078 cycles planned on the small head; the replay adds 1/32 of a cycle
    where PRM (on the 1-D array) and SLN (on the 2-D array) both keep the global buffer fully busy for a cycle and
    share it (sim/replay.py), and nothing else contends."""
    result = evaluate(load_arch(ARCHS / "fusemax_like.yaml"), small_attention(), "latency")
    assert result.trace.execution == "scheduled" and result.trace.planned_cycles == 1078
    assert result.cycles == result.trace.replayed_cycles == 1078 + 1 / 32


@pytest.mark.parametrize(("policy", "requests", "cycles"), [
    ("npu_only", "sharegpt", 115855.48437499978),
    ("naive", "sharegpt", 139439.84151785684),
    ("neupims", "sharegpt", 175760.55245535684),
    (None, "fixed", 150071.73437499983),   # the arch's concurrent PIM implies neupims; contexts kv_len + 1
])
def test_npu_pim_gives_the_co_simulated_makespan(policy: str | None, requests: str, cycles: float) -> None:
    """NPU+PIM: a batch-8, one-layer GPT-3-shaped decode step under each policy, with the continuous-batching
    contexts (seed 0) or every request at the workload's own context."""
    sets = [f"execution.requests={requests}"] + ([f"execution.policy={policy}"] if policy else [])
    workload = build("gpt3-7b", phase="decode", batch=8, n_layers=1, n_heads=8, head_dim=128, ffn_dim=4096,
                     vocab=0, lm_head=False, tie_embeddings=False, kv_len=255)
    result = evaluate(load_arch(ARCHS / "neupims_like.yaml", sets), workload)
    assert result.trace.execution == "npu_pim"
    assert result.cycles == pytest.approx(cycles, rel=1e-12)
    assert result.summary()["tokens_per_s"] == pytest.approx(8 / result.latency_s)


def test_pipelined_gives_l_plus_n_minus_one_periods() -> None:
    """Pipelined: 12 instances of the small head, 2 in flight, take 7,260 cycles (L + 11 x II); energy and MACs
    count every instance."""
    sets = ["execution={kind: pipelined, instances: 12, copies: 2, time_limit_s: 1}"]
    arch = load_arch(ARCHS / "fusemax_like.yaml", sets)
    result = evaluate(arch, small_attention(), "latency")
    detail = result.trace.detail
    assert result.cycles == 7260 == detail.instance_cycles + 11 * detail.period_cycles
    one = sum(r.cost.total_energy_j for r in result.einsums)
    assert result.energy_j == pytest.approx(12 * one)
    summary = result.summary()
    assert summary["total_macs"] == 12 * small_attention().total_macs
    # the cycle split and the roofline count every instance too; the roofline is the busiest engine's (the two
    # engines overlap), so the run never beats it
    assert summary["compute_cycles"] == pytest.approx(12 * sum(r.cost.compute_cycles for r in result.einsums))
    busiest = max(sum(r.bound.cycles for r in result.einsums if r.engine == e.name) for e in arch.engines)
    assert summary["roofline_cycles"] == pytest.approx(12 * busiest)
    assert summary["cycles_over_roofline"] == pytest.approx(7260 / (12 * busiest)) and 12 * busiest <= 7260


@pytest.mark.parametrize(("mode", "cycles"), [("sequential", 9425.278690005645), ("dataflow", 7251.807848526492),
                                              ("auto", 7119.999999999998)])
def test_fpga_modes_give_the_plan(mode: str, cycles: float) -> None:
    """FPGA: the DLRM-style MLP on the FlightLLM-like U280 design in each mode; sequential equals the plain
    sequential evaluation of the same design (its intermediates live in the on-chip buffers and skip HBM: 13,487
    cycles when every operator reloaded them); auto, choosing its own cut, beats the dataflow's fixed cut."""
    arch = load_arch(ARCHS / "fpga" / "flightllm_u280.yaml", [f"execution={{kind: fpga, mode: {mode}}}"])
    workload = load_workload(ROOT / "workloads" / "mlp.einsum.yaml")
    result = evaluate(arch, workload)
    assert result.trace.execution == "fpga" and result.cycles == pytest.approx(cycles, rel=1e-12)
    if mode == "sequential":
        plain = evaluate(load_arch(ARCHS / "fpga" / "flightllm_u280.yaml"), workload)
        assert result.cycles == pytest.approx(plain.cycles, rel=1e-12)


def test_fpga_kind_needs_an_fpga_engine() -> None:
    """Asking for FPGA modes on an arch without an FPGA engine is a ConfigError when the arch loads, at its
    execution; naming an engine that is not of kind fpga, at execution.engine."""
    with pytest.raises(ConfigError, match="needs an engine of kind 'fpga'") as err:
        load_arch(ARCHS / "tpu_v1.yaml", ["execution.kind=fpga"])
    assert err.value.key_path.startswith("execution")
    with pytest.raises(ConfigError, match="'mxu', which is not an engine of kind 'fpga'") as err:
        load_arch(ARCHS / "fpga" / "flightllm_vhk158.yaml", ["execution.kind=fpga", "execution.engine=mxu"])
    assert err.value.key_path == "execution.engine"
