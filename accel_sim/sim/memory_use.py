"""What each memory level did over a run: capacity, peak occupancy, bytes refused, bytes read and written, and the
busy fraction of the makespan (the `memory` block of summary.json and the reports' occupancy plot), from the homes
that sim/placement.py assigned or the buffers a scheduler allocated."""
from __future__ import annotations

from typing import TYPE_CHECKING

from accel_sim.sim.placement import Home, parameter_occupancy, parameters
from accel_sim.sim.trace import LevelUse
from accel_sim.spec.arch import Ports
from accel_sim.spec.cost import WRITE_ACTIONS

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
        # the scheduler's own allocation: its on-chip buffer (the trace's capacity) and the intermediates it spilled;
        # lazy: schedule.model loads ortools, which a sequential run (homes given) never needs
        from accel_sim.schedule.model import peak_live_bytes

        spills = [b for b in trace.buffers if b.placement == "spill" and b.tensor in workload.tensor_map]
        lives = _graph_io_lives(arch, workload, trace)
        if trace.buffer_level:
            lives.setdefault(trace.buffer_level, []).extend((b.start, b.end, b.bytes) for b in trace.buffers)
            spilled[trace.buffer_level] = float(sum(workload.tensor(b.tensor).bytes for b in spills))
        if trace.spill_level:
            lives.setdefault(trace.spill_level, []).extend((b.start, b.end, workload.tensor(b.tensor).bytes)
                                                           for b in spills)
        for level, held in lives.items():
            peak[level] = peak.get(level, 0.0) + peak_live_bytes(held)
        return peak, spilled
    for home in homes:
        life = home.lifetime
        live[home.level][life.start:life.end + 1] += home.held_bytes
        if home.spilled:
            spilled[home.first_choice] = spilled.get(home.first_choice, 0.0) + life.bytes
    return {name: float(v.max()) for name, v in live.items()}, spilled


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
    role: dict[str, str] = {}           # a tensor's role in the first einsum that touches it
    last_read: dict[str, float] = {}    # the end of a tensor's last reader
    first_written: dict[str, float] = {}   # the start of its writer
    for e in workload.einsums:
        for name, in_role in workload.roles(e).items():
            role.setdefault(name, in_role)
        if e.name in spans:
            start, end = spans[e.name]
            for a in e.inputs:
                last_read[a.tensor] = max(last_read.get(a.tensor, end), end)
            first_written[e.output.tensor] = min(first_written.get(e.output.tensor, start), start)
    lives: dict[str, list[tuple[float, float, float]]] = {}
    for tensor in workload.tensors:
        if tensor.name in held or tensor.name not in role:   # a tensor only a view reads: no einsum touches it
            continue
        if tensor.name not in produced and tensor.name in last_read:
            life = (0.0, last_read[tensor.name], tensor.bytes)
        elif tensor.name not in read and tensor.name in first_written:
            life = (first_written[tensor.name], trace.makespan_cycles, tensor.bytes)
        else:
            continue   # an intermediate (a buffer of the schedule), or one whose einsums did not run
        home = next((lv.name for lv in arch.memory if lv.admits(role[tensor.name], tensor.name)), None)
        if home is not None:
            lives.setdefault(home, []).append(life)
    return lives
