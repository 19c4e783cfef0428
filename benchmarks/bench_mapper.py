"""Mapper benchmark: whole-network search time, candidates scored per second and EDP, beside ZigZag's LOMA.

Runs, in one process (ZigZag in a subprocess of its own venv):
1. the scorer's throughput: random candidate mappings of a ResNet-18 conv scored in batches on one core;
2. our search over every distinct contraction of ResNet-18 (ZigZag's bundled ONNX model is the same network
   as ../shared/models/resnet18.onnx) and of one BERT-base layer, on our renderings of ZigZag's tpu_like and
   edge_tpu_like examples (benchmarks/configs/), with the CP-SAT mapper (one process, and two: the issue's
   whole-network figure is for 2 cores) and with the 'local' method;
3. ZigZag 3.9.1 (PyPI zigzag-dse, never a project dependency) through its Python API
   `zigzag.api.get_hardware_performance_zigzag(onnx, hardware yaml, mapping yaml, opt="EDP")` on the same
   examples; its wall and CPU time and EDP (pJ x cycles, its own cost model) beside ours, as ratios, the CPU
   ratio against issue 20's 15x target (CPU seconds of the mapping calls alone on both sides, imports excluded;
   ours count the forked workers); before it, per distinct ResNet-18 layer, the CP-SAT status, the proxy's
   best objective, its proven bound and the relative gap;
4. (unless --no-random) the mapper against random search given ten times the mapper's wall time, per einsum of
   ResNet-50 and BERT-base (issue 4 asks the mapper to be at least as good on >= 90%).
5. after 3, the mappers under ONE cost model: per distinct ResNet-18 layer, ZigZag's chosen mapping (its loop
   order, the loops each memory level holds and its spatial unrolling, from its dump in .bench/zigzag_<arch>/)
   translated into our candidate form by benchmarks/zigzag_mapping.py (which says why that direction and what the
   translation changes) and costed by our exact scorer, beside our CP-SAT mapping costed by the same scorer;
   EDP per layer, the ratio ZigZag's/ours (>= 1: ours equal or better) and the network's EDP.
ZigZag needs a venv: `python -m venv /tmp/zzvenv && /tmp/zzvenv/bin/pip install zigzag-dse six` (3.9.1 imports
`six` without declaring it, and its command line crashes); point ZIGZAG_PYTHON at its interpreter.
EDPs of the two tools come from different cost models (ZigZag's per-access energies vs ours), so their ratio
compares the models as much as the mappers; the time ratio and item 5 compare the mappers.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core for the scorer figure
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"tpu_like": ROOT / "benchmarks/configs/tpu_like.yaml",
           "edge_tpu_like": ROOT / "benchmarks/configs/edge_tpu_like.yaml"}
RESNET18 = ROOT.parent / "shared/models/resnet18.onnx"
RESNET50 = ROOT.parent / "shared/models/resnet50.onnx"
TARGET = 15.0  # issue 20: ResNet-18 maps at least 15x faster than ZigZag in CPU time
ZIGZAG_SCRIPT = """
import json, resource, sys, time, importlib.resources as ir
from zigzag.api import get_hardware_performance_zigzag
base = ir.files("zigzag") / "inputs"
arch = sys.argv[1]
t, cpu = time.perf_counter(), time.process_time()
energy, latency, _ = get_hardware_performance_zigzag(
    str(base / "workload" / "resnet18.onnx"), str(base / "hardware" / f"{arch}.yaml"),
    str(base / "mapping" / f"{arch}.yaml"), opt="EDP", dump_folder=sys.argv[2], loma_show_progress_bar=False)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu + kids.ru_utime + kids.ru_stime,
                  "energy_pj": energy, "latency_cycles": latency}))
"""


def int8(workload):
    """The workload with 8-bit tensors, as ZigZag's examples run it (W and I 8 bits; see their workload files)."""
    from dataclasses import replace

    return replace(workload, tensors=tuple(replace(t, bits=8) for t in workload.tensors))


def cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (the forked mapper workers)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def network_search(arch, workload, method: str, time_limit_s: float, jobs: int = 1) -> dict:
    """Map every distinct contraction (over `jobs` processes); totals weighted by repeats; EDP = cycles x joules.

    CPU seconds count the parent and its workers (reaped when the pool closes); `layers` keeps each distinct
    contraction's (name, repeats, search statistics) for the per-layer bound and gap table.
    """
    import accel_sim.engines.systolic_cpsat  # noqa: F401  (OR-Tools and pandas imports, ~0.7 s, stay out of the
    from accel_sim.mapper import MapperCache, search_many  # timing, as ZigZag's imports stay out of its timing)

    engine = next(e for e in arch.engines if e.kind == "systolic")
    start, cpu = time.perf_counter(), cpu_seconds()
    cycles = energy = 0.0
    candidates = 0
    statuses: dict[str, int] = {}
    distinct = workload.distinct_contractions()
    results = search_many([engine.mapspace(e, workload, arch) for e, _ in distinct], "edp", method, time_limit_s,
                          jobs=jobs, cache=MapperCache())
    for (einsum, count), r in zip(distinct, results):
        cycles += count * r.cost.total_cycles
        energy += count * r.cost.total_energy_j
        candidates += r.stats.candidates
        statuses[r.stats.solver_status or "-"] = statuses.get(r.stats.solver_status or "-", 0) + 1
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"wall_s": wall, "cpu_s": cpu, "candidates": candidates, "cycles": cycles, "energy_j": energy,
            "edp": cycles * energy, "statuses": statuses,
            "layers": [(e.name, count, r.stats) for (e, count), r in zip(distinct, results)],
            "results": list(zip(distinct, results))}


def print_gaps(layers: list) -> None:
    """Per distinct layer: the CP-SAT status, the proxy's best objective, its proven bound and the relative gap."""
    print("layer | repeats | status | proxy objective | proven bound | gap")
    for name, count, stats in layers:
        print(f"{name} | {count} | {stats.solver_status or '-'} | {stats.proxy_objective:,.0f} | "
              f"{stats.proxy_bound:,.0f} | {stats.gap:.2%}")
    gaps = [stats.gap for _, _, stats in layers]
    proven = sum(stats.solver_status == "OPTIMAL" for _, _, stats in layers)
    print(f"proven optimal: {proven}/{len(layers)}; largest gap {max(gaps):.2%}")


def scorer_rate(arch, workload, n: int = 100_000) -> tuple[float, float]:
    """Candidates scored per second on one core (wall clock, CPU time): random mappings of a ResNet-18 3x3 conv.

    The CPU-time figure is the one-core rate when other processes share the machine; wall clock counts them.
    """
    from accel_sim.mapper.search import CHUNK

    engine = next(e for e in arch.engines if e.kind == "systolic")
    einsum = next(e for e in workload.einsums if e.op == "mac" and e.sizes.get("r") == 3)
    space = engine.mapspace(einsum, workload, arch)
    rng = np.random.default_rng(0)
    batches = [space.candidates(*space.sample(rng, CHUNK)) for _ in range(-(-n // CHUNK))]
    walls, cpus = [], []
    for _ in range(3):   # best of three passes, as timeit reports: the others include other processes' load
        start, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            space.score(batch)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    scored = sum(len(b) for b in batches)
    return scored / min(walls), scored / min(cpus)


def zigzag(arch_name: str) -> dict | str:
    """ZigZag's LOMA on its own example, or the reason it could not run."""
    python = os.environ.get("ZIGZAG_PYTHON", "/tmp/zzvenv/bin/python")
    if not Path(python).exists():
        return (f"skipped: no ZigZag interpreter at {python}. To include it: python -m venv /tmp/zzvenv && "
                f"/tmp/zzvenv/bin/pip install zigzag-dse six (or set ZIGZAG_PYTHON)")
    out_dir = ROOT / ".bench" / f"zigzag_{arch_name}"
    proc = subprocess.run([python, "-c", ZIGZAG_SCRIPT, arch_name, str(out_dir)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        return "ZigZag failed: " + proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "ZigZag failed"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["edp"] = result["energy_pj"] * result["latency_cycles"]
    return result


def common_model(arch_name: str, arch, workload, run: dict) -> None:
    """ZigZag's chosen mapping of every distinct ResNet-18 layer (its dump in .bench/zigzag_<arch>/), translated
    into our candidate form (benchmarks/zigzag_mapping.py), beside our CP-SAT mapping, both costed by our exact
    scorer: per layer and for the network (EDP = total cycles x total joules, each layer times its repeats)."""
    from benchmarks.zigzag_mapping import LEVELS, best_translation, choice_for, load_choices

    choices = load_choices(ROOT / ".bench" / f"zigzag_{arch_name}")
    engine = next(e for e in arch.engines if e.kind == "systolic")
    print(f"\nResNet-18 on {arch_name}, the two mappers' choices under ONE cost model (ours; EDP in J x cycles): "
          f"ZigZag's LOMA mapping translated into our candidate form vs our CP-SAT mapping (2 processes)")
    print("layer | ZigZag layer | repeats | dataflow | ZigZag's mapping: cycles | energy uJ | EDP | ours: cycles | "
          "energy uJ | EDP | EDP ratio ZigZag's/ours | outside our mapper's space")
    totals = np.zeros(4)
    wins = rows = 0
    notes: list[str] = []
    for (einsum, count), r in run["results"]:
        choice = choice_for(choices, einsum, workload)
        if choice is None:
            print(f"{einsum.name} | - | {count} | no ZigZag dump for this layer: not compared")
            continue
        space = engine.mapspace(einsum, workload, arch)
        tr, _, scores = best_translation(choice, space, LEVELS[arch_name])
        zc, ze = float(scores.total_cycles[0]), float(scores.energy_j[0])
        oc, oe = r.cost.total_cycles, r.cost.total_energy_j
        fits = bool(scores.fits[0])
        ratio = zc * ze / (oc * oe) if fits else math.inf
        totals += count * np.array([zc, ze, oc, oe])
        rows += 1
        wins += ratio >= 1 - 1e-9
        print(f"{einsum.name} | {choice.layer} | {count} | {tr.dataflow} | {zc:,.0f} | {ze * 1e6:.2f} | "
              f"{zc * ze:.4g}{'' if fits else ' (does not fit)'} | {oc:,.0f} | {oe * 1e6:.2f} | {oc * oe:.4g} | "
              f"{ratio:.3f} | {', '.join(tr.outside) or 'inside'}")
        notes += [f"  {einsum.name}: {n}" for n in tr.notes]
    zz_edp, our_edp = totals[0] * totals[1], totals[2] * totals[3]
    print(f"network | | | | {totals[0]:,.0f} | {totals[1] * 1e6:.1f} | {zz_edp:.4g} | {totals[2]:,.0f} | "
          f"{totals[3] * 1e6:.1f} | {our_edp:.4g} | {zz_edp / our_edp:.3f} |")
    print(f"ours equal or better on {wins}/{rows} distinct layers; network EDP ratio ZigZag's/ours "
          f"{zz_edp / our_edp:.3f}")
    print("what the translation changed or could not keep, per layer (benchmarks/zigzag_mapping.py):")
    print("\n".join(notes))


def random_comparison(arch, workloads, time_limit_s: float) -> tuple[int, int, float]:
    """(einsums where the mapper is at least as good as random search with 10x its time, einsums, worst ratio)."""
    from accel_sim.mapper.search import search

    engine = next(e for e in arch.engines if e.kind == "systolic")
    wins = total = 0
    worst = 0.0
    for workload in workloads:
        for einsum, _ in workload.distinct_contractions():
            space = engine.mapspace(einsum, workload, arch)
            ours = search(space, "edp", "cpsat", time_limit_s)
            rand = search(space, "edp", "random", 10 * ours.stats.wall_s, seed=1)
            total += 1
            wins += ours.score <= rand.score * (1 + 1e-12)
            worst = max(worst, ours.score / rand.score - 1)
    return wins, total, worst


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark tables (see the module docstring)."""
    from accel_sim import load_arch, load_workload
    from accel_sim.zoo import build

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=0.25, help="CP-SAT seconds per distinct einsum")
    parser.add_argument("--no-zigzag", action="store_true")
    parser.add_argument("--no-random", action="store_true", help="skip the random-search comparison (minutes)")
    parser.add_argument("--arch", choices=sorted(CONFIGS), action="append",
                        help="only these examples (repeatable; default: all)")
    parser.add_argument("--resnet-only", action="store_true", help="skip the BERT-base layer rows")
    args = parser.parse_args(argv)

    resnet18 = int8(load_workload(RESNET18))
    bert = build("bert-base", n_layers=1, weight_bits=8, act_bits=8)
    arches = {name: load_arch(path) for name, path in CONFIGS.items() if not args.arch or name in args.arch}
    wall_rate, cpu_rate = scorer_rate(next(iter(arches.values())), resnet18)
    print(f"scorer: {wall_rate:,.0f} candidates/s wall clock, {cpu_rate:,.0f} per CPU second on one core "
          f"(random mappings of a ResNet-18 3x3 conv, tpu_like)")
    print("\nworkload | arch | method | processes | wall s | CPU s | candidates | cand/s | cycles | energy J | "
          "EDP (J s at 1 GHz)")
    ours: dict[str, dict[int, dict]] = {}   # ResNet-18 CP-SAT runs by arch and processes
    for arch_name, arch in arches.items():
        for wl_name, workload in (("resnet18", resnet18), ("bert-base layer", bert))[:1 if args.resnet_only else 2]:
            for method, jobs in (("cpsat", 1), ("cpsat", 2), ("local", 1)):
                r = network_search(arch, workload, method, args.time_limit, jobs)
                if wl_name == "resnet18" and method == "cpsat":
                    ours.setdefault(arch_name, {})[jobs] = r
                print(f"{wl_name} | {arch_name} | {method} | {jobs} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                      f"{r['candidates']:,} | "
                      f"{r['candidates'] / r['wall_s']:,.0f} | {r['cycles']:,.0f} | {r['energy_j']:.4g} | "
                      f"{r['edp'] / 1e9:.4g}   solver {r['statuses']}")
    for arch_name, runs in ours.items():
        print(f"\nResNet-18 on {arch_name}, CP-SAT (2 processes), per distinct layer:")
        print_gaps(runs[2]["layers"])
    if not args.no_zigzag:
        print(f"\nResNet-18 | ZigZag LOMA wall s | CPU s | ours (cpsat) processes | wall s | CPU s | "
              f"CPU ratio ZigZag/ours (target {TARGET:g}x) | ZigZag EDP (pJ x cycles) | ours EDP (pJ x cycles) | "
              f"EDP ratio ours/ZigZag")
        dumped = []   # examples whose ZigZag run (and so its per-layer dump) completed
        for arch_name in arches:
            zz = zigzag(arch_name)
            if isinstance(zz, str):
                print(f"{arch_name}: {zz}")
                continue
            dumped.append(arch_name)
            for jobs, mine in ours[arch_name].items():
                edp_ours = mine["energy_j"] * 1e12 * mine["cycles"]
                ratio = zz["cpu_s"] / mine["cpu_s"]
                print(f"{arch_name} | {zz['wall_s']:.1f} | {zz['cpu_s']:.1f} | {jobs} | {mine['wall_s']:.2f} | "
                      f"{mine['cpu_s']:.2f} | {ratio:.1f}x ({ratio / TARGET:.2f} of the target) | {zz['edp']:.4g} | "
                      f"{edp_ours:.4g} | {edp_ours / zz['edp']:.3g}")
        for arch_name in dumped:
            common_model(arch_name, arches[arch_name], resnet18, ours[arch_name][2])
    if not args.no_random:
        bert_full = build("bert-base", weight_bits=8, act_bits=8)
        wins, total, worst = random_comparison(load_arch(CONFIGS["tpu_like"]),
                                               [int8(load_workload(RESNET50)), bert_full], args.time_limit)
        print(f"\nmapper vs random search with 10x its time (ResNet-50 + BERT-base on tpu_like): at least as good "
              f"on {wins}/{total} einsums ({wins / total:.0%}); worst {worst:.2%} worse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
