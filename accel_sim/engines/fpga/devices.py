"""FPGA devices: fabric resources and off-chip memory from the vendors' data sheets, and DSP packing by precision.

A device is what a design is placed on; `FpgaEngine` (engines/fpga/engine.py) names one of `DEVICES` or gives
its own mapping. Block RAM and UltraRAM geometries follow AMD UG1273 ("Programmable Logic": block RAM 36 Kb
with ports 4Kx9 ... 512x72 in simple dual-port mode; UltraRAM 288 Kb, 4Kx72); DSP packing per precision
follows the cited white papers and architecture manuals in `MACS_PER_DSP`.
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from accel_sim.spec.fields import (SPEC_CONFIG, Bytes, BytesPerSecond, Fraction, NonNegativeCount,
                                   OffChipMemoryTechnology, PositiveInt, Seconds)

DspKind = Literal["dsp48e2", "dsp58"]
RamKind = Literal["bram", "uram"]

# (depth, width_bits) port shapes a block can take; UG1273 lists BRAM36 4Kx9, 2Kx18, 1Kx36, 512x72 (SDP) and
# UltraRAM 4Kx72 (UltraScale+ UltraRAM has only the 4Kx72 shape, UG573; Versal adds narrower ones, unused here
# so both families share one rule).
RAM_SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "bram": ((512, 72), (1024, 36), (2048, 18), (4096, 9)),
    "uram": ((4096, 72),),
}
# DSP48E2/DSP58 fully pipelined: input (A/B), multiplier (M) and output (P) registers, UG579 ch. 2 / AM004.
DSP_PIPELINE_STAGES = 3
# Hard-multiplier width beyond which a MAC needs several DSPs (schoolbook partial products): DSP48E2 27x18
# (UG579, ch. 1), DSP58 27x24 (AM004 / UG1273 "27x24-bit twos complement multiplier").
NATIVE_BITS = {"dsp48e2": 18, "dsp58": 24}


def macs_per_dsp(kind: DspKind, bits: int) -> float:
    """Multiply-accumulates one DSP slice performs per cycle on operands of `bits` (packing included).

    DSP48E2: 4 INT4 MACs (Xilinx WP521, "Convolutional Neural Network with INT4 Optimization on Xilinx
    Devices", 2020), 2 INT8 MACs sharing an operand (Xilinx WP486, "Deep Learning with INT8 Optimization on
    Xilinx Devices", 2017), one MAC up to 18 bits. DSP58: a three-element INT8 dot product per slice (AM004;
    UG1273 "Three element vector/INT8 dot product"), INT4 uses the same mode, one MAC up to 24 bits.
    Wider operands take ceil(bits / native)^2 slices per MAC.
    """
    if kind == "dsp48e2" and bits <= 4:
        return 4.0
    if bits <= 8:
        return 2.0 if kind == "dsp48e2" else 3.0
    native = NATIVE_BITS[kind]
    return 1.0 / math.ceil(bits / native) ** 2


def ram_blocks(kind: RamKind, depth: int, width_bytes: int) -> int:
    """Blocks of `kind` that hold a depth x width memory: the cheapest port shape, columns x rows of blocks."""
    bits = width_bytes * 8
    return min(math.ceil(bits / w) * math.ceil(depth / d) for d, w in RAM_SHAPES[kind])


class OffChip(BaseModel):
    """Off-chip memory attached to the device: kind, capacity, peak bandwidth and independent channels."""

    model_config = SPEC_CONFIG

    technology: OffChipMemoryTechnology   # a DRAM kind a memory level takes (spec/fields.py OFF_CHIP_TECHNOLOGIES)
    capacity_bytes: Bytes = Field(alias="capacity")
    bandwidth_bytes_per_s: BytesPerSecond = Field(alias="bandwidth")
    channels: PositiveInt
    # fraction of a channel's peak a streaming (same-channel, sequential) access reaches, where measured
    efficiency: Fraction | None = None
    # idle round trip of one request (address issued to data back), where measured; a kernel that waits for
    # its data before going on pays it in cycles of its own clock (engines/fpga/kernels.py, `Loop.waits`)
    latency_s: Seconds | None = Field(None, alias="latency")


class Device(BaseModel):
    """Fabric resources of one FPGA (or adaptive SoC) and its off-chip memory."""

    model_config = SPEC_CONFIG

    name: str
    source: str | None = None
    dsp_kind: DspKind
    dsps: PositiveInt
    bram36: PositiveInt
    uram: NonNegativeCount = 0   # UltraRAM blocks; 0 for a part without UltraRAM
    luts: PositiveInt
    ffs: PositiveInt
    offchip: OffChip


# Resources as the data sheets tabulate them. The U280 and U250 counts are the Alveo data sheets' Table 1
# (DS963 v1.x: XCU280; DS962 v1.x: XCU250); the XCVH1782 counts are the AMD Versal HBM Series product table
# (DS950 family overview), transcribed here, with flip-flops = 2 x LUTs (UG1273: every CLB has 64 flip-flops and
# 32 LUTs); the HBM/DDR bandwidths are UG1393 ("HBM Configuration and Use":
# 32 pseudo channels x 14.375 GB/s = 460 GB/s; "77 GB/s bandwidth available on DDR-based Alveo cards").
DEVICES: dict[str, Device] = {
    "u280": Device(name="Alveo U280 (XCU280)", source="DS963 Table 1; UG1393 HBM Configuration and Use",
                   dsp_kind="dsp48e2", dsps=9024, bram36=2016, uram=960, luts=1_304_000, ffs=2_607_000,
                   # efficiency: Shuhai (Wang et al., "Benchmarking High Bandwidth Memory on FPGAs", FCCM 2020)
                   # measures up to 425 GB/s of the U280's 460 GB/s HBM2 with sequential accesses: 425 / 460;
                   # latency: Shuhai's idle page-hit latency of the U280's HBM, 48 cycles of its 450 MHz AXI clock
                   # = 106.7 ns (Table III), converted to a kernel's clock by the kernel (cycles = s x Hz)
                   offchip=OffChip(technology="HBM2", capacity="8 GiB", bandwidth="460 GB/s", channels=32,
                                   efficiency=425 / 460, latency=48 / 450e6)),
    "u250": Device(name="Alveo U250 (XCU250)", source="DS962 Table 1; UG1393 (DDR-based Alveo: 77 GB/s)",
                   dsp_kind="dsp48e2", dsps=12288, bram36=2688, uram=1280, luts=1_728_000, ffs=3_456_000,
                   offchip=OffChip(technology="DDR4", capacity="64 GiB", bandwidth="77 GB/s", channels=4)),
    "vhk158": Device(name="Versal HBM VHK158 (XCVH1782)", source="AMD Versal HBM Series product table (DS950); "
                     "HBM as the FlightLLM profiler config: 32 channels, 819.2 GB/s",
                     dsp_kind="dsp58", dsps=7392, bram36=3741, uram=1301, luts=1_754_000, ffs=3_508_000,
                     offchip=OffChip(technology="HBM2E", capacity="32 GiB", bandwidth="819.2 GB/s", channels=32)),
}
