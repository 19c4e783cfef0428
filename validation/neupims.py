"""NeuPIMs (Heo et al., ASPLOS 2024): decode throughput of NeuPIMs vs NPU-only and vs naive NPU+PIM.

Setup (../shared/targets.md, NeuPIMs section; artifact casys-kaist/NeuPIMs): arch_configs/neupims_like.yaml;
GPT-3 7B (32 layers, 32 heads, d_model 4096; Brown et al. 2020, Table 2.1) with tensor parallelism 4, so one
device holds 8 heads of 128, FFN 16384 / 4 = 4096 and the matching weight shards of every layer (Megatron
column/row split; the all-reduce is not modelled); no embedding or LM head. Requests: ShareGPT-like lengths
(sim/llm_requests.py) in a continuously batched server at steady state, batch 256 and 512. Published:
NeuPIMs is 2.4x NPU-only and 1.6x naive NPU+PIM (abstract, Sec. 7 / Fig. 12; averages over models, datasets
and batch sizes).

One decode iteration of the whole 32-layer model: sub-batch interleaving carries across layers (sub-batch 1's
layer-l attention on PIM overlaps sub-batch 0's layer-l FFN and layer-(l+1) QKV on the NPU), so the pipeline
fills and drains once per iteration, not once per layer. Every policy's makespan is affine in the layer count
(identical layers, one periodic schedule; tests/unit/sim checks it), so we simulate 1 and 2 layers and take
makespan(32) = makespan(1) + 31 * (makespan(2) - makespan(1)) instead of simulating 32 layers (30x slower).

Every makespan comes from `accel_sim.evaluate` on the shipped arch and the shipped decode recipe
(workloads/gpt3-7b-tp4-decode-b256.yaml) with `--set`-style overrides of the execution section (policy, ShareGPT
contexts) and the recipe (batch, layers); validation/README.md gives the `accel-sim run` commands.

Run: python -m validation.neupims
"""
from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_arch, load_workload
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
ARCH_PATH = REPO / "arch_configs" / "neupims_like.yaml"
RECIPE = REPO / "workloads" / "gpt3-7b-tp4-decode-b256.yaml"  # GPT-3 7B, TP 4: one device's 32 layers
PUBLISHED = {"NeuPIMs / NPU-only": 2.4, "NeuPIMs / naive NPU+PIM": 1.6}  # NeuPIMs abstract and Sec. 7
N_LAYERS = 32  # GPT-3 6.7B: 32 layers (Brown et al. 2020, Table 2.1)
POLICIES = ("npu_only", "naive", "neupims")


def makespan_s(policy: str, batch: int, n_layers: int, seed: int = 0) -> float:
    """Seconds of one decode iteration of `n_layers` layers at `batch` under `policy`, ShareGPT-like contexts."""
    arch = load_arch(ARCH_PATH, [f"execution={{kind: npu_pim, policy: {policy}, requests: sharegpt, seed: {seed}}}"])
    workload = load_workload(RECIPE, overrides=[f"batch={batch}", f"n_layers={n_layers}"])
    return evaluate(arch, workload).latency_s


def model_makespans(batch: int, seed: int = 0, n_layers: int = N_LAYERS) -> dict[str, float]:
    """Seconds per decode iteration of each policy for an `n_layers` model, from 1- and 2-layer runs."""
    out = {}
    for policy in POLICIES:
        first = makespan_s(policy, batch, 1, seed)
        period = makespan_s(policy, batch, 2, seed) - first
        out[policy] = first + (n_layers - 1) * period
    return out


def measure(batch: int, seed: int = 0) -> dict[str, float]:
    """Tokens/s of each policy for one decode iteration of GPT-3 7B at `batch`, and the two ratios."""
    return dict(_measured(batch, seed))


@cache
def _measured(batch: int, seed: int) -> dict[str, float]:
    """`measure`, computed once per process (about 5 s a batch): validation/versus_gpu.py reuses batch 256."""
    tps = {p: batch / s for p, s in model_makespans(batch, seed).items()}
    return {**tps, "NeuPIMs / NPU-only": tps["neupims"] / tps["npu_only"],
            "NeuPIMs / naive NPU+PIM": tps["neupims"] / tps["naive"]}


BATCHES = (256, 512)


def rows(measured: dict[int, dict[str, float]] | None = None) -> list[Comparison]:
    """Published vs ours for both ratios at batch 256 and 512 (from `measured` {batch: measure(batch)} if given)."""
    measured = measured or {batch: measure(batch) for batch in BATCHES}
    return [Comparison(f"{name} (batch {batch})", published, measured[batch][name])
            for batch in BATCHES for name, published in PUBLISHED.items()]


def main() -> None:
    """Print quantity | published | ours | error % for batch 256 and 512, then the tokens/s behind them."""
    measured = {batch: measure(batch) for batch in BATCHES}
    print(comparison_table(rows(measured)))
    for batch, got in measured.items():
        print(f"tokens/s at batch {batch} (npu_only / naive / neupims): "
              f"{got['npu_only']:,.0f} / {got['naive']:,.0f} / {got['neupims']:,.0f}")


if __name__ == "__main__":
    main()
