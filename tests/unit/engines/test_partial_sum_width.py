"""Open partial sums occupy and move at the accumulator width; final values at the output's width.

Fixture, derived by hand: Z[8, 4] = A[8, 8] x W[8, 4], int8, on a 4 x 4 weight-stationary array. The array's rows
take K = 8 in 2 folds and its columns N = 4 in 1, so every output element is visited twice: the first pass
leaves an open partial sum, the second closes it. The engine's accumulators are 32 bits wide (its default: TPU
v1 accumulates int8 products in 32 bits, Jouppi et al., ISCA 2017, Sec. 2), so an open partial sum takes 4 B
where the int8 result takes 1 B; `Cost.accesses` counts the wide ones in int8 elements, 4 each, so that
elements x 8 bits / 8 stays the bytes moved.
"""
from __future__ import annotations

import pytest
from builders import gemm

from accel_sim.energy.components import level_energy_per_bit
from accel_sim.errors import InfeasibleError
from accel_sim.spec.arch import Arch

M, N, K = 8, 4, 8
WIDE = 32 // 8   # int8 elements per 32-bit partial sum


def tpu_like(acc_bytes: int, accumulator_bits: int | None = None, dataflow: str = "ws") -> Arch:
    """DRAM holding weights, inputs and outputs; an SRAM holding only partial sums (as TPU v1's Accumulators)."""
    engine = {"name": "mxu", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": dataflow}
    if accumulator_bits is not None:
        engine["accumulator_bits"] = accumulator_bits
    return Arch.model_validate({
        "name": "psums", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 GB/s",
                    "holds": ["weights", "inputs", "outputs"]},
                   {"name": "acc", "technology": "SRAM", "capacity": f"{acc_bytes} B", "bandwidth": "1000 GB/s",
                    "holds": ["psums"]}],
        "engines": [engine]})


def z_accesses(arch: Arch) -> dict[tuple[str, str], float]:
    """{(level, action): int8 elements} of Z for the fixture on `arch`."""
    work = gemm(M, N, K)
    cost = arch.engines[0].cost(work.einsums[0], work, arch)
    return {(lv, action): n for (lv, t, action), n in cost.accesses.items() if t == "Z"}


def test_open_partial_sums_fit_an_accumulator_memory_of_m_n_4_bytes() -> None:
    """Capacity M x N x 4 = 128 B keeps all 32 open partial sums (resident: 128 B). The level keeps Z only as
    partial sums, so every access to it is 32 bits, the final sums' included (quantized on the way out): writes
    32 (first pass), updates 32 (second), reads 32 read-backs + 32 drained = 64, each 4 int8 elements. DRAM gets
    only the 32 final int8 results."""
    assert z_accesses(tpu_like(M * N * WIDE)) == {
        ("acc", "write"): M * N * WIDE, ("acc", "update"): M * N * WIDE, ("acc", "read"): 2 * M * N * WIDE,
        ("dram", "write"): M * N}


@pytest.mark.parametrize("acc_bytes", [M * N * 1 * 2, M * N * WIDE - 1])
def test_open_partial_sums_spill_below_m_n_4_bytes(acc_bytes: int) -> None:
    """Between M x N x 1 (which held the int8 tile, double-buffered: 64 B) and M x N x 4 - 1 the 32-bit partial sums
    no longer fit: they spill to DRAM. DRAM then writes the first pass's 32 partial sums (128 B), reads them back
    (128 B) and takes the 32 closing results at int8 (32 B): 288 B of Z where the int8 model moved 32."""
    assert z_accesses(tpu_like(acc_bytes, accumulator_bits=8))[("dram", "write")] == M * N   # as before: fits
    got = z_accesses(tpu_like(acc_bytes))
    assert (got[("dram", "write")], got[("dram", "read")], got[("dram", "update")]) == \
        (M * N * WIDE, M * N * WIDE, M * N)


def test_spilled_partial_sums_cost_their_bytes_in_dram_write_energy() -> None:
    """The spill's DRAM writes, 128 B of partial sums and 32 B of results, are charged at DRAM's write energy
    (Z is the only tensor written to DRAM)."""
    arch, work = tpu_like(M * N * WIDE - 1), gemm(M, N, K)
    cost = arch.engines[0].cost(work.einsums[0], work, arch)
    write_j = level_energy_per_bit(arch.memory[0], arch.technology_nm)[1]
    assert cost.energy_j[("dram", "write")] == pytest.approx((M * N * WIDE + M * N) * 8 * write_j, rel=1e-12)


def test_staging_partial_sums_needs_two_cycles_of_32_bit_outputs() -> None:
    """Spilled, the accumulator memory still stages what crosses the array's edge: 4 outputs a cycle (one per
    column), two cycles of them at 4 B = 32 B. At 31 B nothing fits, and the error names the 32 bytes."""
    assert z_accesses(tpu_like(32))[("dram", "update")] == M * N
    with pytest.raises(InfeasibleError, match="need 32 bytes"):
        z_accesses(tpu_like(31))


def shared(dataflow: str) -> Arch:
    """DRAM and one SRAM that holds every role, results as well as partial sums."""
    return Arch.model_validate({
        "name": "shared", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 GB/s"},
                   {"name": "sram", "technology": "SRAM", "capacity": "1 MiB", "bandwidth": "1000 GB/s"}],
        "engines": [{"name": "mxu", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": dataflow}]})


def test_a_level_holding_outputs_keeps_only_open_partial_sums_wide() -> None:
    """The first pass writes 32 partial sums (4 B each) and reads them back, the second writes the 32 closing
    results at int8, which then drain to DRAM at int8: writes 32 x 4, updates 32, reads 32 x 4 + 32."""
    assert z_accesses(shared("ws")) == {("sram", "write"): M * N * WIDE, ("sram", "update"): M * N,
                                        ("sram", "read"): M * N * WIDE + M * N, ("dram", "write"): M * N}


def test_a_reduction_closed_in_the_array_leaves_no_partial_sums_outside_it() -> None:
    """Output-stationary: K streams through the PEs, so each output leaves the array once, final, at int8."""
    assert z_accesses(shared("os")) == {("sram", "write"): M * N, ("sram", "read"): M * N, ("dram", "write"): M * N}


def test_an_accumulator_memory_keeps_even_closed_sums_wide() -> None:
    """Output-stationary into an accumulator memory: no pass is open, but the level holds Z only as 32-bit
    sums (TPU v1's Accumulators), so its 32 writes and 32 reads are 4 B each and its tile needs M x N x 4 B."""
    assert z_accesses(tpu_like(M * N * WIDE, dataflow="os")) == {
        ("acc", "write"): M * N * WIDE, ("acc", "read"): M * N * WIDE, ("dram", "write"): M * N}


@pytest.mark.parametrize("m, n, k", [(M, N, K), (12, 8, 16), (6, 5, 12)])
def test_a_larger_accumulator_memory_never_moves_more_bytes_of_z_to_dram(m: int, n: int, k: int) -> None:
    """Capacity monotonicity with wide partial sums: growing the accumulator memory byte by 8 from 16 B to 1 KiB,
    once a GEMM fits it keeps fitting and the bytes of Z that DRAM moves never grow."""
    work, before = gemm(m, n, k), None
    for acc_bytes in range(16, 1025, 8):
        arch = tpu_like(acc_bytes)
        try:
            cost = arch.engines[0].cost(work.einsums[0], work, arch)
        except InfeasibleError:
            assert before is None, f"fits at fewer bytes than {acc_bytes} but not at {acc_bytes}"
            continue
        moved = sum(e for (lv, t, _), e in cost.accesses.items() if lv == "dram" and t == "Z")
        assert before is None or moved <= before, f"{acc_bytes} B: {moved} > {before}"
        before = moved
    assert before == m * n   # at 1 KiB every case keeps its partial sums on chip: Z leaves once, final
