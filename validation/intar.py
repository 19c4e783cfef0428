"""InTAR's multi-task benchmarks (He et al., "InTAR: Inter-Task Auto-Reconfigurable Accelerator Design for High
Data Volume Variation in DNNs", FCCM 2025) as sequential and dataflow HLS designs on the Alveo U280.

Published: the on-board cycle counts in the repository's benchmark READMEs (github.com/OswaldHe/InTAR,
benchmark/{mlp,cnn-4L}/{sequential,spatial}/README.md, "Vitis HW ... Cycle count", counted by the design's own
`measure_cycle` task): MLP sequential 1,374,935 and dataflow 181,996; CNN-4L sequential 2,215,282 and dataflow
713,144. Each design is described from its HLS source as kernels with their parallelism, DSPs and per-tensor
ports bound to HBM channels, and FIFOs between the dataflow tasks (arch_configs/fpga/intar_*.yaml); the CNN
designs and the sequential MLP also give their HLS loop nests, with the off-chip round trips their loops wait on
(engines/fpga/kernels.py `Loop`; the MLP dataflow's II = 1 loops stream and keep the parallelism model). Every
off-chip argument is a TAPA async_mmap, whose kernel pushes addresses and pops data itself: the sequential MLP's
weight reads are non-blocking (`read(nullptr)`) and wait on nothing, the CNN's row fetches and output writes wait
for their data and write responses. The
workloads are workloads/intar/*.einsum.yaml. Ours are the engine-clock cycles of `accel-sim run`.

Run: python -m validation.intar
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch, load_workload
from accel_sim.evaluate import evaluate
from validation.comparison import Comparison, comparison_table

ROOT = Path(__file__).resolve().parents[1]
# benchmark -> (workload, {mode: published on-board cycles}); the READMEs' "Vitis HW" cycle counts
PUBLISHED = {
    "MLP": ("mlp", {"sequential": 1_374_935, "dataflow": 181_996}),
    "CNN-4L": ("cnn4l", {"sequential": 2_215_282, "dataflow": 713_144}),
}


def cycles(name: str, mode: str) -> float:
    """Engine-clock cycles of one benchmark's design in one mode."""
    arch = load_arch(ROOT / f"arch_configs/fpga/intar_{name}_{mode}.yaml")
    result = evaluate(arch, load_workload(ROOT / f"workloads/intar/{name}.einsum.yaml"), objective="latency")
    return result.cycles * arch.engine_clock_hz(arch.engines[0].name) / arch.clock_hz


def rows() -> list[Comparison]:
    """Published vs modelled cycles per benchmark and mode, and the dataflow design's speed-up."""
    out = []
    for label, (name, published) in PUBLISHED.items():
        ours = {mode: cycles(name, mode) for mode in published}
        out += [Comparison(f"{label} {mode} (cycles)", published[mode], ours[mode]) for mode in published]
        out.append(Comparison(f"{label} dataflow speed-up over sequential (x)",
                              published["sequential"] / published["dataflow"], ours["sequential"] / ours["dataflow"]))
    return out


def main() -> None:
    """Print the comparison table."""
    print(comparison_table(rows()))


if __name__ == "__main__":
    main()
