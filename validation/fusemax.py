"""FuseMax (MICRO 2024): BERT-base attention, FLAT (3-pass) vs FuseMax (1-pass), scheduled and replayed, and a
sequence-length sweep.

Published (Nayak et al., "FuseMax", MICRO 2024, via ../shared/targets.md): on a 256 x 256 2-D array + a 256-PE
1-D array at 940 MHz, attention of BERT-base (12 heads of 64, batch 64) at 1K tokens takes 13.39 ms with FLAT
and 2.01 ms with FuseMax (6.66x); 2-D array utilization 0.125 vs 0.89.

Ours: one head (workloads/attention_3pass.einsum.yaml and attention_1pass.einsum.yaml, E = F = 64, M = P =
tokens) on arch_configs/fusemax_like.yaml. The mechanisms are modelled, not fitted:
- FuseMax's 2-D PEs run the maps and reductions too (`elementwise_ops`: exp = 6 MACs, add/sub/max 1, from the
  artifact's src/accel/proposal.py); FLAT's 2-D array runs only the contractions (src/accel/flat.py), so FLAT
  loads the same config with `engines.pe_2d.elementwise_ops={}`. The scheduler picks the array per einsum.
- The 1-pass cascade's keys are chunked as the artifact does: M0 = 256 (the PE array's width; proposal.py
  partitions M by PE_dim), M1 = M / 256.
- Intermediates stay on chip unless the scheduler spills them (schedule/onchip.py): no DRAM charge for a
  tensor the schedule keeps, a round trip for one it spills.
- Both cascades are cut into ROW_BLOCKS blocks of queries (schedule/tiling.split_rank on p): the CP-SAT graph
  scheduler then overlaps block i + 1's contractions on the 2-D array with block i's softmax on the other,
  and the simpy replay plays the result; nothing assumes the pipelining.
- Fusion inside an engine (register residency, schedule/problem.py): an intermediate whose producer and every
  consumer run on one engine, a tile of which fits that engine's registers, may stay there; the scheduler
  chooses it, and it then moves through no memory level. FuseMax's PEs have 16 x 16-bit registers (artifact
  yamls/proposal/arch-2d.yaml; its mappings/slnv.yaml keeps SLN in them, bypassing the global buffer) and
  its 1-D lanes 32 (reg_file_1d); FLAT's 1-D lanes 512 (yamls/proposal/flat_arch-1d.yaml). A contraction
  whose resident tensor is its stationary operand or output never loads or drains it: its folds run back
  to back behind one skew (engines/systolic.py).
- Pipelined folds: `stationary_buffering: double` on the 2-D array, now for os too (each later fold waits
  max(T, R): its operands, or the R-cycle drain of the previous outputs through one port per column).
- FLAT's 1-D lanes chain an einsum's operators (exp(QK - GM) in one pass per element: the artifact's
  stable_softmax.py counts one pass per einsum, "Multi-cycle operations (exp, div) can be pipelined").
The 64 x 12 = 768 heads are independent and identical and run back to back: latency = 768 x one head.
2-D utilization = the 2-D array's work (MACs plus the MAC-equivalents of the maps it ran) / (65,536 PEs x
makespan), the artifact's definition (its 2-D array is "always fully utilized when active").

Measured at 1K tokens (quantity: published | first model | round 1 | now, error now):
  FLAT latency (ms):        13.39 | 31.3 | 22.88 | 17.57  (+31 %)
  FuseMax latency (ms):      2.01 | 43.6 | 19.77 |  6.25  (+211 %)
  speedup FuseMax / FLAT:    6.66 | 0.72 |  1.16 |  2.81  (-58 %)
  FLAT 2-D utilization:     0.125 |      | 0.073 | 0.095  (-24 %)
  FuseMax 2-D utilization:   0.89 |      | 0.085 | 0.287  (-68 %)
The 20 % bounds are not met. The artifact's own model explains the published numbers exactly: FuseMax's
latency is the 1-D array's busy time (RM, PRM at 7 MAC-equivalents, SPD, SPNV, RD, RNV, AV: 2,464 cycles per
head = 2.01 ms) with the 2-D array's 2,192 cycles (1,024 for QK, 1,024 for SLNV, at full utilization)
hidden under it (proposal.py eval), and FLAT's is four 1-D passes of M x P / 256 = 4,096 cycles per head
(16,384 = 13.39 ms; flat.py takes max(memory, 2-D, 1-D)). Remaining gaps, and why (nothing is fitted):
- Skew per contraction: each 2-D contraction of a block pays the array's R + C - 2 = 510-cycle skew once
  (BQK and SLNV: 4 folds x 64 + 510 = 766 each per block), 4,080 cycles per head over 4 blocks, which the
  artifact's Timeloop model does not charge. A real array would overlap one einsum's skew with the next's
  operands (as it overlaps folds); modelling that needs engine state across einsums (the next einsum on the
  array), which the per-einsum cost model does not have.
- FLAT's QK and AV read and write through the 512 B/cycle global buffer (2,688 cycles per block instead of
  1,342 compute + skew); the artifact bounds only DRAM bandwidth. The buffer bandwidth is our reading of the
  artifact's L3 row width (4,096 bits) and is kept.
- More query blocks add a skew per contraction per block: 1 block gives FuseMax 6,336 cycles (optimal), 4
  give 7,651 (CP-SAT feasible, gap 0.74), 8 give 12,482; FLAT is best at 4 (21,504; 1: 32,260, 2: 24,580, 8:
  27,568). ROW_BLOCKS stays 4 for both. FuseMax's own pipeline runs over key chunks (m1), a recurrence rank
  split_rank cannot cut.
The sweep (1K..64K, `--sweep OUTDIR`) spills the scores from 4K tokens on (a block of scores exceeds 16 MiB)
and the replay then runs above the plan where spills contend for DRAM (flagged).
Run: python -m validation.fusemax [--sweep OUTDIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from accel_sim import load_arch
from accel_sim.io.einsum import load_einsum_file
from accel_sim.schedule.cpsat import schedule
from accel_sim.schedule.tiling import split_rank
from accel_sim.sim.replay import replay
from validation.comparison import Comparison, comparison_table

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
ROW_BLOCKS = 4      # query blocks the scheduler pipelines (module docstring: a tractability choice)
TIME_LIMIT_S = 2.0  # deterministic CP-SAT seconds per cascade
SWEEP_TOKENS = (1024, 4096, 16384, 65536)
PUBLISHED = {"FLAT latency (ms)": 13.39, "FuseMax latency (ms)": 2.01, "speedup FuseMax over FLAT": 13.39 / 2.01,
             "FLAT 2-D utilization": 0.125, "FuseMax 2-D utilization": 0.89}  # [targets.md] FuseMax section


def sizes(name: str, tokens: int) -> dict[str, int]:
    """Rank sizes of one head of `name` at `tokens` (keys chunked by KEY_CHUNK in the 1-pass cascade)."""
    if name == "FLAT":
        return {"m": tokens, "p": tokens}
    chunk = min(KEY_CHUNK, tokens)
    return {"m1": tokens // chunk, "m0": chunk, "p": tokens}


def measure(name: str, tokens: int = 1024, time_limit_s: float = TIME_LIMIT_S) -> dict[str, float]:
    """Latency (ms, all heads), 2-D utilization, replay/schedule ratio and solver status of one cascade."""
    arch = load_arch(ARCH, ARCH_OVERRIDES[name])
    workload = split_rank(load_einsum_file(CASCADES[name], sizes(name, tokens)), "p", ROW_BLOCKS)
    sched = schedule(arch, workload, "latency", time_limit_s=time_limit_s, addresses=False)
    trace = replay(sched)
    array = arch.engines[0]  # the 2-D array (first engine of the config)
    work = 0.0
    for slot in sched.slots:
        if slot.engine == array.name:
            einsum = workload.einsum(slot.einsum)
            work += einsum.macs or einsum.iteration_points * array.elementwise_cycles_per_point(einsum)
    head_cycles = trace.makespan_cycles
    return {"latency_ms": HEADS * head_cycles / arch.clock_hz * 1e3,
            "util_2d": work / (array.peak_macs_per_cycle() * head_cycles),
            "replay_over_schedule": trace.replay_over_schedule, "status": sched.status,
            "spills": sum(b.placement == "spill" for b in sched.buffers)}


def rows() -> list[Comparison]:
    """Published vs ours for every FuseMax quantity at 1K tokens."""
    flat, fusemax = measure("FLAT"), measure("FuseMax")
    ours = {"FLAT latency (ms)": flat["latency_ms"], "FuseMax latency (ms)": fusemax["latency_ms"],
            "speedup FuseMax over FLAT": flat["latency_ms"] / fusemax["latency_ms"],
            "FLAT 2-D utilization": flat["util_2d"], "FuseMax 2-D utilization": fusemax["util_2d"]}
    return [Comparison(q, PUBLISHED[q], ours[q]) for q in PUBLISHED]


def sweep(tokens: tuple[int, ...] = SWEEP_TOKENS, time_limit_s: float = TIME_LIMIT_S):  # -> pd.DataFrame
    """One row per (cascade, tokens): latency (ms), 2-D utilization, spills, replay/schedule, solver status."""
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
        fig.tight_layout()
        path = out_dir / f"fusemax_sweep_{column}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    """Print quantity | published | ours | error %; with --sweep OUTDIR also write the sweep's CSV and PNGs."""
    parser = argparse.ArgumentParser(prog="python -m validation.fusemax")
    parser.add_argument("--sweep", type=Path, metavar="OUTDIR", help="sweep 1K..64K tokens into OUTDIR")
    args = parser.parse_args(argv)
    print(comparison_table(rows()))
    if args.sweep is not None:
        frame = sweep()
        args.sweep.mkdir(parents=True, exist_ok=True)
        frame.to_csv(args.sweep / "fusemax_sweep.csv", index=False)
        print(frame.to_string(index=False))
        for path in plot_sweep(frame, args.sweep):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
