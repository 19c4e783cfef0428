"""Start-up cost (issue 20, item 1), side by side in one run, as CPU seconds of fresh interpreters (medians).

Rows: a bare interpreter; `import accel_sim` (its API loads on first use); the pipeline modules that
`import accel_sim` loaded eagerly before issue 20 (`accel_sim.evaluate` and `accel_sim.io.load`: the "before"
row, measured here rather than remembered); `accel-sim --help`; `accel-sim scalesim` on SCALE-Sim's own sample
as a whole process. The peer rows run SCALE-Sim 3.0.0 from a throwaway venv (bench_scalesim.py's; never an
accel-sim dependency): `import scalesim.scale_sim`, and `python -m scalesim.scale` on the same sample as a whole
process. Without that venv the peer rows say so and are skipped. CPU time is the child processes' user + system
time (resource.getrusage), so machine load inflates it less than wall time; the figures are reported as ratios
(to the 0.1 s target, to the peer), never asserted. Our bytecode is compiled first, as SCALE-Sim's installed
package's is (bench_run.compile_bytecode).

Then issue 20's 16-case whole-process benchmark: `accel-sim scalesim` and SCALE-Sim, each as a fresh process on the
same config and one-layer topology files (bench_scalesim.write_inputs), median CPU of PROCESS_REPEATS runs per case,
the per-case ratios and their median against the 20x target. The 16 cases are bench_scalesim's layers on all three
array configs (32x32 os, 64x64 ws, 128x128 ws): ResNet 1x1 and 3x3 convolutions, strided ones, BERT GEMMs and a
GEMV, from about 2 s of SCALE-Sim CPU to about 19 s; left out are the four that take it 22-31 s each
(r18_conv4_3x3, r18_conv5_3x3, r50_conv5_3x3, bert_ffn2), so that the whole benchmark stays under about 10 minutes
(9 on 2 shared cores).
Run: python -m benchmarks.bench_startup   (or `make bench`)
"""
from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_run import accel_sim_command, compile_bytecode
from benchmarks.bench_scalesim import LAYERS, write_inputs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_CFG = ROOT / "workloads" / "scalesim" / "sample.cfg"
SAMPLE_TOPOLOGY = ROOT / "workloads" / "scalesim" / "sample_topology.csv"
SCALESIM_VENVS = (Path("/tmp/scalesim-venv"), ROOT / ".bench" / "scalesim-venv")
# SCALE-Sim as a whole process: interpreter, imports and the run, through the API bench_scalesim.py times
PEER_RUN = ("import sys\nfrom scalesim.scale_sim import scalesim\n"
            "sim = scalesim(save_disk_space=True, verbose=False, config=sys.argv[1], topology=sys.argv[2], "
            "layout=sys.argv[3], input_type_gemm=sys.argv[5] == 'gemm')\nsim.run_scale(top_path=sys.argv[4])\n")
IMPORT_TARGET_S = 0.1  # issue 20: `import accel_sim` <= 0.1 s
SCALESIM_TARGET = 20.0  # issue 20: `accel-sim scalesim` >= 20x SCALE-Sim as a whole process
REPEATS = 5
PROCESS_REPEATS = 3   # runs per simulator and case in the 16-case benchmark (SCALE-Sim's take seconds each)
PROCESS_CASES = ("r18_conv2_3x3", "r18_conv3_3x3s2", "r18_conv3_3x3", "r50_conv2_1x1a", "r50_conv2_1x1b",
                 "r50_conv3_1x1a", "r50_conv3_3x3", "r50_conv3_1x1b", "r50_conv4_1x1a", "r50_conv4_3x3",
                 "r50_down4_s2", "bert_qkv", "bert_out", "bert_ffn1", "llama_decode_gemv", "r50_fc")


def cpu_seconds(command: list[str], cwd: Path = ROOT) -> float:
    """User + system CPU seconds of one run of `command` (and the children it waits for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(command: list[str], cwd: Path = ROOT, repeats: int = REPEATS) -> float:
    """Median of `repeats` runs' CPU seconds."""
    return statistics.median(cpu_seconds(command, cwd) for _ in range(repeats))


def scalesim_python() -> Path | None:
    """SCALE-Sim's throwaway venv interpreter, if one exists."""
    return next((p / "bin" / "python" for p in SCALESIM_VENVS if (p / "bin" / "python").exists()), None)


def scalesim_processes(peer: Path) -> float:
    """Run the 16 PROCESS_CASES as whole processes of both simulators; print each case and return the median ratio."""
    print(f"accel-sim scalesim and SCALE-Sim as whole processes, median CPU of {PROCESS_REPEATS} runs per case")
    print(f"{'layer':<20}{'config':<9}{'SCALE-Sim CPU s':>16}{'accel-sim CPU s':>16}{'ratio':>8}")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench_processes_") as tmp:
        work = Path(tmp)
        cases = [layer for layer in LAYERS if layer[1] in PROCESS_CASES]
        for (config, name, _), job in zip(cases, write_inputs(work, cases)):
            kind = "gemm" if job["gemm"] else "conv"
            ours = median_cpu([*accel_sim_command(), "scalesim", job["cfg"], job["topo"], "-o", f"{job['out']}_ours",
                               *(["--gemm"] if job["gemm"] else [])], work, PROCESS_REPEATS)
            theirs = median_cpu([str(peer), "-c", PEER_RUN, job["cfg"], job["topo"], job["layout"], job["out"], kind],
                                work, PROCESS_REPEATS)
            ratios.append(theirs / ours)
            print(f"{name:<20}{config:<9}{theirs:>16.3f}{ours:>16.3f}{theirs / ours:>7.1f}x", flush=True)
    median = statistics.median(ratios)
    print(f"median SCALE-Sim / accel-sim scalesim over {len(ratios)} cases: {median:.1f}x (target >= "
          f"{SCALESIM_TARGET:g}x: {median / SCALESIM_TARGET:.2f} of it); range {min(ratios):.1f}x .. {max(ratios):.1f}x")
    return median


def main() -> int:
    """Print each start-up row's median CPU seconds and its ratios."""
    compile_bytecode()
    py = sys.executable
    rows: dict[str, float | str] = {}
    rows["python -c pass"] = median_cpu([py, "-c", "pass"])
    rows["import accel_sim"] = median_cpu([py, "-c", "import accel_sim"])
    rows["import the pipeline (import accel_sim before issue 20)"] = median_cpu(
        [py, "-c", "import accel_sim.evaluate, accel_sim.io.load"])
    rows["accel-sim --help"] = median_cpu([*accel_sim_command(), "--help"])
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        rows["accel-sim scalesim (sample, whole process)"] = median_cpu(
            [*accel_sim_command(), "scalesim", str(SAMPLE_CFG), str(SAMPLE_TOPOLOGY), "-o", str(Path(tmp) / "ours")])
        peer = scalesim_python()
        if peer is None:
            skip = "skipped: no SCALE-Sim venv (/tmp/scalesim-venv; bench_scalesim.py creates .bench/scalesim-venv)"
            rows["SCALE-Sim: import scalesim.scale_sim"] = skip
            rows["SCALE-Sim run (sample, whole process)"] = skip
        else:
            rows["SCALE-Sim: import scalesim.scale_sim"] = median_cpu([str(peer), "-c", "import scalesim.scale_sim"])
            work = Path(tmp)
            # SCALE-Sim drops each row's last field (rows end with a comma) and reads a layout file
            lines = [r.rstrip() for r in SAMPLE_TOPOLOGY.read_text().splitlines() if r.strip()]
            (work / "topology.csv").write_text("".join(r + ("\n" if r.endswith(",") else ",\n") for r in lines))
            (work / "layout.csv").write_text("Layer name,\n")
            rows["SCALE-Sim run (sample, whole process)"] = median_cpu(
                [str(peer), "-c", PEER_RUN, str(SAMPLE_CFG), str(work / "topology.csv"), str(work / "layout.csv"),
                 str(work / "theirs"), "conv"], cwd=work)
    print(f"start-up CPU seconds, median of {REPEATS} fresh processes")
    print(f"{'row':<62}{'CPU s':>8}")
    for name, value in rows.items():
        print(f"{name:<62}{value:>8.3f}" if isinstance(value, float) else f"{name:<62}  {value}")
    ours = rows["import accel_sim"]
    before = rows["import the pipeline (import accel_sim before issue 20)"]
    print(f"import accel_sim: {ours / IMPORT_TARGET_S:.2f} of the {IMPORT_TARGET_S:g} s target; "
          f"{before / ours:.1f}x less than the eager import it replaced")
    peer_import = rows["SCALE-Sim: import scalesim.scale_sim"]
    if isinstance(peer_import, float):
        print(f"import accel_sim / import scalesim.scale_sim: {ours / peer_import:.2f}")
        theirs = rows["SCALE-Sim run (sample, whole process)"]
        mine = rows["accel-sim scalesim (sample, whole process)"]
        print(f"SCALE-Sim / accel-sim scalesim, whole process on the sample: {theirs / mine:.1f}x "
              f"(the target is on the 16-case benchmark below)")
    if peer is not None:
        scalesim_processes(peer)
    return 0  # a benchmark reports; tests gate on behaviour, not on time


if __name__ == "__main__":
    sys.exit(main())
