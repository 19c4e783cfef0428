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

Run: python -m validation.neupims
"""
from __future__ import annotations

from pathlib import Path

from accel_sim import load_arch
from accel_sim.sim.llm_requests import continuous_batch
from accel_sim.sim.npu_pim import simulate
from accel_sim.zoo import build
from validation.comparison import Comparison, comparison_table

ARCH_PATH = Path(__file__).resolve().parents[1] / "arch_configs" / "neupims_like.yaml"
PUBLISHED = {"NeuPIMs / NPU-only": 2.4, "NeuPIMs / naive NPU+PIM": 1.6}  # NeuPIMs abstract and Sec. 7
TP = 4  # NeuPIMs Sec. 6: GPT-3 7B with tensor parallelism 4
N_LAYERS = 32  # GPT-3 6.7B: 32 layers (Brown et al. 2020, Table 2.1)
POLICIES = ("npu_only", "naive", "neupims")


def gpt3_7b_tp4(batch: int, n_layers: int = 1):
    """`n_layers` GPT-3 7B decoder layers as one of four tensor-parallel devices holds them."""
    return build("gpt3-7b", phase="decode", batch=batch, n_layers=n_layers, n_heads=32 // TP, head_dim=128,
                 ffn_dim=16384 // TP, vocab=0, lm_head=False, tie_embeddings=False, kv_len=1023)


def model_makespans(batch: int, seed: int = 0, n_layers: int = N_LAYERS) -> dict[str, float]:
    """Seconds per decode iteration of each policy for an `n_layers` model, from 1- and 2-layer runs."""
    arch = load_arch(ARCH_PATH)
    contexts = continuous_batch(batch, seed=seed)
    one, two = gpt3_7b_tp4(batch, 1), gpt3_7b_tp4(batch, 2)
    out = {}
    for policy in POLICIES:
        first = simulate(arch, one, contexts, policy).makespan_s
        period = simulate(arch, two, contexts, policy).makespan_s - first
        out[policy] = first + (n_layers - 1) * period
    return out


def measure(batch: int, seed: int = 0) -> dict[str, float]:
    """Tokens/s of each policy for one decode iteration of GPT-3 7B at `batch`, and the two ratios."""
    tps = {p: batch / s for p, s in model_makespans(batch, seed).items()}
    return {**tps, "NeuPIMs / NPU-only": tps["neupims"] / tps["npu_only"],
            "NeuPIMs / naive NPU+PIM": tps["neupims"] / tps["naive"]}


def main() -> None:
    """Print quantity | published | ours | error % for batch 256 and 512, then the tokens/s behind them."""
    rows, lines = [], []
    for batch in (256, 512):
        got = measure(batch)
        rows += [Comparison(f"{name} (batch {batch})", published, got[name]) for name, published in PUBLISHED.items()]
        lines.append(f"tokens/s at batch {batch} (npu_only / naive / neupims): "
                     f"{got['npu_only']:,.0f} / {got['naive']:,.0f} / {got['neupims']:,.0f}")
    print(comparison_table(rows))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
