"""The buffer-capacity study specs (issue 15, item 5) sweep each on-chip level from its shipped size to 1/1024x."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim import load_arch
from accel_sim.dse import load_sweep
from accel_sim.units import parse_quantity

DSE = Path(__file__).resolve().parents[2] / "dse"


@pytest.mark.parametrize(("spec", "llama"), [("buffer_capacity_study_tpu_v1.yaml", "llama2-7b-decode-int8"),
                                             ("buffer_capacity_study_edge_npu.yaml", "llama2-7b-decode")])
def test_every_axis_runs_from_the_shipped_capacity_down_to_a_1024th(spec: str, llama: str) -> None:
    """Each free axis starts at the base config's capacity of its level, ends at 1/1024 of it, and halves or
    quarters at each step; every axis has as many values, so equal positions are the same scale (the diagonal)."""
    sweep = load_sweep(DSE / spec)
    arch = load_arch(sweep.arch_path)
    lengths = set()
    for path, values in sweep.free:
        level = arch.level(path.split(".")[1])
        sizes = [parse_quantity(v, "bytes") for v in values]
        assert sizes[0] == level.capacity_bytes and sizes[-1] * 1024 == level.capacity_bytes
        assert {a / b for a, b in zip(sizes, sizes[1:])} <= {2.0, 4.0}
        lengths.add(len(values))
    assert len(lengths) == 1 and sweep.spec.workloads == ["resnet50", "bert-base", llama]
