"""A peer agrees: ZigZag's and AccelForge's on-chip buffer sweeps against ours, step by step, in direction.

Peer: ZigZag 3.9.1 (KU Leuven), its shipped `tpu_like` and `edge_tpu_like` hardware descriptions with the
on-chip SRAM buffers scaled from 1x to 1/1024x, on three ResNet-18 3x3 convolutions and two Llama-2-7B decode
projections (M = 1 and 8, K = N = 4096), latency-optimal mappings. The numbers and the exact commands are in
validation/peers/zigzag_buffer_sweep.csv and .md (the driver stays outside this repository).

Ours: the same layers as one-einsum cascades, objective "latency", on ZigZag's two descriptions translated to
accel-sim (arch_configs/peers/zigzag_tpu_like.yaml and zigzag_edge_tpu_like.yaml, every number cited), with
the same SRAM buffers scaled by the same factors, so both tools see the same bytes at every step. The models
differ (our systolic timing and energy tables against ZigZag's loop-nest and port model), so absolute numbers
are not compared; the directions are. As the buffers halve, every step must leave our latency and energy no
lower (an infeasible point counts as infinite), and where ZigZag's rise ours rise too. A step where ZigZag's
fall is its mapping search (LOMA, a bounded loop-order search) finding a different loop order at the new size
(see the .md note); it asks nothing of ours beyond not falling.

Second peer: AccelForge 1.0.467 (the Accelergy project's Timeloop successor), its shipped `tpu_v4i` example with
the GlobalBuffer and LocalBuffer scaled the same way, its default mapper (FFM) with latency as the metric, on the
same layers; numbers, command and driver in validation/peers/accelforge_buffer_sweep.csv and .md. Ours runs them
on arch_configs/peers/accelforge_tpu_v4i.yaml under the same rule.
Run: python -m validation.buffer_sweep
"""
from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as `python validation/NAME.py`: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_sim import load_arch
from accel_sim.errors import InfeasibleError
from accel_sim.evaluate import evaluate
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.yaml import parse_yaml
from accel_sim.spec.arch import Arch
from accel_sim.spec.workload import Workload
from validation.comparison import Comparison

REPO = Path(__file__).resolve().parents[1]
PEER_CSV = REPO / "validation" / "peers" / "zigzag_buffer_sweep.csv"
ACCELFORGE_CSV = REPO / "validation" / "peers" / "accelforge_buffer_sweep.csv"
SCALES = tuple(2.0 ** -i for i in range(11))  # 1x down to 1/1024x, as in the peer's run
# A step "moves" when it changes by more than 0.1 %: finer changes are whole-cycle rounding at these sizes
# (the smallest layer runs ~10^4 cycles), not a buffer effect.
MOVE_RTOL = 1e-3


@dataclass(frozen=True)
class Pairing:
    """A ZigZag hardware description and the shipped config we compare it with: the levels we scale."""

    peer: str
    config: Path
    levels: tuple[str, ...]


PEERS = REPO / "arch_configs" / "peers"
PAIRINGS = (
    Pairing("tpu_like", PEERS / "zigzag_tpu_like.yaml", ("sram_2MB",)),
    Pairing("edge_tpu_like", PEERS / "zigzag_edge_tpu_like.yaml", ("sram_2MB", "sram_32KB")),
)
ACCELFORGE_PAIRINGS = (Pairing("tpu_v4i", PEERS / "accelforge_tpu_v4i.yaml", ("GlobalBuffer", "LocalBuffer")),)

# ZigZag's layers (int8 operands, 8-bit final outputs; a 3x3 stride-1 convolution reads OX + FX - 1 input
# columns, no padding) written as our cascades, under the peer CSV's workload names.
_CONV = """name: {name}
ranks: {{n: 1, k: {k}, c: {c}, p: {p}, q: {p}, r: 3, s: 3}}
default_bits: 8
tensors:
  I: {{shape: [N, C, P + 2, Q + 2]}}
  W: {{kind: weight}}
einsums:
  - O[n,k,p,q] = I[n,c,p + r,q + s] * W[k,c,r,s]
"""
_GEMM = """name: {name}
ranks: {{m: {m}, k: 4096, n: 4096}}
default_bits: 8
tensors:
  W: {{kind: weight}}
einsums:
  - O[m,n] = I[m,k] * W[k,n]
"""
LAYERS = {
    "resnet18_conv2_3x3_64": _CONV.format(name="resnet18_conv2_3x3_64", k=64, c=64, p=56),
    "resnet18_conv4_3x3_256": _CONV.format(name="resnet18_conv4_3x3_256", k=256, c=256, p=14),
    "resnet18_conv5_3x3_512": _CONV.format(name="resnet18_conv5_3x3_512", k=512, c=512, p=7),
    "llama2_7b_decode_proj_m1": _GEMM.format(name="llama2_7b_decode_proj_m1", m=1),
    "llama2_7b_decode_proj_m8": _GEMM.format(name="llama2_7b_decode_proj_m8", m=8),
}


@dataclass(frozen=True)
class Peer:
    """A peer tool's committed sweep: its name, its CSV, the descriptions we pair it with and the layers it ran."""

    name: str
    csv: Path
    pairings: tuple[Pairing, ...]
    workloads: tuple[str, ...] = tuple(LAYERS)


ZIGZAG = Peer("ZigZag", PEER_CSV, PAIRINGS)
# AccelForge's mapper took 8 to 25 minutes per point on conv5 here (two shared cores): the committed run has the
# two projections at all sizes and conv5 at the sizes the time allowed, from both ends (the .md note).
ACCELFORGE = Peer("AccelForge", ACCELFORGE_CSV, ACCELFORGE_PAIRINGS,
                  ("resnet18_conv5_3x3_512", "llama2_7b_decode_proj_m1", "llama2_7b_decode_proj_m8"))


@dataclass(frozen=True)
class Point:
    """Latency and energy at one buffer scale (math.inf for both where no mapping or placement exists)."""

    latency: float
    energy: float
    note: str = ""


@dataclass(frozen=True)
class Step:
    """One halving of the buffers: each tool's direction for latency and energy, and whether ours agrees."""

    pairing: str
    workload: str
    scale: float
    peer: tuple[int, int]
    ours: tuple[int, int]

    @property
    def agrees(self) -> bool:
        """Ours never falls, and rises wherever the peer rises (latency and energy alike)."""
        return all(o >= 0 and (p <= 0 or o > 0) for p, o in zip(self.peer, self.ours))


def layer(name: str) -> Workload:
    """The peer's layer `name` as a one-einsum workload."""
    return parse_cascade(parse_yaml(LAYERS[name], f"<validation.buffer_sweep:{name}>"))


def scaled_arch(pairing: Pairing, scale: float) -> Arch:
    """The pairing's config with each scaled level's capacity times `scale` (whole bytes)."""
    base = {level.name: level.capacity_bytes for level in load_arch(pairing.config).memory}
    return load_arch(pairing.config, [f"memory.{name}.capacity={max(1, math.floor(base[name] * scale))} B"
                                      for name in pairing.levels])


def ours(pairing: Pairing, workload: str, scale: float) -> Point:
    """Our latency (cycles) and energy (J) for one layer at one buffer scale."""
    try:
        summary = evaluate(scaled_arch(pairing, scale), layer(workload), objective="latency").summary()
    except InfeasibleError as exc:
        return Point(math.inf, math.inf, str(exc).splitlines()[0])
    return Point(float(summary["cycles"]), float(summary["energy_j"]))


def peer_points(path: Path = PEER_CSV) -> dict[tuple[str, str, float], Point]:
    """The peer's committed points keyed by (hardware, workload, scale); no mapping is math.inf."""
    out = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            key = (row["hardware"], row["workload"], _parse_scale(row["scale"]))
            if row["status"] == "ok":
                out[key] = Point(float(row["latency_cycles"]), float(row["energy_pj"]))
            else:
                out[key] = Point(math.inf, math.inf, row["status"])
    return out


def direction(before: float, after: float) -> int:
    """+1 if `after` is more than MOVE_RTOL above `before`, -1 if below, else 0 (inf to inf is flat)."""
    if before == after:
        return 0
    if math.isinf(after) or math.isinf(before):
        return 1 if math.isinf(after) else -1
    change = (after - before) / before
    return 1 if change > MOVE_RTOL else -1 if change < -MOVE_RTOL else 0


def search_envelope(series: list[Point]) -> list[Point]:
    """The peer's points with its mapping search's misses removed: at each size, the fastest point found at that
    size or any smaller one (a mapping that fits a smaller buffer fits a larger one), with that point's energy.

    `series` runs from the largest buffer to the smallest; the result never falls in latency as buffers shrink.
    Among equally fast points the nearest is kept, so a point the search did not miss keeps its own energy.

    >>> [p.latency for p in search_envelope([Point(5, 1), Point(4, 2), Point(6, 3)])]
    [4, 4, 6]
    """
    return [min(series[i:], key=lambda p: p.latency) for i in range(len(series))]


def peer_series(peer: dict[tuple[str, str, float], Point], hardware: str, workload: str,
                scales: tuple[float, ...]) -> list[Point]:
    """The peer's search envelope of one layer (over all its committed sizes) at `scales`."""
    committed = [scale for scale in SCALES if (hardware, workload, scale) in peer]
    envelope = dict(zip(committed, search_envelope([peer[(hardware, workload, scale)] for scale in committed])))
    return [envelope[scale] for scale in scales]


def series_steps(pairing: Pairing, workload: str, scales: tuple[float, ...], theirs: list[Point],
                 mine: list[Point]) -> list[Step]:
    """The halvings between consecutive scales (largest first) of one layer, both tools' directions; two scales
    further apart (a size the peer did not run) make no step."""
    return [Step(pairing.peer, workload, scales[i + 1],
                 (direction(theirs[i].latency, theirs[i + 1].latency), direction(theirs[i].energy, theirs[i + 1].energy)),
                 (direction(mine[i].latency, mine[i + 1].latency), direction(mine[i].energy, mine[i + 1].energy)))
            for i in range(len(scales) - 1) if scales[i + 1] == scales[i] / 2]


def compare(pairings: tuple[Pairing, ...] | None = None, workloads: tuple[str, ...] | None = None,
            scales: tuple[float, ...] = SCALES, tool: Peer = ZIGZAG) -> tuple[list[str], list[Step]]:
    """Table lines and steps for every pairing x layer of `tool` (all of its own, unless named) over `scales`
    (largest first)."""
    peer = peer_points(tool.csv)
    lines = [f"{tool.name + ' hardware':<15} {'layer':<25} {'scale':>7} | {'peer cycles':>11} {'ours cycles':>11} | "
             f"{'peer pJ':>10} {'ours J':>10} | steps lat, en (peer/ours) | agree"]
    steps: list[Step] = []
    for pairing in tool.pairings if pairings is None else pairings:
        for workload in tool.workloads if workloads is None else workloads:
            # the sizes the peer ran: all of them, or (a peer run cut short for time) the ones it reached
            ran = tuple(scale for scale in scales if (pairing.peer, workload, scale) in peer)
            theirs = peer_series(peer, pairing.peer, workload, ran)
            mine = [ours(pairing, workload, scale) for scale in ran]
            found = series_steps(pairing, workload, ran, theirs, mine)
            steps += found
            into = {step.scale: step for step in found}
            for i, scale in enumerate(ran):
                missed = "*" if theirs[i] != peer[(pairing.peer, workload, scale)] else " "
                step = into.get(scale)
                moves = f"{_arrows(step.peer[0], step.ours[0])}, {_arrows(step.peer[1], step.ours[1])}" if step else ""
                lines.append(f"{pairing.peer:<15} {workload:<25} {scale_text(scale):>7} | "
                             f"{theirs[i].latency:>10.5g}{missed} {mine[i].latency:>11.5g} | {theirs[i].energy:>10.4g} "
                             f"{mine[i].energy:>10.4g} | {moves:<24} | {'' if step is None else step.agrees}")
    lines.append(f"* {tool.name}'s search found a faster mapping at a smaller size; the row shows that point "
                 "(search_envelope)")
    return lines, steps


def _arrows(peer: int, mine: int) -> str:
    return {1: "up", 0: "=", -1: "down"}[peer] + "/" + {1: "up", 0: "=", -1: "down"}[mine]


def scale_text(scale: float) -> str:
    """A power-of-two scale as the peer CSVs write it: '1', '1/2', ... '1/1024'."""
    return "1" if scale == 1 else f"1/{round(1 / scale)}"


def _parse_scale(text: str) -> float:
    """'1/512' (the peer CSV's form, exact for powers of two) or '1' as a float."""
    numerator, _, denominator = text.partition("/")
    return float(numerator) / float(denominator or 1)


def verdict(steps: list[Step], tool: Peer = ZIGZAG) -> str:
    """One line: how many halvings agree in direction with `tool`, and the first that does not."""
    bad = [s for s in steps if not s.agrees]
    head = f"{len(steps) - len(bad)} of {len(steps)} buffer halvings agree in direction with {tool.name}"
    if not bad:
        return head + ": the peer agrees"
    first = bad[0]
    return (f"{head}; first disagreement: {first.pairing} {first.workload} at {scale_text(first.scale)}x "
            f"(latency, energy: peer {first.peer}, ours {first.ours})")


def rows() -> list[Comparison]:
    """One report row per peer: of every buffer halving it ran (ZigZag: 2 descriptions x 5 layers x 10 steps), how
    many agree in direction with it; published is all of them (the peer's directions are the reference)."""
    out = []
    for tool in (ZIGZAG, ACCELFORGE):
        _, steps = compare(tool=tool)
        out.append(Comparison(f"buffer halvings agreeing in direction with {tool.name}", float(len(steps)),
                              float(sum(step.agrees for step in steps)), "steps"))
    return out


def main() -> None:
    """Print each peer's table and verdict."""
    for tool in (ZIGZAG, ACCELFORGE):
        lines, steps = compare(tool=tool)
        print("\n".join(lines))
        print(verdict(steps, tool))


if __name__ == "__main__":
    main()
