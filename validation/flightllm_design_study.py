"""Design study on the Alveo U280: LLaMA2-7B decode tokens/s and DSP/BRAM/URAM use vs GEMV parallelism of the
FlightLLM-like design, and sequential vs dataflow vs auto execution for a CNN (ResNet-18) and an MLP.

Designs that do not fit the U280 are reported with the resource that overflows (the engine's fit check).
Run: python -m validation.flightllm_design_study
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim.errors import ConfigError
from accel_sim.evaluate import evaluate
from accel_sim.io.arch import arch_from_doc
from accel_sim.io.load import load_arch, load_workload
from accel_sim.io.yaml import YamlDoc, load_yaml
from accel_sim.zoo import build

ROOT = Path(__file__).resolve().parents[1]
U280 = ROOT / "arch_configs/fpga/flightllm_u280.yaml"
MODES = ("sequential", "dataflow", "auto")


def variant(doc: YamlDoc, gemv_out: int, matrix_out: int):
    """The U280 design with GEMV out-parallelism `gemv_out` and matrix out-parallelism `matrix_out`."""
    data = copy.deepcopy(doc.data)
    engine = data["engines"][0]
    engine["gemv"]["out"] = gemv_out
    engine["matrix"]["out"] = matrix_out
    return arch_from_doc(YamlDoc(data, doc.lines, doc.file))


def parallelism_sweep() -> list[dict[str, object]]:
    """Tokens/s and resource use of LLaMA2-7B decode (INT4 weights, kv 384) per parallelism point."""
    doc = load_yaml(U280)
    workload = build("llama2-7b", phase="decode", kv_len=384, weight_bits=4, act_bits=8, kv_bits=8)
    rows = []
    for gemv_out, matrix_out in ((32, 2), (64, 2), (128, 2), (128, 4), (256, 4), (256, 8)):
        point: dict[str, object] = {"gemv": f"1x16x{gemv_out}", "matrix": f"128x16x{matrix_out}"}
        try:
            arch = variant(doc, gemv_out, matrix_out)
        except ConfigError as err:
            point["result"] = f"does not fit: {err.problem if hasattr(err, 'problem') else err}"
            rows.append(point)
            continue
        point["tokens_per_s"] = 1 / evaluate(arch, workload, objective="latency").latency_s
        for row in arch.engines[0].resource_rows():
            point[row["resource"]] = row["utilization"]
        rows.append(point)
    return rows


def mode_study() -> list[dict[str, object]]:
    """Latency (ms) of ResNet-18 (int8) and the DLRM-style MLP under the three execution modes on the U280 design
    (`accel-sim run arch_configs/fpga/flightllm_u280.yaml WORKLOAD --set execution.kind=fpga --set
    execution.mode=MODE`)."""
    archs = {m: load_arch(U280, ["execution.kind=fpga", f"execution.mode={m}"]) for m in MODES}
    rows = []
    for workload in (build("resnet18", weight_bits=8, act_bits=8), load_workload(ROOT / "workloads/mlp.einsum.yaml")):
        latency = {m: evaluate(arch, workload, objective="latency").latency_s for m, arch in archs.items()}
        rows.append({"workload": workload.name, **{m: s * 1e3 for m, s in latency.items()}})
    return rows


def main() -> None:
    """Print both studies."""
    print("LLaMA2-7B decode on the FlightLLM-like U280 vs parallelism")
    for p in parallelism_sweep():
        if "result" in p:
            print(f"  gemv {p['gemv']:>9} matrix {p['matrix']:>10}: {p['result']}")
        else:
            print(f"  gemv {p['gemv']:>9} matrix {p['matrix']:>10}: {p['tokens_per_s']:6.1f} tokens/s  "
                  f"DSP {100 * p['DSP']:5.1f}%  BRAM {100 * p['BRAM36']:5.1f}%  URAM {100 * p['URAM']:5.1f}%")
    print("execution modes (ms)")
    for r in mode_study():
        print(f"  {r['workload']:28} sequential {r['sequential']:8.3f}  dataflow {r['dataflow']:8.3f}  "
              f"auto {r['auto']:8.3f}")


if __name__ == "__main__":
    main()
