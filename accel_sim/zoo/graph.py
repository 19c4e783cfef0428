"""A small accumulator that zoo generators use to emit tensors, einsums and views, then freeze a Workload."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from accel_sim.spec.workload import (
    Access, Affine, Call, Const, Einsum, Expr, Tensor, TensorKind, View, Workload, accesses_of,
)

Index = str | Affine


def aff(offset: int = 0, **coefs: int) -> Affine:
    """An affine index from keyword coefficients, e.g. ``aff(-1, p=2, r=1)`` is ``2*p + r - 1``."""
    return Affine(tuple((rank, c) for rank, c in coefs.items() if c), offset)


def at(tensor: str, *indices: Index) -> Access:
    """An access ``tensor[i0, i1, ...]``; plain rank names become ``Affine.rank``."""
    return Access(tensor, tuple(Affine.rank(i) if isinstance(i, str) else i for i in indices))


def call(op: str, *args: Expr | float) -> Call:
    """A map operator; bare numbers become constants."""
    return Call(op, tuple(Const(float(a)) if isinstance(a, (int, float)) else a for a in args))


@dataclass
class GraphBuilder:
    """Mutable only while a generator runs; `workload()` returns the frozen result."""

    tensors: dict[str, Tensor] = field(default_factory=dict)
    einsums: list[Einsum] = field(default_factory=list)
    views: list[View] = field(default_factory=list)

    def tensor(self, name: str, ranks: tuple[str, ...], shape: tuple[int, ...], bits: int,
               kind: TensorKind = "activation", init: float | None = None) -> str:
        """Declare a tensor (names must be unique; `init`: a running reduction's starting value) and return its
        name."""
        if name in self.tensors:
            raise ValueError(f"zoo generator declared tensor '{name}' twice")
        if len(ranks) != len(shape):
            raise ValueError(f"tensor '{name}': {len(ranks)} ranks but {len(shape)} dimensions")
        self.tensors[name] = Tensor(name, tuple(ranks), tuple(int(s) for s in shape), int(bits), kind, init)
        return name

    def einsum(self, name: str, output: Access, expr: Expr, sizes: Mapping[str, int], reduce: str = "sum") -> str:
        """Append an einsum whose iteration space is `sizes` and return its output tensor's name."""
        used = set(output.ranks) | {r for a in accesses_of(expr) for r in a.ranks}
        missing = used - set(sizes)
        if missing:
            raise ValueError(f"einsum '{name}' uses ranks {sorted(missing)} without sizes")
        self.einsums.append(Einsum(name, output, expr, tuple((r, int(s)) for r, s in sizes.items()), reduce))
        return output.tensor

    def contract(self, name: str, output: Access, a: Access, b: Access, sizes: Mapping[str, int]) -> str:
        """A contraction ``output = sum(a * b)`` over the ranks not in `output` (one MAC per point)."""
        return self.einsum(name, output, Call("mul", (a, b)), sizes)

    def view(self, output: str, sources: tuple[str, ...], op: str) -> str:
        """A zero-compute data-movement node (gather, scatter) and return its output's name."""
        self.views.append(View(output, tuple(sources), op))
        return output

    def workload(self, name: str, items_per_run: int = 1, item_unit: str = "inference") -> Workload:
        """Freeze everything emitted so far (einsum names must differ from each other and from tensors)."""
        names = [e.name for e in self.einsums]
        clashes = (set(names) & set(self.tensors)) | {n for n, c in Counter(names).items() if c > 1}
        if clashes:
            raise ValueError(f"zoo generator reused names {sorted(clashes)[:5]} for einsums")
        return Workload(name, tuple(self.tensors.values()), tuple(self.einsums), tuple(self.views),
                        items_per_run=items_per_run, item_unit=item_unit)

