"""Workload IR: tensors and extended einsums (affine projections, map ops, reductions, recurrences).

An `Einsum` writes one output access from an expression tree over input accesses; ranks of the
iteration space that do not index the output are reduced with `reduce` (sum, max, min, prod).
An einsum that reads its own output at a shifted index (``RM[m1+1,p] = max(RM[m1,p], LM[m1,p])``)
is a running (prefix) reduction along that rank, as in FuseMax's 1-pass attention cascade; the
output tensor's `init` gives the value before the first step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Literal, Mapping, TypeVar, Union

import numpy as np

from accel_sim.errors import ConfigError
from accel_sim.spec.fields import TensorRole
from accel_sim.spec.identity import IdentityMemo

if TYPE_CHECKING:
    import networkx as nx

# kv_cache: a transformer's K/V cache, state that earlier decode steps wrote and this one reads (and appends to)
TensorKind = Literal["activation", "weight", "constant", "kv_cache"]
StorageClass = Literal["weights", "kv_cache", "activations"]
T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Operators: one table each, used by the parser, the printer, the numpy evaluator and the costs.
# ---------------------------------------------------------------------------------------------
def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # scipy is heavy to import: on first use of erf

    return erf(x)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


MAP_OPS: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    # name: (arity, numpy implementation); arity -1 means any number of operands >= 1
    "add": (2, np.add), "sub": (2, np.subtract), "mul": (2, np.multiply), "div": (2, np.divide),
    "max": (-1, lambda *a: np.maximum.reduce(np.broadcast_arrays(*a))),
    "min": (-1, lambda *a: np.minimum.reduce(np.broadcast_arrays(*a))),
    "pow": (2, np.power), "mod": (2, np.mod),
    "neg": (1, np.negative), "exp": (1, np.exp), "log": (1, np.log), "sqrt": (1, np.sqrt),
    "rsqrt": (1, lambda x: 1.0 / np.sqrt(x)), "recip": (1, lambda x: 1.0 / x), "abs": (1, np.abs),
    "relu": (1, lambda x: np.maximum(x, 0.0)), "gelu": (1, _gelu), "tanh": (1, np.tanh),
    "sigmoid": (1, lambda x: 1.0 / (1.0 + np.exp(-x))), "silu": (1, lambda x: x / (1.0 + np.exp(-x))),
    "erf": (1, _erf),
    "sin": (1, np.sin), "cos": (1, np.cos), "square": (1, np.square), "floor": (1, np.floor),
    "ceil": (1, np.ceil), "sign": (1, np.sign), "not": (1, lambda x: (x == 0).astype(float)),
    "copy": (1, lambda x: x),
    # comparisons, selection and ops without a numpy meaning here are still counted as one op each
    "where": (3, np.where), "eq": (2, lambda a, b: (a == b).astype(float)),
    "lt": (2, lambda a, b: (a < b).astype(float)), "gt": (2, lambda a, b: (a > b).astype(float)),
    "and": (2, lambda a, b: ((a != 0) & (b != 0)).astype(float)),
    "or": (2, lambda a, b: ((a != 0) | (b != 0)).astype(float)),
    "clip": (-1, lambda x, *bounds: np.clip(x, *(bounds + (None, None))[:2])),
    # further ONNX elementwise operators (io/onnx/); bitwise ops act on the integer value
    "tan": (1, np.tan), "asin": (1, np.arcsin), "acos": (1, np.arccos), "atan": (1, np.arctan),
    "sinh": (1, np.sinh), "cosh": (1, np.cosh), "asinh": (1, np.arcsinh), "acosh": (1, np.arccosh),
    "atanh": (1, np.arctanh), "round": (1, np.round),
    "isnan": (1, lambda x: np.isnan(x).astype(float)), "isinf": (1, lambda x: np.isinf(x).astype(float)),
    "bitand": (2, lambda a, b: np.bitwise_and(a.astype(np.int64), b.astype(np.int64)).astype(float)),
    "bitor": (2, lambda a, b: np.bitwise_or(a.astype(np.int64), b.astype(np.int64)).astype(float)),
    "bitxor": (2, lambda a, b: np.bitwise_xor(a.astype(np.int64), b.astype(np.int64)).astype(float)),
    "bitnot": (1, lambda x: np.invert(x.astype(np.int64)).astype(float)),
}
# An index with gaps is counted by enumerating its values; this bounds that array (int64: 32 MiB).
MAX_ENUMERATED_INDEX_VALUES = 2**22
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
REDUCE_OPS: dict[str, tuple[np.ufunc, float]] = {
    "sum": (np.add, 0.0), "max": (np.maximum, -np.inf), "min": (np.minimum, np.inf), "prod": (np.multiply, 1.0),
}


# ---------------------------------------------------------------------------------------------
# Index expressions and accesses
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Affine:
    """An affine index expression: sum(coef * rank) + offset, e.g. ``2*p + r - 1``."""

    terms: tuple[tuple[str, int], ...] = ()
    offset: int = 0

    @staticmethod
    def rank(name: str) -> Affine:
        """The plain index ``name``."""
        return Affine(((name, 1),))

    @property
    def ranks(self) -> tuple[str, ...]:
        """Ranks this expression depends on."""
        return tuple(r for r, _ in self.terms)

    def value_range(self, sizes: Mapping[str, int]) -> tuple[int, int]:
        """Smallest and largest value over the iteration space."""
        low = high = self.offset
        for rank, coef in self.terms:
            span = coef * (sizes[rank] - 1)
            low, high = low + min(0, span), high + max(0, span)
        return low, high

    def distinct_values(self, sizes: Mapping[str, int], extent: int | None = None) -> int:
        """How many distinct in-bounds values the expression takes (sliding windows overlap).

        Closed form when the terms, smallest coefficient first, tile an arithmetic progression (a plain rank;
        a stride-s window with a kernel of s or more; m1*M0 + m0): no array as long as a rank is allocated.
        Other index sets (gaps: stride 3, kernel 2) are enumerated, up to MAX_ENUMERATED_INDEX_VALUES.
        """
        low = self.value_range(sizes)[0]
        step, count = 1, 1  # the values so far: low + step * k for k < count
        for coef, size in sorted((abs(c), sizes[r]) for r, c in self.terms if c and sizes[r] > 1):
            if count == 1:
                step, count = coef, size
            elif coef % step == 0 and coef // step <= count:  # shifted copies overlap or abut
                count += (size - 1) * (coef // step)
            else:
                return self._enumerated_values(sizes, extent)
        if extent is None:
            return count
        first = max(0, -(low // step) if low < 0 else 0)  # smallest k with low + step * k >= 0
        last = min(count - 1, (extent - 1 - low) // step)
        return max(0, last - first + 1)

    def _enumerated_values(self, sizes: Mapping[str, int], extent: int | None) -> int:
        combinations = math.prod(sizes[r] for r, _ in self.terms)
        if combinations > MAX_ENUMERATED_INDEX_VALUES:
            raise ConfigError(f"the index '{self}' has gaps and {combinations:,} combinations of rank values, "
                              f"too many to count (at most {MAX_ENUMERATED_INDEX_VALUES:,})",
                              fix="use smaller rank sizes, or a window whose kernel covers its stride")
        values = np.array([self.offset], dtype=np.int64)
        for rank, coef in self.terms:
            values = np.unique(values[:, None] + coef * np.arange(sizes[rank], dtype=np.int64)[None, :])
        if extent is not None:
            values = values[(values >= 0) & (values < extent)]
        return int(values.size)

    def evaluate(self, grid: Mapping[str, np.ndarray]) -> np.ndarray | int:
        """Values over broadcastable index arrays, one per rank."""
        out: np.ndarray | int = self.offset
        for rank, coef in self.terms:
            out = out + coef * grid[rank]
        return out

    def __str__(self) -> str:
        parts = []
        for rank, coef in self.terms:
            term = rank if coef in (1, -1) else f"{abs(coef)}*{rank}"
            parts.append(("-" if coef < 0 else "+") + term)
        if self.offset or not parts:
            parts.append(("-" if self.offset < 0 else "+") + str(abs(self.offset)))
        text = "".join(parts)
        return text[1:] if text.startswith("+") else text


@dataclass(frozen=True, slots=True)
class Access:
    """A tensor read or written at affine indices, one per tensor dimension."""

    tensor: str
    indices: tuple[Affine, ...]

    @property
    def ranks(self) -> tuple[str, ...]:
        """Iteration ranks that index this access, in order of first use."""
        return tuple(dict.fromkeys(r for ix in self.indices for r in ix.ranks))

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(str(i) for i in self.indices)}]"


@dataclass(frozen=True, slots=True)
class Const:
    """A scalar constant in an expression."""

    value: float

    def __str__(self) -> str:
        return repr(float(self.value)) if not float(self.value).is_integer() else str(int(self.value))


@dataclass(frozen=True, slots=True)
class Call:
    """A map operator applied elementwise to its operands."""

    op: str
    args: tuple[Expr, ...]

    def __str__(self) -> str:
        if self.op in INFIX and len(self.args) == 2:
            # Parenthesize only what precedence and left associativity need, so the text reads back
            # as the same tree: a lower-precedence operand, or an equal-precedence right operand.
            left, right = self.args
            prec = _PRECEDENCE[self.op]
            left_text = f"({left})" if _precedence(left) < prec else str(left)
            right_text = f"({right})" if _precedence(right) <= prec else str(right)
            return f"{left_text} {INFIX[self.op]} {right_text}"
        return f"{self.op}({', '.join(str(a) for a in self.args)})"


_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2}


def _precedence(expr: Expr) -> int:
    """Binding strength of an expression's printed form (atoms and calls bind tightest)."""
    if isinstance(expr, Call) and expr.op in INFIX and len(expr.args) == 2:
        return _PRECEDENCE[expr.op]
    return 3


Expr = Union[Access, Const, Call]


def accesses_of(expr: Expr) -> tuple[Access, ...]:
    """Every access in an expression, left to right."""
    if isinstance(expr, Access):
        return (expr,)
    if isinstance(expr, Call):
        return tuple(a for arg in expr.args for a in accesses_of(arg))
    return ()


def rename_tensors(expr: Expr, names: Mapping[str, str]) -> Expr:
    """The same expression reading renamed tensors (names missing from `names` stay)."""
    if isinstance(expr, Access):
        return Access(names.get(expr.tensor, expr.tensor), expr.indices)
    if isinstance(expr, Call):
        return Call(expr.op, tuple(rename_tensors(a, names) for a in expr.args))
    return expr


def with_distinct_operands(workload: Workload) -> Workload:
    """`workload` with a contraction that reads one tensor by two different index lists (a Gram matrix,
    X[m,k] * X[n,k]) reading the second through an alias of its own (a view, 'X~2'), so that each operand is costed
    as its own stream: a cost's accesses and a mapping's tensors are keyed by name, and the second stream went
    uncounted. A view is free: placement and the scheduler read its source (sim/placement.py `_sources`)."""
    tensors = {t.name: t for t in workload.tensors}
    added: dict[str, tuple[Tensor, str]] = {}   # alias -> (its tensor, the tensor it aliases)
    einsums = []
    for einsum in workload.einsums:
        seen: dict[str, list[tuple[Affine, ...]]] = {}

        def renamed(expr: Expr) -> Expr:
            if isinstance(expr, Access):
                forms = seen.setdefault(expr.tensor, [])
                if expr.indices not in forms:
                    forms.append(expr.indices)
                k = forms.index(expr.indices)
                if k == 0 or expr.tensor == einsum.output.tensor:
                    return expr
                alias = f"{expr.tensor}~{k + 1}"
                added.setdefault(alias, (replace(tensors[expr.tensor], name=alias), expr.tensor))
                return Access(alias, expr.indices)
            if isinstance(expr, Call):
                return Call(expr.op, tuple(renamed(a) for a in expr.args))
            return expr

        expr = renamed(einsum.expr) if einsum.op == "mac" else einsum.expr
        einsums.append(einsum if expr == einsum.expr else replace(einsum, expr=expr))
    if not added:
        return workload
    return replace(workload, tensors=(*workload.tensors, *(tensor for tensor, _ in added.values())),
                   einsums=tuple(einsums),
                   views=(*workload.views, *(View(alias, (source,), "alias") for alias, (_, source) in added.items())))


def map_ops_of(expr: Expr) -> tuple[str, ...]:
    """Every map operator in an expression, outermost first."""
    if isinstance(expr, Call):
        return (expr.op,) + tuple(o for arg in expr.args for o in map_ops_of(arg))
    return ()


# ---------------------------------------------------------------------------------------------
# Tensors, einsums, views, workloads
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Tensor:
    """A named tensor: dimension names, static shape, element width; weights live in memory."""

    name: str
    ranks: tuple[str, ...]
    shape: tuple[int, ...]
    bits: int = 16
    kind: TensorKind = "activation"
    init: float | None = None

    @property
    def elements(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def bytes(self) -> float:
        """Storage size in bytes (sub-byte widths pack)."""
        return self.elements * self.bits / 8


@dataclass(frozen=True)
class Einsum:
    """One extended einsum: ``output = reduce_{ranks not in output}(expr)`` over an iteration space."""

    name: str
    output: Access
    expr: Expr
    rank_sizes: tuple[tuple[str, int], ...]
    reduce: str = "sum"

    def __post_init__(self) -> None:
        if isinstance(self.rank_sizes, Mapping):
            object.__setattr__(self, "rank_sizes", tuple(self.rank_sizes.items()))

    def __hash__(self) -> int:
        """The fields' hash, kept: einsums key the mapper's caches, and hashing the expression tree anew on every
        lookup walked every Access and Affine in it (a sweep looks einsums up tens of thousands of times)."""
        found = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = hash((self.name, self.output, self.expr, self.rank_sizes, self.reduce))
        return found

    def __getstate__(self) -> dict[str, object]:
        """The instance's state without its kept hash: string hashes differ between processes (PYTHONHASHSEED), so a
        pickled einsum recomputes its own in the process that loads it."""
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    @cached_property
    def sizes(self) -> dict[str, int]:
        """Rank name -> size of the iteration space."""
        return dict(self.rank_sizes)

    @cached_property
    def inputs(self) -> tuple[Access, ...]:
        """Accesses read by the expression (the output, if it is read, marks a recurrence)."""
        return accesses_of(self.expr)

    @cached_property
    def reduced_ranks(self) -> tuple[str, ...]:
        """Ranks that are reduced (they do not index the output)."""
        out = set(self.output.ranks)
        return tuple(r for r, _ in self.rank_sizes if r not in out)

    @cached_property
    def recurrence_rank(self) -> str | None:
        """The rank a running reduction steps along, when the einsum reads its own output."""
        for acc in self.inputs:
            if acc.tensor != self.output.tensor:
                continue
            for out_ix, in_ix in zip(self.output.indices, acc.indices):
                if out_ix.terms == in_ix.terms and out_ix.offset != in_ix.offset and out_ix.terms:
                    return out_ix.terms[0][0]
        return None

    @property
    def iteration_points(self) -> int:
        """Points of the iteration space (one operator application each)."""
        return math.prod(s for _, s in self.rank_sizes)

    @cached_property
    def op(self) -> str:
        """Principal operator: 'mac' for a contraction (product of two tensors summed), else the map op."""
        args = self.expr.args if isinstance(self.expr, Call) else ()
        if (isinstance(self.expr, Call) and self.expr.op == "mul" and self.reduce == "sum"
                and len(args) == 2 and all(isinstance(a, Access) for a in args) and self.reduced_ranks):
            return "mac"
        if isinstance(self.expr, Call):
            return self.expr.op
        return self.reduce if self.reduced_ranks else "copy"

    @property
    def macs(self) -> int:
        """Multiply-accumulates (zero unless this einsum is a contraction)."""
        return self.iteration_points if self.op == "mac" else 0

    @property
    def ops(self) -> int:
        """Scalar operator applications: map ops plus reduction steps (a MAC counts as one)."""
        if self.op == "mac":
            return self.iteration_points
        per_point = len(map_ops_of(self.expr)) + (1 if self.reduced_ranks else 0)
        return self.iteration_points * max(per_point, 1)

    def footprint(self, access: Access, tensor: Tensor) -> int:
        """Distinct in-bounds elements of `tensor` that `access` touches (the compulsory traffic)."""
        return math.prod(ix.distinct_values(self.sizes, extent)
                         for ix, extent in zip(access.indices, tensor.shape))

    def __str__(self) -> str:
        body = str(self.expr)
        prefix = f"{self.reduce}: " if self.reduce != "sum" and self.reduced_ranks else ""
        return f"{self.output} = {prefix}{body}"


@dataclass(frozen=True, slots=True)
class View:
    """A zero-compute data-movement node (reshape, transpose, slice, gather, ...) from ONNX."""

    output: str
    sources: tuple[str, ...]
    op: str


_STORAGE_CLASS: dict[str, StorageClass] = {"activation": "activations", "weight": "weights", "constant": "weights",
                                           "kv_cache": "kv_cache"}
_INPUT_ROLE: dict[str, TensorRole] = {"weights": "weights", "kv_cache": "kv_cache", "activations": "inputs"}


@dataclass(frozen=True)
class Workload:
    """Tensors plus einsums in topological order; views are free; `unsupported` lists untranslated ops."""

    name: str
    tensors: tuple[Tensor, ...]
    einsums: tuple[Einsum, ...]
    views: tuple[View, ...] = ()
    unsupported: tuple[str, ...] = field(default=())
    items_per_run: int = 1  # what one run delivers: a batch of inferences, or of decoded tokens
    item_unit: str = "inference"

    @cached_property
    def tensor_map(self) -> dict[str, Tensor]:
        """Tensor name -> Tensor."""
        return {t.name: t for t in self.tensors}

    def tensor(self, name: str) -> Tensor:
        """The tensor called `name`."""
        return self.tensor_map[name]

    def einsum(self, name: str) -> Einsum:
        """The einsum called `name`."""
        for e in self.einsums:
            if e.name == name:
                return e
        raise KeyError(name)

    @property
    def total_macs(self) -> int:
        """Multiply-accumulates of all einsums."""
        return sum(e.macs for e in self.einsums)

    @property
    def total_ops(self) -> int:
        """Operator applications of all einsums."""
        return sum(e.ops for e in self.einsums)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Bipartite networkx view: tensor nodes ('tensor') and 'einsum:NAME' / 'view:OUTPUT' nodes."""
        import networkx as nx  # networkx is heavy to import: loaded on first use

        g = nx.DiGraph()
        for t in self.tensors:
            g.add_node(t.name, type="tensor", tensor=t)
        for e in self.einsums:
            # prefixed like views: an einsum is usually named after the tensor it writes
            node = f"einsum:{e.name}"
            g.add_node(node, type="einsum", einsum=e)
            for acc in e.inputs:
                if acc.tensor != e.output.tensor:
                    g.add_edge(acc.tensor, node)
            g.add_edge(node, e.output.tensor)
        for v in self.views:
            node = f"view:{v.output}"
            g.add_node(node, type="view", view=v)
            for s in v.sources:
                g.add_edge(s, node)
            g.add_edge(node, v.output)
        return g

    @cached_property
    def storage_class(self) -> dict[str, StorageClass]:
        """Tensor name -> 'weights' (weight and constant kinds), 'kv_cache' or 'activations'; a view of one class
        only (a transpose, a gather of weights) has that class."""
        out: dict[str, StorageClass] = {t.name: _STORAGE_CLASS[t.kind] for t in self.tensors}
        for view in self.views:
            classes = {out.get(s) for s in view.sources}
            if len(classes) == 1 and None not in classes:
                out[view.output] = classes.pop()
        return out

    def roles(self, einsum: Einsum) -> dict[str, TensorRole]:
        """Tensor name -> the role in which `einsum` accesses it, the role memory levels are asked about
        (`MemoryLevel.keeps`): its output 'outputs', or 'results' when it reduces no rank (a KV cache it appends
        to stays 'kv_cache'); an input 'weights', 'kv_cache' or else 'inputs', by its storage class."""
        classes = self.storage_class
        out: dict[str, TensorRole] = {}
        for access in einsum.inputs:
            out[access.tensor] = _INPUT_ROLE[classes[access.tensor]]
        written = einsum.output.tensor
        # an einsum that reduces no rank writes each output once: no partial sums to keep ('results')
        out[written] = ("kv_cache" if classes[written] == "kv_cache" else "outputs" if einsum.reduced_ranks
                        else "results")
        return out

    def shape_key(self, einsum: Einsum) -> tuple[tuple, tuple[str, ...]]:
        """A key shared by einsums that differ only in names, and their tensors in the key's order.

        Two einsums with equal keys have the same expression, rank sizes and reduction over tensors of the
        same shapes, widths and storage classes, so every cost model gives them the same cost (the repeated
        layers of a transformer cost one evaluation) on an arch whose levels route tensors by role alone
        (`Arch.shape_key` adds the routes of name patterns). Kept per einsum object: the pipeline asks several times.
        """
        return self.derived(einsum, "shape_key", lambda: self._shape_key(einsum))

    def derived(self, einsum: Einsum, what: str, compute: Callable[[], T]) -> T:
        """`compute()`, a value `what` of `einsum` in this workload, once per einsum object (spec/identity.py)."""
        return self._derived.get((einsum,), compute, (what,))

    @cached_property
    def _derived(self) -> IdentityMemo:
        """What `derived` has computed."""
        return IdentityMemo()

    def _shape_key(self, einsum: Einsum) -> tuple[tuple, tuple[str, ...]]:
        order = tuple(dict.fromkeys([einsum.output.tensor, *(a.tensor for a in einsum.inputs)]))
        canonical = {name: f"t{i}" for i, name in enumerate(order)}
        body = Einsum("", Access(canonical[einsum.output.tensor], einsum.output.indices),
                      rename_tensors(einsum.expr, canonical), einsum.rank_sizes, einsum.reduce)
        tensors = tuple((self.tensor(n).shape, self.tensor(n).bits, self.tensor(n).kind, self.tensor(n).init,
                         self.storage_class[n]) for n in order)
        # the canonical einsum itself, not its fields: it keeps its hash (`Einsum.__hash__`), and the mapper's caches
        # look this key up tens of thousands of times in a sweep
        return (body, tensors), order

    def distinct_contractions(self) -> list[tuple[Einsum, int]]:
        """One contraction per `shape_key`, in workload order, with how many einsums share that key."""
        seen: dict[tuple, list] = {}
        for e in self.einsums:
            if e.op == "mac":
                seen.setdefault(self.shape_key(e)[0], [e, 0])[1] += 1
        return [(e, count) for e, count in seen.values()]

    @cached_property
    def source_einsums(self) -> dict[str, tuple[Einsum, ...]]:
        """Tensor name -> the einsums whose outputs reach it, through any chain of views (none for an input)."""
        by_output = {e.output.tensor: e for e in self.einsums}
        view_sources = {v.output: v.sources for v in self.views}
        out: dict[str, tuple[Einsum, ...]] = {}

        def sources(tensor: str) -> tuple[Einsum, ...]:
            if tensor not in out:
                out[tensor] = ()   # a view cycle (never built by the importers) ends here rather than recursing
                if tensor in by_output:
                    out[tensor] = (by_output[tensor],)
                else:
                    out[tensor] = tuple(e for src in view_sources.get(tensor, ()) for e in sources(src))
            return out[tensor]

        for t in self.tensors:
            sources(t.name)
        return out

    def producers(self) -> dict[str, str]:
        """Tensor name -> name of the einsum or view that writes it."""
        out = {e.output.tensor: e.name for e in self.einsums}
        out.update({v.output: f"view:{v.output}" for v in self.views})
        return out
