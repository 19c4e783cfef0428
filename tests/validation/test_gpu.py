"""GPU validation (issue 18): GEMM within 15 %, FlashAttention-2 forward within 15 %, decode within 20 % of the
published figures (validation/gpu.py names each source). A row that misses its target is a known gap: it is
listed with its mechanism in `EXPECTED_MISSES` and held here as a strict xfail, so closing the gap is noticed."""
from __future__ import annotations

import pytest

from validation.comparison import Comparison
from validation.gpu import EXPECTED_MISSES, TOLERANCE, rows, within_target


@pytest.fixture(scope="module")
def table() -> dict[str, tuple[str, Comparison]]:
    """Every comparison, by quantity (about 10 s: 45 evaluations)."""
    return {c.quantity: (group, c) for group, c in rows()}


def test_every_row_outside_the_known_gaps_meets_its_target(table) -> None:
    """GEMM and attention within 15 %, decode within 20 %, for every row whose gap is not named in
    EXPECTED_MISSES (about 25 rows: LLMCompass's A100 series, cuBLAS on the H100, FA2's 230 TFLOPs/s on the A100,
    LMDeploy's batch 1 and 16 and its median latencies, gpt-fast)."""
    missed = [f"{c.quantity}: {c.error_pct:+.1f} %" for q, (group, c) in table.items()
              if q not in EXPECTED_MISSES and not within_target(group, c)]
    assert not missed, "\n".join(missed)
    assert sum(q not in EXPECTED_MISSES for q in table) >= 25


def test_each_group_has_rows_within_target(table) -> None:
    """Each group (GEMM, attention, decode) has at least one row that meets its target, on each GPU it covers."""
    met = {(group, q.split()[0]) for q, (group, c) in table.items() if within_target(group, c)}
    assert {("gemm", "A100"), ("gemm", "H100"), ("attention", "A100"), ("decode", "A100")} <= met


@pytest.mark.parametrize("quantity", sorted(EXPECTED_MISSES))
@pytest.mark.xfail(strict=True, reason="a known gap: validation/gpu.py EXPECTED_MISSES names its mechanism")
def test_known_gap(table, quantity: str) -> None:
    """A row outside its target, for the mechanism EXPECTED_MISSES names (strict: passing means the gap closed)."""
    group, comparison = table[quantity]
    assert abs(comparison.error) <= TOLERANCE[group], EXPECTED_MISSES[quantity]
