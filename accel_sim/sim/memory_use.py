"""What each memory level did over a run: capacity, peak occupancy, bytes refused, bytes read and written, and the
busy fraction of the makespan (the `memory` block of summary.json and the reports' occupancy plot), from the homes
that sim/placement.py assigned or the buffers a scheduler allocated."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from accel_sim.sim.placement import Home, parameter_occupancy, parameters
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
        spills = [b for b in trace.buffers if b.placement == "spill" and b.tensor in workload.tensor_map]
        lives = _graph_io_lives(arch, workload, trace)
        if trace.buffer_level:
            lives.setdefault(trace.buffer_level, []).extend((b.start, b.end, b.bytes) for b in trace.buffers)
            spilled[trace.buffer_level] = float(sum(workload.tensor(b.tensor).bytes for b in spills))
        if trace.spill_level:
            lives.setdefault(trace.spill_level, []).extend((b.start, b.end, workload.tensor(b.tensor).bytes)
                                                           for b in spills)
        for level, held in lives.items():
            peak[level] = peak.get(level, 0.0) + _peak_of(held)
        return peak, spilled
    for home in homes:
        life = home.lifetime
        live[home.level][life.start:life.end + 1] += home.held_bytes
        if home.spilled:
            spilled[home.first_choice] = spilled.get(home.first_choice, 0.0) + life.bytes
    return {name: float(v.max()) for name, v in live.items()}, spilled


def _peak_of(lives: list[tuple[float, float, float]]) -> float:
    """Most bytes live at once among (start, end, bytes) lives; one that ends as another starts does not overlap."""
    events = sorted([(start, size) for start, _, size in lives] + [(end, -size) for _, end, size in lives])
    return float(max(np.cumsum([d for _, d in events]), default=0.0))


def _graph_io_lives(arch: Arch, workload: Workload, trace: Trace) -> dict[str, list[tuple[float, float, float]]]:
    """Per level, (start, end, bytes) of a scheduled graph's inputs (from the start to their last reader's end) and
    outputs (from their writer's start to the makespan), parameters left out: each lives at the outermost level
    that admits its role in the einsum that first touches it, where the schedule's options read or write it."""
    spans: dict[str, tuple[float, float]] = {}
    for span in trace.spans:
        if span.kind == "einsum":
            first, last = spans.get(span.label, (span.start, span.end))
            spans[span.label] = (min(first, span.start), max(last, span.end))
    produced = {e.output.tensor for e in workload.einsums}
    read = {a.tensor for e in workload.einsums for a in e.inputs}
    held = {name for name, _ in parameters(workload)}
    lives: dict[str, list[tuple[float, float, float]]] = {}
    for tensor in workload.tensors:
        if tensor.name in held:
            continue
        if tensor.name not in produced:
            ends = [spans[e.name][1] for e in workload.einsums
                    if e.name in spans and any(a.tensor == tensor.name for a in e.inputs)]
            life = (0.0, max(ends), tensor.bytes) if ends else None
        elif tensor.name not in read:
            starts = [spans[e.name][0] for e in workload.einsums if e.name in spans and e.output.tensor == tensor.name]
            life = (min(starts), trace.makespan_cycles, tensor.bytes) if starts else None
        else:
            continue   # an intermediate: a buffer of the schedule
        if life is None:
            continue   # a tensor only a view reads (an ONNX shape constant): no einsum touches it
        user = next((e for e in workload.einsums if tensor.name in workload.roles(e)), None)
        role = workload.roles(user)[tensor.name] if user is not None else ""
        home = next((lv.name for lv in arch.memory if lv.admits(role, tensor.name)), None) if role else None
        if home is not None:
            lives.setdefault(home, []).append(life)
    return lives
