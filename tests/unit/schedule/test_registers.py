"""Register residency: an intermediate whose producer and consumer run on one engine stays in its registers
(fusion inside the engine) and moves through no memory level; the vector unit's chained operators; a systolic
contraction whose resident tensor is stationary runs its folds behind one skew."""
from __future__ import annotations

import pytest

from accel_sim.engines.systolic import SystolicEngine
from accel_sim.io.load import load_arch, load_workload
from accel_sim.schedule.cpsat import solve
from accel_sim.schedule.greedy import list_schedule
from accel_sim.schedule.problem import Buffer, Option, Problem, Residency, Task, Variant, build_problem
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload
from tests.builders import exp_chain, gemm
from tests.conftest import REPO

R = Affine.rank
N = 1024  # elements of 16 bits: 2,048 B per tensor


def chain() -> Workload:
    """The two-exp chain of tests/builders.py at N elements: Y is the intermediate."""
    return exp_chain(N)


def arch(vector: dict | None = None, sram: str = "1 MiB") -> Arch:
    """1 GHz (bytes/cycle = GB/s): DRAM 1000 B/cycle, an SRAM (1 MiB) of 100 B/cycle, one 64-lane vector unit."""
    return Arch.model_validate({
        "name": "t", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1000 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "sram", "technology": "SRAM",
                    "capacity": sram, "bandwidth": "100 GB/s", "read_energy_per_bit": "1 pJ"}],
        "engines": [{"name": "vec", "kind": "vector", "lanes": 64, **(vector or {})}]})


def test_chain_without_registers_goes_through_the_buffer() -> None:
    """No lane registers: Y moves X in and Y out through the SRAM, 4,096 B / 100 = 40.96 -> 41 cycles; Z likewise:
    makespan 82 and Y on chip."""
    sched = solve(build_problem(arch(), chain()), "latency", time_limit_s=1.0)
    assert sched.makespan_cycles == 82
    assert sched.buffers[0].placement == "on_chip"


def test_chain_with_registers_keeps_the_intermediate_in_the_lanes() -> None:
    """64 lanes x 64 B = 4 KiB of registers hold a tile of Y (Z keeps rank i: 2 B per tile): Y's accesses leave
    every level. Y moves only X (2,048 B / 100 = 20.48 -> 21 cycles), Z only Z (21): makespan 42, Y in
    registers, both slots list it, and neither option's cost holds an access to Y."""
    problem = build_problem(arch({"lane_registers": "64 B"}), chain())
    assert [(r.tensor, r.engine, r.tasks, r.tile_bytes) for r in problem.residencies] == [("Y", "vec", ("Y", "Z"), 2)]
    sched = solve(problem, "latency", time_limit_s=1.0)
    assert sched.makespan_cycles == 42
    assert sched.buffers[0].placement == "registers"
    assert [s.resident for s in sched.slots] == [("Y",), ("Y",)]
    for task in problem.tasks:
        cost = task.options[0].variant(frozenset({"Y"})).cost
        assert not any(key[1] == "Y" for key in cost.accesses)


def test_a_resident_intermediate_larger_than_the_buffer_needs_no_buffer() -> None:
    """Y (2,048 B) no longer fits a 1 KiB buffer, but a tile of it (2 B) fits the lanes' registers: it stays there
    (makespan 42 as above), occupying no buffer bytes. Without lane registers it must spill (a DRAM round trip of
    2 x 2,048 B / 1,000 B per cycle = 5 cycles on top of the 82: 87)."""
    sched = solve(build_problem(arch({"lane_registers": "64 B"}, "1 KiB"), chain()), "latency", time_limit_s=1.0)
    assert (sched.makespan_cycles, sched.buffers[0].placement, sched.buffers[0].bytes) == (42, "registers", 0)
    assert sched.peak_on_chip_bytes() == 0
    spilled = solve(build_problem(arch(sram="1 KiB"), chain()), "latency", time_limit_s=1.0)
    assert (spilled.makespan_cycles, spilled.buffers[0].placement) == (87, "spill")


def test_chained_operators_take_one_pass_per_point() -> None:
    """S[i] = exp(X[i] - M[i]) has two operators per point: 2 x 1,024 / 64 = 32 compute cycles one operator a
    cycle, 1,024 / 64 = 16 when the lane chains them (FuseMax artifact stable_softmax.py: one pass per einsum)."""
    s = Einsum("S", Access("S", (R("i"),)), Call("exp", (Call("sub", (Access("X", (R("i"),)),
                                                                     Access("M", (R("i"),)))),)), {"i": N})
    workload = Workload("s", tuple(Tensor(t, ("I",), (N,)) for t in "XMS"), (s,))
    plain, chained = (arch({"chained_ops": c}) for c in (False, True))
    assert plain.engines[0].cost(s, workload, plain).compute_cycles == 32
    assert chained.engines[0].cost(s, workload, chained).compute_cycles == 16


def test_resident_output_folds_run_behind_one_skew() -> None:
    """Z = A x W, M = N = 512, K = 64 on a 256 x 256 array with Z resident: os (the output is stationary), 2 x 2
    = 4 folds of T = 64 back to back, compute 256, fill/drain one skew R + C - 2 = 510 (single-buffered the
    same folds pay 4 x 510 = 2,040); without registers no resident cost."""
    workload = gemm(512, 512, 64, bits=16)
    fast = Arch.model_validate({
        "name": "t", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 TB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "sram", "technology": "SRAM",
                    "capacity": "16 MiB", "bandwidth": "100 TB/s", "read_energy_per_bit": "1 pJ"}],
        "engines": [{"name": "sa", "kind": "systolic", "rows": 256, "cols": 256, "dataflow": "any",
                     "pe_registers": "32 B", "operand_bits": 16}]})
    engine = fast.engines[0]
    cost = engine.resident_cost(workload.einsums[0], workload, fast, frozenset({"Z"}))
    assert (cost.compute_cycles, cost.fill_drain_cycles) == (256, 510)
    assert cost.total_cycles == pytest.approx(766)
    bare = SystolicEngine(kind="systolic", name="sa", rows=256, cols=256)
    assert bare.resident_cost(workload.einsums[0], workload, fast, frozenset({"Z"})) is None


def test_the_list_schedule_keeps_the_intermediate_in_the_lanes_too() -> None:
    """The list schedule (graphs too large for CP-SAT) takes the same residency: makespan 42 with Y in registers,
    and 82 through the buffer without lane registers, as CP-SAT finds above."""
    fused = list_schedule(build_problem(arch({"lane_registers": "64 B"}), chain()))
    assert (fused.makespan_cycles, fused.buffers[0].placement) == (42, "registers")
    assert [s.resident for s in fused.slots] == [("Y",), ("Y",)]
    assert list_schedule(build_problem(arch(), chain())).makespan_cycles == 82


def pinning(fast_elsewhere: int) -> Problem:
    """t0 writes T (8 B) for t1. On x each takes 10 cycles, 6 and 7 with T in x's registers; on y each takes
    `fast_elsewhere` cycles and T goes through the buffer."""
    def options(fused: int) -> tuple[Option, ...]:
        return (Option("x", 10, 1.0, variants=(Variant(frozenset({"T"}), fused, 0.5, None),)),
                Option("y", fast_elsewhere, 1.0))
    return Problem((Task("t0", options(6)), Task("t1", options(7))), (Buffer("T", 8, "t0", ("t1",), 0),),
                   (("t0", "t1"),), 100, 1.0, None, 0.0, residencies=(Residency("T", "x", ("t0", "t1"), 8),))


def test_the_list_schedule_takes_a_residency_only_where_it_pays() -> None:
    """With y at 12 cycles an einsum, keeping T in x's registers gives 6 + 7 = 13 cycles against 10 + 10 = 20 on x
    or 24 on y: taken. With y at 2, running both on y (4 cycles) beats the 13 that the residency pins them to x
    for: the list schedule without it is kept."""
    kept = list_schedule(pinning(12))
    assert (kept.makespan_cycles, kept.buffers[0].placement, [s.engine for s in kept.slots]) == (13, "registers",
                                                                                                 ["x", "x"])
    left = list_schedule(pinning(2))
    assert (left.makespan_cycles, left.buffers[0].placement, [s.engine for s in left.slots]) == (4, "on_chip",
                                                                                                 ["y", "y"])


def test_the_list_schedule_fuses_flash_attention_as_cp_sat_does() -> None:
    """FlashAttention-2's 1-pass cascade (workloads/flash_attention.einsum.yaml) on the H100 with FA2's mma.sync:
    the list schedule keeps all nine intermediates (scores, statistics, probabilities) in the SMs' registers and
    takes CP-SAT's makespan. Without residency it spilled BQK, SLN and the running sums through HBM: 13,609,040
    cycles against 867,890."""
    work = load_workload(REPO / "workloads" / "flash_attention.einsum.yaml")
    sets = ["execution.kind=scheduled", "execution.time_limit_s=0.5", "engines.sm.instruction=mma.sync"]
    problem = build_problem(load_arch(REPO / "arch_configs" / "gpu" / "h100_sxm5_80gb.yaml", sets), work, "latency")
    listed, solved = list_schedule(problem), solve(problem, "latency", time_limit_s=0.5, addresses=False)
    assert {b.placement for b in listed.buffers} == {"registers"} and len(listed.buffers) == 9
    assert listed.makespan_cycles == solved.makespan_cycles


def test_the_list_schedules_bound_counts_each_einsum_at_its_shortest() -> None:
    """The list schedule's bound (the busiest engine's einsums that run nowhere else) is a lower bound on its
    makespan when residency shortens them: the two-exp chain with lane registers runs 21 + 21 = 42 cycles, and the
    bound counts them at 21 each (42), not at their 41 through the buffer (82)."""
    fused = list_schedule(build_problem(arch({"lane_registers": "64 B"}), chain()))
    assert fused.bound == fused.makespan_cycles == 42


def test_the_list_schedule_fuses_nothing_into_an_einsum_held_on_the_producers_engine() -> None:
    """t0 (x only) writes T, fusible into t1; t1 is fastest on y (9 cycles against 10), but keeping U in x's
    registers for t1 -> t2 holds it on x, where a fused T cannot flow (one engine cannot run both halves at once).
    T therefore stays on chip: t0 10, t1 6, t2 7 cycles on x, makespan 23 at 2 J, which ties the schedule without
    residency (T fused into t1 on y: 4 to 13, t2 13 to 23) at 3 J and wins on energy. Before, T was fused for t1's
    fastest engine, y, and the list schedule found no engine left for t1."""
    resident = frozenset({"U"})
    tasks = (Task("t0", (Option("x", 10, 1.0),)),
             Task("t1", (Option("x", 10, 1.0, variants=(Variant(resident, 6, 0.5, None),)), Option("y", 9, 1.0))),
             Task("t2", (Option("x", 10, 1.0, variants=(Variant(resident, 7, 0.5, None),)),)))
    buffers = (Buffer("T", 8, "t0", ("t1",), 4), Buffer("U", 8, "t1", ("t2",), 0))
    problem = Problem(tasks, buffers, (("t0", "t1"), ("t1", "t2")), 100, 1.0, None, 0.0,
                      residencies=(Residency("U", "x", ("t1", "t2"), 8),))
    fused = list_schedule(problem)
    assert [(b.tensor, b.placement) for b in fused.buffers] == [("T", "on_chip"), ("U", "registers")]
    assert fused.makespan_cycles == 23
