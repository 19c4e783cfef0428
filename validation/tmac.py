"""T-MAC on Apple M2 Ultra: token generation of T-MAC and llama.cpp, and kernel time vs weight bits.

Published figures (Wei et al., "T-MAC", EuroSys 2025, as transcribed in ../shared/targets.md):
BitNet-3B (2-bit) on 1 thread: llama.cpp 6.49, T-MAC 22.08 tokens/s; Llama-2-7B 2-bit on 8 threads:
llama.cpp 22.06, T-MAC 51.01 tokens/s; T-MAC's kernel time grows linearly with the weight bits (1 to 4).

Further rows, per thread count and weight width, come from the same measurements' table in T-MAC's
repository (microsoft/T-MAC docs/profiling_data.md, M2-Ultra rows): BitNet-3B on 4 threads, Llama-2-7B W2 on 1
thread and Llama-2-7B W4 (T-MAC 4-bit) on 1 and 8 threads. llama.cpp's W4 rows ran Q4_0, whose kernel our
llama.cpp config (Q2_K) does not describe, so they are left out.

Ours: the decode step of each model (kv_len 256, a short-context generation; the paper's context is not
transcribed), for T-MAC with its vocabulary matrices at F16 as T-MAC's converter leaves them (`TMAC_AS_RUN`),
evaluated with `objective="latency"` on arch_configs/lut/m2_ultra_tmac.yaml and
m2_ultra_llamacpp.yaml with `--set cpu.threads=N`: the configs describe one performance core and the CPU's
clusters, and engines/multicore.py places the threads, paces them by the slowest, caps the bandwidth they reach,
charges every operator ggml's thread barriers at the measured core-to-core latencies and stretches it to the
busiest thread of ggml's row split.
The Raspberry Pi 5 rows (T-MAC at 1 and 2 threads, the same profiling table) run the same mechanism on
arch_configs/lut/raspberry_pi5_tmac.yaml, a CPU described from its datasheets and a STREAM measurement.
Run: python -m validation.tmac
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch
from accel_sim.evaluate import evaluate
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload
from accel_sim.zoo import build
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
TMAC = REPO / "arch_configs" / "lut" / "m2_ultra_tmac.yaml"
LLAMACPP = REPO / "arch_configs" / "lut" / "m2_ultra_llamacpp.yaml"
PI5 = REPO / "arch_configs" / "lut" / "raspberry_pi5_tmac.yaml"  # datasheets and a STREAM measurement
KV_LEN = 256
# The models as T-MAC ran them for its profiling table (microsoft/T-MAC 0babfaf, the commit of
# docs/profiling_data.md: tools/run_pipeline.py converts with convert-hf-to-gguf-t-mac.py --outtype i2 at its
# llama.cpp pin kaleid-liner/llama.cpp 0358ebc1): LlamaModel.write_tensors makes 2-bit (I2) only each block's
# attention q/k/v/out and FFN up/down/gate, and writes every other 2-D weight, the LM head (output.weight) and the
# token embedding, at F16; BitnetModel.write_tensors keeps embed_tokens.weight at F16 (suit_i2 False), and
# llama.cpp's build_bitnet computes BitNet's logits with it (ggml_mul_mat(ctx0, model.tok_embd, cur); the separate
# output tensor's creation is commented out), so BitNet's LM head is the F16 embedding.
TMAC_AS_RUN: dict[str, dict[str, object]] = {"llama2-7b": {"vocab_bits": 16},
                                             "bitnet-b1.58-3b": {"vocab_bits": 16, "tie_embeddings": True}}


def tokens_per_s(config: Path, model: str, threads: int, **params: object) -> float:
    """Decode tokens per second of a zoo model on a CPU config with `threads` cores."""
    arch = load_arch(config, [f"cpu.threads={threads}"])
    workload = build(model, phase="decode", kv_len=KV_LEN, **params)
    return float(evaluate(arch, workload, objective="latency").summary()["throughput_per_s"])


def tmac_tokens_per_s(config: Path, model: str, threads: int, **params: object) -> float:
    """`tokens_per_s` of the model as T-MAC's converter and llama.cpp run it (`TMAC_AS_RUN`)."""
    return tokens_per_s(config, model, threads, **TMAC_AS_RUN[model], **params)


def gemv(n: int, k: int, bits: int) -> Workload:
    """y[n] = x[k] * W[k, n] with `bits`-bit weights and fp16 activations (a decode GEMV)."""
    r = Affine.rank
    e = Einsum("gemv", Access("Y", (r("m"), r("n"))),
               Call("mul", (Access("X", (r("m"), r("k"))), Access("W", (r("k"), r("n"))))),
               {"m": 1, "n": n, "k": k})
    return Workload("gemv", (Tensor("X", ("M", "K"), (1, k), 16), Tensor("W", ("K", "N"), (k, n), bits, "weight"),
                             Tensor("Y", ("M", "N"), (1, n), 16)), (e,))


def kernel_cycles(bits: int, n: int = 4096, k: int = 4096) -> float:
    """Cycles of one n x k GEMV on T-MAC's LUT engine (1 thread): lookups plus the inline table precompute."""
    arch = load_arch(TMAC, ["cpu.threads=1"])
    result = evaluate(arch, gemv(n, k, bits), objective="latency")
    placed = result.einsums[0]
    if placed.engine != "tmac":
        raise RuntimeError(f"the GEMV ran on '{placed.engine}', not on T-MAC's LUT engine: the kernel figure "
                           f"needs the LUT engine")
    return placed.cost.total_cycles


def rows() -> list[Comparison]:
    """Every target: published value and ours."""
    out = [
        Comparison("BitNet-3B 1 thread, T-MAC tokens/s", 22.08, tmac_tokens_per_s(TMAC, "bitnet-b1.58-3b", 1)),
        Comparison("BitNet-3B 1 thread, llama.cpp tokens/s", 6.49, tokens_per_s(LLAMACPP, "bitnet-b1.58-3b", 1)),
        Comparison("Llama-2-7B W2 8 threads, T-MAC tokens/s", 51.01,
                   tmac_tokens_per_s(TMAC, "llama2-7b", 8, weight_bits=2)),
        Comparison("Llama-2-7B W2 8 threads, llama.cpp tokens/s", 22.06,
            tokens_per_s(LLAMACPP, "llama2-7b", 8, weight_bits=2)),
    ]
    out += [Comparison(f"speedup T-MAC / llama.cpp, {a.quantity.split(',')[0]}", a.published / b.published,
                a.ours / b.ours) for a, b in ((out[0], out[1]), (out[2], out[3]))]
    return out + extra_rows() + pi5_rows()


def kernel_scaling() -> dict[int, float]:
    """Kernel time at 1..4 weight bits over 1 bit: linear by the bit-serial construction (T-MAC states it; the
    unit tests pin it), so it is printed as a check, not counted as validation."""
    base = kernel_cycles(1)
    return {b: kernel_cycles(b) / base for b in (1, 2, 3, 4)}


def extra_rows() -> list[Comparison]:
    """Thread-count and weight-width rows of T-MAC's profiling table (docs/profiling_data.md, M2-Ultra)."""
    note = "T-MAC profiling_data.md"
    return [
        Comparison("BitNet-3B 4 threads, T-MAC tokens/s", 54.46, tmac_tokens_per_s(TMAC, "bitnet-b1.58-3b", 4), note),
        Comparison("BitNet-3B 4 threads, llama.cpp tokens/s", 22.09, tokens_per_s(LLAMACPP, "bitnet-b1.58-3b", 4),
                   note),
        Comparison("Llama-2-7B W2 1 thread, T-MAC tokens/s", 16.68,
                   tmac_tokens_per_s(TMAC, "llama2-7b", 1, weight_bits=2),
                   note),
        Comparison("Llama-2-7B W2 1 thread, llama.cpp tokens/s", 3.82,
                   tokens_per_s(LLAMACPP, "llama2-7b", 1, weight_bits=2), note),
        Comparison("Llama-2-7B W4 1 thread, T-MAC tokens/s", 8.97, tmac_tokens_per_s(TMAC, "llama2-7b", 1, weight_bits=4),
                   note),
        Comparison("Llama-2-7B W4 8 threads, T-MAC tokens/s", 35.65,
                   tmac_tokens_per_s(TMAC, "llama2-7b", 8, weight_bits=4),
                   note),
    ]


def pi5_rows() -> list[Comparison]:
    """T-MAC on the Raspberry Pi 5 at 1 and 2 threads (profiling_data.md): the same mechanism on another CPU."""
    note = "T-MAC profiling_data.md, Raspberry Pi 5"
    return [Comparison(f"Pi 5 Llama-2-7B W{bits} {t} thread{'s' if t > 1 else ''}, T-MAC tokens/s", published,
                       tmac_tokens_per_s(PI5, "llama2-7b", t, weight_bits=bits), note)
            for bits, t, published in ((2, 1, 4.40), (2, 2, 5.92), (4, 1, 2.42), (4, 2, 3.35))]


def main() -> None:
    """Print the comparison table, then the kernel-time-vs-bits construction check."""
    print(comparison_table(rows()))
    print("kernel time / 1-bit (construction: lookups linear in bits, plus the bit-independent table build): "
          + ", ".join(f"{b}-bit {r:.3f}" for b, r in kernel_scaling().items()))


if __name__ == "__main__":
    main()
