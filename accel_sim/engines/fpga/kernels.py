"""HLS designs described as users build them: kernels (HLS tasks) with their parallelism, resources and memory
ports, and the FIFOs that stream data between them (TAPA / Vitis HLS dataflow, the style of InTAR's designs:
He et al., FCCM 2025, github.com/OswaldHe/InTAR).

A kernel runs the einsums it names at `parallelism` operations per cycle: MACs for contractions, elements for
every other operator (the unrolled lanes of a loop pipelined at II = 1). Every tensor it moves off chip goes
through one of its ports: at most `width` bytes per cycle (one AXI beat), bound to one off-chip channel; the
ports bound to a channel share its bandwidth at the memory system's efficiency. A tensor with no port stays on
chip (BRAM/URAM, or a FIFO between kernels). An einsum's time on its kernel is the slowest of its compute and
its ports, because an II = 1 pipeline overlaps reads, compute and writes.

Where a kernel gives its HLS loop nest for an einsum (`loops`), the nest's latency replaces the compute term, as
Vitis HLS schedules it (UG1399, "Loop Pipelining" and "Loop Latency"): a loop pipelined at II runs its trips in
(trip - 1) x II + depth cycles, an unpipelined loop runs trip x its iteration's latency, and an iteration's latency
is the operators on its critical path (`ops`, `HLS_OPERATOR_CYCLES`) plus the sub-loops it runs one after another
plus one off-chip round trip for each port it waits on (`waits`: a read whose data the iteration consumes, or a
write whose response it awaits). So an unpipelined loop (or one an HLS tool cannot pipeline) pays a round trip on
every iteration, and a pipelined loop pays it once while its port can keep every iteration's request in flight;
a port that holds fewer (`Port.outstanding`) stalls the loop until a response frees a slot (`issue_cycle`). A
non-blocking read (TAPA's `read(nullptr)`, an hls::stream `read_nb`) waits on nothing and is not listed.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, NonNegativeInt, model_validator

from accel_sim.engines.fpga.devices import DSP_PIPELINE_STAGES
from accel_sim.errors import InfeasibleError
from accel_sim.spec.fields import SPEC_CONFIG, PositiveInt, located

if TYPE_CHECKING:
    from accel_sim.engines.fpga.engine import FpgaEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload

# tapa::stream<T> without a depth holds kStreamDefaultDepth = 2 elements (rapidstream-org/rapidstream-tapa,
# tapa/base/stream.h); Vitis HLS hls::stream defaults to depth 2 as well (UG1399, "Specifying Arrays as
# Streams": "the default depth of 2").
DEFAULT_FIFO_DEPTH = 2

# Cycles an operator adds to the critical path of a pipelined loop iteration (the names a `Loop` lists in `ops`):
HLS_OPERATOR_CYCLES: dict[str, int] = {
    # an integer multiply on a fully pipelined DSP48E2 (A/B, M and P registers, UG579)
    "dsp_mul": DSP_PIPELINE_STAGES,
    # a block RAM read without the output register: data one clock after the address (UG573, "Block RAM
    # Attributes": read latency 1 with DOA_REG = 0)
    "bram_read": 1,
}
# Vitis HLS builds `%` as a pipelined divider core whose result comes one cycle per dividend bit plus three after
# its operands, whether the divisor is a variable or a compile-time constant (it does not strength-reduce a constant
# divisor to a multiply). Its generated module lists (`.autopilot/db/*.tcl` of Vitis HLS projects in public
# repositories) read `srem_32ns_3ns_2_36_seq_1 ... TYPE srem ... LATENCY 35` for an int line-buffer index `% 3`,
# `srem_32ns_4ns_32_36_seq_1 ... LATENCY 35` for `% 5`, and `urem_6ns_3ns_2_10_1 ... LATENCY 9` once the tool has
# narrowed the dividend to 6 bits (the name's stage count is LATENCY + 1, as `mac_muladd_..._4_1 ... LATENCY 3` for
# the 3-register DSP above); AMD's note on the modulo operator in Vitis HLS (2022, as translated at
# xilinx.eetrend.com/content/2022/100559048.html) likewise finds SREM/UREM cores of very high latency for `%`,
# including the index arithmetic of an array partitioned by a factor of 3. A loop names a remainder `srem<bits>`
# or `urem<bits>` by its dividend's width after any narrowing (`srem32` for an int).
REMAINDER_LATENCY_OVER_BITS = 3


def operator_cycles(op: str) -> int:
    """Cycles `op` adds to an iteration's critical path: HLS_OPERATOR_CYCLES, or a `srem<bits>`/`urem<bits>` core."""
    if op in HLS_OPERATOR_CYCLES:
        return HLS_OPERATOR_CYCLES[op]
    match = re.fullmatch(r"[su]rem([1-9][0-9]?)", op)
    if match is None:
        raise KeyError(op)
    return int(match.group(1)) + REMAINDER_LATENCY_OVER_BITS


class Loop(BaseModel):
    """An HLS loop: its trip count, its II when pipelined, the operators and port waits on one iteration's
    critical path, and the loops its body runs one after another."""

    model_config = SPEC_CONFIG

    name: str = ""
    trip: PositiveInt
    ii: PositiveInt | None = None   # pipelined at this initiation interval; None: not pipelined
    ops: tuple[str, ...] = ()       # names in HLS_OPERATOR_CYCLES
    waits: tuple[str, ...] = ()     # tensors whose port's round trip one iteration waits for
    body: tuple[Loop, ...] = ()

    @model_validator(mode="after")
    def _valid(self) -> Loop:
        """A pipelined loop has its sub-loops unrolled (UG1399), so it names none; its operators are known."""
        if self.ii is not None and self.body:
            raise located(f"loop '{self.name}' is pipelined (ii) and has sub-loops; Vitis HLS unrolls every loop "
                          f"inside a pipelined one. Fix: drop its ii, or fold the sub-loops into its ops", "body")
        unknown = [op for op in self.ops if not _known(op)]
        if unknown:
            raise located(f"loop '{self.name}' names operators {unknown} with no cited latency. Fix: use "
                          f"{sorted(HLS_OPERATOR_CYCLES)}, or srem<bits>/urem<bits> for a remainder of a "
                          f"<bits>-wide dividend (e.g. srem32)", "ops")
        return self


class LoopNest(Loop):
    """The outermost loop of the nest that computes `einsums` on a kernel (charged to the first of them)."""

    einsums: tuple[str, ...] = Field(min_length=1)


def _known(op: str) -> bool:
    try:
        operator_cycles(op)
    except KeyError:
        return False
    return True


def issue_cycle(i: int, ii: float, round_trip: float, in_flight: float) -> float:
    """Cycle at which a pipelined loop starts iteration `i` when each iteration holds one of `in_flight` request
    slots of its port from its issue until its response, `round_trip` cycles later.

    Iteration i starts II after iteration i - 1 and not before iteration i - N's response frees its slot:
    s_i = max(s_(i-1) + II, s_(i-N) + L) with s_0 = 0. By induction s_i = floor(i / N) x P + (i mod N) x II with
    P = max(L, N x II): N iterations issue back to back, then the next N wait for the first N's responses. With
    N x II >= L this is i x II (the port never stalls the loop); with an unbounded port (N = inf) likewise.
    """
    if math.isinf(in_flight) or in_flight * ii >= round_trip:
        return i * ii
    n = int(in_flight)
    return (i // n) * round_trip + (i % n) * ii


def loop_cycles(loop: Loop, round_trip: float, in_flight: Mapping[str, float] | None = None) -> float:
    """Latency of `loop` (cycles) when one off-chip round trip takes `round_trip` cycles and the port of each tensor
    keeps `in_flight[tensor]` requests outstanding (absent: unbounded): UG1399 loop latency, (trip - 1) x II + depth
    for a pipelined loop whose ports keep up, its last iteration's `issue_cycle` + depth where one does not."""
    in_flight = in_flight or {}
    iteration = (sum(operator_cycles(op) for op in loop.ops) + round_trip * len(loop.waits)
                 + sum(loop_cycles(inner, round_trip, in_flight) for inner in loop.body))
    iteration = max(iteration, 1.0)  # an iteration takes at least one state
    if loop.ii is None:
        return loop.trip * iteration
    slots = min((in_flight.get(t, math.inf) for t in loop.waits), default=math.inf)
    return issue_cycle(loop.trip - 1, loop.ii, round_trip, slots) + iteration


def _waited(loop: Loop) -> set[str]:
    return set(loop.waits).union(*(_waited(inner) for inner in loop.body))


# Requests a Vitis HLS m_axi port keeps outstanding before the design stalls: num_read_outstanding and
# num_write_outstanding (UG1399, "Controlling AXI4 Burst Behavior"), 16 each by default, as the m_axi adapters
# Vitis HLS generates instantiate them (`.NUM_READ_OUTSTANDING( 16 ), .NUM_WRITE_OUTSTANDING( 16 ),
# .MAX_READ_BURST_LENGTH( 16 )` in generated top-level Verilog in public repositories). A TAPA async_mmap port
# issues every address its kernel pushes with no count of its own (TAPA tapa/assets/verilog/async_mmap.v: ARVALID
# is its burst address buffer's empty_n), so its bound is the memory system's.
# A slot holds one of the loop's requests; where Vitis HLS bursts a pipelined loop's consecutive reads (UG1399,
# "AXI Burst Transfers", max_read_burst_length = 16 beats by default) each of its 16 requests carries 16 of the
# loop's reads: describe such a port with `outstanding: 256`.
M_AXI_OUTSTANDING = 16
PortInterface = Literal["m_axi", "async_mmap"]


class Port(BaseModel):
    """A kernel's port to one off-chip tensor: bytes per beat, the channel it is bound to, its interface (an HLS
    m_axi adapter or TAPA's async_mmap) and the requests it keeps in flight (default: the interface's)."""

    model_config = SPEC_CONFIG

    width_bytes: PositiveInt = Field(alias="width")
    channel: NonNegativeInt = 0
    interface: PortInterface = "m_axi"
    outstanding: PositiveInt | None = None

    @property
    def in_flight(self) -> float:
        """Requests the port keeps outstanding: `outstanding`, else 16 for m_axi, unbounded for async_mmap."""
        if self.outstanding is not None:
            return float(self.outstanding)
        return float(M_AXI_OUTSTANDING) if self.interface == "m_axi" else math.inf


class Kernel(BaseModel):
    """One HLS task: the einsums it runs, operations per cycle, its DSP/BRAM/URAM use and its ports per tensor."""

    model_config = SPEC_CONFIG

    name: str
    einsums: tuple[str, ...] = Field(min_length=1)
    parallelism: PositiveInt
    dsps: NonNegativeInt = 0
    bram36: NonNegativeInt = Field(0, alias="bram")
    uram: NonNegativeInt = 0
    ports: dict[str, Port] = Field(default_factory=dict)
    loops: tuple[LoopNest, ...] = ()   # the HLS loop nests of its einsums, where described

    @model_validator(mode="after")
    def _nests(self) -> Kernel:
        """Loop nests name this kernel's einsums, each in one nest, and wait only on its ports."""
        seen: set[str] = set()
        for i, nest in enumerate(self.loops):
            twice = sorted(seen & set(nest.einsums))
            seen.update(nest.einsums)
            if twice:
                raise located(f"einsums {twice} of kernel '{self.name}' are in two loop nests. Fix: name each "
                              f"in one nest", "loops", i, "einsums")
            stray = [e for e in nest.einsums if e not in self.einsums]
            if stray:
                raise located(f"loop nest '{nest.name}' of kernel '{self.name}' computes {stray}, which the kernel "
                              f"does not run. Fix: name them in its einsums", "loops", i, "einsums")
            portless = sorted(_waited(nest) - set(self.ports))
            if portless:
                raise located(f"loop nest '{nest.name}' of kernel '{self.name}' waits on {portless}, which have no "
                              f"port on it. Fix: give them ports or drop the waits", "loops", i)
        return self

    def nest_of(self, einsum: str) -> LoopNest | None:
        """The loop nest that computes `einsum`, or None."""
        return next((n for n in self.loops if einsum in n.einsums), None)


class Fifo(BaseModel):
    """A stream between two kernels: the tensor it carries, its depth in words and its word width in bytes."""

    model_config = SPEC_CONFIG

    tensor: str
    depth: PositiveInt = DEFAULT_FIFO_DEPTH
    width_bytes: PositiveInt = Field(alias="width")

    @property
    def capacity_bytes(self) -> int:
        """Bytes the FIFO holds when full."""
        return self.depth * self.width_bytes


@dataclass(frozen=True)
class KernelTime:
    """One einsum on its kernel (engine cycles): compute, each port's transfer, and the slowest of them."""

    kernel: str
    compute: float
    ports: dict[str, float]          # tensor -> cycles through its port
    channel_bytes: dict[int, float]  # channel -> bytes this einsum moves over it

    @property
    def cycles(self) -> float:
        """The II = 1 pipeline's time: the slowest of compute and the ports."""
        return max([self.compute, *self.ports.values()])


def kernel_of(engine: FpgaEngine, einsum: str) -> Kernel | None:
    """The kernel that runs `einsum`, or None."""
    return next((k for k in engine.kernels if einsum in k.einsums), None)


def _tensor_bytes(einsum: Einsum, tensor: str, workload: Workload) -> float:
    accesses = [a for a in (*einsum.inputs, einsum.output) if a.tensor == tensor]
    t = workload.tensor(tensor)
    return max(einsum.footprint(a, t) for a in accesses) * t.bits / 8


def round_trip_cycles(engine: FpgaEngine, arch: Arch) -> float:
    """One off-chip request's round trip in the design's clock cycles (0.0 where the device gives none)."""
    latency = engine.fpga.offchip.latency_s
    return 0.0 if latency is None else latency * arch.engine_clock_hz(engine)


def _compute_cycles(kernel: Kernel, einsum: Einsum, engine: FpgaEngine, arch: Arch) -> float:
    """The einsum's loop nest latency where the kernel gives one (0 for the nest's other einsums), else its work
    at the kernel's parallelism."""
    nest = kernel.nest_of(einsum.name)
    if nest is None:
        work = float(einsum.macs if einsum.op == "mac" else einsum.ops)
        return float(math.ceil(work / kernel.parallelism))
    if nest.einsums[0] != einsum.name:
        return 0.0
    if _waited(nest) and engine.fpga.offchip.latency_s is None:
        raise InfeasibleError(f"loop nest '{nest.name}' of kernel '{kernel.name}' waits on off-chip requests but "
                              f"{engine.fpga.name} gives no measured round trip. Fix: give the device's offchip "
                              f"latency with its source")
    return loop_cycles(nest, round_trip_cycles(engine, arch), {t: p.in_flight for t, p in kernel.ports.items()})


def channel_bytes_per_cycle(engine: FpgaEngine, arch: Arch) -> float:
    """Bytes per engine cycle one off-chip channel delivers at the memory system's efficiency."""
    offchip = engine.level_ports(arch.memory[0], arch.engine_clock_hz(engine)).read_bytes_per_s
    return offchip / engine.fpga.offchip.channels * engine.same_efficiency / arch.engine_clock_hz(engine)


def kernel_time(einsum: Einsum, workload: Workload, arch: Arch, engine: FpgaEngine,
                streamed: frozenset[str] = frozenset()) -> KernelTime:
    """`einsum` on its kernel; tensors in `streamed` arrive or leave through FIFOs, not through their ports."""
    kernel = kernel_of(engine, einsum.name)
    if kernel is None:
        raise KeyError(einsum.name)
    channel = channel_bytes_per_cycle(engine, arch)
    ports: dict[str, float] = {}
    per_channel: dict[int, float] = {}
    for tensor in dict.fromkeys([*(a.tensor for a in einsum.inputs), einsum.output.tensor]):
        port = kernel.ports.get(tensor)
        if port is None or tensor in streamed:
            continue
        size = _tensor_bytes(einsum, tensor, workload)
        ports[tensor] = size / min(port.width_bytes, channel)
        per_channel[port.channel] = per_channel.get(port.channel, 0.0) + size
    # ports sharing a channel share its bandwidth
    ports.update({f"channel {c}": size / channel for c, size in per_channel.items()})
    return KernelTime(kernel.name, _compute_cycles(kernel, einsum, engine, arch), ports, per_channel)
