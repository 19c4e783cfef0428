"""The printed loop nest is the mapping that was costed: its loops and spatial extents are the cost's folds."""
from __future__ import annotations

import math
import re

import pytest

from accel_sim.io.load import load_arch
from accel_sim.mapper import loop_nest_text, search
from accel_sim.zoo import build

LOOP = re.compile(r"\| for \S+ in \[0:(\d+)\)")
SPATIAL = re.compile(r"\| parallel-for (\S+) in \[0:(\d+)\) on (\w+)(?:\s+\(packed: (\d+) folds?\))?")


def _printed(text: str) -> tuple[int, dict[str, list[tuple[str, int, int | None]]]]:
    """(product of the printed temporal loops, {axis: [(ranks, extent, packed folds or None)]})."""
    trips = math.prod(int(n) for n in LOOP.findall(text))
    axes: dict[str, list[tuple[str, int, int | None]]] = {}
    for ranks, extent, axis, folds in SPATIAL.findall(text):
        axes.setdefault(axis, []).append((ranks, int(extent), int(folds) if folds else None))
    return trips, axes


@pytest.mark.parametrize("arch_name, packs", [("tpu_v1", False), ("edge_npu", True)])
def test_printed_loops_and_spatial_extents_are_the_costed_ones(arch_name: str, packs: bool) -> None:
    """ResNet-18's contractions, mapped for EDP and for energy: the printed temporal loops times the printed cycles per
    MAC (4 on tpu_v1: ResNet-18's 16-bit operands on its 8-bit multipliers, Jouppi et al. sec. 2; 1 on edge_npu's
    16-bit PEs) multiply to the compute cycles the cost counted (folds x streamed rows, engine clock), every axis
    holds at most its PEs, and an axis the cost packs (im2col-flattened, fewer folds than the per-rank tiles) prints
    the flattened extent that many folds need: ceil(prod of its ranks' sizes / folds). Before the fix, the per-rank
    factors were printed (e.g. 3 channels on the rows, or 128 of 256 filters on the columns and a second tile loop),
    whose loops multiply to more folds than were costed. An axis packs only when per-rank factors cannot reach the
    flattened count: on tpu_v1's 256 x 256 array they always do for ResNet-18 (C x 3 x 3 = 576, 1,152, 2,304, 4,608
    in 3, 5, 9, 18 folds: c = 64 with s = 3, 26 with r = s = 3, 256, 256; K a multiple of 64), on edge_npu not."""
    arch = load_arch(arch_name)
    engine = next(e for e in arch.engines if e.kind == "systolic")
    workload = build("resnet18")
    packed_seen = 0
    for einsum, _ in workload.distinct_contractions():
        for objective in ("edp", "energy"):
            result = search(engine.mapspace(einsum, workload, arch), objective, "local")
            trips, axes = _printed(loop_nest_text(result, arch))
            engine_cycles = result.cost.compute_cycles * arch.engine_clock_hz(engine) / arch.clock_hz
            assert trips * result.mac_cycles == pytest.approx(engine_cycles), (einsum.name, objective)
            passes = {"tpu_v1": 4, "edge_npu": 1}[arch_name]
            assert result.mac_cycles == passes
            assert ("x 4 cycles" in loop_nest_text(result, arch)) == (passes == 4)
            for axis, entries in axes.items():
                assert math.prod(extent for _, extent, _ in entries) <= {"rows": engine.rows, "cols": engine.cols}[axis]
                for ranks, extent, folds in entries:
                    if folds is not None:
                        packed_seen += 1
                        flat = math.prod(einsum.sizes[r] for r in ranks.split("*"))
                        assert extent == -(-flat // folds)
    assert (packed_seen > 0) == packs   # where the cost packs an axis, the packed print is exercised
