"""Bounds on input sizes that every reader applies (light: the SCALE-Sim reader loads it without the pipeline)."""
from __future__ import annotations

# Counts (MACs, accesses, bytes) are float64 and int64 numbers: above 2^53 they are no longer exact.
MAX_ITERATION_POINTS = 2**53
