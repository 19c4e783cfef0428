"""T-MAC on Apple M2 Ultra: token generation of T-MAC and llama.cpp, and kernel time vs weight bits.

Published figures (Wei et al., "T-MAC", EuroSys 2025, as transcribed in ../shared/targets.md):
BitNet-3B (2-bit) on 1 thread: llama.cpp 6.49, T-MAC 22.08 tokens/s; Llama-2-7B 2-bit on 8 threads:
llama.cpp 22.06, T-MAC 51.01 tokens/s; T-MAC's kernel time grows linearly with the weight bits (1 to 4).

Ours: the decode step of each model (kv_len 256, a short-context generation; the paper's context is not
transcribed) evaluated with `objective="latency"` on arch_configs/lut/m2_ultra_tmac.yaml and
m2_ultra_llamacpp.yaml, with the engines cut to the thread count (`with_threads`).
Run: python -m validation.tmac
"""
from __future__ import annotations

from pathlib import Path

from accel_sim import load_arch
from accel_sim.evaluate import evaluate
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload
from accel_sim.zoo import build
from validation.comparison import Comparison, comparison_table

REPO = Path(__file__).resolve().parents[1]
TMAC = REPO / "arch_configs" / "lut" / "m2_ultra_tmac.yaml"
LLAMACPP = REPO / "arch_configs" / "lut" / "m2_ultra_llamacpp.yaml"
CONFIG_CORES = 16  # the configs describe all 16 performance cores
KV_LEN = 256




def with_threads(arch: Arch, threads: int) -> Arch:
    """The arch with every engine's units, lanes and per-cycle rates scaled from 16 cores to `threads`."""
    scale = threads / CONFIG_CORES
    engines = []
    for engine in arch.engines:
        update: dict[str, float | int] = {}
        if hasattr(engine, "units"):
            update["units"] = threads
        for key in ("precompute_adds_per_cycle", "dequant_per_cycle"):
            if getattr(engine, key, None):
                update[key] = getattr(engine, key) * scale
        if hasattr(engine, "lanes"):
            update["lanes"] = max(1, round(engine.lanes * scale))
        engines.append(engine.model_copy(update=update))
    return arch.model_copy(update={"engines": tuple(engines)})


def tokens_per_s(config: Path, model: str, threads: int, **params: int) -> float:
    """Decode tokens per second of a zoo model on a CPU config with `threads` cores."""
    arch = with_threads(load_arch(config), threads)
    workload = build(model, phase="decode", kv_len=KV_LEN, **params)
    return float(evaluate(arch, workload, objective="latency").summary()["throughput_per_s"])


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
    arch = with_threads(load_arch(TMAC), 1)
    w = gemv(n, k, bits)
    return arch.engine("tmac").cost(w.einsums[0], w, arch).total_cycles


def rows() -> list[Comparison]:
    """Every target: published value and ours."""
    out = [
        Comparison("BitNet-3B 1 thread, T-MAC tokens/s", 22.08, tokens_per_s(TMAC, "bitnet-b1.58-3b", 1)),
        Comparison("BitNet-3B 1 thread, llama.cpp tokens/s", 6.49, tokens_per_s(LLAMACPP, "bitnet-b1.58-3b", 1)),
        Comparison("Llama-2-7B W2 8 threads, T-MAC tokens/s", 51.01, tokens_per_s(TMAC, "llama2-7b", 8, weight_bits=2)),
        Comparison("Llama-2-7B W2 8 threads, llama.cpp tokens/s", 22.06,
            tokens_per_s(LLAMACPP, "llama2-7b", 8, weight_bits=2)),
    ]
    out += [Comparison(f"speedup T-MAC / llama.cpp, {a.quantity.split(',')[0]}", a.published / b.published,
                a.ours / b.ours) for a, b in ((out[0], out[1]), (out[2], out[3]))]
    base = kernel_cycles(1)
    out += [Comparison(f"kernel time {b}-bit / 1-bit (linear in bits)", float(b), kernel_cycles(b) / base)
            for b in (2, 3, 4)]
    return out


def main() -> list[Comparison]:
    """Print the validation table and return its rows."""
    found = rows()
    print(comparison_table(found))
    return found


if __name__ == "__main__":
    main()
