"""One batched LLM decode iteration on an NPU that shares its HBM with PIM, played out with simpy (NeuPIMs).

The workload is a decode step (zoo transformer, rank `m` = key positions, rank `b` = requests). Its einsums
are grouped by layer (the name before the first dot) and, within a layer, into stages: the dense einsums
before attention (`pre`: norms, QKV projections), the attention einsums (those with the key rank `m`) and
the dense einsums after it (`post`: output projection, FFN). Each request attends its own context length.

Resources are simpy resources: the NPU's identical systolic arrays as one pool (a GEMM's folds split over
them), each vector engine, the HBM external bus (all channels striped: NPU traffic moves through it in
chunks, overlapping the engine's compute), and one resource per PIM channel. Policies:

* `npu_only`: attention runs on the NPU engines and reads the KV cache over the bus.
* `naive` (NPU+PIM, blocked): attention GEMVs run in the banks of each request's channel; the stack is in
  PIM mode while they run, so the NPU cannot use the bus; one batch, stages in sequence.
* `neupims`: concurrent mode (dual row buffers: NPU traffic proceeds while banks compute) and sub-batch
  interleaving: the batch is split in two, and one sub-batch's attention on PIM overlaps the other's
  GEMMs on the NPU (Heo et al., ASPLOS 2024, Sec. 4-5). A layer's weights stay in the on-chip buffer
  between sub-batches when they fit, so the second sub-batch does not read them again.

Requests go to channels by longest-first greedy load balancing (each to the channel with the least KV so
far). Softmax passes of PIM attention run on the NPU's vector engine on scores returned by READRES, so they
move no DRAM traffic. Output: the `Trace` of sim/trace.py (spans per resource in arch cycles, makespan,
utilization, timeline) with an `NpuPimDetail` (the items run, tokens, NPU DRAM bytes).
"""
from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generator, Literal, Sequence

from accel_sim.energy.components import is_off_chip
from accel_sim.engines.pim import GemvTime, PimEngine, gemv_shape
from accel_sim.engines.roofline import Bound, bound_on
from accel_sim.engines.systolic import SystolicEngine
from accel_sim.errors import ConfigError
from accel_sim.schedule.onchip import on_chip_bound, on_chip_cost
from accel_sim.sim.execution import Execution, Placement
from accel_sim.sim.llm_requests import DISTRIBUTIONS, continuous_batch
from accel_sim.sim.placement import place_graph, timed_as_before
from accel_sim.sim.trace import Span, Trace
from accel_sim.spec.cost import Cost
from accel_sim.spec.workload import Einsum, Workload

if TYPE_CHECKING:
    import simpy

    from accel_sim.mapper import MapperCache
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.execution import NpuPimExecution

    Process = Generator[simpy.Event, object, object]  # a simpy process body

KEY_RANK = "m"     # zoo/transformer.py: key positions attended (the per-request context)
BATCH_RANK = "b"   # zoo/transformer.py: sequences (requests)
BUS = "hbm_bus"
NPU = "npu_arrays"
CHUNK_BYTES = 1 << 20  # NPU transfers move in 1 MiB chunks so PIM-mode switches can interleave with them
PolicyName = Literal["npu_only", "naive", "neupims"]


@dataclass(frozen=True)
class Policy:
    """Where attention runs, how many sub-batches interleave, and whether PIM blocks the host."""

    name: str
    attention_on_pim: bool
    sub_batches: int
    blocked: bool


POLICIES: dict[str, Policy] = {
    "npu_only": Policy("npu_only", False, 1, False),
    "naive": Policy("naive", True, 1, True),
    "neupims": Policy("neupims", True, 2, False),
}


@dataclass(frozen=True)
class Item:
    """One piece of work on one resource: engine time, DRAM bytes over the bus, scalar operations done."""

    einsum: str
    layer: str
    sub_batch: int
    resource: str
    busy_s: float
    dram_bytes: float
    dram_s: float        # the bus time of those bytes: through one shared port, or the busier of a read and a write port
    ops: int
    cost: Cost
    engine: str
    bound: Bound     # the roofline of the einsum at the item's own sizes (a request's context, a sub-batch)


@dataclass(frozen=True)
class NpuPimDetail:
    """What the co-simulation ran beyond the spans: every item, the tokens produced, the bus bandwidth."""

    items: tuple[Item, ...]
    tokens: int
    bus_bytes_per_s: float

    @property
    def ops_done(self) -> int:
        """Scalar operator applications of every item (conserved: equals the workload's)."""
        return sum(i.ops for i in self.items)

    @property
    def dram_bytes(self) -> float:
        """Bytes the NPU moved over the HBM bus."""
        return sum(i.dram_bytes for i in self.items)

    def tokens_per_s(self, makespan_s: float) -> float:
        """Tokens produced per second: one per request per decode iteration."""
        return self.tokens / makespan_s if makespan_s > 0 else math.inf

    def summary(self, makespan_s: float) -> dict[str, object]:
        """Tokens per second and the NPU's DRAM bytes."""
        return {"tokens_per_s": self.tokens_per_s(makespan_s), "npu_dram_bytes": self.dram_bytes}


# ---------------------------------------------------------------------------------------------
# Work items
# ---------------------------------------------------------------------------------------------
def resized(workload: Workload, einsum: Einsum, sizes: dict[str, int]) -> tuple[Einsum, Workload]:
    """`einsum` with some ranks resized, in a workload of just its tensors (their matching dims resized)."""
    new = Einsum(einsum.name, einsum.output, einsum.expr,
                 tuple((r, sizes.get(r, s)) for r, s in einsum.rank_sizes), einsum.reduce)
    names = {einsum.output.tensor, *(a.tensor for a in einsum.inputs)}
    tensors = tuple(replace(t, shape=tuple(sizes.get(r, n) for r, n in zip(t.ranks, t.shape)))
                    for t in workload.tensors if t.name in names)
    return new, Workload(workload.name, tensors, (new,))


@dataclass(frozen=True)
class _Machine:
    arch: Arch
    arrays: tuple[SystolicEngine, ...]
    others: tuple  # NPU engines that are not arrays (vector units, other families)
    pim: PimEngine | None
    dram: str
    on_chip_bytes: float


def _machine(arch: Arch) -> _Machine:
    pims = [e for e in arch.engines if isinstance(e, PimEngine)]
    arrays = [e for e in arch.engines if isinstance(e, SystolicEngine)]
    first = arrays[0] if arrays else None
    pool = tuple(a for a in arrays if first is not None and a.model_dump(exclude={"name"}) ==
                 first.model_dump(exclude={"name"}))
    others = tuple(e for e in arch.engines if e not in pool and not isinstance(e, PimEngine))
    off = [lv for lv in arch.memory if is_off_chip(lv)]
    dram = pims[0].memory if pims else (off[0].name if off else arch.memory[0].name)
    on_chip = sum(lv.capacity_bytes or 0 for lv in arch.memory if not is_off_chip(lv))
    return _Machine(arch, pool, others, pims[0] if pims else None, dram, on_chip)


class _Coster:
    """Costs einsums on the machine's engines, memoized by shape (repeated layers cost one evaluation)."""

    def __init__(self, machine: _Machine) -> None:
        self.m = machine
        self.memo: dict[tuple, tuple] = {}

    def npu(self, einsum: Einsum, workload: Workload
            ) -> tuple[str, Cost, float, tuple[float, float], tuple[float, float]]:
        """(engine, cost, busy seconds, (DRAM bytes, their bus seconds), the same for the DRAM bytes other than
        weights) on the fastest NPU engine."""
        key, tensors = self.m.arch.shape_key(workload, einsum)
        if ("npu", key) in self.memo:
            first, name, cost, busy, dram, rest = self.memo[("npu", key)]
            return name, cost.with_tensor_names(dict(zip(first, tensors))), busy, dram, rest
        arch, clock = self.m.arch, self.m.arch.clock_hz
        bits = {t.name: t.bits for t in workload.tensors}
        activation_bits = {t: 0 if workload.storage_class[t] == "weights" else b for t, b in bits.items()}
        options = []
        for engine in (self.m.arrays[:1] + self.m.others):
            if engine.peak_per_cycle(einsum) <= 0:
                continue
            cost = engine.cost(einsum, workload, arch)
            share = len(self.m.arrays) if engine in self.m.arrays else 1
            compute = (cost.compute_cycles + cost.fill_drain_cycles) / share
            level_cycles = engine.level_busy_cycles(cost, workload, arch)
            on_chip = max([cycles for name, cycles in level_cycles.items() if name != self.m.dram], default=0.0)
            ports = arch.level(self.m.dram).ports
            dram_read, dram_write = cost.read_write_bytes_by_level(bits).get(self.m.dram, (0.0, 0.0))
            dram = (dram_read + dram_write, float(ports.seconds(dram_read, dram_write)))
            busy = max(compute, on_chip) / clock
            total = max(busy, engine.transfer_cycles(dram_read, dram_write, arch.level(self.m.dram), arch) / clock)
            rest_read, rest_write = cost.read_write_bytes_by_level(activation_bits).get(self.m.dram, (0.0, 0.0))
            rest = (rest_read + rest_write, float(ports.seconds(rest_read, rest_write)))  # other than weights
            if share > 1:  # the pool's arrays split the einsum (as `busy` counts it): its cost is the pool's time
                cycles = total * clock
                cost = replace(cost, compute_cycles=cost.compute_cycles / share,
                               fill_drain_cycles=cost.fill_drain_cycles / share,
                               stall_cycles=max(0.0, cycles - compute),
                               utilization=min(1.0, cost.utilization * cost.total_cycles / (share * cycles)))
            options.append((total, NPU if engine in self.m.arrays else engine.name, cost, busy, dram, rest))
        if not options:
            raise ConfigError(f"no NPU engine of arch '{arch.name}' can run einsum '{einsum.name}' "
                              f"(operator '{einsum.op}')", key_path="engines",
                              fix=f"add an engine that runs '{einsum.op}', e.g. a vector engine")
        # the fastest engine; among equally fast ones (a GEMV bound by the same DRAM on the arrays and the vector
        # units), the one that spends less
        _, name, cost, busy, dram, rest = min(options, key=lambda o: (o[0], o[2].total_energy_j))
        self.memo[("npu", key)] = (tensors, name, cost, busy, dram, rest)
        return name, cost, busy, dram, rest

    def bound(self, einsum: Einsum, workload: Workload, resource: str) -> Bound:
        """The roofline of `einsum` (resized to an item's sizes) on `resource` (an engine, or the array pool, whose
        arrays share every einsum it runs: its roof is all of theirs), once per shape."""
        key = ("bound", resource, self.m.arch.shape_key(workload, einsum)[0])
        if key not in self.memo:
            bound = bound_on(einsum, workload, self.m.arch, machine_engine(self.m.arch, resource))
            if resource == NPU:
                bound = replace(bound, compute_cycles=bound.compute_cycles / len(self.m.arrays))
            self.memo[key] = bound
        return self.memo[key]

    def pim(self, einsum: Einsum, workload: Workload) -> tuple[Cost, GemvTime]:
        """Cost and one-channel time of a per-request attention contraction (its heads one after another)."""
        key, tensors = self.m.arch.shape_key(workload, einsum)
        key = ("pim", key)
        if key not in self.memo:
            pim = self.m.pim
            shape = gemv_shape(einsum, workload)
            one = pim.channel_gemv(shape.n * shape.k * shape.matrix_bits / 8, shape.k * shape.vector_bits / 8,
                                   shape.n * shape.output_bits / 8)
            repeats = shape.count * shape.vectors
            scale = self.m.arch.clock_hz / self.m.arch.engine_clock_hz(pim)
            time = GemvTime(repeats * one.compute_cycles * scale, repeats * one.io_cycles * scale,
                            repeats * one.rows)
            self.memo[key] = (tensors, pim.cost(einsum, workload, self.m.arch), time)
        first, cost, time = self.memo[key]
        return cost.with_tensor_names(dict(zip(first, tensors))), time


def on_one_channel(cost: Cost, time: GemvTime) -> Cost:
    """A request's PIM cost as the co-simulation runs it: every GEMV in its own channel, one after another (the
    engine's cost spreads them over the channels): the cycles are the channel's, the energy is the same (the
    standby energy of one channel for the whole time equals that of many channels for their share of it)."""
    total = time.cycles
    utilization = cost.utilization * cost.total_cycles / total if total else cost.utilization
    return replace(cost, compute_cycles=time.compute_cycles, fill_drain_cycles=0.0, stall_cycles=time.io_cycles,
                   utilization=utilization)


# ---------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------
def _stages(workload: Workload) -> list[tuple[str, list[Einsum], list[Einsum], list[Einsum]]]:
    """Per layer in order: (layer, pre-attention einsums, attention einsums, post-attention einsums)."""
    layers: dict[str, list[Einsum]] = {}
    for e in workload.einsums:
        layers.setdefault(e.name.split(".")[0], []).append(e)
    out = []
    for name, einsums in layers.items():
        attn = [i for i, e in enumerate(einsums) if KEY_RANK in e.sizes]
        if not attn:
            out.append((name, einsums, [], []))
            continue
        first, last = attn[0], attn[-1]
        out.append((name, einsums[:first], einsums[first:last + 1], einsums[last + 1:]))
    return out


def balance(contexts: Sequence[int], channels: int) -> tuple[int, ...]:
    """Channel of each request: longest first, each to the channel with the least context so far."""
    load = [0] * channels
    out = [0] * len(contexts)
    for i in sorted(range(len(contexts)), key=lambda i: (-contexts[i], i)):
        c = min(range(channels), key=lambda c: (load[c], c))
        out[i] = c
        load[c] += contexts[i]
    return tuple(out)


def split_sub_batches(contexts: Sequence[int], parts: int) -> tuple[tuple[int, ...], ...]:
    """Request indices per sub-batch: longest first, dealt to the sub-batch with the least context."""
    parts = max(1, min(parts, len(contexts)))
    load, members = [0] * parts, [[] for _ in range(parts)]
    for i in sorted(range(len(contexts)), key=lambda i: (-contexts[i], i)):
        p = min(range(parts), key=lambda p: (len(members[p]) >= math.ceil(len(contexts) / parts), load[p], p))
        members[p].append(i)
        load[p] += contexts[i]
    return tuple(tuple(sorted(m)) for m in members)


class _CoSim:
    """The simpy processes of one decode iteration: resources, turns, and the spans and items they record."""

    def __init__(self, arch: Arch, workload: Workload, contexts: tuple[int, ...], pol: Policy,
                 machine: _Machine) -> None:
        self.arch, self.workload, self.contexts, self.pol, self.m = arch, workload, contexts, pol, machine
        self.coster = _Coster(machine)
        import simpy  # simpy loads on first use: a run that co-simulates nothing starts without it

        self.env = env = simpy.Environment()
        self.res: dict[str, simpy.Resource] = {NPU: simpy.Resource(env), BUS: simpy.Resource(env)}
        for e in machine.others:
            self.res[e.name] = simpy.Resource(env)
        self.channels = machine.pim.channels if pol.attention_on_pim else 0
        for c in range(self.channels):
            self.res[f"pim.ch{c:02d}"] = simpy.Resource(env)
        self.spans: list[Span] = []
        self.items: list[Item] = []
        # the bus's bytes per second in both directions together, at most (an item's own mix of reads and writes
        # sets its time: Item.dram_s)
        self.bus_bw = arch.level(machine.dram).ports.peak_bytes_per_s
        self.parts = split_sub_batches(contexts, pol.sub_batches)
        weight_names = frozenset(t for t, c in workload.storage_class.items() if c == "weights")
        self.stages = _stages(workload)
        self.layer_weights = {name: sum(workload.tensor(a.tensor).bytes for e in pre + post for a in e.inputs
                                        if a.tensor in weight_names) for name, pre, _, post in self.stages}
        self._working: dict[tuple[str, int], float] = {}
        # Sub-batch interleaving: the NPU and the PIM each serve one sub-batch at a time, in turn (the
        # artifact's StageProgram table: NPU QKVgen#1 | QKVgen#2 | Pj/FFNs/QKVgen#1 | ..., PIM - | MHA#1 | MHA#2
        # | ...). A sub-batch holds the NPU turn from its post-attention einsums through the next layer's
        # pre-attention ones and the PIM turn for its attention; FIFO turns make the two sub-batches alternate.
        self.npu_turn = simpy.Resource(env) if len(self.parts) > 1 else None
        self.pim_turn = simpy.Resource(env) if len(self.parts) > 1 and pol.attention_on_pim else None

    def span(self, resource: str, kind: str, label: str, start_s: float, sb: int, nbytes: float = 0.0) -> None:
        """Record `resource` busy from `start_s` until now (seconds) as a span in arch cycles."""
        clock = self.arch.clock_hz
        self.spans.append(Span(resource, kind, label, start_s * clock, self.env.now * clock, nbytes, sb))

    def transfer(self, nbytes: float, seconds: float, sb: int) -> Process:
        """NPU traffic of `nbytes` taking `seconds` of the HBM bus, in chunks, so that PIM-mode switches interleave
        with it."""
        left = nbytes
        while left > 0:
            chunk = min(CHUNK_BYTES, left)
            with self.res[BUS].request() as req:
                yield req
                start = self.env.now
                yield self.env.timeout(chunk / nbytes * seconds)
                self.span(BUS, "transfer", "npu traffic", start, sb, chunk)
            left -= chunk

    def run_item(self, item: Item) -> Process:
        """One item on its resource: its engine time overlapped with its DRAM traffic."""
        env = self.env
        with self.res[item.resource].request() as req:
            yield req
            start = env.now
            parts_ = [env.timeout(item.busy_s)]
            if item.dram_bytes > 0:
                parts_.append(env.process(self.transfer(item.dram_bytes, item.dram_s, item.sub_batch)))
            yield env.all_of(parts_)
            self.span(item.resource, "einsum", item.einsum, start, item.sub_batch)
        self.items.append(item)

    def working_bytes(self, layer: str, einsums: list[Einsum], sizes: dict[str, int]) -> float:
        """The most bytes of activations one of `layer`'s dense einsums reads and writes at a sub-batch's `sizes`:
        what shares the on-chip buffer with the layer's weights while they wait there for the next sub-batch (the KV
        cache is not among them: it stays in the DRAM banks, where attention reads it)."""
        key = (layer, sizes[BATCH_RANK])
        if key not in self._working:
            most = 0.0
            for einsum in einsums:
                e, w = resized(self.workload, einsum, sizes)
                most = max(most, sum(w.tensor(name).bytes for name, role in w.roles(e).items()
                                     if role not in ("weights", "kv_cache")))
            self._working[key] = most
        return self._working[key]

    def npu_item(self, einsum: Einsum, layer: str, sb: int, sizes: dict[str, int], reuse: bool) -> Item:
        """`einsum` resized to a (sub-)batch on the fastest NPU engine; `reuse`: its weights are on chip."""
        e, w = resized(self.workload, einsum, sizes)
        engine, cost, busy, dram, rest = self.coster.npu(e, w)
        item = Item(einsum.name, layer, sb, engine, busy, *dram, e.ops, cost, engine, self.coster.bound(e, w, engine))
        if reuse:  # the weights wait on chip: the item reads them no more than the co-simulation does
            weights = frozenset(t for t, role in w.roles(e).items() if role == "weights")
            item = replace(self.without_dram(item, e, w, weights), dram_bytes=rest[0], dram_s=rest[1])
        return item

    def without_dram(self, item: Item, einsum: Einsum, workload: Workload, tensors: frozenset[str]) -> Item:
        """`item` with neither its cost nor its roofline moving `tensors` through DRAM (held on chip, or moved by
        PIM commands rather than the bus)."""
        engine, levels = self.arch.engine(machine_engine(self.arch, item.engine)), frozenset((self.m.dram,))
        return replace(item, cost=on_chip_cost(item.cost, workload, self.arch, engine, tensors, levels),
                       bound=on_chip_bound(item.bound, einsum, workload, self.arch, engine, tensors, levels))

    def pim_request(self, attn: list[Einsum], layer: str, sb: int, r: int, channel: str) -> Process:
        """Request `r`'s attention: GEMVs in its channel's banks, softmax on the NPU's vector engine."""
        env = self.env
        sizes = {BATCH_RANK: 1, KEY_RANK: self.contexts[r]}
        for einsum in attn:
            e, w = resized(self.workload, einsum, sizes)
            if e.op == "mac":
                cost, time = self.coster.pim(e, w)
                with self.res[channel].request() as req:
                    yield req
                    start = env.now
                    yield env.timeout((time.compute_cycles + time.io_cycles) / self.arch.clock_hz)
                    self.span(channel, "einsum", einsum.name, start, sb)
                self.items.append(Item(einsum.name, layer, sb, channel, env.now - start, 0.0, 0.0, e.ops,
                                       on_one_channel(cost, time), self.m.pim.name,
                                       self.coster.bound(e, w, self.m.pim.name)))
            else:
                item = self.npu_item(einsum, layer, sb, sizes, False)
                # scores arrive by READRES and leave by GWRITE: the softmax moves no DRAM traffic
                moved = frozenset(a.tensor for a in (*e.inputs, e.output))
                yield env.process(self.run_item(replace(self.without_dram(item, e, w, moved), dram_bytes=0.0,
                                                        dram_s=0.0)))

    def attend_on_pim(self, sb: int, members: tuple[int, ...], assignment: tuple[int, ...], layer: str,
                      attn: list[Einsum], turn: simpy.resources.resource.Request | None) -> Process:
        """A sub-batch's attention on PIM: hand the NPU turn over, take the PIM turn (and, blocked, the bus),
        run every request on its channel, then wait for the NPU turn again; returns the new NPU turn."""
        env = self.env
        if turn is not None:
            self.npu_turn.release(turn)
        pim_hold = self.pim_turn.request() if self.pim_turn is not None else None
        if pim_hold is not None:
            yield pim_hold
        lock = self.res[BUS].request() if self.pol.blocked else None
        if lock is not None:
            yield lock  # PIM mode: the host waits for the bus until the banks are done
        start = env.now
        procs = [env.process(self.pim_request(attn, layer, sb, r, f"pim.ch{assignment[i]:02d}"))
                 for i, r in enumerate(members)]
        yield env.all_of(procs)
        if lock is not None:
            self.res[BUS].release(lock)
            self.span(BUS, "mode", "PIM mode (blocked)", start, sb)
        if pim_hold is not None:
            self.pim_turn.release(pim_hold)
        if turn is not None:
            turn = self.npu_turn.request()
            yield turn
        return turn

    def sub_batch(self, sb: int, members: tuple[int, ...]) -> Process:
        """Every layer of one sub-batch: dense einsums on the NPU, attention on PIM or on the NPU per request."""
        env, contexts = self.env, self.contexts
        dense = {BATCH_RANK: len(members)}
        assignment = balance([contexts[r] for r in members], self.channels) if self.channels else ()
        turn = self.npu_turn.request() if self.npu_turn is not None else None
        if turn is not None:
            yield turn
        for layer, pre, attn, post in self.stages:
            reuse = sb > 0 and self.layer_weights[layer] + self.working_bytes(layer, pre + post, dense) \
                <= self.m.on_chip_bytes
            for einsum in pre:
                if BATCH_RANK in einsum.sizes or sb == 0:
                    yield env.process(self.run_item(self.npu_item(einsum, layer, sb, dense, reuse)))
            if attn and self.pol.attention_on_pim:
                turn = yield from self.attend_on_pim(sb, members, assignment, layer, attn, turn)
            elif attn:
                for einsum in attn:
                    for r in members:
                        sizes = {BATCH_RANK: 1, KEY_RANK: contexts[r]}
                        yield env.process(self.run_item(self.npu_item(einsum, layer, sb, sizes, False)))
            for einsum in post:
                if BATCH_RANK in einsum.sizes or sb == 0:
                    yield env.process(self.run_item(self.npu_item(einsum, layer, sb, dense, reuse)))
        if turn is not None:
            self.npu_turn.release(turn)


def simulate(arch: Arch, workload: Workload, contexts: Sequence[int] | None = None,
             policy: PolicyName = "neupims") -> Trace:
    """Play one decode iteration of `workload` with per-request context lengths under `policy`."""
    if policy not in POLICIES:
        raise ConfigError(f"unknown NPU+PIM policy '{policy}'", key_path="execution.policy",
                          fix=f"use one of: {', '.join(POLICIES)}")
    pol = POLICIES[policy]
    machine = _machine(arch)
    if pol.attention_on_pim and machine.pim is None:
        raise ConfigError(f"policy '{policy}' runs attention in PIM, but arch '{arch.name}' has no pim engine",
                          key_path="engines", fix="add an engine of kind 'pim', or use policy 'npu_only'")
    batch = _batch_size(workload)
    key_size = next((e.sizes[KEY_RANK] for e in workload.einsums if KEY_RANK in e.sizes), None)
    contexts = tuple(contexts) if contexts is not None else tuple([key_size or 1] * batch)
    if len(contexts) != batch or min(contexts, default=1) < 1:
        raise ConfigError(f"{len(contexts)} context lengths for a batch of {batch} (each must be >= 1)",
                          key_path="contexts", fix=f"give one positive context length per request ({batch})")
    sim = _CoSim(arch, workload, contexts, pol, machine)
    for sb, members in enumerate(sim.parts):
        sim.env.process(sim.sub_batch(sb, members))
    sim.env.run()
    detail = NpuPimDetail(tuple(sim.items), batch, sim.bus_bw)
    return Trace("npu_pim", policy, tuple(sim.spans), arch.clock_hz, tuple(sim.res), sim.env.now * arch.clock_hz,
                 detail=detail)


def _batch_size(workload: Workload) -> int:
    sizes = {e.sizes[BATCH_RANK] for e in workload.einsums if BATCH_RANK in e.sizes}
    if len(sizes) != 1:
        raise ConfigError(f"workload '{workload.name}' is not a batched decode step: the NPU+PIM co-simulation "
                          f"needs one batch rank '{BATCH_RANK}' of one size (found sizes {sorted(sizes)})",
                          key_path="workload", fix="use a zoo transformer recipe with phase: decode")
    return sizes.pop()


def default_policy(arch: Arch) -> PolicyName:
    """The policy an arch implies: NeuPIMs for concurrent PIM, naive for blocked PIM, else NPU only."""
    pims = [e for e in arch.engines if isinstance(e, PimEngine)]
    if not pims:
        return "npu_only"
    return "neupims" if pims[0].mode == "concurrent" else "naive"


def request_contexts(spec: NpuPimExecution, workload: Workload) -> tuple[int, ...] | None:
    """The context length of every request under `spec.requests` (None: each attends the workload's keys)."""
    if spec.requests == "fixed":
        return None
    return continuous_batch(_batch_size(workload), spec.iteration, DISTRIBUTIONS[spec.requests], spec.seed)


def run_npu_pim(spec: NpuPimExecution, arch: Arch, workload: Workload, objective: str,
                cache: MapperCache | None = None) -> Execution:
    """One decode iteration co-simulated under the spec's policy (`execution: npu_pim`)."""
    if not any(KEY_RANK in e.sizes for e in workload.einsums) or \
            not any(BATCH_RANK in e.sizes for e in workload.einsums):
        raise ConfigError(f"arch '{arch.name}' runs decode steps (execution: npu_pim), but workload "
                          f"'{workload.name}' has no attention over a KV cache", key_path="execution",
                          fix="run a zoo transformer recipe with phase: decode, or set execution: sequential")
    policy = spec.policy or default_policy(arch)
    trace = simulate(arch, workload, request_contexts(spec, workload), policy)
    by_einsum: dict[str, list[Item]] = {}
    for item in trace.detail.items:
        by_einsum.setdefault(item.einsum, []).append(item)
    placed = []
    for einsum in workload.einsums:
        done = by_einsum.get(einsum.name, [])
        cost = sum((i.cost for i in done), Cost())
        engine = machine_engine(arch, done[0].engine if done else arch.engines[0].name)
        # the items' rooflines added up (each request or sub-batch at its own sizes, one after another)
        bound = (replace(functools.reduce(operator.add, (i.bound for i in done)), einsum=einsum.name) if done
                 else bound_on(einsum, workload, arch, engine))
        placed.append(Placement(einsum.name, engine, einsum.op, cost, bound))
    # live tensors get homes (a KV cache too large for every level is an error); a spill's traffic and energy are
    # charged, its time is not: the co-simulated items cost each einsum through every level that admits its tensors
    charged, homes = place_graph(arch, workload, tuple(placed))
    # attention's items were costed at each request's own context, KV-cache reads included (over the bus, or in
    # the banks): a spill charged at the workload's nominal context would count the cache a second time
    charged = tuple(p if KEY_RANK in e.sizes else c for e, c, p in zip(workload.einsums, charged, placed))
    return Execution(timed_as_before(charged, tuple(placed)), trace, homes)


def machine_engine(arch: Arch, name: str) -> str:
    """An arch engine name for a resource name (the array pool is reported as its first array)."""
    if name == NPU:
        return next(e.name for e in arch.engines if isinstance(e, SystolicEngine))
    return name
