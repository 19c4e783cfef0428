"""Tiny single-einsum workloads shared by the engine, roofline and conformance tests, and a small three-level
arch shared by the placement and mapper tests."""
from __future__ import annotations

from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

R = Affine.rank


def gemm(m: int, n: int, k: int, bits: int = 8, *, out_bits: int | None = None, weight_b: bool = True) -> Workload:
    """Z[m,n] = A[m,k] * W[k,n], W a weight unless `weight_b` is False; Z at `out_bits` (default: `bits`)."""
    e = Einsum("gemm", Access("Z", (R("m"), R("n"))),
               Call("mul", (Access("A", (R("m"), R("k"))), Access("W", (R("k"), R("n"))))),
               {"m": m, "n": n, "k": k})
    return Workload("gemm", (Tensor("A", ("M", "K"), (m, k), bits),
                             Tensor("W", ("K", "N"), (k, n), bits, "weight" if weight_b else "activation"),
                             Tensor("Z", ("M", "N"), (m, n), out_bits or bits)), (e,))


def conv(c: int, k: int, h: int, rs: int, stride: int, pad: int = 0, bits: int = 16, *,
         out_bits: int | None = None) -> Workload:
    """O[k,p,q] = I[c, stride*p + r - pad, stride*q + s - pad] * W[k,c,r,s] (batch 1)."""
    p = (h + 2 * pad - rs) // stride + 1
    ix = lambda out, win: Affine(((out, stride), (win, 1)), -pad)  # noqa: E731
    e = Einsum("conv", Access("O", (R("k"), R("p"), R("q"))),
               Call("mul", (Access("I", (R("c"), ix("p", "r"), ix("q", "s"))),
                            Access("W", (R("k"), R("c"), R("r"), R("s"))))),
               {"k": k, "p": p, "q": p, "c": c, "r": rs, "s": rs})
    return Workload("conv", (Tensor("I", ("C", "H", "W"), (c, h, h), bits),
                             Tensor("W", ("K", "C", "R", "S"), (k, c, rs, rs), bits, "weight"),
                             Tensor("O", ("K", "P", "Q"), (k, p, p), out_bits or bits)), (e,))


def elementwise_exp(n: int, bits: int = 16) -> Workload:
    """Y[i] = exp(X[i])."""
    e = Einsum("exp", Access("Y", (R("i"),)), Call("exp", (Access("X", (R("i"),)),)), {"i": n})
    return Workload("exp", (Tensor("X", ("I",), (n,), bits), Tensor("Y", ("I",), (n,), bits)), (e,))


def exp_chain(n: int) -> Workload:
    """Y[i] = exp(X[i]); Z[i] = exp(Y[i]) over 16-bit tensors: Y is the intermediate (scheduler tests)."""
    y = Einsum("Y", Access("Y", (R("i"),)), Call("exp", (Access("X", (R("i"),)),)), {"i": n})
    z = Einsum("Z", Access("Z", (R("i"),)), Call("exp", (Access("Y", (R("i"),)),)), {"i": n})
    return Workload("chain", tuple(Tensor(t, ("I",), (n,)) for t in "XYZ"), (y, z))


def three_level_arch(buf: int, small: int, engines: tuple[dict, ...] | None = None) -> Arch:
    """DRAM, `buf` and a smaller, faster `small` inside it, every level holding every role; a vector unit unless
    `engines` says otherwise."""
    return Arch.model_validate({
        "name": "three", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "buf", "technology": "SRAM", "capacity": f"{buf} B", "bandwidth": "16 GB/s",
                    "read_energy_per_bit": "1 pJ"},
                   {"name": "small", "technology": "SRAM", "capacity": f"{small} B", "bandwidth": "64 GB/s",
                    "read_energy_per_bit": "0.2 pJ"}],
        "engines": list(engines or ({"name": "vec", "kind": "vector", "lanes": 16},))})

