"""FuseMax (MICRO 2024): BERT-base attention, FLAT (3-pass) vs FuseMax (1-pass), scheduled and replayed, and a
sequence-length sweep.

Published (Nayak et al., "FuseMax", MICRO 2024, via ../shared/targets.md): on a 256 x 256 2-D array + a 256-PE
1-D array at 940 MHz, attention of BERT-base (12 heads of 64, batch 64) at 1K tokens takes 13.39 ms with FLAT
and 2.01 ms with FuseMax (6.66x); 2-D array utilization 0.125 vs 0.89.

Ours: the cascades (workloads/attention_3pass.einsum.yaml and attention_1pass.einsum.yaml, E = F = 64, M = keys)
on arch_configs/fusemax_like.yaml. The mechanisms are modelled, not fitted:
- The 64 x 12 = 768 heads are independent, and they are software-pipelined rather than run back to back: head
  i + 1 enters the arrays while head i drains (schedule/periodic.py: the CP-SAT graph scheduler on COPIES unrolled
  instances issued every II cycles, valid for any number of them), so N instances take L + (N - 1) x II. An
  instance is one head with a block of its queries: `query_rows` rows, the most whose scores (rows x tokens x
  16 bit) fit 1 / COPIES of the global buffer, so the instances in flight keep theirs on chip, but at least the
  array's 256 columns (at 1K tokens all 1,024 rows: an instance is a head).
- FuseMax's 2-D PEs run the maps and reductions too (`elementwise_ops`: exp = 6 MACs, add/sub/max 1, from the
  artifact's src/accel/proposal.py); FLAT's 2-D array runs only the contractions (src/accel/flat.py), so FLAT
  loads the same config with `engines.pe_2d.elementwise_ops={}`. The scheduler picks the array per einsum.
- The 1-pass cascade's keys are chunked as the artifact does: M0 = 256 (the PE array's width; proposal.py
  partitions M by PE_dim), M1 = M / 256.
- Intermediates stay on chip unless the scheduler spills them (schedule/onchip.py): no DRAM charge for a
  tensor the schedule keeps, a round trip for one it spills.
- Fusion inside an engine (register residency, schedule/problem.py): an intermediate whose producer and every
  consumer run on one engine, a tile of which fits that engine's registers, may stay there; the scheduler
  chooses it, and it then moves through no memory level. FuseMax's PEs have 16 x 16-bit registers (artifact
  yamls/proposal/arch-2d.yaml; its mappings/slnv.yaml keeps SLN in them, bypassing the global buffer) and
  its 1-D lanes 32 (reg_file_1d); FLAT's 1-D lanes 512 (yamls/proposal/flat_arch-1d.yaml). A contraction
  whose resident tensor is its stationary operand or output never loads or drains it: its folds run back
  to back behind one skew (engines/systolic.py).
- Pipelined folds: `stationary_buffering: double` on the 2-D array, also for os (each later fold waits
  max(T, R): its operands, or the R-cycle drain of the previous outputs through one port per column); the next
  contraction on the array may overlap a contraction's last R + C - 2 skew cycles (pipeline tails).
- FLAT's 1-D lanes chain an einsum's operators (exp(QK - GM) in one pass per element: the artifact's
  stable_softmax.py counts one pass per einsum, "Multi-cycle operations (exp, div) can be pipelined").
2-D utilization = the 2-D array's work (MACs plus the MAC-equivalents of the maps it ran) / (65,536 PEs x
latency), the artifact's definition (its 2-D array is "always fully utilized when active").

Measured at 1K tokens (quantity: published | first model | rounds 1 / 2 / 3 | round 4 | now, error now):
  FLAT latency (ms):        13.39 | 31.3 | 22.88 / 17.57 / 17.57 | 14.96 | 13.40  (+0.0 %)
  FuseMax latency (ms):      2.01 | 43.6 | 19.77 /  6.25 /  6.25 |  3.07 |  2.21  (+9.9 %)
  speedup FuseMax / FLAT:    6.66 | 0.72 |  1.16 /  2.81 /  2.81 |  4.88 |  6.06  (-9.0 %)
  FLAT 2-D utilization:     0.125 |      | 0.073 / 0.095 / 0.095 | 0.112 | 0.125  (+0.0 %)
  FuseMax 2-D utilization:   0.89 |      | 0.085 / 0.287 / 0.287 | 0.585 | 0.813  (-8.7 %)
Rounds 1-4 ran the heads back to back (latency = 768 x one head's makespan) and cut each head into 4 query blocks
so that the arrays could pipeline inside a head. Every head then paid the pipeline's fill (the first block's
softmax waiting for its scores) and drain (the last block's RNV and AV on the 1-D array, the 2-D array idle), and
every block re-read the head's K and V from DRAM (each block's BQK was DRAM-bound: 359 issue cycles for 256 of
compute). Now FLAT's period is the 1-D array's four 4,096-cycle passes (16,384 per head: the artifact's
max(memory, 2-D, 1-D)), and FuseMax's is the 2-D array's work per head (BQK 1,024 + SLNV 1,024 + the maps it
runs) plus one 510-cycle skew (R + C - 2): the contraction followed by a map (LM after BQK, or whichever map the
schedule puts after SLNV) cannot overlap its skew, a map having no pipeline tail, while the artifact charges no
skew ("2D array is always fully utilized when active"). That skew is the remaining FuseMax gap (a period of
2,702 cycles per head against the artifact's 1-D-bound 2,464).
Per einsum (`--breakdown`: one instance, one head at 1K; the artifact's from its formulas,
ARTIFACT_CYCLES_PER_HEAD): every map, reduction and 1-D einsum matches the artifact (RNV, PRM and RD split over
both arrays run faster); BQK and SLNV take 1,024 compute + 510 skew cycles each.
The sweep (1K..64K, `--sweep OUTDIR`; blocks of 1,024, 1,024, 256 and 256 queries) measures (tokens: FLAT ms /
FuseMax ms, 2-D utilization FLAT / FuseMax): 1K 13.4 / 2.21, 0.125 / 0.81; 4K 214 / 30.3, 0.125 / 0.94; 16K
3,427 / 515, 0.125 / 0.89; 64K 54,830 / 8,177, 0.125 / 0.90. FLAT stays bound by its 1-D passes; at 64K a block
of its scores (32 MiB) spills and the replay runs 15 % above the plan as the spills contend for DRAM (flagged).
FuseMax's scores never leave the PEs' registers (a register-resident tensor takes no buffer bytes), so its 2-D
array stays busy at every length.
Run: python -m validation.fusemax [--breakdown] [--sweep OUTDIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from accel_sim import load_arch
from accel_sim.io.einsum import load_einsum_file
from accel_sim.schedule.periodic import PeriodicSchedule, periodic_schedule
from accel_sim.sim.replay import replay
from validation.comparison import Comparison, comparison_table

if TYPE_CHECKING:
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.workload import Workload

REPO = Path(__file__).resolve().parents[1]
ARCH = REPO / "arch_configs" / "fusemax_like.yaml"
CASCADES = {"FLAT": REPO / "workloads" / "attention_3pass.einsum.yaml",
            "FuseMax": REPO / "workloads" / "attention_1pass.einsum.yaml"}
# flat.py: FLAT's 2-D array runs QK and AV only; stable_softmax.py: each 1-D einsum is one pipelined pass per
# element ("Multi-cycle operations (exp, div) can be pipelined"); yamls/proposal/flat_arch-1d.yaml: 1-D PEs with a
# 512-entry 16-bit register file each
ARCH_OVERRIDES = {"FLAT": ("engines.pe_2d.elementwise_ops={}", "engines.pe_1d.chained_ops=true",
                           "engines.pe_1d.lane_registers=1 KiB"), "FuseMax": ()}
HEADS = 12 * 64     # [targets.md] BERT-base: 12 heads; batch 64
KEY_CHUNK = 256     # artifact proposal.py: transformer.partition("M", "M", "N", PE_dim = 256)
SCORE_BITS = 16     # [targets.md] 16-bit datapath
COPIES = 2          # instances in flight in the periodic schedule (module docstring)
TIME_LIMIT_S = 2.0  # deterministic CP-SAT seconds per cascade
SWEEP_TOKENS = (1024, 4096, 16384, 65536)
PUBLISHED = {"FLAT latency (ms)": 13.39, "FuseMax latency (ms)": 2.01, "speedup FuseMax over FLAT": 13.39 / 2.01,
             "FLAT 2-D utilization": 0.125, "FuseMax 2-D utilization": 0.89}  # [targets.md] FuseMax section


def query_rows(tokens: int, buffer_bytes: int, array_width: int) -> int:
    """Queries per instance: the most (a power of two, at most `tokens`) whose scores fit 1 / COPIES of the buffer,
    but never fewer than the 2-D array is wide (fewer would idle its columns; the scores then spill)."""
    rows = min(tokens, array_width)
    while rows * 2 <= tokens and rows * 2 * tokens * SCORE_BITS // 8 <= buffer_bytes // COPIES:
        rows *= 2
    return rows


def sizes(name: str, tokens: int, rows: int) -> dict[str, int]:
    """Rank sizes of one instance of `name`: `rows` queries of one head against `tokens` keys (the 1-pass
    cascade's keys chunked by KEY_CHUNK)."""
    if name == "FLAT":
        return {"m": tokens, "p": rows}
    chunk = min(KEY_CHUNK, tokens)
    return {"m1": tokens // chunk, "m0": chunk, "p": rows}


def pipelined(name: str, tokens: int, time_limit_s: float) -> tuple[PeriodicSchedule, int, Arch, Workload]:
    """The periodic schedule of `name` at `tokens`, how many instances the heads make, the arch and one instance."""
    arch = load_arch(ARCH, ARCH_OVERRIDES[name])
    buffer = max(lv.capacity_bytes for lv in arch.memory if lv.capacity_bytes is not None)
    rows = query_rows(tokens, buffer, arch.engines[0].cols)
    workload = load_einsum_file(CASCADES[name], sizes(name, tokens, rows))
    instances = HEADS * (tokens // rows)
    plan = periodic_schedule(arch, workload, instances, copies=COPIES, time_limit_s=time_limit_s)
    return plan, instances, arch, workload


def _first_copy(name: str) -> str | None:
    """The instance's einsum or tensor name behind copy 0's 'name#0' (periodic.replicate_problem), else None."""
    base, _, copy = name.rpartition("#")
    return base if copy == "0" else None


def measure(name: str, tokens: int = 1024, time_limit_s: float = TIME_LIMIT_S) -> dict[str, float]:
    """Latency (ms, all heads), 2-D utilization, period, replay/schedule ratio and solver status of one cascade."""
    plan, instances, arch, workload = pipelined(name, tokens, time_limit_s)
    array = arch.engines[0]  # the 2-D array (first engine of the config)
    work = 0.0
    for slot in plan.schedule.slots:
        if slot.engine == array.name and _first_copy(slot.einsum):
            einsum = workload.einsum(_first_copy(slot.einsum))
            work += einsum.macs or einsum.iteration_points * array.elementwise_cycles_per_point(einsum)
    cycles = plan.makespan_cycles(instances)
    trace = replay(plan.schedule)
    return {"latency_ms": cycles / arch.clock_hz * 1e3,
            "util_2d": instances * work / (array.peak_macs_per_cycle() * cycles),
            "period_cycles": plan.period_cycles, "instance_cycles": plan.instance_cycles,
            "replay_over_schedule": trace.replay_over_schedule, "status": plan.schedule.status,
            "spills": sum(b.placement == "spill" for b in plan.schedule.buffers if _first_copy(b.tensor))}


# The artifact's cycles per head for each of our einsums at 1K tokens, from its formulas: proposal.py compute_cost
# (MAC-equivalents per point: QK/SLNV mac 1, LM/RM max 1, SLN/PRM mac 6 + add 1, SLD/RD/RNV add 1, SPD/SPNV mac 1,
# AV divide 1) x points / PEs (2-D: 65,536 for QK, LM, SLN, SLD, SLNV, `einsums_2d`; 1-D: 256), and for FLAT
# stable_softmax.py compute_cost (M, SN, SD, A: one pipelined pass each) over 256 lanes. Ours folds SPD into RD
# and SPNV into RNV (attention_1pass.einsum.yaml), so those rows add the artifact's two. FLAT's QK and AV are
# Timeloop mappings without a closed form in the artifact (flat.py); only their bound is known: max(memory, 2-D,
# 1-D) = 16,384 per head there, so each is at most that.
ARTIFACT_CYCLES_PER_HEAD = {
    "FuseMax": {"BQK": 1024, "LM": 16, "RM": 16, "SLN": 112, "SLD": 16, "SLNV": 1024, "PRM": 112, "RD": 32,
                "RNV": 2048, "AV": 256},
    "FLAT": {"QK": None, "GM": 4096, "SN": 4096, "SD": 4096, "A": 4096, "AV": None}}


def breakdown(name: str, tokens: int = 1024, time_limit_s: float = TIME_LIMIT_S) -> list[dict[str, object]]:
    """Per einsum of one instance of `name` (one head at 1K tokens): engine, our cycles (compute, fill/drain, stall,
    the pipeline tail a successor may overlap) and the artifact's cycles per head (ARTIFACT_CYCLES_PER_HEAD)."""
    plan, _, _, workload = pipelined(name, tokens, time_limit_s)
    sched = plan.schedule
    out = []
    for einsum in workload.einsums:
        slot = sched.slot(f"{einsum.name}#0")
        option = next(o for o in sched.problem.task(slot.einsum).options if o.engine == slot.engine)
        cost = option.variant(frozenset(slot.resident)).cost
        out.append({"einsum": einsum.name, "engines": slot.engine, "ours": slot.end - slot.start,
                    "compute": cost.compute_cycles, "fill_drain": cost.fill_drain_cycles, "stall": cost.stall_cycles,
                    "tail": slot.tail, "artifact": ARTIFACT_CYCLES_PER_HEAD[name].get(einsum.name)})
    return out


def breakdown_text(name: str, rows_: list[dict[str, object]]) -> str:
    """The breakdown as a fixed-width table."""
    header = (f"{'einsum':8} {'engine':8} {'ours':>7} {'compute':>8} {'fill/drn':>8} {'stall':>7} {'tail':>6} "
              f"{'artifact':>8}")
    lines = [f"{name}: cycles of one instance", header]
    for r in rows_:
        art = "-" if r["artifact"] is None else f"{r['artifact']:,}"
        lines.append(f"{r['einsum']:8} {r['engines']:8} {r['ours']:>7,} {r['compute']:>8,.0f} "
                     f"{r['fill_drain']:>8,.0f} {r['stall']:>7,.0f} {r['tail']:>6,} {art:>8}")
    return "\n".join(lines)


def rows(measured: dict[str, dict[str, float]] | None = None) -> list[Comparison]:
    """Published vs ours for every FuseMax quantity at 1K tokens (from `measured` {cascade: measure(...)} if given)."""
    measured = measured or {name: measure(name) for name in CASCADES}
    flat, fusemax = measured["FLAT"], measured["FuseMax"]
    ours = {"FLAT latency (ms)": flat["latency_ms"], "FuseMax latency (ms)": fusemax["latency_ms"],
            "speedup FuseMax over FLAT": flat["latency_ms"] / fusemax["latency_ms"],
            "FLAT 2-D utilization": flat["util_2d"], "FuseMax 2-D utilization": fusemax["util_2d"]}
    return [Comparison(q, PUBLISHED[q], ours[q]) for q in PUBLISHED]


def sweep(tokens: tuple[int, ...] = SWEEP_TOKENS, time_limit_s: float = TIME_LIMIT_S):  # -> pd.DataFrame
    """One row per (cascade, tokens): latency (ms), 2-D utilization, period, spills, replay/schedule, status."""
    import pandas as pd

    records = [{"cascade": name, "tokens": n, **measure(name, n, time_limit_s)} for n in tokens for name in CASCADES]
    return pd.DataFrame(records)


def plot_sweep(frame, out_dir: Path) -> list[Path]:
    """Latency and 2-D utilization against sequence length, one PNG each; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for column, label, log in (("latency_ms", "latency (ms, 768 heads)", True),
                               ("util_2d", "2-D array utilization", False)):
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, group in frame.groupby("cascade"):
            ax.plot(group["tokens"], group[column], marker="o", label=name)
        ax.set_xscale("log", base=2)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(label)
        ax.set_title(f"BERT-base attention on FuseMax-like: {label}")
        ax.grid(True, which="major", alpha=0.4)
        ax.legend()
        paths.append(_saved(fig, out_dir / f"fusemax_sweep_{column}.png"))
    return paths


def _saved(fig, path: Path) -> Path:  # fig: matplotlib Figure
    """Lay `fig` out, write it to `path` as PNG, free it; returns the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_timelines(out_dir: Path, tokens: int = 1024, time_limit_s: float = TIME_LIMIT_S) -> list[Path]:
    """The replayed timeline (Gantt, utilization, buffer) of the COPIES pipelined instances of each cascade."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in CASCADES:
        plan = pipelined(name, tokens, time_limit_s)[0]
        fig = replay(plan.schedule).plot_timeline()
        top = fig.axes[0]
        top.set_title(f"{name} at {tokens} tokens: {plan.copies} instances issued every {plan.period_cycles:,} "
                      f"cycles\n{top.get_title()}")
        paths.append(_saved(fig, out_dir / f"fusemax_timeline_{name}.png"))
    return paths


def main(argv: list[str] | None = None) -> None:
    """Print quantity | published | ours | error %; with --sweep OUTDIR also write the sweep's CSV and PNGs and the
    1K timelines."""
    parser = argparse.ArgumentParser(prog="python -m validation.fusemax")
    parser.add_argument("--sweep", type=Path, metavar="OUTDIR", help="sweep 1K..64K tokens into OUTDIR")
    parser.add_argument("--breakdown", action="store_true", help="per-einsum cycles per head, ours vs the artifact")
    args = parser.parse_args(argv)
    if args.breakdown:
        for name in CASCADES:
            print(breakdown_text(name, breakdown(name)))
            print()
    print(comparison_table(rows()))
    if args.sweep is not None:
        frame = sweep()
        args.sweep.mkdir(parents=True, exist_ok=True)
        frame.to_csv(args.sweep / "fusemax_sweep.csv", index=False)
        print(frame.to_string(index=False))
        for path in plot_sweep(frame, args.sweep) + plot_timelines(args.sweep):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
