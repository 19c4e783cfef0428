"""Unit strings become SI numbers."""
from __future__ import annotations

import pytest

from accel_sim.units import parse_bits, parse_quantity


@pytest.mark.parametrize(("text", "dimension", "expected"), [
    ("24 MiB", "bytes", 24 * 2**20),
    ("64KiB", "bytes", 65536),
    ("8 GB", "bytes", 8e9),
    ("512 Kb", "bytes", 64e3),
    ("700 MHz", "frequency", 700e6),
    ("0.6 pJ", "energy", 0.6e-12),
    ("900 GB/s", "bandwidth", 900e9),
    ("34 GB/s", "bandwidth", 34e9),
    ("10 ns", "time", 10e-9),
    ("331 mm2", "area", 331e-6),
    (1.5e9, "frequency", 1.5e9),
    ("1e3 Hz", "frequency", 1e3),
])
def test_quantity_to_si(text, dimension, expected) -> None:
    """Decimal and binary prefixes scale by 1000 and 1024 respectively."""
    assert parse_quantity(text, dimension) == pytest.approx(expected)


def test_unknown_unit_lists_valid_ones() -> None:
    """A unit of the wrong dimension is rejected with the valid units."""
    with pytest.raises(ValueError, match="unknown bandwidth unit 'MHz'.*GB/s"):
        parse_quantity("700 MHz", "bandwidth")


def test_garbage_is_rejected_with_an_example() -> None:
    """Text that is not a number and unit names an example."""
    with pytest.raises(ValueError, match="'24 MiB'"):
        parse_quantity("lots", "bytes")


@pytest.mark.parametrize(("dtype", "bits"), [("int4", 4), ("int8", 8), ("bf16", 16), ("fp32", 32), (2, 2), ("3", 3)])
def test_dtype_bits(dtype, bits) -> None:
    """Dtype names and plain integers give bit widths."""
    assert parse_bits(dtype) == bits


def test_bad_dtype() -> None:
    """Unknown dtypes and non-positive widths are errors."""
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_bits("int5x")
    with pytest.raises(ValueError, match="positive"):
        parse_bits(0)
