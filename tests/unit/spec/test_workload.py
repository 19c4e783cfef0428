"""Workload IR: affine indices, einsum classification, footprints, recurrences, the tensor graph."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accel_sim.errors import ConfigError

from accel_sim.spec.workload import Access, Affine, Call, Const, Einsum, Tensor, Workload
from accel_sim.spec.numeric import evaluate_workload


def acc(tensor: str, *indices: Affine | str) -> Access:
    """An access with plain rank names or Affine indices."""
    return Access(tensor, tuple(Affine.rank(i) if isinstance(i, str) else i for i in indices))


def test_affine_value_range_of_a_padded_sliding_window() -> None:
    """2p + r - 1 with P = 4, R = 3 spans -1 .. 2*3 + 2 - 1 = 7."""
    assert Affine((("p", 2), ("r", 1)), -1).value_range({"p": 4, "r": 3}) == (-1, 7)


def test_affine_value_range_with_a_negative_coefficient() -> None:
    """5 - q with Q = 4 spans 2 .. 5."""
    assert Affine((("q", -1),), 5).value_range({"q": 4}) == (2, 5)


def test_distinct_values_of_an_overlapping_window() -> None:
    """p + r with P = 4, R = 3 takes 0..5: 6 values, not 4*3 = 12 (the windows overlap)."""
    assert Affine((("p", 1), ("r", 1))).distinct_values({"p": 4, "r": 3}) == 6


def test_distinct_values_of_a_strided_window_with_gaps() -> None:
    """3p + r with P = 3, R = 2 takes {0,1,3,4,6,7}: 6 values with gaps at 2 and 5."""
    assert Affine((("p", 3), ("r", 1))).distinct_values({"p": 3, "r": 2}) == 6


@settings(max_examples=300, deadline=None)
@given(coefs=st.lists(st.sampled_from((-3, -2, -1, 1, 2, 3, 4)), max_size=3),
       sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3), offset=st.integers(-5, 5),
       extent=st.none() | st.integers(1, 20))
def test_distinct_values_equal_the_enumerated_set(coefs: list[int], sizes: list[int], offset: int,
                                                  extent: int | None) -> None:
    """The closed form (terms that tile a progression) and the enumeration agree with the set of values
    written out by itertools, in bounds of the extent."""
    ranks = ("p", "r", "s")[:len(coefs)]
    index, size_of = Affine(tuple(zip(ranks, coefs)), offset), dict(zip(ranks, sizes))
    spans = itertools.product(*(range(n) for n in sizes[:len(coefs)]))
    values = {offset + sum(c * k for c, k in zip(coefs, ks)) for ks in spans}
    expected = len([v for v in values if extent is None or 0 <= v < extent])
    assert index.distinct_values(size_of, extent) == expected


def test_distinct_values_of_a_huge_rank_need_no_array() -> None:
    """A plain rank of 10^12 values and the window 2p + r over it are counted in closed form (enumerating
    them would allocate 7 TiB)."""
    assert Affine.rank("m").distinct_values({"m": 10**12}) == 10**12
    assert Affine((("p", 2), ("r", 1)), -1).distinct_values({"p": 10**12, "r": 3}, extent=2 * 10**12) == 2 * 10**12


def test_distinct_values_with_gaps_over_huge_ranks_is_a_config_error() -> None:
    """An index with gaps (3p + r, R = 2) over 10^12 positions cannot be enumerated: a ConfigError, no MemoryError."""
    with pytest.raises(ConfigError, match="too many to count"):
        Affine((("p", 3), ("r", 1))).distinct_values({"p": 10**12, "r": 2})


def test_distinct_values_drop_padding_outside_the_extent() -> None:
    """p + r - 1 with P = 4, R = 3 spans -1..5; inside an extent of 4 only 0..3 count."""
    assert Affine((("p", 1), ("r", 1)), -1).distinct_values({"p": 4, "r": 3}, extent=4) == 4


@pytest.mark.parametrize(("affine", "text"), [
    (Affine((("p", 2), ("r", 1)), -3), "2*p+r-3"),
    (Affine((("m1", 1),), 1), "m1+1"),
    (Affine((("q", -1),), 5), "-q+5"),
    (Affine((), 7), "7"),
    (Affine(), "0"),
])
def test_affine_prints_compactly(affine: Affine, text: str) -> None:
    """Coefficients of 1 are implicit, offsets are signed, a constant prints as itself."""
    assert str(affine) == text


def test_contraction_is_a_mac() -> None:
    """Z[m,n] = A[m,k]*B[k,n] summed over k is a contraction: op 'mac', macs = M*N*K = 2*3*4."""
    e = Einsum("Z", acc("Z", "m", "n"), Call("mul", (acc("A", "m", "k"), acc("B", "k", "n"))),
               {"m": 2, "n": 3, "k": 4})
    assert (e.op, e.reduced_ranks, e.macs, e.ops) == ("mac", ("k",), 24, 24)


def test_elementwise_product_is_not_a_mac() -> None:
    """Z[m] = A[m]*B[m] reduces nothing: op 'mul', zero MACs, M = 5 ops."""
    e = Einsum("Z", acc("Z", "m"), Call("mul", (acc("A", "m"), acc("B", "m"))), {"m": 5})
    assert (e.op, e.reduced_ranks, e.macs, e.ops) == ("mul", (), 0, 5)


def test_max_reduction_op_and_ops() -> None:
    """GM[p] = max over m of QK[m,p]: op 'max', one reduction step per point = M*P = 4*3 ops."""
    e = Einsum("GM", acc("GM", "p"), acc("QK", "m", "p"), {"p": 3, "m": 4}, reduce="max")
    assert (e.op, e.reduced_ranks, e.ops) == ("max", ("m",), 12)


def test_map_with_reduction_counts_both() -> None:
    """VAR[p] = sum_d square(X[d,p]): 1 map op + 1 reduction step per point, D*P = 6*2 points -> 24 ops."""
    e = Einsum("VAR", acc("VAR", "p"), Call("square", (acc("X", "d", "p"),)), {"p": 2, "d": 6})
    assert (e.op, e.ops) == ("square", 24)


def test_recurrence_rank_is_the_shifted_rank() -> None:
    """RM[m1+1,p] = max(RM[m1,p], LM[m1,p]) steps along m1 and reduces nothing."""
    e = Einsum("RM", acc("RM", Affine((("m1", 1),), 1), "p"),
               Call("max", (acc("RM", "m1", "p"), acc("LM", "m1", "p"))), {"m1": 3, "p": 2})
    assert (e.recurrence_rank, e.reduced_ranks) == ("m1", ())


def test_no_recurrence_without_a_self_read() -> None:
    """An einsum that does not read its output has no recurrence rank."""
    e = Einsum("Y", acc("Y", "m"), Call("exp", (acc("X", "m"),)), {"m": 3})
    assert e.recurrence_rank is None


def test_footprint_of_a_strided_1x1_conv_is_a_quarter_of_the_input() -> None:
    """O[p,q] = I[2p,2q] * W with P = Q = 4 on an 8x8 input touches 16 of 64 elements (stride 2 in both)."""
    e = Einsum("O", acc("O", "p", "q"),
               Call("mul", (acc("I", Affine((("p", 2),)), Affine((("q", 2),))), acc("W", "c"))),
               {"p": 4, "q": 4, "c": 1})
    image = Tensor("I", ("H", "W"), (8, 8))
    assert e.footprint(e.inputs[0], image) == 16 == image.elements // 4


def test_footprint_of_a_padded_3x3_conv_counts_only_in_bounds_elements() -> None:
    """I[p+r-1, q+s-1] with P = Q = 4, R = S = 3 on a 4x4 input: reads span -1..4, all 16 in-bounds are used."""
    e = Einsum("O", acc("O", "p", "q"),
               Call("mul", (acc("I", Affine((("p", 1), ("r", 1)), -1), Affine((("q", 1), ("s", 1)), -1)),
                            acc("W", "r", "s"))),
               {"p": 4, "q": 4, "r": 3, "s": 3})
    assert e.footprint(e.inputs[0], Tensor("I", ("H", "W"), (4, 4))) == 16


def test_tensor_bytes_pack_sub_byte_widths() -> None:
    """A 4-bit 3x5 tensor holds 15 elements in 7.5 bytes."""
    t = Tensor("W", ("K", "N"), (3, 5), bits=4)
    assert (t.elements, t.bytes) == (15, 7.5)


def test_einsum_prints_infix_with_minimal_parentheses() -> None:
    """(A - B) * C keeps its parentheses, A - (B - C) too, A * B + C needs none; the reduce prefix shows."""
    a, b, c = acc("A", "m"), acc("B", "m"), acc("C", "m")
    sizes = {"m": 2}
    assert str(Einsum("Z", acc("Z", "m"), Call("mul", (Call("sub", (a, b)), c)), sizes)) == "Z[m] = (A[m] - B[m]) * C[m]"
    assert str(Einsum("Z", acc("Z", "m"), Call("sub", (a, Call("sub", (b, c)))), sizes)) == "Z[m] = A[m] - (B[m] - C[m])"
    assert str(Einsum("Z", acc("Z", "m"), Call("add", (Call("mul", (a, b)), c)), sizes)) == "Z[m] = A[m] * B[m] + C[m]"
    assert str(Einsum("G", acc("G"), acc("A", "m"), sizes, reduce="max")) == "G[] = max: A[m]"


def test_constants_print_as_integers_or_floats() -> None:
    """2.0 prints '2', 0.5 '0.5', -inf '-inf'."""
    assert [str(Const(2.0)), str(Const(0.5)), str(Const(-np.inf))] == ["2", "0.5", "-inf"]


def _two_step_workload() -> Workload:
    """X -> Y = exp(X) -> Z = sum_m Y."""
    e1 = Einsum("Y", acc("Y", "m"), Call("exp", (acc("X", "m"),)), {"m": 3})
    e2 = Einsum("Z", acc("Z"), acc("Y", "m"), {"m": 3})
    tensors = (Tensor("X", ("M",), (3,)), Tensor("Y", ("M",), (3,)), Tensor("Z", (), ()))
    return Workload("two", tensors, (e1, e2))


def test_graph_links_tensors_through_einsums_named_like_their_outputs() -> None:
    """Einsums named after their outputs ('Y' writes Y) stay distinct nodes: X -> einsum:Y -> Y -> einsum:Z -> Z."""
    w = _two_step_workload()
    assert set(w.graph.edges) == {("X", "einsum:Y"), ("einsum:Y", "Y"), ("Y", "einsum:Z"), ("einsum:Z", "Z")}
    assert w.graph.nodes["Y"]["type"] == "tensor" and w.graph.nodes["einsum:Y"]["type"] == "einsum"


def test_producers_map_tensors_to_their_einsums() -> None:
    """Y is written by einsum 'Y', Z by 'Z'; the input X has no producer."""
    assert _two_step_workload().producers() == {"Y": "Y", "Z": "Z"}


def test_evaluate_numpy_runs_einsums_in_order() -> None:
    """Z = sum(exp(X)) for X = [0, 1, 2] is 1 + e + e^2."""
    out = evaluate_workload(_two_step_workload(), {"X": np.array([0.0, 1.0, 2.0])})
    assert out["Z"] == pytest.approx(1 + np.e + np.e**2)


def test_evaluate_numpy_running_max_is_a_prefix_max() -> None:
    """RM[m+1] = max(RM[m], X[m]) from RM[0] = -inf gives the prefix maxima of X."""
    e = Einsum("RM", acc("RM", Affine((("m", 1),), 1)), Call("max", (acc("RM", "m"), acc("X", "m"))), {"m": 4})
    w = Workload("scan", (Tensor("X", ("M",), (4,)), Tensor("RM", ("M",), (5,), init=-np.inf)), (e,))
    out = evaluate_workload(w, {"X": np.array([1.0, 3.0, 2.0, 5.0])})
    np.testing.assert_array_equal(out["RM"], [-np.inf, 1.0, 3.0, 3.0, 5.0])


def test_evaluate_numpy_reads_outside_a_tensor_as_zero() -> None:
    """Y[p] = sum_r X[p+r-1] with R = 3 on X = [1,2,3] is [0+1+2, 1+2+3, 2+3+0] (zero padding)."""
    e = Einsum("Y", acc("Y", "p"), acc("X", Affine((("p", 1), ("r", 1)), -1)), {"p": 3, "r": 3})
    w = Workload("pad", (Tensor("X", ("P",), (3,)), Tensor("Y", ("P",), (3,))), (e,))
    np.testing.assert_array_equal(evaluate_workload(w, {"X": np.array([1.0, 2.0, 3.0])})["Y"], [3.0, 6.0, 5.0])


def test_distinct_contractions_of_resnet18_by_hand() -> None:
    """ResNet-18: 20 convolutions + 1 fc = 21 contractions; distinct shapes: the 7x7 stem, per stage 2..5 a 3x3
    (stride 1), and for stages 3..5 a strided 3x3 and a 1x1 downsample (1 + 4 + 3 + 3 = 11), plus the fc = 12."""
    from accel_sim.zoo import build

    workload = build("resnet18")
    distinct = workload.distinct_contractions()
    assert len(distinct) == 12
    assert sum(count for _, count in distinct) == 21
    assert distinct[0][0] is workload.einsums[0]  # workload order: the stem comes first
