"""LUT Tensor Core vs a MAC-based tensor core: compute density (TOPS/mm^2) and energy efficiency (TOPS/W).

Published (Mo et al., "LUT Tensor Core", ISCA 2025, arXiv:2408.06003, as transcribed in ../shared/targets.md):
LUT Tensor Core achieves 4-6x power-performance-area over MAC-based tensor cores. The paper gives one band,
not one multiple per precision (none is published in the sources we could read: lut_notes.md), so only the
artifact's own precision (INT2 x FP16) is compared with the band's midpoint (5x +- 20 %, the band itself);
the other W x A points are printed without a comparison.

Ours: the lut_core and mac_core engines of arch_configs/lut/{lut,mac}_tensor_core.yaml (28 nm, 1 GHz; the
A8 points swap the activation type to int8), each running the artifact's GEMM (M = 4096, N = 27648,
K = 5120) with the weight width of the point. Density is peak ops (2 per MAC) per second per mm^2 of
datapath; efficiency is ops per joule of datapath energy (compute, tables, registers, dequantization),
memory levels excluded since both engines see the same traffic.
Run: python -m validation.lut_tensor_core
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch
from accel_sim.engines.base import EngineBase
from accel_sim.evaluate import evaluate
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
LUT_CONFIG = REPO / "arch_configs" / "lut" / "lut_tensor_core.yaml"
MAC_CONFIG = REPO / "arch_configs" / "lut" / "mac_tensor_core.yaml"
PUBLISHED_PPA = (4.0, 6.0)   # [LUTTC] abstract: 4-6x power-performance-area over MAC-based tensor cores
ARTIFACT_GEMM = (4096, 27648, 5120)  # [LUTTC] artifact example: M, N, K, INT2 weights x FP16 activations
POINTS = [(w, a) for a in ("fp16", "int8") for w in (1, 2, 4)]


@dataclass(frozen=True)
class Metrics:
    """Throughput, density and efficiency of one engine at one precision."""

    tops: float
    area_mm2: float
    energy_per_op_j: float

    @property
    def tops_per_mm2(self) -> float:
        """Peak tera-ops per second per mm^2."""
        return self.tops / self.area_mm2

    @property
    def tops_per_w(self) -> float:
        """Tera-ops per joule-per-second: ops / J / 1e12."""
        return 1 / self.energy_per_op_j / 1e12




def gemm(m: int, n: int, k: int, w_bits: int, a_bits: int) -> Workload:
    """Z[m,n] = A[m,k] * W[k,n] with W a `w_bits` weight."""
    r = Affine.rank
    e = Einsum("gemm", Access("Z", (r("m"), r("n"))),
               Call("mul", (Access("A", (r("m"), r("k"))), Access("W", (r("k"), r("n"))))),
               {"m": m, "n": n, "k": k})
    return Workload("gemm", (Tensor("A", ("M", "K"), (m, k), a_bits), Tensor("W", ("K", "N"), (k, n), w_bits, "weight"),
                             Tensor("Z", ("M", "N"), (m, n), max(a_bits, 16))), (e,))


def datapath_arch(engine: EngineBase, node_nm: float, clock_hz: float) -> Arch:
    """The engine alone with one free, unbounded memory (no traffic energy, no stalls)."""
    return Arch.model_validate({"name": "datapath", "clock": clock_hz, "technology_nm": node_nm,
                                "memory": [{"name": "mem", "technology": "DRAM", "bandwidth": "1e18 B/s",
                                            "read_energy_per_bit": 0}],
                                "engines": [engine.model_dump(by_alias=False)]})


def metrics(engine: EngineBase, weight_bits: int, node_nm: float, clock_hz: float,
            shape: tuple[int, int, int] = ARTIFACT_GEMM) -> Metrics:
    """Peak TOPS, area and datapath energy per op of `engine` at `weight_bits` on a GEMM of `shape`."""
    a_bits = 8 if engine.activation == "int8" else 16
    arch = datapath_arch(engine, node_nm, clock_hz)
    w = gemm(*shape, weight_bits, a_bits)
    cost = evaluate(arch, w, objective="energy").einsums[0].cost
    ops = 2 * w.einsums[0].macs
    return Metrics(2 * engine.macs_per_cycle(weight_bits) * clock_hz / 1e12, engine.area_mm2(node_nm),
                   cost.total_energy_j / ops)


def ratios(weight_bits: int, activation: str) -> tuple[float, float]:
    """(density, efficiency) of the LUT engine over the MAC engine at one precision."""
    lut_arch, mac_arch = load_arch(LUT_CONFIG), load_arch(MAC_CONFIG)
    lut = lut_arch.engine("lut_core").model_copy(update={"activation": activation})
    mac = mac_arch.engine("mac_core").model_copy(update={"activation": activation})
    node, clock = lut_arch.technology_nm, lut_arch.clock_hz
    lm, mm = metrics(lut, weight_bits, node, clock), metrics(mac, weight_bits, node, clock)
    return lm.tops_per_mm2 / mm.tops_per_mm2, lm.tops_per_w / mm.tops_per_w


ARTIFACT_POINT = (2, "fp16")  # [LUTTC] artifact example: INT2 weights x FP16 activations


def _label(weight_bits: int, activation: str) -> str:
    return f"W{weight_bits}A{16 if activation != 'int8' else 8}"


def rows() -> list[Comparison]:
    """Density and efficiency multiples at the artifact's precision (W2A16) against the published 4-6x band's
    midpoint: the paper states no multiple per precision (validation/lut_notes.md), so no other point is
    compared with it."""
    mid = sum(PUBLISHED_PPA) / 2
    density, efficiency = ratios(*ARTIFACT_POINT)
    label = _label(*ARTIFACT_POINT)
    return [Comparison(f"{label} compute density LUT/MAC (x)", mid, density, "band 4-6x"),
            Comparison(f"{label} energy efficiency LUT/MAC (x)", mid, efficiency, "band 4-6x")]


def precision_multiples() -> list[tuple[str, float, float]]:
    """(W x A label, density multiple, efficiency multiple) at every point of POINTS: no published figure to
    compare with, printed for the reader."""
    return [(_label(w, a), *ratios(w, a)) for w, a in POINTS]


def main() -> None:
    """Print the comparison table, then the multiples at the other precisions (no published figure)."""
    print(comparison_table(rows()))
    print("every precision (no published per-precision figure, so only W2A16 is validated): density x, efficiency x")
    for label, density, efficiency in precision_multiples():
        print(f"  {label}: {density:.2f} x, {efficiency:.2f} x")


if __name__ == "__main__":
    main()
