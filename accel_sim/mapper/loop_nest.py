"""A searched mapping printed as a loop nest, level by level (what `accel-sim search` prints)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accel_sim.mapper.search import SearchResult
    from accel_sim.spec.arch import Arch


def loop_nest_text(result: SearchResult, arch: Arch) -> str:
    """The mapping as a loop nest, one line per loop, level by level (like Timeloop's map.txt).

    An axis the cost packs (`SearchResult.layout`) prints as the cost ran it: its ranks flattened on the axis,
    `extent` per fold, and at its level one fold loop in place of those ranks' tile loops.
    """
    m = result.mapping
    orders = dict(m.order)
    packed = {a.axis: a for a in result.layout if a.packed}
    folded = {r: a for a in packed.values() for r in a.ranks}
    lines, indent = [], ""
    for level in arch.memory:
        skip = m.bypassed(level.name)
        lines.append(f"{indent}{level.name}" + (f"  [bypass: {', '.join(skip)}]" if skip else ""))
        factors = m.factors(level.name)
        loops = [r for r in orders.get(level.name, tuple(factors)) if factors.get(r, 1) > 1]
        for rank in loops:
            if rank in folded and folded[rank].level == level.name:
                axis = folded[rank]
                if axis.folds > 1 and rank == next(r for r in loops if r in axis.ranks):  # one fold loop per axis
                    lines.append(f"{indent}| for fold in [0:{axis.folds}) of {'*'.join(axis.ranks)} on {axis.axis}")
                    indent += "  "
                continue
            lines.append(f"{indent}| for {rank} in [0:{factors[rank]})")
            indent += "  "
    spatial = dict(m.spatial)
    for axis in dict.fromkeys([*spatial, *packed]):
        if axis in packed:
            a = packed[axis]
            lines.append(f"{indent}| parallel-for {'*'.join(a.ranks)} in [0:{a.extent}) on {axis}  "
                         f"(packed: {a.folds} fold{'s' if a.folds > 1 else ''})")
            indent += "  "
            continue
        for rank, f in spatial[axis]:
            if f > 1:
                lines.append(f"{indent}| parallel-for {rank} in [0:{f}) on {axis}")
                indent += "  "
    passes = f" x {result.mac_cycles} cycles (operands wider than the multipliers)" if result.mac_cycles > 1 else ""
    lines.append(f"{indent}<< MAC{passes}, {result.variant} >>")
    return "\n".join(lines)
