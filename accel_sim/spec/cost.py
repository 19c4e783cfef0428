"""Cost of running einsums: cycles, accesses per (level, tensor, action), energy per (component, action).

Plain data that adds: the cost of a network is the sum of its einsums' costs (run one after another).
Access actions: `read` (elements read out of a level), `fill` (written into it from the outer level),
`update` (partial sums written into it from the inner level, accumulating onto an earlier value) and
`write` (first writes of results from the inner level). Partial sums kept wider than their tensor (an
accumulator) count in elements of the tensor's width, so elements x the tensor's bits / 8 is always the bytes
moved. Units live in the field names.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

ACTIONS: tuple[str, ...] = ("read", "write", "fill", "update")
WRITE_ACTIONS: tuple[str, ...] = ("fill", "update", "write")  # the actions that put bits into a level
Action = Literal["read", "write", "fill", "update"]


def merge_sums(a: dict[Any, float], b: dict[Any, float]) -> dict[Any, float]:
    """The two dicts' values added key by key (a key in one only keeps its value)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0.0) + value
    return out


@dataclass(frozen=True)
class Cost:
    """Cycles, accesses, energy and utilization of one einsum (or, summed, of many run in sequence)."""

    macs: int = 0
    compute_cycles: float = 0.0      # cycles the engine spends issuing operations
    stall_cycles: float = 0.0        # cycles waiting on memory bandwidth
    fill_drain_cycles: float = 0.0   # pipeline fill and drain (systolic skew, preload)
    accesses: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (level, tensor, action) -> elements
    energy_j: dict[tuple[str, str], float] = field(default_factory=dict)       # (component, action) -> joules
    utilization: float = 0.0         # MACs / (PEs x total cycles), in [0, 1]

    @property
    def total_cycles(self) -> float:
        """Compute, stall and fill/drain cycles together."""
        return self.compute_cycles + self.stall_cycles + self.fill_drain_cycles

    @property
    def total_energy_j(self) -> float:
        """Energy of every component and action."""
        return sum(self.energy_j.values())

    def __add__(self, other: Cost) -> Cost:
        """Costs of work run one after another: cycles, accesses and energy add; utilization is MAC-weighted."""
        if not isinstance(other, Cost):
            return NotImplemented
        macs = self.macs + other.macs
        if macs:
            util = (self.utilization * self.macs + other.utilization * other.macs) / macs
        else:
            # no MACs to weight by (vector work): weight by cycles so the mean stays a time fraction
            cycles = self.total_cycles + other.total_cycles
            util = ((self.utilization * self.total_cycles + other.utilization * other.total_cycles) / cycles
                    if cycles else 0.0)
        return Cost(macs, self.compute_cycles + other.compute_cycles, self.stall_cycles + other.stall_cycles,
                    self.fill_drain_cycles + other.fill_drain_cycles, merge_sums(self.accesses, other.accesses),
                    merge_sums(self.energy_j, other.energy_j), util)

    def bytes_by_level(self, bits: Mapping[str, int]) -> dict[str, float]:
        """Bytes the access records move at each level, given each tensor's width in bits."""
        return {level: read + write for level, (read, write) in self.read_write_bytes_by_level(bits).items()}

    def read_write_bytes_by_level(self, bits: Mapping[str, int]) -> dict[str, tuple[float, float]]:
        """(read, written) bytes of the access records at each level: 'read' reads it; 'fill', 'update' and
        'write' write it."""
        moved: dict[str, tuple[float, float]] = {}
        for (level, tensor, action), elements in self.accesses.items():
            read, write = moved.get(level, (0.0, 0.0))
            moved_bytes = elements * bits[tensor] / 8
            moved[level] = (read + moved_bytes, write) if action == "read" else (read, write + moved_bytes)
        return moved

    def with_tensor_names(self, names: dict[str, str]) -> Cost:
        """The same cost with its access records' tensors renamed (reusing a cost for a repeated layer)."""
        accesses = {(level, names.get(tensor, tensor), action): n
                    for (level, tensor, action), n in self.accesses.items()}
        return replace(self, accesses=accesses)

    def __radd__(self, other: object) -> Cost:
        """Lets `sum(costs)` start from 0."""
        if other == 0:
            return self
        return NotImplemented

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: scalars, cycles, and lists of access and energy records."""
        return {
            "macs": self.macs, "utilization": self.utilization,
            "cycles": {"compute": self.compute_cycles, "stall": self.stall_cycles,
                       "fill_drain": self.fill_drain_cycles, "total": self.total_cycles},
            "accesses": [{"level": lv, "tensor": t, "action": a, "elements": n}
                         for (lv, t, a), n in sorted(self.accesses.items())],
            "energy_j": [{"component": c, "action": a, "joules": j} for (c, a), j in sorted(self.energy_j.items())],
            "total_energy_j": self.total_energy_j,
        }

    def to_frame(self) -> Any:
        """Tidy pandas DataFrame: one row per (metric, component, tensor, action) with its value."""
        import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

        rows = [("cycles", "", "", part, value) for part, value in
                (("compute", self.compute_cycles), ("stall", self.stall_cycles),
                 ("fill_drain", self.fill_drain_cycles))]
        rows += [("accesses", lv, t, a, n) for (lv, t, a), n in sorted(self.accesses.items())]
        rows += [("energy_j", c, "", a, j) for (c, a), j in sorted(self.energy_j.items())]
        rows += [("macs", "", "", "", float(self.macs)), ("utilization", "", "", "", self.utilization)]
        return pd.DataFrame(rows, columns=["metric", "component", "tensor", "action", "value"])
