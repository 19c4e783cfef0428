"""One published-vs-ours comparison and the table every validation script prints."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    """One validated quantity: the published value, ours, and where the published one comes from."""

    quantity: str
    published: float
    ours: float
    note: str = ""

    @property
    def error(self) -> float:
        """(ours - published) / published."""
        return (self.ours - self.published) / self.published

    @property
    def error_pct(self) -> float:
        """The relative error in percent."""
        return 100 * self.error


def comparison_table(rows: list[Comparison]) -> str:
    """The table 'quantity | published | ours | error %' (a published value's note in brackets)."""
    width = max([len("quantity"), *(len(r.quantity) for r in rows)])
    lines = [f"{'quantity':{width}} | {'published':>10} | {'ours':>10} | error %"]
    for r in rows:
        note = f" ({r.note})" if r.note else ""
        lines.append(f"{r.quantity:{width}} | {r.published:>10.4g} | {r.ours:>10.4g} | {r.error_pct:+7.1f}{note}")
    return "\n".join(lines)
