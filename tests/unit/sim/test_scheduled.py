"""`execution: scheduled`: evaluate places einsums with the scheduler and reports the replayed makespan."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import SKIP_CHAIN

from accel_sim.errors import InfeasibleError
from accel_sim.evaluate import evaluate
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.load import load_arch, load_workload
from accel_sim.io.yaml import parse_yaml
from accel_sim.schedule.problem import build_problem
from accel_sim.sim.placement import reserving_parameters
from accel_sim.spec.arch import Arch

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def results():
    workload = load_workload(REPO / "workloads" / "mlp.einsum.yaml")
    sequential = evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml"), workload, "latency")
    scheduled = evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml", ["execution=scheduled"]), workload,
                         "latency")
    return sequential, scheduled


def test_latency_is_the_replayed_makespan(results) -> None:
    """The scheduled Result's cycles are the replay's makespan, never shorter than the schedule's: nothing spills on
    TPU v1's 24 MiB buffer for this MLP, but where the activation unit's A1 writes the Unified Buffer at its full
    write bandwidth while H1 still writes its results there, the two share the port (sim/replay.py)."""
    _, scheduled = results
    trace = scheduled.trace
    assert scheduled.cycles == trace.makespan_cycles == trace.replayed_cycles >= trace.planned_cycles


def test_never_slower_than_back_to_back(results) -> None:
    """Overlap can only help when nothing spills: the makespan is at most the sequential sum of the same einsums'
    cycles (rounded up to whole cycles per einsum)."""
    sequential, scheduled = results
    assert scheduled.cycles <= sum(-(-r.cost.total_cycles // 1) for r in sequential.einsums)


def test_per_einsum_costs_unchanged(results) -> None:
    """Each einsum keeps the engine and cost sequential evaluation gives it (one capable engine per einsum here)."""
    sequential, scheduled = results
    assert [(r.engine, r.cost.total_cycles) for r in scheduled.einsums] == [
        (r.engine, r.cost.total_cycles) for r in sequential.einsums]


def weights_on_chip(capacity: int, execution: str) -> Arch:
    """DRAM holds activations only, so the skip chain's weights W (8 x 4) and U (4 x 4), 48 B at 8 bits, live in
    `buf` for the whole run; a 4 x 4 output-stationary array and a 16-lane vector unit."""
    return Arch.model_validate({
        "name": "weights on chip", "clock": "1 GHz", "technology_nm": 28, "execution": execution,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "read_energy_per_bit": "10 pJ",
                    "holds": ["activations"]},
                   {"name": "buf", "technology": "SRAM", "capacity": f"{capacity} B", "bandwidth": "16 GB/s",
                    "read_energy_per_bit": "1 pJ"}],
        "engines": [{"name": "sa", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": "os"},
                    {"name": "vec", "kind": "vector", "lanes": 16}]})


def test_parameters_kept_on_chip_leave_the_scheduler_only_the_rest_of_the_buffer() -> None:
    """The 48 B of weights take their share of `buf` under the scheduler too: its intermediates get 64 - 48 = 16 B
    of a 64 B buffer, the reported peak (weights and intermediates) never exceeds the capacity, and the makespan
    never falls as the buffer shrinks from 200 B to 64 B. Before, the scheduler gave the intermediates the whole
    buffer: 68 cycles at every size, with 112 B in use in 64 B."""
    work = parse_cascade(parse_yaml(SKIP_CHAIN, "<skip chain>"))
    assert build_problem(reserving_parameters(weights_on_chip(64, "scheduled"), work), work).capacity_bytes == 16
    cycles = []
    for capacity in (200, 120, 100, 90, 80, 72, 64):
        run = evaluate(weights_on_chip(capacity, "scheduled"), work, objective="latency")
        assert next(m for m in run.trace.memory if m.level == "buf").peak_bytes <= capacity
        cycles.append(run.cycles)
    assert cycles == sorted(cycles) and cycles[-1] > cycles[0] == 68


def test_an_edp_run_says_the_schedule_minimizes_the_makespan(results) -> None:
    """CP-SAT minimizes a sum, so under the EDP objective the schedule minimizes the makespan; the run says so
    beside its 'CP-SAT optimal' (a latency run needs no such note)."""
    workload = load_workload(REPO / "workloads" / "mlp.einsum.yaml")
    edp = evaluate(load_arch(REPO / "arch_configs" / "tpu_v1.yaml", ["execution=scheduled"]), workload, "edp")
    assert any("minimizes the makespan" in note for note in edp.trace.notes)
    assert not any("minimizes the makespan" in note for note in results[1].trace.notes)


def test_a_scheduled_run_reports_where_its_intermediates_and_graph_tensors_live() -> None:
    """attention_3pass (Q, K, V, AV 128 KiB each; QK, SN, A 2 MiB; GM, SD 2 KiB) on edge_npu, whose global buffer
    holds no outputs: every intermediate spills to DRAM, and the DRAM's peak is while SN runs, when QK, GM (its
    inputs), SN and V (read last, by AV) are live: 2 x 2,097,152 + 2,048 + 131,072 = 4,327,424 bytes, as the
    sequential model's homes give. On tpu_v1 the same tensors live in the Unified Buffer. Before, a scheduled run
    reported 0 bytes at both."""
    workload = load_workload(REPO / "workloads" / "attention_3pass.einsum.yaml")
    for arch, level in (("edge_npu", "dram"), ("tpu_v1", "unified_buffer")):
        for execution in ("scheduled", "sequential"):
            run = evaluate(load_arch(REPO / "arch_configs" / f"{arch}.yaml", [f"execution={execution}"]), workload)
            assert next(m for m in run.trace.memory if m.level == level).peak_bytes == 4_327_424, (arch, execution)


def test_a_scheduled_intermediate_that_fits_nowhere_is_an_error_not_a_spill() -> None:
    """tpu_v1's Weight Memory holds no intermediates, so with a 4 MiB Unified Buffer attention_3pass's 2 MiB QK, GM
    and SN, live at once (4,196,352 bytes), have nowhere to go, as the sequential model says. Before, CP-SAT found no
    schedule in its time and the list schedule it fell back on spilled QK and SN to the Weight Memory anyway."""
    workload = load_workload(REPO / "workloads" / "attention_3pass.einsum.yaml")
    arch = load_arch(REPO / "arch_configs" / "tpu_v1.yaml",
                     ["execution=scheduled", "memory.unified_buffer.capacity=4 MiB"])
    with pytest.raises(InfeasibleError) as info:
        evaluate(arch, workload)
    assert "'weight_memory' holds no intermediates" in str(info.value) and "Fix:" in str(info.value)


def test_a_scheduled_onnx_graph_with_a_tensor_only_a_view_reads_runs(tmp_path: Path) -> None:
    """A Reshape's shape constant is a graph tensor no einsum touches (ResNet-18's and MobileNetV2's dynamo exports
    have one): the scheduled memory report leaves it out. It stopped fusemax_like's run with a StopIteration."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper   # onnx is imported lazily by the importer too

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"]), helper.make_node("Reshape", ["Y", "shape"], ["R"]),
         helper.make_node("Relu", ["R"], ["Z"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, (4, 8))],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, (2, 16))],
        [numpy_helper.from_array(np.ones((8, 8), np.float32), "W"),
         numpy_helper.from_array(np.array([2, -1], np.int64), "shape")])
    path = tmp_path / "reshape.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    workload = load_workload(path)
    assert "shape" in workload.tensor_map
    run = evaluate(load_arch(REPO / "arch_configs" / "fusemax_like.yaml"), workload)
    assert run.trace.execution == "scheduled" and run.cycles > 0


SOFTMAX = """\
name: softmax
ranks: {m: 1000, p: 64}
default_bits: 16
einsums:
  - "MX[p] = max: X[m,p]"
  - XS[m,p] = X[m,p] - MX[p]
  - XE[m,p] = exp(XS[m,p])
  - SM[p] = XE[m,p]
  - Y[m,p] = XE[m,p] / SM[p]
"""


def test_einsums_running_at_once_share_the_dram_bandwidth() -> None:
    """A softmax on fusemax_like: MX (on one array) and XS (on the other) both read all of X (128,000 B) from DRAM,
    and the run moves 256,000 B in and 128,000 B out, at least 384,000 / 456.9 = 841 cycles at 429.5 GB/s and
    0.94 GHz. The schedule ran MX and XS at once, each at the full bandwidth: 576 cycles, the DRAM 1.46 times
    busy. Now the replay slows einsums whose shares of a port add up past the whole (sim/replay.py)."""
    workload = parse_cascade(parse_yaml(SOFTMAX, "<softmax>"))
    run = evaluate(load_arch(REPO / "arch_configs" / "fusemax_like.yaml"), workload)
    dram = next(m for m in run.trace.memory if m.level == "dram")
    seconds = (dram.read_bytes + dram.write_bytes) / run.arch.level("dram").ports.peak_bytes_per_s
    assert run.latency_s >= seconds * (1 - 1e-9)
    assert dram.utilization <= 1.0 + 1e-9
