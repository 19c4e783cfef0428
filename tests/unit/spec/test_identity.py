"""IdentityMemo: a value per object identity (and extra key), computed once, forgotten when full."""
from __future__ import annotations

from accel_sim.spec.identity import IdentityMemo


def test_a_value_is_computed_once_per_object_and_extra_key_and_equal_objects_are_apart() -> None:
    """Two equal but distinct lists get a value each; the same list with another extra key too; a full memo
    starts again."""
    calls: list[int] = []
    memo = IdentityMemo(limit=3)
    a, b = [1], [1]

    def compute(x: list[int], scale: int) -> int:
        calls.append(x[0] * scale)
        return x[0] * scale

    assert memo.get((a,), lambda: compute(a, 2), (2,)) == 2
    assert memo.get((a,), lambda: compute(a, 2), (2,)) == 2
    assert memo.get((b,), lambda: compute(b, 2), (2,)) == 2
    assert memo.get((a,), lambda: compute(a, 3), (3,)) == 3
    assert calls == [2, 2, 3]
    memo.get((a,), lambda: compute(a, 5), (5,))   # the fourth entry: the memo was full and starts again
    memo.get((a,), lambda: compute(a, 2), (2,))
    assert calls == [2, 2, 3, 5, 2]
