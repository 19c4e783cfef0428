"""Tile-granular work items: a workload cut along one output rank into independent tiles for the scheduler.

The graph scheduler places whole einsums. When a cascade is processed block by block (FLAT's row
blocks of the attention scores, FuseMax's 256-query passes through its array), the blocks are
independent copies of the cascade on a slice of one rank. `split_rank` writes them as such: every
einsum that keeps the rank in its output becomes one einsum per tile on its slice, with its own
tensors; inputs that do not carry the rank (keys, values, weights) are shared. The scheduler then sees
the blocks and may run block i + 1's contractions on one engine while block i's maps run on another:
pipelining across engines emerges from the schedule instead of being assumed.
Independent instances of a whole workload (heads, which share nothing) are scheduled by schedule/periodic.py.
"""
from __future__ import annotations

from dataclasses import replace

from accel_sim.spec.workload import Access, Affine, Einsum, Tensor, Workload, rename_tensors


def _rank_position(access: Access, rank: str) -> int | None:
    """Index of the dimension of `access` that is exactly `rank` (None: the access does not use the rank)."""
    position = None
    for j, index in enumerate(access.indices):
        names = [name for name, _ in index.terms]
        if rank not in names:
            continue
        if index != Affine.rank(rank) or position is not None:
            raise ValueError(f"split_rank: {access.tensor} is indexed by '{rank}' other than as a plain dimension; "
                             f"only plain uses can be tiled")
        position = j
    return position


def split_rank(workload: Workload, rank: str, tiles: int) -> Workload:
    """`workload` as `tiles` independent copies on equal slices of `rank` (module docstring); names get '@i'."""
    if tiles < 1:
        raise ValueError(f"split_rank: tiles must be >= 1, got {tiles}")
    if workload.views:
        raise ValueError("split_rank: workloads with views are not supported")
    dim: dict[str, int | None] = {}
    for einsum in workload.einsums:
        carries = rank in einsum.sizes
        if carries and rank in einsum.reduced_ranks:
            raise ValueError(f"split_rank: einsum {einsum.name} reduces over '{rank}'; tiles would need partial sums")
        if carries and einsum.sizes[rank] % tiles:
            raise ValueError(f"split_rank: '{rank}' = {einsum.sizes[rank]} in {einsum.name} is not divisible by "
                             f"{tiles}")
        for access in (einsum.output, *einsum.inputs):
            position = _rank_position(access, rank) if carries else None
            if dim.setdefault(access.tensor, position) != position:
                raise ValueError(f"split_rank: {access.tensor} is indexed by '{rank}' in one einsum but not in "
                                 f"another")
    per_tile = {t for t, j in dim.items() if j is not None}
    for einsum in workload.einsums:
        if rank not in einsum.sizes and any(a.tensor in per_tile for a in einsum.inputs):
            raise ValueError(f"split_rank: einsum {einsum.name} lacks '{rank}' but reads a tiled tensor")
    tensors: list[Tensor] = [t for t in workload.tensors if t.name not in per_tile]
    einsums: list[Einsum] = [e for e in workload.einsums if rank not in e.sizes]
    for i in range(tiles):
        names = {t: f"{t}@{i}" for t in per_tile}
        for tensor in workload.tensors:
            if tensor.name in per_tile:
                shape = list(tensor.shape)
                shape[dim[tensor.name]] //= tiles
                tensors.append(replace(tensor, name=names[tensor.name], shape=tuple(shape)))
        for einsum in workload.einsums:
            if rank not in einsum.sizes:
                continue
            sizes = tuple((r, s // tiles if r == rank else s) for r, s in einsum.rank_sizes)
            output = Access(names.get(einsum.output.tensor, einsum.output.tensor), einsum.output.indices)
            einsums.append(Einsum(f"{einsum.name}@{i}", output, rename_tensors(einsum.expr, names), sizes,
                                  einsum.reduce))
    return Workload(f"{workload.name} ({tiles} tiles of {rank})", tuple(tensors), tuple(einsums),
                    items_per_run=workload.items_per_run, item_unit=workload.item_unit)

