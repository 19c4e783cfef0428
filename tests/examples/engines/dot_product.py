"""A worked example of adding an engine family: a DianNao-style neural functional unit (README, "Adding an engine").

Chen et al., "DianNao: A Small-Footprint High-Throughput Accelerator for Ubiquitous Machine-Learning",
ASPLOS 2014, Sec. 4: the NFU has `trees` (Tn) adder trees, each fed by `lanes` (Ti) multipliers, so each cycle it
multiplies a block of Ti inputs by a Tn x Ti block of synapses and adds Tn partial sums; NFU-1 (multiply),
NFU-2 (adder trees) and NFU-3 (activation) are three pipeline stages. For a contraction in its GEMM view
(M rows of the streamed operand, N outputs per row, K-long reduction) that is

    compute cycles = batch x M x ceil(N / Tn) x ceil(K / Ti),   fill/drain = stages - 1.

Data movement follows the NFU's buffers: inputs (NBin) are re-read once per block of Tn outputs, synapses (SB)
once per row (no reuse across rows: the NFU holds no synapse between cycles), outputs (NBout) written once. So at
the innermost level that holds a tensor's class the bytes are the footprint times that re-read count; at every
outer level holding it, the footprint once (compulsory). Each level takes bytes / bandwidth as this engine sees it
(`transfer_cycles`); the engine stalls for the slowest level beyond its compute.

This module is everything an engine family needs: its parameters (pydantic fields with a `kind` tag) and the
behaviours of `EngineBase` (peak, cost, area). It has no mapping choices, so `mapspace` stays None and the mapper
hands back `cost`. tests/examples/engines/__init__.py adds it to the engine union (the one line a family adds to
`accel_sim/engines/__init__.py`), and dot_product_npu.yaml is an arch that uses it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from accel_sim.energy import dtype_mac_area_mm2, dtype_mac_energy_j
from accel_sim.energy.components import dtype_of_bits
from accel_sim.engines.base import EngineBase
from accel_sim.engines.costing import level_access_energy
from accel_sim.engines.loopnest import gemm_view
from accel_sim.folds import fold_count
from accel_sim.spec.cost import Cost
from accel_sim.spec.fields import PositiveInt
from accel_sim.spec.workload import Einsum

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload


class DotProductEngine(EngineBase):
    """`trees` adder trees of `lanes` multipliers each (DianNao's NFU): contractions only."""

    kind: Literal["dot_product"]
    lanes: PositiveInt           # Ti: multipliers per adder tree
    trees: PositiveInt           # Tn: adder trees (outputs per cycle)
    operand_bits: PositiveInt = 16
    stages: PositiveInt = 3      # NFU-1, NFU-2, NFU-3

    def peak_per_cycle(self, einsum: Einsum) -> float:
        """Ti x Tn MACs per cycle for a contraction; nothing else runs here."""
        return float(self.lanes * self.trees) if einsum.op == "mac" else 0.0

    def peak_macs_per_cycle(self) -> float:
        """Ti x Tn multipliers."""
        return float(self.lanes * self.trees)

    def cost(self, einsum: Einsum, workload: Workload, arch: Arch) -> Cost:
        """Blocked GEMM cycles against each level's traffic (module docstring)."""
        view = gemm_view(einsum, workload)
        clock_ratio = arch.clock_hz / arch.engine_clock_hz(self)
        compute = view.batch * view.m * fold_count(view.n, self.trees) * fold_count(view.k, self.lanes) * clock_ratio
        rereads = {view.streamed.tensor: fold_count(view.n, self.trees), view.weight.tensor: view.batch * view.m,
                   einsum.output.tensor: 1}
        accesses, energy, level_cycles = {}, {}, []
        for li, level in enumerate(arch.memory):
            read_bits = write_bits = 0.0
            for access in (view.streamed, view.weight, einsum.output):
                tensor = workload.tensor(access.tensor)
                role = workload.roles(einsum)[tensor.name]
                if not level.keeps(role, tensor.name):
                    continue
                innermost = not any(inner.keeps(role, tensor.name) for inner in arch.memory[li + 1:])
                elements = einsum.footprint(access, tensor) * (rereads[tensor.name] if innermost else 1)
                action = "write" if access is einsum.output else "read"
                accesses[(level.name, tensor.name, action)] = elements
                if action == "write":
                    write_bits += elements * tensor.bits
                else:
                    read_bits += elements * tensor.bits
            level_cycles.append(self.transfer_cycles(read_bits / 8, write_bits / 8, level, arch))
            for key, joules in level_access_energy(arch, li, read_bits, write_bits).items():
                energy[key] = energy.get(key, 0.0) + joules
        dtype = dtype_of_bits(self.operand_bits)
        energy[("nfu", "mac")] = einsum.macs * dtype_mac_energy_j(dtype, dtype, node_nm=arch.technology_nm)
        fill = (self.stages - 1) * clock_ratio
        stall = max(0.0, max(level_cycles, default=0.0) - compute)
        total = compute + fill + stall
        return Cost(macs=einsum.macs, compute_cycles=compute, stall_cycles=stall, fill_drain_cycles=fill,
                    accesses=accesses, energy_j=energy,
                    utilization=einsum.macs / (self.peak_macs_per_cycle() * total * arch.engine_clock_hz(self)
                                               / arch.clock_hz) if total else 0.0)

    def area_mm2(self, node_nm: float) -> float:
        """Ti x Tn multiply-accumulate units (the adder trees are the accumulators' adders)."""
        dtype = dtype_of_bits(self.operand_bits)
        return self.lanes * self.trees * dtype_mac_area_mm2(dtype, dtype, node_nm=node_nm)
