"""Einsum-cascade files: text <-> Workload round trips, numerics against numpy, MAC counts, errors."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.signal import correlate2d

from accel_sim.errors import ConfigError
from accel_sim.io.einsum import (dump_cascade, format_einsum, load_einsum_file, parse_cascade, parse_einsum,
                                 undefined_part)
from accel_sim.io.yaml import parse_yaml
from accel_sim.spec.workload import MAP_OPS, Access, Affine, Call, Const, Einsum, Tensor, View, Workload
from accel_sim.spec.numeric import evaluate_workload
from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_arch, load_workload

REPO = Path(__file__).resolve().parents[3]
WORKLOADS = sorted((REPO / "workloads").glob("*.einsum.yaml"))
BAD = sorted((REPO / "tests" / "data" / "bad").glob("einsum_*.einsum.yaml"))


def cascade(text: str, sizes_override: dict[str, int] | None = None) -> Workload:
    """Parse cascade YAML text given inline."""
    return parse_cascade(parse_yaml(text, "inline.einsum.yaml"), sizes_override)


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """AV[f,p] = sum_m V[f,m] softmax_m(sum_e Q[e,p] K[e,m]), written directly with numpy."""
    scores = k.T @ q
    weights = np.exp(scores - scores.max(axis=0))
    return v @ (weights / weights.sum(axis=0))


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------
def test_every_shipped_cascade_is_found() -> None:
    """The seven shipped cascades exist (guards the parametrized tests below against an empty glob)."""
    names = {p.name.removesuffix(".einsum.yaml") for p in WORKLOADS}
    assert {"gemm", "conv2d", "mlp", "attention_3pass", "attention_1pass", "gqa", "layernorm"} <= names


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_parse_dump_parse_is_identity(path: Path) -> None:
    """parse(dump(parse(file))) == parse(file), compared with == on the frozen dataclasses."""
    workload = load_einsum_file(path)
    assert parse_cascade(parse_yaml(dump_cascade(workload), "dumped")) == workload


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_dump_is_a_fixed_point(path: Path) -> None:
    """Dumping the re-parsed dump gives the same text, byte for byte."""
    text = dump_cascade(load_einsum_file(path))
    assert dump_cascade(parse_cascade(parse_yaml(text, "dumped"))) == text


def test_dump_prints_einsum_text_with_minimal_parentheses() -> None:
    """The printer writes 'exp(QK[m,p] - GM[p])', not 'exp((QK[m,p] - GM[p]))', and quotes 'max:' lines."""
    text = dump_cascade(load_einsum_file(REPO / "workloads" / "attention_3pass.einsum.yaml"))
    assert "  - SN[m,p] = exp(QK[m,p] - GM[p])\n" in text
    assert '  - "GM[p] = max: QK[m,p]"\n' in text


def test_named_einsum_round_trips_in_mapping_form() -> None:
    """An einsum whose name differs from its output is dumped as {name:, expr:} and reads back equal."""
    w = cascade("ranks: {m: 2}\neinsums:\n  - {name: act, expr: 'Y[m] = relu(X[m])'}\n")
    assert w.einsums[0].name == "act"
    text = dump_cascade(w)
    assert '{name: act, expr: "Y[m] = relu(X[m])"}' in text
    assert cascade(text) == w


def test_name_defaults_to_the_file_stem() -> None:
    """Without 'name:', the workload is named after the file minus '.einsum.yaml'."""
    doc = parse_yaml("ranks: {m: 2}\neinsums: ['Y[m] = X[m]']\n", "some/dir/my_net.einsum.yaml")
    assert parse_cascade(doc).name == "my_net"


_LEAVES = st.one_of(
    st.sampled_from([Access("A", (Affine.rank("m"),)), Access("B", (Affine.rank("m"), Affine.rank("k"))),
                     Access("A", (Affine((("m", 2),), -1),))]),
    st.builds(Const, st.sampled_from([0.0, 1.0, -1.0, 2.5, -0.125, 1e-05, math.inf, -math.inf, 3e20])),
)
_EXPRS = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        st.builds(lambda op, a, b: Call(op, (a, b)), st.sampled_from(["add", "sub", "mul", "div", "max", "pow"]),
                  children, children),
        st.builds(lambda op, a: Call(op, (a,)), st.sampled_from(["exp", "neg", "relu", "not"]), children),
        st.builds(lambda a, b: Call("and", (a, b)), children, children),
        st.builds(lambda a, b, c: Call("where", (a, b, c)), children, children, children),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(expr=_EXPRS, reduce=st.sampled_from(["sum", "max", "min", "prod"]))
def test_any_expression_tree_prints_and_parses_back(expr, reduce) -> None:
    """format_einsum then parse_einsum is the identity on random trees (precedence, signs, inf, keyword ops) that
    are defined (a constant divisor of zero or a nan constant is refused: test_undefined_constants_are_refused)."""
    assume(undefined_part(expr) is None)
    sizes = {"m": 3, "k": 2}
    output = Access("Z", (Affine.rank("m"),))
    ranks = dict.fromkeys(output.ranks)
    for acc in _accesses(expr):
        ranks.update(dict.fromkeys(acc.ranks))
    einsum = Einsum("Z", output, expr, tuple((r, sizes[r]) for r in ranks),
                    reduce if "k" in ranks else "sum")
    assert parse_einsum(format_einsum(einsum), sizes) == einsum


@pytest.mark.parametrize("text, problem", [
    ("Z[m] = A[m] / 0", "divides by zero"), ("Z[m] = A[m] % (M - 3)", "divides by zero"),
    ("Z[m] = A[m] * log(0)", "divide by zero encountered"), ("Z[m] = A[m] + sqrt(2 - 3)", "invalid value"),
    ("Z[m] = A[m] * (inf - inf)", "invalid value")])
def test_undefined_constants_are_refused(text, problem) -> None:
    """An expression undefined for every element whatever A holds gets a ConfigError naming the part."""
    with pytest.raises(ConfigError, match=problem):
        parse_einsum(text, {"m": 3})


def test_constants_that_overflow_or_reach_inf_are_values() -> None:
    """exp of a large constant is inf in floating point, and max(-inf, 1) is 1: both are values, not errors."""
    einsum = parse_einsum("Z[m] = A[m] * exp(1000) + max(-inf, 1) + A[m] / 2", {"m": 3})
    assert einsum.output.tensor == "Z"


def _accesses(expr):
    if isinstance(expr, Access):
        return (expr,)
    if isinstance(expr, Call):
        return tuple(a for arg in expr.args for a in _accesses(arg))
    return ()


# ---------------------------------------------------------------------------------------------
# Einsum text
# ---------------------------------------------------------------------------------------------
def test_affine_indices_parse_to_coefficients_and_offsets() -> None:
    """'2*p + r - 3' is 2p + r - 3; 'm1*M0 + m0' uses M0 = size of m0 (4) as the coefficient."""
    e = parse_einsum("O[p,m1] = I[2*p + r - 3] * K[m1*M0 + m0]", {"p": 5, "r": 3, "m1": 2, "m0": 4})
    i_access, k_access = e.inputs
    assert i_access.indices == (Affine((("p", 2), ("r", 1)), -3),)
    assert k_access.indices == (Affine((("m1", 4), ("m0", 1)), 0),)


def test_upper_case_rank_is_its_size_as_an_index() -> None:
    """RNV[f,M1,p] reads index M1 = 3, the last step of a recurrence over m1 (size 3)."""
    e = parse_einsum("AV[f,p] = RNV[f,M1,p] / RD[M1,p]", {"f": 2, "p": 2, "m1": 3})
    assert e.inputs[0].indices[1] == Affine((), 3)
    assert dict(e.rank_sizes) == {"f": 2, "p": 2}


def test_upper_case_rank_is_its_size_as_a_value() -> None:
    """'X[d,p] / D' divides by the size of d (768)."""
    e = parse_einsum("MU[p] = X[d,p] / D", {"d": 768, "p": 4})
    assert e.expr == Call("div", (Access("X", (Affine.rank("d"), Affine.rank("p"))), Const(768.0)))


def test_ranks_missing_on_the_left_are_summed() -> None:
    """Z[m,n] = A[m,k]*B[k,n] iterates m, n, k (output ranks first), reduces k with sum, and is a MAC."""
    e = parse_einsum("Z[m,n] = A[m,k] * B[k,n]", {"m": 2, "k": 3, "n": 4})
    assert e.rank_sizes == (("m", 2), ("n", 4), ("k", 3))
    assert (e.reduced_ranks, e.reduce, e.op) == (("k",), "sum", "mac")


def test_reduction_prefix_sets_the_reduce_operator() -> None:
    """'max:' makes a max reduction over the ranks missing on the left."""
    e = parse_einsum("GM[p] = max: QK[m,p]", {"m": 4, "p": 2})
    assert (e.reduce, e.reduced_ranks, e.op) == ("max", ("m",), "max")


def test_infix_precedence_follows_arithmetic() -> None:
    """'a + b * c' is add(a, mul(b, c)); '(a + b) * c' is mul(add(a, b), c)."""
    sizes = {"m": 2}
    a, b, c = (Access(t, (Affine.rank("m"),)) for t in "ABC")
    assert parse_einsum("Z[m] = A[m] + B[m] * C[m]", sizes).expr == Call("add", (a, Call("mul", (b, c))))
    assert parse_einsum("Z[m] = (A[m] + B[m]) * C[m]", sizes).expr == Call("mul", (Call("add", (a, b)), c))


def test_unary_minus_is_neg_and_folds_into_constants() -> None:
    """'-X[m] * -2' is mul(neg(X[m]), Const(-2))."""
    e = parse_einsum("Z[m] = -X[m] * -2", {"m": 2})
    assert e.expr == Call("mul", (Call("neg", (Access("X", (Affine.rank("m"),)),)), Const(-2.0)))


def test_keyword_named_operators_parse() -> None:
    """MAP_OPS 'and', 'or' and 'not' are Python keywords yet parse as calls."""
    e = parse_einsum("Z[m] = or(and(A[m], B[m]), not(C[m]))", {"m": 2})
    assert [e.expr.op, e.expr.args[0].op, e.expr.args[1].op] == ["or", "and", "not"]


def test_recurrence_reads_its_previous_step() -> None:
    """RM[m1+1,p] = max(RM[m1,p], LM[m1,p]) is a running reduction along m1 that reduces nothing."""
    e = parse_einsum("RM[m1+1,p] = max(RM[m1,p], LM[m1,p])", {"m1": 3, "p": 2})
    assert e.recurrence_rank == "m1"
    assert e.reduced_ranks == ()


def test_scalar_output_is_written_with_empty_brackets() -> None:
    """'S[] = X[m]' sums X into a 0-d tensor: 0 + 1 + 2 = 3, and prints back as 'S[] = X[m]'."""
    w = cascade("ranks: {m: 3}\neinsums: ['S[] = X[m]']\n")
    assert (w.tensor("S").shape, format_einsum(w.einsums[0])) == ((), "S[] = X[m]")
    assert evaluate_workload(w, {"X": np.arange(3.0)})["S"] == 3.0


# ---------------------------------------------------------------------------------------------
# Tensors: shapes, dimension names, settings, overrides
# ---------------------------------------------------------------------------------------------
def test_shapes_are_the_largest_index_plus_one() -> None:
    """RM[m1+1,p] with M1 = 16 needs 17 rows; K[e, m1*M0+m0] needs M1*M0 = 1024 columns."""
    w = load_einsum_file(REPO / "workloads" / "attention_1pass.einsum.yaml")
    assert w.tensor("RM").shape == (17, 1024)
    assert w.tensor("K").shape == (64, 1024)


def test_dimension_names_come_from_plain_indices() -> None:
    """Q[e,p] -> ('E','P'); RM[m1+1,p] -> ('M1','P'); K[e, m1*M0+m0] has no plain index in dim 1 -> 'D1'."""
    w = load_einsum_file(REPO / "workloads" / "attention_1pass.einsum.yaml")
    assert (w.tensor("Q").ranks, w.tensor("RM").ranks, w.tensor("K").ranks) == (("E", "P"), ("M1", "P"), ("E", "D1"))


def test_tensor_settings_apply_and_default_bits_fill_the_rest() -> None:
    """gemm.einsum.yaml: A is an 8-bit weight, Z 32 bits; RM in the 1-pass cascade starts at -inf."""
    w = load_einsum_file(REPO / "workloads" / "gemm.einsum.yaml")
    assert w.tensor("A") == Tensor("A", ("M", "K"), (64, 128), 8, "weight")
    assert (w.tensor("B").bits, w.tensor("Z").bits) == (8, 32)
    assert load_einsum_file(REPO / "workloads" / "attention_1pass.einsum.yaml").tensor("RM").init == -math.inf


def test_bits_accept_dtype_names() -> None:
    """'bits: int4' is 4 bits (units.DTYPE_BITS)."""
    w = cascade("ranks: {m: 2}\ntensors: {X: {bits: int4}}\neinsums: ['Y[m] = X[m]']\n")
    assert w.tensor("X").bits == 4


def test_tensor_ranks_and_kind_can_be_given() -> None:
    """'ranks: [ROW, COL]' replaces the inferred ('M','N'); kind 'constant' is kept; both round-trip."""
    w = cascade("ranks: {m: 2, n: 3}\ntensors: {X: {ranks: [ROW, COL], kind: constant}}\n"
                "einsums: ['Y[m,n] = X[m,n]']\n")
    assert (w.tensor("X").ranks, w.tensor("X").kind) == (("ROW", "COL"), "constant")
    assert cascade(dump_cascade(w)) == w


def test_unknown_tensor_setting_lists_the_valid_ones() -> None:
    """'bit' under a tensor is an unknown key; the fix suggests 'bits' and lists the keys."""
    err = _error("ranks: {m: 2}\ntensors:\n  X: {bit: 8}\neinsums: ['Y[m] = X[m]']\n")
    assert (err.key_path, err.line) == ("tensors.X.bit", 3)
    assert "did you mean 'bits'" in err.fix and "shape" in err.fix


def test_explicit_shape_uses_rank_size_expressions() -> None:
    """conv2d's input is [N, C, 2*P, 2*Q] = [1, 3, 224, 224], not the inferred 226 (the last reads are padding)."""
    w = load_einsum_file(REPO / "workloads" / "conv2d.einsum.yaml")
    assert w.tensor("I").shape == (1, 3, 224, 224)


def test_sizes_override_changes_sizes_and_shape_expressions() -> None:
    """Overriding p=q=4 makes O 4x4 and the input 2*P = 8 wide."""
    w = load_einsum_file(REPO / "workloads" / "conv2d.einsum.yaml", {"p": 4, "q": 4})
    assert w.tensor("O").shape == (1, 64, 4, 4)
    assert w.tensor("I").shape == (1, 3, 8, 8)


# ---------------------------------------------------------------------------------------------
# Numerics (independent oracles: numpy / scipy written directly)
# ---------------------------------------------------------------------------------------------
def test_gemm_equals_matmul() -> None:
    """Z = A @ B."""
    rng = np.random.default_rng(1)
    w = load_einsum_file(REPO / "workloads" / "gemm.einsum.yaml", {"m": 3, "k": 5, "n": 2})
    a, b = rng.normal(size=(3, 5)), rng.normal(size=(5, 2))
    np.testing.assert_allclose(evaluate_workload(w, {"A": a, "B": b})["Z"], a @ b, rtol=1e-12)


def test_conv2d_equals_scipy_correlation_with_stride_2_and_padding_3() -> None:
    """O[n,k] = sum_c correlate2d(pad(I[n,c], 3), W[k,c], 'valid')[::2, ::2] (scipy as the oracle)."""
    rng = np.random.default_rng(2)
    sizes = {"n": 2, "k": 3, "c": 2, "p": 4, "q": 3}
    w = load_einsum_file(REPO / "workloads" / "conv2d.einsum.yaml", sizes)
    image, weight = rng.normal(size=(2, 2, 8, 6)), rng.normal(size=(3, 2, 7, 7))
    padded = np.pad(image, ((0, 0), (0, 0), (3, 3), (3, 3)))
    expected = np.zeros((2, 3, 4, 3))
    for n in range(2):
        for k in range(3):
            for c in range(2):
                expected[n, k] += correlate2d(padded[n, c], weight[k, c], mode="valid")[::2, ::2]
    np.testing.assert_allclose(evaluate_workload(w, {"I": image, "W": weight})["O"], expected, rtol=1e-10)


def test_mlp_equals_three_matmuls_with_relu_and_gelu() -> None:
    """Y = W3^T gelu(W2^T relu(W1^T X)), GELU = x * Phi(x) via scipy.stats.norm."""
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    w = load_einsum_file(REPO / "workloads" / "mlp.einsum.yaml", {"d": 3, "h1": 5, "h2": 4, "o": 2, "p": 3})
    x, w1, w2, w3 = (rng.normal(size=s) for s in [(3, 3), (3, 5), (5, 4), (4, 2)])
    hidden = w2.T @ np.maximum(w1.T @ x, 0)
    expected = w3.T @ (hidden * norm.cdf(hidden))
    out = evaluate_workload(w, {"X": x, "W1": w1, "W2": w2, "W3": w3})
    np.testing.assert_allclose(out["Y"], expected, rtol=1e-10)


@pytest.mark.parametrize(("file", "sizes"), [
    ("attention_3pass", {"e": 4, "f": 4, "p": 3, "m": 6}),
    ("attention_1pass", {"e": 4, "f": 4, "p": 3, "m1": 3, "m0": 2}),
])
def test_attention_cascade_equals_softmax_attention(file: str, sizes: dict[str, int]) -> None:
    """AV equals softmax(Q^T K) V computed directly (M = 6 keys; the 1-pass one in 3 chunks of 2)."""
    rng = np.random.default_rng(4)
    w = load_einsum_file(REPO / "workloads" / f"{file}.einsum.yaml", sizes)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    np.testing.assert_allclose(evaluate_workload(w, {"Q": q, "K": k, "V": v})["AV"], softmax_attention(q, k, v),
                               rtol=1e-10)


def test_gqa_equals_per_head_attention_with_shared_kv() -> None:
    """Head (g,h) attends with K, V of group g: Y = sum_heads WO_head^T softmax-attention(Q_head, K_g, V_g)."""
    rng = np.random.default_rng(5)
    sizes = {"d": 6, "e": 3, "f": 3, "g": 2, "h": 4, "m": 5, "p": 5}
    w = load_einsum_file(REPO / "workloads" / "gqa.einsum.yaml", sizes)
    x = rng.normal(size=(6, 5))
    wq, wk = rng.normal(size=(6, 3, 2, 4)), rng.normal(size=(6, 3, 2))
    wv, wo = rng.normal(size=(6, 3, 2)), rng.normal(size=(3, 2, 4, 6))
    expected = np.zeros((6, 5))
    for g in range(2):
        keys, values = wk[:, :, g].T @ x, wv[:, :, g].T @ x
        for h in range(4):
            expected += wo[:, g, h, :].T @ softmax_attention(wq[:, :, g, h].T @ x, keys, values)
    out = evaluate_workload(w, {"X": x, "WQ": wq, "WK": wk, "WV": wv, "WO": wo})
    np.testing.assert_allclose(out["Y"], expected, rtol=1e-10)


def test_layernorm_equals_numpy_normalization() -> None:
    """Y = (X - mean) / sqrt(var + 1e-5) * G + B over the feature axis d (population variance)."""
    rng = np.random.default_rng(6)
    w = load_einsum_file(REPO / "workloads" / "layernorm.einsum.yaml", {"d": 7, "p": 3})
    x, gain, bias = rng.normal(size=(7, 3)), rng.normal(size=7), rng.normal(size=7)
    expected = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5) * gain[:, None] + bias[:, None]
    np.testing.assert_allclose(evaluate_workload(w, {"X": x, "G": gain, "B": bias})["Y"], expected, rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# MAC counts (closed forms)
# ---------------------------------------------------------------------------------------------
def test_gemm_macs_are_m_n_k() -> None:
    """M*N*K = 64*32*128."""
    assert load_einsum_file(REPO / "workloads" / "gemm.einsum.yaml").total_macs == 64 * 32 * 128


def test_conv2d_macs_are_resnet50_conv1() -> None:
    """N*K*P*Q*C*R*S = 1*64*112*112*3*7*7 = 118,013,952 (ResNet-50 conv1, He et al. 2016 Table 1)."""
    assert load_einsum_file(REPO / "workloads" / "conv2d.einsum.yaml").total_macs == 118_013_952


@pytest.mark.parametrize("file", ["attention_3pass", "attention_1pass"])
def test_attention_macs_are_two_e_m_p(file: str) -> None:
    """QK and AV each take E*M*P MACs (E = F = 64, M = P = 1024); softmax steps are not MACs."""
    w = load_einsum_file(REPO / "workloads" / f"{file}.einsum.yaml")
    assert w.total_macs == 2 * 64 * 1024 * 1024
    assert sum(e.op == "mac" for e in w.einsums) == 2


def test_gqa_macs_closed_form() -> None:
    """Projections D*E*G*H*P + 2*D*E*G*M + F*G*H*D*P plus attention 2*E*M*P*G*H (E = F)."""
    d, e, g, h, m, p = 1024, 128, 2, 4, 512, 512
    expected = d * e * g * h * p + 2 * d * e * g * m + e * g * h * d * p + 2 * e * m * p * g * h
    assert load_einsum_file(REPO / "workloads" / "gqa.einsum.yaml").total_macs == expected


def test_mlp_macs_closed_form() -> None:
    """P*(13*512 + 512*256 + 256*128) with P = 128."""
    assert load_einsum_file(REPO / "workloads" / "mlp.einsum.yaml").total_macs == 128 * (13 * 512 + 512 * 256
                                                                                          + 256 * 128)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_corpus_file_raises_config_error_with_expected_text(path: Path) -> None:
    """Each tests/data/bad/einsum_* file raises ConfigError holding its sidecar's substrings and a fix."""
    expect = yaml.safe_load(path.with_name(path.name.removesuffix(".einsum.yaml") + ".expect.yaml").read_text())
    with pytest.raises(ConfigError) as info:
        load_einsum_file(path)
    text = str(info.value)
    assert str(path) in text and "Fix:" in text
    for part in expect["contains"]:
        assert part in text


def test_bad_corpus_has_the_required_cases() -> None:
    """At least the eight error kinds the brief lists have a corpus file."""
    stems = {p.name.removesuffix(".einsum.yaml") for p in BAD}
    assert {"einsum_syntax_error", "einsum_undefined_rank", "einsum_unknown_operator", "einsum_unknown_top_key",
            "einsum_duplicate_key", "einsum_negative_rank_size", "einsum_tensor_written_twice",
            "einsum_inconsistent_dims"} <= stems


def _error(text: str, sizes_override: dict[str, int] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        cascade(text, sizes_override)
    return info.value


def test_error_names_the_line_and_key_path_of_the_einsum() -> None:
    """An unknown operator in the second einsum points at line 5, 'einsums[1]', and lists valid operators."""
    err = _error("name: x\nranks: {m: 2}\neinsums:\n  - A[m] = X[m]\n  - B[m] = softplus(A[m])\n")
    assert (err.line, err.key_path) == (5, "einsums[1]")
    assert "softplus" in err.problem and "relu" in err.fix


def test_unknown_operator_lists_every_map_op() -> None:
    """The fix lists every MAP_OPS name."""
    err = _error("ranks: {m: 2}\neinsums: ['Y[m] = foo(X[m])']\n")
    assert all(op in err.fix for op in MAP_OPS)


@pytest.mark.parametrize(("einsum", "problem"), [
    ("Y[m] = X[m] Z[m]", "syntax error"),
    ("Y[m] X[m]", "missing '='"),
    ("Y[m] = ", "right-hand side is empty"),
    ("Y = X[m]", "not a tensor access"),
    ("Y[m] = X[m][m]", "not a tensor name"),
    ("Y[m] = X[m*m]", "multiplies two ranks"),
    ("Y[m] = X[m/2]", "not affine"),
    ("Y[m] = X[m] * m", "used as a value"),
    ("Y[m] = X[m] * W", "neither a tensor access"),
    ("Y[m] = exp(X[m], X[m])", "takes 1 operand"),
    ("Y[m] = X[m] < 0", "comparison"),
    ("Y[m] = X[m] if 1 else 0", "unsupported syntax"),
    ("Y[m] = max: X[m]", "nothing to reduce"),
    ("Y[m] = Y[m] + X[m]", "reads its own output"),
    ("Y[m+1] = Y[m+2] + X[m]", "not an earlier step"),
])
def test_einsum_text_errors(einsum: str, problem: str) -> None:
    """Malformed einsum text raises ConfigError naming the problem, the einsum and a fix."""
    err = _error(f"ranks: {{m: 2}}\neinsums: [{einsum!r}]\n".replace("'", '"'))
    assert problem in err.problem and err.key_path == "einsums[0]" and err.fix


def test_rank_names_must_be_lower_case() -> None:
    """'M' as a rank name is rejected: upper case is the size symbol."""
    err = _error("ranks: {M: 2}\neinsums: ['Y[M] = X[M]']\n")
    assert err.key_path == "ranks" and "lower case" in err.problem


def test_zero_and_boolean_rank_sizes_are_rejected() -> None:
    """0 and true are not rank sizes."""
    assert "positive integer" in _error("ranks: {m: 0}\neinsums: ['Y[m] = X[m]']\n").problem
    assert _error("ranks: {m: true}\neinsums: ['Y[m] = X[m]']\n").key_path == "ranks.m"


def test_duplicate_einsum_names_are_rejected() -> None:
    """Two einsums called 'act' clash even though they write different tensors."""
    err = _error("ranks: {m: 2}\neinsums:\n  - {name: act, expr: 'A[m] = X[m]'}\n"
                 "  - {name: act, expr: 'B[m] = A[m]'}\n")
    assert err.key_path == "einsums[1]" and "already used" in err.problem


def test_init_on_a_tensor_without_recurrence_is_rejected() -> None:
    """'init' only means something for the output of a running reduction."""
    err = _error("ranks: {m: 2}\ntensors: {Y: {init: 0}}\neinsums: ['Y[m] = X[m]']\n")
    assert err.key_path == "tensors.Y.init"


def test_shape_with_wrong_length_or_lower_case_rank_is_rejected() -> None:
    """A 2-entry shape for a 1-D tensor, and 'shape: [m]' (a rank, not its size M), are errors."""
    assert "has 2 entries" in _error("ranks: {m: 2}\ntensors: {X: {shape: [2, 2]}}\n"
                                     "einsums: ['Y[m] = X[m]']\n").problem
    err = _error("ranks: {m: 2}\ntensors: {X: {shape: [m]}}\neinsums: ['Y[m] = X[m]']\n")
    assert err.key_path == "tensors.X.shape[0]" and "2*M" in err.fix


def test_output_written_outside_its_explicit_shape_is_rejected() -> None:
    """Y[m] with M = 4 does not fit shape [3]."""
    err = _error("ranks: {m: 4}\ntensors: {Y: {shape: [3]}}\neinsums: ['Y[m] = X[m]']\n")
    assert "outside 'Y'" in err.problem and err.key_path == "einsums[0]"


def test_sizes_override_of_an_undeclared_rank_is_rejected() -> None:
    """Overriding rank 'z' that the cascade lacks names the declared ranks."""
    err = _error("ranks: {m: 2}\neinsums: ['Y[m] = X[m]']\n", {"z": 3})
    assert err.key_path == "ranks.z" and "m" in err.fix


def test_missing_einsums_key_is_reported() -> None:
    """A cascade without 'einsums:' says the key is required."""
    assert "required key 'einsums'" in _error("ranks: {m: 2}\n").problem


def test_dump_rejects_workloads_with_views() -> None:
    """A workload with data-movement views (from ONNX) cannot be a cascade."""
    w = cascade("ranks: {m: 2}\neinsums: ['Y[m] = X[m]']\n")
    with_view = Workload(w.name, w.tensors, w.einsums, views=(View("Z", ("Y",), "Reshape"),))
    with pytest.raises(ConfigError, match="views"):
        dump_cascade(with_view)


def test_dump_rejects_one_rank_with_two_sizes() -> None:
    """A cascade shares one size per rank; einsums disagreeing on 'm' cannot be dumped."""
    a = parse_einsum("A[m] = X[m]", {"m": 2})
    b = parse_einsum("B[m] = relu(A[m])", {"m": 3})
    tensors = (Tensor("X", ("M",), (2,)), Tensor("A", ("M",), (3,)), Tensor("B", ("M",), (3,)))
    with pytest.raises(ConfigError, match="rank 'm' has size 2"):
        dump_cascade(Workload("w", tensors, (a, b)))


def test_an_input_named_like_a_written_tensor_reads_back_when_declared() -> None:
    """An input 'hid' beside a written 'HID' is refused as a likely typo unless declared under tensors:, and
    dump_cascade declares it, so parse(dump(w)) == w still holds."""
    text = "ranks: {h: 4, p: 2}\neinsums:\n  - HID[h,p] = relu(X[h,p])\n  - Y[h,p] = HID[h,p] * hid[h,p]\n"
    with pytest.raises(ConfigError, match="did you mean 'HID'"):
        cascade(text)
    w = cascade(text.replace("einsums:", "tensors:\n  hid: {}\neinsums:"))
    assert "hid: {kind: activation}" in dump_cascade(w)
    assert cascade(dump_cascade(w)) == w


def test_a_transposed_read_of_a_square_tensor_is_allowed() -> None:
    """A[m,k] read as A[k,m] is only an error when m and k differ in size; with m = k it is a transpose."""
    text = "ranks: {m: 4, k: 4, n: 2}\neinsums:\n  - A[m,k] = X[m,k] * 2\n  - Z[m,n] = A[k,m] * B[k,n]\n"
    assert cascade(text).tensor("A").shape == (4, 4)
    with pytest.raises(ConfigError, match="dimension 0 of 'A'"):
        cascade(text.replace("k: 4", "k: 8"))


def test_a_padded_window_may_read_outside_a_declared_shape_and_a_plain_read_may_not() -> None:
    """conv2d's I[n,c,2*p+r-3,...] reads outside its declared shape (zero padding, by the negative offset);
    a plain read B[k,n] past a declared shape is an error naming the size needed."""
    assert load_einsum_file(REPO / "workloads" / "conv2d.einsum.yaml").tensor("I").shape == (1, 3, 224, 224)
    text = "ranks: {m: 2, k: 8, n: 2}\ntensors:\n  B: {shape: [4, N]}\neinsums:\n  - Z[m,n] = A[m,k] * B[k,n]\n"
    with pytest.raises(ConfigError, match="at least 8"):
        cascade(text)


def test_tensor_dimension_named_in_lower_case_must_be_a_declared_rank() -> None:
    """A lower-case name in a tensor's `ranks` is a rank (npu_pim resizes the dimension with it): 'k' is kept
    and round-trips, 'kk' is an error at its list item naming the declared ranks and the close one."""
    w = cascade("ranks: {m: 2, k: 3}\ntensors: {X: {ranks: [m, k]}}\neinsums: ['Y[m] = X[m,k]']\n")
    assert w.tensor("X").ranks == ("m", "k") and cascade(dump_cascade(w)) == w
    err = _error("ranks: {m: 2, k: 3}\ntensors:\n  X: {ranks: [m, kk]}\neinsums: ['Y[m] = X[m,k]']\n")
    assert (err.key_path, err.line) == ("tensors.X.ranks[1]", 3)
    assert "names rank 'kk'" in err.problem and "declared ranks: m, k" in err.problem
    assert "did you mean 'k'" in err.fix


def test_a_tensor_read_twice_by_different_indices_is_costed_as_two_operands(tmp_path: Path) -> None:
    """G[m,n] = X[m,k] * X[n,k] (a Gram matrix) streams X twice through the array, once per operand, as the same GEMM
    over two tensors does: the second read goes through an alias view X~2, so each stream is costed (edge_npu: 4,551
    cycles and 49,152 B of global-buffer reads for both). Keyed by name, the second stream went uncounted: 3,413
    cycles and 28,672 B. A tensor squared elementwise (X[m,k] * X[m,k]) reads each element once and keeps its name."""
    gram, pair, square = (tmp_path / f"{n}.einsum.yaml" for n in ("gram", "pair", "square"))
    text = "name: g\nranks: {m: 64, k: 32, n: 64}\neinsums:\n  - G[m,n] = X[m,k] * X[n,k]\n"
    gram.write_text(text)
    pair.write_text(text.replace("X[n,k]", "Y[n,k]"))
    square.write_text("name: s\nranks: {m: 64, k: 32}\neinsums:\n  - S[m] = X[m,k] * X[m,k]\n")
    arch = load_arch("edge_npu")
    runs = [evaluate(arch, load_workload(path)) for path in (gram, pair)]
    assert runs[0].cycles == runs[1].cycles
    assert [m.read_bytes for m in runs[0].trace.memory] == [m.read_bytes for m in runs[1].trace.memory]
    assert load_workload(gram).views and not load_workload(square).views
    x = np.arange(64 * 32, dtype=float).reshape(64, 32)
    np.testing.assert_allclose(evaluate_workload(load_workload(gram), {"X": x})["G"], x @ x.T, rtol=1e-12)
