"""NPU+PIM decode co-simulation: determinism, work conservation, DRAM roofline, blocked vs concurrent, policies."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.sim.llm_requests import SHAREGPT, continuous_batch
from accel_sim.sim.npu_pim import BUS, balance, simulate, split_sub_batches
from accel_sim.zoo import build

ROOT = Path(__file__).resolve().parents[3]
ARCH = load_arch(ROOT / "arch_configs" / "neupims_like.yaml")


def small_decode(batch: int = 8, kv_len: int = 63, n_layers: int = 1):
    """A GPT-3-style decode step (one layer unless told), d_model 512, 4 heads of 128, FFN 1024 (quick)."""
    return build("gpt3-7b", phase="decode", batch=batch, kv_len=kv_len, n_layers=n_layers, d_model=512, n_heads=4,
                 head_dim=128, ffn_dim=1024, vocab=0, lm_head=False, tie_embeddings=False)


@pytest.fixture(scope="module")
def traces():
    w = small_decode()
    ctx = continuous_batch(8, seed=1)
    return w, ctx, {p: simulate(ARCH, w, ctx, p) for p in ("npu_only", "naive", "neupims")}


def test_same_inputs_give_the_same_trace(traces) -> None:
    """Deterministic: a second run with the same seed reproduces every span."""
    w, ctx, runs = traces
    again = simulate(ARCH, w, continuous_batch(8, seed=1), "neupims")
    assert again.spans == runs["neupims"].spans


@pytest.mark.parametrize("policy", ["npu_only", "naive", "neupims"])
def test_work_is_conserved(policy: str) -> None:
    """With every request at the workload's own context (kv_len + 1), the items' operations sum to the
    workload's total operations, whatever the policy and sub-batching."""
    w = small_decode()
    trace = simulate(ARCH, w, None, policy)
    assert trace.detail.ops_done == w.total_ops


def test_per_request_attention_work_follows_each_context(traces) -> None:
    """Attention work scales with each request's own context: QK MACs = sum(ctx) x heads x head_dim."""
    w, ctx, runs = traces
    qk = sum(i.ops for i in runs["naive"].detail.items if i.einsum.endswith("attn.qk"))
    assert qk == sum(ctx) * 4 * 128


@pytest.mark.parametrize("policy", ["npu_only", "naive", "neupims"])
def test_npu_traffic_never_beats_the_dram_roofline(traces, policy: str) -> None:
    """The makespan is at least the NPU's DRAM bytes over the HBM bandwidth, and the bus is never double-booked."""
    _, _, runs = traces
    trace = runs[policy]
    assert trace.makespan_s >= trace.detail.dram_bytes / trace.detail.bus_bytes_per_s * (1 - 1e-9)
    bus = sorted((s.start, s.end) for s in trace.spans if s.resource == BUS)
    assert all(b[0] >= a[1] - 1e-15 for a, b in zip(bus, bus[1:]))


def test_split_read_and_write_ports_do_not_add_up_to_one_faster_bus() -> None:
    """With HBM given a 1 TB/s read port and a 1 TB/s write port (instead of one shared 1 TB/s port), NPU traffic
    that is mostly reads (weights and KV caches) still moves at most 1 TB/s: the makespan is at least the NPU's
    DRAM read bytes / 1 TB/s (before, the two ports were one 2 TB/s bus, under that bound), and at most the
    shared-port run's (the writes now overlap the reads)."""
    w = small_decode()
    shared = simulate(load_arch(ROOT / "arch_configs" / "neupims_like.yaml", ["memory.hbm.bandwidth=1 TB/s"]),
                      w, None, "npu_only")
    split = simulate(load_arch(ROOT / "arch_configs" / "neupims_like.yaml",
                               ["memory.hbm.bandwidth=null", "memory.hbm.read_bandwidth=1 TB/s",
                                "memory.hbm.write_bandwidth=1 TB/s"]), w, None, "npu_only")
    hbm = ARCH.memory[0].name
    reads = sum(i.cost.read_write_bytes_by_level({t.name: t.bits for t in w.tensors}).get(hbm, (0.0, 0.0))[0]
                for i in split.detail.items if i.dram_bytes > 0)
    assert reads > 0.9 * split.detail.dram_bytes
    assert split.makespan_s >= reads / 1e12 * (1 - 1e-9)
    assert split.makespan_s <= shared.makespan_s * (1 + 1e-9)


def test_blocked_mode_serializes_npu_traffic_and_pim(traces) -> None:
    """Blocked (naive): no NPU bus transfer overlaps a PIM channel's compute."""
    _, _, runs = traces
    trace = runs["naive"]
    npu = [s for s in trace.spans if s.resource == BUS and s.label == "npu traffic"]
    pim = [s for s in trace.spans if s.resource.startswith("pim.")]
    assert pim and npu
    assert not any(a.start < b.end and b.start < a.end for a in npu for b in pim)


def test_neupims_overlaps_npu_traffic_with_pim(traces) -> None:
    """Concurrent mode with two sub-batches: some NPU transfer runs while a PIM channel computes."""
    _, _, runs = traces
    trace = runs["neupims"]
    npu = [s for s in trace.spans if s.resource == BUS]
    pim = [s for s in trace.spans if s.resource.startswith("pim.")]
    assert any(a.start < b.end and b.start < a.end for a in npu for b in pim)


def _windows(trace, resource_prefix: str) -> dict[tuple[str, int], tuple[float, float]]:
    """(first start, last end) of each (layer, sub-batch) on the resources whose names start with the prefix."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for s in trace.spans:
        if s.resource.startswith(resource_prefix) and s.label.startswith("L"):
            key = (s.label.split(".")[0], s.instance)
            lo, hi = out.get(key, (s.start, s.end))
            out[key] = (min(lo, s.start), max(hi, s.end))
    return out


def test_neupims_pim_serves_one_sub_batch_at_a_time() -> None:
    """Sub-batch interleaving (NeuPIMs Sec. 5; artifact StageProgram: PIM runs MHA#1, then MHA#2): the two
    sub-batches' attention windows on the PIM channels never overlap, layer after layer."""
    trace = simulate(ARCH, small_decode(n_layers=2), None, "neupims")
    windows = sorted(_windows(trace, "pim.").values())
    assert len(windows) == 4
    assert all(b[0] >= a[1] - 1e-15 for a, b in zip(windows, windows[1:]))


def test_neupims_npu_runs_the_other_sub_batch_during_attention() -> None:
    """While sub-batch 0's layer-0 attention runs on PIM, the NPU arrays run sub-batch 1's QKV projections
    (artifact StageProgram stage B: SA QKVgen#2 | PIM MHA#1), not idle until both attentions end."""
    trace = simulate(ARCH, small_decode(), None, "neupims")
    pim0 = _windows(trace, "pim.")[("L0", 0)]
    qkv1 = [s for s in trace.spans if s.resource == "npu_arrays" and s.instance == 1 and s.label.endswith("_proj")
            and ".attn." in s.label and not s.label.endswith("o_proj")]
    assert qkv1 and all(pim0[0] <= s.start < pim0[1] for s in qkv1)


@pytest.mark.parametrize("policy", ["naive", "neupims"])
def test_makespan_grows_by_one_period_per_layer(policy: str) -> None:
    """Identical layers repeat one schedule: makespan(3) - makespan(2) = makespan(2) - makespan(1) (to 0.1 %),
    which validation/neupims.py relies on to extrapolate a 32-layer model from 1- and 2-layer runs."""
    ctx = continuous_batch(8, seed=1)
    m = [simulate(ARCH, small_decode(n_layers=n), ctx, policy).makespan_s for n in (1, 2, 3)]
    assert m[2] - m[1] == pytest.approx(m[1] - m[0], rel=1e-3)


def test_npu_only_runs_nothing_in_pim(traces) -> None:
    """NPU only: attention reads the KV cache over the bus, so it moves more DRAM bytes than NPU+PIM."""
    _, _, runs = traces
    assert not any(s.resource.startswith("pim.") for s in runs["npu_only"].spans)
    assert runs["npu_only"].detail.dram_bytes > runs["naive"].detail.dram_bytes


def test_pim_attention_beats_npu_only_on_long_contexts() -> None:
    """At context 1024 the KV read dominates; in-bank reads (3.5x the bus) make NPU+PIM faster than NPU only."""
    w = small_decode(batch=32, kv_len=1023)
    assert simulate(ARCH, w, None, "naive").makespan_s < simulate(ARCH, w, None, "npu_only").makespan_s


def test_balance_is_longest_first_greedy() -> None:
    """[5, 4, 3, 3, 1] on 2 channels: 5->0, 4->1, 3->1 (4 < 5), 3->0 (5 < 7), 1->1 (7 < 8)."""
    assert balance([5, 4, 3, 3, 1], 2) == (0, 1, 1, 0, 1)


def test_sub_batches_split_evenly_by_count() -> None:
    """Two sub-batches of equal size, balanced by context: [8, 7, 2, 1] -> {8, 1} and {7, 2}."""
    assert split_sub_batches([8, 7, 2, 1], 2) == ((0, 3), (1, 2))


def test_utilization_is_a_fraction(traces) -> None:
    """Every resource group's busy fraction lies in [0, 1] over the makespan and over time bins."""
    _, _, runs = traces
    for trace in runs.values():
        assert all(0 <= u <= 1 + 1e-9 for u in trace.utilization().values())
        assert ((trace.utilization_over_time(10) >= 0) & (trace.utilization_over_time(10) <= 1 + 1e-9)).all().all()


def test_evaluate_routes_npu_pim_arch_through_the_co_simulation() -> None:
    """execution: npu_pim makes evaluate() return the trace's makespan and tokens/s in the summary."""
    w = small_decode()
    result = evaluate(ARCH, w)
    summary = result.summary()
    assert summary["execution"] == "npu_pim" and summary["policy"] == "neupims"
    assert summary["cycles"] == pytest.approx(result.trace.makespan_cycles)
    assert summary["throughput_per_s"] == pytest.approx(8 / result.trace.makespan_s)


def test_a_levels_reported_bandwidth_use_is_a_fraction_when_its_banks_and_bus_overlap() -> None:
    """Llama-2-7B int8 decode at batch 8 on neupims_like keeps the external bus busy nearly all the time while the
    banks serve attention at their own rate: summing the banks' and the bus's busy cycles reported the HBM level
    at 101 % of the makespan; each is its own port set, and the level reports the busier one."""
    summary = evaluate(ARCH, build("llama2-7b", phase="decode", batch=8, weight_bits=8, act_bits=8)).summary()
    assert 0.9 < summary["memory"]["hbm"]["bandwidth_utilization"] <= 1 + 1e-9


def test_sharegpt_contexts_respect_the_maximum_sequence() -> None:
    """Continuous-batching contexts are between 2 and 1024 tokens, and equal for equal seeds."""
    ctx = continuous_batch(512, seed=3)
    assert min(ctx) >= 2 and max(ctx) <= 1024 and ctx == continuous_batch(512, seed=3)


def test_length_distribution_means_match_sharegpt() -> None:
    """Before the 1024 cap, sampled means approach vLLM's ShareGPT means (161.31 in, 337.99 out) within 5%."""
    import numpy as np

    from accel_sim.sim.llm_requests import LengthDistribution

    uncapped = LengthDistribution("x", SHAREGPT.mean_input, SHAREGPT.mean_output, max_sequence=10**9)
    inp, out = uncapped.sample(np.random.default_rng(0), 200_000)
    assert inp.mean() == pytest.approx(161.31, rel=0.05) and out.mean() == pytest.approx(337.99, rel=0.05)


def test_cli_run_writes_the_timeline(tmp_path: Path) -> None:
    """`accel-sim run arch_configs/neupims_like.yaml <decode recipe>` writes the report with timeline.png."""
    from accel_sim.cli import main

    recipe = tmp_path / "decode.yaml"
    recipe.write_text("zoo: gpt3-7b\nphase: decode\nbatch: 4\nkv_len: 31\nn_layers: 1\nd_model: 256\n"
                      "n_heads: 2\nhead_dim: 128\nffn_dim: 512\nvocab: 0\nlm_head: false\ntie_embeddings: false\n")
    out = tmp_path / "report"
    assert main(["run", str(ROOT / "arch_configs" / "neupims_like.yaml"), str(recipe), "-o", str(out)]) == 0
    assert (out / "timeline.png").stat().st_size > 0 and (out / "timeline.csv").exists()


def test_the_second_sub_batch_reuses_weights_only_beside_the_activations_they_share_the_buffer_with() -> None:
    """small_decode(8) in two sub-batches of 4 under neupims. Layer L0's weights: Q, K, V, O 4 x 512 x 512 x 2 B
    = 2,097,152, the FFN's 2 x 512 x 1024 x 2 B = 2,097,152, biases and norms 11,264 (eight 512- and one
    1024-wide vector, plus the 512-wide down bias: 11 x 1,024 B): 4,205,568 B. The most activations one of its
    dense einsums holds at 4 requests is the FFN's activation, 4 x 1024 x 2 B in and out: 16,384 B. With the
    global buffer at 4,205,568 + 16,384 B the second sub-batch finds the weights still there; one byte less and
    they were pushed out, so it reads all 4,205,568 B of them again (the weights alone would still have fit)."""
    workload = small_decode()
    dram = {}
    for capacity in (4_205_568 + 16_384, 4_205_568 + 16_384 - 1):
        arch = load_arch(ROOT / "arch_configs" / "neupims_like.yaml",
                         [f"memory.global_buffer.capacity={capacity} B"])
        dram[capacity] = evaluate(arch, workload).summary()["npu_dram_bytes"]
    assert dram[4_205_568 + 16_384 - 1] - dram[4_205_568 + 16_384] == 4_205_568


def test_of_equally_fast_npu_engines_the_one_that_spends_less_runs_the_einsum() -> None:
    """A batch-1 decode's projections are GEMVs bound by the HBM bus on the arrays and on the vector units alike
    (the same weight bytes over the same bus), so the co-simulation picks the cheaper engine; describing one array
    differently (sa0 at 64 rows, out of the pool of identical arrays) then changes neither the time nor the energy,
    where picking the first fast engine listed made the energy follow the pool's make-up (0.105 vs 0.063 J)."""
    workload = build("llama2-7b", phase="decode", batch=1, kv_len=63, n_layers=1)
    base = evaluate(ARCH, workload)
    changed = evaluate(load_arch(ROOT / "arch_configs" / "neupims_like.yaml", ["engines.0.rows=64"]), workload)
    assert changed.latency_s == pytest.approx(base.latency_s, rel=1e-12)
    assert changed.energy_j == pytest.approx(base.energy_j, rel=1e-12)
    projection = next(r for r in base.einsums if r.einsum.endswith("q_proj"))
    on_arrays = ARCH.engines[0].cost(base.workload.einsum(projection.einsum), base.workload, ARCH)
    assert projection.cost.total_energy_j < on_arrays.total_energy_j


@pytest.mark.parametrize("policy", ["npu_only", "neupims"])
def test_a_run_of_requests_at_their_own_contexts_agrees_with_itself(policy: str) -> None:
    """With ShareGPT contexts (each request's own length, not the workload's kv_len) the report describes what the
    co-simulation ran: the MACs are the rows' sum, no einsum beats its roofline (each item bounded at its own
    sizes, the array pool at all its arrays' rate), the run never beats the busiest engine's roofline, and the
    HBM level's bytes and busy fraction are the bus's (NPU-only: every byte it moves crosses the bus once; the
    weights a second sub-batch finds on chip and the softmax's scores, moved by PIM commands, do not)."""
    arch = load_arch(ROOT / "arch_configs" / "neupims_like.yaml",
                     [f"execution.policy={policy}", "execution.requests=sharegpt"])
    result = evaluate(arch, small_decode(batch=32, kv_len=511))
    summary = result.summary()
    assert summary["total_macs"] == sum(r.cost.macs for r in result.einsums)
    assert all(r.cost.total_cycles >= r.bound.cycles * (1 - 1e-9) for r in result.einsums)
    assert summary["cycles_over_roofline"] >= 1.0
    hbm = summary["memory"]["hbm"]
    assert hbm["bandwidth_utilization"] == pytest.approx(summary["utilization"]["hbm_bus"], rel=1e-9)
    if policy == "npu_only":
        assert hbm["read_bytes"] + hbm["write_bytes"] == pytest.approx(summary["npu_dram_bytes"], rel=1e-9)


def test_an_einsum_on_the_array_pool_costs_the_pools_time() -> None:
    """NPU-only GPT-3 7B TP-4 decode, one layer, 256 ShareGPT requests: the pool's eight arrays split every einsum
    it runs (as the co-simulation times it), so a row's cycles are the pool's, and the pool's rows together, one
    item after another, fit in the step (one array's cycles made the FFN's in_proj alone 262,622 cycles of a
    618,695-cycle step, and the pool's rows together several steps)."""
    arch = load_arch(ROOT / "arch_configs" / "neupims_like.yaml",
                     ["execution.policy=npu_only", "execution.requests=sharegpt"])
    workload = load_workload(ROOT / "workloads" / "gpt3-7b-tp4-decode-b256.yaml", overrides=["n_layers=1"])
    result = evaluate(arch, workload)
    # the pool runs one item at a time (its arrays together): all its rows fit in the step
    assert sum(r.cost.total_cycles for r in result.einsums if r.engine == "sa0") <= result.cycles
    assert all(0.0 <= r.cost.utilization <= 1.0 for r in result.einsums)


def test_a_pim_einsums_cycles_are_the_channel_time_the_co_simulation_gave_it() -> None:
    """Batch 1 on the naive policy runs one thing at a time (the bus blocked while the banks compute), so the
    einsums' cycles add up to the run's; a request's heads run one after another in its one channel, so a PIM
    einsum's cycles are its spans there (the engine's own cost spreads the heads over the channels: 4 heads took a
    quarter of their time before)."""
    result = evaluate(ARCH.model_copy(update={"execution": ARCH.execution.model_copy(update={"policy": "naive"})}),
                      small_decode(batch=1))
    spans = {}
    for s in result.trace.spans:
        if s.resource.startswith("pim."):
            spans[s.label] = spans.get(s.label, 0.0) + s.end - s.start
    on_pim = {r.einsum: r.cost.total_cycles for r in result.einsums if r.engine == "pim"}
    assert on_pim and on_pim == pytest.approx(spans, rel=1e-9)
    assert sum(r.cost.total_cycles for r in result.einsums) == pytest.approx(result.cycles, rel=1e-9)
