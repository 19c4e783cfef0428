"""FlightLLM validation (issue: prefill and decode within 15% of the published VHK158 figures)."""
from __future__ import annotations

from validation.flightllm import rows


def test_flightllm_vhk158_within_15_percent() -> None:
    """Prefill (289.9 ms) and decode (9.66 ms/token) of LLaMA2-7B batch 1, FlightLLM demo profile/README.md."""
    by_name = {r.quantity: r for r in rows()}
    assert abs(by_name["VHK158 prefill 128 tokens (ms)"].error_pct) <= 15
    assert abs(by_name["VHK158 decode (ms/token)"].error_pct) <= 15


def test_flightllm_u280_on_board_within_measured_margin() -> None:
    """U280 on-board 55 tokens/s (demo README): the FlightLLM-like config is a different netlist; we measured
    +26% and assert within 35% (a margin we chose, not the issue's), so a regression shows."""
    by_name = {r.quantity: r for r in rows()}
    assert abs(by_name["U280 on-board decode (tokens/s)"].error_pct) <= 35
