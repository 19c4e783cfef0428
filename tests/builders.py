"""Tiny single-einsum workloads shared by the engine, roofline and conformance tests; small archs, a skip chain and
random cascades shared by the placement, mapper and scheduler tests."""
from __future__ import annotations

import random

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


# A skip connection S beside a two-GEMM chain on a 4 x 4 output-stationary array; DRAM holds everything at 1 byte a
# cycle, `buf` (16 GB/s) every role. Found by a random sweep of such chains (issue 15's property, systolic engines).
SKIP_CHAIN = """
name: skip chain
ranks: {m: 4, k: 8, n: 4, j: 4}
default_bits: 8
tensors:
  W: {kind: weight}
  U: {kind: weight}
  X: {kind: activation}
  P: {kind: activation}
einsums:
  - S[m,j] = relu(X[m,j])
  - A[m,k] = relu(P[m,k])
  - Y[m,n] = A[m,k] * W[k,n]
  - Q[m,n] = Y[m,n] * U[n,j]
  - Z[m,j] = S[m,j] + Q[m,j]
"""


def skip_arch(capacity: int, engines: tuple[dict, ...] | None = None) -> Arch:
    """DRAM (unbounded, 1 byte a cycle) and `buf` (`capacity` B, 16 GB/s), both holding every role; a 4 x 4
    output-stationary array and a 16-lane vector unit unless `engines` says otherwise."""
    return Arch.model_validate({
        "name": "skip", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "buf", "technology": "SRAM", "capacity": f"{capacity} B", "bandwidth": "16 GB/s",
                    "read_energy_per_bit": "1 pJ"}],
        "engines": list(engines or ({"name": "sa", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": "os"},
                                    {"name": "vec", "kind": "vector", "lanes": 16}))})


def random_dag(rng: random.Random) -> str:
    """A random einsum cascade of 4-8 steps over rows m and widths a, b, c: GEMMs with fresh or shared weights,
    adds of two earlier tensors (skip connections) and ReLUs, each reading one of the last three tensors mostly."""
    widths = {rank: rng.choice((2, 4, 8)) for rank in "abc"}
    tensors, weights, lines, used = [("X0", rng.choice("abc"))], {}, [], {"m"}
    for i in range(rng.randint(4, 8)):
        src, width = rng.choice(tensors[-3:] if rng.random() < 0.7 else tensors)
        kind, name = rng.random(), f"T{i}"
        if kind < 0.4:
            out = rng.choice([w for w in "abc" if w != width])
            shared = weights.get((width, out)) if rng.random() < 0.5 else None
            weight = shared or weights.setdefault((width, out), f"W{len(weights)}")
            lines.append(f"{name}[m,{out}] = {src}[m,{width}] * {weight}[{width},{out}]")
            used |= {width, out}
            tensors.append((name, out))
            continue
        other = [t for t, w in tensors if w == width and t != src] if kind < 0.7 else []
        lines.append(f"{name}[m,{width}] = {src}[m,{width}] + {rng.choice(other)}[m,{width}]" if other
                     else f"{name}[m,{width}] = relu({src}[m,{width}])")
        used.add(width)
        tensors.append((name, width))
    ranks = ", ".join(f"{r}: {rng.choice((2, 4, 8)) if r == 'm' else widths[r]}" for r in sorted(used))
    declared = "".join(f"\n  {w}: {{kind: weight}}" for w in dict.fromkeys(weights.values()))
    steps = "".join(f"\n  - {line}" for line in lines)
    return (f"name: dag\nranks: {{{ranks}}}\ndefault_bits: {rng.choice((8, 16))}\ntensors:\n  X0: {{kind: activation}}"
            f"{declared}\neinsums:{steps}\n")
