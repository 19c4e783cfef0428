"""tests/conftest.py makes pytest.approx relative unless a test gives `abs`: pytest keeps an absolute tolerance of
1e-12 beside `rel`, under which any two picojoule energies compare equal."""
from __future__ import annotations

import pytest


def test_picojoule_energies_that_differ_by_ten_percent_are_not_approximately_equal() -> None:
    """1.765 pJ vs 1.598 pJ at rel=1e-9 (and at the default rel) are different numbers."""
    assert 1.765e-12 != pytest.approx(1.598e-12, rel=1e-9)
    assert 1.765e-12 != pytest.approx(1.598e-12)
    assert 1.765e-12 == pytest.approx(1.765e-12 * (1 + 1e-7))


def test_zero_and_an_explicit_abs_keep_their_absolute_tolerance() -> None:
    """An expected exact zero keeps pytest's default absolute tolerance, and a given `abs` is used as given."""
    assert 1e-13 == pytest.approx(0.0)
    assert 1.0 == pytest.approx(1.05, abs=0.1)
    assert [1e-13, 2.0] != pytest.approx([0.0, 2.0])   # inside a sequence zero is compared relatively too
