"""End-to-end `accel-sim run` time: ResNet-50 (ONNX), Llama-2-7B decode and prefill on the TPU-v1 config.

Issue 3 asks each of these to run end to end, report included, in under 2 seconds. Each case runs the installed
`accel-sim run` command in a fresh interpreter (start-up, imports, loading, mapping every contraction, per-einsum
CSV, summary JSON, roofline PNG, terminal table), three times; the median wall time is the figure. A second,
in-process pass splits one run into phases (CPU seconds) to show where the time goes.
Run: python -m benchmarks.bench_run   (or `make bench`, which runs every benchmark)
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCH = ROOT / "arch_configs" / "tpu_v1.yaml"
CASES = {"ResNet-50 (ONNX)": ROOT.parent / "shared" / "models" / "resnet50.onnx",
         "Llama-2-7B decode": ROOT / "workloads" / "llama2-7b-decode.yaml",
         "Llama-2-7B prefill": ROOT / "workloads" / "llama2-7b-prefill.yaml"}
TARGET_S = 2.0  # issue 3
REPEATS = 3

PHASES = """
import sys, time
clock = time.process_time
t0 = clock()
from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_arch, load_workload
from accel_sim.reports.tables import write_report
t1 = clock()
arch, workload = load_arch(sys.argv[1]), load_workload(sys.argv[2])
t2 = clock()
result = evaluate(arch, workload)
t3 = clock()
write_report(result, __import__("pathlib").Path(sys.argv[3]))
t4 = clock()
print(f"imports {t1 - t0:.2f}  load {t2 - t1:.2f}  evaluate {t3 - t2:.2f}  report files {t4 - t3:.2f}")
"""


def accel_sim_command() -> list[str]:
    """The `accel-sim` console script beside this interpreter (the project's venv)."""
    script = Path(sys.executable).with_name("accel-sim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "accel_sim.cli"]


def wall_times(workload: Path, out_dir: Path) -> list[float]:
    """Wall seconds of REPEATS fresh `accel-sim run` commands on one workload."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run([*accel_sim_command(), "run", str(ARCH), str(workload), "-o", str(out_dir)], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def phases(workload: Path, out_dir: Path) -> str:
    """One in-process run split into phases (CPU seconds)."""
    done = subprocess.run([sys.executable, "-c", PHASES, str(ARCH), str(workload), str(out_dir)], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def main() -> int:
    """Print median wall time per case against the 2 s target, and the phase split."""
    print(f"accel-sim run on {ARCH.name}, median of {REPEATS} fresh commands (target < {TARGET_S:g} s each)")
    print(f"{'case':<22}{'median s':>9}{'min s':>8}{'max s':>8}  within target  phases (CPU s)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, workload in CASES.items():
            if not workload.exists():
                print(f"{name:<22} skipped: {workload} not found")
                continue
            times = wall_times(workload, Path(tmp) / "run")
            median = statistics.median(times)
            within = median < TARGET_S
            print(f"{name:<22}{median:>9.2f}{min(times):>8.2f}{max(times):>8.2f}  {'yes' if within else 'NO':<13}  "
                  f"{phases(workload, Path(tmp) / 'phases')}")
    return 0  # a benchmark reports; CI gates on tests, not on wall time


if __name__ == "__main__":
    sys.exit(main())
