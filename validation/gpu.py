"""GPUs (issue 18): GEMM throughput, FlashAttention-2's forward pass and Llama-2-7B decode on the A100 and H100
configs (arch_configs/gpu/), against published measurements.

Every figure comes from `accel_sim.evaluate` on shipped files with `--set`-style assignments (`run` below splits
them exactly as `accel-sim run --set` does; validation/README.md lists the commands).

Published figures, by group (targets: GEMM and attention within 15 %, decode within 20 %):
- GEMM, A100 SXM4 80GB [LC]: torch.matmul (bf16) wall times over M (N = K = 12288) and over N = K (M = 8192),
  PrincetonUniversity/LLMCompass ae/figure5/ab/real_hardware/matmul_A100.csv. The timings include a per-call host
  overhead of about 21 us (../shared/targets.md), so these runs set the launch overhead to 21 us
  (`CALL_OVERHEAD`). The point M = 16384 calibrated the config's tensor efficiency and is left out.
- GEMM, H100 SXM5 80GB [WH]: cuBLAS fp16 (fp32 accumulation) at 2048^3, 4096^3 and 8192^3,
  waynehacking8/blackwell-tensorcore-kernels results/bench_sm90a.csv. The config's tensor efficiency was set from
  the same repository's summary (761.7 TFLOPS at 8192^3), so 8192^3 is not independent.
- FlashAttention-2 forward [FA2]: "up to 230 TFLOPs/s" on an A100 80GB (Dao, FlashAttention-2, ICLR 2024,
  Sec. 4.1; ../shared/targets.md), reached at head dim 128 and the longest sequences, against ours at 16k tokens.
  H100 80GB SXM5 [FA3]: FlashAttention-2's forward speed in Shah et al., "FlashAttention-3", 2024, Fig. 5
  (non-causal, head dims 64 and 128, sequence 512 to 16k; bar labels as transcribed by
  subtext.edge.nugit.net). Batch x heads = (16k / N) x (2048 / d), as in the FA2 benchmark.
- Decode, A100 80GB [LD]: LMDeploy v0.1.0a1 (TurboMind), Llama-2-7B fp16, static inference with a 1-token prompt
  and 128 output tokens (docs/en/benchmark/a100_fp16.md): throughput (output tokens/s) at batch 1, 16, 32, 64,
  and the median per-token latency (the 50 % column: 9, 10, 11, 12 ms), batch / latency tokens/s. The KV cache
  then holds 64 positions on average (`DECODE_KV`). [GF] gpt-fast on an A100 80GB power-limited to 330 W, bf16,
  batch 1: 104.9 tokens/s (../shared/targets.md; its 200 generated tokens average 100 cached positions).

Modelled mechanisms (engines/gpu.py): CTA tiles and split-K chosen by the mapper, waves over the SMs and the
tail wave, occupancy, L2 reuse, achievable bandwidths, launch and drain per kernel; FlashAttention as the 1-pass
cascade (workloads/flash_attention.einsum.yaml) under `execution: scheduled`, which keeps the score and
probability tiles in the SMs' registers and shared memory (GpuEngine.resident_cost: no HBM traffic, one launch)
and runs the two GEMMs and the softmax maps one after another, as FA2 does (FA3, Sec. 3.1: in FA2 the softmax of
a block waits for its QK^T and the PV GEMM for the softmax).

Known gaps (EXPECTED_MISSES names the mechanism of each, and tests/validation/test_gpu.py marks them xfail):
- H100 FlashAttention-2 runs 15-32 % above the published speeds: FA2's kernels are written for sm80 and issue
  mma.sync, which on Hopper does not reach the wgmma rate the config's tensor efficiency describes (FA3's
  abstract: FA2 reaches 35 % of the H100's peak); the engine has one tensor rate per operand width, not one per
  instruction family.
- A100 GEMMs whose kernels take a few microseconds (N = K <= 512 at M = 8192): the measured floor is 29.6 us at
  8192 x 64 x 64, so the per-call overhead there is about 28 us, not the 21 us of targets.md; the kernel model
  is not what these points measure.
- LMDeploy's static throughput at batch 32 and 64 is well below its own median token latency (2,136.73 vs
  32 / 11 ms = 2,909 tokens/s; 4,154.81 vs 5,333): per-step serving overhead (sampling, request bookkeeping,
  first-token waits) that a kernel model does not contain; the median-latency figures are within 20 %.

Run: python -m validation.gpu
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim.evaluate import Result, evaluate
from accel_sim.io.load import load_arch, load_workload, split_overrides
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
A100 = "arch_configs/gpu/a100_sxm4_80gb.yaml"
H100 = "arch_configs/gpu/h100_sxm5_80gb.yaml"
GEMM = "workloads/gemm_fp16.einsum.yaml"
FLASH = "workloads/flash_attention.einsum.yaml"
DECODE = "workloads/llama2-7b-decode.yaml"

CALL_OVERHEAD = "engines.sm.launch_overhead=21 us"   # [LC] timings: per-call overhead (../shared/targets.md)
LLMCOMPASS_M = {64: 101.7124, 128: 193.0114, 256: 242.7090, 512: 252.7351, 1024: 257.9115, 2048: 262.2263,
                4096: 277.4929, 8192: 286.9431, 32768: 279.2160}          # M x 12288 x 12288 (16384: calibration)
LLMCOMPASS_N = {64: 2.2700, 128: 8.6608, 256: 30.1244, 512: 91.2121, 1024: 185.2380, 2048: 243.8497,
                4096: 269.2169, 8192: 277.5532, 16384: 293.0334, 32768: 287.7616}   # 8192 x N x N
H100_CUBLAS = {2048: 540.87, 4096: 726.40, 8192: 749.89}                    # [WH] N^3, fp16
FA2_A100_MAX = 230.0                                                       # [FA2] forward, up to
FA2_H100 = {64: (282, 306, 318, 321, 322, 324), 128: (309, 350, 362, 368, 370, 370)}   # [FA3] Fig. 5
SEQUENCES = (512, 1024, 2048, 4096, 8192, 16384)
KEY_BLOCK = {64: 128, 128: 64}   # FA2's Bc on sm80 (workloads/flash_attention.einsum.yaml)
FLASH_EXECUTION = ("execution.kind=scheduled", "execution.time_limit_s=0.5")
DECODE_KV = 64                   # [LD] 1-token prompt, 128 output tokens: 64 cached positions on average
LMDEPLOY_THROUGHPUT = {1: 100.02, 16: 1504.72, 32: 2136.73, 64: 4154.81}
LMDEPLOY_P50_S = {1: 0.009, 16: 0.010, 32: 0.011, 64: 0.012}
GPTFAST_B1, GPTFAST_KV = 104.9, 100

TOLERANCE = {"gemm": 0.15, "attention": 0.15, "decode": 0.20}
EXPECTED_MISSES = {
    **{f"H100 FA2 fwd d{d} N={n} (TFLOPs/s)": "FA2's sm80 kernels issue mma.sync, slower on Hopper than the wgmma "
       "rate of the config's tensor efficiency" for d in (64, 128) for n in SEQUENCES},
    **{f"A100 GEMM 8192x{n}x{n} (TFLOPS)": "per-call overhead of about 28 us (the measured floor), not 21 us, "
       "dominates kernels of a few microseconds" for n in (64, 128, 256, 512)},
    **{f"A100 decode b{b} LMDeploy throughput (tokens/s)": "per-step serving overhead of LMDeploy's static "
       "benchmark (below its own median token latency) is not a kernel" for b in (32, 64)},
}


def run(arch: str, workload: str, sets: tuple[str, ...] = ()) -> Result:
    """`accel-sim run ARCH WORKLOAD --set ...` in Python: the assignments split into the arch's and workload's."""
    arch_sets, workload_sets = split_overrides(sets)
    return evaluate(load_arch(REPO / arch, arch_sets), load_workload(REPO / workload, overrides=workload_sets))


def gemm_tflops(arch: str, m: int, n: int, k: int, extra: tuple[str, ...] = ()) -> float:
    """TFLOPS of an M x N x K fp16 GEMM (2 MNK over the latency)."""
    result = run(arch, GEMM, (*extra, f"workload.ranks.m={m}", f"workload.ranks.n={n}", f"workload.ranks.k={k}"))
    return 2 * m * n * k / result.latency_s / 1e12


def flash_sets(seq: int, head_dim: int) -> tuple[str, ...]:
    """The assignments of FA2's benchmark shape: (16k / N) x (2048 / d) heads of N queries and keys."""
    heads = (16384 // seq) * (2048 // head_dim)
    block = KEY_BLOCK[head_dim]
    return (*FLASH_EXECUTION, f"workload.ranks.h={heads}", f"workload.ranks.e={head_dim}",
            f"workload.ranks.f={head_dim}", f"workload.ranks.m0={block}", f"workload.ranks.m1={seq // block}",
            f"workload.ranks.p={seq}")


def flash_tflops(arch: str, seq: int, head_dim: int) -> float:
    """FA2's forward FLOPs (4 x heads x d x N^2) over the latency."""
    heads = (16384 // seq) * (2048 // head_dim)
    return 4 * heads * head_dim * seq**2 / run(arch, FLASH, flash_sets(seq, head_dim)).latency_s / 1e12


def decode_sets(batch: int, kv_len: int) -> tuple[str, ...]:
    """Llama-2-7B decode at `batch` with `kv_len` cached positions."""
    return (f"workload.batch={batch}", f"workload.kv_len={kv_len}")


def decode_tokens_per_s(batch: int, kv_len: int, arch: str = A100) -> float:
    """Output tokens per second of one decode step (batch tokens over its latency)."""
    return run(arch, DECODE, decode_sets(batch, kv_len)).summary()["throughput_per_s"]


def rows(groups: tuple[str, ...] = ("gemm", "attention", "decode")) -> list[tuple[str, Comparison]]:
    """(group, comparison) for every published figure of the chosen groups."""
    out: list[tuple[str, Comparison]] = []
    if "gemm" in groups:
        for m, published in LLMCOMPASS_M.items():
            out.append(("gemm", Comparison(f"A100 GEMM {m}x12288x12288 (TFLOPS)", published,
                                           gemm_tflops(A100, m, 12288, 12288, (CALL_OVERHEAD,)), "LLMCompass")))
        for n, published in LLMCOMPASS_N.items():
            out.append(("gemm", Comparison(f"A100 GEMM 8192x{n}x{n} (TFLOPS)", published,
                                           gemm_tflops(A100, 8192, n, n, (CALL_OVERHEAD,)), "LLMCompass")))
        for n, published in H100_CUBLAS.items():
            out.append(("gemm", Comparison(f"H100 GEMM {n}^3 (TFLOPS)", published, gemm_tflops(H100, n, n, n),
                                           "cuBLAS, waynehacking8")))
    if "attention" in groups:
        out.append(("attention", Comparison("A100 FA2 fwd d128 N=16k (TFLOPs/s)", FA2_A100_MAX,
                                            flash_tflops(A100, 16384, 128), "FA2 paper: up to 230")))
        for head_dim, published in FA2_H100.items():
            for seq, value in zip(SEQUENCES, published):
                out.append(("attention", Comparison(f"H100 FA2 fwd d{head_dim} N={seq} (TFLOPs/s)", value,
                                                    flash_tflops(H100, seq, head_dim), "FA3 paper Fig. 5")))
    if "decode" in groups:
        for batch, published in LMDEPLOY_THROUGHPUT.items():
            ours = decode_tokens_per_s(batch, DECODE_KV)
            out.append(("decode", Comparison(f"A100 decode b{batch} LMDeploy throughput (tokens/s)", published, ours,
                                             "static, 1 + 128 tokens")))
            out.append(("decode", Comparison(f"A100 decode b{batch} LMDeploy median latency (tokens/s)",
                                             batch / LMDEPLOY_P50_S[batch], ours, "batch / 50 % latency")))
        out.append(("decode", Comparison("A100 decode b1 gpt-fast (tokens/s)", GPTFAST_B1,
                                         decode_tokens_per_s(1, GPTFAST_KV), "330 W limit")))
    return out


def within_target(group: str, comparison: Comparison) -> bool:
    """Whether a row meets its group's target."""
    return abs(comparison.error) <= TOLERANCE[group]


def main() -> None:
    """Print every comparison, the target it is held to, and whether it meets it (or which known gap it is)."""
    table = rows()
    print(comparison_table([c for _, c in table]))
    print()
    for group, c in table:
        if not within_target(group, c):
            reason = EXPECTED_MISSES.get(c.quantity, "UNEXPECTED")
            print(f"outside {TOLERANCE[group]:.0%}: {c.quantity} ({c.error_pct:+.1f} %): {reason}")


if __name__ == "__main__":
    main()
