"""Values derived from frozen spec objects (memory levels, einsums, workloads), kept by the objects' identity.

The pipeline asks for the same derived value of the same objects many times (a sweep's worker re-evaluates one
parsed workload for thousands of designs; a search scores one einsum's levels in every batch), and the objects
are frozen, so what they decide cannot change. Keying by identity, not equality, costs no hashing of a model's
fields; each entry keeps its objects, so an id is never reused while its entry is there.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")
LIMIT = 4096  # entries; a full memo starts again (a run holds a few hundred: levels x einsums)


class IdentityMemo:
    """compute() once per (objects by identity, extra key): see the module docstring."""

    def __init__(self, limit: int = LIMIT) -> None:
        """An empty memo of at most `limit` entries."""
        self.limit = limit
        self._entries: dict[tuple, tuple[tuple[object, ...], object]] = {}

    def get(self, objects: tuple[object, ...], compute: Callable[[], T], extra: tuple[Hashable, ...] = ()) -> T:
        """The value for `objects` (compared by identity) and `extra` (by equality), computed on the first ask."""
        key = (*map(id, objects), *extra)
        found = self._entries.get(key)
        if found is None:
            if len(self._entries) >= self.limit:
                self._entries.clear()
            found = self._entries[key] = (objects, compute())
        return found[1]  # type: ignore[return-value]
