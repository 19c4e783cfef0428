"""The one number formatter and the headline sentence: each expected string worked out by hand."""
from __future__ import annotations

import pytest

from accel_sim.reports.format import (bytes_format, cycles_format, format_metric, metric_label, param_text, percent,
                                      si_format, significant)
from accel_sim.reports.headline import bound_sentence, headline_numbers


@pytest.mark.parametrize(("value", "unit", "text"), [
    (4.59e13, "op/s", "45.9 Top/s"),     # 45.9e12
    (6.99e-6, "s", "6.99 µs"),
    (2.05e-4, "J", "205 µJ"),
    (1.53e-12, "J/MAC", "1.53 pJ/MAC"),
    (1.43e5, "inferences/s", "143 k inferences/s"),   # a word unit keeps a space after the prefix
    (999.96e3, "op/s", "1 Mop/s"),       # rounding to 3 digits carries into the next prefix
    (0, "B", "0 B"),
    (12, "", "12"),
])
def test_si_format(value: float, unit: str, text: str) -> None:
    """SI prefix, 3 significant digits, trailing zeros dropped."""
    assert si_format(value, unit) == text


@pytest.mark.parametrize(("value", "text"), [(16 * 2**20, "16 MiB"), (1536, "1.5 KiB"), (100, "100 B"),
                                             (384 * 1024, "384 KiB"), (8 * 2**30, "8 GiB"), (0, "0 B")])
def test_bytes_take_binary_prefixes(value: float, text: str) -> None:
    """A 16 MiB buffer reads 16 MiB, not 16.8 MB."""
    assert bytes_format(value) == text


@pytest.mark.parametrize(("value", "text"), [(286.865234, "287"), (6574.0, "6,574"), (2.748e8, "275 M"), (30.9, "31")])
def test_cycles_are_whole(value: float, text: str) -> None:
    """No fractional cycle counts; thousands separated; millions with a prefix."""
    assert cycles_format(value) == text


@pytest.mark.parametrize(("value", "text"), [(0.3103, "31.0 %"), (0.0003818, "0.038 %"), (1.0, "100.0 %")])
def test_percent(value: float, text: str) -> None:
    """One decimal; a share under 0.1 % keeps two significant digits instead of reading 0.0 %."""
    assert percent(value) == text


@pytest.mark.parametrize(("key", "value", "text"), [
    ("cycles", 2.748e8, "275 M"), ("mac_utilization", 0.0003818, "0.038 %"), ("published_area_mm2", None, "–"),
    ("replay_gap_flagged", False, "no"), ("latency_s", 0.0185, "18.5 ms"), ("global_buffer_bytes", 4.2e6, "4.01 MiB"),
    ("cycles_over_roofline", 1.954, "1.95×"), ("tokens_per_s", 54.2, "54.2 tokens/s"), ("area_mm2", 0.0123, "0.0123 mm²"), ("area_mm2", 0.00678, "6,780 µm²"),
    ("einsums", 10, "10"), ("policy", "neupims", "neupims")])
def test_format_metric_takes_the_unit_from_the_name(key: str, value: object, text: str) -> None:
    """The raw summary.json values the issue lists come out with units: no 2.748e+08, no None, no False."""
    assert format_metric(key, value) == text


def test_metric_labels() -> None:
    """Units leave the label; known fields get a name."""
    assert [metric_label(k) for k in ("latency_s", "global_buffer_bytes", "compute_cycles", "mac_utilization")] == \
        ["latency", "global_buffer bytes", "compute cycles", "MAC utilization"]


def test_significant_never_uses_exponents() -> None:
    """3 significant digits, plain notation."""
    assert [significant(v) for v in (0.000123, 1234.0, 12.345, -0.5, 1e-9)] == ["0.000123", "1,234", "12.3", "-0.5",
                                                                                 "0.000000001"]


def test_parameter_ticks_keep_their_dimension() -> None:
    """A swept capacity given as '4 MiB' reads '4 MiB' on an axis, not 4.19e+06."""
    assert param_text("memory.global_buffer.capacity", 4 * 2**20, "bytes") == "4 MiB"
    assert param_text("engines.pe_array.rows", 128.0) == "128"
    assert param_text("latency_s", 0.0012) == "1.2 ms"


SUMMARY = {"cycles_by_bound": {"weight_memory": 99.0, "compute": 1.0},
           "energy_by_component_j": {"weight_memory": 0.94, "mac": 0.06},
           "latency_s": 0.02, "throughput_per_s": 50.0, "throughput_unit": "tokens/s", "energy_j": 2.0,
           "total_macs": 1e9, "area_mm2": 331.0, "mac_utilization": 0.25}


def test_bound_sentence_names_the_level_its_bandwidth_and_the_energy() -> None:
    """99 of 100 cycles bound by weight_memory (34 GB/s), 0.94 of 1 J in it."""
    assert bound_sentence(SUMMARY, {"weight_memory": 34e9}) == \
        "99 % of einsum cycles are bound by weight_memory (34 GB/s); 94 % of energy is in weight_memory."


def test_bound_sentence_for_compute() -> None:
    """Compute has no bandwidth to quote."""
    summary = {**SUMMARY, "cycles_by_bound": {"compute": 3.0, "dram": 1.0}}
    assert bound_sentence(summary, {"dram": 1e9}).startswith("75 % of einsum cycles are bound by compute;")


def test_headline_numbers() -> None:
    """One run of 0.02 s at 50 tokens/s is 1 token: 2 J per token; 2 J / 1e9 MAC = 2 nJ/MAC."""
    assert headline_numbers(SUMMARY) == [("latency", "20 ms"), ("throughput", "50 tokens/s"),
                                         ("energy per token", "2 J"), ("energy per MAC", "2 nJ/MAC"),
                                         ("modelled area", "331 mm²"), ("MAC utilization", "25.0 %")]
