"""A map's output (an einsum that reduces no rank) has no partial sums: it is never kept at a level that holds only
partial sums (TPU v1's Accumulators), while a contraction's output still drains through it."""
from __future__ import annotations

from pathlib import Path

from builders import elementwise_exp, gemm

from accel_sim import load_arch
from accel_sim.evaluate import evaluate

TPU_V1 = Path(__file__).parents[3] / "arch_configs" / "tpu_v1.yaml"


def test_a_map_writes_results_and_a_contraction_outputs() -> None:
    """Roles: exp's Y is 'results', the GEMM's Z 'outputs'; the accumulators keep Z, not Y; the Unified Buffer
    keeps both."""
    arch = load_arch(TPU_V1)
    acc = next(lv for lv in arch.memory if lv.name == "accumulators")
    ub = next(lv for lv in arch.memory if lv.name == "unified_buffer")
    mapped, contracted = elementwise_exp(1024), gemm(64, 64, 64)
    assert mapped.roles(mapped.einsums[0])["Y"] == "results"
    assert contracted.roles(contracted.einsums[0])["Z"] == "outputs"
    assert not acc.keeps("results", "Y") and acc.keeps("outputs", "Z")
    assert ub.keeps("results", "Y") and ub.keeps("outputs", "Z")


def test_an_elementwise_einsum_moves_nothing_through_the_accumulators() -> None:
    """exp over 1,024 16-bit values on TPU v1: 1,024 elements read and 1,024 written at the Unified Buffer (by
    hand: each element once), none at the accumulators, which hold partial sums only."""
    result = evaluate(load_arch(TPU_V1), elementwise_exp(1024))
    accesses = result.einsums[0].cost.accesses
    by_level = {}
    for (level, _tensor, _direction), count in accesses.items():
        by_level[level] = by_level.get(level, 0) + count
    assert by_level.get("accumulators", 0) == 0
    assert by_level["unified_buffer"] == 2 * 1024
