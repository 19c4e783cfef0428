"""split_rank: a cascade cut into independent tiles along one output rank, shared inputs kept once."""
from __future__ import annotations

import numpy as np
import pytest

from accel_sim.schedule.tiling import split_rank
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload
from accel_sim.spec.numeric import evaluate_workload

R = Affine.rank


def attention_like(m: int = 8, p: int = 4, e: int = 2) -> Workload:
    """S[m,p] = Q[e,p] * K[e,m]; G[p] = max over m of S; N[m,p] = exp(S[m,p] - G[p])."""
    s = Einsum("S", Access("S", (R("m"), R("p"))),
               Call("mul", (Access("Q", (R("e"), R("p"))), Access("K", (R("e"), R("m"))))), {"m": m, "p": p, "e": e})
    g = Einsum("G", Access("G", (R("p"),)), Access("S", (R("m"), R("p"))), {"m": m, "p": p}, "max")
    n = Einsum("N", Access("N", (R("m"), R("p"))),
               Call("exp", (Call("sub", (Access("S", (R("m"), R("p"))), Access("G", (R("p"),)))),)), {"m": m, "p": p})
    tensors = (Tensor("Q", ("E", "P"), (e, p)), Tensor("K", ("E", "M"), (e, m)), Tensor("S", ("M", "P"), (m, p)),
               Tensor("G", ("P",), (p,)), Tensor("N", ("M", "P"), (m, p)))
    return Workload("att", tensors, (s, g, n))


def test_tiles_copy_the_cascade_on_slices() -> None:
    """Two tiles of p = 4: six einsums (S, G, N per tile) of half the points; K is shared, Q is sliced."""
    tiled = split_rank(attention_like(), "p", 2)
    assert [e.name for e in tiled.einsums] == ["S@0", "G@0", "N@0", "S@1", "G@1", "N@1"]
    assert tiled.einsum("S@1").sizes == {"m": 8, "p": 2, "e": 2}
    assert tiled.tensor("Q@0").shape == (2, 2) and tiled.tensor("K").shape == (2, 8)
    assert "K@0" not in tiled.tensor_map
    assert tiled.total_macs == attention_like().total_macs


def test_tiles_compute_the_same_values() -> None:
    """Evaluated with numpy, the tiles' N slices concatenated along p equal the untiled N."""
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 4)), rng.normal(size=(2, 8))
    whole = evaluate_workload(attention_like(), {"Q": q, "K": k})["N"]
    tiled = evaluate_workload(split_rank(attention_like(), "p", 2), {"Q@0": q[:, :2], "Q@1": q[:, 2:], "K": k})
    assert np.allclose(np.concatenate([tiled["N@0"], tiled["N@1"]], axis=1), whole)


def test_reduced_rank_cannot_be_split() -> None:
    """m is reduced by G: splitting it would need partial maxima, so it is refused."""
    with pytest.raises(ValueError, match="reduces over 'm'"):
        split_rank(attention_like(), "m", 2)


def test_indivisible_size_is_refused() -> None:
    """p = 4 does not split into 3 equal tiles."""
    with pytest.raises(ValueError, match="not divisible"):
        split_rank(attention_like(), "p", 3)

