"""Reference numpy evaluation of einsum cascades: slow, exact, for tests and teaching."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

from accel_sim.spec.workload import REDUCE_OPS, MAP_OPS, Access, Call, Const, Einsum, Expr

if TYPE_CHECKING:
    from accel_sim.spec.workload import Workload


def evaluate_workload(workload: Workload, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor of `workload`, computed einsum by einsum from `inputs` (out-of-range reads are 0)."""
    aliases = {v.output: v.sources[0] for v in workload.views if v.op == "alias"}   # with_distinct_operands'
    if len(aliases) < len(workload.views):
        raise ValueError(f"workload '{workload.name}' has data-movement views (from ONNX); "
                         "numeric evaluation covers einsum cascades only")
    values = {name: np.asarray(v, dtype=float) for name, v in inputs.items()}
    for einsum in workload.einsums:
        for alias, source in aliases.items():
            if source in values:
                values[alias] = values[source]
        out = workload.tensor(einsum.output.tensor)
        if einsum.recurrence_rank is None:
            identity = REDUCE_OPS[einsum.reduce][1] if einsum.reduced_ranks else 0.0
            values[out.name] = np.full(out.shape, identity)
            _apply(einsum, values, fixed={})
        else:
            if out.name not in values:
                values[out.name] = np.full(out.shape, 0.0 if out.init is None else out.init)
            for step in range(einsum.sizes[einsum.recurrence_rank]):
                _apply(einsum, values, fixed={einsum.recurrence_rank: step})
    return values


def _apply(einsum: Einsum, values: dict[str, np.ndarray], fixed: Mapping[str, int]) -> None:
    """Evaluate the einsum over its iteration space (with `fixed` ranks pinned) into its output."""
    free = [r for r, _ in einsum.rank_sizes if r not in fixed]
    grid: dict[str, np.ndarray | int] = dict(fixed)
    for axis, rank in enumerate(free):
        shape = [1] * len(free)
        shape[axis] = einsum.sizes[rank]
        grid[rank] = np.arange(einsum.sizes[rank]).reshape(shape)
    full_shape = tuple(einsum.sizes[r] for r in free)
    result = np.broadcast_to(_expr(einsum.expr, grid, values), full_shape)
    reduced_axes = tuple(i for i, r in enumerate(free) if r in einsum.reduced_ranks)
    out = values[einsum.output.tensor]
    if einsum.recurrence_rank is not None:
        if reduced_axes:
            result = REDUCE_OPS[einsum.reduce][0].reduce(result, axis=reduced_axes, keepdims=True)
        index = tuple(np.broadcast_to(ix.evaluate(grid), result.shape) for ix in einsum.output.indices)
        out[index] = result
        return
    ufunc = REDUCE_OPS[einsum.reduce][0] if einsum.reduced_ranks else None
    index = tuple(np.broadcast_to(ix.evaluate(grid), full_shape) for ix in einsum.output.indices)
    if ufunc is None:
        out[index] = result
    elif not index:
        # a scalar output: ufunc.at cannot scatter with an empty index tuple
        out[()] = ufunc(out[()], ufunc.reduce(result, axis=None))
    else:
        ufunc.at(out, index, result)


def _expr(expr: Expr, grid: Mapping[str, np.ndarray | int], values: Mapping[str, np.ndarray]) -> np.ndarray:
    if isinstance(expr, Const):
        return np.asarray(expr.value, dtype=float)
    if isinstance(expr, Call):
        return MAP_OPS[expr.op][1](*(_expr(a, grid, values) for a in expr.args))
    return _gather(expr, grid, values)


def _gather(access: Access, grid: Mapping[str, np.ndarray | int], values: Mapping[str, np.ndarray]) -> np.ndarray:
    """Read a tensor at affine indices; indices outside the tensor read as zero (padding)."""
    if access.tensor not in values:
        raise KeyError(f"tensor '{access.tensor}' has no value: give it as an input")
    data = values[access.tensor]
    index = [np.asarray(ix.evaluate(grid)) for ix in access.indices]
    index = list(np.broadcast_arrays(*index)) if index else []
    inside = np.ones(index[0].shape if index else (), dtype=bool)
    for ix, extent in zip(index, data.shape):
        inside &= (ix >= 0) & (ix < extent)
    clipped = tuple(np.clip(ix, 0, extent - 1) for ix, extent in zip(index, data.shape))
    return np.where(inside, data[clipped], 0.0)
