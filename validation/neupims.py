"""NeuPIMs (Heo et al., ASPLOS 2024): decode throughput of NeuPIMs vs NPU-only and vs naive NPU+PIM.

Setup (../shared/targets.md, NeuPIMs section; artifact casys-kaist/NeuPIMs): arch_configs/neupims_like.yaml;
GPT-3 7B (32 heads, d_model 4096) with tensor parallelism 4, so one device holds 8 heads of 128, FFN
16384 / 4 = 4096 and the matching weight shards (Megatron column/row split; the all-reduce is not modelled);
one decoder layer, as the artifact's configs/model_configs/gpt3-7B.json (model_n_layer 1) simulates; no
embedding or LM head. Requests: ShareGPT-like lengths (sim/llm_requests.py) in a continuously batched server
at steady state, batch 256 and 512. Published: NeuPIMs is 2.4x NPU-only and 1.6x naive NPU+PIM (abstract,
Sec. 7 / Fig. 12; averages over models, datasets and batch sizes).

Run: python -m validation.neupims
"""
from __future__ import annotations

from pathlib import Path

from accel_sim import load_arch
from accel_sim.sim.llm_requests import continuous_batch
from accel_sim.sim.npu_pim import simulate
from accel_sim.zoo import build

ARCH_PATH = Path(__file__).resolve().parents[1] / "arch_configs" / "neupims_like.yaml"
PUBLISHED = {"NeuPIMs / NPU-only": 2.4, "NeuPIMs / naive NPU+PIM": 1.6}  # NeuPIMs abstract and Sec. 7
TP = 4  # NeuPIMs Sec. 6: GPT-3 7B with tensor parallelism 4


def gpt3_7b_tp4_layer(batch: int):
    """One GPT-3 7B decoder layer as one of four tensor-parallel devices holds it."""
    return build("gpt3-7b", phase="decode", batch=batch, n_layers=1, n_heads=32 // TP, head_dim=128,
                 ffn_dim=16384 // TP, vocab=0, lm_head=False, tie_embeddings=False, kv_len=1023)


def measure(batch: int, seed: int = 0) -> dict[str, float]:
    """Tokens/s of each policy for one decode iteration at `batch`, and the two ratios."""
    arch = load_arch(ARCH_PATH)
    workload = gpt3_7b_tp4_layer(batch)
    contexts = continuous_batch(batch, seed=seed)
    tps = {p: simulate(arch, workload, contexts, p).tokens_per_s for p in ("npu_only", "naive", "neupims")}
    return {**tps, "NeuPIMs / NPU-only": tps["neupims"] / tps["npu_only"],
            "NeuPIMs / naive NPU+PIM": tps["neupims"] / tps["naive"]}


def main() -> None:
    """Print quantity | published | ours | error % for batch 256 and 512."""
    print(f"{'quantity':42s} | published | ours  | error %")
    for batch in (256, 512):
        got = measure(batch)
        for name, published in PUBLISHED.items():
            ours = got[name]
            print(f"{name + f' (batch {batch})':42s} | {published:9.2f} | {ours:5.2f} | "
                  f"{100 * (ours - published) / published:+7.1f}")
        print(f"{'  tokens/s npu_only / naive / neupims':42s} |           | "
              f"{got['npu_only']:,.0f} / {got['naive']:,.0f} / {got['neupims']:,.0f}")


if __name__ == "__main__":
    main()
