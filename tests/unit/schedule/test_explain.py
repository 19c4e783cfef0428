"""Infeasible schedules are explained by constraint family and by the tensors or einsums at fault."""
from __future__ import annotations

import pytest

from accel_sim.errors import InfeasibleError
from accel_sim.schedule.cpsat import solve
from accel_sim.schedule.problem import Buffer, Option, Problem, Task


def _chain(**kw) -> Problem:
    tasks = (Task("a", (Option("x", 5, 1.0),)), Task("b", (Option("y", 5, 1.0),)), Task("c", (Option("x", 5, 1.0),)))
    buffers = (Buffer("A", 100, "a", ("b",), 4), Buffer("B", 100, "b", ("c",), 0))
    return Problem(tasks, buffers, (("a", "b"), ("b", "c")), kw.pop("capacity", 1000), 10.0,
                   kw.pop("spill_capacity", None), 0.0, "sram", "dram", **kw)


def test_tensor_larger_than_every_memory() -> None:
    """Tensor B (100 bytes, not fusible) with a 50-byte on-chip buffer and a 60-byte backing level: the explanation
    names placement and capacity, the tensor, both memories, and a fix."""
    with pytest.raises(InfeasibleError) as info:
        solve(_chain(capacity=50, spill_capacity=60))
    text = str(info.value)
    assert "placement" in text and "on-chip capacity" in text
    assert "tensor 'B' (100 bytes) fits no memory" in text.replace("Tensor", "tensor")
    assert "'sram' holds 50 bytes" in text and "'dram' 60 bytes" in text
    assert "Fix:" in text and "INFEASIBLE" not in text


def test_cycle_of_required_fusions() -> None:
    """Required fusions a->b and c->a close the cycle a -> b -> c -> a with the data edge b->c: the explanation
    names only the fusion and precedence families and prints the cycle."""
    with pytest.raises(InfeasibleError) as info:
        solve(_chain(required_fusions=(("a", "b"), ("c", "a"))))
    text = str(info.value)
    assert "required fusion" in text and "form a cycle" in text
    assert "on-chip capacity" not in text
    assert "c->a" in text


def test_fusion_on_one_engine() -> None:
    """a and c both run only on engine x; requiring them fused is infeasible and the explanation names the engine."""
    with pytest.raises(InfeasibleError) as info:
        solve(_chain(required_fusions=(("a", "c"),)))
    assert "only engine 'x' can run both" in str(info.value)
