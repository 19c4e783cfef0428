"""Workload recipes: YAML files that name a zoo preset and override its parameters.

    zoo: llama2-7b
    phase: decode
    batch: 8
    kv_len: 1024
    weight_bits: 4      # or a dtype: int4, int8, fp16, bf16, fp32

The keys are `zoo` plus the parameters of the presets' generators (see `accel_sim.zoo.parameters`);
a key no generator has is an error, and so is a parameter the named preset does not take.
"""
from __future__ import annotations

import math
import typing
from functools import partial
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, create_model

from accel_sim.errors import ConfigError
from accel_sim.io.yaml import YamlDoc, validate
from accel_sim.spec.workload import Workload
from accel_sim.zoo import PRESETS, build, parameter_types


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}. Fix: give a number (a boolean is not a count)")
    return value


def _whole(value: Any, *, text_allowed: bool = False) -> Any:
    """An integer parameter is a YAML integer, as an einsum rank size is: '224' (a string) and 2.0 are refused
    rather than converted. `text_allowed`: bit widths may also be dtype names (int4), which build() parses."""
    if isinstance(value, str) and not text_allowed:
        example = value.strip() if value.strip().isdigit() else "8"
        raise ValueError(f"expected an integer, got the string {value!r}. Fix: write a whole number without quotes, "
                         f"e.g. {example}")
    if isinstance(value, float):
        if value.is_integer():
            detail, example = "", int(value)
        elif math.isfinite(value):
            detail, example = ", a number with a fractional part", max(1, round(value))
        else:
            detail, example = "", 8
        raise ValueError(f"expected an integer, got {value!r}{detail}. Fix: write a whole number without a decimal "
                         f"point, e.g. {example}")
    return value


def _boolean(value: Any) -> Any:
    """A yes/no parameter is a YAML boolean: the string 'true' (or 1) is refused rather than converted."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}. Fix: write true or false without quotes")
    return value


def _recipe_model() -> type[BaseModel]:
    """A strict pydantic model: `zoo` plus every generator parameter, each optional (preset default); a boolean
    is no number (batch: true was a batch of 1) and a yes/no is a boolean (bias: 'true' is refused), an integer is
    written as one (image_size: '224' and batch: 2.0 are refused) and numbers are finite (norm_eps: .inf is
    refused)."""
    fields: dict[str, Any] = {"zoo": (str, ...)}
    for preset in PRESETS.values():
        for key, hint in parameter_types(preset.spec_type).items():
            bits = key.endswith("_bits")
            hint = Optional[int | str] if bits else Optional[hint]
            kinds = set(typing.get_args(hint))
            checks = [BeforeValidator(_not_bool)] if {int, float} & kinds and bool not in kinds else []
            int_literal = any(typing.get_origin(k) is Literal and all(type(v) is int for v in typing.get_args(k))
                              for k in kinds)  # depth: Literal[18, 34, ...] would take 50.0
            if (int in kinds or int_literal) and float not in kinds:
                checks.append(BeforeValidator(partial(_whole, text_allowed=bits)))
            if bool in kinds:
                checks.append(BeforeValidator(_boolean))
            fields.setdefault(key, (Annotated[(hint, *checks)] if checks else hint, None))
    # strict=False on purpose: YAML 1.1 reads 1e-5 as a string, which pydantic turns into the number
    return create_model("Recipe", __config__=ConfigDict(extra="forbid", allow_inf_nan=False), **fields)


Recipe = _recipe_model()


def load_recipe(doc: YamlDoc) -> Workload:
    """The workload a recipe describes; bad recipes raise ConfigError with file, line, key path and fix."""
    if not isinstance(doc.data, dict):
        raise ConfigError("a workload recipe must be a YAML mapping", file=doc.file, line=1,
                          fix="write 'zoo: <preset>' and parameters such as 'batch: 8', one per line")
    recipe = validate(Recipe, doc)
    # in declaration order, not model_fields_set's (a set): the workload's name lists its parameters in this order,
    # which must not change with PYTHONHASHSEED
    params = {key: getattr(recipe, key) for key in type(recipe).model_fields
              if key in recipe.model_fields_set and key != "zoo"}
    try:
        return build(recipe.zoo, **params)
    except ConfigError as exc:
        if exc.file is not None:
            raise
        key = exc.key_path if exc.key_path in doc.data else "zoo"
        if (key,) in doc.overridden:  # the value came from `--set workload.KEY=...`, not from the file
            raise ConfigError(f"--set '{doc.overridden[(key,)]}': {exc.problem}", fix=exc.fix, file=doc.file,
                              key_path=key) from None
        raise ConfigError(exc.problem, fix=exc.fix, file=doc.file, line=doc.line_of((key,)),
                          key_path=exc.key_path or "zoo") from None
