"""Workload zoo: named presets of parametric generators (transformers, ResNets) that build Workloads.

>>> build("llama2-7b", phase="decode", kv_len=1024).name
'llama2-7b-decode-b1-kv1024'
"""
from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping

from accel_sim.errors import ConfigError
from accel_sim.spec.workload import Workload
from accel_sim.units import parse_bits
from accel_sim.zoo.cnn import ResNetSpec, resnet
from accel_sim.zoo.transformer import TransformerSpec, transformer

Spec = TransformerSpec | ResNetSpec


@dataclass(frozen=True)
class Preset:
    """A generator, its spec type and the parameter values that make it a named model."""

    generator: Callable[[Any], Workload]
    spec_type: type[Spec]
    defaults: Mapping[str, Any]
    source: str


def _preset(generator: Callable[[Any], Workload], spec_type: type[Spec], source: str, **defaults: Any) -> Preset:
    return Preset(generator, spec_type, MappingProxyType(defaults), source)


_LLAMA = dict(norm="rms", positional="rope", ffn="gated", norm_eps=1e-5, vocab=32000)
PRESETS: Mapping[str, Preset] = MappingProxyType({
    # Touvron et al. 2023, "Llama 2", Table 1 and the HF config meta-llama/Llama-2-7b-hf:
    # hidden 4096, 32 layers, 32 heads (no GQA at 7B), FFN 11008, vocab 32000, context 4096, RMSNorm eps 1e-5
    "llama2-7b": _preset(transformer, TransformerSpec, "Llama 2 (Touvron et al. 2023, Table 1)", **_LLAMA,
                         name="llama2-7b", d_model=4096, n_layers=32, n_heads=32, ffn_dim=11008,
                         max_positions=4096),
    # Meta Llama 3 model card and HF config meta-llama/Meta-Llama-3-8B: hidden 4096, 32 layers, 32 heads,
    # 8 KV heads (GQA), FFN 14336, vocab 128256, context 8192, RMSNorm eps 1e-5
    "llama3-8b": _preset(transformer, TransformerSpec, "Meta Llama 3 8B model card", **{**_LLAMA, "vocab": 128256},
                         name="llama3-8b", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, ffn_dim=14336,
                         max_positions=8192),
    # Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1: 96 layers, d 12288, 96 heads of
    # 128, FFN 4 x d = 49152, context 2048; GPT-2 BPE vocab 50257 with tied embeddings, learned positions,
    # LayerNorm, biases (the whole model: n_layers: 1 maps one layer)
    "gpt3-175b": _preset(transformer, TransformerSpec, "GPT-3 (Brown et al. 2020, Table 2.1)",
                         name="gpt3-175b", d_model=12288, n_layers=96, n_heads=96, ffn_dim=49152, ffn="mlp",
                         norm="layer", positional="learned", max_positions=2048, vocab=50257,
                         tie_embeddings=True, bias=True),
    # Brown et al. 2020, Table 2.1, "GPT-3 6.7B" (NeuPIMs' "GPT-3 7B", artifact configs/model_configs/gpt3-7B.json:
    # 32 heads, d 4096, vocab 50304): 32 layers, d 4096, 32 heads of 128, FFN 4 x d, context 2048
    "gpt3-7b": _preset(transformer, TransformerSpec, "GPT-3 6.7B (Brown et al. 2020, Table 2.1)",
                       name="gpt3-7b", d_model=4096, n_layers=32, n_heads=32, ffn_dim=16384, ffn="mlp",
                       norm="layer", positional="learned", max_positions=2048, vocab=50304,
                       tie_embeddings=True, bias=True),
    # Brown et al. 2020, Table 2.1, "GPT-3 13B": 40 layers, d 5140 in the table (5120 = 40 heads x 128 in
    # NeuPIMs' artifact configs/model_configs/gpt3-13B.json), FFN 4 x d, context 2048
    "gpt3-13b": _preset(transformer, TransformerSpec, "GPT-3 13B (Brown et al. 2020, Table 2.1)",
                        name="gpt3-13b", d_model=5120, n_layers=40, n_heads=40, ffn_dim=20480, ffn="mlp",
                        norm="layer", positional="learned", max_positions=2048, vocab=50304,
                        tie_embeddings=True, bias=True),
    # Devlin et al. 2019, "BERT", section 3: BERT-base L=12, H=768, A=12, FFN 4H = 3072; HF BertConfig
    # defaults: vocab 30522, 512 positions, 2 token types, LayerNorm eps 1e-12, post-LN, pooler on [CLS]
    "bert-base": _preset(transformer, TransformerSpec, "BERT-base (Devlin et al. 2019)",
                         name="bert-base", d_model=768, n_layers=12, n_heads=12, ffn_dim=3072, ffn="mlp",
                         norm="layer", norm_position="post", norm_eps=1e-12, positional="learned",
                         max_positions=512, vocab=30522, type_vocab=2, lm_head=False, pooler=True, bias=True,
                         causal=False, seq_len=128),
    # Jiang et al. 2024, "Mixtral of Experts", Table 1: dim 4096, 32 layers, head_dim 128, 32 heads,
    # 8 KV heads, hidden (expert FFN) 14336, vocab 32000, context 32768, 8 experts, top-2
    "mixtral-8x7b": _preset(transformer, TransformerSpec, "Mixtral 8x7B (Jiang et al. 2024, Table 1)", **_LLAMA,
                            name="mixtral-8x7b", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8,
                            head_dim=128, ffn_dim=14336, expert_ffn_dim=14336, n_experts=8, top_k=2,
                            max_positions=32768),
    # BitNet b1.58 3B as released for reproduction (HF config 1bitLLM/bitnet_b1_58-3B, the "BitNet-3B" T-MAC
    # benchmarks): hidden 3200, 26 layers, 32 heads, FFN 8640, vocab 32002, 2048 positions, RMSNorm eps 1e-5,
    # LLaMA-style blocks (Ma et al. 2024, "The Era of 1-bit LLMs"). Ternary weights are stored as 2-bit codes
    # (T-MAC, Wei et al. EuroSys 2025, runs them as 2-bit), so weight_bits defaults to 2; activations int8.
    "bitnet-b1.58-3b": _preset(transformer, TransformerSpec, "BitNet b1.58 3B (HF 1bitLLM/bitnet_b1_58-3B)",
                               **{**_LLAMA, "vocab": 32002}, name="bitnet-b1.58-3b", d_model=3200, n_layers=26,
                               n_heads=32, ffn_dim=8640, max_positions=2048, weight_bits=2, act_bits=8),
    # He et al. 2016, "Deep Residual Learning", Table 1 (torchvision resnet* layouts)
    **{f"resnet{depth}": _preset(resnet, ResNetSpec, f"ResNet-{depth} (He et al. 2016, Table 1)",
                                 name=f"resnet{depth}", depth=depth)
       for depth in (18, 34, 50, 101, 152)},
})

# parameters that the workload name already shows (see the generators' workload_name)


def list_presets() -> list[str]:
    """Names of every preset, sorted."""
    return sorted(PRESETS)


def parameters(name: str) -> dict[str, Any]:
    """Every parameter `build(name, ...)` accepts, with the preset's value for it."""
    preset = _lookup(name)
    fields = {f.name: f.default for f in dataclasses.fields(preset.spec_type) if f.name != "name"}
    return {**fields, **{k: v for k, v in preset.defaults.items() if k != "name"}}


def parameter_types(spec_type: type[Spec]) -> dict[str, Any]:
    """Parameter name -> type annotation of a spec class (without 'name')."""
    hints = typing.get_type_hints(spec_type)
    return {f.name: hints[f.name] for f in dataclasses.fields(spec_type) if f.name != "name"}


def build(name: str, **params: Any) -> Workload:
    """The workload of preset `name` with `params` overriding its defaults (bits may be dtypes like 'int4')."""
    preset = _lookup(name)
    types_ = parameter_types(preset.spec_type)
    values = {key: _checked(name, key, value, types_) for key, value in params.items()}
    merged = {**preset.defaults, **values}
    phase = merged.get("phase", "prefill")
    for key, wrong in (("kv_len", "prefill"), ("seq_len", "decode")):
        if key in params and phase == wrong and "phase" in types_:
            right = "decode" if wrong == "prefill" else "prefill"
            raise ConfigError(f"{key} applies to phase {right}, but the phase is {wrong}", key_path=key,
                              fix=f"remove {key}, or set phase: {right}")
    # the name is the model (the generator adds phase, batch, length and widths); other overrides belong to the
    # run's provenance (summary.json), not the name, so names stay short and readable (issue 19)
    merged["name"] = str(preset.defaults.get("name", name))
    return preset.generator(preset.spec_type(**merged))


def _lookup(name: str) -> Preset:
    if name not in PRESETS:
        close = difflib.get_close_matches(str(name), PRESETS, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"unknown zoo preset '{name}'", key_path="zoo",
                          fix=f"{hint}use one of: {', '.join(list_presets())}")
    return PRESETS[name]


def _checked(preset: str, key: str, value: Any, types_: Mapping[str, Any]) -> Any:
    """`value` if it fits parameter `key`'s type (bit widths parsed from dtypes), else ConfigError."""
    if key not in types_:
        close = difflib.get_close_matches(key, types_, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"preset '{preset}' has no parameter '{key}'", key_path=key,
                          fix=f"{hint}remove it or use one of: {', '.join(types_)}")
    if key.endswith("_bits"):
        try:
            return parse_bits(value)
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc), key_path=key,
                              fix="write a dtype (int2, int4, int8, fp16, bf16, fp32) or a positive bit count") from None
    if not _fits(value, types_[key]):
        raise ConfigError(f"{key} must be {_describe(types_[key])}, got {value!r}", key_path=key,
                          fix=f"give {key} {_describe(types_[key])}")
    return value


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string",
            type(None): "null"}.get(hint, getattr(hint, "__name__", str(hint)))


__all__ = ["PRESETS", "Preset", "build", "list_presets", "parameters", "parameter_types",
           "TransformerSpec", "ResNetSpec", "transformer", "resnet"]
