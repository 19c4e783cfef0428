"""Workload recipes: shipped files load; bad recipes raise ConfigError with file, line, key path and fix."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.errors import ConfigError
from accel_sim.io.yaml import load_yaml, parse_yaml
from accel_sim.zoo import build
from accel_sim.io.recipe import load_recipe

WORKLOADS = Path(__file__).resolve().parents[3] / "workloads"


def _load(text: str):
    return load_recipe(parse_yaml(text, "recipe.yaml"))


def _error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        _load(text)
    return err.value


@pytest.mark.parametrize(("file", "name", "macs"), [
    ("llama2-7b-decode.yaml", "llama2-7b-decode-b1-kv1024",
     32 * (4 * 4096**2 + 3 * 4096 * 11008) + 4096 * 32000 + 2 * 32 * 4096 * 1025),
    ("bert-base.yaml", "bert-base-b1-s128", 11_174_215_680),
    ("resnet50.yaml", "resnet50-b1-224-w8a8", 4_089_184_256),
])
def test_shipped_recipes_load(file: str, name: str, macs: int) -> None:
    """Shipped recipes give the named workload with the closed-form / MANIFEST MAC counts."""
    w = load_recipe(load_yaml(WORKLOADS / file))
    assert (w.name, w.total_macs) == (name, macs)


def test_recipe_equals_build_with_same_parameters() -> None:
    """A recipe is build(preset, **params): same tensors and einsums (dtype names become widths)."""
    w = _load("zoo: llama2-7b\nphase: decode\nbatch: 8\nkv_len: 64\nweight_bits: int4\nn_layers: 2\n")
    assert w == build("llama2-7b", phase="decode", batch=8, kv_len=64, weight_bits=4, n_layers=2)


def test_unknown_preset_lists_presets() -> None:
    """An unknown preset points at the zoo line and lists the presets."""
    err = _error("# comment\nzoo: llama-7b\nbatch: 1\n")
    assert (err.file, err.line, err.key_path) == ("recipe.yaml", 2, "zoo")
    assert "unknown zoo preset 'llama-7b'" in str(err) and "mixtral-8x7b" in err.fix


def test_unknown_key_suggests_the_close_one() -> None:
    """A misspelt key is named with its line and the closest valid key."""
    err = _error("zoo: llama2-7b\nphase: decode\nkv_length: 5\n")
    assert (err.line, err.key_path) == (3, "kv_length")
    assert "did you mean 'kv_len'" in err.fix


def test_wrong_phase_lists_the_phases() -> None:
    """phase must be prefill or decode."""
    err = _error("zoo: llama2-7b\nphase: training\n")
    assert (err.line, err.key_path) == (2, "phase")
    assert "'prefill'" in str(err) and "'decode'" in str(err)


def test_kv_len_on_a_cnn_is_rejected() -> None:
    """A transformer parameter given to a ResNet preset is an error at its line, listing ResNet's parameters."""
    err = _error("zoo: resnet50\nkv_len: 1024\n")
    assert (err.line, err.key_path) == (2, "kv_len")
    assert "preset 'resnet50' has no parameter 'kv_len'" in str(err) and "image_size" in err.fix


def test_negative_batch_is_rejected() -> None:
    """batch must be positive; the error points at its line."""
    err = _error("zoo: llama2-7b\nphase: decode\nbatch: -2\n")
    assert (err.line, err.key_path) == (3, "batch")
    assert "batch must be a positive integer, got -2" in str(err) and "Fix:" in str(err)


def test_kv_len_with_prefill_is_rejected() -> None:
    """kv_len is a decode parameter: with phase prefill it points at its line and says to set decode."""
    err = _error("zoo: llama2-7b\nphase: prefill\nkv_len: 10\n")
    assert (err.line, err.key_path) == (3, "kv_len") and "phase: decode" in err.fix


def test_recipe_must_be_a_mapping() -> None:
    """A list is no recipe."""
    err = _error("- zoo: llama2-7b\n")
    assert err.line == 1 and "mapping" in str(err)


@pytest.mark.parametrize(("line", "key", "problem"), [
    ("image_size: '224'", "image_size", "expected an integer, got the string '224'"),
    ("batch: 2.0", "batch", "expected an integer, got 2.0"),
    ("depth: 50.0", "depth", "expected an integer, got 50.0"),
    ("weight_bits: 8.0", "weight_bits", "expected an integer, got 8.0"),
    ("batch: .inf", "batch", "expected an integer, got inf"),
    ("batch: .nan", "batch", "expected an integer, got nan"),
])
def test_integer_parameters_are_not_converted(line: str, key: str, problem: str) -> None:
    """An integer parameter is refused as a string or a float, whole or not, as an einsum rank size is
    (image_size: '224' and batch: 2.0 were converted); the error names the key, its line and the fix."""
    err = _error(f"zoo: resnet50\n{line}\n")
    assert (err.line, err.key_path) == (2, key)
    assert problem in err.problem and "whole number" in err.fix


def test_optional_integers_and_dtype_names_still_load() -> None:
    """n_kv_heads: null (the preset default), weight_bits: int4 (a dtype name) and norm_eps: 1e-6 (a YAML 1.1
    string pydantic reads as a number) are accepted; n_kv_heads: '8' is not."""
    w = _load("zoo: llama2-7b\nn_layers: 1\nn_kv_heads: null\nweight_bits: int4\nnorm_eps: 1e-6\n")
    assert w == build("llama2-7b", n_layers=1, weight_bits=4, norm_eps=1e-6)
    assert "got the string '8'" in _error("zoo: llama2-7b\nn_kv_heads: '8'\n").problem
