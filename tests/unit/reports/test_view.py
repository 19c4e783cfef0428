"""The run record behind a report: the roofline property on every execution path, repeats grouped, rows folded,
generated names shortened."""
from __future__ import annotations

import hashlib
import re

import pytest

from accel_sim import evaluate, load_arch, load_workload
from accel_sim.reports.interactive import fold_rows, occupancy_bars, time_unit
from accel_sim.reports.plots import roofline_data
from accel_sim.cli.provenance import run_folder
from accel_sim.reports.view import folder_name, group_repeats, roofline_record, short_name

PATHS = {  # every execution model that reaches a report, on a workload small enough for a unit test
    "sequential": ("edge_npu", "mlp.einsum", (), ()),
    "scheduled, register-resident chains": ("fusemax_like", "attention_1pass.einsum", (), ()),
    "pipelined": ("fusemax_like", "attention_1pass.einsum",
                  ("execution={kind: pipelined, instances: 4, copies: 2, time_limit_s: 1}",), ()),
    "npu_pim": ("neupims_like", "llama2-7b-decode", (), ("n_layers=1",)),
    # FlashAttention on a GPU: scores and probabilities stay in the SMs, so their L2 traffic is in neither cost nor bound
    "scheduled, GPU FlashAttention": ("gpu/h100_sxm5_80gb", "flash_attention.einsum",
                                      ("execution.kind=scheduled", "execution.time_limit_s=0.5"),
                                      ("ranks.h=16", "ranks.m1=4", "ranks.p=512")),
}


@pytest.fixture(scope="module", params=list(PATHS))
def result(request: pytest.FixtureRequest):  # noqa: ANN201 - a Result
    """One evaluated run per execution path."""
    arch, workload, arch_set, workload_set = PATHS[request.param]
    return evaluate(load_arch(arch, list(arch_set)), load_workload(workload, overrides=list(workload_set)))


def test_no_einsum_beats_its_roofline(result) -> None:  # noqa: ANN001
    """Accuracy contract: achieved cycles >= the roofline bound for every einsum, so every roofline point lies on or
    under its roof (register-resident chains drop the resident tensors' traffic from cost and bound alike)."""
    for placed in result.einsums:
        assert placed.cost.total_cycles >= placed.bound.cycles * (1 - 1e-9), placed.einsum
    record = roofline_record(result)
    assert record["points"]
    above = [p["einsum"] for p in record["points"] if p["ops_per_s"] > p["roof_ops_per_s"] * (1 + 1e-9)]
    assert above == []


def test_each_point_has_a_roof_for_its_level() -> None:
    """A point is measured against a level its engine group has a roof for; the PIM engine's roof at its own DRAM
    is the in-bank rate, above the DRAM's external bandwidth."""
    arch = load_arch("neupims_like")
    # a batch of 32: its projections run faster on the arrays than on the vector units (at batch 1 both are bound
    # by the same HBM bus, and the cheaper vector units take them)
    result = evaluate(arch, load_workload("llama2-7b-decode", overrides=["n_layers=1", "batch=32"]))
    record = roofline_record(result)
    roofs = {(r["engine"], r["level"]): r["bandwidth_bytes_per_s"] for r in record["roofs"] if "level" in r}
    assert all((p["engine"], p["level"]) in roofs for p in record["points"])
    hbm = next(level for level in arch.memory if level.name == "hbm")
    assert roofs[("pim", "hbm")] > hbm.ports.peak_bytes_per_s
    assert ("sa0..sa7", "hbm") in roofs  # eight identical arrays are one group


def test_layer_repeats_fold_into_one_row() -> None:
    """Rows equal but for the layer number fold (× 3); a row that differs in cost stays apart."""
    rows = [{"einsum": f"L{i}.qk", "engine": "sa", "op": "mac", "cycles": 10.0, "bound": "dram"} for i in range(3)]
    rows.append({"einsum": "L3.qk", "engine": "sa", "op": "mac", "cycles": 11.0, "bound": "dram"})
    grouped = group_repeats(rows, ("engine", "op", "cycles", "bound"))
    assert [(g["einsum"], g["repeats"]) for g in grouped] == [("L0.qk … L2.qk", 3), ("L3.qk", 1)]


def test_identical_resources_fold_into_one_timeline_row() -> None:
    """32 channels running the same spans at the same times are one row 'pim.ch × 32'; a different one is not."""
    spans = [{"resource": f"pim.ch{c:02d}", "label": "qk", "start": 0.0, "end": 5.0} for c in range(32)]
    spans.append({"resource": "npu", "label": "ffn", "start": 0.0, "end": 9.0})
    rows, row_of = fold_rows(spans)
    assert rows == ["pim.ch × 32", "npu"] and row_of["pim.ch17"] == "pim.ch × 32"


def test_one_time_unit_per_timeline() -> None:
    """The axis unit follows the run's length."""
    assert [time_unit(s)[0] for s in (5e-7, 7e-6, 0.0185, 3.0)] == ["ns", "µs", "ms", "s"]


@pytest.mark.parametrize(("name", "short"), [
    ("llama2-7b-n_layers1-decode-b1-kv1024", "llama2-7b-decode-b1-kv1024"),
    ("llama2-7b-d_model512-norm_eps1e-05-ffn_dim2048-decode-b8-kv4096-w4a16kv16", "llama2-7b-decode-b8-kv4096-w4a16kv16"),
    ("bitnet-b1.58-3b-decode-b1-kv1024", "bitnet-b1.58-3b-decode-b1-kv1024"),
    ("resnet50-in_channels1-b1-224", "resnet50-b1-224"),
    ("attention_1pass", "attention_1pass")])
def test_generated_names_keep_model_phase_batch_and_length(name: str, short: str) -> None:
    """Recipe parameters leave the shown name (they are in the provenance); other names stay."""
    assert short_name(name) == short


def test_occupancy_bars_show_each_bounded_levels_peak_share() -> None:
    """12,288 B peak in a 24 MiB buffer is 12,288 / 25,165,824 = 0.048828125 %; 3 MiB of 4 MiB is 75 %; an
    unbounded level (DRAM) has no bar."""
    memory = {"dram": {"capacity_bytes": None, "peak_bytes": 0, "spilled_bytes": 0},
              "ub": {"capacity_bytes": 24 * 2**20, "peak_bytes": 12288, "spilled_bytes": 0},
              "acc": {"capacity_bytes": 4 * 2**20, "peak_bytes": 3 * 2**20, "spilled_bytes": 512}}
    (bars,) = occupancy_bars(memory)["data"]
    assert bars["y"] == ["ub", "acc"]
    assert bars["x"] == pytest.approx([0.048828125, 75.0])
    assert "spilled 512 B" in bars["customdata"][1]


def test_peak_counts_two_ops_per_mac_as_vendors_do() -> None:
    """TPU v1's matrix unit: 256 x 256 MACs x 700 MHz x 2 ops = 91.75 Top/s, the '92 TOPS' of Jouppi et al.
    (ISCA 2017, Table 2); its GEMM point counts 2 ops per MAC too, so it stays under that roof."""
    result = evaluate(load_arch("arch_configs/tpu_v1.yaml"), load_workload("workloads/gemm.einsum.yaml"))
    ceilings = dict((label.split(" peak")[0], value) for label, value in roofline_data(result).ceilings)
    assert ceilings["mxu"] == pytest.approx(256 * 256 * 700e6 * 2)
    (point,) = [p for p in roofline_record(result)["points"] if p["op"] == "mac"]
    assert point["ops_per_s"] <= point["roof_ops_per_s"] * (1 + 1e-9)
    assert point["ops_per_s"] == pytest.approx(2 * 64 * 32 * 128 / result.einsums[0].cost.total_cycles * 700e6)


def test_generated_names_give_short_stable_folder_names() -> None:
    """A generated name's folder is model, phase, batch and length plus 8 hex digits of the full name: the same name
    gives the same folder, names that differ only in a parameter give different ones, a short name stays as it is."""
    long = "llama2-7b-d_model512-n_heads8-ffn_dim2048-n_layers2-decode-b8-kv1024-w4a16kv16"
    other = long.replace("ffn_dim2048", "ffn_dim4096")
    folder = folder_name(long)
    assert re.fullmatch(r"llama2-7b-decode-b8-kv1024-w4a16kv16-[0-9a-f]{8}", folder)
    assert folder == folder_name(long) and folder_name(other) != folder
    assert folder[-8:] == hashlib.sha256(long.encode()).hexdigest()[:8]
    assert folder_name("mlp.einsum") == "mlp.einsum"
    assert folder_name("llama2-7b-decode-b1-kv1024") == "llama2-7b-decode-b1-kv1024"


def test_a_long_hand_written_name_is_cut_and_hashed() -> None:
    """A 150-character name that is no generated one: cut to the short name's length and hashed, no ellipsis."""
    name = "my-model " * 17
    folder = folder_name(name)
    assert len(folder) < 70 and "…" not in folder and " " not in folder
    assert folder_name(name + "x") != folder


def test_the_run_folder_uses_the_short_name() -> None:
    """`run`'s default folder is <arch>__<short workload name>, the --set hash after it."""
    long = "llama2-7b-d_model512-n_heads8-ffn_dim2048-n_layers2-decode-b8-kv1024-w4a16kv16"
    assert run_folder("TPU v1", long, []).name == f"TPU-v1__{folder_name(long)}"
    assert run_folder("TPU v1", long, ["a=1"]).name.startswith(f"TPU-v1__{folder_name(long)}__set-")


def test_a_point_above_its_roof_is_flagged_and_one_on_it_is_not() -> None:
    """above_roof: 2 op/s under a 1 op/s roof is flagged; exactly on the roof (1e-7 over, rounding) is not."""
    from accel_sim.reports.view import above_roof

    points = [{"einsum": "fast", "ops_per_s": 2.0, "roof_ops_per_s": 1.0},
              {"einsum": "on", "ops_per_s": 1.0 + 1e-7, "roof_ops_per_s": 1.0}]
    assert [p["einsum"] for p in above_roof(points)] == ["fast"]


def test_the_terminal_warns_when_an_einsum_beats_its_roofline(monkeypatch: pytest.MonkeyPatch, tmp_path,
                                                             capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    """The accuracy contract in the terminal: a roofline point above its roof (forced here) prints a warning line
    naming the einsum; a normal run prints none."""
    import accel_sim.reports.tables as tables

    result = evaluate(load_arch("arch_configs/tpu_v1.yaml"), load_workload("workloads/gemm.einsum.yaml"))
    tables.print_run(result, tmp_path, rows=None)
    assert "faster than their roofline" not in capsys.readouterr().out
    monkeypatch.setattr(tables, "roofline_record", lambda r: {"points": [
        {"einsum": "Z", "ops_per_s": 2.0, "roof_ops_per_s": 1.0}]})
    tables.print_run(result, tmp_path, rows=None)
    out = capsys.readouterr().out
    assert "1 einsums run faster than their roofline allows (Z)" in out
