"""Intermediates kept on chip by the schedule are not charged DRAM traffic; a spill pays its round trip instead."""
from __future__ import annotations

import pytest

from accel_sim.io.load import load_arch, load_workload
from accel_sim.schedule.cpsat import solve
from accel_sim.schedule.problem import build_problem
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Workload
from tests.builders import exp_chain
from tests.conftest import REPO

N = 1024  # elements of 16 bits: 2,048 B per tensor


def chain() -> Workload:
    """The two-exp chain of tests/builders.py at N elements: Y is the intermediate."""
    return exp_chain(N)


def arch(capacity: str = "1 MiB") -> Arch:
    """1 GHz (bytes/cycle = GB/s): DRAM 100 B/cycle at 10 pJ/bit, SRAM 1000 B/cycle, one 64-lane vector unit."""
    return Arch.model_validate({
        "name": "t", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "sram", "technology": "SRAM",
                    "capacity": capacity, "bandwidth": "1000 GB/s", "read_energy_per_bit": "1 pJ"}],
        "engines": [{"name": "vec", "kind": "vector", "lanes": 64}]})


def test_producer_option_drops_the_intermediate_write() -> None:
    """Y alone moves X in and Y out through DRAM: 4,096 B / 100 = 40.96 cycles. In the graph Y stays on chip, so
    only X's 2,048 B cross DRAM: 20.48 cycles (compute 1,024 / 64 = 16 is below), rounded up to 21."""
    problem = build_problem(arch(), chain())
    option = problem.task("Y").options[0]
    assert option.cycles == 21
    assert option.cost.total_cycles == pytest.approx(20.48)
    assert ("dram", "Y", "write") not in option.cost.accesses
    assert ("sram", "Y", "write") in option.cost.accesses


def test_consumer_option_drops_the_intermediate_read() -> None:
    """Z reads Y from the buffer and writes Z (the graph's output) to DRAM: 2,048 B / 100 = 20.48 cycles; the DRAM
    read energy of Y (2,048 B x 8 x 10 pJ = 0.164 uJ) is gone from its cost."""
    problem = build_problem(arch(), chain())
    cost = problem.task("Z").options[0].cost
    assert cost.total_cycles == pytest.approx(20.48)
    assert cost.energy_j[("dram", "read")] == pytest.approx(0.0, abs=1e-15)


def test_on_chip_chain_makespan() -> None:
    """With Y on chip the chain takes 21 + 21 = 42 cycles (each einsum alone would take 41)."""
    s = solve(build_problem(arch(), chain()), time_limit_s=2.0)
    assert s.buffers[0].placement == "on_chip"
    assert s.makespan_cycles == 42


def test_spilled_intermediate_pays_the_round_trip_once() -> None:
    """A 1 KiB buffer cannot hold Y (2 KiB): it spills, adding its write + read, 2 x 2,048 / 100 = 41 cycles,
    to the 42: makespan 83."""
    s = solve(build_problem(arch("1 KiB"), chain()), time_limit_s=2.0)
    assert s.buffers[0].placement == "spill"
    assert s.makespan_cycles == 83


def test_an_intermediate_spills_only_to_a_level_that_may_hold_it() -> None:
    """With DRAM holding weights only (as tpu_v1's Weight Memory), no outer level may take Y: the problem allows
    no spill (spill capacity 0), so a 1 KiB SRAM, too small for Y's 2,048 B, leaves fusion as the only way; with
    DRAM holding activations the spill goes there, as before."""
    spec = arch("1 KiB").model_dump(by_alias=True, exclude_unset=True)
    spec["memory"][0]["holds"] = ["weights"]
    problem = build_problem(Arch.model_validate(spec), chain())
    assert problem.spill_capacity_bytes == 0
    assert build_problem(arch("1 KiB"), chain()).spill_capacity_bytes is None
    assert build_problem(arch("1 KiB"), chain()).spill_level == "dram"


def test_a_write_back_cache_still_writes_the_intermediate_out() -> None:
    """A GPU's L2 is a write-back cache (GpuEngine.writes_back_through_caches): on the H100, with Y kept in the L2 by
    the schedule, Y's producer still writes it to HBM, and only its consumer's read from HBM goes, as in the
    sequential model's routes (placement.route_homes). The scratchpad arch above drops both."""
    work = exp_chain(1 << 20)
    problem = build_problem(load_arch(REPO / "arch_configs" / "gpu" / "h100_sxm5_80gb.yaml"), work, "latency")
    produced, consumed = problem.task("Y").options[0].cost, problem.task("Z").options[0].cost
    assert produced.accesses[("hbm", "Y", "write")] == 1 << 20
    assert ("hbm", "Y", "read") not in consumed.accesses and ("hbm", "X", "read") in produced.accesses
    scratch = build_problem(arch(), chain())
    assert not [key for task in scratch.tasks for key in task.options[0].cost.accesses if key[:2] == ("dram", "Y")]


def test_a_slower_backing_level_never_credits_an_option_to_fewer_cycles() -> None:
    """fusemax_like's mlp under the latency objective at 400 and 200 GiB/s of DRAM (each einsum keeps its mapping).
    H2 on the 2-D array: compute 512 + fill/drain 510 cycles; at 400 GiB/s its first tiles' 430 cycles set its
    1,452, at 200 GiB/s DRAM's 2,008 does. Credited, the backing-bound one dropped its prologue (1,147.5: W2 alone
    over DRAM) and the prologue-bound one kept it (1,452), so the slower DRAM gave the shorter schedule (3,152 vs
    3,292 cycles, both optimal; found by a probe). Now both drop it: 1,022 at 400 GiB/s (compute and fill/drain)."""
    work = load_workload(REPO / "workloads" / "mlp.einsum.yaml")
    fast, slow = (build_problem(load_arch(REPO / "arch_configs" / "fusemax_like.yaml",
                                          [f"memory.dram.bandwidth={bandwidth}"]), work, "latency")
                  for bandwidth in ("400 GiB/s", "200 GiB/s"))
    assert fast.task("H2").options[0].cycles == 1022 and slow.task("H2").options[0].cycles == 1148
    for task in fast.tasks:
        for o in task.options:
            assert o.cycles <= next(x for x in slow.task(task.name).options if x.engine == o.engine).cycles
    assert solve(fast, time_limit_s=2.0).makespan_cycles <= solve(slow, time_limit_s=2.0).makespan_cycles
