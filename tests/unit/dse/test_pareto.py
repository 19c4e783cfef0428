"""Pareto mask, hypervolume and knee point against hand-derived values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel_sim.dse.pareto import hypervolume, hypervolume_by_round, knee_point, pareto_front, pareto_mask


def test_dominated_points_are_dropped() -> None:
    """(3, 3) is dominated by (2, 2); the other three trade off (checked by hand)."""
    assert pareto_mask(np.array([[1, 4], [2, 2], [3, 3], [4, 1]])).tolist() == [True, True, False, True]


def test_equal_points_both_stay_on_the_front() -> None:
    """Two identical points do not dominate each other (domination needs one strict improvement)."""
    assert pareto_mask(np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]])).tolist() == [True, True, False]


def test_mask_matches_brute_force_in_three_objectives() -> None:
    """The sorted single pass equals the O(n^2) definition on 300 random 3-objective points."""
    rng = np.random.default_rng(0)
    pts = rng.integers(0, 20, size=(300, 3)).astype(float)
    brute = [not any(np.all(q <= p) and np.any(q < p) for q in pts) for p in pts]
    assert pareto_mask(pts).tolist() == brute


def test_hypervolume_of_a_staircase_in_two_objectives() -> None:
    """Points (1,2), (2,1) with reference (3,3): union of boxes 2x1 and 1x2 overlapping in 1x1 = 3."""
    assert hypervolume(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([3.0, 3.0])) == pytest.approx(3.0)


def test_hypervolume_in_three_objectives_by_inclusion_exclusion() -> None:
    """Boxes from (0,0,1) and (1,0,0) to (2,2,2): 2*2*1 + 1*2*2 - 1*2*1 = 6 (inclusion-exclusion)."""
    assert hypervolume(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]), np.array([2.0, 2.0, 2.0])) == pytest.approx(6.0)


def test_hypervolume_ignores_points_beyond_the_reference() -> None:
    """A point worse than the reference in one objective adds no volume."""
    assert hypervolume(np.array([[1.0, 5.0]]), np.array([3.0, 3.0])) == 0.0


def test_knee_is_the_point_farthest_inside_the_chord() -> None:
    """Front (0,10), (1,2), (10,0): the chord x/10 + y/10 = 1; (1,2) lies farthest below it."""
    assert knee_point(np.array([[0.0, 10.0], [1.0, 2.0], [10.0, 0.0]])) == 1


def test_pareto_front_negates_max_objectives() -> None:
    """Maximizing throughput while minimizing energy keeps (fast, cheap) and drops (slow, costly)."""
    frame = pd.DataFrame({"throughput": [10.0, 5.0, 8.0], "energy": [1.0, 2.0, 0.5]})
    front = pareto_front(frame, {"throughput": "max", "energy": "min"})
    assert sorted(front.index) == [0, 2]
    assert front["knee"].sum() == 1


def test_hypervolume_by_round_grows_to_the_whole_front() -> None:
    """Round 1 finds (2, 2): area (3-2)(3-2) = 1; round 2 adds (1, 2) and (2, 1): the staircase to (3, 3) is 3;
    round 3 adds a dominated point and nothing else: still 3. The last value is the hypervolume of all points."""
    points = np.array([[2.0, 2.0], [1.0, 2.0], [2.0, 1.0], [2.5, 2.5]])
    rounds, volumes = hypervolume_by_round(points, np.array([1, 2, 2, 3]), np.array([3.0, 3.0]))
    assert rounds == [1, 2, 3] and volumes == [1.0, 3.0, 3.0]
    assert volumes[-1] == hypervolume(points, np.array([3.0, 3.0]))
