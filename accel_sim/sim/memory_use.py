"""What each memory level did over a run: capacity, peak occupancy, bytes refused, bytes read and written, and the
busy fraction of the makespan (the `memory` block of summary.json and the reports' occupancy plot), from the homes
that sim/placement.py assigned or the buffers a scheduler allocated."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from accel_sim.sim.placement import Home, parameter_occupancy
from accel_sim.spec.cost import WRITE_ACTIONS
from accel_sim.sim.trace import LevelUse
from accel_sim.spec.arch import Ports

if TYPE_CHECKING:
    from accel_sim.sim.execution import Placement
    from accel_sim.sim.trace import Trace
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload


def memory_use(arch: Arch, workload: Workload, placements: tuple[Placement, ...], trace: Trace,
               homes: tuple[Home, ...] | None) -> tuple[LevelUse, ...]:
    """Per memory level: capacity, peak occupancy and spilled bytes (from `homes`, or the trace's buffers when the
    model allocated them itself), bytes read and written, and the busy fraction of the makespan."""
    bits = {t.name: t.bits for t in workload.tensors}
    read = {lv.name: 0.0 for lv in arch.memory}
    written = dict(read)
    # busy cycles per level and per set of ports it is seen through: a near-memory engine's banks are not the
    # external bus, and in NeuPIMs' concurrent mode both are busy at once (their sum would exceed the makespan)
    busy: dict[tuple[str, Ports], float] = {}
    for p in placements:
        for (level, tensor, action), elements in p.cost.accesses.items():
            target = written if action in WRITE_ACTIONS else read
            target[level] = target.get(level, 0.0) + elements * bits[tensor] / 8
        engine = arch.engine(p.engine)
        cycles = engine.level_busy_cycles(p.cost, workload, arch)
        for lv in arch.memory:
            key = (lv.name, engine.level_ports(lv, arch.engine_clock_hz(engine)))
            busy[key] = busy.get(key, 0.0) + cycles[lv.name]
    peak, spilled = _occupancy(arch, workload, trace, homes)
    span = trace.makespan_cycles
    busiest = {lv.name: max((c for (name, _), c in busy.items() if name == lv.name), default=0.0) for lv in arch.memory}
    return tuple(LevelUse(lv.name, lv.capacity_bytes, peak.get(lv.name, 0.0), spilled.get(lv.name, 0.0),
                          trace.instances * read[lv.name], trace.instances * written[lv.name],
                          trace.instances * busiest[lv.name] / span if span else 0.0) for lv in arch.memory)


def _occupancy(arch: Arch, workload: Workload, trace: Trace, homes: tuple[Home, ...] | None
               ) -> tuple[dict[str, float], dict[str, float]]:
    """(peak live bytes, bytes refused) per level: from the homes, else the trace's on-chip buffers."""
    live = parameter_occupancy(arch, workload)
    peak = {name: float(v.max()) for name, v in live.items() if v.any()}
    spilled: dict[str, float] = {}
    if homes is None:
        # the scheduler's own allocation: its on-chip buffer (the trace's capacity) and the intermediates it spilled
        inner = [lv for lv in arch.memory if lv.name == trace.buffer_level]
        if inner:
            events = sorted([(b.start, b.bytes) for b in trace.buffers] + [(b.end, -b.bytes) for b in trace.buffers])
            peak[inner[0].name] = peak.get(inner[0].name, 0.0) + float(max(np.cumsum([d for _, d in events]),
                                                                              default=0.0))
            spills = [b for b in trace.buffers if b.placement == "spill"]
            spilled[inner[0].name] = float(sum(workload.tensor(b.tensor).bytes for b in spills
                                               if b.tensor in workload.tensor_map))
        return peak, spilled
    for home in homes:
        life = home.lifetime
        live[home.level][life.start:life.end + 1] += home.held_bytes
        if home.spilled:
            spilled[home.first_choice] = spilled.get(home.first_choice, 0.0) + life.bytes
    return {name: float(v.max()) for name, v in live.items()}, spilled
