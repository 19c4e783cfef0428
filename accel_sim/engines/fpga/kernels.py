"""HLS designs described as users build them: kernels (HLS tasks) with their parallelism, resources and memory
ports, and the FIFOs that stream data between them (TAPA / Vitis HLS dataflow, the style of InTAR's designs:
He et al., FCCM 2025, github.com/OswaldHe/InTAR).

A kernel runs the einsums it names at `parallelism` operations per cycle: MACs for contractions, elements for
every other operator (the unrolled lanes of a loop pipelined at II = 1). Every tensor it moves off chip goes
through one of its ports: at most `width` bytes per cycle (one AXI beat), bound to one off-chip channel; the
ports bound to a channel share its bandwidth at the memory system's efficiency. A tensor with no port stays on
chip (BRAM/URAM, or a FIFO between kernels). An einsum's time on its kernel is the slowest of its compute and
its ports, because an II = 1 pipeline overlaps reads, compute and writes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, NonNegativeInt

from accel_sim.spec.fields import SPEC_CONFIG, PositiveInt

if TYPE_CHECKING:
    from accel_sim.engines.fpga.engine import FpgaEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload

# tapa::stream<T> without a depth holds kStreamDefaultDepth = 2 elements (rapidstream-org/rapidstream-tapa,
# tapa/base/stream.h); Vitis HLS hls::stream defaults to depth 2 as well (UG1399, "Specifying Arrays as
# Streams": "the default depth of 2").
DEFAULT_FIFO_DEPTH = 2


class Port(BaseModel):
    """A kernel's port to one off-chip tensor: bytes per beat and the channel it is bound to."""

    model_config = SPEC_CONFIG

    width_bytes: PositiveInt = Field(alias="width")
    channel: NonNegativeInt = 0


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
    work = float(einsum.macs if einsum.op == "mac" else einsum.ops)
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
    return KernelTime(kernel.name, float(math.ceil(work / kernel.parallelism)), ports, per_channel)
