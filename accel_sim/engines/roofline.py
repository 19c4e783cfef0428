"""Roofline: the lower bound on cycles that every engine model must respect.

For one einsum on one engine the bound is the largest of
- compute: operator applications / the engine's peak per cycle (scaled to the arch clock), and
- for every memory level: the einsum's compulsory traffic through that level / the level's bandwidth.
Compulsory traffic is each distinct tensor element the einsum touches, moved once (inputs read, output
written), counted at every level that keeps the tensor in the role the einsum accesses it (`Workload.roles`,
`MemoryLevel.keeps`); reads and writes become time through the level's ports (`EngineBase.transfer_cycles`).
This is the classic per-layer roofline (Williams et al., CACM 2009) applied level by level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accel_sim.energy.components import level_energy_per_bit
from accel_sim.errors import InfeasibleError
from accel_sim.spec.cost import merge_sums

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch, MemoryLevel
    from accel_sim.spec.workload import Einsum, Workload

COMPUTE = "compute"


@dataclass(frozen=True)
class Traffic:
    """Compulsory bytes an einsum reads and writes, per tensor, and the role in which it accesses each tensor."""

    read_bytes: dict[str, float]   # tensor -> bytes
    write_bytes: dict[str, float]
    roles: dict[str, str]          # tensor -> role (`Workload.roles`)

    def through(self, level: MemoryLevel) -> tuple[float, float]:
        """(read, write) bytes that cross `level`: those of the tensors it keeps."""
        return (sum(b for t, b in self.read_bytes.items() if level.keeps(self.roles[t], t)),
                sum(b for t, b in self.write_bytes.items() if level.keeps(self.roles[t], t)))


@dataclass(frozen=True)
class Bound:
    """Roofline bound of one einsum on one engine; cycles are in the arch clock."""

    einsum: str
    engine: str
    op: str
    macs: int
    ops: int
    compute_cycles: float
    level_bytes: dict[str, float]    # memory level -> bytes read + written through it
    level_read_bytes: dict[str, float]   # memory level -> bytes read (the rest of level_bytes is written)
    level_cycles: dict[str, float]
    level_energy_j: dict[str, float]

    def __add__(self, other: Bound) -> Bound:
        """The bound of work run one after another (an einsum's requests, or sub-batches, each at its own sizes):
        operations, compute cycles and every level's bytes, cycles and energy add; named as `self`."""
        return Bound(self.einsum, self.engine, self.op, self.macs + other.macs, self.ops + other.ops,
                     self.compute_cycles + other.compute_cycles, merge_sums(self.level_bytes, other.level_bytes),
                     merge_sums(self.level_read_bytes, other.level_read_bytes),
                     merge_sums(self.level_cycles, other.level_cycles),
                     merge_sums(self.level_energy_j, other.level_energy_j))

    @property
    def cycles(self) -> float:
        """The bound: the slowest of compute and every level."""
        return max([self.compute_cycles, *self.level_cycles.values()])

    @property
    def kind(self) -> str:
        """What bounds it: 'compute' or the name of the memory level."""
        candidates = {COMPUTE: self.compute_cycles, **self.level_cycles}
        return max(candidates, key=candidates.__getitem__)

    @property
    def traffic_bytes(self) -> float:
        """Bytes through the outermost level (the denominator of operational intensity)."""
        return next(iter(self.level_bytes.values()), 0.0)


def compulsory_traffic(einsum: Einsum, workload: Workload) -> Traffic:
    """Distinct bytes of every tensor the einsum reads and of its output."""
    # every design of a sweep bounds the same parsed workload's einsums: once per einsum (Workload.derived)
    return workload.derived(einsum, "compulsory_traffic", lambda: _compulsory_traffic(einsum, workload))


def _compulsory_traffic(einsum: Einsum, workload: Workload) -> Traffic:
    """`compulsory_traffic`, computed."""
    reads: dict[str, float] = {}
    for access in einsum.inputs:
        if access.tensor == einsum.output.tensor:
            continue
        tensor = workload.tensor(access.tensor)
        # a tensor read through several index expressions (a rotation's e, e - 64 and e + 64) moves at least the
        # largest footprint among them: a lower bound on their union, as a roofline must be
        reads[tensor.name] = max(reads.get(tensor.name, 0.0), einsum.footprint(access, tensor) * tensor.bits / 8)
    out = workload.tensor(einsum.output.tensor)
    writes = {out.name: einsum.footprint(einsum.output, out) * out.bits / 8}
    return Traffic(reads, writes, workload.roles(einsum))


def bound_on(einsum: Einsum, workload: Workload, arch: Arch, engine_name: str) -> Bound:
    """Roofline bound of `einsum` on the named engine (compute peak is infinite cycles if it cannot run it)."""
    engine = next(e for e in arch.engines if e.name == engine_name)
    ops = einsum.macs if einsum.op == "mac" else einsum.ops
    peak = engine.roof_per_cycle(einsum, workload)
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    compute_cycles = ops / peak * clock_ratio if peak > 0 else math.inf
    traffic = compulsory_traffic(einsum, workload)
    level_bytes, level_read, level_cycles, level_energy = {}, {}, {}, {}
    for level in arch.memory:
        read, write = traffic.through(level)
        level_bytes[level.name] = read + write
        level_read[level.name] = read
        level_cycles[level.name] = engine.transfer_cycles(read, write, level, arch)
        read_energy, write_energy = level_energy_per_bit(level, arch.technology_nm)
        level_energy[level.name] = 8 * (read * read_energy + write * write_energy)
    return Bound(einsum.name, engine.name, einsum.op, einsum.macs, ops, compute_cycles,
                 level_bytes, level_read, level_cycles, level_energy)


def roofline(einsum: Einsum, workload: Workload, arch: Arch) -> Bound:
    """The lowest roofline bound of `einsum` over the arch's engines that can run it."""
    bounds = [bound_on(einsum, workload, arch, e.name) for e in arch.engines if e.peak_per_cycle(einsum) > 0]
    if not bounds:
        kinds = ", ".join(f"{e.name} ({e.kind})" for e in arch.engines)
        raise InfeasibleError(
            f"no engine of arch '{arch.name}' can run einsum '{einsum.name}' (operator '{einsum.op}'); "
            f"its engines are {kinds}. Fix: add an engine that supports '{einsum.op}', e.g. a 'vector' engine.")
    return min(bounds, key=lambda b: b.cycles)
