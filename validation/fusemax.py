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

At 1K tokens (published | ours): FLAT 13.39 | 13.40 ms, FuseMax 2.01 | 2.21 ms, speedup 6.66 | 6.06, 2-D
utilization FLAT 0.125 | 0.125, FuseMax 0.89 | 0.81. FLAT's period is the 1-D array's four 4,096-cycle passes per
head (16,384: the artifact's max(memory, 2-D, 1-D)); FuseMax's is the 2-D array's work per head (BQK 1,024 + SLNV
1,024 + the maps it runs) plus one 510-cycle skew (R + C - 2): a contraction followed by a map cannot overlap its
skew, a map having no pipeline tail, while the artifact charges none ("2D array is always fully utilized when
active"). That skew is the remaining FuseMax gap (2,702 cycles per head against the artifact's 1-D-bound 2,464).
`--breakdown` lists one instance's einsums beside the artifact's cycles per head (ARTIFACT_CYCLES_PER_HEAD).
The sweep (1K..64K, `--sweep OUTDIR`) shows FLAT bound by its 1-D passes at every length (at 64K a block of its
scores spills and the replay runs above the plan, flagged); FuseMax's scores stay in the PEs' registers.

Every figure comes from `accel_sim.evaluate` with the shipped arch and cascades and the `execution: pipelined`
section below (`accel-sim run` with the same `--set` assignments gives the same numbers: validation/README.md).
Run: python -m validation.fusemax [--breakdown] [--sweep OUTDIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim.evaluate import Result, evaluate
from accel_sim.io.load import load_arch, load_workload
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


def overrides(name: str, tokens: int, time_limit_s: float = TIME_LIMIT_S) -> tuple[list[str], list[str]]:
    """The `--set` assignments of `name` at `tokens`: (arch, workload), the workload's without 'workload.'."""
    base = load_arch(ARCH)
    buffer = max(lv.capacity_bytes for lv in base.memory if lv.capacity_bytes is not None)
    rows = query_rows(tokens, buffer, base.engines[0].cols)
    execution = (f"execution={{kind: pipelined, instances: {HEADS * (tokens // rows)}, rank: head, "
                 f"copies: {COPIES}, time_limit_s: {time_limit_s:g}}}")
    return [*ARCH_OVERRIDES[name], execution], [f"ranks.{r}={n}" for r, n in sizes(name, tokens, rows).items()]


def pipelined(name: str, tokens: int, time_limit_s: float = TIME_LIMIT_S) -> Result:
    """`accel-sim run` of `name` at `tokens`: every head, one instance per block of queries, pipelined."""
    arch_sets, workload_sets = overrides(name, tokens, time_limit_s)
    return evaluate(load_arch(ARCH, arch_sets), load_workload(CASCADES[name], overrides=workload_sets), "latency")


def measure(name: str, tokens: int = 1024, time_limit_s: float = TIME_LIMIT_S) -> dict[str, float]:
    """Latency (ms, all heads), 2-D utilization, period, replay/schedule ratio and solver status of one cascade."""
    result = pipelined(name, tokens, time_limit_s)
    trace, arch = result.trace, result.arch
    array = arch.engines[0]  # the 2-D array (first engine of the config)
    work = 0.0
    for placed in result.einsums:
        if placed.engine == array.name:
            einsum = result.workload.einsum(placed.einsum)
            work += einsum.macs or einsum.iteration_points * array.elementwise_cycles_per_point(einsum)
    return {"latency_ms": result.latency_s * 1e3,
            "util_2d": trace.instances * work / (array.peak_macs_per_cycle() * result.cycles),
            "period_cycles": trace.detail.period_cycles, "instance_cycles": trace.detail.instance_cycles,
            "replay_over_schedule": trace.replay_over_schedule,
            "status": trace.policy.removeprefix("CP-SAT ").upper(),
            "spills": sum(b.placement == "spill" for b in trace.buffers if b.tensor.endswith("#0"))}


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
    """Per einsum of one instance of `name` (one head at 1K tokens): engine, our cycles as replayed (compute,
    fill/drain, stall) and the artifact's cycles per head (ARTIFACT_CYCLES_PER_HEAD)."""
    result = pipelined(name, tokens, time_limit_s)
    played = {s.label: s for s in result.trace.spans if s.kind == "einsum"}
    out = []
    for placed in result.einsums:
        span, cost = played[f"{placed.einsum}#0"], placed.cost
        out.append({"einsum": placed.einsum, "engines": placed.engine, "ours": round(span.end - span.start),
                    "compute": cost.compute_cycles, "fill_drain": cost.fill_drain_cycles, "stall": cost.stall_cycles,
                    "artifact": ARTIFACT_CYCLES_PER_HEAD[name].get(placed.einsum)})
    return out


def breakdown_text(name: str, rows_: list[dict[str, object]]) -> str:
    """The breakdown as a fixed-width table."""
    header = f"{'einsum':8} {'engine':8} {'ours':>7} {'compute':>8} {'fill/drn':>8} {'stall':>7} {'artifact':>8}"
    lines = [f"{name}: cycles of one instance", header]
    for r in rows_:
        art = "-" if r["artifact"] is None else f"{r['artifact']:,}"
        lines.append(f"{r['einsum']:8} {r['engines']:8} {r['ours']:>7,} {r['compute']:>8,.0f} "
                     f"{r['fill_drain']:>8,.0f} {r['stall']:>7,.0f} {art:>8}")
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
        trace = pipelined(name, tokens, time_limit_s).trace
        fig = trace.plot_timeline()
        top = fig.axes[0]
        top.set_title(f"{name} at {tokens} tokens: {trace.detail.copies} instances issued every "
                      f"{trace.detail.period_cycles:,} cycles\n{top.get_title()}")
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
