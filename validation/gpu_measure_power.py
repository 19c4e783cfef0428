"""The board-power modes of validation/gpu_measure.py (`--power`, `--power-paths`, `--transient`; its module
docstring says what each times): NVML read by a child process while kernels run back to back, and the rows built
from those readings. Run through gpu_measure.py, whose command line and helpers these use."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import torch

from gpu_measure import (ARGS, DEVICE, HALF, QUICK, capture, device_info, fp8_matmul, fp16_matmul, gemm_grid,
                         graph_calls, kernels, log, one_call_s, per_call_s, sync)

SAMPLER = """
import sys, time, pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \\
    pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
while True:
    row = [time.time(), pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
           pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
           pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
           pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU), reasons(h)]
    print(",".join(str(v) for v in row), flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0.05)
"""
SAMPLE_FIELDS = ("time", "power_w", "sm_clock_mhz", "memory_clock_mhz", "temperature_c", "clock_event_reasons")
SW_POWER_CAP = 0x4   # NVML's clocks-event reason bit: the software power limiter holds the clock down


class PowerSampler:
    """NVML read every 50 ms by a child process (no GIL shared with the launches): time, board power, SM and
    memory clocks, temperature and the clock-event reasons; `window` summarises the samples between two
    time.time() stamps."""

    def __init__(self, period_s: float = 0.05) -> None:
        self.out = open("/tmp/nvml_samples.csv", "w+")   # noqa: SIM115  (read back at the end)
        self.proc = subprocess.Popen([sys.executable, "-c", SAMPLER, str(period_s)], stdout=self.out,
                                     stderr=subprocess.PIPE, text=True) if DEVICE == "cuda" else None

    def samples(self) -> list[list[float]]:
        """Every reading so far, one list of SAMPLE_FIELDS' values each."""
        self.out.flush()
        self.out.seek(0)
        rows = []
        for line in self.out.read().splitlines():
            try:
                values = [float(v) for v in line.split(",")]
            except ValueError:
                continue
            if len(values) == len(SAMPLE_FIELDS):
                rows.append(values)
        self.out.seek(0, 2)
        return rows

    def window(self, start: float, end: float, skip_s: float = 1.0) -> dict:
        """Median, mean, min and max of each field over [start + skip_s, end], the samples' count, and the
        fraction of them with the software power cap holding the clock."""
        rows = [dict(zip(SAMPLE_FIELDS, values)) for values in self.samples() if start + skip_s <= values[0] <= end]
        summary: dict = {"samples": len(rows)}
        if rows:
            for field in SAMPLE_FIELDS[1:-1]:
                values = [row[field] for row in rows]
                summary[field] = {"median": statistics.median(values), "mean": statistics.fmean(values),
                                  "min": min(values), "max": max(values)}
            summary["power_capped_fraction"] = statistics.fmean(
                1.0 if int(row["clock_event_reasons"]) & SW_POWER_CAP else 0.0 for row in rows)
        return summary

    def stop(self) -> str:
        """End the sampling process; what it said on stderr (an NVML error, if any)."""
        if not self.proc:
            return ""
        self.proc.terminate()
        return self.proc.communicate(timeout=10)[1][-2000:]


def replayed(call, calls: int) -> tuple:
    """(a replay of `calls` calls of `call` captured in one CUDA graph, `calls`); on a CPU, (`call`, 1)."""
    if DEVICE != "cuda":
        return call, 1
    return capture(call, calls).replay, calls


def sustained(call, work: float, seconds: float) -> dict:
    """`call` back to back for about `seconds`: wall window, calls, and the work (FLOPs or bytes) per second over
    the whole window by CUDA events."""
    call()
    sync()
    once = one_call_s(call)
    reps = max(3, int(seconds / once))
    start = time.time()
    if DEVICE != "cuda":
        for _ in range(reps):
            call()
        stop = time.time()
        elapsed = stop - start
    else:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(reps):
            call()
        end.record()
        end.synchronize()
        stop = time.time()
        elapsed = begin.elapsed_time(end) / 1e3
    return {"start": start, "end": stop, "calls": reps, "s_per_call": elapsed / reps, "rate": work * reps / elapsed}


def power_rows(out_path: str) -> None:
    """`--power`: steady board power, SM clock and rate of sustained kernels (module docstring); the JSON gets
    only these rows ('power')."""
    seconds = 0.2 if QUICK else 4.0
    n = 256 if QUICK else 8192
    sampler = PowerSampler()
    result = {"device": device_info(), "power": []}

    def record(name: str, row: dict, unit: str) -> None:
        time.sleep(0.2)   # the sampler's last readings of the window reach its file
        row.update(name=name, unit=unit, board=sampler.window(row["start"], row["end"],
                                                               skip_s=0.0 if "burst" in name else 1.0))
        result["power"].append(row)
        board = row["board"]
        log("power", name, f"{row['rate'] / 1e12:.1f} T{unit}", board.get("samples"),
            {k: round(board[k]["median"]) for k in ("power_w", "sm_clock_mhz") if k in board},
            board.get("power_capped_fraction"))
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)

    time.sleep(1 if QUICK else 5)
    idle_start = time.time()
    time.sleep(seconds)
    record("idle", {"start": idle_start, "end": time.time(), "rate": 0.0}, "none")
    burst = fp16_matmul(n, n, n)
    burst()
    sync()
    time.sleep(1 if QUICK else 5)
    row = sustained(burst, 2 * n**3, 0.02)
    record(f"fp16 gemm {n}^3 burst: first 20 ms after 5 s idle", row, "flop/s")
    for name, call, work, unit in (
            (f"fp16 gemm {n}^3 randn", burst, 2 * n**3, "flop/s"),
            (f"fp16 gemm {n}^3 zeros", (lambda a=torch.zeros(n, n, device=DEVICE, dtype=HALF): torch.matmul(a, a)),
             2 * n**3, "flop/s"),
            (f"fp16 gemm {n // 2}^3 randn", fp16_matmul(n // 2, n // 2, n // 2), 2 * (n // 2)**3, "flop/s"),
            (f"fp16 gemm 512x{n * 3 // 2}x{n * 3 // 2} randn", fp16_matmul(512, n * 3 // 2, n * 3 // 2),
             2 * 512 * (n * 3 // 2)**2, "flop/s"),
            (f"fp8 gemm {n}^3 randn", fp8_matmul(n, n, n) if DEVICE == "cuda" else burst, 2 * n**3, "flop/s")):
        record(name, sustained(call, work, seconds), unit)
        time.sleep(0 if QUICK else 2)
    src = torch.randn((2**30 if not QUICK else 2**20) // 2, device=DEVICE, dtype=HALF)
    dst = torch.empty_like(src)
    record("copy 1 GiB", sustained(lambda: dst.copy_(src), 2 * src.numel() * 2, seconds), "byte/s")
    x = torch.randn(1, n * 2, device=DEVICE, dtype=HALF)
    w = torch.randn(n * 2, n * 2, device=DEVICE, dtype=HALF)
    record(f"gemv {n * 2}x{n * 2}", sustained(lambda: torch.matmul(x, w), w.numel() * 2, seconds), "byte/s")
    # the same kernels on operands that stay in L2 (16 MiB): the on-chip path and the SMs' share without HBM
    x_l2 = torch.randn(1, n // 2, device=DEVICE, dtype=HALF)
    w_l2 = torch.randn(n // 2, n // 4, device=DEVICE, dtype=HALF)
    src_l2 = torch.randn(2**22, device=DEVICE, dtype=HALF)   # 8 MiB read, 8 MiB written
    dst_l2 = torch.empty_like(src_l2)
    calls = 200   # microsecond kernels: replayed from a CUDA graph, back to back, not launched one by one
    for name, call, work in ((f"gemv {n // 2}x{n // 4} (L2-resident)", lambda: torch.matmul(x_l2, w_l2),
                              w_l2.numel() * 2),
                             ("copy 8 MiB (L2-resident)", lambda: dst_l2.copy_(src_l2), 2 * src_l2.numel() * 2)):
        replay, per = replayed(call, calls)
        record(name, sustained(replay, work * per, seconds), "byte/s")
    result["sampler_stderr"] = sampler.stop()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    log("done", result["sampler_stderr"])


def power_path_rows(out_path: str) -> None:
    """`--power-paths`: board power of memory-bound kernels, each held 4 s as in `--power`: a GEMV, skinny GEMMs
    and an in-place add, each from HBM and from 16 MiB that stays in L2; the JSON gets only these rows
    ('power_paths'), with each kernel's name (cuBLAS ran the GEMVs as tiled nvjet kernels too)."""
    seconds = 0.2 if QUICK else 4.0
    sampler = PowerSampler()
    result = {"device": device_info(), "power_paths": []}
    calls = 200   # kernels of microseconds, replayed from a CUDA graph back to back

    def gemm_call(m: int, n: int, k: int):
        return fp16_matmul(m, n, k)

    cases = []
    x, w = torch.randn(1, 16384, device=DEVICE, dtype=HALF), torch.randn(16384, 16384, device=DEVICE, dtype=HALF)
    cases.append(("gemv 16384x16384 (HBM)", lambda: torch.matmul(x, w), w.numel() * 2, False))
    x2, w2 = torch.randn(1, 4096, device=DEVICE, dtype=HALF), torch.randn(4096, 2048, device=DEVICE, dtype=HALF)
    cases.append(("gemv 4096x2048 (L2)", lambda: torch.matmul(x2, w2), w2.numel() * 2, True))
    for m, n, in_l2 in ((32768, 32, False), (32768, 128, False), (1024, 32, True)):
        where = "L2" if in_l2 else "HBM"
        cases.append((f"gemm {m}x{n}x8192 ({where})", gemm_call(m, n, 8192), m * 8192 * 2, in_l2))
    big = torch.randn(2**29, device=DEVICE, dtype=HALF)   # 1 GiB
    small = torch.randn(2**22, device=DEVICE, dtype=HALF)   # 8 MiB
    cases.append(("add in place 1 GiB (HBM)", lambda: big.add_(1.0), 2 * big.numel() * 2, False))
    cases.append(("add in place 8 MiB (L2)", lambda: small.add_(1.0), 2 * small.numel() * 2, True))
    time.sleep(1 if QUICK else 5)
    idle_start = time.time()
    time.sleep(seconds)
    rows = [{"name": "idle", "start": idle_start, "end": time.time(), "rate": 0.0, "unit": "none"}]
    for name, call, work, in_l2 in cases:
        names, kernel_s, _ = kernels(call)
        run, per = replayed(call, calls) if in_l2 else (call, 1)
        row = sustained(run, work * per, seconds)
        row.update(name=name, unit="byte/s", kernels=names, kernel_s=kernel_s)
        rows.append(row)
        log("power path", name, f"{row['rate'] / 1e12:.2f} TB/s", names[:1])
        time.sleep(0 if QUICK else 2)
    time.sleep(0.2)
    for row in rows:
        row["board"] = sampler.window(row["start"], row["end"])
        log("board", row["name"], {k: round(v["median"]) for k, v in row["board"].items() if isinstance(v, dict)
                                   and k in ("power_w", "sm_clock_mhz")})
    result["power_paths"] = rows
    result["sampler_stderr"] = sampler.stop()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


def transient_rows(out_path: str) -> None:
    """`--transient`: an fp16 8192^3 GEMM on random operands called back to back for about 2.5 s after 5 s idle,
    each call timed by its own CUDA events, while NVML is read every 5 ms: the throughput of each call against the
    SM clock and board power as the power limiter takes the clock down (the JSON gets 'transient': the calls'
    start offsets and durations from the first call's start, and the readings with their wall times)."""
    n = 256 if QUICK else 8192
    calls = 20 if QUICK else 1500
    sampler = PowerSampler(0.005)
    call = fp16_matmul(n, n, n)
    call()
    sync()
    time.sleep(1 if QUICK else 5)
    result = {"device": device_info(), "transient": {"n": n, "calls": calls}}
    if DEVICE != "cuda":
        starts, ends = [], []
        wall0 = time.time()
        for _ in range(calls):
            starts.append(time.time() - wall0)
            call()
            ends.append(time.time() - wall0)
    else:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
        wall0 = time.time()
        for begin, end in events:
            begin.record()
            call()
            end.record()
        events[-1][1].synchronize()
        first = events[0][0]
        starts = [first.elapsed_time(begin) / 1e3 for begin, _ in events]
        ends = [first.elapsed_time(end) / 1e3 for _, end in events]
    time.sleep(0.3)
    result["transient"].update(wall_start=wall0, start_s=starts, end_s=ends,
                               tflops=[2 * n**3 / (e - b) / 1e12 if e > b else None for b, e in zip(starts, ends)],
                               samples=[row for row in sampler.samples() if row[0] >= wall0 - 1.0],
                               sample_fields=list(SAMPLE_FIELDS))
    result["sampler_stderr"] = sampler.stop()
    tf = [t for t in result["transient"]["tflops"] if t]
    log("transient", len(tf), "calls; TFLOPS first 10", [round(t) for t in tf[:10]], "last 10",
        [round(t) for t in tf[-10:]], "samples", len(result["transient"]["samples"]))
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


def settled(call, work: float, settle_s: float, seconds: float) -> dict:
    """`call` back to back for `settle_s` untimed (the power limiter reaches its steady clock), then for about
    `seconds` more timed by CUDA events: the rate of the steady part only, and its wall window."""
    call()
    sync()
    once = one_call_s(call)
    for _ in range(max(1, int(settle_s / once))):
        call()
    row = sustained(call, work, seconds)   # it first waits for the settling calls: its window is its own calls
    row["settle_s"] = settle_s
    return row


def held_gemm_rows(out_path: str) -> None:
    """`--held-gemms`: every fp16 GEMM shape of the main run's grid (gemm_grid) held under the power limit, 1 s to
    settle and 1 s timed, NVML every 20 ms over the timed second: the sustained state of each shape, with its SM
    clock, board power and how often the limiter held the clock; then a few shapes' first 20 ms after 3 s idle,
    NVML every 5 ms (the burst state). Short kernels are replayed from a CUDA graph (graph_calls per replay), as in
    the main run's graph rows, and each shape's cuBLAS kernels are named. `--shapes` holds only those shapes and
    times no bursts. The JSON gets 'held_gemms' and 'burst_gemms'."""
    settle_s, seconds = (0.05, 0.05) if QUICK else (1.0, 1.0)
    result = {"device": device_info(), "held_gemms": [], "burst_gemms": []}

    def save() -> None:
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)

    sampler = PowerSampler(0.02)
    shapes = ARGS.shapes or [shape for series in gemm_grid().values() for shape in series]
    for m, n, k in dict.fromkeys(shapes):   # 8192^3 is in two series: held once
        call = fp16_matmul(m, n, k)
        names = kernels(call)[0]
        run, calls = replayed(call, graph_calls(one_call_s(call)))
        row = settled(run, 2 * m * n * k * calls, settle_s, seconds)
        time.sleep(0.1)   # the sampler's last readings of the window reach its file
        row.update(m=m, n=n, k=k, calls_per_replay=calls, tflops=row["rate"] / 1e12, kernels=names,
                   board=sampler.window(row["start"], row["end"], skip_s=0.0))
        result["held_gemms"].append(row)
        board = row["board"]
        log("held", (m, n, k), round(row["tflops"], 1), {f: round(board[f]["median"]) for f in
                                                          ("power_w", "sm_clock_mhz") if f in board},
            board.get("power_capped_fraction"), names)
        save()
        del call, run
    sampler.stop()
    sampler = PowerSampler(0.005)
    burst = [] if ARGS.shapes else [(256, 256, 256)] if QUICK else [(3072, 3072, 3072), (4096, 4096, 4096),
                                                                    (256, 12288, 12288), (128, 12288, 12288)]
    for m, n, k in burst:
        call = fp16_matmul(m, n, k)
        run, calls = replayed(call, graph_calls(one_call_s(call)))
        run()
        sync()
        time.sleep(0.5 if QUICK else 3.0)
        row = sustained(run, 2 * m * n * k * calls, 0.02)
        time.sleep(0.1)
        row.update(m=m, n=n, k=k, calls_per_replay=calls, tflops=row["rate"] / 1e12,
                   board=sampler.window(row["start"], row["end"], skip_s=0.0))
        result["burst_gemms"].append(row)
        log("burst", (m, n, k), round(row["tflops"], 1), row["board"].get("sm_clock_mhz"))
        save()
    result["sampler_stderr"] = sampler.stop()
    save()
    log("done", result["sampler_stderr"])


def held_launch_rows(out_path: str) -> None:
    """`--held-launch`: what a kernel costs beyond its work on a board held busy, against the same after idle. The
    `--launch` kernels (a 1-element add, an add over 132 x 1,024 elements, a 64^3 GEMM) and a 1024^3 GEMM, each
    captured many times in one CUDA graph: replayed for 20 ms after 3 s idle (as `--launch` times them), then held
    (1 s to settle, 1 s timed) with NVML every 20 ms, then profiled at once (the kernels' own duration while the
    board is still warm). The JSON gets 'held_launch': seconds per call in each state, and the profiled duration."""
    settle_s, seconds = (0.05, 0.05) if QUICK else (1.0, 1.0)
    one, wave = torch.zeros(1, device=DEVICE), torch.zeros(132 * 1024, device=DEVICE)
    a, b = (torch.randn(64, 64, device=DEVICE, dtype=HALF) for _ in range(2))
    gemm_1024 = fp16_matmul(1024, 1024, 1024)
    result = {"device": device_info(), "held_launch": []}
    sampler = PowerSampler(0.02)
    for name, call, calls in (("add_1_element", lambda: one.add_(1.0), 1000),
                              ("add_132x1024", lambda: wave.add_(1.0), 1000),
                              ("matmul_64x64x64", lambda: torch.matmul(a, b), 1000),
                              ("matmul_1024x1024x1024", gemm_1024, 200)):
        calls = 10 if QUICK else calls
        replay, per = replayed(call, calls)
        replay()
        sync()
        time.sleep(0.2 if QUICK else 3.0)
        after_idle = per_call_s(replay) / per
        row = settled(replay, per, settle_s, seconds)
        names, kernel_s, kernels_per_call = kernels(call)
        time.sleep(0.1)
        row.update(name=name, calls_per_replay=per, after_idle_s=after_idle, held_s=row["s_per_call"] / per,
                   kernel_s=kernel_s, kernels_per_call=kernels_per_call, kernels=names,
                   board=sampler.window(row["start"], row["end"], skip_s=0.0))
        result["held_launch"].append(row)
        log("held launch", name, f"after idle {after_idle * 1e6:.2f} us, held {row['held_s'] * 1e6:.2f} us, "
            f"profiled {kernel_s * 1e6:.2f} us", row["board"].get("sm_clock_mhz"))
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)
    result["sampler_stderr"] = sampler.stop()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
