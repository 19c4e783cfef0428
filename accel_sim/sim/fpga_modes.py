"""The `fpga` execution model: the modes of an FPGA design: sequential (an overlay, one operator at a time on
all cores), dataflow (operators as pipeline stages with their own share of DSP chains and SFU lanes,
intermediates kept on chip) and auto, which picks the faster of the two per group of operators and says why
(the InTAR idea: He et al., "InTAR: Inter-Task Auto-Reconfigurable Accelerator Design", FCCM 2025, switches per
task between a sequential and a dataflow schedule by data volume and resource use).

Groups are runs of at most `max_stages` consecutive einsums. Sequential and dataflow cut the workload into
consecutive runs of exactly `max_stages` (the last shorter); auto chooses the cut itself, by dynamic programming
over every run of 1..max_stages einsums, each run in the faster of its two modes. The fixed cut is one of the
cuts auto considers, so auto is never slower than the better of the other two, and allowing more stages only
adds cuts, so auto never gets slower as `max_stages` grows. In a dataflow group:
- stage i gets a_i DSP chains (`reduce` MACs each; contractions) or a_i SFU lanes (other operators), chosen
  (exactly, by greedy increments) to minimise the slowest stage's time T = max_i work_i / (a_i x rate) under the pools;
- the stages stream G granules (rows of the smallest streamed extent): the first granule crosses every stage,
  then one leaves per slowest-stage time, (sum_i t_i + (G - 1) max_i t_i) / G cycles (`pipeline_cycles`);
- an HLS design (`kernels`, engines/fpga/kernels.py) gives each stage its own kernel, parallelism and ports
  instead of a share of the pools, and its streams FIFOs (a FIFO shallower than a granule serializes its ends);
- only the group's inputs, weights and outputs cross the off-chip channels (all channels, same-channel
  efficiency); intermediates live in on-chip ping-pong buffers of two granules per stage crossed, which must
  fit the on-chip levels' capacity, or the group cannot run as a dataflow.
Each einsum's own cost (engines/fpga/timing.py, one operator on all cores) is its sequential time; through
`evaluate` the trace is the groups back to back on the engine, each in the mode it runs in.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

from accel_sim.energy.components import is_off_chip
from accel_sim.engines.fpga.engine import FpgaEngine
from accel_sim.engines.fpga.kernels import channel_bytes_per_cycle, kernel_time
from accel_sim.engines.fpga.timing import channel_bandwidth, passes
from accel_sim.engines.loopnest import gemm_view
from accel_sim.engines.roofline import bound_on
from accel_sim.errors import ConfigError, InfeasibleError
from accel_sim.sim.execution import Execution, Placement
from accel_sim.sim.placement import assign_homes, place_graph, route_homes
from accel_sim.sim.trace import Span, Trace

if TYPE_CHECKING:
    from accel_sim.mapper import MapperCache
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.cost import Cost
    from accel_sim.spec.execution import FpgaExecution
    from accel_sim.spec.workload import Einsum, Workload

Mode = Literal["sequential", "dataflow", "auto"]
MODES: tuple[str, ...] = ("sequential", "dataflow", "auto")


@dataclass(frozen=True)
class Stage:
    """One operator of a dataflow group with its share of the pool it draws from."""

    einsum: str
    pool: str          # 'dsp_chains' or 'sfu_lanes'
    work: float        # chain-cycles or lane-cycles of work
    units: int         # chains or lanes allocated
    cycles: float      # work / units (engine clock)


@dataclass(frozen=True)
class Group:
    """A run of consecutive einsums, its cycles in both modes (arch clock), the choice and the reason."""

    einsums: tuple[str, ...]
    sequential_cycles: float
    dataflow_cycles: float              # inf when it cannot run as a dataflow
    mode: str                           # the mode it runs in
    reason: str
    stages: tuple[Stage, ...] = ()
    intermediate_bytes: float = 0.0     # bytes the sequential schedule writes off chip and reads back
    onchip_bytes: float = 0.0           # ping-pong buffers the dataflow needs

    @property
    def cycles(self) -> float:
        """Cycles of the mode it runs in."""
        return self.dataflow_cycles if self.mode == "dataflow" else self.sequential_cycles


@dataclass(frozen=True)
class ExecutionPlan:
    """A workload's groups on one FPGA engine under one mode."""

    mode: str
    engine: str
    groups: tuple[Group, ...]

    @property
    def cycles(self) -> float:
        """Total cycles (arch clock), groups back to back."""
        return sum(g.cycles for g in self.groups)

    def explain(self) -> list[str]:
        """One line per group: einsums, mode and why."""
        return [f"{g.einsums[0]}..{g.einsums[-1]} ({len(g.einsums)} ops): {g.mode}; {g.reason}" for g in self.groups]


def plan(workload: Workload, arch: Arch, engine_name: str, mode: Mode = "auto", max_stages: int = 8) -> ExecutionPlan:
    """Run `workload` on the named FPGA engine of `arch` in `mode`; every group records both modes' cycles."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    engine = arch.engine(engine_name)
    if not isinstance(engine, FpgaEngine):
        raise InfeasibleError(f"engine '{engine_name}' is a '{engine.kind}' engine; execution modes need an FPGA "
                              f"engine. Fix: name an engine of kind 'fpga'")
    _check_kernels(engine, workload, arch)
    einsums = workload.einsums
    seq_cache: dict[tuple, float] = {}
    df_cache: dict[tuple, _Dataflow] = {}

    def group(start: int, stop: int) -> Group:
        """Einsums start..stop as one group in `mode`, its dataflow costed once per run signature."""
        members = einsums[start:stop]
        seq = sum(_sequential(e, workload, arch, engine, seq_cache) for e in members)
        key = _group_signature(members, workload, arch) if not engine.kernels else tuple(e.name for e in members)
        if key not in df_cache:
            df_cache[key] = _dataflow(members, workload, arch, engine)
        return _choose(mode, seq, _renamed(df_cache[key], members), members)

    if mode == "auto":
        return ExecutionPlan(mode, engine_name, _best_cut(len(einsums), max_stages, group))
    cuts = range(0, len(einsums), max_stages)
    return ExecutionPlan(mode, engine_name, tuple(group(i, min(i + max_stages, len(einsums))) for i in cuts))


def _check_kernels(engine: FpgaEngine, workload: Workload, arch: Arch) -> None:
    """An HLS design's kernels name einsums of this workload, and some kernel runs each of its einsums."""
    if not engine.kernels:
        return
    index = next(i for i, e in enumerate(arch.engines) if e.name == engine.name)
    names = [e.name for e in workload.einsums]
    for i, kernel in enumerate(engine.kernels):
        unknown = [n for n in kernel.einsums if n not in names]
        if unknown:
            raise ConfigError(f"kernel '{kernel.name}' names einsums {unknown} that workload '{workload.name}' does "
                              f"not have (its einsums: {', '.join(names)})", key_path=f"engines[{index}].kernels[{i}]"
                              f".einsums", fix="name the workload's einsums (an einsum is named after its output)")
    missing = [n for n in names if not any(n in k.einsums for k in engine.kernels)]
    if missing:
        raise ConfigError(f"no kernel of '{engine.name}' runs einsums {missing} of workload '{workload.name}'",
                          key_path=f"engines[{index}].kernels", fix="add them to the einsums of a kernel")


def _best_cut(count: int, max_stages: int, group: Callable[[int, int], Group]) -> tuple[Group, ...]:
    """The groups of the cheapest cut of `count` einsums into runs of 1..max_stages (dynamic programming)."""
    best: list[tuple[float, int, Group | None]] = [(0.0, 0, None)]
    for stop in range(1, count + 1):
        options = []
        for start in range(max(0, stop - max_stages), stop):
            g = group(start, stop)
            options.append((best[start][0] + g.cycles, start, g))
        best.append(min(options, key=lambda o: (o[0], o[1])))
    groups, stop = [], count
    while stop > 0:
        _, start, g = best[stop]
        groups.append(g)
        stop = start
    return tuple(reversed(groups))


def _group_signature(members: tuple[Einsum, ...], workload: Workload, arch: Arch) -> tuple:
    """A key shared by runs of einsums that differ only in names: each member's shape key, which tensors the
    members share, and which of them are read outside the run (the dataflow model depends on nothing else)."""
    ids: dict[str, int] = {}
    shapes, links = [], []
    for e in members:
        key, tensors = arch.shape_key(workload, e)
        shapes.append(key)
        links.append(tuple(ids.setdefault(t, len(ids)) for t in tensors))
    outside = tuple(_used_outside(e.output.tensor, members, workload) for e in members)
    return tuple(shapes), tuple(links), outside


def _renamed(df: _Dataflow, members: tuple[Einsum, ...]) -> _Dataflow:
    """A cached dataflow result with its stages named after `members` (runs with one signature share it)."""
    if not df.stages:
        return df
    names = [e.name for e in members]
    slowest = names[[s.einsum for s in df.stages].index(df.slowest)]
    stages = tuple(Stage(n, s.pool, s.work, s.units, s.cycles) for n, s in zip(names, df.stages))
    return _Dataflow(df.cycles, stages, df.intermediate_bytes, df.onchip_bytes, df.problem, slowest)


def _sequential(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine, cache: dict) -> float:
    return _operator_cost(einsum, workload, arch, engine, cache).total_cycles


def _operator_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine, cache: dict) -> Cost:
    """The einsum's cost as one operator on all cores (each distinct shape costed once, then renamed)."""
    key, tensors = arch.shape_key(workload, einsum)
    if key not in cache:
        cache[key] = (tensors, engine.cost(einsum, workload, arch))
    first, cost = cache[key]
    return cost if first == tensors else cost.with_tensor_names(dict(zip(first, tensors)))


@dataclass(frozen=True)
class _Dataflow:
    cycles: float
    stages: tuple[Stage, ...]
    intermediate_bytes: float
    onchip_bytes: float
    problem: str          # empty when feasible
    slowest: str = ""


def _rows(einsum: Einsum, workload: Workload) -> int:
    """Granules a stage streams: the GEMM's M rows, or the output with its last rank folded in."""
    if einsum.op == "mac":
        return max(gemm_view(einsum, workload).m, 1)
    ranks = einsum.output.ranks
    return max(math.prod(einsum.sizes[r] for r in ranks[:-1]) if len(ranks) > 1 else 1, 1)


def _dataflow(members: tuple[Einsum, ...], workload: Workload, arch: Arch, engine: FpgaEngine) -> _Dataflow:
    produced = {e.output.tensor: i for i, e in enumerate(members)}
    consumers: dict[str, int] = {}
    for i, e in enumerate(members):
        for access in e.inputs:
            if access.tensor in produced and produced[access.tensor] < i:
                consumers[access.tensor] = max(consumers.get(access.tensor, 0), i)
    granules = min(_rows(e, workload) for e in members)
    inner = set(produced) - {t for t in produced if _used_outside(t, members, workload)}
    intermediate = sum(2 * workload.tensor(t).bytes for t in inner if t in consumers)
    if engine.kernels:
        return _kernel_dataflow(members, workload, arch, engine, granules, frozenset(inner & set(consumers)))
    # on chip: two granules of every intermediate per stage it crosses (ping-pong), capped at the tensor
    onchip = sum(min(workload.tensor(t).bytes, 2 * workload.tensor(t).bytes / granules * (consumers[t] - produced[t]))
                 for t in inner if t in consumers)
    capacity = sum(lv.capacity_bytes for lv in arch.memory if not is_off_chip(lv))
    if onchip > capacity:
        return _Dataflow(math.inf, (), intermediate, onchip,
                         f"its intermediates need {onchip / 2**20:.3g} MiB of ping-pong buffers but the on-chip "
                         f"levels hold {capacity / 2**20:.3g} MiB")
    stages, problem = _overlay_stages(members, workload, engine)
    if problem:
        return _Dataflow(math.inf, (), intermediate, onchip, problem)
    slowest = max(stages, key=lambda s: s.cycles)
    pipeline = pipeline_cycles([s.cycles for s in stages], granules)
    # only what enters or leaves the group crosses the channels
    offchip_bytes = 0.0
    seen: set[str] = set()
    for e in members:
        for access in e.inputs:
            if access.tensor not in produced and access.tensor not in seen:
                seen.add(access.tensor)
                offchip_bytes += workload.tensor(access.tensor).bytes
    offchip_bytes += sum(workload.tensor(t).bytes for t in set(produced) - inner)
    striped = engine.fpga.offchip.channels * channel_bandwidth(engine, arch) * engine.same_efficiency
    clock = arch.engine_clock_hz(engine)
    busy = max(pipeline, offchip_bytes / striped * clock)
    return _Dataflow(busy * arch.clock_hz / clock, stages, intermediate, onchip, "", slowest.einsum)


def pipeline_cycles(stage_cycles: list[float], granules: int) -> float:
    """Cycles of G granules through stages in a row: the first granule crosses every stage (fill), then one
    granule leaves per slowest-stage time: (sum_i t_i + (G - 1) max_i t_i) / G for stage times t_i."""
    return (sum(stage_cycles) + (granules - 1) * max(stage_cycles)) / granules


def _overlay_stages(members: tuple[Einsum, ...], workload: Workload, engine: FpgaEngine) -> tuple[tuple[Stage, ...], str]:
    """An overlay's stages: the DSP chains and SFU lanes shared out to minimise the slowest stage."""
    chains = engine.cores * engine.matrix.macs // engine.matrix.reduce
    lanes = engine.cores * engine.sfu_lanes
    works = []
    for e in members:
        if e.op == "mac":
            view = gemm_view(e, workload)
            works.append(("dsp_chains", e.macs * passes(engine, view.streamed_bits, view.weight_bits)
                          / engine.matrix.reduce))
        else:
            works.append(("sfu_lanes", float(e.ops)))
    pools = {"dsp_chains": chains, "sfu_lanes": lanes}
    for pool, size in pools.items():
        count = sum(1 for p, _ in works if p == pool)
        if count > size:
            return (), f"{count} stages need {pool} but the design has {size}"
    units = _allocate(works, pools)
    return tuple(Stage(e.name, p, w, u, w / u) for e, (p, w), u in zip(members, works, units)), ""


def _kernel_dataflow(members: tuple[Einsum, ...], workload: Workload, arch: Arch, engine: FpgaEngine,
                     granules: int, streams: frozenset[str]) -> _Dataflow:
    """An HLS design's kernels as pipeline stages: each einsum at its kernel's parallelism and ports, streams
    through their FIFOs; einsums sharing a kernel run one after another on it, and a FIFO that cannot hold one
    granule of its tensor makes its producer wait for its consumer, so the two kernels act as one stage."""
    timed = {e.name: kernel_time(e, workload, arch, engine, streams) for e in members}
    owner = {e.name: timed[e.name].kernel for e in members}
    fifos = {f.tensor: f for f in engine.fifos}
    merged = {k: k for k in owner.values()}

    def root(k: str) -> str:
        """The stage a kernel belongs to once shallow FIFOs have merged kernels."""
        while merged[k] != k:
            k = merged[k]
        return k

    producer = {e.output.tensor: e.name for e in members}
    for e in members:
        for t in {a.tensor for a in e.inputs} & streams:
            src, dst = owner[producer[t]], owner[e.name]
            if src == dst:
                continue
            if t not in fifos:
                return _Dataflow(math.inf, (), 0.0, 0.0, f"no FIFO carries '{t}' from kernel {src} to {dst}")
            if fifos[t].capacity_bytes < workload.tensor(t).bytes / granules:
                merged[root(dst)] = root(src)
    per_stage: dict[str, float] = {}
    for e in members:
        per_stage[root(owner[e.name])] = per_stage.get(root(owner[e.name]), 0.0) + timed[e.name].cycles
    stages = tuple(Stage(e.name, f"lanes of kernel {owner[e.name]}", timed[e.name].compute,
                         int(engine.peak_per_cycle(e)), timed[e.name].cycles) for e in members)
    channel: dict[int, float] = {}
    for t in timed.values():
        for c, size in t.channel_bytes.items():
            channel[c] = channel.get(c, 0.0) + size
    # kernels run at once: the ports bound to one channel share it over the whole group
    busy = max(pipeline_cycles(list(per_stage.values()), granules),
               *(size / channel_bytes_per_cycle(engine, arch) for size in channel.values()), 0.0)
    slowest = max(stages, key=lambda s: s.cycles)
    onchip = float(sum(f.capacity_bytes for f in engine.fifos if f.tensor in streams))
    intermediate = sum(2 * workload.tensor(t).bytes for t in streams)
    return _Dataflow(busy * arch.clock_hz / arch.engine_clock_hz(engine), stages, intermediate, onchip, "",
                     slowest.einsum)


def _used_outside(tensor: str, members: tuple[Einsum, ...], workload: Workload) -> bool:
    """A tensor some einsum outside the group reads, or a workload output."""
    names = {e.name for e in members}
    readers = [e for e in workload.einsums if any(a.tensor == tensor for a in e.inputs)]
    return not readers or any(e.name not in names for e in readers)


def _allocate(works: list[tuple[str, float]], pools: dict[str, int]) -> list[int]:
    """Units per stage minimising the slowest stage: per pool, every stage gets one unit and each further unit
    goes to the pool's slowest stage. Greedy increments are exact for a min-max of decreasing separable
    functions under one budget (Ibaraki and Katoh, "Resource Allocation Problems", MIT Press 1988, ch. 4), and
    the pools are independent, so the slowest stage overall is as fast as it can be."""
    units = [1] * len(works)
    for pool, size in pools.items():
        members = [i for i, (p, _) in enumerate(works) if p == pool]
        if not members:
            continue
        heap = [(-works[i][1], i) for i in members]
        heapq.heapify(heap)
        for _ in range(size - len(members)):
            _, i = heapq.heappop(heap)
            units[i] += 1
            heapq.heappush(heap, (-works[i][1] / units[i], i))
    return units


def _choose(mode: str, seq: float, df: _Dataflow, members: tuple[Einsum, ...]) -> Group:
    names = tuple(e.name for e in members)
    common = dict(stages=df.stages, intermediate_bytes=df.intermediate_bytes, onchip_bytes=df.onchip_bytes)
    if df.problem:
        why = f"cannot run as a dataflow: {df.problem}"
        return Group(names, seq, math.inf, "sequential", why if mode != "sequential" else "sequential by request",
                     **common)
    slow = next(s for s in df.stages if s.einsum == df.slowest)
    trade = (f"dataflow keeps {df.intermediate_bytes / 2**20:.3g} MiB of intermediate traffic on chip but gives the "
             f"slowest stage {slow.einsum} {slow.units} {slow.pool.replace('_', ' ')}: {df.cycles:.4g} vs "
             f"{seq:.4g} cycles sequential")
    if mode == "sequential":
        return Group(names, seq, df.cycles, "sequential", "sequential by request; " + trade, **common)
    if mode == "dataflow" or df.cycles < seq:
        return Group(names, seq, df.cycles, "dataflow", trade, **common)
    return Group(names, seq, df.cycles, "sequential", trade, **common)


def fpga_engine(arch: Arch, name: str | None) -> FpgaEngine:
    """The FPGA engine called `name`, or the arch's first FPGA engine."""
    found = [e for e in arch.engines if isinstance(e, FpgaEngine) and (name is None or e.name == name)]
    if not found:
        names = ", ".join(e.name for e in arch.engines if isinstance(e, FpgaEngine)) or "none"
        raise ConfigError(f"execution kind 'fpga' needs an engine of kind 'fpga'"
                          f"{f' named {name!r}' if name else ''} in arch '{arch.name}' (FPGA engines: {names})",
                          key_path="execution.engine", fix="name an engine of kind 'fpga', or drop 'engine'")
    return found[0]


def run_fpga(spec: FpgaExecution, arch: Arch, workload: Workload, objective: str,
             cache: MapperCache | None = None) -> Execution:
    """Every einsum on the FPGA engine, groups run in the spec's mode back to back (`execution: fpga`)."""
    engine = fpga_engine(arch, spec.engine)
    homes = assign_homes(arch, workload)
    routed = route_homes(arch, workload, homes)   # intermediates homed on chip stay there, as in `sequential`
    planned = plan(workload, routed, engine.name, spec.mode, spec.max_stages)
    memo: dict = {}  # the FPGA engine has no mapspace: its operator costs are memoized here, not mapped
    own = tuple(Placement(e.name, engine.name, e.op, _operator_cost(e, workload, routed, engine, memo),
                          bound_on(e, workload, routed, engine.name)) for e in workload.einsums)
    placed, homes = place_graph(routed, workload, own, homes)
    # a spill's time lands on the einsums of the groups that run them one at a time; a dataflow group streams
    # whatever crosses it off chip already and checks its ping-pong buffers against the on-chip capacity
    extra = {p.einsum: p.cost.total_cycles - o.cost.total_cycles for p, o in zip(placed, own)}
    spans, now = [], 0.0
    for i, group in enumerate(planned.groups):
        label = f"{group.einsums[0]}..{group.einsums[-1]} ({group.mode})"
        cycles = group.cycles + (sum(extra[e] for e in group.einsums) if group.mode == "sequential" else 0.0)
        spans.append(Span(engine.name, "group", label, now, now + cycles, instance=i))
        now += cycles
    trace = Trace("fpga", spec.mode, tuple(spans), arch.clock_hz, (engine.name,), now, concurrent=False,
                  notes=tuple(planned.explain()))
    return Execution(placed, trace, homes)
