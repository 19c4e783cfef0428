"""The worked example of README "Adding an engine": a new family is one module, one union line and a YAML.

The example family (tests/examples/engines/dot_product.py, DianNao's NFU) goes through the whole pipeline
(`load` -> `evaluate` -> Result) without any change to accel_sim, and its numbers are the hand derivations below
(DianNao arch of dot_product_npu.yaml: Tn = Ti = 16, 0.98 GHz; DRAM 12.8 GB/s, SB 512 B/cycle, NB 64 B/cycle).
The conformance suite runs it through the engine contract beside the shipped engines.
"""
from __future__ import annotations

import pytest
from builders import gemm
from examples.engines import EXAMPLE_ARCHS, load_example_arch

from accel_sim import ConfigError, evaluate

ARCH = EXAMPLE_ARCHS[0]


def test_a_memory_bound_gemm_takes_the_dram_transfer_time() -> None:
    """4 x 48 @ 48 x 64 in 16 bits: compute 4 x ceil(64/16) x ceil(48/16) = 48 cycles; DRAM moves (4x48 + 48x64 +
    4x64) x 2 B = 7,040 B in 7,040 / 12.8e9 x 0.98e9 = 539 cycles; plus 2 pipeline-fill cycles = 541."""
    result = evaluate(load_example_arch(ARCH), gemm(4, 64, 48, bits=16, out_bits=16))
    cost = result.einsums[0].cost
    assert result.einsums[0].engine == "nfu"
    assert cost.compute_cycles == 48
    assert cost.fill_drain_cycles == 2
    assert result.cycles == pytest.approx(2 + 7040 / 12.8e9 * 0.98e9)
    assert result.summary()["cycles_by_bound"] == {"dram": pytest.approx(result.cycles)}


def test_a_large_gemm_is_bound_by_the_synapse_buffer_and_the_multipliers_together() -> None:
    """256 x 256 @ 256 x 64: compute 256 x 4 x 16 = 16,384 cycles; the synapse buffer re-reads the 16,384 weights
    for each of the 256 rows, 8,388,608 B at 512 B/cycle = 16,384 cycles; NB 557,056 B / 64 = 8,704; DRAM
    196,608 B -> 15,052.8 cycles. Nothing stalls: 16,384 + 2 cycles, utilization 16,384 / 16,386."""
    result = evaluate(load_example_arch(ARCH), gemm(256, 64, 256, bits=16, out_bits=16))
    cost = result.einsums[0].cost
    assert cost.compute_cycles == 16_384 and cost.stall_cycles == 0
    assert result.cycles == 16_386
    assert cost.utilization == pytest.approx(16_384 / 16_386)
    assert cost.accesses[("sb", "W", "read")] == 256 * 64 * 256


def test_the_example_family_gets_strict_yaml_errors_like_the_shipped_ones(tmp_path) -> None:  # noqa: ANN001
    """A misspelt field of the new family is a ConfigError naming the key path, as for every shipped engine."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(ARCH.read_text().replace("trees: 16", "treez: 16"))
    with pytest.raises(ConfigError) as caught:
        load_example_arch(bad)
    assert "treez" in str(caught.value) and "engines" in str(caught.value)
