"""Distinct rows of integer arrays: the candidates a batch repeats, the options a mapspace lists."""
from __future__ import annotations

import numpy as np


def distinct_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) of the distinct rows of a 2-D integer array: key[first] are they (in no set order), each
    the first row of its kind, and key[first][inverse] == key."""
    data = np.asarray(key, dtype=np.int64)
    varying = data[:, (data != data[:1]).any(axis=0)]
    low = varying.min(axis=0, initial=0)
    spans = [int(s) for s in varying.max(axis=0, initial=0) - low + 1]
    if max(spans, default=1) >= 2 ** 62:
        return _distinct_bytes(varying)
    # each row as a few integers in mixed radix (columns grouped to fit 62 bits); groups beyond the first are
    # numbered densely and folded in pairwise, so the running code stays below len(data) ** 2
    groups, start, radix = [], 0, [1]
    for j, span in enumerate(spans):
        if radix[-1] * span >= 2 ** 62:   # column j starts the next group
            groups.append((varying[:, start:j] - low[start:j]) @ np.array(radix[:-1], dtype=np.int64))
            start, radix = j, [1]
        radix.append(radix[-1] * span)
    if len(spans):
        groups.append((varying[:, start:] - low[start:]) @ np.array(radix[:-1], dtype=np.int64))
    code = groups[0] if groups else np.zeros(len(data), np.int64)
    for part in groups[1:]:
        _, dense = np.unique(code, return_inverse=True)
        labels, part_dense = np.unique(part, return_inverse=True)
        code = dense.reshape(-1) * len(labels) + part_dense.reshape(-1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _distinct_bytes(varying: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`distinct_rows` of rows compared as bytes (a column spanning 62 bits or more)."""
    width = varying.shape[1] * 8
    raw = np.ascontiguousarray(varying).tobytes()
    seen: dict[bytes, int] = {}
    inverse = np.fromiter((seen.setdefault(raw[i * width:(i + 1) * width], len(seen)) for i in range(len(varying))),
                          dtype=np.int64, count=len(varying))
    first = np.zeros(len(seen), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(varying) - 1, -1, -1)
    return first, inverse


def unique_rows(a: np.ndarray) -> np.ndarray:
    """The distinct rows of a 2-D integer array in lexicographic order (as np.unique(a, axis=0))."""
    if len(a) == 0:
        return a
    kept = a[np.sort(distinct_rows(a)[0])]
    return kept[np.lexsort(kept.T[::-1])]


def product_along(a: np.ndarray, axis: int) -> np.ndarray:
    """`a.prod(axis)` of an integer array, its slices along `axis` multiplied in turn: numpy's reduction over a short
    axis (a batch's few levels or ranks) runs several times slower than these whole-array products."""
    slices = np.moveaxis(a, axis, 0)
    if len(slices) == 0:
        return np.ones(slices.shape[1:], dtype=np.result_type(a.dtype, np.int_))
    out = slices[0].astype(np.result_type(a.dtype, np.int_))
    for part in slices[1:]:
        out *= part
    return out


def any_along(a: np.ndarray, axis: int) -> np.ndarray:
    """`a.any(axis)` of a boolean array, as `product_along` reduces: its slices or-ed in turn."""
    slices = np.moveaxis(a, axis, 0)
    out = np.zeros(slices.shape[1:], dtype=bool)
    for part in slices:
        out |= part
    return out


def distinct_indices(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` of integers in [0, bound), by marking them in a table of `bound`
    flags (linear, where np.unique sorts): (the distinct values ascending, each value's place among them)."""
    present = np.zeros(bound, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]
