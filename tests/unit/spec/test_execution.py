"""The `execution:` section: shorthand and mapping forms, strict keys with their path and fix, and every option
reachable by `--set` and by a sweep axis."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.dse.spec import load_sweep
from accel_sim.errors import ConfigError
from accel_sim.io.load import load_arch
from accel_sim.spec.execution import (FpgaExecution, NpuPimExecution, PipelinedExecution, ScheduledExecution,
                                      SequentialExecution)

ROOT = Path(__file__).resolve().parents[3]
TPU = ROOT / "arch_configs" / "tpu_v1.yaml"          # no execution key: sequential
NEUPIMS = ROOT / "arch_configs" / "neupims_like.yaml"  # the shorthand `execution: npu_pim`
FPGA = ROOT / "arch_configs" / "fpga" / "flightllm_vhk158.yaml"  # one engine of kind fpga, 'flightllm'


def test_absent_execution_is_sequential() -> None:
    """An arch without `execution:` runs its einsums back to back."""
    assert load_arch(TPU).execution == SequentialExecution()


def test_string_shorthand_is_the_kind_with_defaults() -> None:
    """`execution: scheduled` is {kind: scheduled} with today's interactive limits (0.5 s, 150 einsums)."""
    arch = load_arch(TPU, ["execution=scheduled"])
    assert arch.execution == ScheduledExecution(time_limit_s=0.5, max_cpsat_einsums=150)


def test_mapping_form_sets_options() -> None:
    """The mapping form names the kind and its options."""
    arch = load_arch(FPGA, ["execution={kind: fpga, mode: dataflow, max_stages: 4}"])
    assert arch.execution == FpgaExecution(mode="dataflow", max_stages=4)


def test_unknown_option_names_its_key_path_and_the_valid_keys(tmp_path: Path) -> None:
    """A misspelt option is a ConfigError at execution.<key> whose fix suggests the right key."""
    path = tmp_path / "arch.yaml"
    path.write_text(NEUPIMS.read_text().replace("execution: npu_pim", "execution: {kind: npu_pim, polcy: naive}"))
    with pytest.raises(ConfigError) as err:
        load_arch(path)
    assert err.value.key_path == "execution.polcy"
    assert "did you mean 'policy'" in err.value.fix


@pytest.mark.parametrize(("assignment", "key_path"), [("execution=overlapped", "execution"),
                                                      ("execution={kind: overlapped}", "execution.kind")])
def test_unknown_kind_lists_the_kinds(assignment: str, key_path: str) -> None:
    """An unknown kind, as shorthand or in the mapping, is rejected at its key with the kinds to choose from."""
    with pytest.raises(ConfigError) as err:
        load_arch(TPU, [assignment])
    assert err.value.key_path == key_path
    assert "pipelined" in err.value.fix and "npu_pim" in err.value.fix


@pytest.mark.parametrize(("arch", "assignments", "expected"), [
    (NEUPIMS, ["execution.policy=naive"], NpuPimExecution(policy="naive")),
    (NEUPIMS, ["execution.requests=sharegpt", "execution.seed=3", "execution.iteration=10"],
     NpuPimExecution(requests="sharegpt", seed=3, iteration=10)),
    (TPU, ["execution.kind=scheduled", "execution.time_limit_s=2", "execution.max_cpsat_einsums=10"],
     ScheduledExecution(time_limit_s=2.0, max_cpsat_einsums=10)),
    (TPU, ["execution.kind=pipelined", "execution.instances=768", "execution.rank=head", "execution.copies=3",
           "execution.time_limit_s=1", "execution.seed=1"],
     PipelinedExecution(instances=768, rank="head", copies=3, time_limit_s=1.0, seed=1)),
    (FPGA, ["execution.kind=fpga", "execution.mode=sequential", "execution.max_stages=2",
            "execution.engine=flightllm"], FpgaExecution(mode="sequential", max_stages=2, engine="flightllm")),
])
def test_every_option_is_settable_by_set(arch: Path, assignments: list[str], expected: object) -> None:
    """`--set execution.OPTION=VALUE` reaches every option, whether the file has the shorthand or no key."""
    assert load_arch(arch, assignments).execution == expected


def test_a_sweep_axis_addresses_an_execution_option(tmp_path: Path) -> None:
    """`execution.policy` is a valid sweep axis on an arch with the shorthand; each design loads its policy."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\narch: neupims_like\nworkloads: [gpt3-7b-tp4-decode-b256]\n"
                    "axes:\n  - {path: execution.policy, values: [npu_only, neupims]}\n")
    sweep = load_sweep(spec)
    policies = [load_arch(NEUPIMS, [f"execution.policy={sweep.design(i)['execution.policy']}"]).execution.policy
                for i in range(sweep.designs)]
    assert policies == ["npu_only", "neupims"]


def test_a_misspelt_sweep_axis_is_rejected_at_load(tmp_path: Path) -> None:
    """A sweep axis into the execution section that names no option fails when the spec loads."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\narch: tpu_v1\nworkloads: [gemm.einsum]\n"
                    "axes:\n  - {path: execution.kind.x, values: [1]}\n")
    with pytest.raises(ConfigError) as err:
        load_sweep(spec)
    assert err.value.key_path == "axes[0].path"
