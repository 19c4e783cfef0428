"""Measure GEMM, FlashAttention-2, GEMV and Llama-2-7B decode on a real GPU with PyTorch: the figures that
validation/gpu_measured.json holds and validation/gpu.py compares the H100 config against (issue 18: the GPU
engine checked against GPU figures it was not tuned to).

This script is not part of the package or the suite: it runs once on a machine with the GPU and PyTorch (CUDA),
and its JSON output is committed as data with the command that produced it (the `command` and `device` fields).
Run: python3 validation/gpu_measure.py OUT.json [--quick] [--compiled-decode | --fp8 | --launch | --prefill |
     --compiled-prefill | --power | --power-paths | --transient | --held-gemms [--shapes MxNxK,...] |
     --held-launch]
(--quick: tiny sizes, for a dry run on a CPU; the others: only those rows, below)

What is timed, and how:
- GEMM: torch.matmul of fp16 A (M x K) and B (K x N), fp32 accumulation (cuBLAS; split-K reductions kept in fp32,
  `allow_fp16_reduced_precision_reduction = False`), random normal data (zeros draw less power and clock higher).
  Kernel time: CUDA events around R back-to-back calls after warm-up, divided by R (so it holds the few
  microseconds between one kernel and the next, not Python's launch path). The cuBLAS kernel names of one
  profiled call are kept: they name the CTA tile (e.g. tilesize128x256x64) and split-K reductions.
- LLMCompass's harness (PrincetonUniversity/LLMCompass software_model/matmul.py run_on_gpu): the median of
  time.time() around one torch.bmm and torch.cuda.synchronize(), and the same for 1 x 1 x 1 (its launch floor),
  to separate host path from kernel time for skinny shapes.
- FlashAttention-2 forward: torch's SDPA with only the FLASH_ATTENTION backend (torch ships FA2's kernels), fp16,
  batch x heads = (16k / N) x (2048 / d) as FA2's benchmark, non-causal; FLOPs 4 x b x h x N^2 x d.
- GEMV: fp16 (1 x K) @ (K x N) over Llama-2-7B's projection shapes; bytes = the weight matrix.
  Also a device-to-device copy (bytes read + written).
- Llama-2-7B decode, kernels only: a plain eager PyTorch Llama-2-7B (32 layers, d 4096, 32 heads, FFN 11008,
  vocab 32000, fp16, random weights, RMSNorm via torch's fused rms_norm, rotary, SDPA over a KV cache, greedy
  argmax) captured in one CUDA graph per (batch, cached positions) and replayed: the time per step is the GPU's
  for that kernel sequence, without Python's launch path or a serving framework's scheduler.
- FP8 GEMM (`--fp8`): square e4m3 GEMMs through torch._scaled_mm (cuBLASLt), unit scales, bf16 result; timed as
  the fp16 GEMMs.
- The same step with each decoder layer compiled by torch.compile (`--compiled-decode`): inductor fuses the
  norms, rotary embedding, residual adds and SiLU gate into Triton kernels, as gpt-fast does; still one CUDA graph.
- What a kernel costs beyond its work (`--launch`): kernels that do almost nothing (an in-place add on 1 element,
  one CTA; on 132 x 1,024 elements, about two CTAs per SM; a 64 x 64 x 64 fp16 torch.matmul, one cuBLAS CTA),
  each called 1,000 times back to back: from Python (eager: the host's dispatch and launch path per call) and
  captured in one CUDA graph and replayed (median of 3 passes: the GPU's own start-to-start time per kernel,
  launch gap and the kernel's fixed cost of starting its CTAs, reaching memory once and retiring), with the
  profiled kernel duration to split the two.
- Llama-2-7B prefill (`--prefill`): the same model's forward over a whole prompt of `seq` tokens per sequence
  (RMSNorm, the QKV GEMM, rotary embedding of every position, K and V written to a cache, causal SDPA, the output
  projection, the SiLU-gated FFN; logits for every position, as workloads/llama2-7b-prefill.yaml), plain PyTorch
  ops captured in one CUDA graph per (batch, seq) and replayed: the GPU's time for the kernel sequence.
  `--compiled-prefill`: the same with each decoder layer compiled by torch.compile (as `--compiled-decode`).
- Board power under sustained load (`--power`; these three modes live in validation/gpu_measure_power.py): each
  kernel run back to back for several seconds while NVML, read by a child process, samples board power, SM clock and
  its clock-event reasons every 50 ms; the work done over the window (CUDA events) gives the rate, the samples after
  the first second the steady power and clock. Idle first (the static power), then fp16 GEMMs (random normal and
  all-zero operands: the board's power follows the bits that toggle), an FP8 GEMM, a device-to-device copy and a
  GEMV, the same two on 16 MiB that stays in L2 (no HBM traffic); and one GEMM's first 20 ms after 5 s idle (a
  burst, before the power limiter acts). `--power-paths`: memory-bound kernels the same way (a GEMV, skinny GEMMs
  and an in-place add, all tiled cuBLAS or elementwise kernels), from HBM and from 16 MiB that stays in L2.
  `--transient`: one GEMM called back to back for 2.5 s after idle, each call timed by its own CUDA events, NVML
  read every 5 ms: throughput against the clock as the power limiter takes it down. `--held-gemms`: every fp16
  GEMM shape of the main run's grid held 1 s to settle and 1 s timed (the sustained state of each, with its clock
  and power), then four shapes' first 20 ms after 3 s idle (the burst state, NVML every 5 ms). `--held-launch`:
  the `--launch` kernels and a 1024^3 GEMM replayed for 20 ms after 3 s idle and then held, each state timed.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.attention
import torch.nn.functional as F


def shape_list(text: str) -> list[tuple[int, int, int]]:
    """'MxNxK,MxNxK' as (M, N, K) tuples; a malformed one is argparse's usage error (exit 2)."""
    try:
        shapes = [tuple(int(side) for side in item.split("x")) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give GEMM shapes as MxNxK, comma-separated") from None
    if any(len(shape) != 3 or min(shape) < 1 for shape in shapes):
        raise argparse.ArgumentTypeError(f"{text!r}: each shape is three positive sizes, MxNxK")
    return shapes


def arguments() -> argparse.Namespace:
    """The command line (module docstring); a wrong one exits 2 with argparse's usage line."""
    parser = argparse.ArgumentParser(description="Time GEMM, attention and decode on this machine's GPU.")
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a dry run of the logic on a CPU")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--compiled-decode", action="store_true", help="only the torch.compile'd decode rows")
    only.add_argument("--fp8", action="store_true", help="only the FP8 GEMMs")
    only.add_argument("--launch", action="store_true", help="only the per-kernel launch costs")
    only.add_argument("--prefill", action="store_true", help="only the Llama-2-7B prefill rows")
    only.add_argument("--compiled-prefill", action="store_true", help="only the compiled Llama-2-7B prefill rows")
    only.add_argument("--power", action="store_true", help="only the board power and clock under sustained loads")
    only.add_argument("--power-paths", action="store_true", help="only the board power of memory-bound kernels")
    only.add_argument("--transient", action="store_true", help="only a GEMM's throughput as the clock falls")
    only.add_argument("--held-gemms", action="store_true", help="only every fp16 GEMM shape held under the limit")
    only.add_argument("--held-launch", action="store_true", help="only the per-kernel costs after idle and held")
    parser.add_argument("--shapes", type=shape_list, default=None,
                        help="with --held-gemms: only these GEMMs, MxNxK comma-separated, and no burst rows")
    args = parser.parse_args()
    if args.shapes and not args.held_gemms:
        parser.error("--shapes chooses the GEMMs of --held-gemms; give --held-gemms too, or drop --shapes")
    return args


ARGS = arguments()
# run as a script this module is __main__; the power modes' module imports it by name and must get this one
sys.modules.setdefault("gpu_measure", sys.modules[__name__])
QUICK = ARGS.quick
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HALF = torch.float16 if DEVICE == "cuda" else torch.float32
MIN_TIMED_S = 0.02 if not QUICK else 0.0


def log(*parts: object) -> None:
    """Print progress at once (the device's output tail is all one sees of a run that dies)."""
    print(*parts, flush=True)


def sync() -> None:
    """Wait for the GPU."""
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def one_call_s(fn) -> float:
    """Wall seconds of one call of `fn`, synchronized (at least 1 us): how many calls a timing window needs."""
    start = time.perf_counter()
    fn()
    sync()
    return max(time.perf_counter() - start, 1e-6)


def per_call_s(fn, min_reps: int = 3) -> float:
    """Seconds per call of `fn` back to back: warm-up, then enough reps for MIN_TIMED_S, timed by CUDA events."""
    for _ in range(2):
        fn()
    sync()
    once = one_call_s(fn)
    reps = max(min_reps, min(2000, math.ceil(MIN_TIMED_S / once)))
    if DEVICE != "cuda":
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - start) / reps
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) / 1e3 / reps


def kernels(fn, calls: int = 5) -> tuple[list[str], float, float]:
    """(names of the GPU kernels `fn` launches, their summed duration per call in seconds, kernels per call) from
    the profiler's kernel timestamps over `calls` calls: the GPU's own time, with no launch path or gap."""
    if DEVICE != "cuda":
        return [], 0.0, 0.0
    from torch.profiler import ProfilerActivity, profile   # only on the GPU: the profiler is slow to start

    fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    found = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = list(dict.fromkeys(e.name for e in found))
    return names, sum(e.time_range.elapsed_us() for e in found) / calls / 1e6, len(found) / calls


def capture(fn, calls: int = 1) -> torch.cuda.CUDAGraph:
    """`calls` calls of `fn` in one CUDA graph, warmed up on a side stream first (as capture requires)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph


def graph_s(fn, calls: int = 20) -> float:
    """Seconds per call of `fn` captured `calls` times in one CUDA graph and replayed: back-to-back kernels with
    no host launch path (a few-microsecond kernel launched from Python is host-bound otherwise)."""
    if DEVICE != "cuda":
        return per_call_s(fn)
    return per_call_s(capture(fn, calls).replay) / calls


def graph_calls(seconds: float) -> int:
    """Calls per captured graph for a kernel of `seconds`: 20 short ones, 2 long ones (each replay stays short)."""
    return 20 if seconds < 1e-3 else 2


def clock_under_load(fn, seconds: float = 0.3) -> dict:
    """The SM clock (MHz) and board power (W) NVML reads while `fn` runs back to back for about `seconds`."""
    if DEVICE != "cuda":
        return {}
    once = one_call_s(fn)
    for _ in range(max(1, int(seconds / once))):
        fn()
    time.sleep(seconds * 0.6)   # the queue is still running: read the clock under load, not after it
    try:
        reading = {"sm_clock_mhz": torch.cuda.clock_rate(), "power_w": torch.cuda.power_draw() / 1e3}
    except Exception as exc:  # noqa: BLE001  (NVML missing or refused: keep the timing, say why)
        reading = {"clock_error": f"{type(exc).__name__}: {exc}"}
    sync()
    return reading


def device_info() -> dict:
    """The GPU, driver, clocks and power limit, as nvidia-smi and torch report them."""
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"), "command": " ".join(["python3", *sys.argv])}
    if DEVICE == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(name=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                    l2_bytes=getattr(p, "L2_cache_size", None), cudnn=torch.backends.cudnn.version())
        query = "driver_version,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit,clocks.sm"
        try:
            info["nvidia_smi"] = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv"],
                                                capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["nvidia_smi"] = f"unavailable: {exc}"
    return info


def fp16_matmul(m: int, n: int, k: int):
    """torch.matmul of random fp16 A (M x K) and B (K x N), as a call."""
    a = torch.randn(m, k, device=DEVICE, dtype=HALF)
    b = torch.randn(k, n, device=DEVICE, dtype=HALF)
    return lambda: torch.matmul(a, b)


def fp8_matmul(m: int, n: int, k: int):
    """torch._scaled_mm of random e4m3 A (M x K) and B (K x N, column-major as it requires), unit scales, bf16
    result (cuBLASLt's FP8 GEMM), as a call."""
    fp8 = getattr(torch, "float8_e4m3fn", None)
    a = torch.randn(m, k, device=DEVICE).to(fp8)
    b = torch.randn(n, k, device=DEVICE).to(fp8).t()
    one = torch.ones((), device=DEVICE)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def gemm_grid() -> dict[str, list[tuple[int, int, int]]]:
    """The fp16 GEMM shapes (M, N, K) timed, by series: square, over M at 12288^2, over N = K at M 8192."""
    if QUICK:
        return {"gemm_square": [(n, n, n) for n in (256, 512)], "gemm_over_m": [(m, 256, 256) for m in (64, 128)],
                "gemm_over_n": [(256, n, n) for n in (64, 128)]}
    sides = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
    return {"gemm_square": [(n, n, n) for n in (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)],
            "gemm_over_m": [(m, 12288, 12288) for m in sides], "gemm_over_n": [(8192, n, n) for n in sides]}


def gemm(m: int, n: int, k: int, names: bool = True, make=fp16_matmul) -> dict:
    """One GEMM (`make`: fp16 or fp8): time per call back to back, from a CUDA graph (one pass; `repeat_gemms`
    adds passes), the profiled kernel time, TFLOPS, the cuBLAS kernels."""
    call = make(m, n, k)
    seconds = per_call_s(call)
    row = {"m": m, "n": n, "k": k, "s": seconds, "tflops": 2 * m * n * k / seconds / 1e12,
           "graph_passes_s": [graph_s(call, graph_calls(seconds))]}
    if names:
        row["kernels"], row["kernel_s"], _ = kernels(call)
    return row


def repeat_gemms(rows: list[dict], passes: int, make=fp16_matmul) -> None:
    """Time every GEMM of `rows` again from a CUDA graph, `passes` more times in turn (a long GEMM's throughput
    moves by several per cent with the board's power and temperature state), then keep the median per shape."""
    for _ in range(passes):
        for row in rows:
            row["graph_passes_s"].append(graph_s(make(row["m"], row["n"], row["k"]), graph_calls(row["s"])))
    for row in rows:
        row["graph_s"] = statistics.median(row["graph_passes_s"])
        row["graph_tflops"] = 2 * row["m"] * row["n"] * row["k"] / row["graph_s"] / 1e12


def clocks(rows: list[dict], make=fp16_matmul) -> None:
    """The SM clock and power under each long GEMM of `rows` (after all timing, so that it heats nothing timed)."""
    for row in rows:
        if row["s"] > 2e-4:
            row.update(clock_under_load(make(row["m"], row["n"], row["k"])))


def harness(m: int, n: int, k: int, reps: int = 50) -> float:
    """LLMCompass's timing of one torch.bmm: median of time.time() around the call and a synchronize."""
    a = torch.randn(1, m, k, device=DEVICE, dtype=HALF)
    b = torch.randn(1, k, n, device=DEVICE, dtype=HALF)
    for _ in range(3):
        torch.bmm(a, b)
    sync()
    times = []
    for _ in range(reps):
        start = time.time()
        torch.bmm(a, b)
        sync()
        times.append(time.time() - start)
    return statistics.median(times)


def attention(seq: int, head_dim: int, causal: bool = False) -> dict:
    """FA2's forward through SDPA's flash backend, at FA2's benchmark shape."""
    batch, heads = max(1, 16384 // seq), 2048 // head_dim
    if QUICK:
        batch, heads = 1, 2
    q, k, v = (torch.randn(batch, heads, seq, head_dim, device=DEVICE, dtype=HALF) for _ in range(3))
    backend = torch.nn.attention.SDPBackend.FLASH_ATTENTION if DEVICE == "cuda" else \
        torch.nn.attention.SDPBackend.MATH
    with torch.nn.attention.sdpa_kernel([backend]):
        call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
        seconds = per_call_s(call)
        names, kernel_s, _ = kernels(call)
    flops = 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
    return {"seq": seq, "head_dim": head_dim, "batch": batch, "heads": heads, "causal": causal, "s": seconds,
            "tflops": flops / seconds / 1e12, "kernel_s": kernel_s, "kernels": names}


def gemv(k: int, n: int) -> dict:
    """A (1 x K) @ (K x N) fp16 GEMV: kernel time and the weight bytes it reads per second."""
    x = torch.randn(1, k, device=DEVICE, dtype=HALF)
    w = torch.randn(k, n, device=DEVICE, dtype=HALF)
    call = lambda: torch.matmul(x, w)  # noqa: E731
    seconds, replayed = per_call_s(call), graph_s(call)
    names, kernel_s, _ = kernels(call)
    weight = k * n * w.element_size()
    return {"k": k, "n": n, "s": seconds, "weight_gb_per_s": weight / seconds / 1e9, "graph_s": replayed,
            "graph_gb_per_s": weight / replayed / 1e9, "kernel_s": kernel_s, "kernels": names}


def copy_bandwidth(gib: float) -> dict:
    """A device-to-device copy: bytes read plus bytes written per second."""
    src = torch.empty(int(gib * 2**30) // 2, device=DEVICE, dtype=torch.float16)
    dst = torch.empty_like(src)
    seconds = per_call_s(lambda: dst.copy_(src))
    return {"bytes": 2 * src.numel() * 2, "s": seconds, "gb_per_s": 2 * src.numel() * 2 / seconds / 1e9}


class Llama:
    """Llama-2-7B's decode step in plain PyTorch ops over a preallocated KV cache (random fp16 weights)."""

    def __init__(self, layers: int, dim: int, heads: int, ffn: int, vocab: int):
        """Allocate the weights (the KV cache comes with each decode configuration: `allocate`)."""
        def w(rows: int, cols: int) -> torch.Tensor:
            return torch.randn(rows, cols, device=DEVICE, dtype=HALF) * 0.02

        self.dim, self.heads, self.head_dim = dim, heads, dim // heads
        self.layers = [{"norm1": torch.ones(dim, device=DEVICE, dtype=HALF), "wqkv": w(dim, 3 * dim),
                        "wo": w(dim, dim), "norm2": torch.ones(dim, device=DEVICE, dtype=HALF),
                        "w13": w(dim, 2 * ffn), "w2": w(ffn, dim)} for _ in range(layers)]
        self.embed = w(vocab, dim)
        self.norm = torch.ones(dim, device=DEVICE, dtype=HALF)
        self.head = w(dim, vocab)
        self.cache: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.layer = decoder_layer   # `compiled_decode` swaps in torch.compile's
        self.prefill_layer = prefill_layer   # and `prefills(compiled=True)` its own
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, device=DEVICE).float() / self.head_dim))

    def allocate(self, batch: int, kv: int) -> None:
        """A KV cache of `batch` sequences and kv + 1 positions per layer (the old one freed first)."""
        self.cache = []
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
        shape = (batch, self.heads, kv + 1, self.head_dim)
        self.cache = [(torch.zeros(shape, device=DEVICE, dtype=HALF), torch.zeros(shape, device=DEVICE, dtype=HALF))
                      for _ in self.layers]

    def step(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        """One decode step of `tokens` (b,) at cached position `pos`: the next tokens (greedy)."""
        angle = pos * self.inv_freq
        cos, sin = angle.cos().to(HALF), angle.sin().to(HALF)
        x = self.embed[tokens]                                                     # (b, dim)
        for layer, (kc, vc) in zip(self.layers, self.cache):
            x = self.layer(x, layer["norm1"], layer["wqkv"], layer["wo"], layer["norm2"], layer["w13"], layer["w2"],
                           kc, vc, cos, sin, pos, self.heads)
        logits = F.rms_norm(x, (self.dim,), self.norm, 1e-5) @ self.head
        return logits.argmax(dim=-1)


    def prefill(self, tokens: torch.Tensor) -> torch.Tensor:
        """The forward pass of whole prompts `tokens` (b, s) from position 0, K and V written to the cache: the next
        token of every position (greedy; the logits of every position are computed, as HF's export does)."""
        angle = torch.arange(tokens.shape[1], device=DEVICE)[:, None].float() * self.inv_freq[None, :]
        cos, sin = angle.cos().to(HALF), angle.sin().to(HALF)                    # (s, d / 2)
        x = self.embed[tokens]                                                     # (b, s, dim)
        for layer, (kc, vc) in zip(self.layers, self.cache):
            x = self.prefill_layer(x, layer["norm1"], layer["wqkv"], layer["wo"], layer["norm2"], layer["w13"],
                                   layer["w2"], kc, vc, cos, sin, self.heads)
        logits = F.rms_norm(x, (self.dim,), self.norm, 1e-5) @ self.head
        return logits.argmax(dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of (b, h, s, d) at positions whose angles' cos and sin are (s, d / 2) (or one position)."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def decoder_layer(x: torch.Tensor, norm1: torch.Tensor, wqkv: torch.Tensor, wo: torch.Tensor, norm2: torch.Tensor,
                  w13: torch.Tensor, w2: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, cos: torch.Tensor,
                  sin: torch.Tensor, pos: int, heads: int) -> torch.Tensor:
    """One Llama decoder layer on (b, dim) activations, writing position `pos` of its KV cache."""
    b, dim = x.shape
    head_dim = dim // heads
    h = F.rms_norm(x, (dim,), norm1, 1e-5)
    q, k, v = (h @ wqkv).view(b, 3, heads, 1, head_dim).unbind(1)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    kc[:, :, pos:pos + 1] = k
    vc[:, :, pos:pos + 1] = v
    a = F.scaled_dot_product_attention(q, kc[:, :, :pos + 1], vc[:, :, :pos + 1])
    x = x + a.reshape(b, dim) @ wo
    h = F.rms_norm(x, (dim,), norm2, 1e-5)
    gate, up = (h @ w13).chunk(2, dim=-1)
    return x + (F.silu(gate) * up) @ w2


def prefill_layer(x: torch.Tensor, norm1: torch.Tensor, wqkv: torch.Tensor, wo: torch.Tensor, norm2: torch.Tensor,
                  w13: torch.Tensor, w2: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, cos: torch.Tensor,
                  sin: torch.Tensor, heads: int) -> torch.Tensor:
    """One Llama decoder layer on (b, s, dim) activations of whole prompts, writing their K and V to the cache."""
    b, s, dim = x.shape
    head_dim = dim // heads
    h = F.rms_norm(x, (dim,), norm1, 1e-5)
    q, k, v = (h @ wqkv).view(b, s, 3, heads, head_dim).permute(2, 0, 3, 1, 4).unbind(0)   # (b, h, s, d) each
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    kc[:, :, :s] = k
    vc[:, :, :s] = v
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + a.transpose(1, 2).reshape(b, s, dim) @ wo
    h = F.rms_norm(x, (dim,), norm2, 1e-5)
    gate, up = (h @ w13).chunk(2, dim=-1)
    return x + (F.silu(gate) * up) @ w2


def prefill(model: Llama, batch: int, seq: int) -> dict:
    """Seconds per prefill of `batch` prompts of `seq` tokens, the forward pass replayed from one CUDA graph."""
    model.allocate(batch, seq)
    tokens = torch.randint(0, model.embed.shape[0], (batch, seq), device=DEVICE)
    call = lambda: model.prefill(tokens)  # noqa: E731
    if DEVICE != "cuda":
        return {"batch": batch, "seq": seq, "s": per_call_s(call, 1), "graph": False}
    graph = capture(call)
    seconds = statistics.median(per_call_s(graph.replay) for _ in range(3))
    eager = per_call_s(call)
    names, kernel_s, launched = kernels(call, 1)
    del graph
    return {"batch": batch, "seq": seq, "s": seconds, "tokens_per_s": batch * seq / seconds, "eager_s": eager,
            "kernel_s": kernel_s, "kernels_per_pass": launched, "kernel_names": names, "graph": True}


def compiled_layer(layer):
    """`layer` compiled by torch.compile for static shapes, one specialization kept per shape it meets (a decode's
    (batch, kv), a prefill's (batch, seq))."""
    import torch._dynamo   # only here: the compiled path's settings

    for limit in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)
    return torch.compile(layer, dynamic=False)


def prefills(out_path: str, compiled: bool = False) -> None:
    """`--prefill`: Llama-2-7B prefill at a few prompt lengths and batches; the JSON gets only these rows
    ('prefill'); `compiled` (`--compiled-prefill`): each decoder layer compiled, rows 'prefill_compiled'."""
    key = "prefill_compiled" if compiled else "prefill"
    result = {"device": device_info(), key: []}
    model = Llama(2, 256, 4, 512, 1000) if QUICK else Llama(32, 4096, 32, 11008, 32000)
    if compiled:
        model.prefill_layer = compiled_layer(prefill_layer)
    configs = ((1, 16), (2, 32)) if QUICK else ((1, 128), (1, 512), (1, 1024), (1, 2048), (1, 4096), (4, 512),
                                                (8, 512))
    for batch, seq in configs:
        result[key].append(prefill(model, batch, seq))
        log(key, {k: v for k, v in result[key][-1].items() if k != "kernel_names"})
        with open(out_path, "w") as f:   # keep what is measured if the run is cut short
            json.dump(result, f, indent=1)


def decode(model: Llama, batch: int, kv: int) -> dict:
    """Seconds per decode step at `batch` with `kv` cached positions, the step replayed from one CUDA graph."""
    model.allocate(batch, kv)
    tokens = torch.randint(0, model.embed.shape[0], (batch,), device=DEVICE)
    if DEVICE != "cuda":
        return {"batch": batch, "kv": kv, "s": per_call_s(lambda: model.step(tokens, kv), 1), "graph": False}
    graph = capture(lambda: model.step(tokens, kv))
    seconds = per_call_s(graph.replay)
    eager = per_call_s(lambda: model.step(tokens, kv))
    names, kernel_s, launched = kernels(lambda: model.step(tokens, kv), 1)
    del graph
    return {"batch": batch, "kv": kv, "s": seconds, "tokens_per_s": batch / seconds, "eager_s": eager,
            "kernel_s": kernel_s, "kernels_per_step": launched, "kernel_names": names, "graph": True}


def fp8_gemms(out_path: str) -> None:
    """`--fp8`: square FP8 GEMMs (`fp8_matmul`) timed as the fp16 GEMMs are (CUDA graph, median of 3 passes), then
    the SM clock and power under the long ones; the JSON gets only these rows ('gemm_fp8')."""
    sizes = (256, 512) if QUICK else (1024, 2048, 4096, 6144, 8192, 12288, 16384)
    rows = [gemm(n, n, n, make=fp8_matmul) for n in sizes]
    repeat_gemms(rows, 2, fp8_matmul)
    clocks(rows, fp8_matmul)
    for row in rows:
        log("fp8", row["n"], round(row["graph_tflops"], 1), row.get("sm_clock_mhz"), row["kernels"][:1])
    with open(out_path, "w") as f:
        json.dump({"device": device_info(), "gemm_fp8": rows}, f, indent=1)


def launch_costs(out_path: str) -> None:
    """`--launch`: the start-to-start time of kernels that do almost nothing (module docstring), eager and from a
    CUDA graph, and their profiled duration; the JSON gets only these rows ('launch')."""
    calls = 10 if QUICK else 1000
    one, wave = torch.zeros(1, device=DEVICE), torch.zeros(132 * 1024, device=DEVICE)
    a, b = (torch.randn(64, 64, device=DEVICE, dtype=HALF) for _ in range(2))
    rows = []
    for name, call in (("add_1_element", lambda: one.add_(1.0)), ("add_132x1024", lambda: wave.add_(1.0)),
                       ("matmul_64x64x64", lambda: torch.matmul(a, b))):
        names, kernel_s, per_call = kernels(call)
        passes = [graph_s(call, calls) for _ in range(3)]
        rows.append({"name": name, "eager_s": per_call_s(call, calls), "graph_passes_s": passes,
                     "graph_s": statistics.median(passes), "kernel_s": kernel_s, "kernels_per_call": per_call,
                     "kernels": names})
        log("launch", {k: v for k, v in rows[-1].items() if k != "kernels"})
    with open(out_path, "w") as f:
        json.dump({"device": device_info(), "launch": rows}, f, indent=1)


def compiled_decode(out_path: str) -> None:
    """`--compiled-decode`: the decode step with each decoder layer compiled by torch.compile (inductor fuses the
    norms, rotary and activations into a few Triton kernels, as gpt-fast does), in one CUDA graph per
    (batch, cached positions); the JSON gets only these rows ('decode_compiled')."""
    result = {"device": device_info(), "decode_compiled": []}
    start = time.time()
    model = Llama(2, 256, 4, 512, 1000) if QUICK else Llama(32, 4096, 32, 11008, 32000)
    model.layer = compiled_layer(decoder_layer)
    configs = ((1, 64), (4, 64)) if QUICK else ((1, 64), (1, 384), (8, 64), (16, 64), (32, 64), (64, 64), (1, 1024),
                                                (1, 4095), (8, 1024), (16, 4095), (32, 2048))
    for batch, kv in configs:
        result["decode_compiled"].append(decode(model, batch, kv))
        row = {k: v for k, v in result["decode_compiled"][-1].items() if k != "kernel_names"}
        log("compiled decode", row, round(time.time() - start))
        with open(out_path, "w") as f:   # keep what is measured if the run is cut short
            json.dump(result, f, indent=1)


def main() -> None:
    """Run every measurement and write the JSON."""
    out_path = ARGS.out
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    if ARGS.compiled_decode:
        compiled_decode(out_path)
        return
    if ARGS.fp8:
        fp8_gemms(out_path)
        return
    if ARGS.launch:
        launch_costs(out_path)
        return
    if ARGS.prefill or ARGS.compiled_prefill:
        prefills(out_path, compiled=ARGS.compiled_prefill)
        return
    if ARGS.power or ARGS.power_paths or ARGS.transient or ARGS.held_gemms or ARGS.held_launch:
        import gpu_measure_power as power   # the NVML-sampled modes (validation/gpu_measure_power.py)

        mode = (power.power_rows if ARGS.power else power.power_path_rows if ARGS.power_paths else
                power.held_gemm_rows if ARGS.held_gemms else power.held_launch_rows if ARGS.held_launch else
                power.transient_rows)
        mode(out_path)
        return
    result = {"device": device_info()}
    log(result["device"])
    start = time.time()
    tiny = QUICK

    grid = gemm_grid()
    result["gemm_square"] = [gemm(*shape) for shape in grid["gemm_square"]]
    log("square", [(r["m"], round(r["tflops"], 1)) for r in result["gemm_square"]], round(time.time() - start))
    result["gemm_over_m"] = [gemm(*shape) for shape in grid["gemm_over_m"]]
    result["gemm_over_n"] = [gemm(*shape) for shape in grid["gemm_over_n"]]
    rows = grid["gemm_over_n"][0][0]
    timed = result["gemm_square"] + result["gemm_over_m"] + result["gemm_over_n"]
    repeat_gemms(timed, 2)
    clocks(timed)
    log("over m/n", round(time.time() - start))
    dims = (64, 64, 96, 160) if tiny else (4096, 4096 * 3, 4096, 4096, 4096, 11008 * 2, 11008, 4096, 4096, 32000)
    pairs = list(zip(dims[::2], dims[1::2]))                                         # (K, N) of each projection
    tokens = (1, 16, 64) if tiny else (1, 16, 32, 64, 128, 512, 2048)
    result["gemm_llama"] = [gemm(t, n, k, names=False) for t in tokens for k, n in pairs]
    repeat_gemms(result["gemm_llama"], 0)
    result["gemv"] = [gemv(k, n) for k, n in pairs + ([] if tiny else [(8192, 8192), (16384, 16384)])]
    result["copy"] = copy_bandwidth(0.01 if tiny else 2.0)
    log("gemv", [round(r["weight_gb_per_s"]) for r in result["gemv"]], result["copy"]["gb_per_s"],
        round(time.time() - start))
    skinny = (64, 128) if tiny else (64, 128, 256, 512, 1024)
    result["harness"] = {"floor_1x1x1_s": harness(1, 1, 1),
                         "rows": [{"m": rows, "n": n, "k": n, "s": harness(rows, n, n)} for n in skinny]}
    log("harness", result["harness"], round(time.time() - start))
    seqs = (128, 256) if tiny else (512, 1024, 2048, 4096, 8192, 16384)
    result["attention"] = [attention(s, d) for d in (64, 128) for s in seqs]
    log("attention", [(r["head_dim"], r["seq"], round(r["tflops"], 1)) for r in result["attention"]],
        round(time.time() - start))

    if tiny:
        model = Llama(2, 256, 4, 512, 1000)
        configs = ((1, 64), (4, 64))
    else:
        model = Llama(32, 4096, 32, 11008, 32000)
        configs = ((1, 64), (1, 100), (1, 384), (1, 1024), (1, 4095), (8, 64), (16, 64), (32, 64), (64, 64),
                   (8, 1024), (16, 4095))
    result["decode"] = []
    for batch, kv in configs:
        result["decode"].append(decode(model, batch, kv))
        log("decode", result["decode"][-1], round(time.time() - start))
        with open(out_path, "w") as f:   # keep what is measured if the run is cut short
            json.dump(result, f, indent=1)
    result["elapsed_s"] = time.time() - start
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    log("done", round(result["elapsed_s"]))


if __name__ == "__main__":
    main()
