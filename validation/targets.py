"""Every validated quantity's target tolerance, with its reason, and the mechanism behind each known gap.

One place (issue 17, item 4). A target is the largest |ours - published| / published that counts as reproducing a
published figure; its reason says where the bound comes from (the project's acceptance criteria and why that
accuracy is meaningful for the figure). A bound is never the measured error plus a margin: a tolerance that follows
the measurement cannot fail. A target the model does not meet today carries `gap`, the mechanism that is missing;
tests/validation/test_report.py marks those rows xfail(strict=True), so closing a gap turns the test red until the
`gap` text is removed here.

Keys are "module: quantity", the module being the validation script (validation/report.py REGISTRY) and the
quantity the `Comparison.quantity` it returns.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """The bound a validated quantity must meet, why, and (while unmet) the mechanism missing."""

    tolerance: float          # largest accepted |relative error|, a fraction
    reason: str               # why this bound
    gap: str | None = None    # when known unmet: the missing mechanism (named in REPORT.md)


# --- Reasons -----------------------------------------------------------------------------------
_FUSEMAX = ("issue 9 acceptance: BERT 1K latencies and the speedup within 20 % of FuseMax (MICRO 2024), whose "
            "figures are themselves an analytical model (its artifact's Timeloop/closed forms), not silicon")
_FUSEMAX_UTIL = ("FuseMax reports 2-D utilization to two or three digits (0.125, 0.89); a 10 % bound tells "
                 "0.89 from the next plausible schedule (one skew more per head gives 0.81)")
_NEUPIMS = ("issue 17 item 5: within 20 % of NeuPIMs (ASPLOS 2024) abstract ratios, which are means over models, "
            "datasets and batch sizes, so a single configuration is not held closer than that")
_FLIGHTLLM_VHK = ("issue 8 acceptance: within 15 % of the FlightLLM demo profiler's figures (an analytical "
                  "instruction-level model of the same design)")
_FLIGHTLLM_U280 = ("issue 17 item 5: within 20 % of the on-board 55 tokens/s (FlightLLM demo README, paper "
                   "Fig. 1); a measurement on silicon of a design we describe from the profiler, not its netlist")
_INTAR = ("issue 17 item 2: InTAR's sequential and dataflow benchmark cycles within 25 %, the ranking right; an "
          "on-board count of a design we describe from its HLS source, not from its netlist or schedule report")
_TMAC = ("issues 6 and 17 (item 1): within 25 % of T-MAC (EuroSys 2025) tokens/s on M2 Ultra; a CPU run varies "
         "by several per cent with the OS, clocks and context length the paper does not report")
_LUT_BAND = ("LUT Tensor Core (ISCA 2025) states one band, 4-6x over MAC tensor cores: its midpoint 5x +- 20 % is "
             "the band itself. The band is compared at the artifact's own precision only (INT2 weights x FP16 "
             "activations); the paper states no per-precision multiple (validation/lut_notes.md)")
_SILICON = ("issue 17 item 3: published die areas and power within 25 %, per component where the paper breaks "
            "it down (floorplan shares read off a die photo carry a few per cent, a power measurement more)")
_GPU_KERNEL = ("issue 18 acceptance: GEMM and FlashAttention kernels within 15 % of published measurements on the "
               "same GPU; a kernel-level model (CTA tiles, waves, occupancy, achievable bandwidth) resolves that much, "
               "as LLMCompass's GPU model does (10.4 % per operator)")
_GPU_DECODE = ("issue 18 acceptance: Llama-2-7B decode within 20 % of a named serving framework's published tokens/s; "
               "the measurement includes the framework's per-step host work (scheduling, sampling) beside the kernels")
_GPU_MEASURED = ("issue 18 acceptance ('also checked against GPU figures it was not tuned to'): the kernel target of "
                 "15 %, against kernels measured on this workplace's H100 SXM5 80GB and H200 SXM 141GB "
                 "(validation/gpu_measure.py, validation/gpu_measured_h100.json and _h200.json) that no parameter of "
                 "either config was set from (the H100's kernel-start constants and mac_energy come from other runs "
                 "in its file, kernels that do almost nothing and one GEMM held 4 s, none of them a row); the H200 "
                 "config is written from its datasheet and the H100's SM")
_GPU_MEASURED_DECODE = ("issue 18: the decode target of 20 %, against Llama-2-7B decode steps measured on this "
                        "workplace's H100 SXM5 80GB and H200 SXM 141GB as gpt-fast runs them (torch.compile'd layers "
                        "in a CUDA graph); the step's kernels only, no serving framework's host work, so nothing "
                        "outside the model is in the figure")
_GPU_MEASURED_PREFILL = ("issue 18: the decode target of 20 % for the other end-to-end step, Llama-2-7B prefill, "
                         "measured on this workplace's H100 SXM5 80GB and H200 SXM 141GB with torch.compile'd layers "
                         "in a CUDA graph (validation/gpu_measure.py --compiled-prefill); the pass's kernels only, "
                         "so nothing outside the model is in the figure")
_VERSUS_GPU = ("issue 18 item 5: a seed paper's ratio over a GPU within 20 %, the decode target of issue 18: both "
               "sides are decode throughput, and each side's model is held to 15-20 % of its own published figure "
               "(neupims, flightllm and gpu rows)")
_PEER = ("issue 15 acceptance ('a peer agrees'): every halving of the buffers moves our latency and energy the "
         "way ZigZag 3.9.1's move (never down; up where the peer's go up), so the bound is 0 disagreements")
_PEER_ACCELFORGE = ("issue 15 acceptance ('a peer agrees'), a second peer: every halving of the buffers moves our "
                    "latency and energy the way AccelForge 1.0.467's move on its tpu_v4i example (never down; up where "
                    "the peer's go up), so the bound is 0 disagreements")

# --- Gaps (the mechanism each unmet target lacks) ---------------------------------------------------
_TMAC_THREADS = ("issue 17 item 1: modelled (engines/multicore.py, lut_tensor_core.py): cores, clusters, SIMD pipes, "
                 "per-core and per-die bandwidth, ggml's 3 barriers per operator at the M2 Ultra's measured "
                 "core-to-core latencies (1.9 ms per Llama-2-7B token at 8 threads), T-MAC's table build on thread 0 "
                 "(0.65 ms) and ggml's row split (an operator over one token's row runs on one thread, ceil(rows / n) "
                 "rows per thread: 0.16 ms). T-MAC's own 1-8 thread sweep (assets/e2e_threads.zip) follows Amdahl's "
                 "shape, t(n) = t(1) / n + b (1 - 1 / n), b = 8-17 ms per token (Llama-2-7B W2 T-MAC 13.6, llama.cpp "
                 "11.8; W4 17.0, 7.9; BitNet-3B 10.1, 7.6), and the same b with the faster kernels of the profiling "
                 "table gives its multi-thread rows within 9 %: the missing cost is per token, added by threading and "
                 "of the stack, not of the kernel. What ggml at T-MAC's pin (kaleid-liner/llama.cpp "
                 "0358ebc) runs serially or unevenly beyond the modelled comes to at most about 2-3 ms at 8 threads "
                 "(thread 0's scalar activation conversion or Q8_K quantization, T-MAC's tile split, per-token thread "
                 "creation); the remaining ~10 ms has no cited mechanism (validation/lut_notes.md)")
_TMAC_OTHER_CPU = ("issue 17 item 1: the multi-core mechanism predicts another CPU from its datasheet and a STREAM "
                   "measurement of it; T-MAC's own profiling table gives the Raspberry Pi 5 at 1 and 2 threads, held "
                   "to the same 25 % as M2 Ultra")
_LLAMACPP_CHAIN = ("llama.cpp's Q2_K kernel reduces each 16-weight SDOT with ADDV and multiplies by its sub-block "
                   "scale in a serial scalar chain; we count SIMD issue slots only (validation/lut_notes.md)")
_BITNET_HEAD = ("BitNet-3B runs as T-MAC ran it (2-bit blocks; the F16 token embedding is also its LM head: "
                "validation/tmac.py TMAC_AS_RUN, from T-MAC's converter and llama.cpp build_bitnet at its pin), "
                "which with the cores' L1 caches took 7 points off; the rest has no cited mechanism: on one "
                "thread T-MAC gets through BitNet-3B's 3.22 G block weights at 22.08 tokens/s, 71 G a second, and "
                "Llama-2-7B W2's 6.48 G at 16.68, 108 G a second, on the same kernel; ours runs both at 104 G a "
                "second (Llama-2-7B W2 on one thread is within 12 %; validation/lut_notes.md)")
_LUT_EFFICIENCY = ("datapath energy leaves out what synthesis counts and does not shrink with the LUT datapath: "
                   "table broadcast wires across the N columns, weight-index fan-out, clock tree and control "
                   "(validation/lut_notes.md)")
_PEER_GAP = ("issue 15: capacity binds (tiles that do not fit are staged from the backing store and pay for it; a "
             "staging level must hold two cycles of its operand's edge transfer, or no mapping runs) and neither "
             "our latency nor our energy falls as the buffers halve. The 13 disagreeing steps are ZigZag rising "
             "where ours stays flat, by mechanisms of ZigZag's model that ours does not share "
             "(validation/peers/zigzag_buffer_sweep.md, row by row): its per-PE output registers lose partial-sum "
             "reuse as LOMA re-tiles a smaller buffer (8 steps: DRAM words constant, register and sram_2MB words "
             "up; our systolic array sends its partial sums out after every fold at every size); its "
             "transfer-window stalls move its latency with every access count unchanged (2); ours keeps or stages "
             "whole operand tiles, so it loses its on-chip reuse in fewer, larger steps, one halving before "
             "ZigZag's gradual re-tiling does, and is on a plateau where ZigZag still rises (3)")
_PEER_ACCELFORGE_GAP = ("issue 15: of 23 committed halvings one disagrees, ResNet-18 conv5 at 1/512x "
                        "(validation/peers/accelforge_buffer_sweep.md): AccelForge's latency doubles (4,148.5 -> "
                        "8,467.2 cycles) as its mapping re-reads every weight once per output row and its "
                        "GlobalBuffer read port binds, while ours stays at 29,351 cycles: our weight-stationary folds"
                        " are bound by their fill and drain (36 folds, 766 cycles each), which our larger traffic "
                        "stays under, where AccelForge's MACs take their ideal 1.68 us; both energies rise. A "
                        "difference of the timing models (the kind two of ZigZag's steps showed before partial sums took their 16-bit width), not of the buffer"
                        " sizes")

_FP8_SHORT = ("the one FP8 GEMM short enough for its fixed costs to dominate: cuBLASLt's 1024^3 FP8 kernel (one wave "
              "of 128 CTAs) profiles at 4.67 us on the H100 (4.83 on the H200), the FP16 one at 5.76 us with twice the"
              " MAC time, so about 3.6 us of either is not proportional to its MACs; ours charges the kernel 4.0 us "
              "(set-up, first load and drain, and 8 k-steps of 128 at the sustained rate the long GEMMs set), where "
              "the FP16 kernel comes within 5 %. A main loop of a few k-steps ramping up below that rate is not "
              "modelled (one tensor efficiency for every K)")
_H200_SKINNY = ("8192 x 64 x 64 moves 2 MiB in and 1 MiB out; ours takes 3.0 us (2.2 us of kernel starts: the graph "
                "gap, the GEMM set-up and the first load, both constants the H100's), the rest HBM traffic at the "
                "H200's 4.8 TB/s x 0.84, an efficiency assumed for HBM3e (config modelling decisions). The board takes"
                " 3.52 us, no faster than the H100 (3.66 us, within 9 % of ours), so its extra bandwidth does not show"
                " at this size, where ours gives it 11 %; the H200's own launch rows (1.03 us gap, 2.26 us for a 64^3 "
                "GEMM) sum to the H100's, so the kernel-start constants are not the difference. Held back to back for "
                "a second the same kernel takes 2.77 us on the H200 and 2.88 on the H100 (the held rows: ours -8.2 "
                "and -14.2 %): the 20 ms window caught a slower state, which the file does not record")
_GPU_BOARD_POWER = ("issue 17 item 3's power target (25 %), for the board power NVML reads under a kernel held 4 s "
                    "(validation/gpu_measure.py --power); ours is static and clocks' power plus the kernel's energy "
                    "over its time")
_BURST_WINDOW = ("these rows are timed in windows of about 20 ms, each after host work (validation/gpu_measure.py "
                 "MIN_TIMED_S), where a board that was idle runs its kernels above its TDP at the 1,980 MHz boost clock"
                 " for tens of milliseconds (the H100 file's transient: 60-80 ms of 8192^3 at 768 TFLOPS before the cap"
                 " lowers the clock); ours is the sustained state, every kernel held to 700 W (engines/gpu.py, 'Power"
                 " limit'). The files' burst rows (each shape's first 20 ms after 3 s idle, NVML every 5 ms: 1,980 MHz "
                 "throughout) time 3072^3 at 711 and 741 TFLOPS on the H100 and H200 (these windows: 724 and 723), "
                 "256 x 12288^2 at 662 and 684 (667 and 604) and 128 x 12288^2 on the H200 at 534 (525): the windows "
                 "caught the burst state, and ours without dvfs (that state) is within 15 % of every burst row. Held "
                 "for a second, the same shapes run at 632 and 634, 594 and 602, and 479 (the held rows)")
_HELD_AT_CAP = ("a kernel of a few microseconds held back to back, which ours holds to 700 W at a lower clock than the "
                "board: ours spends 5.24 mJ a 1024^3 call on the H100 (MACs 2.68, L2 1.60 of it: its 128 x 64 "
                "tiles read 40 MiB from the L2 a call at the 6.565 pJ per bit a streaming GEMV measured) and takes "
                "7.49 us, where the board held 1,845 MHz at 633-699 W for 5.78 us, about 3.8 mJ. The board's state "
                "is not the cause (--held-launch: 1024^3 starts every 5.81 us after 3 s idle and 5.82 held, "
                "profiled 5.73). A smaller part: the calls repeat the same operands, which stay in the L2, where "
                "ours reads a lone GEMM's inputs from HBM every call; with them homed in the L2 (a copy einsum "
                "before the GEMM) ours takes 7.02 us. The short row of 1024^3 met its target by another error, "
                "its 7.25 us the median of 5.63, 7.25 and 7.52, the later two timed after the large shapes with "
                "the clock the limiter left. Whether a GEMM's tile reads cost less than a streaming GEMV's L2 "
                "bits wants the board's power under GEMMs of several tile shapes held at the boost clock, not "
                "measured yet")
_HELD_WARM_L2 = ("the calls repeat the same operands, 4 MiB in and 4 MiB out, which stay in the L2 from call to call; "
                 "ours reads a lone GEMM's inputs from HBM and writes its output there in every call (they cross the "
                 "chip's edge: sim/placement.py), 1.62 of its 5.99 us waiting on HBM. With the inputs homed in the L2 "
                 "(a copy einsum before the GEMM) ours takes 5.20 us against the board's 4.72, the output's 4 MiB to "
                 "HBM bounding the rest. Serving a repeated kernel's operands from the L2 it left them in needs "
                 "placement to route a tensor read by more than one kernel through its on-chip home after its first "
                 "reader, not done")
_HELD_SKINNY_128 = ("a 3.3 us kernel held back to back; ours takes 4.49 us under the default EDP objective (a CTA tile "
                    "with less L2 traffic, as in the short row) and 3.98 under the latency objective; 0.09 us of the "
                    "4.49 wait on HBM (its 2 MiB of inputs stay in the L2 between calls), and the "
                    "other 0.7 us are not separated by these figures (a 64^3 GEMM starts every 2.15-2.28 us, held or "
                    "after idle, where ours takes 2.28)")
_HELD_H200_ENERGY = ("skinny GEMMs streaming the 302 MB operand from HBM3e under the cap: the H200 spends 56 mJ a call "
                     "on 128 x 12288^2 (695 W x 81 us) where the H100 spends 75 mJ (697 W x 107 us) and ours charges "
                     "the H200 74 mJ (700 W x 105 us), so ours holds the clock lower than the board does. The H200 "
                     "config takes the H100's per-operation energies; the H200's own L2-resident kernels would give "
                     "2.44 pJ a MAC and 5.84 pJ an L2 bit (0.75 and 0.89 of the H100's), left as its check rather "
                     "than its calibration (the H100 rows of these shapes are within 15 %)")
_EDP_PICK = ("a 3.7 us kernel reading 2 MiB: under the default EDP objective the mapper picks a CTA tile with less "
             "L2 traffic (the L2's 6.565 pJ per bit, measured, is ten times the SRAM model's) and a longer time, 59.8 "
             "TFLOPS; the fastest tile, cuBLAS's choice, gives 67.5 (-9.1 %) under the latency objective")
_H100_GAPS = {(3072, 3072, 3072): _BURST_WINDOW, (256, 12288, 12288): _BURST_WINDOW, (8192, 128, 128): _EDP_PICK}
_H200_GAPS = {(8192, 64, 64): _H200_SKINNY, (3072, 3072, 3072): _BURST_WINDOW, (128, 12288, 12288): _BURST_WINDOW,
              (256, 12288, 12288): _BURST_WINDOW}
# per measured GPU: its gaps by GEMM shape, and which fp8 sizes and GEMV shapes miss by which mechanism
_MEASURED_GAPS = {"H100": (_H100_GAPS, {1024: _FP8_SHORT}, {}), "H200": (_H200_GAPS, {1024: _FP8_SHORT}, {})}
# GEMMs held 4 s under the power limit (validation/gpu.py SUSTAINED_GEMMS)
_SUSTAINED = (("", 8192, 8192, 8192), ("", 4096, 4096, 4096), ("", 512, 12288, 12288), ("fp8 ", 8192, 8192, 8192))
_SUSTAINED_GEMMS = {"H100": _SUSTAINED, "H200": _SUSTAINED}
_GPU_SUSTAINED = ("issue 18's kernel target of 15 %, against GEMMs held 4 s on this workplace's H100 and H200 under "
                  "their 700 W limit (validation/gpu_measure.py --power); the H100 config's power-limit constants come"
                  " from other runs (L2-resident kernels and no-kernel power at the boost clock, the clock-resolved "
                  "transient), and the H200 config takes the H100's")
_HELD_L2_ENERGY = ("ours' energy for a skinny GEMM held below the cap is mostly MACs and L2 traffic: 8192 x 256^2 on "
                   "the H100 costs 3.30 mJ a call of dynamic energy in ours (MACs 1.75 at 3.259 pJ, the L2 1.33 for 24"
                   " MiB of tile reads, fills and output writes at 6.565 pJ per bit, HBM 0.22) where the board spends "
                   "about 1.85 (its 2.44 less 124.47 W of static and clocks' power over its 4.72 us), and ours' longer"
                   " time adds 0.16 mJ of that power. The L2's per-bit energy, solved with the MAC energy from a GEMV "
                   "streaming 16 MiB from the L2 and a 1024 x 32 x 8192 GEMM, is more than a GEMM's tile traffic costs"
                   " the board (the 1024^3 held gap shows the same at the cap); the H200 also takes the H100's MAC "
                   "energy (its own L2-resident kernels give 2.44 pJ, not 3.259). Separating MAC and L2 energy under "
                   "GEMM tiles wants board power under GEMMs of several tile shapes at the boost clock")
# the held rows' gaps by GPU and shape (validation/gpu.py held_rows)
_HELD_GAPS = {"H100": {(1024, 1024, 1024): _HELD_AT_CAP, (8192, 128, 128): _HELD_SKINNY_128,
                       (8192, 256, 256): _HELD_WARM_L2},
              "H200": {(1024, 1024, 1024): _HELD_AT_CAP, (64, 12288, 12288): _HELD_H200_ENERGY,
                       (128, 12288, 12288): _HELD_H200_ENERGY, (256, 12288, 12288): _HELD_H200_ENERGY}}
_GPU_HELD = ("issue 18's kernel target of 15 %, against every GEMM shape of the grid held under the 700 W limit (1 s "
             "to settle, 1 s timed, median of three passes; validation/gpu_measure.py --held-gemms), which set no "
             "constant")
# the shapes both boards held below the cap (their energy per call is a row), with the gaps among them
_BELOW_CAP = ((8192, 64, 64), (8192, 128, 128), (8192, 256, 256))
_BELOW_CAP_GAPS = {"H100": {(8192, 128, 128): _HELD_L2_ENERGY, (8192, 256, 256): _HELD_L2_ENERGY},
                   "H200": {shape: _HELD_L2_ENERGY for shape in _BELOW_CAP}}
_GPU_HELD_ENERGY = ("issue 17 item 3's power target (25 %), for the board's energy per call (NVML's power x the time a "
                    "call takes) under a GEMM held below its cap (validation/gpu_measure.py --held-gemms), where the "
                    "power is the kernel's, not the limit's")
_GPU_BURST = ("issue 18's kernel target of 15 %, against a GEMM's first 20 ms after 3 s idle at the 1,980 MHz boost "
              "clock (validation/gpu_measure.py --held-gemms), against ours without dvfs: the state before the "
              "limiter acts")
_BURST_SHAPES = ((3072, 3072, 3072), (4096, 4096, 4096), (256, 12288, 12288), (128, 12288, 12288))
_MEASURED_GEMMS = [*((s, s, s) for s in (1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)),
                   *((m, 12288, 12288) for m in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)),
                   *((8192, n, n) for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768))]
_MEASURED_GEMVS = ((4096, 12288), (4096, 4096), (4096, 22016), (11008, 4096), (4096, 32000), (8192, 8192),
                   (16384, 16384))
_MEASURED_PREFILLS = ((1, 128), (1, 512), (1, 1024), (1, 2048), (1, 4096), (4, 512), (8, 512))
_MEASURED_DECODES = ((1, 64), (1, 384), (8, 64), (16, 64), (32, 64), (64, 64), (1, 1024), (1, 4095), (8, 1024),
                     (16, 4095), (32, 2048))


def _measured_targets(label: str) -> dict[str, Target]:
    """The targets of one measured GPU's rows (validation/gpu.py measured_rows), with its named gaps."""
    gemms, fp8, gemvs = _MEASURED_GAPS[label]
    return {
        **{f"gpu: {label} GEMM {m}x{n}x{k} (TFLOPS, measured here)": _t(0.15, _GPU_MEASURED, gemms.get((m, n, k)))
           for m, n, k in _MEASURED_GEMMS},
        **{f"gpu: {label} GEMM fp8 {n}x{n}x{n} (TFLOPS, measured here)": _t(0.15, _GPU_MEASURED, fp8.get(n))
           for n in (1024, 2048, 4096, 6144, 8192, 12288, 16384)},
        **{f"gpu: {label} GEMV {k}x{n} (weight GB/s, measured here)": _t(0.15, _GPU_MEASURED, gemvs.get((k, n)))
           for k, n in _MEASURED_GEMVS},
        **{f"gpu: {label} FlashAttention-2 fwd d{d} seq {n} (TFLOPs/s, measured here)": _t(0.15, _GPU_MEASURED)
           for d in (64, 128) for n in (512, 1024, 2048, 4096, 8192, 16384)},
        **{f"gpu: {label} Llama-2-7B decode b{b} kv{kv} (tokens/s, torch.compile, measured here)":
           _t(0.20, _GPU_MEASURED_DECODE) for b, kv in _MEASURED_DECODES},
        **{f"gpu: {label} Llama-2-7B prefill b{b} s{n} (tokens/s, torch.compile, measured here)":
           _t(0.20, _GPU_MEASURED_PREFILL) for b, n in _MEASURED_PREFILLS},
        **{f"gpu: {label} GEMM {precision}{m}x{n}x{k} sustained 4 s (TFLOPS, measured here)": _t(0.15, _GPU_SUSTAINED)
           for precision, m, n, k in _SUSTAINED_GEMMS[label]},
        f"gpu: {label} board power, GEMV 16384x16384 sustained (W, measured here)":
            _t(0.25, _GPU_BOARD_POWER),
        **{f"gpu: {label} GEMM 32768x{n}x8192 held 4 s, streaming HBM (operand TB/s, measured here)":
           _t(0.15, _GPU_SUSTAINED) for n in (32, 128)},
        **{f"gpu: {label} board power, GEMM 32768x{n}x8192 held 4 s, streaming HBM (W, measured here)":
           _t(0.25, _GPU_BOARD_POWER) for n in (32, 128)},
        **{f"gpu: {label} GEMM {m}x{n}x{k} held 1 s (TFLOPS, measured here)":
           _t(0.15, _GPU_HELD, _HELD_GAPS[label].get((m, n, k))) for m, n, k in _MEASURED_GEMMS},
        **{f"gpu: {label} GEMM {m}x{n}x{k} first 20 ms after idle (TFLOPS, measured here)": _t(0.15, _GPU_BURST)
           for m, n, k in _BURST_SHAPES},
        **{f"gpu: {label} board energy per call, GEMM {m}x{n}x{k} held below the cap (mJ, measured here)":
           _t(0.25, _GPU_HELD_ENERGY, _BELOW_CAP_GAPS[label].get((m, n, k))) for m, n, k in _BELOW_CAP},
    }


_CALL_FLOOR = ("LLMCompass's harness (software_model/matmul.py, run_on_gpu) times the median of time.time() around "
               "one torch.bmm and torch.cuda.synchronize(): Python dispatch, cuBLAS's host-side setup, launch, kernel"
               " and the synchronize wake-up. The 21 us the runs set is the constant LLMCompass's own simulator adds "
               "to every A100 matmul (ae/figure5/ab/test_matmul.py: + 2.1e-5); its "
               "Matmul.gpu_kernel_launch_overhead() times a 1 x 1 x 1 torch.bmm in the same way (median of 50), and "
               "test_matmul.py calls it once and discards the value, so the floor on the CSV's host is not recorded. "
               "Such a floor already holds a tiny kernel's GPU time. Measured less ours is 7.0, 7.2, 9.2, 8.8 and 7.8"
               " us at N = K = 64 to 1,024, about constant rather than growing with the tiles (the 8192 x 64 x 64 "
               "call, a 1.6 us kernel here, takes 29.6 us): either a host path heavier than the 1 x 1 x 1 call's or "
               "cuBLAS kernels for these skinny shapes that take longer than our CTA-tile model; no A100 source we have "
               "separates the two (an Nsight Systems trace of these calls on an A100 would), so no constant is added. "
               "On this workplace's H100 (validation/gpu_measured_h100.json, 'harness' and 'gemm_over_n') the same "
               "harness measures a 1 x 1 x 1 floor of 48.9 us, not 21: the floor is the host's, and 8192 x N x N at "
               "N = 64 to 512 take 47.2, 51.3, 53.2 and 56.7 us on it. There the profiled kernels for N = 64 and 128 "
               "take 2.9 and 3.1 us where our CTA-tile model gives 1.1 and 2.0 us, a fixed cost per kernel that the "
               "model lacks: evidence for the kernel side, on the other GPU")
_STATIC_SERVING = ("LMDeploy v0.1.0a1's static benchmark (benchmark/profile_generation.py, default --test-round 10, "
                   "as benchmark/benchmark-7b.sh runs it) starts `concurrency` Python threads, each running 10 "
                   "sessions in turn of a one-token prompt ('hi', no BOS: lmdeploy/tokenizer.py) and 128 output "
                   "tokens, and divides concurrency x 10 x 128 tokens by the time from the first thread's start to "
                   "the last one's join. The kernel work of a session is its 128 decode steps, which we model: with "
                   "one prompt token LlamaBatch::ContextDecode (run only for sessions missing more than one token) "
                   "prefills nothing, and a session's first token is its first decode step. At batch 32 the run takes"
                   " 19.17 s, 1.917 s per round of sessions, 15.0 ms per token, where the tokens the threads record "
                   "take 11 ms (50 %) to 13 ms (95 %) after first tokens of 0.079 s on average, about 1.5 to 1.7 s of"
                   " each round unless the slowest 1 % (over 21 ms) are far slower; at batch 64, 19.72 s, 15.4 ms per"
                   " token, the recorded latencies spread (50 % 12 ms, 75 % 18 ms, 95 % 28 ms) while our step is 10.4"
                   " ms. The rest is host work of the harness, not kernels: each thread's create_instance (a C++ "
                   "model instance per thread), a new forward thread per session (turbomind.py stream_infer), and 32 "
                   "or 64 streaming threads and their output callbacks under one Python interpreter lock; no source "
                   "times them. The median-latency rows are within 20 %")
_VLLM_017 = ("vLLM 0.1.7 (the FlightLLM demo's pinned version, Sept. 2023) runs the model eagerly (CUDA graphs came "
             "with vllm-project/vllm PR 1926, Dec. 2023), and the demo's timer (profile/run.py) spans whole "
             "llm.generate calls: decode time = generate(513 tokens) - generate(1 token), so each of the 512 tokens "
             "pays one LLMEngine.step: the scheduler, the step's input tensors built on the host and copied over, a "
             "forward of 12 kernels per layer launched from Python (vllm 0.1.7 model_executor/models/llama.py: "
             "RMSNorm, QKV GEMM, rotary, reshape_and_cache, single_query_cached_kv_attention, o_proj GEMM, residual "
             "add, RMSNorm, gate_up GEMM, silu_and_mul, down GEMM, residual add; 384 per step, with the embedding, "
             "final norm, LM head and sampler about 400), the greedy token brought back to the host (sampler.py "
             ".tolist()) and its incremental detokenization (llm_engine.py _decode_sequence). It takes 11.19 ms per "
             "token where our A100 kernels take 8.7 ms: 2.5 ms, about 6 us per kernel launched. The one measurement "
             "of that host cost we found (PR 1440: Llama-2-7B, batch 1, 100 output tokens in 1.2 s eager, 1.05 s with"
             " CUDA graphs) is of a later vLLM on an unnamed GPU and host; no per-op or per-step host time of vLLM "
             "0.1.7 is published, so no constant is added")
_NEUPIMS_GPU = ("NeuPIMs' GPU-only system is not described in any source we could read (the abstract gives the ratio; the "
                "artifact has no GPU baseline), so the row runs our A100 SXM4 80GB as a stand-in. The published ratios "
                "put GPU-only 1.25x below NPU-only (3 / 2.4), while our A100, with twice the NPU's 1 TB/s and 88 % of "
                "its HBM achieved, decodes 1.45x faster than our NPU-only: the paper's GPU-only is slower than an A100 "
                "at kernel-level efficiency, by a mechanism (a smaller GPU, or a serving stack's attention kernels) "
                "that the text we have does not name (validation/versus_gpu.py)")
_FLIGHTLLM_GPU = ("the error is the GPU side's: our VHK158 decodes within 0.2 % of the profiler (103.7 vs 103.5 "
                  "tokens/s) while our A100 is 28 % faster than vLLM 0.1.7, whose host work per token (about 2.5 ms: "
                  "scheduling, input preparation, about 400 kernels launched from Python, sampling and "
                  "detokenization) the engine does not describe (the 'vLLM 0.1.7 in the FlightLLM demo' gpu row)")
_FLIGHTLLM_PAPER = (_FLIGHTLLM_GPU + "; and the paper's 1.2x is above the demo's own ratios over Fig. 12's six cases "
                    "(1.03 to 1.16, mean 1.10): its GPU runs were slower than the demo's, or its 1.2x aggregates otherwise")

_INTAR_SCHEDULE = ("the MLP's weight loop reads its data with TAPA's non-blocking read(nullptr) (read_nb), so no step "
                   "of 32 MACs waits on the HBM, and its async_mmap ports keep any number of requests in flight: each "
                   "step is the FSM schedule of the unpipelined layer_inner_16 body, ours the DSP multiply (3 cycles) "
                   "and the 2-trip weight loop at II = 1 (2), the board's 15.3 (1,374,935 cycles / 90,112 steps). Not "
                   "counted, with no cited cycle count: the states Vitis HLS adds entering and leaving a sub-loop it "
                   "cannot flatten (UG1399, 'Imperfect Nested Loops', gives none), the 16-product adder tree and the "
                   "variable-index update of sum[jj*2+k]; only the schedule report, absent from the repository, would "
                   "show them")
_INTAR_LOOPS = ("each CNN output's critical path holds the line-buffer row index `(row_cycle_index + ... + kr) % 6` (%"
                " 3 or % 12 in some layers), an int remainder that Vitis HLS builds as a divider core with one cycle "
                "per dividend bit plus three, a constant divisor included (its generated cores read srem_32ns_3ns_2_36"
                " ... LATENCY 35 for an int % 3: no strength reduction to a multiply), so our conv iteration is 39 "
                "cycles deep (remainder 35, block RAM read 1, DSP multiply 3), paid every 2 outputs in layers 3 and 4."
                " The dataflow count, and the sequential count less its 32,704 round trips (every output beat awaits "
                "its write response, every row fetch its first read: 31 cycles each at 290 MHz), both imply an "
                "iteration of about 20 to 24 cycles, as if the tool had narrowed the dividend (row_cycle_index is "
                "itself a remainder, so a few bits would hold it: a 5-bit dividend takes 8 cycles); whether Vitis HLS "
                "2021.2 narrowed this loop-carried int only the schedule report, absent from the repository, would "
                "show")
_INTAR_FIFOS = (_INTAR_LOOPS + "; and the depth-2 FIFOs between the tasks hold less than a row of their tensors, so "
                "the four tasks act as one stage and run their rows in turn")
_INTAR_RATIO = "the ratio of two cycle rows, one of them a named gap"

_UNCORE = ("control and on-chip interconnect have no model (TPU v1 Fig. 2: control 2 %, and a fifth of the die is "
           "unlabelled routing and spacing); the I/O PHYs are counted, but the blocks that are counted are 2-5x "
           "small themselves (the MXU, Unified Buffer and I/O rows)")
_TPU_IO = ("PHYs are LLMCompass' per-unit areas measured on 7 nm-era dies (DDR5's per 32 bits for TPU v1's DDR3, "
           "PCIe 4.0's per lane for its PCIe 3.0), not 28 nm ones, and the DDR and PCIe controllers, host interface "
           "and misc I/O that Fig. 2's 10 % also holds are not counted (controllers are node-scaled logic with no "
           "cited transistor count at 28 nm in the tables)")
_SRAM_DENSITY = ("the buffer is priced as 24 MiB of high-density 6T cells in macros of the largest size LLMCompass' "
                 "CACTI table gives (bit-cell share 0.56); the paper gives no banking or port structure for it, and "
                 "its two 256-byte ports per cycle (one read, one write) suggest two-port macros of larger cells, "
                 "which the tables do not describe")
_TPU_PE = ("a PE is Horowitz's 45 nm int8 multiplier and 32-bit adder plus the 7 B of flip-flops Jouppi sec. 2 "
           "describes (the input it passes on, the weight in use and its double buffer, a 32-bit partial sum), "
           "node-scaled: 247 um2 at 28 nm, of which the second weight register is 13 um2; the TPU's PE takes "
           "1,212 um2 (79 mm2 / 65,536): the control of its 16-bit half- and quarter-speed modes, the clock tree and "
           "the standard-cell placement density (no cited figure in the tables) are not counted")
_TPU_POWER = ("ours is dynamic energy only, compared with busy - idle; with the accumulators now 256 banks (2.4 W), "
              "the Unified Buffer is still priced as one 24 MiB array (Horowitz's cache reads extrapolated past 1 MB: "
              "5.8 W) and each PE reads its operands from its own input and weight registers (3.5 W) beside 5.4 W "
              "of MACs; the paper gives the Unified Buffer no banking to price it by")

_DIANNAO_UNCOUNTED = ("Table 6 itself names what ours lacks: filler cells are 26.85 % of the layout (0.81 mm2), the "
                      "control processor 0.14 mm2, and the buffers' DMAs, registers and control; ours counts the 256 "
                      "int16 MACs with their pipeline flip-flops, the 16 activation lanes and the three SRAMs as macros "
                      "(1.17 mm2). Table 6's Memory line, 1.158 mm2 for 36 KB (3.9 um2 a bit, 6.9 x Intel's 0.570 um2 "
                      "65 nm cell), is dearer than the CACTI bit-cell shares price it (0.63 mm2)")
_DIANNAO_NFU = ("ours is 256 int16 MACs (Horowitz's multiplier and a 32-bit adder, node-scaled: 1,695 um2 each), 6 B of "
                "pipeline flip-flops per multiplier and 16 int16 activation lanes (0.54 mm2); the layout's NFU block "
                "also holds its share of the filler cells (26.85 % of the die in Table 6), the adder trees' pipeline "
                "registers and NFU-3's interpolation tables (16 segments a unit), which are not described")
_DIANNAO_BLOCK = ("a Table 6 block is its SRAM plus its DMA, its read and write registers, its control and its share of "
                  "the filler cells (26.85 % of the die); ours is the SRAM macro alone, ")
_DIANNAO_BUFFER = _DIANNAO_BLOCK + "priced at LLMCompass' CACTI bit-cell share of a 2 KiB macro (0.076)"
_DIANNAO_SB = (_DIANNAO_BLOCK + "priced as one 32 KiB macro (bit-cell share 0.393) although it delivers a 4,096-bit row "
               "per cycle (sec. 5.2), which no macro of the CACTI table does; the paper gives no banking")
_DIANNAO_SRAM = ("36 KB in 1.158 mm2 is 3.9 um2 a bit, 6.9 x Intel's 0.570 um2 65 nm cell; ours prices SB as one 32 KiB "
                 "macro (bit-cell share 0.393) and NBin and NBout as 2 KiB macros (0.076), 0.63 mm2 in all: SB's "
                 "4,096-bit rows (sec. 5.2) need many narrow macros side by side, whose banking the paper does not give")


def _t(tolerance: float, reason: str, gap: str | None = None) -> Target:
    return Target(tolerance, reason, gap)


TARGETS: dict[str, Target] = {
    "fusemax: FLAT latency (ms)": _t(0.20, _FUSEMAX),
    "fusemax: FuseMax latency (ms)": _t(0.20, _FUSEMAX),
    "fusemax: speedup FuseMax over FLAT": _t(0.20, _FUSEMAX),
    "fusemax: FLAT 2-D utilization": _t(0.10, _FUSEMAX_UTIL),
    "fusemax: FuseMax 2-D utilization": _t(0.10, _FUSEMAX_UTIL),
    "neupims: NeuPIMs / NPU-only (batch 256)": _t(0.20, _NEUPIMS),
    "neupims: NeuPIMs / naive NPU+PIM (batch 256)": _t(0.20, _NEUPIMS),
    "neupims: NeuPIMs / NPU-only (batch 512)": _t(0.20, _NEUPIMS, (
        "NPU-only attention reads every request's KV cache over the bus once per layer, so its time grows with "
        "the batch while NeuPIMs' NPU work grows less; the published 2.4x is a mean over batch sizes and models "
        "whose per-batch split the paper does not give (validation/neupims.md)")),
    "neupims: NeuPIMs / naive NPU+PIM (batch 512)": _t(0.20, _NEUPIMS),
    "flightllm: VHK158 prefill 128 tokens (ms)": _t(0.15, _FLIGHTLLM_VHK),
    "flightllm: VHK158 decode (ms/token)": _t(0.15, _FLIGHTLLM_VHK),
    "flightllm: VHK158 decode (tokens/s)": _t(0.15, _FLIGHTLLM_VHK),
    "flightllm: U280 on-board decode (tokens/s)": _t(0.20, _FLIGHTLLM_U280, (
        "the U280 config is the profiler's per-core design on 3 SLRs, not the on-board netlist; what the board "
        "loses to it (clock closure, HBM channel efficiency on the U280's HBM2) is not described "
        "(validation/flightllm.py)")),
    "flightllm: VHK158 one SLR, prefill 128 tokens (ms)": _t(0.15, _FLIGHTLLM_VHK, (
        "FlightLLM's compiler fuses SiLU and element-wise layers into the linear instructions and runs softmax and "
        "norms on a MISC unit beside LD/MM under wait/release dependencies; our overlay runs the 156 ms of SFU "
        "operators one at a time after the GEMMs, whose 922 ms match the stream's 928 (validation/flightllm_notes.md)")),
    "flightllm: VHK158 one SLR, decode (ms/token)": _t(0.15, _FLIGHTLLM_VHK),
    "intar: MLP sequential (cycles)": _t(0.25, _INTAR, _INTAR_SCHEDULE),
    "intar: MLP dataflow (cycles)": _t(0.25, _INTAR),
    "intar: MLP dataflow speed-up over sequential (x)": _t(0.25, _INTAR, f"{_INTAR_RATIO} ({_INTAR_SCHEDULE})"),
    "intar: CNN-4L sequential (cycles)": _t(0.25, _INTAR, _INTAR_LOOPS),
    "intar: CNN-4L dataflow (cycles)": _t(0.25, _INTAR, _INTAR_FIFOS),
    "intar: CNN-4L dataflow speed-up over sequential (x)": _t(0.25, _INTAR, f"{_INTAR_RATIO} ({_INTAR_LOOPS})"),
    "tmac: BitNet-3B 1 thread, T-MAC tokens/s": _t(0.25, _TMAC, _BITNET_HEAD),
    "tmac: BitNet-3B 1 thread, llama.cpp tokens/s": _t(0.25, _TMAC, _LLAMACPP_CHAIN),
    "tmac: Llama-2-7B W2 8 threads, T-MAC tokens/s": _t(0.25, _TMAC, _TMAC_THREADS),
    "tmac: Llama-2-7B W2 8 threads, llama.cpp tokens/s": _t(0.25, _TMAC, _TMAC_THREADS),
    "tmac: speedup T-MAC / llama.cpp, BitNet-3B 1 thread": _t(0.25, _TMAC, _LLAMACPP_CHAIN),
    "tmac: speedup T-MAC / llama.cpp, Llama-2-7B W2 8 threads": _t(0.25, _TMAC),
    "tmac: BitNet-3B 4 threads, T-MAC tokens/s": _t(0.25, _TMAC, _TMAC_THREADS),
    "tmac: BitNet-3B 4 threads, llama.cpp tokens/s": _t(0.25, _TMAC, _TMAC_THREADS),
    "tmac: Llama-2-7B W2 1 thread, T-MAC tokens/s": _t(0.25, _TMAC),
    "tmac: Llama-2-7B W2 1 thread, llama.cpp tokens/s": _t(0.25, _TMAC, _LLAMACPP_CHAIN),
    "tmac: Llama-2-7B W4 1 thread, T-MAC tokens/s": _t(0.25, _TMAC),
    "tmac: Llama-2-7B W4 8 threads, T-MAC tokens/s": _t(0.25, _TMAC, _TMAC_THREADS),
    "tmac: Pi 5 Llama-2-7B W2 1 thread, T-MAC tokens/s": _t(0.25, _TMAC_OTHER_CPU),
    "tmac: Pi 5 Llama-2-7B W2 2 threads, T-MAC tokens/s": _t(0.25, _TMAC_OTHER_CPU),
    "tmac: Pi 5 Llama-2-7B W4 1 thread, T-MAC tokens/s": _t(0.25, _TMAC_OTHER_CPU),
    "tmac: Pi 5 Llama-2-7B W4 2 threads, T-MAC tokens/s": _t(0.25, _TMAC_OTHER_CPU),
    "lut_tensor_core: W2A16 compute density LUT/MAC (x)": _t(0.20, _LUT_BAND),
    "lut_tensor_core: W2A16 energy efficiency LUT/MAC (x)": _t(0.20, _LUT_BAND, _LUT_EFFICIENCY),
    "silicon: TPU v1 die area (mm2)": _t(0.25, _SILICON, _UNCORE),
    "silicon: TPU v1 unified_buffer area (mm2)": _t(0.25, _SILICON, _SRAM_DENSITY),
    "silicon: TPU v1 mxu area (mm2)": _t(0.25, _SILICON, _TPU_PE),
    "silicon: TPU v1 accumulators area (mm2)": _t(0.25, _SILICON),
    "silicon: TPU v1 I/O PHY area (mm2)": _t(0.25, _SILICON, _TPU_IO),
    "silicon: TPU v1 power busy - idle (W)": _t(0.25, _SILICON, _TPU_POWER),
    "silicon: Eyeriss core area (mm2)": _t(0.25, _SILICON),
    "silicon: DianNao area (mm2)": _t(0.25, _SILICON, _DIANNAO_UNCOUNTED),
    "silicon: DianNao NFU area (mm2)": _t(0.25, _SILICON, _DIANNAO_NFU),
    "silicon: DianNao NBin area (mm2)": _t(0.25, _SILICON, _DIANNAO_BUFFER),
    "silicon: DianNao NBout area (mm2)": _t(0.25, _SILICON, _DIANNAO_BUFFER),
    "silicon: DianNao SB area (mm2)": _t(0.25, _SILICON, _DIANNAO_SB),
    "silicon: DianNao SRAM area (mm2)": _t(0.25, _SILICON, _DIANNAO_SRAM),
    **{f"gpu: A100 GEMM {m}x12288x12288 (TFLOPS, LLMCompass)": _t(0.15, _GPU_KERNEL)
       for m in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768)},
    **{f"gpu: A100 GEMM 8192x{n}x{n} (TFLOPS, LLMCompass)": _t(0.15, _GPU_KERNEL, _CALL_FLOOR if n <= 512 else None)
       for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)},
    **{f"gpu: H100 GEMM {n}x{n}x{n} (TFLOPS, cuBLAS)": _t(0.15, _GPU_KERNEL) for n in (2048, 4096, 8192)},
    "gpu: A100 FlashAttention-2 fwd d128 seq 16384 (TFLOPs/s, FA2 paper)": _t(0.15, _GPU_KERNEL),
    **_measured_targets("H100"),
    **_measured_targets("H200"),
    **{f"gpu: H100 FlashAttention-2 fwd d{d} seq {n} (TFLOPs/s, FA3 paper)": _t(0.15, _GPU_KERNEL)
       for d in (64, 128) for n in (512, 1024, 2048, 4096, 8192, 16384)},
    **{f"gpu: A100 Llama-2-7B decode b{b} (tokens/s, LMDeploy throughput)": _t(0.20, _GPU_DECODE,
       _STATIC_SERVING if b >= 32 else None) for b in (1, 16, 32, 64)},
    **{f"gpu: A100 Llama-2-7B decode b{b} (tokens/s, LMDeploy median latency)": _t(0.20, _GPU_DECODE)
       for b in (1, 16, 32, 64)},
    "gpu: A100 Llama-2-7B decode b1 (tokens/s, gpt-fast)": _t(0.20, _GPU_DECODE),
    "gpu: A100 Llama-2-7B decode b1 (tokens/s, vLLM 0.1.7 in the FlightLLM demo)": _t(0.20, _GPU_DECODE, _VLLM_017),
    "versus_gpu: NeuPIMs / GPU-only, GPT-3 7B TP-4 decode batch 256 (x, GPU: A100 stand-in)": _t(
        0.20, _VERSUS_GPU, _NEUPIMS_GPU),
    "versus_gpu: FlightLLM VHK158 / A100 decode, LLaMA2-7B batch 1, 128 + 512 tokens (x, demo)": _t(
        0.20, _VERSUS_GPU, _FLIGHTLLM_GPU),
    "versus_gpu: FlightLLM VHK158 / A100 decode, LLaMA2-7B batch 1, Fig. 12 cases (x, paper)": _t(
        0.20, _VERSUS_GPU, _FLIGHTLLM_PAPER),
    "buffer_sweep: buffer halvings agreeing in direction with ZigZag": _t(0.0, _PEER, _PEER_GAP),
    "buffer_sweep: buffer halvings agreeing in direction with AccelForge": _t(0.0, _PEER_ACCELFORGE,
                                                                             _PEER_ACCELFORGE_GAP),
}
