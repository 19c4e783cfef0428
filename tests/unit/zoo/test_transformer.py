"""Transformer zoo: MAC and byte counts against closed forms and the MANIFEST exports; numerics vs numpy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

from accel_sim.errors import ConfigError
from accel_sim.zoo import build
from accel_sim.zoo.transformer import TransformerSpec, expert_tokens, transformer
from accel_sim.spec.numeric import evaluate_workload

D7, F7, V7, LAYERS7 = 4096, 11008, 32000, 32  # Llama-2-7B (Touvron et al. 2023, Table 1)
LAYER7 = 4 * D7**2 + 3 * D7 * F7              # q, k, v, o + gate, up, down MACs per token per layer


@pytest.mark.parametrize("kv_len", [0, 511, 1024, 4095])
def test_llama2_decode_macs_equal_closed_form(kv_len: int) -> None:
    """Decode MACs = 32 x (4 d^2 + 3 d f) + d V + 2 x 32 x d x L with L = kv_len + 1 attended positions
    (hand count: projections and FFN per token, LM head, QK^T and PV over L keys for 32 heads of 128)."""
    L = kv_len + 1
    expected = LAYERS7 * LAYER7 + D7 * V7 + 2 * LAYERS7 * D7 * L
    assert build("llama2-7b", phase="decode", kv_len=kv_len).total_macs == expected


def test_decode_batch_multiplies_macs() -> None:
    """Batch B decode is B independent sequences: B times the batch-1 MACs (closed form above)."""
    one = build("llama2-7b", phase="decode", kv_len=300).total_macs
    assert build("llama2-7b", phase="decode", kv_len=300, batch=6).total_macs == 6 * one


def test_llama2_2layer_prefill_matches_manifest() -> None:
    """MANIFEST llama2_7b_dims_2layers_prefill_seq128: 68,853,694,464 MACs (68.854 G), logits on all
    128 tokens; also the hand count 2 x 128 x (4d^2 + 3df) + 2 x 2 x 128^2 x d + 128 d V."""
    macs = build("llama2-7b", n_layers=2, seq_len=128).total_macs
    assert macs == 2 * 128 * LAYER7 + 2 * 2 * 128**2 * D7 + 128 * D7 * V7
    assert macs == pytest.approx(68.854e9, rel=1e-3)
    assert macs == 68_853_694_464


def test_llama2_2layer_decode_matches_manifest() -> None:
    """MANIFEST llama2_7b_dims_2layers_decode_kv512: 544,227,328 MACs; the export's attention_mask has
    513 = 512 cached + 1 new positions, which is what kv_len=512 means here."""
    macs = build("llama2-7b", n_layers=2, phase="decode", kv_len=512).total_macs
    assert macs == 2 * LAYER7 + 2 * 2 * D7 * 513 + D7 * V7
    assert macs == 544_227_328


def test_llama2_2layer_params_match_manifest() -> None:
    """MANIFEST params of the 2-layer export: 666,914,816 (matrices, embedding, LM head, 5 RMSNorm scales)."""
    weights = build("llama2-7b", n_layers=2).tensors
    assert sum(t.elements for t in weights if t.kind == "weight") == 666_914_816


def test_bert_base_matches_closed_form_and_manifest() -> None:
    """12 x (4 x 768^2 + 2 x 768 x 3072) x 128 + 12 x 2 x 128^2 x 768 + 768^2 (pooler on [CLS])
    = 11,174,215,680 (MANIFEST bert_base_seq128: 11.174 G; params 109,482,240)."""
    w = build("bert-base")
    expected = 12 * (4 * 768**2 + 2 * 768 * 3072) * 128 + 12 * 2 * 128**2 * 768 + 768**2
    assert w.total_macs == expected == 11_174_215_680
    assert sum(t.elements for t in w.tensors if t.kind == "weight") == 109_482_240


def test_gqa_kv_projections_use_kv_heads() -> None:
    """Llama-3-8B has 8 K/V heads of 128: K and V projections are T x 4096 x 1024 MACs, Q is T x 4096^2
    (model card: 32 query heads, 8 KV heads)."""
    w = build("llama3-8b", n_layers=1, seq_len=16)
    assert w.einsum("L0.attn.k_proj").macs == 16 * 4096 * 8 * 128
    assert w.einsum("L0.attn.v_proj").macs == 16 * 4096 * 8 * 128
    assert w.einsum("L0.attn.q_proj").macs == 16 * 4096 * 4096


def test_gqa_cache_holds_kv_heads_only() -> None:
    """Llama-3-8B decode: each layer's K cache is batch x 8 heads x (kv_len + 1) x 128 at kv_bits
    (int8: 1 byte), and the score einsum reads K without the group rank g (shared by 4 query heads)."""
    w = build("llama3-8b", n_layers=1, phase="decode", batch=2, kv_len=99, kv_bits="int8")
    assert w.tensor("L0.attn.k_cache").bytes == 2 * 8 * 100 * 128
    key_access = w.einsum("L0.attn.qk").inputs[1]
    assert key_access.tensor == "L0.attn.k_cache" and "g" not in key_access.ranks


def test_moe_macs_equal_tokens_times_top_k_experts_plus_router() -> None:
    """Mixtral layer MACs per token: attention projections 2d^2 + 2 d (8 x 128) + QK/PV 2 x 32 x 128 x L,
    router d x 8, and top-2 of the experts' 3 d f_e; plus the LM head (Jiang et al. 2024, Table 1)."""
    d, f, X, k, kv, layers, T = 4096, 14336, 8, 2, 1024, 2, 3
    w = build("mixtral-8x7b", n_layers=layers, phase="decode", batch=T, kv_len=kv)
    per_token_layer = 2 * d * d + 2 * d * 1024 + 2 * 32 * 128 * (kv + 1) + d * X + k * 3 * d * f
    assert w.total_macs == T * (layers * per_token_layer + d * 32000)


def test_expert_token_counts_sum_to_tokens_times_top_k() -> None:
    """Balanced routing deals tokens x top_k pairs: 3 tokens x top-2 over 8 experts is six experts with
    one token and two with none; 64 x 2 over 8 is 16 each."""
    assert expert_tokens(3, 2, 8) == (1, 1, 1, 1, 1, 1, 0, 0)
    assert expert_tokens(64, 2, 8) == (16,) * 8


def test_moe_idle_expert_weights_stay_resident() -> None:
    """At batch 1 decode only 2 of 8 experts run, but all 8 experts' weights are in the workload."""
    w = build("mixtral-8x7b", n_layers=1, phase="decode")
    experts = {t.name.split(".")[2] for t in w.tensors if t.kind == "weight" and ".expert" in t.name}
    ran = {e.name.split(".")[2] for e in w.einsums if ".expert" in e.name}
    assert len(experts) == 8 and len(ran) == 2


def test_int4_weight_bytes_are_half_a_byte_per_parameter() -> None:
    """Llama-2-7B at int4: weight bytes = params x 0.5, params = 32 (4d^2 + 3df) + 2 d V (embedding and
    untied LM head) + (2 x 32 + 1) d RMSNorm scales (6,738,415,616, the HF parameter count)."""
    w = build("llama2-7b", weight_bits="int4")
    params = LAYERS7 * LAYER7 + 2 * D7 * V7 + (2 * LAYERS7 + 1) * D7
    assert params == 6_738_415_616
    assert sum(t.bytes for t in w.tensors if t.kind == "weight") == params * 0.5


def test_vocab_bits_widen_the_embedding_and_lm_head_only() -> None:
    """T-MAC's Llama-2-7B W2 (2-bit blocks, F16 vocabulary matrices): weight bytes = 32 (4d^2 + 3df) x 2/8 + 2 d V x
    2 + RMSNorm scales (2 x 32 + 1) d x 2/8, by hand; BitNet-3B tied (d 3200, V 32002): its logits read the 16-bit
    embedding, 204,812,800 B; a width for a model with no vocabulary is refused at its key."""
    w = build("llama2-7b", weight_bits=2, vocab_bits="fp16")
    assert w.name.endswith("-w2a16kv16-vocab16")
    assert (w.tensor("embed.tokens").bits, w.tensor("lm_head.weight").bits) == (16, 16)
    expected = LAYERS7 * LAYER7 * 2 / 8 + 2 * D7 * V7 * 2 + (2 * LAYERS7 + 1) * D7 * 2 / 8
    assert sum(t.bytes for t in w.tensors if t.kind == "weight") == expected
    bitnet = build("bitnet-b1.58-3b", phase="decode", kv_len=8, tie_embeddings=True, vocab_bits=16)
    head = bitnet.tensor(bitnet.einsum("lm_head").inputs[1].tensor)
    assert (head.name, head.bits, head.bytes) == ("embed.tokens", 16, 204_812_800)
    with pytest.raises(ConfigError, match="vocab_bits"):
        build("llama2-7b", vocab=0, lm_head=False, vocab_bits=8)


def test_logits_last_computes_lm_head_for_one_token() -> None:
    """logits='last' drops (P - 1) x d x V LM-head MACs from prefill (hand count)."""
    full = build("llama2-7b", n_layers=1, seq_len=64).total_macs
    last = build("llama2-7b", n_layers=1, seq_len=64, logits="last").total_macs
    assert full - last == 63 * D7 * V7


def test_gpt3_layer_macs_and_tied_head() -> None:
    """GPT-3 175B, seq 128: 96 layers of 128 x 12 d^2 + 2 x 128^2 x d, and the LM head 128 x d x 50257 (Brown et
    al. 2020, Table 2.1: 96 layers, d 12288, FFN 4d); the head reads the tied embedding, so no separate LM weight."""
    d = 12288
    w = build("gpt3-175b", seq_len=128)
    assert w.total_macs == 96 * (128 * 12 * d * d + 2 * 128**2 * d) + 128 * d * 50257
    assert "lm_head.weight" not in w.tensor_map
    assert w.einsum("lm_head").inputs[1].tensor == "embed.tokens"


def test_workload_names() -> None:
    """Names carry preset, phase, batch, length and non-default widths."""
    assert build("llama2-7b", phase="decode", kv_len=1024).name == "llama2-7b-decode-b1-kv1024"
    assert build("llama2-7b", phase="decode", batch=8, weight_bits=4).name == "llama2-7b-decode-b8-kv1024-w4a16kv16"
    assert build("bert-base").name == "bert-base-b1-s128"


def test_workload_size_does_not_grow_with_batch_or_length() -> None:
    """The generator does no per-element work: batch and KV length change rank sizes, not the einsum count."""
    small = build("llama2-7b", phase="decode", kv_len=16, batch=1)
    large = build("llama2-7b", phase="decode", kv_len=4095, batch=64)
    assert (len(small.einsums), len(small.tensors)) == (len(large.einsums), len(large.tensors))


def test_unknown_parameter_lists_valid_ones() -> None:
    """A parameter the preset lacks names itself and lists the valid parameters."""
    with pytest.raises(ConfigError) as err:
        build("llama2-7b", kvlen=5)
    assert err.value.key_path == "kvlen" and "did you mean 'kv_len'" in str(err.value) and "n_kv_heads" in str(err.value)


def test_kv_len_in_prefill_is_rejected() -> None:
    """kv_len only means something in decode; giving it with phase prefill is a mistake."""
    with pytest.raises(ConfigError, match="phase: decode"):
        build("llama2-7b", phase="prefill", kv_len=5)


def test_learned_positions_bound_the_context() -> None:
    """GPT-3's position table has 2048 rows: decoding after 2048 cached tokens needs row 2048."""
    build("gpt3-175b", phase="decode", kv_len=2047)
    with pytest.raises(ConfigError) as err:
        build("gpt3-175b", phase="decode", kv_len=2048)
    assert err.value.key_path == "kv_len"


def test_rope_context_bounds_kv_len_unless_extended() -> None:
    """Llama-2-7B was trained on 4,096 positions: kv_len 4095 fills the context, kv_len 1,000,000 is an error
    naming kv_len and the option, and beyond_context: true models the extension (the KV cache grows with it)."""
    build("llama2-7b", phase="decode", kv_len=4095)
    with pytest.raises(ConfigError, match="beyond_context") as err:
        build("llama2-7b", phase="decode", kv_len=1_000_000)
    assert err.value.key_path == "kv_len" and "context of 4,096" in str(err.value)
    long = build("llama2-7b", phase="decode", kv_len=8191, beyond_context=True)
    assert long.tensor("L0.attn.k_cache").shape[2] == 8192
    with pytest.raises(ConfigError, match="learned position table cannot be extended"):
        build("gpt3-175b", phase="decode", kv_len=16, beyond_context=True)


def test_heads_must_group_evenly() -> None:
    """GQA needs n_heads to be a multiple of n_kv_heads."""
    with pytest.raises(ConfigError) as err:
        build("llama2-7b", n_kv_heads=5)
    assert err.value.key_path == "n_kv_heads"


# ---------------------------------------------------------------------------------------------
# Numerics: the einsum cascade of a tiny model equals a plain numpy implementation (HF semantics)
# ---------------------------------------------------------------------------------------------
def _rope_tables(positions: np.ndarray, E: int) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = 1.0 / 10000 ** (np.arange(0, E, 2) / E)  # Su et al. 2021 (RoFormer), eq. 15
    angles = np.outer(positions, inv_freq)
    emb = np.concatenate([angles, angles], axis=1)
    return np.cos(emb), np.sin(emb)


def _gelu(t: np.ndarray) -> np.ndarray:
    return 0.5 * t * (1 + erf(t / math.sqrt(2)))  # exact GELU (Hendrycks & Gimpel 2016), as BERT uses


def _norm(x: np.ndarray, w: dict, prefix: str, kind: str, eps: float) -> np.ndarray:
    if kind == "rms":
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * w[f"{prefix}.weight"]
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]


def _reference(spec: TransformerSpec, w: dict) -> dict[str, np.ndarray]:
    """Straightforward numpy transformer (heads flattened as in HF; query head j uses K/V head j // G)."""
    B, P, D, NH = spec.batch, spec.seq_len, spec.d_model, spec.n_heads
    H = spec.n_kv_heads or NH
    E, G = spec.head_dim or D // NH, NH // (spec.n_kv_heads or NH)
    x = w["hidden_in"]
    if spec.positional == "learned":
        x = x + w["embed.positions"][:P]
    if spec.norm_position == "post":
        x = _norm(x, w, "embed.norm", spec.norm, spec.norm_eps)
    for i in range(spec.n_layers):
        a = f"L{i}.attn"
        h = _norm(x, w, f"L{i}.attn_norm", spec.norm, spec.norm_eps) \
            if spec.norm_position == "pre" else x
        q = np.einsum("bpd,dhge->bhgpe", h, w[f"{a}.wq"])
        k = np.einsum("bpd,dhe->bhpe", h, w[f"{a}.wk"])
        v = np.einsum("bpd,dhe->bhpe", h, w[f"{a}.wv"])
        if spec.bias:
            q, k, v = q + w[f"{a}.q.bias"][:, :, None], k + w[f"{a}.k.bias"][:, None], v + w[f"{a}.v.bias"][:, None]
        if spec.positional == "rope":
            cos, sin = w["rope.cos"], w["rope.sin"]
            rot = lambda t: np.concatenate([-t[..., E // 2:], t[..., :E // 2]], -1)  # noqa: E731
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        s = np.einsum("bhgpe,bhme->bhgpm", q, k) / math.sqrt(E)
        if spec.causal:
            s = s + np.triu(np.full((P, P), -np.inf), 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        p = p / p.sum(-1, keepdims=True)
        o = np.einsum("bhgpm,bhme->bhgpe", p, v)
        y = np.einsum("bhgpe,hged->bpd", o, w[f"{a}.wo"]) + (w[f"{a}.o_proj.bias"] if spec.bias else 0)
        x = x + y
        if spec.norm_position == "post":
            x = _norm(x, w, f"L{i}.attn_norm", spec.norm, spec.norm_eps)
        f = f"L{i}.ffn"
        h = _norm(x, w, f"L{i}.ffn_norm", spec.norm, spec.norm_eps) if spec.norm_position == "pre" else x
        if spec.ffn == "gated":
            gate, up = h @ w[f"{f}.w_gate"], h @ w[f"{f}.w_up"]
            act = gate / (1 + np.exp(-gate)) * up
        else:
            act = _gelu(h @ w[f"{f}.w_in"] + (w[f"{f}.in_proj.bias"] if spec.bias else 0))
        x = x + act @ w[f"{f}.w_down"] + (w[f"{f}.down_proj.bias"] if spec.bias else 0)
        if spec.norm_position == "post":
            x = _norm(x, w, f"L{i}.ffn_norm", spec.norm, spec.norm_eps)
    out = {"hidden": x}
    if spec.pooler:
        out["pooler.out"] = np.tanh(x[:, 0] @ w["pooler.weight"] + w["pooler.bias"])
    return out


def _inputs(workload, spec: TransformerSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    values = {t.name: rng.normal(0, 0.5, t.shape) for t in workload.tensors
              if t.kind == "weight" or t.name == "hidden_in"}
    E = spec.head_dim or spec.d_model // spec.n_heads
    if spec.positional == "rope":
        values["rope.cos"], values["rope.sin"] = _rope_tables(np.arange(spec.seq_len), E)
    if spec.causal:
        values["attn.mask"] = np.triu(np.full((spec.seq_len, spec.seq_len), -np.inf), 1)
    return values


def test_tiny_llama_style_decoder_matches_numpy() -> None:
    """A 2-layer GQA decoder (RMSNorm, RoPE, SwiGLU, causal softmax cascade) evaluated einsum by einsum
    equals a direct numpy implementation of the same model (Llama semantics as in HF transformers)."""
    spec = TransformerSpec(d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=24, vocab=0, lm_head=False,
                           batch=2, seq_len=5)
    workload = transformer(spec)
    values = _inputs(workload, spec, np.random.default_rng(0))
    got = evaluate_workload(workload, values)
    np.testing.assert_allclose(got["final_norm.out"], _norm(_reference(spec, values)["hidden"], values,
                                                            "final_norm", "rms", spec.norm_eps), rtol=1e-9, atol=1e-9)


def test_tiny_bert_style_encoder_matches_numpy() -> None:
    """A 2-layer post-LN encoder (LayerNorm, learned positions, biases, GELU MLP, no mask, pooler)
    evaluated einsum by einsum equals a direct numpy implementation (BERT semantics)."""
    spec = TransformerSpec(d_model=12, n_layers=2, n_heads=3, ffn_dim=20, ffn="mlp", norm="layer",
                           norm_position="post", positional="learned", max_positions=8, vocab=0, lm_head=False,
                           pooler=True, bias=True, causal=False, batch=2, seq_len=6, norm_eps=1e-12)
    workload = transformer(spec)
    values = _inputs(workload, spec, np.random.default_rng(1))
    got = evaluate_workload(workload, values)
    np.testing.assert_allclose(got["pooler.out"], _reference(spec, values)["pooler.out"], rtol=1e-9, atol=1e-9)


def test_moe_routing_weights_are_softmax_over_top_k() -> None:
    """The router cascade (top-k by repeated masked max, then exp/sum/div) gives Mixtral's gates:
    softmax over each token's top-2 router logits, zero elsewhere (Jiang et al. 2024, eq. 1-2)."""
    from accel_sim.spec.workload import Workload

    spec = TransformerSpec(d_model=8, n_layers=1, n_heads=2, ffn_dim=6, n_experts=5, top_k=2, vocab=0,
                           lm_head=False, batch=3, seq_len=4)
    full = transformer(spec)
    routing = tuple(e for e in full.einsums if ".moe." in e.name and ".expert" not in e.name)
    workload = Workload("routing", full.tensors, routing)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4, 8))
    w_router = rng.normal(size=(8, 5))
    gates = evaluate_workload(workload, {"L0.ffn_norm.out": x, "L0.moe.w_router": w_router})["L0.moe.gates"]
    logits = x @ w_router
    top = np.argsort(logits, axis=-1)[..., -2:]
    chosen = np.take_along_axis(logits, top, -1)
    expected = np.zeros_like(logits)
    np.put_along_axis(expected, top, np.exp(chosen) / np.exp(chosen).sum(-1, keepdims=True), -1)
    np.testing.assert_allclose(gates, expected, rtol=1e-12, atol=1e-12)


def test_a_generated_name_is_model_phase_batch_length_and_widths_only() -> None:
    """Overridden structure (n_layers, d_model) goes to the run's provenance, not the name (issue 19): the name is
    the model, phase, batch and length, plus the widths when any is not 16."""
    assert build("llama2-7b", phase="decode", n_layers=2, d_model=512, n_heads=8, batch=8,
                 kv_len=64).name == "llama2-7b-decode-b8-kv64"
    assert build("llama2-7b", phase="decode", n_layers=1, kv_len=8, weight_bits=4).name \
        == "llama2-7b-decode-b1-kv8-w4a16kv16"


def _same_inputs(*workloads) -> dict[str, np.ndarray]:  # noqa: ANN002
    """Random values for every tensor no einsum of `workloads` writes, a real causal mask (0 on and below the
    diagonal, -inf above it) where there is one."""
    rng = np.random.default_rng(7)
    written = {e.output.tensor for w in workloads for e in w.einsums}
    inputs = {t.name: rng.standard_normal(t.shape) for w in workloads for t in w.tensors if t.name not in written}
    for name, value in inputs.items():
        if name.endswith("mask"):
            queries, keys = value.shape
            inputs[name] = np.where(np.arange(keys)[None, :] <= np.arange(queries)[:, None], 0.0, -np.inf)
    return inputs


@pytest.mark.parametrize("preset,params", [
    ("llama2-7b", {"phase": "prefill", "seq_len": 8, "attention_block": 2}),    # causal: whole blocks masked
    ("llama2-7b", {"phase": "decode", "kv_len": 7, "attention_block": 4}),
    ("bert-base", {"seq_len": 6, "type_vocab": 0, "pooler": False, "attention_block": 3}),   # no mask
])
def test_flash_attention_computes_the_same_numbers_as_the_three_pass_softmax(preset: str, params: dict) -> None:
    """`attention: flash` (FlashAttention's 1-pass cascade: running maximum, sum and weighted V over key blocks,
    rescaled as the maximum grows) gives the unfused attention's outputs to rounding, masked blocks included."""
    small = {"d_model": 16, "n_layers": 2, "n_heads": 2, "ffn_dim": 24, "vocab": 0, "batch": 2}
    if preset == "llama2-7b":
        small |= {"lm_head": False, "max_positions": 64}
    block = params.pop("attention_block")
    unfused = build(preset, **small, **params)
    flash = build(preset, **small, **params, attention="flash", attention_block=block)
    inputs = _same_inputs(unfused, flash)
    out = unfused.einsums[-1].output.tensor
    assert flash.einsums[-1].output.tensor == out
    np.testing.assert_allclose(evaluate_workload(flash, inputs)[out], evaluate_workload(unfused, inputs)[out],
                               rtol=1e-9, atol=1e-12)
    assert "L0.attn.softmax_running_max" in {e.name for e in flash.einsums}


def test_flash_attention_keeps_the_macs_and_takes_flashattention_2s_key_block() -> None:
    """The cascade's contractions do QK^T's and PV's MACs, no more (b x heads x P x M x e each): Llama-2-7B prefill
    of 512 tokens has the unfused form's. Its key block is FlashAttention-2's at head dim 128, 64 keys
    (flash_fwd_launch_template.h): 8 blocks over 512 keys; 4,095 keys (decode at kv 4,094) take the largest
    divisor of 4,095 up to 64, 63 (4,095 = 63 x 65)."""
    def contraction_macs(work) -> int:  # noqa: ANN001
        return sum(e.macs for e in work.einsums if e.op == "mac")

    unfused = build("llama2-7b", seq_len=512, n_layers=1)
    flash = build("llama2-7b", seq_len=512, n_layers=1, attention="flash")
    assert contraction_macs(flash) == contraction_macs(unfused)
    assert flash.name == "llama2-7b-prefill-b1-s512-flash"
    assert flash.einsum("L0.attn.qk").sizes["mk"] == 64 and flash.einsum("L0.attn.qk").sizes["mb"] == 8
    decode = build("llama2-7b", phase="decode", kv_len=4094, n_layers=1, attention="flash")
    assert decode.einsum("L0.attn.qk").sizes["mk"] == 63


@pytest.mark.parametrize("params,fix", [
    ({"attention_block": 64}, "set attention: flash"),
    ({"attention": "flash", "seq_len": 100, "attention_block": 64}, "choose a divisor of 100"),
    ({"attention": "flash", "attention_block": 0}, "set attention_block to 1 or more"),
])
def test_a_key_block_that_cannot_be_used_is_a_config_error(params: dict, fix: str) -> None:
    """A key block without the flash form, one that does not divide the keys, or one below 1 names its key."""
    with pytest.raises(ConfigError) as error:
        build("llama2-7b", n_layers=1, **params)
    assert error.value.key_path == "attention_block" and fix in str(error.value)
