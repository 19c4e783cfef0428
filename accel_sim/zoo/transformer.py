"""Transformer generators: decoder-only LLMs (Llama, GPT-3, Mixtral) and encoders (BERT) as einsum cascades.

Conventions, stated once:

* Ranks: b batch, p query position, m key position, d model dim, h K/V head, g query heads per K/V head
  (GQA: K[b,h,m,e] is shared by the g queries of its group), e head dim, f FFN dim, v vocabulary,
  x expert, t tokens routed to one expert.
* ``kv_len`` is the number of positions already cached before a decode step. The step's token attends to
  ``kv_len + 1`` positions (the cache plus itself), as Hugging Face's DynamicCache does (the MANIFEST's
  ``llama2_7b_dims_2layers_decode_kv512`` export takes an attention_mask of length 513).
* KV cache: ``L{i}.attn.k_cache`` / ``v_cache`` of shape [b, h, kv_len + 1, e] at ``kv_bits``, kind
  "kv_cache": they are state written by earlier steps, not parameters, but like weights they live in
  memory and are read whole every step (memory levels place them by the 'kv_cache' role). The step writes its own row in place (``k_cache_write``), so the
  traffic is one row written and kv_len + 1 rows read. Prefill writes no cache (``use_cache=False``, like
  the MANIFEST exports). Every K/V tensor (projection outputs, RoPE outputs, caches) is at ``kv_bits``.
* Causal attention computes the full P x M score matrix, as the ONNX exports do, and adds a constant mask
  (0 / -inf) before the softmax; softmax is the 3-pass cascade max, sub+exp, sum, div with the
  1/sqrt(head_dim) scale folded into the exp pass (softmax(c*s) = exp(c*(s - max s)) / sum, c > 0).
  ``attention: flash`` writes it instead as FlashAttention's 1-pass cascade (FuseMax's, as
  workloads/flash_attention.einsum.yaml): keys in blocks of ``attention_block`` (default FlashAttention-2's key
  block, 128 keys at head dim 64 or less, else 64, or the largest divisor of the keys below it), a running
  maximum, sum and weighted sum of V per block, rescaled as the maximum grows, and one division at the end; the
  scores and the running statistics are 32-bit (FlashAttention-2's accumulators and softmax registers), the
  probabilities at ``act_bits`` for the second GEMM. The same numbers come out (the mask included: a causal
  FlashAttention kernel skips the masked blocks, which a rectangular cascade cannot; it computes and masks them).
  Whether the blocks stay on chip is the execution model's choice (``execution: scheduled`` fuses them).
* Every parameter tensor (matrices, embeddings, norm scales, biases) is kind "weight" at ``weight_bits`` (the
  token embedding and LM head at ``vocab_bits`` when given);
  activations and the RoPE/mask tables (kind "constant") are at ``act_bits``.
* Token embedding lookups and MoE dispatch/combine are data dependent, so they are views (gather,
  scatter_add) like the ONNX importer produces: free of compute, and the workload then has no numpy
  evaluation. ``vocab=0`` drops the embedding (the input is hidden states, as ``inputs_embeds``).
* MoE routing: router GEMM, top-k by k max passes (each masks the maxima found so far), softmax over the
  selected logits (Mixtral's renormalised top-k). Routing itself is data dependent, so the static
  workload assumes balanced routing: the batch*tokens*top_k (token, expert) pairs are dealt round-robin,
  expert i gets floor or ceil of the average and the counts sum to exactly tokens*top_k; experts that get
  no token in a step (decode at small batch) have their weights in memory but are not read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from accel_sim.errors import ConfigError
from accel_sim.spec.workload import Access, Expr, Workload
from accel_sim.zoo.graph import GraphBuilder, aff, at, call

TOKEN_ID_BITS = 32  # token ids fit in int32 for every vocabulary here (< 2^31 entries)


@dataclass(frozen=True)
class TransformerSpec:
    """Parameters of a transformer workload; the generator validates them (see `check_transformer`)."""

    name: str = "transformer"                          # model name: prefix of the workload name
    d_model: int = 4096                                # hidden size
    n_layers: int = 32                                 # decoder/encoder blocks
    n_heads: int = 32                                  # query heads
    n_kv_heads: int | None = None                      # K/V heads (GQA/MQA); None: n_heads (MHA)
    head_dim: int | None = None                        # None: d_model // n_heads
    ffn_dim: int = 11008                               # FFN hidden size of dense layers
    ffn: Literal["gated", "mlp"] = "gated"             # gated: SwiGLU silu(xWg)*(xWu); mlp: gelu(xW1)
    norm: Literal["rms", "layer"] = "rms"              # RMSNorm or LayerNorm
    norm_position: Literal["pre", "post"] = "pre"      # pre-LN (GPT, Llama) or post-LN (BERT)
    norm_eps: float = 1e-5                             # epsilon inside the norm's square root
    positional: Literal["rope", "learned"] = "rope"    # rotary (elementwise) or learned table
    max_positions: int = 4096                          # context: rows of the learned table, or RoPE's trained length
    beyond_context: bool = False                       # RoPE: let a step pass max_positions (a context extension)
    vocab: int = 32000                                 # embedding rows; 0: no embedding, hidden states in
    type_vocab: int = 0                                # segment (token type) embedding rows (BERT: 2)
    tie_embeddings: bool = False                       # LM head reads the embedding table
    lm_head: bool = True                               # compute vocabulary logits
    logits: Literal["all", "last"] = "all"             # prefill logits for every token or the last
    pooler: bool = False                               # BERT pooler: tanh(W x[CLS] + b)
    bias: bool = False                                 # linear layers carry biases (GPT-3, BERT)
    causal: bool = True                                # decoder (causal mask) or encoder
    attention: Literal["unfused", "flash"] = "unfused"  # 3-pass softmax, or FlashAttention's 1-pass cascade
    attention_block: int | None = None                 # flash: keys per block; None: FlashAttention-2's
    n_experts: int = 0                                 # MoE experts per layer; 0: dense FFN
    top_k: int = 2                                     # experts per token (MoE only)
    expert_ffn_dim: int | None = None                  # expert FFN hidden size; None: ffn_dim
    phase: Literal["prefill", "decode"] = "prefill"    # whole prompt, or one new token per sequence
    batch: int = 1                                     # sequences
    seq_len: int = 128                                 # prefill: tokens per sequence
    kv_len: int = 1024                                 # decode: positions cached before the new token
    weight_bits: int = 16                              # parameter width
    # width of the vocabulary matrices (token embedding, LM head); None: weight_bits. Quantized runtimes keep them
    # wider than the blocks: T-MAC's converter makes only the blocks' seven projections 2-bit, the rest F16
    vocab_bits: int | None = None
    act_bits: int = 16                                 # activation width
    kv_bits: int = 16                                  # K/V tensor and cache width


@dataclass(frozen=True)
class _Dims:
    B: int
    P: int      # query positions this step
    M: int      # key positions attended
    D: int
    H: int      # K/V heads
    G: int      # query heads per K/V head
    E: int
    pos0: int   # absolute position of the first query


def _bad(key: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(problem, fix=fix, key_path=key)


def check_transformer(spec: TransformerSpec) -> None:
    """Raise ConfigError (key path = the parameter) for values no transformer can have."""
    for key in ("d_model", "n_layers", "n_heads", "ffn_dim", "max_positions", "batch", "seq_len", "top_k",
                "weight_bits", "act_bits", "kv_bits", "n_kv_heads", "head_dim", "expert_ffn_dim", "vocab_bits",
                "attention_block"):
        value = getattr(spec, key)
        if value is not None and value < 1:
            raise _bad(key, f"{key} must be a positive integer, got {value}", f"set {key} to 1 or more")
    for key in ("vocab", "type_vocab", "n_experts", "kv_len"):
        if getattr(spec, key) < 0:
            raise _bad(key, f"{key} must be 0 or more, got {getattr(spec, key)}", f"set {key} to 0 or more")
    if not spec.norm_eps > 0:
        raise _bad("norm_eps", f"norm_eps must be positive, got {spec.norm_eps}", "use e.g. 1e-5")
    kv_heads = spec.n_kv_heads or spec.n_heads
    if spec.n_heads % kv_heads:
        raise _bad("n_kv_heads", f"n_heads {spec.n_heads} is not a multiple of n_kv_heads {kv_heads}",
                   "choose n_kv_heads that divides n_heads (GQA groups are equal)")
    if spec.head_dim is None and spec.d_model % spec.n_heads:
        raise _bad("n_heads", f"d_model {spec.d_model} is not divisible by n_heads {spec.n_heads}",
                   "set head_dim explicitly or pick n_heads that divides d_model")
    head_dim = spec.head_dim or spec.d_model // spec.n_heads
    if spec.positional == "rope" and head_dim % 2:
        raise _bad("head_dim", f"RoPE rotates pairs, but head_dim is odd ({head_dim})", "use an even head_dim")
    if spec.lm_head and spec.vocab == 0:
        raise _bad("lm_head", "an LM head needs a vocabulary, but vocab is 0", "set vocab or lm_head: false")
    if spec.tie_embeddings and not (spec.lm_head and spec.vocab):
        raise _bad("tie_embeddings", "tied embeddings need both an embedding (vocab > 0) and an LM head",
                   "set tie_embeddings: false")
    if spec.vocab_bits is not None and not spec.vocab:
        raise _bad("vocab_bits", "vocab_bits sets the width of the vocabulary matrices, but vocab is 0 (none)",
                   "leave vocab_bits out, or set vocab")
    if spec.type_vocab and not spec.vocab:
        raise _bad("type_vocab", "token-type embeddings need token embeddings (vocab > 0)", "set type_vocab: 0")
    if spec.n_experts and spec.top_k > spec.n_experts:
        raise _bad("top_k", f"top_k {spec.top_k} exceeds n_experts {spec.n_experts}",
                   f"use a top_k of at most {spec.n_experts}")
    if spec.phase == "decode" and not spec.causal:
        raise _bad("phase", "an encoder (causal: false) has no decode phase", "use phase: prefill")
    last = spec.kv_len + 1 if spec.phase == "decode" else spec.seq_len
    key = "kv_len" if spec.phase == "decode" else "seq_len"
    if spec.positional == "learned" and last > spec.max_positions:
        raise _bad(key, f"the learned position table has {spec.max_positions} rows but the step needs "
                        f"position {last - 1}",
                   f"keep {key} at most {spec.max_positions - (last - getattr(spec, key))} (the table's "
                   f"{spec.max_positions} rows, max_positions)")
    if last > spec.max_positions and not spec.beyond_context:
        raise _bad(key, f"{key} {getattr(spec, key):,} needs position {last - 1:,}, beyond the model's context of "
                        f"{spec.max_positions:,} positions (max_positions)",
                   f"keep {key} within the context ({key} at most {spec.max_positions - (last - getattr(spec, key))}"
                   f"), or set beyond_context: true to model a context extension")
    if spec.attention_block is not None and spec.attention != "flash":
        raise _bad("attention_block", "attention_block sets the key block of FlashAttention's cascade, but attention "
                   "is unfused", "set attention: flash, or leave attention_block out")
    keys = spec.kv_len + 1 if spec.phase == "decode" else spec.seq_len
    if spec.attention_block is not None and keys % spec.attention_block:
        raise _bad("attention_block", f"a key block of {spec.attention_block} does not divide the {keys} keys "
                   "attended", f"choose a divisor of {keys}, or leave attention_block out (the largest divisor up "
                   "to FlashAttention-2's block)")
    if spec.beyond_context and spec.positional == "learned":
        raise _bad("beyond_context", "a learned position table cannot be extended past its rows",
                   "set beyond_context: false, or raise max_positions")


def workload_name(spec: TransformerSpec) -> str:
    """E.g. 'llama2-7b-decode-b1-kv1024' or 'bert-base-b1-s128' (encoders have one phase), '-w4a16kv16'
    appended when any width differs from 16, '-vocab16' when the vocabulary matrices' differs from the weights',
    '-flash' for FlashAttention's cascade."""
    length = f"kv{spec.kv_len}" if spec.phase == "decode" else f"s{spec.seq_len}"
    phase = f"{spec.phase}-" if spec.causal else ""
    name = f"{spec.name}-{phase}b{spec.batch}-{length}"
    if (spec.weight_bits, spec.act_bits, spec.kv_bits) != (16, 16, 16):
        name += f"-w{spec.weight_bits}a{spec.act_bits}kv{spec.kv_bits}"
    if spec.vocab_bits not in (None, spec.weight_bits):
        name += f"-vocab{spec.vocab_bits}"
    if spec.attention == "flash":
        name += "-flash"
    return name


def transformer(spec: TransformerSpec) -> Workload:
    """The einsum cascade of one prefill or decode step of the transformer described by `spec`."""
    check_transformer(spec)
    decode = spec.phase == "decode"
    kv_heads = spec.n_kv_heads or spec.n_heads
    dims = _Dims(B=spec.batch, P=1 if decode else spec.seq_len, M=spec.kv_len + 1 if decode else spec.seq_len,
                 D=spec.d_model, H=kv_heads, G=spec.n_heads // kv_heads,
                 E=spec.head_dim or spec.d_model // spec.n_heads, pos0=spec.kv_len if decode else 0)
    g = GraphBuilder()
    x = _embed(g, spec, dims)
    if spec.norm_position == "post":
        x = _norm(g, spec, dims, "embed.norm", x)
    tables = _tables(g, spec, dims)
    for layer in range(spec.n_layers):
        x = _block(g, spec, dims, layer, x, tables)
    if spec.norm_position == "pre":
        x = _norm(g, spec, dims, "final_norm", x)
    if spec.lm_head:
        _lm_head(g, spec, dims, x)
    if spec.pooler:
        _pooler(g, spec, dims, x)
    # a decode step yields one token per sequence; a prefill pass processes whole sequences
    unit = "token" if spec.phase == "decode" else "sequence"
    return g.workload(workload_name(spec), items_per_run=spec.batch, item_unit=unit)


# ---------------------------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------------------------
BPD = ("b", "p", "d")


def _sizes(dims: _Dims, ranks: str, **extra: int) -> dict[str, int]:
    table = {"b": dims.B, "p": dims.P, "m": dims.M, "d": dims.D, "h": dims.H, "g": dims.G, "e": dims.E}
    table.update(extra)
    return {r: table[r] for r in ranks}


def _embed(g: GraphBuilder, spec: TransformerSpec, dims: _Dims) -> str:
    W, A = spec.weight_bits, spec.act_bits
    shape = (dims.B, dims.P, dims.D)
    if spec.vocab:
        ids = g.tensor("input_ids", ("b", "p"), (dims.B, dims.P), TOKEN_ID_BITS)
        table = g.tensor("embed.tokens", ("v", "d"), (spec.vocab, dims.D), spec.vocab_bits or W, "weight")
        base = g.view(g.tensor("embed.tok", BPD, shape, A), (ids, table), "gather")
    else:
        base = g.tensor("hidden_in", BPD, shape, A)
    terms: list[Expr] = [at(base, *BPD)]
    if spec.positional == "learned":
        pos = g.tensor("embed.positions", ("n", "d"), (spec.max_positions, dims.D), W, "weight")
        terms.append(at(pos, aff(dims.pos0, p=1), "d"))
    if spec.type_vocab:
        type_ids = g.tensor("token_type_ids", ("b", "p"), (dims.B, dims.P), TOKEN_ID_BITS)
        type_table = g.tensor("embed.types", ("v", "d"), (spec.type_vocab, dims.D), W, "weight")
        typ = g.view(g.tensor("embed.typ", BPD, shape, A), (type_ids, type_table), "gather")
        terms.append(at(typ, *BPD))
    if len(terms) == 1:
        return base
    out = g.tensor("embed.sum", BPD, shape, A)
    return g.einsum("embed.add", at(out, *BPD), _sum(terms), _sizes(dims, "bpd"))


def _sum(terms: list[Expr]) -> Expr:
    expr = terms[0]
    for term in terms[1:]:
        expr = call("add", expr, term)
    return expr


def _tables(g: GraphBuilder, spec: TransformerSpec, dims: _Dims) -> dict[str, str]:
    """RoPE cos/sin rows for this step's positions and the causal mask, shared by all layers."""
    out = {}
    if spec.positional == "rope":
        for name in ("cos", "sin"):
            out[name] = g.tensor(f"rope.{name}", ("p", "e"), (dims.P, dims.E), spec.act_bits, "constant")
    if spec.causal and spec.phase == "prefill":
        out["mask"] = g.tensor("attn.mask", ("p", "m"), (dims.P, dims.M), spec.act_bits, "constant")
    return out


def _norm(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, prefix: str, x: str) -> str:
    """RMSNorm x*rsqrt(mean(x^2)+eps)*w or LayerNorm (x-mean)*rsqrt(var+eps)*w+b over d."""
    W, A, D = spec.weight_bits, spec.act_bits, dims.D
    bp, bpd = _sizes(dims, "bp"), _sizes(dims, "bpd")
    row = (dims.B, dims.P)
    weight = g.tensor(f"{prefix}.weight", ("d",), (D,), W, "weight")
    if spec.norm == "rms":
        centered = x
        var = g.tensor(f"{prefix}.mean_sq", ("b", "p"), row, A)
        g.einsum(f"{prefix}.mean_square", at(var, "b", "p"), call("div", call("square", at(x, *BPD)), D), bpd)
    else:
        mean = g.tensor(f"{prefix}.mean", ("b", "p"), row, A)
        g.einsum(f"{prefix}.mean_op", at(mean, "b", "p"), call("div", at(x, *BPD), D), bpd)
        centered = g.tensor(f"{prefix}.centered", BPD, (dims.B, dims.P, D), A)
        g.einsum(f"{prefix}.center", at(centered, *BPD), call("sub", at(x, *BPD), at(mean, "b", "p")), bpd)
        var = g.tensor(f"{prefix}.var", ("b", "p"), row, A)
        g.einsum(f"{prefix}.variance", at(var, "b", "p"), call("div", call("square", at(centered, *BPD)), D), bpd)
    inv = g.tensor(f"{prefix}.inv_rms", ("b", "p"), row, A)
    g.einsum(f"{prefix}.rsqrt", at(inv, "b", "p"), call("rsqrt", call("add", at(var, "b", "p"), spec.norm_eps)), bp)
    y = g.tensor(f"{prefix}.out", BPD, (dims.B, dims.P, D), A)
    expr: Expr = call("mul", call("mul", at(centered, *BPD), at(inv, "b", "p")), at(weight, "d"))
    if spec.norm == "layer":
        expr = call("add", expr, at(g.tensor(f"{prefix}.bias", ("d",), (D,), W, "weight"), "d"))
    return g.einsum(f"{prefix}.scale", at(y, *BPD), expr, bpd)


def _block(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, layer: int, x: str, tables: dict[str, str]) -> str:
    """One block: attention and FFN (dense or MoE), each with its residual and norm (pre or post)."""
    pre = spec.norm_position == "pre"
    ln = f"L{layer}"
    h = _norm(g, spec, dims, f"{ln}.attn_norm", x) if pre else x
    attn, attn_bias = _attention(g, spec, dims, f"{ln}.attn", h, tables)
    x = _residual(g, spec, dims, f"{ln}.attn_residual", x, attn, attn_bias)
    if not pre:
        x = _norm(g, spec, dims, f"{ln}.attn_norm", x)
    h = _norm(g, spec, dims, f"{ln}.ffn_norm", x) if pre else x
    if spec.n_experts:
        ffn, ffn_bias = _moe(g, spec, dims, f"{ln}.moe", h), None
    else:
        ffn, ffn_bias = _ffn(g, spec, f"{ln}.ffn", h, {"b": dims.B, "p": dims.P}, dims.D, spec.ffn_dim)
    x = _residual(g, spec, dims, f"{ln}.ffn_residual", x, ffn, ffn_bias)
    if not pre:
        x = _norm(g, spec, dims, f"{ln}.ffn_norm", x)
    return x


def _residual(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, name: str, x: str, y: str,
              bias: str | None) -> str:
    """x + y (+ the output projection's bias, fused here as the exports' Add nodes do)."""
    expr: Expr = call("add", at(x, *BPD), at(y, *BPD))
    if bias is not None:
        expr = call("add", expr, at(bias, "d"))
    out = g.tensor(f"{name}.out", BPD, (dims.B, dims.P, dims.D), spec.act_bits)
    return g.einsum(f"{name}.add", at(out, *BPD), expr, _sizes(dims, "bpd"))


def _bias_add(g: GraphBuilder, spec: TransformerSpec, name: str, x: str, ranks: tuple[str, ...],
              shape: tuple[int, ...], bias_ranks: tuple[str, ...], bits: int) -> str:
    sizes = dict(zip(ranks, shape))
    bias = g.tensor(f"{name}.bias", bias_ranks, tuple(sizes[r] for r in bias_ranks), spec.weight_bits, "weight")
    out = g.tensor(f"{name}.biased", ranks, shape, bits)
    return g.einsum(f"{name}.bias_add", at(out, *ranks), call("add", at(x, *ranks), at(bias, *bias_ranks)), sizes)


def _rope(g: GraphBuilder, name: str, x: str, ranks: tuple[str, ...], shape: tuple[int, ...], bits: int,
          tables: dict[str, str]) -> str:
    """x*cos + rotate_half(x)*sin; rotate_half(x)[e] = x[e-E/2] - x[e+E/2] (out-of-range reads are 0)."""
    half = shape[ranks.index("e")] // 2

    def shifted(offset: int) -> Access:
        return at(x, *(aff(offset, e=1) if r == "e" else r for r in ranks))

    rotated = call("sub", shifted(-half), shifted(half))
    expr = call("add", call("mul", at(x, *ranks), at(tables["cos"], "p", "e")),
                call("mul", rotated, at(tables["sin"], "p", "e")))
    out = g.tensor(f"{name}.out", ranks, shape, bits)
    return g.einsum(f"{name}.rotate", at(out, *ranks), expr, dict(zip(ranks, shape)))


def _attention(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, a: str, x: str,
               tables: dict[str, str]) -> tuple[str, str | None]:
    """Multi-head (GQA) attention of one block; returns its output and the output bias (if any)."""
    W, A, K = spec.weight_bits, spec.act_bits, spec.kv_bits
    B, P, M, D, H, G, E = dims.B, dims.P, dims.M, dims.D, dims.H, dims.G, dims.E
    q_ranks, q_shape = ("b", "h", "g", "p", "e"), (B, H, G, P, E)
    k_ranks, k_shape = ("b", "h", "p", "e"), (B, H, P, E)
    wq = g.tensor(f"{a}.wq", ("d", "h", "g", "e"), (D, H, G, E), W, "weight")
    wk = g.tensor(f"{a}.wk", ("d", "h", "e"), (D, H, E), W, "weight")
    wv = g.tensor(f"{a}.wv", ("d", "h", "e"), (D, H, E), W, "weight")
    wo = g.tensor(f"{a}.wo", ("h", "g", "e", "d"), (H, G, E, D), W, "weight")
    q = g.contract(f"{a}.q_proj", at(g.tensor(f"{a}.q", q_ranks, q_shape, A), *q_ranks),
                   at(x, *BPD), at(wq, "d", "h", "g", "e"), _sizes(dims, "bhgped"))
    k = g.contract(f"{a}.k_proj", at(g.tensor(f"{a}.k", k_ranks, k_shape, K), *k_ranks),
                   at(x, *BPD), at(wk, "d", "h", "e"), _sizes(dims, "bhped"))
    v = g.contract(f"{a}.v_proj", at(g.tensor(f"{a}.v", k_ranks, k_shape, K), *k_ranks),
                   at(x, *BPD), at(wv, "d", "h", "e"), _sizes(dims, "bhped"))
    if spec.bias:
        q = _bias_add(g, spec, f"{a}.q", q, q_ranks, q_shape, ("h", "g", "e"), A)
        k = _bias_add(g, spec, f"{a}.k", k, k_ranks, k_shape, ("h", "e"), K)
        v = _bias_add(g, spec, f"{a}.v", v, k_ranks, k_shape, ("h", "e"), K)
    if spec.positional == "rope":
        q = _rope(g, f"{a}.q_rope", q, q_ranks, q_shape, A, tables)
        k = _rope(g, f"{a}.k_rope", k, k_ranks, k_shape, K, tables)
    if spec.phase == "decode":
        cache_shape = (B, H, M, E)
        for name, new in (("k", k), ("v", v)):
            cache = g.tensor(f"{a}.{name}_cache", ("b", "h", "m", "e"), cache_shape, K, kind="kv_cache")
            g.einsum(f"{a}.{name}_cache_write", at(cache, "b", "h", aff(spec.kv_len, p=1), "e"),
                     at(new, *k_ranks), _sizes(dims, "bhpe"))
        k, v = f"{a}.k_cache", f"{a}.v_cache"
    if spec.attention == "flash":
        context = _flash_attention(g, spec, dims, a, q, k, v, tables)
    else:
        context = _softmax_attention(g, spec, dims, a, q, k, v, tables)
    out = g.tensor(f"{a}.out", BPD, (B, P, D), A)
    g.contract(f"{a}.o_proj", at(out, *BPD), at(context, *q_ranks), at(wo, "h", "g", "e", "d"),
               _sizes(dims, "bpdhge"))
    bias = g.tensor(f"{a}.o_proj.bias", ("d",), (D,), W, "weight") if spec.bias else None
    return out, bias


def _softmax_attention(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, a: str, q: str, k: str, v: str,
                       tables: dict[str, str]) -> str:
    """Scores, the 3-pass softmax and the weighted sum of V (module docstring); returns the context tensor."""
    A = spec.act_bits
    B, P, M, H, G, E = dims.B, dims.P, dims.M, dims.H, dims.G, dims.E
    q_ranks, q_shape = ("b", "h", "g", "p", "e"), (B, H, G, P, E)
    s_ranks, s_shape, row = ("b", "h", "g", "p", "m"), (B, H, G, P, M), ("b", "h", "g", "p")
    bhgpm = _sizes(dims, "bhgpm")
    scores = g.tensor(f"{a}.scores", s_ranks, s_shape, A)
    g.contract(f"{a}.qk", at(scores, *s_ranks), at(q, *q_ranks), at(k, "b", "h", "m", "e"), _sizes(dims, "bhgpme"))
    logits: Expr = at(scores, *s_ranks)
    if "mask" in tables:
        logits = call("add", logits, at(tables["mask"], "p", "m"))
    row_max = g.tensor(f"{a}.row_max", row, s_shape[:4], A)
    g.einsum(f"{a}.softmax_max", at(row_max, *row), logits, bhgpm, reduce="max")
    expo = g.tensor(f"{a}.exp", s_ranks, s_shape, A)
    scale = 1.0 / math.sqrt(E)  # scaled dot-product attention (Vaswani et al. 2017, eq. 1)
    g.einsum(f"{a}.softmax_exp", at(expo, *s_ranks),
             call("exp", call("mul", call("sub", logits, at(row_max, *row)), scale)), bhgpm)
    row_sum = g.tensor(f"{a}.row_sum", row, s_shape[:4], A)
    g.einsum(f"{a}.softmax_sum", at(row_sum, *row), at(expo, *s_ranks), bhgpm)
    probs = g.tensor(f"{a}.probs", s_ranks, s_shape, A)
    g.einsum(f"{a}.softmax_div", at(probs, *s_ranks), call("div", at(expo, *s_ranks), at(row_sum, *row)), bhgpm)
    context = g.tensor(f"{a}.context", q_ranks, q_shape, A)
    g.contract(f"{a}.pv", at(context, *q_ranks), at(probs, *s_ranks), at(v, "b", "h", "m", "e"),
               _sizes(dims, "bhgpem"))
    return context


FLASH_KEY_BLOCK = {64: 128, 128: 64}   # FlashAttention-2's Bc on sm80 by head dim (flash_fwd_launch_template.h)
STATE_BITS = 32                        # FlashAttention-2's scores and softmax statistics: fp32 registers


def flash_key_block(spec: TransformerSpec, keys: int, head_dim: int) -> int:
    """Keys per block of the flash cascade: `attention_block`, else FlashAttention-2's block for the head dim
    (128 up to 64, else 64), or the largest divisor of `keys` below it."""
    if spec.attention_block is not None:
        return spec.attention_block
    block = FLASH_KEY_BLOCK[64] if head_dim <= 64 else FLASH_KEY_BLOCK[128]
    return max(d for d in range(1, min(block, keys) + 1) if keys % d == 0)


def _flash_attention(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, a: str, q: str, k: str, v: str,
                     tables: dict[str, str]) -> str:
    """FlashAttention's 1-pass cascade over key blocks (module docstring); returns the context tensor."""
    A, S = spec.act_bits, STATE_BITS
    B, P, M, H, G, E = dims.B, dims.P, dims.M, dims.H, dims.G, dims.E
    M0 = flash_key_block(spec, M, E)
    M1 = M // M0
    key = aff(mb=M0, mk=1)
    sizes = {"b": B, "h": H, "g": G, "mb": M1, "mk": M0, "p": P}   # a block's keys
    with_e = {**sizes, "e": E}
    per_block = {"b": B, "h": H, "g": G, "mb": M1, "p": P}          # one value per block and query
    block, stat = ("b", "h", "g", "mb", "mk", "p"), ("b", "h", "g", "mb", "p")
    block_shape, stat_shape = (B, H, G, M1, M0, P), (B, H, G, M1, P)
    running, running_shape = ("b", "h", "g", "mb", "p"), (B, H, G, M1 + 1, P)
    scale = 1.0 / math.sqrt(E)  # scaled dot-product attention, folded into the exponentials as in the 3-pass form

    def state(name: str, init: float) -> str:
        return g.tensor(f"{a}.{name}", running, running_shape, S, init=init)

    def before(name: str) -> Access:
        return at(name, "b", "h", "g", "mb", "p")

    def after(name: str) -> Access:
        return at(name, "b", "h", "g", aff(1, mb=1), "p")

    scores = g.tensor(f"{a}.scores", block, block_shape, S)
    g.contract(f"{a}.qk", at(scores, *block), at(q, "b", "h", "g", "p", "e"), at(k, "b", "h", key, "e"), with_e)
    logits: Expr = at(scores, *block)
    if "mask" in tables:
        logits = call("add", logits, at(tables["mask"], "p", key))
    block_max = g.tensor(f"{a}.block_max", stat, stat_shape, S)
    g.einsum(f"{a}.softmax_block_max", at(block_max, *stat), logits, sizes, reduce="max")
    row_max = state("row_max", -math.inf)
    g.einsum(f"{a}.softmax_running_max", after(row_max), call("max", before(row_max), at(block_max, *stat)),
             per_block)
    probs = g.tensor(f"{a}.probs", block, block_shape, A)
    g.einsum(f"{a}.softmax_exp", at(probs, *block),
             call("exp", call("mul", call("sub", logits, after(row_max)), scale)), sizes)
    block_sum = g.tensor(f"{a}.block_sum", stat, stat_shape, S)
    g.einsum(f"{a}.softmax_block_sum", at(block_sum, *stat), at(probs, *block), sizes)
    block_pv = g.tensor(f"{a}.block_pv", ("b", "h", "g", "e", "mb", "p"), (B, H, G, E, M1, P), S)
    g.contract(f"{a}.pv", at(block_pv, "b", "h", "g", "e", "mb", "p"), at(probs, *block),
               at(v, "b", "h", key, "e"), with_e)
    rescale = g.tensor(f"{a}.rescale", stat, stat_shape, S)
    g.einsum(f"{a}.softmax_rescale", at(rescale, *stat),
             call("exp", call("mul", call("sub", before(row_max), after(row_max)), scale)), per_block)
    row_sum = state("row_sum", 0.0)
    g.einsum(f"{a}.softmax_running_sum", after(row_sum),
             call("add", at(block_sum, *stat), call("mul", before(row_sum), at(rescale, *stat))), per_block)
    acc_ranks = ("b", "h", "g", "e", "mb", "p")
    acc = g.tensor(f"{a}.row_pv", acc_ranks, (B, H, G, E, M1 + 1, P), S, init=0.0)
    g.einsum(f"{a}.pv_running", at(acc, "b", "h", "g", "e", aff(1, mb=1), "p"),
             call("add", at(block_pv, *acc_ranks), call("mul", at(acc, *acc_ranks), at(rescale, *stat))),
             {**per_block, "e": E})
    context = g.tensor(f"{a}.context", ("b", "h", "g", "p", "e"), (B, H, G, P, E), A)
    g.einsum(f"{a}.softmax_div", at(context, "b", "h", "g", "p", "e"),
             call("div", at(acc, "b", "h", "g", "e", aff(M1), "p"), at(row_sum, "b", "h", "g", aff(M1), "p")),
             {"b": B, "h": H, "g": G, "p": P, "e": E})
    return context


def _ffn(g: GraphBuilder, spec: TransformerSpec, f: str, x: str, tokens: dict[str, int], D: int,
         F: int) -> tuple[str, str | None]:
    """Dense FFN over the token ranks `tokens`; returns its output and the down projection's bias."""
    W, A = spec.weight_bits, spec.act_bits
    tok = tuple(tokens)
    tok_shape = tuple(tokens.values())
    xd, hid = (*tok, "d"), (*tok, "f")
    sizes_df = {**tokens, "f": F, "d": D}
    if spec.ffn == "gated":
        w_gate = g.tensor(f"{f}.w_gate", ("d", "f"), (D, F), W, "weight")
        w_up = g.tensor(f"{f}.w_up", ("d", "f"), (D, F), W, "weight")
        gate = g.contract(f"{f}.gate_proj", at(g.tensor(f"{f}.gate", hid, (*tok_shape, F), A), *hid),
                          at(x, *xd), at(w_gate, "d", "f"), sizes_df)
        up = g.contract(f"{f}.up_proj", at(g.tensor(f"{f}.up", hid, (*tok_shape, F), A), *hid),
                        at(x, *xd), at(w_up, "d", "f"), sizes_df)
        act_expr: Expr = call("mul", call("silu", at(gate, *hid)), at(up, *hid))
    else:
        w_in = g.tensor(f"{f}.w_in", ("d", "f"), (D, F), W, "weight")
        pre = g.contract(f"{f}.in_proj", at(g.tensor(f"{f}.pre", hid, (*tok_shape, F), A), *hid),
                         at(x, *xd), at(w_in, "d", "f"), sizes_df)
        inner: Expr = at(pre, *hid)
        if spec.bias:
            inner = call("add", inner, at(g.tensor(f"{f}.in_proj.bias", ("f",), (F,), W, "weight"), "f"))
        act_expr = call("gelu", inner)
    act = g.tensor(f"{f}.act", hid, (*tok_shape, F), A)
    g.einsum(f"{f}.activation", at(act, *hid), act_expr, {**tokens, "f": F})
    w_down = g.tensor(f"{f}.w_down", ("f", "d"), (F, D), W, "weight")
    out = g.tensor(f"{f}.out", xd, (*tok_shape, D), A)
    g.contract(f"{f}.down_proj", at(out, *xd), at(act, *hid), at(w_down, "f", "d"), sizes_df)
    bias = g.tensor(f"{f}.down_proj.bias", ("d",), (D,), W, "weight") if spec.bias else None
    return out, bias


def expert_tokens(tokens: int, top_k: int, n_experts: int) -> tuple[int, ...]:
    """Tokens per expert under balanced routing: tokens*top_k pairs dealt round-robin (sum is exact)."""
    pairs = tokens * top_k
    return tuple(pairs // n_experts + (1 if i < pairs % n_experts else 0) for i in range(n_experts))


def _moe(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, prefix: str, x: str) -> str:
    """Router GEMM, top-k routing weights, per-expert FFNs on their dispatched tokens, weighted combine."""
    W, A, X, k = spec.weight_bits, spec.act_bits, spec.n_experts, spec.top_k
    bpx, bp = ("b", "p", "x"), ("b", "p")
    sizes_x = _sizes(dims, "bpx", x=X)
    w_router = g.tensor(f"{prefix}.w_router", ("d", "x"), (dims.D, X), W, "weight")
    logits = g.contract(f"{prefix}.router", at(g.tensor(f"{prefix}.router_logits", bpx, (dims.B, dims.P, X), A),
                                               *bpx), at(x, *BPD), at(w_router, "d", "x"), _sizes(dims, "bpxd", x=X))
    # k-th largest logit: each pass takes the max of the logits below the previous pass's max
    threshold = ""
    for rank in range(k):
        prev = threshold
        threshold = g.tensor(f"{prefix}.top{rank + 1}", bp, (dims.B, dims.P), A)
        candidates: Expr = at(logits, *bpx)
        if prev:
            candidates = call("where", call("lt", at(logits, *bpx), at(prev, *bp)), at(logits, *bpx), -math.inf)
        g.einsum(f"{prefix}.top{rank + 1}_max", at(threshold, *bp), candidates, sizes_x, reduce="max")
    top1 = f"{prefix}.top1"
    numer = g.tensor(f"{prefix}.gate_exp", bpx, (dims.B, dims.P, X), A)
    g.einsum(f"{prefix}.gate_exp_op", at(numer, *bpx),
             call("where", call("lt", at(logits, *bpx), at(threshold, *bp)), 0.0,
                  call("exp", call("sub", at(logits, *bpx), at(top1, *bp)))), sizes_x)
    denom = g.tensor(f"{prefix}.gate_sum", bp, (dims.B, dims.P), A)
    g.einsum(f"{prefix}.gate_sum_op", at(denom, *bp), at(numer, *bpx), sizes_x)
    gates = g.tensor(f"{prefix}.gates", bpx, (dims.B, dims.P, X), A)
    g.einsum(f"{prefix}.gate_div", at(gates, *bpx), call("div", at(numer, *bpx), at(denom, *bp)), sizes_x)
    weighted = []
    F = spec.expert_ffn_dim or spec.ffn_dim
    for i, n in enumerate(expert_tokens(dims.B * dims.P, k, X)):
        e = f"{prefix}.expert{i}"
        if n == 0:
            _expert_weights(g, spec, e, dims.D, F)
            continue
        xe = g.view(g.tensor(f"{e}.in", ("t", "d"), (n, dims.D), A), (x, gates), "gather")
        ge = g.view(g.tensor(f"{e}.route_weight", ("t",), (n,), A), (gates,), "gather")
        ye, bias = _ffn(g, spec, e, xe, {"t": n}, dims.D, F)
        expr: Expr = at(ye, "t", "d") if bias is None else call("add", at(ye, "t", "d"), at(bias, "d"))
        yw = g.tensor(f"{e}.weighted", ("t", "d"), (n, dims.D), A)
        weighted.append(g.einsum(f"{e}.scale", at(yw, "t", "d"), call("mul", expr, at(ge, "t")), {"t": n, "d": dims.D}))
    return g.view(g.tensor(f"{prefix}.out", BPD, (dims.B, dims.P, dims.D), A), tuple(weighted), "scatter_add")


def _expert_weights(g: GraphBuilder, spec: TransformerSpec, e: str, D: int, F: int) -> None:
    """Weights of an expert no token reaches this step: resident in memory, not read."""
    W = spec.weight_bits
    names = ("w_gate", "w_up") if spec.ffn == "gated" else ("w_in",)
    for name in names:
        g.tensor(f"{e}.{name}", ("d", "f"), (D, F), W, "weight")
    g.tensor(f"{e}.w_down", ("f", "d"), (F, D), W, "weight")
    if spec.bias:
        if spec.ffn == "mlp":
            g.tensor(f"{e}.in_proj.bias", ("f",), (F,), W, "weight")
        g.tensor(f"{e}.down_proj.bias", ("d",), (D,), W, "weight")


def _lm_head(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, x: str) -> str:
    """Vocabulary logits for every position, or the last one (`logits: last`)."""
    last = spec.logits == "last" and dims.P > 1
    P = 1 if last else dims.P
    pos = aff(dims.P - 1, p=1) if last else "p"
    if spec.tie_embeddings:
        weight = at("embed.tokens", "v", "d")
    else:
        weight = at(g.tensor("lm_head.weight", ("d", "v"), (dims.D, spec.vocab), spec.vocab_bits or spec.weight_bits,
                             "weight"), "d", "v")
    out = g.tensor("logits", ("b", "p", "v"), (dims.B, P, spec.vocab), spec.act_bits)
    return g.contract("lm_head", at(out, "b", "p", "v"), at(x, "b", pos, "d"), weight,
                      {"b": dims.B, "p": P, "v": spec.vocab, "d": dims.D})


def _pooler(g: GraphBuilder, spec: TransformerSpec, dims: _Dims, x: str) -> str:
    """BERT pooler: tanh(W x[:, 0] + b) on the first ([CLS]) token."""
    W, A, D = spec.weight_bits, spec.act_bits, dims.D
    weight = g.tensor("pooler.weight", ("c", "d"), (D, D), W, "weight")
    bias = g.tensor("pooler.bias", ("d",), (D,), W, "weight")
    pre = g.contract("pooler.dense", at(g.tensor("pooler.pre", ("b", "d"), (dims.B, D), A), "b", "d"),
                     at(x, "b", aff(0), "c"), at(weight, "c", "d"), {"b": dims.B, "d": D, "c": D})
    out = g.tensor("pooler.out", ("b", "d"), (dims.B, D), A)
    return g.einsum("pooler.tanh", at(out, "b", "d"), call("tanh", call("add", at(pre, "b", "d"), at(bias, "d"))),
                    {"b": dims.B, "d": D})
