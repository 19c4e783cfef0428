"""The seed papers' comparisons against GPUs (issue 18 item 5): each paper's published ratio over a GPU against
ours, our engine on the paper's configuration over our GPU model on the same workload.

NeuPIMs (Heo et al., ASPLOS 2024), abstract: NeuPIMs has 3x the throughput of GPU-only (2.4x NPU-only, 1.6x naive
NPU+PIM; means over models, datasets and batch sizes). The configuration is validation/neupims.py's: GPT-3 7B with
tensor parallelism 4 (one device's 32 layers: 8 heads of 128, FFN 4096), ShareGPT-like contexts in a continuously
batched server, batch 256, on arch_configs/neupims_like.yaml. The GPU-only system is not described in any source
we could read: ../shared/targets.md gives only the ratio, the stored copies of the paper hold its abstract and
introduction, and the artifact (casys-kaist/NeuPIMs) has branches for NPU-only and NPU+PIM but no GPU baseline. So
the GPU here is a stand-in, the A100 SXM4 80GB (arch_configs/gpu/), running the same workload
(workloads/gpt3-7b-tp4-decode-b256.yaml) with every request at the batch's mean context (`neupims_gpu_tokens_per_s`:
the GPU's attention is bandwidth-bound, its time linear in the total cached positions).

FlightLLM (Zeng et al., FPGA 2024), abstract: on the Versal VHK158, "1.2x higher throughput" than an NVIDIA A100,
LLaMA2-7B at batch 1, with vLLM on the GPU. The demo (FlightLLM/flightllm_test_demo, profile/README.md and
profile/run.py) gives the configuration: the six cases of the paper's Fig. 12 (batch 1; prompt 128 or 512; 512,
1,024 or 1,536 decoded tokens), throughput = decoded tokens / decode time, the GPU on vLLM 0.1.7 in fp16
(`dtype=torch.float16`, no quantization). Its first case prints VHK158 103.5 and GPU 89.4 tokens/s; the demo does
not name its GPU, but 11.19 ms per token is below what a V100 or V100S needs to read LLaMA2-7B's fp16 weights
(validation/gpu.py), so it is an A100 (80GB SXM4 here; the memory size is not stated). Ours: the FlightLLM VHK158
config with the paper's precisions (INT4 weights, int8 activations and KV cache; validation/flightllm.py) over the
A100 in fp16, each case's decode at its mean cache length (prompt + decoded / 2).

Not a row: FlightLLM on the Alveo U280 against the V100S (6.0x energy efficiency, 1.8x cost efficiency, vLLM and
SmoothQuant at batch 1). There is no V100S config: its datasheet and the Volta whitepaper give the SMs, peaks, HBM2
(32 GB, 1,134 GB/s), L2 size, TDP and die area, but no source we could read gives its L2 bandwidth or a measured
tensor-core GEMM efficiency, and a config line without a source is not added. Cost efficiency needs prices, which
no engine models.

Run: python -m validation.versus_gpu
"""
from __future__ import annotations

import sys
from pathlib import Path
from statistics import mean

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch
from accel_sim.evaluate import evaluate
from accel_sim.sim.llm_requests import continuous_batch
from validation import flightllm, gpu, neupims
from validation.comparison import Comparison, comparison_table

NEUPIMS_BATCH = 256
NEUPIMS_VS_GPU = 3.0                                     # NeuPIMs abstract: 3x GPU-only
FLIGHTLLM_VS_A100 = 1.2                                  # FlightLLM abstract: 1.2x the A100's throughput
DEMO_CASE = (128, 512)                                   # the demo's first case: prompt, decoded tokens
DEMO_VHK158, DEMO_GPU = 103.5, 89.4                      # its decode tokens/s: VHK158 profiler, GPU (vLLM 0.1.7)
FIG12_CASES = ((128, 512), (128, 1024), (128, 1536), (512, 512), (512, 1024), (512, 1536))   # demo README


def neupims_gpu_tokens_per_s(batch: int = NEUPIMS_BATCH, seed: int = 0) -> float:
    """Tokens/s of the A100 on NeuPIMs' GPT-3 7B TP-4 decode step, every request at the batch's mean context
    (validation/neupims.py's ShareGPT-like contexts, drawn with the same seed; a context counts the new token)."""
    kv_len = round(mean(continuous_batch(batch, seed=seed))) - 1
    result = gpu.run(gpu.A100, "workloads/gpt3-7b-tp4-decode-b256.yaml",
                     (f"workload.batch={batch}", f"workload.kv_len={kv_len}"))
    return result.summary()["throughput_per_s"]


def flightllm_over_a100(prompt: int, decoded: int) -> float:
    """Our VHK158's decode tokens/s over our A100's for one Fig. 12 case, at the case's mean cache length."""
    kv_len = prompt + decoded // 2
    vhk158 = load_arch(gpu.REPO / "arch_configs/fpga/flightllm_vhk158.yaml")
    fpga_s = evaluate(vhk158, flightllm.llama("decode", kv_len), objective="latency").latency_s
    return (1 / fpga_s) / gpu.decode_tokens_per_s(1, kv_len)


def rows() -> list[Comparison]:
    """Published ratio over the GPU vs ours, for NeuPIMs and FlightLLM."""
    neupims_tps = neupims.measure(NEUPIMS_BATCH)["neupims"]
    return [
        Comparison(f"NeuPIMs / GPU-only, GPT-3 7B TP-4 decode batch {NEUPIMS_BATCH} (x, GPU: A100 stand-in)",
                   NEUPIMS_VS_GPU, neupims_tps / neupims_gpu_tokens_per_s(), "abstract: 3x"),
        Comparison("FlightLLM VHK158 / A100 decode, LLaMA2-7B batch 1, 128 + 512 tokens (x, demo)",
                   DEMO_VHK158 / DEMO_GPU, flightllm_over_a100(*DEMO_CASE), "103.5 / 89.4 tokens/s, vLLM 0.1.7"),
        Comparison("FlightLLM VHK158 / A100 decode, LLaMA2-7B batch 1, Fig. 12 cases (x, paper)",
                   FLIGHTLLM_VS_A100, mean(flightllm_over_a100(*case) for case in FIG12_CASES),
                   "abstract: 1.2x; ours the mean of 6 cases"),
    ]


def main() -> None:
    """Print the comparison table."""
    print(comparison_table(rows()))


if __name__ == "__main__":
    main()
