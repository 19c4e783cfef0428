"""Mapping search: the mapspace of an einsum on an engine, the CP-SAT mapper, exhaustive and random search."""
from __future__ import annotations

from accel_sim.mapper.search import SearchResult, SearchStats, search

__all__ = ["SearchResult", "SearchStats", "search"]
