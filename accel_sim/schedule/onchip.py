"""Intermediates that the schedule keeps on chip: their backing-store (DRAM) traffic leaves the per-einsum costs.

An engine costs an einsum alone, so every tensor it reads or writes crosses the backing level. Inside a
scheduled graph a tensor produced and consumed by the graph's own einsums (a `Buffer`) stays in the
on-chip buffer, or is fused (tiles hand over on chip), unless the scheduler spills it, and a spill pays
its DRAM round trip explicitly (`Problem.spill_cycles`, the replay's transfers). So the options the
scheduler chooses among are costed with those tensors' backing-level accesses removed: their energy goes,
and the cycles are re-derived when the backing level was what bounded the einsum: the engine's own busy
cycles (compute plus fill/drain) against every level's remaining transfer cycles. The accesses at the
on-chip levels stay: the tensor still moves through the buffer. Where an engine's on-chip levels are write-back
caches (a GPU's L2), the producer's writes stay at the backing level too: the cache writes the tensor out
(`skipped_directions`, as the sequential model's routes do). The first-tile prologue of a systolic
cost (a few hundred cycles at most) is not re-derived: an einsum whose cycles are re-derived keeps none of it, and
they are re-derived when the backing level bounded it or when the prologue did (issue 15: a prologue-bound einsum
that kept its prologue credited to more cycles at 400 GiB/s of DRAM than the backing-bound one at 200).

The same function drops a tensor at every level when it never leaves an engine's registers between the
einsums of a chain on that engine (register residency, schedule/problem.py): the cycles are re-derived when
any level that loses accesses bounded the einsum.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from accel_sim.energy.components import level_energy_per_bit
from accel_sim.engines.base import skipped_directions
from accel_sim.spec.cost import WRITE_ACTIONS

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.engines.roofline import Bound
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.workload import Einsum, Workload


def _writes_leave(arch: Arch, levels: frozenset[str] | None) -> bool:
    """Whether the producer's writes of an on-chip tensor leave the `levels` too: always for registers (every
    level); at the backing level (None) unless a write-back cache still writes it out (skipped_directions)."""
    return levels is not None or "write" in skipped_directions(arch)


def on_chip_cost(cost: Cost, workload: Workload, arch: Arch, engine: EngineBase, on_chip: frozenset[str],
                 levels: frozenset[str] | None = None) -> Cost:
    """`cost` with the accesses of the `on_chip` tensors at `levels` removed (module docstring); `levels` None:
    the backing level only. All levels: tensors held in the engine's registers (schedule/problem.py)."""
    writes_too = _writes_leave(arch, levels)
    levels = frozenset((arch.memory[0].name,)) if levels is None else levels
    dropped = {k: v for k, v in cost.accesses.items() if k[0] in levels and k[1] in on_chip
               and (writes_too or k[2] not in WRITE_ACTIONS)}
    if not dropped:
        return cost
    kept = {k: v for k, v in cost.accesses.items() if k not in dropped}
    per_bit = {lv.name: level_energy_per_bit(lv, arch.technology_nm) for lv in arch.memory if lv.name in levels}
    energy = dict(cost.energy_j)
    for (level, tensor, action), elements in dropped.items():
        bits = elements * workload.tensor(tensor).bits
        read_e, write_e = per_bit[level]
        key, e = ((level, "write"), write_e) if action in WRITE_ACTIONS else ((level, "read"), read_e)
        energy[key] = max(0.0, energy.get(key, 0.0) - bits * e)
    before = engine.level_busy_cycles(cost, workload, arch)
    busy = cost.compute_cycles + cost.fill_drain_cycles
    total = cost.total_cycles
    bound_by_dropped = max(before[name] for name in levels if name in before) >= total * (1 - 1e-9)
    # a prologue sets the cycles when neither compute nor any level does: dropped like a backing-bound one's, or a
    # slower backing level (which makes the einsum backing-bound) would credit to fewer cycles than a faster one
    bound_by_prologue = engine.waits_for_first_tiles() and total > max([busy, *before.values()]) * (1 + 1e-9)
    if total > busy and (bound_by_dropped or bound_by_prologue):
        total = max([busy, *engine.level_busy_cycles(replace(cost, accesses=kept), workload, arch).values()])
    utilization = cost.utilization * cost.total_cycles / total if total > 0 else cost.utilization
    return replace(cost, stall_cycles=total - busy, accesses=kept, energy_j=energy,
                   utilization=min(1.0, utilization))


def on_chip_bound(bound: Bound, einsum: Einsum, workload: Workload, arch: Arch, engine: EngineBase,
                  on_chip: frozenset[str], levels: frozenset[str] | None = None) -> Bound:
    """The roofline `bound` without the compulsory bytes of the `on_chip` tensors at `levels` (None: the backing
    level only; every level: tensors held in the engine's registers), as `on_chip_cost` drops their accesses."""
    names = {a.tensor for a in einsum.inputs if a.tensor != einsum.output.tensor} | {einsum.output.tensor}
    roles = workload.roles(einsum)
    writes_too = _writes_leave(arch, levels)
    levels = frozenset((arch.memory[0].name,)) if levels is None else levels
    level_bytes, level_read = dict(bound.level_bytes), dict(bound.level_read_bytes)
    level_cycles, level_energy = dict(bound.level_cycles), dict(bound.level_energy_j)
    for level in (lv for lv in arch.memory if lv.name in levels):
        held = [t for t in names & on_chip if level.keeps(roles[t], t)]
        if not held:
            continue
        removed_read = removed_write = 0.0
        for tensor in held:
            access = einsum.output if tensor == einsum.output.tensor else next(a for a in einsum.inputs
                                                                               if a.tensor == tensor)
            moved = einsum.footprint(access, workload.tensor(tensor)) * workload.tensor(tensor).bits / 8
            if tensor == einsum.output.tensor:
                removed_write += moved if writes_too else 0.0
            else:
                removed_read += moved
        name = level.name
        read = max(0.0, bound.level_read_bytes[name] - removed_read)
        write = max(0.0, bound.level_bytes[name] - bound.level_read_bytes[name] - removed_write)
        level_bytes[name], level_read[name] = read + write, read
        level_cycles[name] = engine.transfer_cycles(read, write, level, arch)
        scale = level_bytes[name] / bound.level_bytes[name] if bound.level_bytes[name] else 0.0
        level_energy[name] = bound.level_energy_j[name] * scale
    return replace(bound, level_bytes=level_bytes, level_read_bytes=level_read, level_cycles=level_cycles,
                   level_energy_j=level_energy)
