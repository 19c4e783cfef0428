"""Costs of one einsum on one engine: the systolic array (fold timing + loop-nest traffic) and the vector unit.

Systolic: timing from the fold plan of the einsum's im2col view (`engines/systolic.py`), data movement from
the loop-nest analysis of the dataflow written as a mapping (`engines/loopnest.py`). A double-buffered
level overlaps its transfers with compute, so the run takes the longer of the busiest level and compute
(with fill/drain) after the prologue that loads the first tiles before the array can start. Each operand
either stays resident in an on-chip level (fetched once) or streams fold by fold, whichever the
capacities allow with the least outer-level traffic.
Vector: one operator application per lane per cycle; traffic is the compulsory footprint (as roofline.py).
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.energy import (dtype_mac_area_mm2, dtype_mac_energy_j, regfile_access_energy_j, regfile_area_mm2,
                              wire_energy_j_per_bit_mm)
from accel_sim.energy.components import dtype_of_bits, is_off_chip, level_energy_per_bit
from accel_sim.engines.loopnest import analyze, gemm_roles, systolic_mapping
from accel_sim.engines.roofline import compulsory_traffic
from accel_sim.engines.systolic import fold_plan
from accel_sim.spec.cost import Cost
from accel_sim.spec.mapping import MappingBatch

if TYPE_CHECKING:
    from accel_sim.engines.systolic import SystolicEngine
    from accel_sim.engines.vector import VectorEngine
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Einsum, Workload

ACCUMULATOR_BITS_INT = 32  # TPU v1 accumulates int8 products in 32 bits (Jouppi et al., ISCA 2017, Sec. 2)


def level_access_energy(arch: Arch, level_index: int, read_bits: float, write_bits: float) -> dict[tuple[str, str], float]:
    """{(level, 'read'): J, (level, 'write'): J} for bits read from and written to one memory level."""
    level = arch.memory[level_index]
    read_e, write_e = level_energy_per_bit(level, arch.technology_nm)
    return {(level.name, "read"): read_bits * read_e, (level.name, "write"): write_bits * write_e}


def pe_registers_bytes(a_bits: int, b_bits: int) -> float:
    """Operand and accumulator registers of one PE: two operands plus a 32-bit (int) or fp32 accumulator."""
    return (a_bits + b_bits + ACCUMULATOR_BITS_INT) / 8


def systolic_pe_area_mm2(engine: SystolicEngine, node_nm: float) -> float:
    """One PE: a MAC at the engine's operand precision plus its registers."""
    bits = engine.operand_bits
    mac = dtype_mac_area_mm2(dtype_of_bits(bits), dtype_of_bits(bits), node_nm=node_nm)
    return mac + regfile_area_mm2(pe_registers_bytes(bits, bits), node_nm)


def systolic_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine) -> Cost:
    """Cycles, accesses and energy of a contraction on a systolic array with the engine's dataflow."""
    tensors = workload.tensor_map
    roles = gemm_roles(einsum, tensors)
    m, n, k, batch = (math.prod(einsum.sizes[r] for r in role) for role in roles)
    plan = fold_plan(m, n, k, engine.rows, engine.cols, engine.dataflow)
    clock_ratio = arch.clock_hz / arch.engine_clock_hz(engine)
    compute = float(batch * plan.folds * plan.temporal) * clock_ratio
    fill_drain = float(batch * plan.fill_drain_cycles) * clock_ratio

    traffic = _systolic_traffic(einsum, workload, arch, engine, roles)
    busiest = max(traffic["level_cycles"], default=0.0)
    # the array waits for its first tiles; the busiest level's time already includes moving them
    total = max(compute + fill_drain + traffic["prologue_cycles"], busiest)

    a_acc, w_acc = _operands(einsum, roles)
    a_bits, w_bits = tensors[a_acc.tensor].bits, tensors[w_acc.tensor].bits
    node = arch.technology_nm
    macs = einsum.macs
    energy = {("mac", "compute"): macs * dtype_mac_energy_j(dtype_of_bits(a_bits), dtype_of_bits(w_bits),
                                                             node_nm=node)}
    registers = pe_registers_bytes(a_bits, w_bits)
    energy[("pe_registers", "read")] = macs * (regfile_access_energy_j(registers, a_bits, node)
                                               + regfile_access_energy_j(registers, w_bits, node))
    energy[("pe_registers", "write")] = macs * regfile_access_energy_j(registers, ACCUMULATOR_BITS_INT, node)
    # every MAC passes its streamed operand and its partial sum (or second operand) one PE on
    pitch_mm = math.sqrt(systolic_pe_area_mm2(engine, node))
    energy[("array_wires", "transfer")] = macs * (a_bits + max(w_bits, ACCUMULATOR_BITS_INT)) \
        * wire_energy_j_per_bit_mm(node) * pitch_mm
    energy.update(traffic["energy"])
    pes = engine.rows * engine.cols
    return Cost(macs=macs, compute_cycles=compute, stall_cycles=total - compute - fill_drain,
                fill_drain_cycles=fill_drain, accesses=traffic["accesses"], energy_j=energy,
                utilization=macs / (pes * total * (1 / clock_ratio)) if total > 0 else 0.0)


def _operands(einsum: Einsum, roles: tuple) -> tuple:
    """(streamed, weight-like) input accesses, as gemm_roles chose them."""
    first, second = einsum.inputs
    n_ranks = set(roles[1])
    return (second, first) if n_ranks and n_ranks <= set(first.ranks) and not n_ranks <= set(second.ranks) \
        else (first, second)


def _systolic_traffic(einsum: Einsum, workload: Workload, arch: Arch, engine: SystolicEngine,
                      roles: tuple) -> dict:
    """Per-level accesses, bytes, cycles and energy, each operand resident or streamed as capacity allows."""
    axes = {"rows": engine.rows, "cols": engine.cols}
    inner = arch.memory[-1].name
    mappings = [systolic_mapping(einsum, arch, engine.rows, engine.cols, engine.dataflow, roles,
                                 storage_class=workload.storage_class, fold_level=fold)
                for fold in (None, inner)]   # 0: fold by fold, 1: whole operands inside the innermost level
    batch = MappingBatch.from_mappings(mappings, einsum, arch, axes)
    tensors = workload.tensor_map
    la = analyze(einsum, tensors, arch, axes, batch)
    names = la.tensor_names
    bits = np.array([tensors[t].bits for t in names], dtype=float)
    on_chip = np.array([not is_off_chip(lv) for lv in arch.memory])
    capacity = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes for lv in arch.memory])

    best: tuple[float, float, tuple[int, ...]] | None = None
    for choice in itertools.product((0, 1), repeat=len(names)):
        pick = np.array(choice)
        tiles = la.tile_elements[pick, :, np.arange(len(names))].T * bits / 8            # (L, T) bytes
        # streamed tiles are double-buffered on chip so the next fold loads while this one computes
        occupancy = np.where(on_chip[:, None] & (pick == 0)[None, :], 2 * tiles, tiles).sum(axis=1)
        if np.any(on_chip & (occupancy > capacity)):
            continue
        moved = _pick(la, pick)
        outer_bytes = float((moved["read"][0] + moved["written"][0]) @ bits) / 8
        key = (outer_bytes, float(((moved["read"] + moved["written"]) @ bits).sum()), choice)
        best = key if best is None or key < best else best
    choice = np.array(best[2] if best is not None else (0,) * len(names))
    moved = _pick(la, choice)

    accesses: dict[tuple[str, str, str], float] = {}
    energy: dict[tuple[str, str], float] = {}
    level_cycles = []
    for li, level in enumerate(arch.memory):
        for action, arr in (("read", moved["read_raw"]), ("fill", moved["fill"]), ("update", moved["update"]),
                            ("write", moved["write"])):
            for ti, tensor in enumerate(names):
                if arr[li, ti]:
                    accesses[(level.name, tensor, action)] = float(arr[li, ti])
        read_bits = float(moved["read"][li] @ bits)
        write_bits = float(moved["written"][li] @ bits)
        level_cycles.append((read_bits + write_bits) / 8 / level.bandwidth_bytes_per_s * arch.clock_hz)
        for key, value in level_access_energy(arch, li, read_bits, write_bits).items():
            energy[key] = energy.get(key, 0.0) + value
    # before the first fold can start, its tiles cross from each operand's home level
    first_tiles = la.tile_elements[0, -1, :] * bits / 8
    home = [next(li for li, lv in enumerate(arch.memory) if workload.storage_class[t] in lv.holds) for t in names]
    prologue = sum(first_tiles[ti] / arch.memory[home[ti]].bandwidth_bytes_per_s * arch.clock_hz
                   for ti in range(len(names)) if names[ti] != einsum.output.tensor)
    return {"accesses": accesses, "energy": energy, "level_cycles": level_cycles, "prologue_cycles": prologue}


def _pick(la, choice: np.ndarray) -> dict[str, np.ndarray]:
    """(L, T) access arrays taking each tensor's counts from the candidate `choice` names."""
    cols = np.arange(len(choice))
    out = {a: getattr(la, f"{a}_elements")[choice, :, cols].T for a in ("read", "fill", "update", "write")}
    out["read_raw"] = out["read"]
    out["written"] = out["fill"] + out["update"] + out["write"]
    return out


def vector_cost(einsum: Einsum, workload: Workload, arch: Arch, engine: VectorEngine) -> Cost:
    """An elementwise/reduction einsum on SIMD lanes: ops / lanes cycles against compulsory traffic."""
    ops = einsum.macs if einsum.op == "mac" else einsum.ops
    compute = ops / engine.lanes * arch.clock_hz / arch.engine_clock_hz(engine)
    traffic = compulsory_traffic(einsum, workload)
    out_bits = workload.tensor(einsum.output.tensor).bits
    dtype = dtype_of_bits(out_bits)
    # one fused multiply-add per operator application: a lower bound for exp, div and friends
    energy = {("vector_lanes", "compute"): ops * dtype_mac_energy_j(dtype, dtype, node_nm=arch.technology_nm)}
    footprints = _footprints(einsum, workload)
    accesses: dict[tuple[str, str, str], float] = {}
    level_cycles = []
    for li, level in enumerate(arch.memory):
        read, write = traffic.through(level)
        level_cycles.append((read + write) / level.bandwidth_bytes_per_s * arch.clock_hz)
        for key, value in level_access_energy(arch, li, read * 8, write * 8).items():
            energy[key] = energy.get(key, 0.0) + value
        for tensor, (action, elements) in footprints.items():
            if workload.storage_class[tensor] in level.holds:
                accesses[(level.name, tensor, action)] = elements
    total = max([compute, *level_cycles])
    return Cost(macs=einsum.macs, compute_cycles=compute, stall_cycles=total - compute, accesses=accesses,
                energy_j=energy, utilization=ops / (engine.lanes * total) if total > 0 else 0.0)


def _footprints(einsum: Einsum, workload: Workload) -> dict[str, tuple[str, float]]:
    """Tensor -> ('read' or 'write', distinct elements touched) for an einsum run once."""
    out: dict[str, tuple[str, float]] = {}
    for access in einsum.inputs:
        if access.tensor != einsum.output.tensor and access.tensor not in out:
            out[access.tensor] = ("read", float(einsum.footprint(access, workload.tensor(access.tensor))))
    output = workload.tensor(einsum.output.tensor)
    out[output.name] = ("write", float(einsum.footprint(einsum.output, output)))
    return out
