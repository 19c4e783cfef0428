"""The peer buffer sweeps (issue 15, "a peer agrees"): ZigZag's and AccelForge's committed numbers, the direction
rule, and ours."""
from __future__ import annotations

import csv
import itertools
import math
import subprocess
import sys
from pathlib import Path

from validation.buffer_sweep import (ACCELFORGE, LAYERS, PAIRINGS, PEER_CSV, SCALES, Point, Step, compare,
                                     direction, scale_text, search_envelope, verdict)

ROOT = Path(__file__).resolve().parents[2]


def test_peer_csv_holds_every_hardware_layer_and_scale_once() -> None:
    """2 ZigZag descriptions x 5 layers x 11 scales; each point has its numbers or says why there is none."""
    with open(PEER_CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    keys = [(r["hardware"], r["workload"], r["scale"]) for r in rows]
    assert len(keys) == len(set(keys)) == len(PAIRINGS) * len(LAYERS) * len(SCALES)
    for r in rows:
        assert (r["status"] == "ok" and float(r["latency_cycles"]) > 0 and float(r["energy_pj"]) > 0) or \
            r["status"].startswith("no mapping")


def _accelforge_rows() -> list[dict[str, str]]:
    with open(ACCELFORGE.csv, newline="") as handle:
        return list(csv.DictReader(handle))


def test_accelforge_csv_holds_each_layer_from_1x_down_once() -> None:
    """AccelForge's tpu_v4i x the layers it ran: each point once, in order of size, 1x and 1/1024x among each
    layer's (a layer cut short for time ran from both ends), the projections at all 11 sizes; each point has its
    numbers or says why there is none."""
    rows = _accelforge_rows()
    keys = [(r["hardware"], r["workload"], r["scale"]) for r in rows]
    assert len(keys) == len(set(keys)) and {r["workload"] for r in rows} == set(ACCELFORGE.workloads) <= set(LAYERS)
    for workload in ACCELFORGE.workloads:
        ran = [r["scale"] for r in rows if r["workload"] == workload]
        assert ran == [scale_text(s) for s in SCALES if scale_text(s) in ran] and {"1", "1/1024"} <= set(ran), ran
    assert sum(r["workload"].startswith("llama2") for r in rows) == 2 * len(SCALES)
    for r in rows:
        assert (r["status"] == "ok" and float(r["latency_cycles"]) > 0 and float(r["energy_pj"]) > 0) or \
            r["status"].startswith("no mapping")


def test_the_accelforge_comparison_runs_every_halving_it_committed() -> None:
    """Every committed AccelForge point whose double was run too ends one halving, with both tools' directions, and
    a verdict naming AccelForge; ours never falls on its description either (issue 15's property)."""
    _, steps = compare(tool=ACCELFORGE)
    ran = {(r["workload"], r["scale"]) for r in _accelforge_rows()}
    assert sorted((s.workload, scale_text(s.scale)) for s in steps) == sorted(
        (w, scale_text(s)) for w, s in itertools.product(ACCELFORGE.workloads, SCALES[1:])
        if {(w, scale_text(s)), (w, scale_text(2 * s))} <= ran)
    assert not [(s.workload, s.scale) for s in steps if min(s.ours) < 0]
    assert "buffer halvings agree in direction with AccelForge" in verdict(steps, ACCELFORGE)


def test_direction_ignores_changes_under_a_tenth_of_a_percent() -> None:
    """100 -> 100.05 is flat, 100 -> 101 a rise, 100 -> 99 a fall; reaching infinity (no mapping) is a rise."""
    assert [direction(100, 100.05), direction(100, 101), direction(100, 99)] == [0, 1, -1]
    assert [direction(1.0, math.inf), direction(math.inf, math.inf), direction(math.inf, 1.0)] == [1, 0, -1]


def test_a_step_agrees_when_ours_never_falls_and_rises_wherever_the_peer_rises() -> None:
    """A peer rise needs ours to rise; a peer fall or flat needs ours only not to fall."""
    assert Step("hw", "x", 0.5, (1, -1), (1, 0)).agrees
    assert Step("hw", "x", 0.5, (0, 0), (1, 1)).agrees
    assert not Step("hw", "x", 0.5, (1, 0), (0, 0)).agrees
    assert not Step("hw", "x", 0.5, (0, 0), (0, -1)).agrees


def test_search_envelope_keeps_the_fastest_point_found_at_the_same_or_a_smaller_size() -> None:
    """ZigZag's tpu_like conv2 found 115,568 cycles at 1/16x but 139,872 at 1x: the envelope gives 1x the faster
    point (its mapping fits the larger buffer too) with that point's energy; sizes after it are unchanged."""
    series = [Point(139872, 6.8e7), Point(132238, 1.09e8), Point(115568, 1.05e8), Point(185199, 1.64e8)]
    assert search_envelope(series) == [series[2], series[2], series[2], series[3]]


def test_halving_the_buffers_moves_ours_the_way_it_moves_zigzag() -> None:
    """ResNet-18 conv2 (3x3, 64 -> 64, 56 x 56) on both translated ZigZag descriptions, buffers 1/32x to 1/512x,
    where both tools' tiles outgrow the buffers: where ZigZag's latency or energy rises, ours rises, and ours
    never falls."""
    _, steps = compare(workloads=("resnet18_conv2_3x3_64",), scales=SCALES[5:10])
    assert all(step.agrees for step in steps), verdict(steps)


def test_our_latency_never_falls_as_the_buffers_halve() -> None:
    """Every layer on both descriptions, 1x down to 1/1024x (100 halvings, latency-optimal mappings): a smaller
    buffer admits a subset of the mappings and spills what does not fit, so our latency never falls."""
    _, steps = compare()
    falls = [(s.pairing, s.workload, s.scale) for s in steps if s.ours[0] < 0]
    assert len(steps) == 100 and not falls, falls


def test_our_energy_never_falls_as_the_buffers_halve() -> None:
    """The same 100 halvings: our energy never falls either (issue 15's property). Mapping for latency does not
    promise it; four steps fell while a mapping timed as packed folds was costed with its own smaller tiles
    (edge_tpu_like conv2 at 1/8x: 116 -> 110 uJ), and none falls since that fix."""
    _, steps = compare()
    falls = [(s.pairing, s.workload, s.scale) for s in steps if s.ours[1] < 0]
    assert len(steps) == 100 and not falls, falls


def test_script_runs_as_a_file_and_prints_a_verdict(tmp_path: Path) -> None:
    """`python validation/buffer_sweep.py` from another folder prints each peer's table and one-line verdict."""
    done = subprocess.run([sys.executable, str(ROOT / "validation" / "buffer_sweep.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    verdicts = [line for line in done.stdout.splitlines() if "buffer halvings agree in direction with" in line]
    assert [v.split(" with ")[1].split(":")[0].split(";")[0] for v in verdicts] == ["ZigZag", "AccelForge"]
