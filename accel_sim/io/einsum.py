"""Einsum-cascade files (``*.einsum.yaml``): a readable text syntax for extended einsums.

A cascade file is a YAML mapping::

    name: gemm                              # optional; defaults to the file name
    ranks: {m: 64, k: 128, n: 32}           # iteration ranks and their sizes, shared by all einsums
    default_bits: 16                        # element width of tensors not listed under `tensors`
    tensors:                                # optional per-tensor settings
      A: {bits: int8, kind: weight}         # kind: activation (default) | weight | constant
      RM: {init: -inf}                      # value of a recurrence's output before its first step
      I: {shape: [N, C, 2*P, 2*Q]}          # explicit shape (numbers or expressions of rank sizes)
    einsums:
      - Z[m,n] = A[m,k] * B[k,n]            # ranks missing on the left are reduced (sum)
      - "GM[n] = max: Z[m,n]"               # other reductions: a `max:`/`min:`/`prod:`/`sum:` prefix
      - {name: soft, expr: "S[m,n] = exp(Z[m,n] - GM[n])"}   # mapping form names the einsum

Einsum text is ``OUT[indices] = [reduce:] expression``:

- A 0-d (scalar) output or input has empty brackets: ``LOSS[] = E[m,p]``.
- Indices are affine in the ranks: ``I[n, c, 2*p + r - 3, 2*q + s - 3]``, ``RM[m1+1, p]``,
  ``K[e, m1*M0 + m0]``. An upper-cased rank name (``M0``, ``M1``) is that rank's size, a constant:
  ``RNV[f, M1, p]`` reads the last step of a recurrence along ``m1``. ``//`` and ``%`` are not affine;
  split the rank instead (a head index ``g*H + h`` as two ranks ``g`` and ``h``).
- The expression uses ``+ - * /`` (and ``**``, ``%``) with the usual precedence and parentheses, numbers,
  ``inf``, rank sizes (``X[d,p] / D``) and the map operators of ``accel_sim.spec.workload.MAP_OPS`` by
  name: ``exp(QK[m,p] - GM[p])``, ``relu(H[h,p])``, ``max(a, b)``. Unary minus is ``neg``.
- An einsum may read its own output one step back along one rank, which makes it a running (prefix)
  reduction: ``RM[m1+1,p] = max(RM[m1,p], LM[m1,p])``; the output's ``init`` is its value at step 0.
- Each tensor is written by at most one einsum, einsums are listed producers before consumers, and
  every einsum's name (its output tensor's name unless given) is unique.

Tensor shapes are inferred per dimension as the largest index value + 1 over all accesses (reads
outside a tensor are errors, except a window with a negative offset, which pads), unless ``shape`` is given. Tensor dimension names are the
upper-cased rank of the first access that indexes that dimension with a single rank (``Q[e,p]`` ->
``('E','P')``, ``RM[m1+1,p]`` -> ``('M1','P')``), else ``D<position>`` (``K[e, m1*M0+m0]`` -> ``('E','D1')``).
A tensor's ``ranks:`` replaces them: an upper-case name is a label (``ROW``), a lower-case one a declared rank.

``parse_cascade`` -> ``Workload``; ``dump_cascade`` prints it back, and parse(dump(w)) == w.
"""
from __future__ import annotations

import ast
import difflib
import json
import keyword
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Mapping, Sequence

import numpy as np
import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from accel_sim.errors import ConfigError
from accel_sim.io.cascade_checks import (check_dimension_ranks, check_graph, check_inputs_spelt, check_ranks_used,
                                         check_writes_in_bounds, error_at, lookalike_inputs)
from accel_sim.io.yaml import KeyPath, YamlDoc, format_key_path, load_yaml, validate
from accel_sim.spec.workload import (
    MAP_OPS, REDUCE_OPS, Access, Affine, Call, Const, Einsum, Expr, Tensor, TensorKind, Workload, accesses_of,
)
from accel_sim.units import parse_bits

__all__ = [
    "CascadeSpec", "EinsumSpec", "TensorSpec", "dump_cascade", "format_einsum", "load_einsum_file",
    "parse_cascade", "parse_einsum",
]

_RANK_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REDUCE_PREFIX = re.compile(r"^\s*([A-Za-z_]\w*)\s*:(.*)$", re.DOTALL)
# MAP_OPS names that are Python keywords ('and', 'or', 'not') are renamed before ast.parse sees them.
_KEYWORD_OPS = tuple(sorted(op for op in MAP_OPS if keyword.iskeyword(op)))
_KEYWORD_CALL = re.compile(r"\b(" + "|".join(_KEYWORD_OPS) + r")(?=\s*\()") if _KEYWORD_OPS else None
_KEYWORD_PREFIX = "op__"
_EMPTY_INDEX = re.compile(r"\[\s*\]")
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow", ast.Mod: "mod"}
_EXAMPLE = "e.g. Z[m,n] = A[m,k] * B[k,n]"


# ---------------------------------------------------------------------------------------------
# YAML layer (validated once with pydantic; einsum strings are parsed afterwards)
# ---------------------------------------------------------------------------------------------
def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"rank size must be a positive integer, got {value!r}. "
                         "Fix: give the number of index values, e.g. 64")
    return value


def _bits(value: Any) -> int:
    try:
        return parse_bits(value)
    except ValueError as exc:
        raise ValueError(f"{exc}. Fix: write a bit width such as 8 or a dtype such as int8 or bf16") from None


RankSize = Annotated[int, BeforeValidator(_positive_int)]
Bits = Annotated[int, BeforeValidator(_bits)]


class TensorSpec(BaseModel):
    """Per-tensor settings under `tensors:`; shape and dimension names are inferred unless given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bits: Bits | None = None
    kind: TensorKind = "activation"
    init: float | None = None
    shape: tuple[int | str, ...] | None = None
    ranks: tuple[str, ...] | None = None

    @field_validator("init")
    @classmethod
    def _init_is_a_number(cls, value: float | None) -> float | None:
        # -inf is a running max's identity; NaN would poison every step of the recurrence
        if value is not None and math.isnan(value):
            raise ValueError("init must be a number, got NaN. Fix: give the reduction's identity, e.g. 0 or -inf")
        return value


class EinsumSpec(BaseModel):
    """One entry of `einsums:`: the text, and a name (default: the output tensor's name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    expr: str

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"expr": value} if isinstance(value, str) else value


class CascadeSpec(BaseModel):
    """The top level of a `*.einsum.yaml` file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    ranks: dict[str, RankSize]
    default_bits: Bits = 16
    # validated entry by entry (TensorSpec, in parse_cascade) so an unknown key lists TensorSpec's keys
    tensors: dict[str, Any] = Field(default_factory=dict)
    einsums: list[EinsumSpec] = Field(min_length=1)

    @field_validator("ranks")
    @classmethod
    def _rank_names(cls, ranks: dict[str, int]) -> dict[str, int]:
        for name in ranks:
            if not _RANK_NAME.match(name):
                raise ValueError(f"rank name '{name}' must be lower case (letters, digits, _). "
                                 f"Fix: rename it to '{name.lower()}' (upper case '{name.upper()}' "
                                 "is reserved for the rank's size)")
        return ranks


# ---------------------------------------------------------------------------------------------
# Einsum text
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Where:
    """Where an einsum text came from, to build errors."""

    text: str
    file: str | None
    line: int | None
    key_path: str

    def error(self, problem: str, fix: str) -> ConfigError:
        return ConfigError(f"{problem} in einsum '{self.text.strip()}'", fix=fix, file=self.file,
                           line=self.line, key_path=self.key_path)


def format_einsum(einsum: Einsum) -> str:
    """The one-line text of an einsum, e.g. ``Z[m,n] = A[m,k] * B[k,n]`` (parse_einsum reads it back)."""
    return str(einsum)


def parse_einsum(text: str, sizes: Mapping[str, int], *, name: str | None = None, file: str | None = None,
                 line: int | None = None, key_path: str = "") -> Einsum:
    """Parse ``OUT[indices] = [reduce:] expression`` into an Einsum over the ranks it uses."""
    where = _Where(text, file, line, key_path)
    lhs, eq, rhs = text.replace("\n", " ").partition("=")
    if not eq:
        raise where.error("missing '='", f"write the output access, '=', then the expression, {_EXAMPLE}")
    reduce = "sum"
    prefix = _REDUCE_PREFIX.match(rhs)
    if prefix:
        reduce, rhs = prefix.group(1), prefix.group(2)
        if reduce not in REDUCE_OPS:
            raise where.error(f"unknown reduction '{reduce}:'",
                              f"use one of: {', '.join(f'{op}:' for op in REDUCE_OPS)}")
    parser = _Parser(sizes, where)
    out_node = parser.parse(lhs, "left-hand side")
    if not isinstance(out_node, ast.Subscript):
        raise where.error(f"the left-hand side '{lhs.strip()}' is not a tensor access",
                          f"write the output as TENSOR[indices], {_EXAMPLE}")
    output = parser.access(out_node)
    expr = parser.expr(parser.parse(rhs, "right-hand side"))
    ranks = dict.fromkeys(output.ranks)
    for acc in accesses_of(expr):
        ranks.update(dict.fromkeys(acc.ranks))
    einsum = Einsum(name or output.tensor, output, expr, tuple((r, sizes[r]) for r in ranks), reduce)
    if prefix and reduce != "sum" and not einsum.reduced_ranks:
        raise where.error(f"the reduction '{reduce}:' has nothing to reduce (every rank indexes the output)",
                          "remove the prefix, or drop a rank from the left-hand side to reduce over it")
    _check_self_reads(einsum, where)
    return einsum


def _check_self_reads(einsum: Einsum, where: _Where) -> None:
    """A read of the output must be one step back along one rank (a running reduction)."""
    out = einsum.output
    for acc in einsum.inputs:
        if acc.tensor != out.tensor:
            continue
        fix = (f"read the previous step along one rank, e.g. {out.tensor}[m1+1,p] = "
               f"max({out.tensor}[m1,p], X[m1,p]), or write to a new tensor")
        if len(acc.indices) != len(out.indices):
            raise where.error(f"'{out.tensor}' is written with {len(out.indices)} indices but read with "
                              f"{len(acc.indices)}", fix)
        shifted = [(o, i) for o, i in zip(out.indices, acc.indices) if o != i]
        if len(shifted) != 1:
            raise where.error(f"the einsum reads its own output '{acc}' at "
                              f"{'the written index' if not shifted else 'more than one shifted index'}", fix)
        o, i = shifted[0]
        if o.terms != i.terms or len(o.terms) != 1 or (o.offset - i.offset) * o.terms[0][1] <= 0:
            raise where.error(f"'{acc}' is not an earlier step of '{out}'", fix)


class _Parser:
    """Converts Python ast nodes of einsum text into accesses, affine indices and expressions."""

    def __init__(self, sizes: Mapping[str, int], where: _Where) -> None:
        self.sizes = sizes
        self.where = where

    def parse(self, text: str, part: str) -> ast.expr:
        source = text.strip()
        source = _EMPTY_INDEX.sub("[()]", source)  # Z[] (a scalar) is not Python; Z[()] is, with no indices
        if _KEYWORD_CALL is not None:
            source = _KEYWORD_CALL.sub(lambda m: _KEYWORD_PREFIX + m.group(1), source)
        if not source:
            raise self.where.error(f"the {part} is empty", f"write OUT[indices] = expression, {_EXAMPLE}")
        try:
            return ast.parse(source, mode="eval").body
        except SyntaxError as exc:
            column = f" near column {exc.offset}" if exc.offset else ""
            raise self.where.error(f"syntax error in the {part} '{text.strip()}'{column} ({exc.msg})",
                                   f"write OUT[indices] = expression with balanced brackets, {_EXAMPLE}") from None

    def access(self, node: ast.Subscript) -> Access:
        if not isinstance(node.value, ast.Name):
            inner = ast.unparse(node.value)
            fix = ("write all indices in one bracket, e.g. A[m,k]" if isinstance(node.value, ast.Subscript)
                   else "name the tensor with a plain identifier, e.g. A[m,k]")
            raise self.where.error(f"'{inner}' is not a tensor name", fix)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return Access(node.value.id, tuple(self.affine(item) for item in items))

    def affine(self, node: ast.expr) -> Affine:
        terms, offset = self._affine(node)
        return Affine(tuple((r, c) for r, c in terms.items() if c != 0), offset)

    def _affine(self, node: ast.expr) -> tuple[dict[str, int], int]:
        text = ast.unparse(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return {}, node.value
        if isinstance(node, ast.Name):
            return self._index_name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            terms, offset = self._affine(node.operand)
            sign = -1 if isinstance(node.op, ast.USub) else 1
            return {r: sign * c for r, c in terms.items()}, sign * offset
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            (lt, lo), (rt, ro) = self._affine(node.left), self._affine(node.right)
            sign = 1 if isinstance(node.op, ast.Add) else -1
            terms = dict(lt)
            for r, c in rt.items():
                terms[r] = terms.get(r, 0) + sign * c
            return terms, lo + sign * ro
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            (lt, lo), (rt, ro) = self._affine(node.left), self._affine(node.right)
            if lt and rt:
                raise self.where.error(f"the index '{text}' multiplies two ranks, which is not affine",
                                       "multiply a rank only by a number or a rank size, e.g. 2*p or m1*M0")
            (terms, scale), offset = ((rt, lo), ro) if not lt else ((lt, ro), lo)
            return {r: c * scale for r, c in terms.items()}, offset * scale
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)):
            raise self.where.error(f"the index '{text}' is not affine (division or remainder)",
                                   "split the rank into two ranks instead, e.g. a head index g*H + h "
                                   "with ranks g (group) and h (head within the group)")
        raise self.where.error(f"the index '{text}' is not an affine expression",
                               "write indices as sums of ranks times integers plus an offset, e.g. 2*p + r - 1")

    def _index_name(self, name: str) -> tuple[dict[str, int], int]:
        if name in self.sizes:
            return {name: 1}, 0
        size = self.rank_size(name)
        if size is not None:
            return {}, size
        raise self._undefined(name)

    def rank_size(self, name: str) -> int | None:
        """The size of rank `name.lower()` when `name` is its upper-cased symbol."""
        if name == name.upper() and name.lower() != name and name.lower() in self.sizes:
            return self.sizes[name.lower()]
        return None

    def _undefined(self, name: str) -> ConfigError:
        declared = ", ".join(self.sizes) or "none"
        return self.where.error(f"undefined rank '{name}'",
                                f"add it under 'ranks:' with its size (e.g. {name.lower()}: 16) or fix the "
                                f"spelling; declared ranks: {declared}")

    def expr(self, node: ast.expr) -> Expr:
        text = ast.unparse(node)
        if isinstance(node, ast.Subscript):
            return self.access(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return Const(float(node.value))
        if isinstance(node, ast.Name):
            return self._value_name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return self.expr(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.expr(node.operand)
            return Const(-inner.value) if isinstance(inner, Const) else Call("neg", (inner,))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return self._defined(Call(_BINOPS[type(node.op)], (self.expr(node.left), self.expr(node.right))), text)
        if isinstance(node, ast.Call):
            return self._defined(self._call(node), text)
        if isinstance(node, ast.Compare):
            raise self.where.error(f"comparison '{text}' is not supported", "use lt(a, b), gt(a, b) or eq(a, b)")
        raise self.where.error(f"unsupported syntax '{text}'",
                               "use tensor accesses, numbers, + - * / ** % and map operators such as exp(...)")

    def _defined(self, call: Call, text: str) -> Call:
        """`call`, refused where it is undefined whatever its tensors hold (a division by a constant zero, a pole or
        a constant outside the operator's domain): its cost would be counted for a result that does not exist."""
        problem = undefined_part(call, deep=False)
        if problem:
            raise self.where.error(f"'{text}' {problem}",
                                   "divide by a non-zero constant or a tensor, and give each operator constants "
                                   "inside its domain (a positive number under sqrt, rsqrt and log)")
        return call

    def _value_name(self, name: str) -> Const:
        if name == "inf":
            return Const(math.inf)
        size = self.rank_size(name)
        if size is not None:
            return Const(float(size))
        if name in self.sizes:
            raise self.where.error(f"the rank '{name}' is used as a value",
                                   f"ranks only index tensors; for its size write {name.upper()}")
        raise self.where.error(f"'{name}' is neither a tensor access, a number nor a declared rank size",
                               f"write a tensor with its indices, e.g. {name}[m,n], or declare rank "
                               f"'{name.lower()}' under 'ranks:' to use its size as {name.upper()}")

    def _call(self, node: ast.Call) -> Call:
        if not isinstance(node.func, ast.Name):
            raise self.where.error(f"'{ast.unparse(node.func)}' is not an operator name",
                                   f"call a map operator by name: {', '.join(MAP_OPS)}")
        op = node.func.id.removeprefix(_KEYWORD_PREFIX)
        if op not in MAP_OPS:
            raise self.where.error(f"unknown map operator '{op}'", f"use one of: {', '.join(MAP_OPS)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.where.error(f"'{op}' takes positional operands only", f"write {op}(a, b)")
        arity = MAP_OPS[op][0]
        if (arity >= 0 and len(node.args) != arity) or (arity < 0 and not node.args):
            wanted = f"{arity} operand{'s' if arity != 1 else ''}" if arity >= 0 else "at least one operand"
            raise self.where.error(f"'{op}' takes {wanted}, got {len(node.args)}", f"give '{op}' {wanted}")
        return Call(op, tuple(self.expr(a) for a in node.args))


def _constant_value(expr: Expr) -> float | None:
    """The value of an expression of constants only (None where it reads a tensor); FloatingPointError where an
    operator is undefined there (a division by zero, a pole, an operand outside its domain). Overflow is a value."""
    if isinstance(expr, Const):
        return expr.value
    if not isinstance(expr, Call):
        return None
    operands = [_constant_value(a) for a in expr.args]
    if any(v is None for v in operands):
        return None
    with np.errstate(divide="raise", invalid="raise", over="ignore", under="ignore"):
        return float(MAP_OPS[expr.op][1](*(np.float64(v) for v in operands)))


def undefined_part(expr: Expr, deep: bool = True) -> str | None:
    """Why `expr` (each of its calls, with `deep`) is undefined for every element whatever its tensors hold, e.g.
    'divides by zero'; None where it is defined."""
    if not isinstance(expr, Call):
        return None
    if deep:
        inner = next((why for why in map(undefined_part, expr.args) if why), None)
        if inner:
            return inner
    try:
        divisor = _constant_value(expr.args[1]) if expr.op in ("div", "mod") else None
        _constant_value(expr)
    except FloatingPointError as exc:
        return f"is undefined for every element (its operands are constants: {exc})"
    return "divides by zero" if divisor == 0.0 else None


# ---------------------------------------------------------------------------------------------
# Cascades
# ---------------------------------------------------------------------------------------------
def load_einsum_file(path: str | Path, sizes_override: Mapping[str, int] | None = None) -> Workload:
    """Read a `*.einsum.yaml` cascade into a Workload (optionally with some rank sizes replaced)."""
    return parse_cascade(load_yaml(path), sizes_override)


def parse_cascade(doc: YamlDoc, sizes_override: Mapping[str, int] | None = None) -> Workload:
    """Build a Workload from a parsed cascade document; every problem raises ConfigError with its line."""
    if not isinstance(doc.data, dict):
        raise ConfigError("an einsum cascade must be a YAML mapping", file=doc.file, line=doc.line_of(()),
                          fix=f"write the keys {', '.join(CascadeSpec.model_fields)} at the top level")
    spec = validate(CascadeSpec, doc)
    sizes = _override(spec.ranks, sizes_override or {}, doc)
    einsums = tuple(_parse_entry(entry, i, sizes, doc) for i, entry in enumerate(spec.einsums))
    check_graph(einsums, doc)
    check_ranks_used(einsums, sizes, doc)
    check_dimension_ranks(einsums, doc)
    settings = {name: validate(TensorSpec, doc, root=("tensors", name)) for name in spec.tensors}
    check_inputs_spelt(einsums, settings, doc)
    tensors = _tensors(einsums, settings, spec.default_bits, sizes, doc)
    name = spec.name if spec.name is not None else _stem(doc.file)
    return Workload(name, tensors, einsums)


def _stem(file: str) -> str:
    name = Path(file).name
    for suffix in (".einsum.yaml", ".einsum.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _override(ranks: Mapping[str, int], override: Mapping[str, int], doc: YamlDoc) -> dict[str, int]:
    sizes = dict(ranks)
    for rank, size in override.items():
        key_path = format_key_path(("ranks", rank))
        if rank not in sizes:
            raise ConfigError(f"the size override names rank '{rank}', which the cascade does not declare",
                              file=doc.file, line=doc.line_of(("ranks",)), key_path=key_path,
                              fix=f"override one of: {', '.join(sizes)}")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ConfigError(f"rank size override must be a positive integer, got {size!r}", file=doc.file,
                              line=doc.line_of(("ranks", rank)), key_path=key_path, fix="give e.g. 64")
        sizes[rank] = size
    return sizes


def _parse_entry(entry: EinsumSpec, index: int, sizes: Mapping[str, int], doc: YamlDoc) -> Einsum:
    path: KeyPath = ("einsums", index)
    return parse_einsum(entry.expr, sizes, name=entry.name, file=doc.file, line=doc.line_of(path),
                        key_path=format_key_path(path))


def _tensors(einsums: Sequence[Einsum], settings: Mapping[str, TensorSpec], default_bits: int,
             sizes: Mapping[str, int], doc: YamlDoc) -> tuple[Tensor, ...]:
    layouts = _inferred_layouts(einsums)
    for name in settings:
        if name not in layouts:
            close = [t for t in layouts if t.lower() == name.lower()]
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise error_at(doc, ("tensors", name), f"tensor '{name}' is used by no einsum",
                            f"{hint}remove it or use one of: {', '.join(layouts)}")
    recurrent = {e.output.tensor for e in einsums if e.recurrence_rank is not None}
    produced = {e.output.tensor for e in einsums}
    tensors = []
    for name, (ranks, shape) in layouts.items():
        ts = settings.get(name, TensorSpec())
        path: KeyPath = ("tensors", name)
        if ts.shape is not None:
            if len(ts.shape) != len(shape):
                raise error_at(doc, path + ("shape",), f"shape of '{name}' has {len(ts.shape)} entries but the "
                                f"tensor has {len(shape)} dimensions", f"give {len(shape)} sizes")
            shape = tuple(_shape_entry(v, sizes, doc, path + ("shape", k)) for k, v in enumerate(ts.shape))
        if ts.ranks is not None:
            if len(ts.ranks) != len(ranks):
                raise error_at(doc, path + ("ranks",), f"ranks of '{name}' has {len(ts.ranks)} names but the "
                                f"tensor has {len(ranks)} dimensions", f"give {len(ranks)} names")
            for j, rank in enumerate(ts.ranks):
                # lower case is the rank namespace (upper case names a size, or a free label such as ROW): a
                # dimension named after a rank follows it (npu_pim resizes it with the rank), so it must exist
                if _RANK_NAME.match(rank) and rank not in sizes:
                    close = difflib.get_close_matches(rank, list(sizes), n=1)
                    hint = f"did you mean '{close[0]}'? " if close else ""
                    raise error_at(doc, path + ("ranks", j), f"tensor '{name}' names rank '{rank}', which is not "
                                   f"declared (declared ranks: {', '.join(sizes)})",
                                   f"{hint}use one of the declared ranks, or give the dimension an upper-case "
                                   f"name such as '{rank.upper()}' (a label, not a rank)")
            ranks = tuple(ts.ranks)
        if ts.kind in ("weight", "constant") and name in produced:
            raise error_at(doc, path + ("kind",), f"'{name}' is written by an einsum, so it is not a {ts.kind} (a "
                            f"model's {ts.kind}s are inputs, read and never written)",
                            "remove 'kind' (an einsum's output is an activation), or set kind: kv_cache for a cache")
        if ts.init is not None and name not in recurrent:
            raise error_at(doc, path + ("init",), f"'{name}' has an init but no einsum reads its previous step",
                            "remove 'init' (it is the value before the first step of a running reduction)")
        tensors.append(Tensor(name, ranks, shape, ts.bits if ts.bits is not None else default_bits,
                              ts.kind, ts.init))
    check_writes_in_bounds(einsums, {t.name: t for t in tensors}, doc)
    return tuple(tensors)


def _shape_entry(value: int | str, sizes: Mapping[str, int], doc: YamlDoc, path: KeyPath) -> int:
    where = _Where(str(value), doc.file, doc.line_of(path), format_key_path(path))
    if isinstance(value, str):
        parser = _Parser(sizes, where)
        affine = parser.affine(parser.parse(value, "shape entry"))
        if affine.terms:
            raise error_at(doc, path, f"shape entry '{value}' uses the rank '{affine.terms[0][0]}'",
                            f"use rank sizes in upper case, e.g. 2*{affine.terms[0][0].upper()}")
        value = affine.offset
    if isinstance(value, bool) or value <= 0:
        raise error_at(doc, path, f"shape entry {value!r} is not a positive size", "give a positive integer")
    return value


def _inferred_layouts(einsums: Sequence[Einsum]) -> dict[str, tuple[tuple[str, ...], tuple[int, ...]]]:
    """Tensor -> (dimension names, shape) inferred from every access, in order of first appearance."""
    seen: dict[str, list[tuple[Access, Einsum]]] = {}
    for e in einsums:
        for acc in (*e.inputs, e.output):
            seen.setdefault(acc.tensor, []).append((acc, e))
    layouts = {}
    for name, uses in seen.items():
        ndim = len(uses[0][0].indices)
        ranks, shape = [], []
        for d in range(ndim):
            plain = next((acc.indices[d].terms[0][0] for acc, _ in uses
                          if len(acc.indices[d].terms) == 1 and acc.indices[d].terms[0][1] == 1), None)
            ranks.append(plain.upper() if plain is not None else f"D{d}")
            shape.append(max(1, max(acc.indices[d].value_range(e.sizes)[1] + 1 for acc, e in uses)))
        layouts[name] = (tuple(ranks), tuple(shape))
    return layouts


# ---------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------
def dump_cascade(workload: Workload) -> str:
    """The cascade YAML of a workload made of einsums; parse_cascade reads back an equal Workload."""
    if workload.views or workload.unsupported:
        raise ConfigError(f"workload '{workload.name}' has data-movement views or untranslated operators, "
                          "which an einsum cascade cannot express",
                          fix="dump only workloads made of einsums (e.g. zoo cascades or parsed *.einsum.yaml)")
    sizes: dict[str, int] = {}
    for e in workload.einsums:
        for rank, size in e.rank_sizes:
            if sizes.setdefault(rank, size) != size:
                raise ConfigError(f"rank '{rank}' has size {sizes[rank]} in one einsum and {size} in "
                                  f"'{e.name}'; a cascade shares one size per rank",
                                  fix="rename the rank in one of the einsums")
    for e in workload.einsums:
        if parse_einsum(format_einsum(e), sizes, name=e.name) != e:
            raise ConfigError(f"einsum '{e.name}' iterates over ranks its accesses do not show, or in "
                              "another order, so its text would not read back the same",
                              fix="build the einsum with rank_sizes in order of use (output ranks first)")
    layouts = _inferred_layouts(workload.einsums)
    unused = [t.name for t in workload.tensors if t.name not in layouts]
    if unused or len(layouts) != len(workload.tensors):
        raise ConfigError(f"tensors {unused or 'of the einsums'} do not match the tensors the einsums use",
                          fix="list exactly the tensors the einsums read and write")
    bit_counts = Counter(t.bits for t in workload.tensors)
    default_bits = max(bit_counts, key=lambda b: (bit_counts[b], -b)) if bit_counts else 16
    lines = [f"name: {_scalar(workload.name)}",
             "ranks: {" + ", ".join(f"{_scalar(r, flow=True)}: {s}" for r, s in sizes.items()) + "}",
             f"default_bits: {default_bits}"]
    entries = []
    lookalikes = lookalike_inputs(workload.einsums, ())  # inputs that must be declared to read back
    for t in workload.tensors:
        ranks, shape = layouts[t.name]
        fields = ["kind: activation"] if t.name in lookalikes and t.kind == "activation" else []
        if t.bits != default_bits:
            fields.append(f"bits: {t.bits}")
        if t.kind != "activation":
            fields.append(f"kind: {t.kind}")
        if t.init is not None:
            fields.append(f"init: {_number(t.init)}")
        if t.shape != shape:
            fields.append(f"shape: [{', '.join(str(s) for s in t.shape)}]")
        if t.ranks != ranks:
            fields.append(f"ranks: [{', '.join(_scalar(r, flow=True) for r in t.ranks)}]")
        if fields:
            entries.append(f"  {_scalar(t.name)}: {{{', '.join(fields)}}}")
    if entries:
        lines += ["tensors:", *entries]
    lines.append("einsums:")
    for e in workload.einsums:
        text = format_einsum(e)
        if e.name == e.output.tensor:
            lines.append(f"  - {_scalar(text)}")
        else:
            lines.append(f"  - {{name: {_scalar(e.name, flow=True)}, expr: {json.dumps(text)}}}")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return repr(float(value))


def _scalar(text: str, flow: bool = False) -> str:
    """`text` as a YAML scalar: plain when YAML reads it back unchanged, else double-quoted."""
    probes = ["{k: %s}" % text] if flow else ["k: %s" % text, "- %s" % text]
    expected = [{"k": text}] if flow else [{"k": text}, [text]]
    try:
        plain = text == text.strip() and "\n" not in text and all(
            yaml.safe_load(p) == want for p, want in zip(probes, expected))
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)

