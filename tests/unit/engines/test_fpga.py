"""FPGA engine: resources (DSP packing, RAM blocks, fit check), per-operator timing, execution modes.

Oracles are hand-derived closed forms stated in each docstring."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim.engines.fpga import macs_per_dsp, ram_blocks
from accel_sim.engines.fpga.timing import BufferPlan, buffer_plan, passes, unit_for
from accel_sim.engines.loopnest import gemm_view
from accel_sim.engines.fpga.kernels import Loop, Port, issue_cycle, loop_cycles, operator_cycles
from accel_sim.errors import ConfigError, InfeasibleError
from accel_sim.evaluate import evaluate
from accel_sim.io.arch import arch_from_doc
from accel_sim.io.load import load_arch, load_workload
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.yaml import parse_yaml
from accel_sim.sim.fpga_modes import plan
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank
ROOT = Path(__file__).resolve().parents[3]
DEVICE = {"name": "test part", "dsp_kind": "dsp48e2", "dsps": 100000, "bram36": 10000, "uram": 1000,
          "luts": 10**6, "ffs": 2 * 10**6,
          "offchip": {"technology": "HBM2", "capacity": "8 GiB", "bandwidth": "320 GB/s", "channels": 32}}


def arch(cores: int = 1, gemv: dict | None = None, matrix: dict | None = None, sfu_lanes: int = 16) -> Arch:
    """200 MHz, HBM 320 GB/s over 32 channels (10 GB/s each), an on-chip level too fast to matter."""
    engine = {"name": "fpga", "kind": "fpga", "device": DEVICE, "cores": cores, "sfu_lanes": sfu_lanes,
              "matrix": matrix or {"tokens": 16, "out": 32, "reduce": 8}, "mac_bits": 8,
              "same_channel_efficiency": 0.5, "cross_channel_efficiency": 0.25}
    if gemv:
        engine["gemv"] = gemv
    return Arch.model_validate({
        "name": "t", "clock": "200 MHz", "technology_nm": 16,
        "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"},
                   {"name": "onchip", "technology": "SRAM", "capacity": "64 MiB", "bandwidth": "1 PB/s"}],
        "engines": [engine]})


def gemm(m: int, n: int, k: int, a_bits: int = 8, w_bits: int = 8, out_bits: int = 8) -> Workload:
    """Z[m,n] = A[m,k] * W[k,n], W a weight."""
    e = Einsum("gemm", Access("Z", (R("m"), R("n"))),
               Call("mul", (Access("A", (R("m"), R("k"))), Access("W", (R("k"), R("n"))))), {"m": m, "n": n, "k": k})
    return Workload("gemm", (Tensor("A", ("M", "K"), (m, k), a_bits), Tensor("W", ("K", "N"), (k, n), w_bits, "weight"),
                             Tensor("Z", ("M", "N"), (m, n), out_bits)), (e,))


def chain(m: int, k: int, n1: int, n2: int) -> Workload:
    """Y = (X W1) W2: two GEMMs whose intermediate H stays on chip in a dataflow."""
    e1 = Einsum("g1", Access("H", (R("m"), R("n"))),
                Call("mul", (Access("X", (R("m"), R("k"))), Access("W1", (R("k"), R("n"))))), {"m": m, "n": n1, "k": k})
    e2 = Einsum("g2", Access("Y", (R("m"), R("o"))),
                Call("mul", (Access("H", (R("m"), R("n"))), Access("W2", (R("n"), R("o"))))), {"m": m, "n": n1, "o": n2})
    return Workload("chain", (Tensor("X", ("M", "K"), (m, k), 8), Tensor("W1", ("K", "N"), (k, n1), 8, "weight"),
                              Tensor("H", ("M", "N"), (m, n1), 8), Tensor("W2", ("N", "O"), (n1, n2), 8, "weight"),
                              Tensor("Y", ("M", "O"), (m, n2), 8)), (e1, e2))


def test_dsp_packing_by_precision() -> None:
    """WP521: 4 INT4 MACs per DSP48E2; WP486: 2 INT8; 1 up to 18 bits; 32 bits = ceil(32/18)^2 = 4 DSPs;
    AM004: DSP58 does a 3-element INT8 dot product."""
    assert [macs_per_dsp("dsp48e2", b) for b in (4, 8, 16, 32)] == [4.0, 2.0, 1.0, 0.25]
    assert macs_per_dsp("dsp58", 8) == 3.0 and macs_per_dsp("dsp58", 24) == 1.0


def test_ram_blocks_take_the_cheapest_port_shape() -> None:
    """URAM 4Kx72: 4096 x 2048 B = ceil(16384/72) = 228 blocks; BRAM 4096 x 32 B: 4Kx9 gives ceil(256/9) = 29,
    cheaper than 512x72 (4 x 8 = 32)."""
    assert ram_blocks("uram", 4096, 2048) == 228
    assert ram_blocks("bram", 4096, 32) == 29


def test_dsp_count_of_a_design() -> None:
    """2 cores x (16 x 32 x 8 = 4096 int8 MACs / 2 per DSP48E2 + 16 SFU lanes x 1) = 2 x 2064 = 4128 DSPs."""
    engine = arch(cores=2).engines[0]
    assert engine.dsps_used() == 4128


def test_gemm_cycles_at_the_units_parallelism() -> None:
    """M=64, N=96, K=40 on 16 x 32 x 8: ceil folds 4 x 3 x 5 = 60 compute cycles; fill = reduce 8 + 3 DSP registers.
    Loads: W 3840 B striped (4.8 cycles) + A 2560 B on one channel at 0.25 (204.8) in 12 tiles: 12 l + c + fill =
    225.6; the 6144 B output stored over one channel at 0.5 takes 245.76 cycles and bounds the total."""
    a = arch()
    cost = a.engines[0].cost(gemm(64, 96, 40).einsums[0], gemm(64, 96, 40), a)
    assert cost.compute_cycles == 60 and cost.fill_drain_cycles == 11
    assert cost.total_cycles == pytest.approx(245.76, rel=1e-9)


def test_gemv_is_bound_by_effective_channel_bandwidth() -> None:
    """GEMV 1 x 4096 x 4096, int4 weights, int8 input/output, 1 core on 32 channels of 10 GB/s, 200 MHz:
    weights 8 MiB striped at 32 x 10 GB/s x 0.5 = 10485.76 cycles, input 4096 B on one channel at 0.25 = 327.68;
    GEMV unit 1 x 256 x 64: 1024 compute cycles in 16 tiles of 256 columns, so
    total = load + one tile's compute (64) + fill (64 + 3) = 10944.44 cycles."""
    a = arch(gemv={"tokens": 1, "out": 256, "reduce": 64}, matrix={"tokens": 16, "out": 32, "reduce": 32})
    w = gemm(1, 4096, 4096, a_bits=8, w_bits=4)
    cost = a.engines[0].cost(w.einsums[0], w, a)
    assert cost.compute_cycles == 1024
    assert cost.total_cycles == pytest.approx(10485.76 + 327.68 + 64 + 67, rel=1e-9)


def test_core_channels_bind_a_core_to_fewer_channels() -> None:
    """The same GEMV on a core bound to 8 of the 32 channels (core_channels: 8): weights 8 MiB at 8 x 10 GB/s x 0.5
    = 41943.04 cycles; the input and compute terms are unchanged (327.68 + 64 + 67); the resource table counts 8."""
    a = arch(gemv={"tokens": 1, "out": 256, "reduce": 64}, matrix={"tokens": 16, "out": 32, "reduce": 32})
    engine = a.engines[0].model_copy(update={"core_channels": 8})
    w = gemm(1, 4096, 4096, a_bits=8, w_bits=4)
    assert engine.cost(w.einsums[0], w, a).total_cycles == pytest.approx(41943.04 + 327.68 + 64 + 67, rel=1e-9)
    row = next(r for r in engine.resource_rows() if r["resource"] == "off-chip channels")
    assert row["used"] == 8 and row["key"] == "core_channels"


def test_gemv_mode_below_the_matrix_units_token_parallelism() -> None:
    """FlightLLM emits MV for decode (1 token) and MM for prefill: tokens < matrix.tokens picks the GEMV mode."""
    engine = arch(gemv={"tokens": 1, "out": 64, "reduce": 8}).engines[0]
    assert unit_for(engine, 1)[0] == "gemv" and unit_for(engine, 16)[0] == "matrix"


def test_wider_operands_take_more_passes() -> None:
    """fp16 activations on 8-bit chains: ceil(16/8) x ceil(8/8) = 2 passes; 4-bit weights need one."""
    engine = arch().engines[0]
    assert passes(engine, 16, 8) == 2 and passes(engine, 8, 4) == 1


def test_pipeline_throughput_set_by_its_slowest_stage() -> None:
    """Dataflow of two GEMMs (M=64): 512 chains of 8 MACs; work 64x64x96/8 = 49152 and 64x96x32/8 = 24576
    chain-cycles; CP-SAT splits the chains ~2:1 so the slowest stage takes ~(49152+24576)/512 = 144 cycles;
    the pipeline streams G = 64 rows through 2 stages: the first row crosses both, then one row leaves per
    slowest-stage time, (t1 + t2 + 63 x slowest) / 64."""
    a = arch()
    group = plan(chain(64, 64, 96, 32), a, "fpga", "dataflow").groups[0]
    slowest = max(s.cycles for s in group.stages)
    assert sum(s.units for s in group.stages) <= 512
    assert group.dataflow_cycles == pytest.approx((sum(s.cycles for s in group.stages) + 63 * slowest) / 64)
    assert slowest == pytest.approx((49152 + 24576) / 512, rel=0.01)


def test_design_that_does_not_fit_is_rejected_naming_the_resource() -> None:
    """128 x 128 x 16 int8 MACs on one U280 core need 131072 + 16 DSPs; the U280 has 9024 (DS963)."""
    text = ("name: big\nclock: 200 MHz\ntechnology_nm: 16\nmemory:\n  - {name: hbm, technology: HBM2, "
            "bandwidth: 460 GB/s}\nengines:\n  - name: fpga\n    kind: fpga\n    device: u280\n"
            "    matrix: {tokens: 128, out: 128, reduce: 16}\n    cross_channel_efficiency: 0.35\n")
    with pytest.raises(ConfigError) as err:
        arch_from_doc(parse_yaml(text, "big.yaml"))
    message = str(err.value)
    assert "131,088 DSP" in message and "9,024" in message and "over by 122,064" in message
    assert "engines[0].matrix" in message and "Fix:" in message


@pytest.mark.parametrize("workload", [chain(256, 512, 1024, 256), chain(1, 4096, 4096, 4096)], ids=["mlp", "gemv"])
def test_auto_is_never_slower_than_the_better_mode(workload: Workload) -> None:
    """Auto picks per group; groups are shared, so auto <= min(sequential, dataflow)."""
    a = arch(cores=2)
    cycles = {m: plan(workload, a, "fpga", m).cycles for m in ("sequential", "dataflow", "auto")}
    assert cycles["auto"] <= min(cycles["sequential"], cycles["dataflow"]) * (1 + 1e-12)
    assert math.isfinite(cycles["auto"])


def layered(widths: list[int], tokens: int, maps: list[bool]) -> Workload:
    """A chain of GEMMs X_i+1 = W_i X_i over `tokens` columns, each optionally followed by a ReLU."""
    lines, ranks, prev = [], {"p": tokens}, "X0"
    for i, (width, relu) in enumerate(zip(widths[1:], maps)):
        ranks[f"d{i}"], ranks[f"d{i + 1}"] = widths[i], width
        lines.append(f"H{i}[d{i + 1},p] = W{i}[d{i},d{i + 1}] * {prev}[d{i},p]")
        prev = f"H{i}"
        if relu:
            lines.append(f"A{i}[d{i + 1},p] = relu(H{i}[d{i + 1},p])")
            prev = f"A{i}"
    weights = {f"W{i}": {"kind": "weight"} for i in range(len(maps))}
    doc = {"name": "layers", "ranks": ranks, "default_bits": 8, "tensors": weights, "einsums": lines}
    return parse_cascade(parse_yaml(yaml.safe_dump(doc), "layers.einsum.yaml"))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([16, 64, 256, 1024, 4096]), min_size=3, max_size=7),
       st.sampled_from([1, 16, 256]), st.lists(st.booleans(), min_size=6, max_size=6))
def test_auto_never_gets_slower_with_more_allowed_stages(widths: list[int], tokens: int, maps: list[bool]) -> None:
    """Auto mode chooses the cut into groups: every cut allowed under max_stages k is allowed under k + 1, so
    its cycles never grow with max_stages (issue 17: the fixed cut made them move both ways)."""
    workload = layered(widths, tokens, maps[:len(widths) - 1])
    a = arch(cores=2)
    cycles = [plan(workload, a, "fpga", "auto", k).cycles for k in range(1, len(workload.einsums) + 2)]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(cycles, cycles[1:]))
    fixed = [min(plan(workload, a, "fpga", m, k).cycles for m in ("sequential", "dataflow"))
             for k in range(1, len(workload.einsums) + 2)]
    assert all(c <= f * (1 + 1e-12) for c, f in zip(cycles, fixed))


def test_run_report_prints_the_resource_utilization_table(tmp_path, capsys) -> None:
    """`accel-sim run` on the FlightLLM-like U280 and LLaMA2-7B decode prints DSP use 6,192 of 9,024:
    3 cores x (128 x 2 x 16 = 4096 int8 MACs / 2 per DSP48E2 + 16 SFU lanes) (DS963: 9,024 DSPs)."""
    from accel_sim.cli import main

    assert main(["run", "arch_configs/fpga/flightllm_u280.yaml", "workloads/llama2-7b-decode-w4a8.yaml",
                 "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "resource utilization" in out and "6,192" in out and "9,024" in out


# --- HLS designs: kernels, ports, FIFOs (engines/fpga/kernels.py) ----------------------------------------------
def hls_arch(kernels: list[dict], fifos: list[dict] | None = None, device: dict = DEVICE) -> Arch:
    """200 MHz, 32 channels of 10 GB/s at efficiency 0.5: 25 B per cycle per channel."""
    engine = {"name": "fpga", "kind": "fpga", "device": device, "same_channel_efficiency": 0.5,
              "kernels": kernels, "fifos": fifos or []}
    return Arch.model_validate({
        "name": "t", "clock": "200 MHz", "technology_nm": 16,
        "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"}], "engines": [engine]})


def test_hls_kernel_time_is_its_slowest_port_or_compute() -> None:
    """GEMV 1 x 256 x 512 (int16) on a kernel of 64 MACs/cycle: compute 131072 / 64 = 2048 cycles; the weights
    (262144 B) through a 16-byte port take 16384 cycles. A 64-byte port is capped by its channel (25 B/cycle), and
    the input (512 B) bound to the same channel shares it: (262144 + 512) / 25 = 10506.24 cycles."""
    w = gemm(1, 512, 256, a_bits=16, w_bits=16, out_bits=16)
    narrow = hls_arch([{"name": "k", "einsums": ["gemm"], "parallelism": 64, "ports": {"W": {"width": 16}}}])
    assert narrow.engines[0].cost(w.einsums[0], w, narrow).total_cycles == pytest.approx(16384)
    wide = hls_arch([{"name": "k", "einsums": ["gemm"], "parallelism": 64,
                      "ports": {"W": {"width": 64, "channel": 3}, "A": {"width": 64, "channel": 3}}}])
    cost = wide.engines[0].cost(w.einsums[0], w, wide)
    assert cost.compute_cycles == 2048 and cost.total_cycles == pytest.approx(10506.24)


@pytest.mark.parametrize(("fifo_width", "cycles"), [(96, (6144 + 6144 + 63 * 6144) / 64), (32, 12288.0)])
def test_a_fifo_shallower_than_a_granule_serializes_its_kernels(fifo_width: int, cycles: float) -> None:
    """Two GEMMs on two kernels, 6144 cycles each (64x64x96 / 64 and 64x96x32 / 32), streaming H (64 rows of
    96 B) through a FIFO of depth 2: 2 x 96 B holds a row and the kernels overlap,
    (t1 + t2 + 63 max) / 64 = 6240; 2 x 32 B does not, the producer waits on the consumer and the two act as
    one stage of 12288 cycles per row set: (12288 + 63 x 12288) / 64 = 12288."""
    a = hls_arch([{"name": "k1", "einsums": ["g1"], "parallelism": 64},
                  {"name": "k2", "einsums": ["g2"], "parallelism": 32}], [{"tensor": "H", "width": fifo_width}])
    assert plan(chain(64, 64, 96, 32), a, "fpga", "dataflow").cycles == pytest.approx(cycles)


def test_a_stream_without_a_fifo_cannot_run_as_a_dataflow() -> None:
    """Kernels that exchange H need a FIFO for it; without one the group says so and auto runs it sequentially."""
    a = hls_arch([{"name": "k1", "einsums": ["g1"], "parallelism": 64},
                  {"name": "k2", "einsums": ["g2"], "parallelism": 32}])
    group = plan(chain(64, 64, 96, 32), a, "fpga", "auto", 2).groups[0]
    assert group.mode == "sequential" and "no FIFO carries 'H'" in group.reason


@pytest.mark.parametrize(("engine", "key", "text"), [
    ("kernels: [{name: k, einsums: [a], parallelism: 16}]\n    matrix: {tokens: 1, out: 1, reduce: 1}",
     "engines[0].matrix", "not both or neither"),
    ("kernels: [{name: k, einsums: [a], parallelism: 16, ports: {W: {width: 32, channel: 32}}}]",
     "engines[0].kernels[0].ports.W.channel", "has 32 (0..31)"),
    ("kernels: [{name: k, einsums: [a], parallelism: 16}, {name: j, einsums: [a], parallelism: 8}]",
     "engines[0].kernels[1].einsums", "run by kernels 'k' and 'j'"),
    ("kernels: [{name: k, einsums: [a], parallelism: 16, dsps: 10000}]", "engines[0].kernels", "9,024"),
    ("kernels: [{name: k, einsums: [a], parallelism: 16, lanes: 4}]", "engines[0].kernels[0].lanes", "lanes"),
    ("matrix: {tokens: 1, out: 16, reduce: 16}", "engines[0].cross_channel_efficiency", "cross_channel_efficiency"),
])
def test_hls_design_errors_name_the_key_and_the_fix(engine: str, key: str, text: str) -> None:
    """Impossible HLS designs are ConfigErrors at the key to change, with a fix."""
    doc = ("name: d\nclock: 300 MHz\ntechnology_nm: 16\nmemory:\n  - {name: hbm, technology: HBM2, bandwidth: 460 GB/s}"
           f"\nengines:\n  - name: fpga\n    kind: fpga\n    device: u280\n    {engine}\n")
    with pytest.raises(ConfigError) as err:
        arch_from_doc(parse_yaml(doc, "d.yaml"))
    assert key in str(err.value) and text in str(err.value)


def test_channel_efficiency_defaults_to_the_devices_measured_memory() -> None:
    """On the U280 an engine without same_channel_efficiency streams at Shuhai's 425 of 460 GB/s (FCCM 2020);
    a device whose memory has no measured figure needs the engine to give one."""
    doc = ("name: d\nclock: 300 MHz\ntechnology_nm: 16\nmemory:\n  - {name: hbm, technology: HBM2, bandwidth: 460 GB/s}"
           "\nengines:\n  - name: fpga\n    kind: fpga\n    device: DEVICE\n"
           "    kernels: [{name: k, einsums: [a], parallelism: 16}]\n")
    assert arch_from_doc(parse_yaml(doc.replace("DEVICE", "u280"), "d.yaml")).engines[0].same_efficiency == \
        pytest.approx(425 / 460)
    with pytest.raises(ConfigError) as err:
        arch_from_doc(parse_yaml(doc.replace("DEVICE", "u250"), "d.yaml"))
    assert "same_channel_efficiency" in str(err.value) and "DDR4" in str(err.value)


def test_kernels_must_name_the_workloads_einsums() -> None:
    """A kernel naming an einsum the workload lacks is a ConfigError at that kernel's einsums."""
    a = hls_arch([{"name": "k1", "einsums": ["g1", "g3"], "parallelism": 64},
                  {"name": "k2", "einsums": ["g2"], "parallelism": 32}])
    with pytest.raises(ConfigError) as err:
        plan(chain(64, 64, 96, 32), a, "fpga", "sequential")
    assert err.value.key_path == "engines[0].kernels[0].einsums" and "['g3']" in str(err.value)


# --- HLS loop latency and off-chip round trips (engines/fpga/kernels.py `Loop`) ---------------------------------
def test_a_pipelined_loop_inside_an_unpipelined_one_pays_its_depth_every_outer_iteration() -> None:
    """UG1399: a loop pipelined at II runs in (trip - 1) x II + depth; an unpipelined loop runs trip x its
    iteration. An outer loop of 10 around a pipelined loop of 2 at II = 1 whose iteration is a DSP multiply
    (3 cycles) and a block RAM read (1): 10 x ((2 - 1) x 1 + 4) = 50 cycles, where pipelining the 20 iterations
    in one loop would take (20 - 1) + 4 = 23."""
    inner = Loop(trip=2, ii=1, ops=("dsp_mul", "bram_read"))
    assert loop_cycles(Loop(trip=10, body=(inner,)), 0.0) == 50
    assert loop_cycles(Loop(trip=20, ii=1, ops=("dsp_mul", "bram_read")), 0.0) == 23


def test_a_wait_costs_one_round_trip_per_pipelined_loop_and_one_per_unpipelined_iteration() -> None:
    """With a 30-cycle round trip: a pipelined fetch of 14 beats waits once, 13 + 30 = 43 cycles; an unpipelined
    loop of 14 writes that each await their response pays it every time, 14 x 30 = 420; sub-loops of an
    iteration run one after another: a row of both, 3 times, is 3 x (43 + 420) = 1389."""
    fetch = Loop(trip=14, ii=1, waits=("X",))
    write = Loop(trip=14, waits=("Y",))
    assert loop_cycles(fetch, 30.0) == 43
    assert loop_cycles(write, 30.0) == 420
    assert loop_cycles(Loop(trip=3, body=(fetch, write)), 30.0) == 3 * (43 + 420)


def test_a_pipelined_loop_with_sub_loops_or_an_uncited_operator_is_refused() -> None:
    """HLS unrolls every loop inside a pipelined one, so a pipelined loop names none; operators need a latency."""
    with pytest.raises(ValueError, match="unrolls every loop"):
        Loop(trip=2, ii=1, body=(Loop(trip=2),))
    with pytest.raises(ValueError, match="no cited latency"):
        Loop(trip=2, ops=("fdiv",))


def test_a_kernel_loop_nest_times_its_einsum_with_the_devices_round_trip() -> None:
    """GEMV 1 x 64 x 32 (int16) on one kernel whose nest is 4 outer steps x a pipelined 2-read loop waiting on W,
    plus a DSP multiply per step. The device's round trip of 100 ns at the 200 MHz clock is 20 cycles, so the
    nest takes 4 x ((2 - 1) + 20 + 3) = 96 cycles; the port still bounds the einsum (4096 B of W at 25 B/cycle:
    163.84 cycles). With 40 outer steps the nest, 40 x 24 = 960 cycles, is the slower."""
    w = gemm(1, 32, 64, a_bits=16, w_bits=16, out_bits=16)
    device = {**DEVICE, "offchip": {**DEVICE["offchip"], "latency": "100 ns"}}

    def cost(steps: int) -> float:
        nest = {"name": "n", "einsums": ["gemm"], "trip": steps, "ops": ["dsp_mul"],
                "body": [{"trip": 2, "ii": 1, "waits": ["W"]}]}
        a = hls_arch([{"name": "k", "einsums": ["gemm"], "parallelism": 32, "ports": {"W": {"width": 64}},
                       "loops": [nest]}], device=device)
        return a.engines[0].cost(w.einsums[0], w, a).total_cycles

    assert cost(4) == pytest.approx(4096 / 25)
    assert cost(40) == pytest.approx(40 * (1 + 20 + 3))


def test_a_loop_nest_that_waits_needs_a_measured_round_trip() -> None:
    """A device without an off-chip latency cannot time a kernel that waits on memory: one-paragraph error."""
    w = gemm(1, 32, 64, a_bits=16, w_bits=16, out_bits=16)
    a = hls_arch([{"name": "k", "einsums": ["gemm"], "parallelism": 32, "ports": {"W": {"width": 64}},
                   "loops": [{"name": "n", "einsums": ["gemm"], "trip": 4, "waits": ["W"]}]}])
    with pytest.raises(InfeasibleError, match="no measured round trip"):
        a.engines[0].cost(w.einsums[0], w, a)


# --- outstanding requests per port and remainder cores (engines/fpga/kernels.py) --------------------------------
def test_a_port_with_too_few_request_slots_stalls_a_pipelined_loop() -> None:
    """100 reads at II = 1 whose data the loop waits for, round trip L = 30 cycles. With N >= 30 requests in flight
    the port never stalls: the last read issues at cycle 99 and its data is back 30 later, 99 + 30 = 129 cycles.
    With N = 10 slots the first 10 issue back to back and each next 10 wait for the previous 10's responses:
    iteration i starts at floor(i / 10) x 30 + (i mod 10), the last (i = 99) at 9 x 30 + 9 = 279, done at 309.
    At II = 4 the same 10 slots cover 40 >= 30 cycles: no stall, 99 x 4 + 30 = 426."""
    fetch = Loop(trip=100, ii=1, waits=("W",))
    assert loop_cycles(fetch, 30.0, {"W": 32.0}) == 129
    assert loop_cycles(fetch, 30.0, {"W": math.inf}) == 129
    assert loop_cycles(fetch, 30.0) == 129
    assert loop_cycles(fetch, 30.0, {"W": 10.0}) == 309
    assert loop_cycles(Loop(trip=100, ii=4, waits=("W",)), 30.0, {"W": 10.0}) == 426
    # a port the loop does not wait on does not stall it
    assert loop_cycles(fetch, 30.0, {"X": 1.0}) == 129


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.integers(1, 4), st.integers(1, 60), st.integers(1, 40))
def test_issue_cycle_solves_the_request_slot_recurrence(i: int, ii: int, round_trip: int, slots: int) -> None:
    """The closed form equals the recurrence s_i = max(s_(i-1) + II, s_(i-N) + L), s_0 = 0, iterated directly."""
    s = [0]
    for k in range(1, i + 1):
        s.append(max(s[k - 1] + ii, s[k - slots] + round_trip if k >= slots else 0))
    assert issue_cycle(i, ii, round_trip, slots) == s[i]


def test_port_requests_in_flight_default_by_interface() -> None:
    """An HLS m_axi port keeps num_read_outstanding = 16 requests (UG1399 default); TAPA's async_mmap counts none
    itself (unbounded here); `outstanding` overrides either."""
    assert Port(width=32).in_flight == 16
    assert Port(width=32, interface="async_mmap").in_flight == math.inf
    assert Port(width=32, interface="async_mmap", outstanding=4).in_flight == 4


def test_a_kernel_loop_nest_waits_on_its_ports_outstanding_requests() -> None:
    """GEMV 1 x 32 x 16 (int16, W 1024 B: 40.96 cycles through a 25 B/cycle channel) whose nest is one pipelined
    loop of 64 reads at II = 1 waiting on W, round trip 100 ns at 200 MHz = 20 cycles. Through an async_mmap port
    (no slot count): 63 + 20 = 83 cycles. Through an m_axi port with its 16 slots (16 < 20): the last read starts at
    floor(63 / 16) x 20 + 15 = 75 and ends at 95."""
    w = gemm(1, 32, 16, a_bits=16, w_bits=16, out_bits=16)
    device = {**DEVICE, "offchip": {**DEVICE["offchip"], "latency": "100 ns"}}

    def cost(interface: str) -> float:
        nest = {"name": "n", "einsums": ["gemm"], "trip": 64, "ii": 1, "waits": ["W"]}
        a = hls_arch([{"name": "k", "einsums": ["gemm"], "parallelism": 32,
                       "ports": {"W": {"width": 64, "interface": interface}}, "loops": [nest]}], device=device)
        return a.engines[0].cost(w.einsums[0], w, a).total_cycles

    assert cost("async_mmap") == pytest.approx(83)
    assert cost("m_axi") == pytest.approx(95)


def test_a_remainder_takes_one_cycle_per_dividend_bit_plus_three() -> None:
    """Vitis HLS's remainder cores: srem_32ns_3ns_2_36 (LATENCY 35) for an int % 3, urem_6ns_3ns_2_10 (LATENCY 9)
    for a 6-bit dividend; a constant divisor gets the same core. Other names stay refused."""
    assert operator_cycles("srem32") == 35
    assert operator_cycles("urem6") == 9
    assert Loop(trip=2, ii=1, ops=("urem6",)).ops == ("urem6",)
    for bad in ("srem", "rem32", "srem0"):
        with pytest.raises(ValueError, match="no cited latency"):
            Loop(trip=2, ops=(bad,))


@pytest.mark.parametrize(("field", "value", "key", "text"), [
    ("dsp_kind", "dsp99", "engines[0].device.dsp_kind", "'dsp99'"),
    ("uram", -5, "engines[0].device.uram", "must not be negative"),
    ("uram", 1.5, "engines[0].device.uram", "valid integer"),
    ("offchip", {**DEVICE["offchip"], "technology": "DDR9"}, "engines[0].device.offchip.technology",
     "unknown off-chip memory technology 'DDR9'"),
    ("offchip", {**DEVICE["offchip"], "latency": "-1 ns"}, "engines[0].device.offchip.latency", "negative"),
    ("uramm", 3, "engines[0].device.uramm", "did you mean 'uram'"),
])
def test_inline_device_errors_name_the_devices_own_key(field: str, value: object, key: str, text: str) -> None:
    """A bad field of an inline device is reported at its own key path, not as the name branch's 'device.str'."""
    device = {**DEVICE, field: value}
    engine = {"name": "fpga", "kind": "fpga", "device": device, "matrix": {"tokens": 1, "out": 1, "reduce": 1},
              "same_channel_efficiency": 0.5, "cross_channel_efficiency": 0.25}
    doc = yaml.safe_dump({"name": "t", "clock": "200 MHz", "technology_nm": 16,
                          "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"}],
                          "engines": [engine]})
    with pytest.raises(ConfigError) as err:
        arch_from_doc(parse_yaml(doc, "d.yaml"))
    assert err.value.key_path == key and text in str(err.value)


def test_inline_device_offchip_technology_is_a_memory_levels_dram_kind() -> None:
    """The off-chip memory takes the DRAM kinds a memory level takes, in their canonical spelling."""
    engine = arch().engines[0]
    assert engine.fpga.offchip.technology == "HBM2"
    device = {**DEVICE, "offchip": {**DEVICE["offchip"], "technology": "hbm2e"}}
    assert engine.model_validate({**engine.model_dump(by_alias=True), "device": device}).fpga.offchip.technology == "HBM2E"


def _routes(buffers: list[dict]) -> dict[str, str]:
    """Weights in the first buffer, activations and outputs in the last (none without buffers)."""
    if not buffers:
        return {}
    return {"weights": buffers[0]["name"], "activations": buffers[-1]["name"], "outputs": buffers[-1]["name"]}


def _buffered(capacity: str | None, buffers: list[dict], cores: int = 2) -> Arch:
    """An overlay whose one on-chip level is its buffers (capacity None: left to them)."""
    level = {"name": "buffers", "technology": "SRAM", "bandwidth": "1 PB/s"}
    if capacity is not None:
        level["capacity"] = capacity
    doc = {"name": "t", "clock": "200 MHz", "technology_nm": 16,
           "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"}, level],
           "engines": [{"name": "fpga", "kind": "fpga", "device": DEVICE, "cores": cores,
                        "matrix": {"tokens": 16, "out": 32, "reduce": 8, **_routes(buffers)}, "buffers": buffers,
                        "same_channel_efficiency": 0.5, "cross_channel_efficiency": 0.25}]}
    return arch_from_doc(parse_yaml(yaml.safe_dump(doc), "overlay.yaml"))


def test_an_on_chip_level_left_without_capacity_is_the_buffers_the_design_builds() -> None:
    """2 cores x (a 4096 x 256 B buffer + a 512 x 64 B ping-pong one) = 2 x (1,048,576 + 2 x 32,768) = 2,228,224 B;
    halving the first buffer's depth takes 2 x 524,288 B off the level."""
    buffers = [{"name": "a", "depth": 4096, "width": 256}, {"name": "b", "depth": 512, "width": 64, "copies": 2}]
    assert _buffered(None, buffers).level("buffers").capacity_bytes == 2_228_224
    halved = [{**buffers[0], "depth": 2048}, buffers[1]]
    assert _buffered(None, halved).level("buffers").capacity_bytes == 2_228_224 - 2 * 524_288
    assert _buffered("2228224 B", buffers).level("buffers").capacity_bytes == 2_228_224  # stated and equal


def test_on_chip_levels_holding_more_than_the_buffers_build_are_refused() -> None:
    """The same design with the level stated at 4 MiB: 4,194,304 B of on-chip memory against 2,228,224 B of buffers."""
    buffers = [{"name": "a", "depth": 4096, "width": 256}, {"name": "b", "depth": 512, "width": 64, "copies": 2}]
    with pytest.raises(ConfigError, match=r"hold 4,194,304 bytes, more than the 2,228,224 bytes of buffers.*"
                                          r"leave memory\.buffers\.capacity out") as err:
        _buffered("4 MiB", buffers)
    assert err.value.key_path == "memory[1].capacity"


def test_an_on_chip_level_without_capacity_and_no_buffers_to_give_it_one_is_refused() -> None:
    """No engine builds buffers: the level's size is unknown, as it always was."""
    with pytest.raises(ConfigError, match="on-chip level 'buffers' \\(SRAM\\) has no capacity") as err:
        _buffered(None, [])
    assert err.value.key_path == "memory[1].capacity"


def _vhk158(a_buffer_depth: int = 4096) -> Arch:
    """The shipped FlightLLM VHK158 design (4 cores; a_buffer 2,048 B wide) with its A buffer `a_buffer_depth` deep."""
    return load_arch(ROOT / "arch_configs" / "fpga" / "flightllm_vhk158.yaml",
                     [f"engines.flightllm.buffers.a_buffer.depth={a_buffer_depth}"])


def _plan(design: Arch, workload: Workload) -> BufferPlan:
    engine, view = design.engines[0], gemm_view(workload.einsums[0], workload)
    return buffer_plan(engine, *unit_for(engine, view.m), view, workload.tensors[-1].bits)


def test_gemv_weight_chunks_split_the_reduction_until_two_fit_the_a_buffer() -> None:
    """Llama-2-7B's FFN down projection in decode (1 x 11,008 x 4,096, 4-bit weights) on the VHK158 design: the GEMV
    unit keeps its weights in the A buffer and addresses 512 B of each 2,048 B row (FlightLLM's IR_linear_mv.py,
    A_BUFFER_MV_PER_CHANNEL_WIDTH_B 64 x 8 channels). Each core computes 4,096 / 4 = 1,024 columns in tiles of 512;
    a chunk of one 16-step reduction block is 512 x 16 x 0.5 B = 4,096 B, two 8,192 B; the 11,008-step reduction
    has 688 blocks. Depth 4,096 (2 MiB usable): 2,097,152 / 8,192 = 256 blocks, ceil(688 / 256) = 3 chunks of
    ceil(688 / 3) = 230 blocks, 230 x 8,192 = 1,884,160 B. Depth 256 (131,072 B): 16 blocks, 43 chunks, 131,072 B.
    Depth 16 (8,192 B): 688 chunks of one block. Depth 15 (7,680 B) cannot hold two. The sequence (11,008 int8)
    sits in the B buffer's 16 B of each row the GEMV addresses: 688 of its 4,096 rows. The weights stream at the same
    bandwidth however they are chunked and FlightLLM's profiler charges no time per instruction, so the latency
    does not move until it fails."""
    down = gemm(1, 4096, 11008, a_bits=8, w_bits=4)
    full, small, least = (_plan(_vhk158(d), down) for d in (4096, 256, 16))
    assert (full.held["a_buffer"], full.reduce_splits) == (1_884_160, 3)
    assert (small.held["a_buffer"], small.reduce_splits) == (131_072, 43)
    assert (least.held["a_buffer"], least.reduce_splits) == (8_192, 688)
    assert full.held["b_buffer"] == 11_008          # the sequence: 1 token x 11,008 steps x 1 B
    cycles = {d: _vhk158(d).engines[0].cost(down.einsums[0], down, _vhk158(d)).total_cycles for d in (4096, 16)}
    assert cycles[4096] == cycles[16]
    with pytest.raises(InfeasibleError, match=r"need 8,192 B of buffer 'a_buffer' per core .* holds 7,680 B for "
                                              r"this unit .*engines\.flightllm\.buffers\.a_buffer\.depth"):
        _plan(_vhk158(15), down)


def test_matrix_activation_line_must_fit_the_a_buffer_whole() -> None:
    """Prefill (128 x 11,008 x 4,096, int8): the matrix unit keeps a 128-token tile's whole reduction in the A buffer
    while the weights stream past (FlightLLM's IR_linear_mm.py asserts A_BUFFER_DEPTH >= the K-block line):
    128 x 11,008 x 1 B = 1,409,024 B = 688 rows of 2,048 B. Depth 688 holds it; depth 687 does not."""
    down = gemm(128, 4096, 11008, a_bits=8, w_bits=8)
    assert _plan(_vhk158(688), down).held["a_buffer"] == 1_409_024
    with pytest.raises(InfeasibleError, match=r"matrix unit's tiles need 1,409,024 B of buffer 'a_buffer' per core "
                                              r"\(128 tokens x 11008 reduction steps of activations"):
        _plan(_vhk158(687), down)


def test_operands_routed_to_one_buffer_share_it() -> None:
    """The U250 overlay keeps activations and outputs in one 1 MiB buffer per core (4 cores, matrix 16 x 32): a
    16 x 4,096 x K int8 GEMM holds 16 x K B of activations and 2 x 16 x 32 = 1,024 B of output tiles there, so
    K = (1,048,576 - 1,024) / 16 = 65,472 is the longest reduction that fits."""
    design = load_arch(ROOT / "arch_configs" / "fpga" / "alveo_u250_overlay.yaml")
    assert _plan(design, gemm(16, 4096, 65_472)).held["activations"] == 1_048_576
    with pytest.raises(InfeasibleError, match="need 1,048,832 B of buffer 'activations'"):
        _plan(design, gemm(16, 4096, 65_488))


def test_an_on_chip_level_left_without_bandwidth_reads_one_word_of_each_routed_buffer_a_cycle() -> None:
    """VHK158: 4 cores x (a_buffer 2,048 B + global_buffer 2,048 B + b_buffer 32 B) x 225 MHz = 3.7152e12 B/s (the
    bias, meta and FSB buffers feed no unit the model runs, so they do not count). Widening b_buffer to 64 B:
    4 x 4,160 x 225e6 = 3.744e12 B/s; widening the bias buffer moves nothing."""
    def bandwidth(*overrides: str) -> float:
        design = load_arch(ROOT / "arch_configs" / "fpga" / "flightllm_vhk158.yaml", list(overrides))
        return design.level("buffers").bandwidth_bytes_per_s
    assert bandwidth() == pytest.approx(3.7152e12, rel=1e-12)
    assert bandwidth("engines.flightllm.buffers.b_buffer.width=64") == pytest.approx(3.744e12, rel=1e-12)
    assert bandwidth("engines.flightllm.buffers.bias_buffer.width=128") == bandwidth()


def test_an_on_chip_level_without_bandwidth_and_no_buffers_to_give_it_one_is_refused() -> None:
    """No engine builds buffers: the level's bandwidth is unknown, as it always was (exit 2 at its key path)."""
    doc = {"name": "t", "clock": "200 MHz", "technology_nm": 16,
           "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"},
                      {"name": "sram", "technology": "SRAM", "capacity": "1 MiB"}],
           "engines": [{"name": "fpga", "kind": "fpga", "device": DEVICE, "matrix": {"tokens": 16, "out": 32,
                        "reduce": 8}, "same_channel_efficiency": 0.5, "cross_channel_efficiency": 0.25}]}
    with pytest.raises(ConfigError, match="level 'sram' has no bandwidth") as err:
        arch_from_doc(parse_yaml(yaml.safe_dump(doc), "overlay.yaml"))
    assert err.value.key_path == "memory[1].bandwidth"


def _overlay(depths: tuple[int, int], widths: tuple[int, int], cores: int, shared: bool) -> Arch:
    """An overlay whose on-chip level is its two buffers: weights in the first; activations and outputs in the
    second, or (`shared`) everything in the first."""
    buffers = [{"name": "w", "depth": depths[0], "width": widths[0]},
               {"name": "a", "depth": depths[1], "width": widths[1]}]
    routes = ({"weights": "w", "activations": "w", "outputs": "w"} if shared
              else {"weights": "w", "activations": "a", "outputs": "a"})
    doc = {"name": "t", "clock": "200 MHz", "technology_nm": 16,
           "memory": [{"name": "hbm", "technology": "HBM2", "bandwidth": "320 GB/s"},
                      {"name": "buffers", "technology": "SRAM"}],
           "engines": [{"name": "fpga", "kind": "fpga", "device": DEVICE, "cores": cores,
                        "matrix": {"tokens": 16, "out": 32, "reduce": 8, **routes}, "buffers": buffers,
                        "same_channel_efficiency": 0.5, "cross_channel_efficiency": 0.25}]}
    return arch_from_doc(parse_yaml(yaml.safe_dump(doc), "overlay.yaml"))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([16, 64, 512]), st.sampled_from([64, 1024, 4096]), st.sampled_from([256, 2048]),
       st.sampled_from([256, 4096]), st.tuples(st.integers(1, 4096), st.integers(1, 4096)),
       st.sampled_from([32, 256]), st.integers(1, 4), st.booleans(), st.integers(0, 1))
def test_an_overlay_never_runs_faster_when_a_buffer_shrinks(m: int, k: int, n1: int, n2: int, depths: tuple[int, int],
                                                             width: int, cores: int, shared: bool, which: int) -> None:
    """Property: two chained GEMMs on a random overlay, then one of its buffers at half the depth (all else equal):
    the run either gives a number or refuses with an error naming a buffer or a level, never a traceback; a design
    refused at the larger depth is refused at the smaller; and where both run, the smaller is never faster (tiles
    that still fit cost the same, intermediates the smaller level cannot keep spill to HBM)."""
    work = chain(m, k, n1, n2)
    halved = (max(depths[0] // 2, 1), depths[1]) if which == 0 else (depths[0], max(depths[1] // 2, 1))
    outcomes = []
    for d in (depths, halved):
        try:
            outcomes.append(evaluate(_overlay(d, (width, width), cores, shared), work).latency_s)
        except (InfeasibleError, ConfigError) as err:
            assert "buffer" in str(err) or "level" in str(err) or "does not fit" in str(err)
            outcomes.append(None)
    larger, smaller = outcomes
    if larger is None:
        assert smaller is None
    elif smaller is not None:
        assert smaller >= larger * (1 - 1e-12)


def test_buffer_rows_report_the_most_any_einsum_holds_in_each_buffer() -> None:
    """Llama-2-7B decode (w4a8) on the shipped VHK158 design: the GEMV unit can use 2 MiB of the A buffer (512 B of
    each row), which the q projection's 4,096-step reduction (256 blocks of 8,192 B for two chunks) fills in one
    chunk, 2,097,152 B, the first to do so; the FFN down projection needs the most chunks, 3 (see above). The B
    buffer's peak is that projection's sequence, 11,008 B; the global buffer's two 1 x 512 int8 output tiles,
    1,024 B. At A buffer depth 256 (131,072 B usable) the q projection fills it in 16 chunks, the down projection in
    43."""
    work = load_workload(ROOT / "workloads" / "llama2-7b-decode-w4a8.yaml")
    rows = {r["buffer"]: r for r in _vhk158().engines[0].buffer_rows(work.einsums, work)}
    assert (rows["a_buffer"]["peak_bytes"], rows["a_buffer"]["einsum"]) == (2_097_152, "L0.attn.q_proj")
    assert rows["a_buffer"]["reduce_splits"] == 3
    assert (rows["b_buffer"]["peak_bytes"], rows["global_buffer"]["peak_bytes"]) == (11_008, 1_024)
    small = {r["buffer"]: r for r in _vhk158(256).engines[0].buffer_rows(work.einsums, work)}
    assert small["a_buffer"]["peak_bytes"] == 131_072 and small["a_buffer"]["reduce_splits"] == 43


def test_an_hls_designs_mac_peak_counts_only_the_kernels_that_multiply() -> None:
    """InTAR's MLP design has five kernels of 16 lanes: layer1_3 (H1, H3) and layer2 (H2) multiply, the three ReLU
    kernels only compare. Its MAC peak for the MLP is 2 x 16 = 32 a cycle, not 80, so the run's MAC utilization is
    its MACs over 32 x the makespan."""
    arch = load_arch(ROOT / "arch_configs" / "fpga" / "intar_mlp_dataflow.yaml")
    workload = load_workload(ROOT / "workloads" / "intar" / "mlp.einsum.yaml")
    engine = arch.engines[0]
    assert engine.mac_peak_on(workload.einsums, workload) == 32.0
    assert engine.mac_peak_on([e for e in workload.einsums if e.name == "H2"], workload) == 16.0
    result = evaluate(arch, workload)
    assert result.summary()["mac_utilization"] == pytest.approx(workload.total_macs / (32 * result.cycles))


def test_a_tensor_read_through_several_index_expressions_moves_its_largest_footprint() -> None:
    """RoPE's rotation reads q at e, e - 64 and e + 64 (e < 128): the three footprints are all of q, its lower half
    and its upper half, so the on-chip buffer moves all 32 x 128 elements of q once, as the roofline's compulsory
    traffic counts them (the last expression, half of q, was recorded, while the energy charged all of it)."""
    arch = load_arch(ROOT / "arch_configs" / "fpga" / "flightllm_vhk158.yaml")
    workload = load_workload(ROOT / "workloads" / "llama2-7b-decode.yaml",
                             overrides=["batch=1", "n_layers=1", "act_bits=8"])
    rotate = next(e for e in workload.einsums if e.name.endswith("q_rope.rotate"))
    cost = arch.engines[0].cost(rotate, workload, arch)
    q = next(a.tensor for a in rotate.inputs if a.tensor.endswith("attn.q"))
    assert cost.accesses[("buffers", q, "read")] == 32 * 128


@pytest.mark.parametrize(("mode", "written"), [("dataflow", 512), ("sequential", 8704)])
def test_an_hls_designs_hbm_writes_are_the_tensors_its_ports_store(mode: str, written: int) -> None:
    """InTAR's MLP (workloads/intar/mlp.einsum.yaml, 16-bit values): in the dataflow design only the output Y
    (256 x 2 = 512 B) leaves through a port, the intermediates stream through FIFOs; the sequential design's ports
    also store H2 and A2 to its off-chip scratch (2 x 2,048 x 2 = 8,192 B): 8,704 B. The HBM level reports those
    bytes, as its energy charges them, not every output the einsums write (13,312 B)."""
    arch = load_arch(ROOT / "arch_configs" / "fpga" / f"intar_mlp_{mode}.yaml")
    summary = evaluate(arch, load_workload(ROOT / "workloads" / "intar" / "mlp.einsum.yaml")).summary()
    assert summary["memory"]["hbm"]["write_bytes"] == written


def test_the_off_chip_floor_counts_every_cores_reads_and_the_stores() -> None:
    """The Alveo U250 overlay (4 cores sharing a batch item: each reads all its activations) on a skinny fp16 GEMM,
    509 x 61 x 7: 4 x 7,126 B of activations, 854 B of weights and 62,098 B of output cross the one DDR port,
    91,456 B, so the einsum takes at least 91,456 B / 77 GB/s = 1.1877 us. The floor used the compulsory 70,078 B
    and the run took 1.152 us, its DDR 103 % busy."""
    workload = load_workload(ROOT / "workloads" / "gemm.einsum.yaml", overrides=[
        "ranks.m=509", "ranks.k=7", "ranks.n=61", "tensors.A.bits=16", "tensors.B.bits=16", "tensors.Z.bits=16",
        "tensors.A.kind=activation"])
    result = evaluate(load_arch(ROOT / "arch_configs" / "fpga" / "alveo_u250_overlay.yaml"), workload)
    ddr = result.summary()["memory"]["ddr"]
    assert ddr["read_bytes"] + ddr["write_bytes"] == 91_456
    assert result.latency_s == pytest.approx(91_456 / 77e9, rel=1e-9)
    assert ddr["bandwidth_utilization"] == pytest.approx(1.0)
