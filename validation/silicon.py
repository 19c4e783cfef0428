"""Silicon area and power of shipped chips against the model (issue 17, item 3): TPU v1, Eyeriss v1 and DianNao.

Published:
- TPU v1 (Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit", ISCA 2017): die
  "< 331" mm^2 at 28 nm (Table 2); floorplan (Fig. 2): the 24 MiB Unified Buffer is 29 % of the die, the Matrix
  Multiply Unit 24 %, the 4 MiB Accumulators 6 % (control 2 %, I/O 10 %); power of the die (Table 2): idle 28 W,
  busy 40 W, so 12 W is what work adds.
- Eyeriss v1 (Chen et al., IEEE JSSC 52(1), 2017): core 3.5 mm x 3.5 mm = 12.25 mm^2 in 65 nm (die 4 x 4 mm).
  Ours counts the 168 fixed-point MACs, each PE's three scratchpads (edge_npu.yaml `pe_storage`), the 27-bank
  global buffer and the ReLU lanes; the multicast NoC, the RLC codec and the control are not modelled.
- DianNao (Chen et al., ASPLOS 2014), Table 6, after layout at 65 nm: the accelerator 3,023,077 um^2; per functional
  block NFU 846,563, NBin 427,992, NBout 433,906, SB 1,153,814 um^2 (CP, AXIMUX and other make up the rest); per
  component type, Memory (the SRAMs) 1,158,000 um^2. Its 485 mW is not compared: the paper gives no memory system,
  so a busy run's latency (and so its power) would rest on a main-memory bandwidth it does not state.

Ours: the shipped configs (arch_configs/tpu_v1.yaml, edge_npu.yaml, diannao.yaml). Whole-chip area is
`Result.area_mm2` of an `evaluate` run (every engine's datapath, every on-chip level and the I/O PHYs of the arch's
`io:` list); each TPU v1 component is the same model's area of that engine or level, and its I/O row the PHYs against
Fig. 2's I/O share; DianNao's NFU is its two engines (NFU-1/2 as the array, NFU-3 as the vector lanes), each buffer
its level, and its Memory row all its SRAM levels. The model has no idle (leakage, clock-tree) power, so its power is
what work adds: TPU v1's on-die energy (off-chip DRAM devices excluded) per second on a GEMM that keeps the array busy
(2048 x 2048 int8 weights against 1024 columns), compared with busy - idle.
Run: python -m validation.silicon
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch, load_workload
from accel_sim.energy.components import io_area_mm2, is_off_chip, level_area_mm2
from accel_sim.evaluate import Result, evaluate
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
TPU_V1 = REPO / "arch_configs" / "tpu_v1.yaml"
EYERISS = REPO / "arch_configs" / "edge_npu.yaml"
GEMM = REPO / "workloads" / "gemm.einsum.yaml"
TPU_DIE_MM2 = 331.0                # [Jouppi 2017] Table 2: die "< 331" mm^2 (an upper bound)
TPU_FLOORPLAN_SHARE = {"unified_buffer": 0.29, "mxu": 0.24, "accumulators": 0.06}  # [Jouppi 2017] Fig. 2
TPU_IO_SHARE = 0.10                # [Jouppi 2017] Fig. 2: "the medium (green) I/O is 10 %" of the die
TPU_BUSY_W, TPU_IDLE_W = 40.0, 28.0  # [Jouppi 2017] Table 2: die power busy and idle
EYERISS_CORE_MM2 = 3.5 * 3.5       # [Chen JSSC 2017] core 3.5 mm x 3.5 mm
DIANNAO = REPO / "arch_configs" / "diannao.yaml"
# [Chen ASPLOS 2014] Table 6, um^2 -> mm^2: the accelerator, its functional blocks (ours: the engines or level named
# beside each) and its SRAMs (component type "Memory")
DIANNAO_DIE_MM2 = 3.023077
DIANNAO_BLOCKS_MM2 = {"NFU": (0.846563, ("nfu", "nfu3")), "NBin": (0.427992, ("nbin",)),
                      "NBout": (0.433906, ("nbout",)), "SB": (1.153814, ("sb",))}
DIANNAO_MEMORY_MM2 = 1.158
# A GEMM that keeps TPU v1's array busy: 2048 x 2048 weights (8 x 8 tiles of 256 x 256) against 1024 activation
# columns, the largest whose 32-bit output fits the Unified Buffer beside its inputs.
BUSY_GEMM = ("ranks.m=2048", "ranks.k=2048", "ranks.n=1024")


def _area_of(result: Result, name: str) -> float:
    """Modelled area of the engine or memory level called `name` in the result's arch."""
    arch, node = result.arch, result.arch.technology_nm
    for engine in arch.engines:
        if engine.name == name:
            return engine.area_mm2(node)
    return level_area_mm2(next(level for level in arch.memory if level.name == name), node)


def on_die_power_w(result: Result) -> float:
    """Energy per second of everything on the die: the summary's components less the off-chip levels."""
    off_chip = {level.name for level in result.arch.memory if is_off_chip(level)}
    energy = result.summary()["energy_by_component_j"]
    return sum(j for name, j in energy.items() if name not in off_chip) / result.latency_s


def tpu_v1_rows() -> list[Comparison]:
    """TPU v1 die area, its three largest floorplan blocks, and the power work adds."""
    busy = evaluate(load_arch(TPU_V1), load_workload(GEMM, overrides=list(BUSY_GEMM)), "latency")
    rows = [Comparison("TPU v1 die area (mm2)", TPU_DIE_MM2, busy.area_mm2, "die < 331")]
    rows += [Comparison(f"TPU v1 {name} area (mm2)", share * TPU_DIE_MM2, _area_of(busy, name),
                        f"{100 * share:g} % of the die")
             for name, share in TPU_FLOORPLAN_SHARE.items()]
    rows.append(Comparison("TPU v1 I/O PHY area (mm2)", TPU_IO_SHARE * TPU_DIE_MM2, io_area_mm2(busy.arch),
                           "10 % of the die"))
    rows.append(Comparison("TPU v1 power busy - idle (W)", TPU_BUSY_W - TPU_IDLE_W, on_die_power_w(busy),
                           "40 W busy - 28 W idle"))
    return rows


def eyeriss_rows() -> list[Comparison]:
    """Eyeriss v1 core area."""
    result = evaluate(load_arch(EYERISS), load_workload(GEMM), "latency")
    return [Comparison("Eyeriss core area (mm2)", EYERISS_CORE_MM2, result.area_mm2, "3.5 x 3.5 mm")]


def diannao_rows() -> list[Comparison]:
    """DianNao's area, its four largest functional blocks and its SRAMs."""
    result = evaluate(load_arch(DIANNAO), load_workload(GEMM), "latency")
    rows = [Comparison("DianNao area (mm2)", DIANNAO_DIE_MM2, result.area_mm2, "Table 6: 3,023,077 um2")]
    rows += [Comparison(f"DianNao {block} area (mm2)", published, sum(_area_of(result, name) for name in names),
                        "Table 6") for block, (published, names) in DIANNAO_BLOCKS_MM2.items()]
    sram = sum(level_area_mm2(level, result.arch.technology_nm) for level in result.arch.memory
               if not is_off_chip(level))
    rows.append(Comparison("DianNao SRAM area (mm2)", DIANNAO_MEMORY_MM2, sram, "Table 6: Memory"))
    return rows


def rows() -> list[Comparison]:
    """Every silicon comparison."""
    return tpu_v1_rows() + eyeriss_rows() + diannao_rows()


def main() -> None:
    """Print the comparison table."""
    print(comparison_table(rows()))


if __name__ == "__main__":
    main()
