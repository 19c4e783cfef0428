"""GPU validation (issue 18) beyond the targets themselves: the GPU rows' targets and known gaps live in
validation/targets.py and are asserted by tests/validation/test_report.py with every other row; here, that those
targets cover each group on each GPU with rows that must be met, and that `python -m validation.gpu` judges its
table by the same targets."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import validation.gpu as gpu
from validation.comparison import Comparison
from validation.targets import TARGETS

GPU_TARGETS = {key: target for key, target in TARGETS.items() if key.startswith("gpu: ")}


def _group(key: str) -> str:
    """GEMM (GEMV among them), attention, decode, prefill or board power (and energy), from a GPU row's quantity."""
    for word, group in (("board power", "power"), ("board energy", "power"), ("GEMM", "gemm"), ("GEMV", "gemm"),
                        ("FlashAttention", "attention"), ("decode", "decode"), ("prefill", "prefill")):
        if word in key:
            return group
    raise AssertionError(f"{key}: no group")


def test_gpu_targets_are_15_percent_on_kernels_and_20_on_decode() -> None:
    """Issue 18's targets: GEMM and attention within 15 %, decode within 20 %, and prefill, the other whole step,
    as decode; a board's power under a kernel within issue 17's 25 % for power."""
    tolerance = {"decode": 0.20, "prefill": 0.20, "power": 0.25}
    assert {key: target.tolerance for key, target in GPU_TARGETS.items()} == \
        {key: tolerance.get(_group(key), 0.15) for key in GPU_TARGETS}


def test_each_group_on_each_gpu_has_rows_that_must_be_met() -> None:
    """At least 25 GPU rows carry no gap (test_report asserts them), and those cover GEMM on the A100 and the
    H100, attention on the A100 and the H100, decode on the A100 and prefill on the H100 and H200: no group is
    excused wholesale as a known gap."""
    must_meet = [key for key, target in GPU_TARGETS.items() if target.gap is None]
    assert len(must_meet) >= 25
    covered = {(_group(key), key.split()[1]) for key in must_meet}
    assert {("gemm", "A100"), ("gemm", "H100"), ("attention", "A100"), ("attention", "H100"),
            ("decode", "A100"), ("prefill", "H100"), ("prefill", "H200")} <= covered


def test_main_prints_the_table_and_judges_it_by_the_report_targets(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m validation.gpu` prints the comparison table, then each row outside its validation/targets.py
    target with the gap named there (two rows given: one 5 % off a 15 % target, one 30 % off a named gap)."""
    table = [Comparison("H100 GEMM 4096x4096x4096 (TFLOPS, cuBLAS)", 100.0, 105.0),
             Comparison("A100 GEMM 8192x64x64 (TFLOPS, LLMCompass)", 100.0, 130.0)]
    monkeypatch.setattr(gpu, "rows", lambda: table)
    gpu.main()
    out = capsys.readouterr().out
    assert "H100 GEMM 4096x4096x4096" in out and "1 of 2 within target" in out
    assert "outside 15 %: gpu: A100 GEMM 8192x64x64 (TFLOPS, LLMCompass) (+30.0 %): LLMCompass's" in out


def test_held_rows_take_the_median_of_the_passes_and_bursts_drop_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A held shape's row is the median of its passes (100, 300, 200 TFLOPS: 200) against ours as configured; a burst
    row (the first 20 ms after idle) is against ours without dvfs, the state before the limiter acts."""
    asked = []
    monkeypatch.setattr(gpu, "gemm_tflops", lambda arch, m, n, k, extra=(): asked.append(extra) or 50.0)

    def held(tflops: float, clock: float) -> dict:
        board = {"sm_clock_mhz": {"median": clock, "min": clock, "max": clock}, "power_w": {"median": 700.0},
                 "power_capped_fraction": 1.0}
        return {"m": 1024, "n": 1024, "k": 1024, "tflops": tflops, "board": board}

    measured = {"held_gemms": [[held(100.0, 1400)], [held(300.0, 1500)], [held(200.0, 1300)]],
                "burst_gemms": [held(700.0, 1980)]}
    steady, burst = gpu.held_rows("H100", gpu.H100, measured)
    assert (steady.quantity, steady.published, steady.ours) == ("H100 GEMM 1024x1024x1024 held 1 s (TFLOPS, measured "
                                                                "here)", 200.0, 50.0)
    assert "median of 3 passes, SM 1400 MHz" in steady.note
    assert burst.published == 700.0 and "first 20 ms after idle" in burst.quantity
    assert asked == [(gpu.GRAPH,), (gpu.GRAPH, gpu.NO_POWER_LIMIT)]


def test_a_shape_held_below_the_cap_adds_the_boards_energy_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the cap the board's power is the kernel's: energy per call = power x 2MNK / rate (400 W x 2^31 FLOP at
    200 TFLOPS = 4.29 mJ), against ours' energy; at the cap (the test above) no such row."""
    monkeypatch.setattr(gpu, "gemm_tflops", lambda arch, m, n, k, extra=(): 50.0)
    monkeypatch.setattr(gpu, "gemm_run", lambda arch, m, n, k, extra=(): SimpleNamespace(energy_j=5e-3, latency_s=1e-5))
    board = {"sm_clock_mhz": {"median": 1980.0}, "power_w": {"median": 400.0}, "power_capped_fraction": 0.0}
    measured = {"held_gemms": [[{"m": 1024, "n": 1024, "k": 1024, "tflops": 200.0, "board": board}]]}
    _, energy = gpu.held_rows("H200", gpu.H200, measured)
    assert energy.quantity.startswith("H200 board energy per call, GEMM 1024x1024x1024 held below the cap")
    assert energy.published == pytest.approx(400.0 * 2 * 1024**3 / 200e12 * 1e3) and energy.ours == pytest.approx(5.0)
