"""FPGA engine family: devices (resources, off-chip channels) and designs on them (execution modes: sim/fpga_modes.py)."""
from accel_sim.engines.fpga.devices import DEVICES, Device, macs_per_dsp, ram_blocks
from accel_sim.engines.fpga.engine import Buffer, FpgaEngine, Parallelism

__all__ = ["DEVICES", "Buffer", "Device", "FpgaEngine", "Parallelism", "macs_per_dsp", "ram_blocks"]
