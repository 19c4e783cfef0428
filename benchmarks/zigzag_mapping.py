"""ZigZag's chosen mapping of a layer, translated into our systolic candidate form and scored by our exact scorer.

Why this direction (ZigZag's choice into our cost model, not ours into ZigZag's): ZigZag 3.9.1 has no entry point
that costs a given complete mapping. A mapping yaml's `temporal_ordering` fixes the loop order only; LOMA's memory
allocator still decides, bottom-up, which loops each memory level holds, so the per-level tiling our mapper chose
would not survive, and ZigZag's spatial unrolling is fixed by the same yaml for every layer. Our scorer
(`SystolicMapspace.score`) costs any legal `MappingBatch` with every level's tiles and order as given, so
ZigZag's choice can be carried over whole and costed by the same model that our CP-SAT result is costed by.
The common model is therefore ours: it compares the two mappers' choices, not the two cost models (ZigZag's
mapper optimised its own model, so a mapping it prefers there can lose here for model reasons; the report names
them per layer).

The dump (`<dump>/<layer>_complete.json`, written by ZigZag's `CompleteSaveStage` from
`CostModelEvaluation.__jsonrepr__`) gives, per operand (W, I, O), the temporal loops each of its memory levels
holds, innermost level first and within a level innermost loop first (`inputs.temporal_mapping`), the memory names
of that operand's levels (`inputs.accelerator.mem_hierarchy_dict`, keyed by memory operand: W is I2, I is I1), and
the spatial unrolling (`inputs.spatial_mapping`). All operands share one loop order; a level's tile is every loop
up to its *cut* (the number of loops at or below it) plus the spatial unrolling. The temporal mapping dumped is
ZigZag's `mapping_dic_stationary` (`TemporalMapping.innermost_stationary_loop_merge_down`): loops irrelevant to an
operand at the bottom of a level are merged down into the level below, which keeps that operand's data across
them; the cuts here are read from that form (e.g. tpu_like's W rf_128B includes the OY, OX loops its weights stay
in place across, which is where our array streams them).

Translation (`translate`), for one dataflow of our array:
1. Ranks: ZigZag's dims (B, K, C, OY, OX, FY, FX; Gemm: D, K, C) are found structurally in our einsum (`dims_of`).
2. Levels: each of our memory levels stands for one ZigZag memory (`LEVELS`). Its cut is the largest of ZigZag's
   cuts, at that memory, of the operands our level keeps; ours are nested (an outer level's tile contains every
   inner level's loops), so a level's cut is raised to at least the cut of the level inside it. The loops between
   two cuts are that level's temporal factors (a rank met twice in one level multiplies) in ZigZag's order.
   Our innermost level is the array's fold (`fold_timing`: its time-rank loops stream, every other loop is a
   new fold), so it also takes the loops that the dataflow's stationary operand (ws: W, os: O, is: I) keeps in a
   per-PE register ZigZag has and we do not (under os, O's `rf_2B`). Where an operand's ZigZag cut differs from
   its level's, or ZigZag has a memory we do not (the per-PE 2-byte output registers `rf_2B`: our array's partial
   sums leave it after each fold), a note says so.
3. Spatial: ZigZag's unrolled dims go on the axis our dataflow gives their GEMM role (ws: reduction on rows,
   output channels on columns). A dim the dataflow cannot unroll (edge_tpu_like unrolls OX and OY as well) becomes
   a temporal loop at the innermost level, and the axes are refilled up to ZigZag's PE count from the nearest
   temporal loops of their own ranks (innermost first), so the translation uses as many MACs as ZigZag's does.
   ZigZag floors a non-dividing split (K 1000 = 31 x 32 covers 992); a rank left short is made whole by raising
   its spatial factor if the axis has room, else its outermost temporal factor.
4. Our array streams the dataflow's time rank innermost at the innermost level (`systolic_space`
   `_stationarity_orders`): that level's order is re-sorted so (stable sort, as our space does).
On tpu_like ZigZag's unrolling (K 32 x C 32, weight-stationary) is our ws array's, so only the per-PE output
registers and the order inside the array's fold differ. On edge_tpu_like ZigZag unrolls three GEMM roles at once
(K 8 x C 8 on D1, D2 and OX 4 x OY 4 broadcast on D3, D4) and keeps one weight per PE (its rf_1B holds no
temporal loop): our 32 x 32 systolic array unrolls two roles and pays fill and drain for every new stationary
tile, so no candidate of ours keeps both ZigZag's tiles and its PE count, and the translation there measures
that structural gap as much as the mapper.
`best_translation` tries every dataflow the array allows and the three refill variants (`translate`) and keeps
the one our model rates best: the benefit of the doubt goes to ZigZag's mapping. `outside` names what our mapper's
space lacks (its factor options; per level, an order with the same non-unit loop sequence): the scorer costs any
legal loop order exactly, so ZigZag's own order is costed, not a projection onto the orders our mapper tries.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from accel_sim.engines.fold_timing import DATAFLOW_CODES
from accel_sim.engines.loopnest import gemm_operands
from accel_sim.engines.systolic_space import COLS, ROWS, TIME
from accel_sim.spec.mapping import MappingBatch
from accel_sim.spec.mapspace import Candidates

if TYPE_CHECKING:
    from accel_sim.engines.systolic_mapspace import SystolicMapspace
    from accel_sim.engines.systolic_space import SystolicSpace
    from accel_sim.spec.workload import Einsum, Workload

# our level -> the ZigZag memory it renders (benchmarks/configs/*.yaml, each level's [ZZ] comment)
LEVELS = {"tpu_like": {"dram": "dram", "sram_2MB": "sram_2MB", "weight_rf": "rf_128B"},
          "edge_tpu_like": {"dram": "dram", "sram_2MB": "sram_2MB", "sram_32KB": "sram_32KB", "weight_rf": "rf_1B"}}
OPERAND_MEMORY = {"W": "I2", "I": "I1", "O": "O"}   # ZigZag's memory_operand_links in both examples
STATIONARY = {"ws": "W", "os": "O", "is": "I"}     # the operand each dataflow of ours keeps in the array


def _loop(text: str) -> tuple[str, int]:
    """'(K, 32)' -> ('K', 32)."""
    dim, factor = text.strip("()").split(",")
    return dim.strip(), int(factor)


@dataclass(frozen=True)
class ZigZagChoice:
    """One layer's mapping as ZigZag's dump states it."""

    layer: str                                   # ONNX node name, e.g. '/layer2/layer2.0/conv2/Conv'
    op_type: str                                 # 'Conv' | 'Gemm'
    sizes: dict[str, int]                        # ZigZag dim -> size
    loops: tuple[tuple[str, int], ...]           # every temporal loop, innermost first
    cuts: dict[str, dict[str, int]]              # operand -> memory -> loops at or below it
    spatial: tuple[tuple[str, int], ...]         # unrolled (dim, factor)

    @staticmethod
    def from_json(data: dict) -> ZigZagChoice:
        """From a ZigZag `*_complete.json` dump (or a fragment keeping its `inputs` keys read here)."""
        inputs = data["inputs"]
        layer = inputs["layer"]
        memories = inputs["accelerator"]["mem_hierarchy_dict"]
        temporal = inputs["temporal_mapping"]
        loops = None
        cuts: dict[str, dict[str, int]] = {}
        for op, levels in temporal.items():
            mine = tuple(_loop(t) for level in levels for t in level)
            if loops is not None and mine != loops:
                raise ValueError(f"{layer['name']}: operand {op}'s loop order differs from the others")
            loops = mine
            names = [re.search(r"instance=(\w+)", m).group(1) for m in memories[OPERAND_MEMORY[op]]]
            cut, cuts[op] = 0, {}
            for name, level in zip(names, levels):
                cut += len(level)
                cuts[op][name] = cut
        spatial = tuple(_loop(t) for level in inputs["spatial_mapping"]["O"] for t in level)
        return ZigZagChoice(layer["name"], layer["type"], dict(layer["loop_dimensions"]), loops or (), cuts, spatial)


def module_path(node: str) -> str:
    """ONNX node name -> the module path its weight is named by: '/layer2/layer2.0/downsample/downsample.0/Conv'
    -> 'layer2.0.downsample.0' (the PyTorch exporter's scopes repeat the parent's prefix for indexed children)."""
    parts = node.strip("/").split("/")[:-1]
    path: list[str] = []
    for p in parts:
        if path and p.startswith(path[-1] + "."):
            path[-1] = p
        else:
            path.append(p)
    return ".".join(path)


def load_choices(folder: Path) -> dict[str, ZigZagChoice]:
    """Every layer ZigZag dumped into `folder`, by module path (e.g. 'layer2.0.conv2')."""
    out = {}
    for f in sorted(folder.glob("*_complete.json")):
        choice = ZigZagChoice.from_json(json.loads(f.read_text()))
        out[module_path(choice.layer)] = choice
    return out


def choice_for(choices: dict[str, ZigZagChoice], einsum: Einsum, workload: Workload) -> ZigZagChoice | None:
    """ZigZag's choice for the layer whose weight `einsum` reads ('layer2.0.conv2.weight' -> 'layer2.0.conv2')."""
    _, weight = gemm_operands(einsum, workload.tensor_map)
    return choices.get(weight.tensor.removesuffix(".weight"))


def dims_of(einsum: Einsum, workload: Workload, op_type: str) -> dict[str, str]:
    """ZigZag dim -> our rank, found by structure: the weight-only output rank is K; a streamed-input index of two
    ranks pairs an output rank with a window rank (the first pair OY, FY; the second OX, FX); a plain streamed
    index is C if reduced, else the batch (B for a Conv, D for a Gemm)."""
    streamed, weight = gemm_operands(einsum, workload.tensor_map)
    out = set(einsum.output.ranks)
    dims: dict[str, str] = {}
    pairs = iter((("OY", "FY"), ("OX", "FX")))
    for ix in streamed.indices:
        if len(ix.ranks) == 2:
            o, w = ix.ranks if ix.ranks[0] in out else ix.ranks[::-1]
            yo, yw = next(pairs)
            dims[yo], dims[yw] = o, w
        elif len(ix.ranks) == 1:
            (r,) = ix.ranks
            dims["C" if r not in out else ("B" if op_type == "Conv" else "D")] = r
    for r in einsum.output.ranks:
        if r in weight.ranks and r not in streamed.ranks:
            dims["K"] = r
    return dims


@dataclass
class Translation:
    """ZigZag's choice as one candidate of our mapspace, with what differs from ZigZag's own mapping."""

    candidates: Candidates
    dataflow: str
    notes: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)   # what our mapper's space lacks: 'factors', '<level> order'

    @property
    def mapping(self):
        """The candidate as a named Mapping."""
        return self.candidates.mappings.mapping(0)


def translate(choice: ZigZagChoice, space: SystolicMapspace, levels: dict[str, str], dataflow: int,
              refill: str = "any") -> Translation:
    """ZigZag's `choice` as a candidate of `space` in dataflow `dataflow` (a code into DATAFLOW_CODES); see the
    module docstring for the rules. `refill`: where the axes may take loops from when ZigZag unrolled a dim this
    dataflow cannot: 'any' level (innermost first), the 'innermost' level only (every level's tiles stay ZigZag's),
    or 'none' (fewer PEs than ZigZag's)."""
    einsum, workload = space.einsum, space.workload
    sp = space.space
    ranks, level_names = sp.rank_names, sp.level_names
    dims = dims_of(einsum, workload, choice.op_type)
    for dim, size in choice.sizes.items():
        mine = einsum.sizes.get(dims.get(dim, ""), 1)
        if mine != size:
            raise ValueError(f"{choice.layer}: ZigZag's {dim} = {size}, our rank {dims.get(dim)} = {mine}")
    rank = {dim: dims[dim] for dim in choice.sizes if dim in dims}
    streamed, weight = gemm_operands(einsum, workload.tensor_map)
    operand = {weight.tensor: "W", streamed.tensor: "I", einsum.output.tensor: "O"}
    notes: list[str] = []
    cuts = _level_cuts(choice, sp, levels, operand, dataflow, notes)
    temporal, order = _level_loops(choice, sp, rank, cuts, notes)
    spatial = _spatial(choice, space, rank, dataflow, refill, temporal, order, notes)
    _cover_ranks(space, dataflow, temporal, spatial, notes)

    # 4. the array streams the time rank innermost at the innermost level
    place = sp.places[dataflow]
    inner_order = sorted(order[-1], key=lambda x: place[x] == TIME)
    eff = lambda o: [int(x) for x in o if temporal[-1, x] > 1]  # noqa: E731
    if eff(inner_order) != eff(order[-1]):
        notes.append(f"{level_names[-1]} order {[ranks[x] for x in eff(order[-1])]} -> "
                     f"{[ranks[x] for x in eff(inner_order)]} (the array streams the time rank innermost)")
    order[-1] = inner_order
    n_l = len(level_names)
    batch = MappingBatch(ranks, level_names, ("rows", "cols"), sp.tensor_names, temporal[None], order[None],
                         spatial[None], sp.bypass[None].copy(), np.array([n_l - 1], dtype=np.int64))
    cand = Candidates(batch, np.array([dataflow], dtype=np.int64))
    outside = [] if sp.locate(dataflow, batch, 0) is not None else ["factors"]
    outside += [f"{level_names[li]} order" for li in range(n_l)
                if not any([x for x in o if temporal[li, x] > 1] == [x for x in order[li] if temporal[li, x] > 1]
                           for o in sp.orders[dataflow][li])]
    return Translation(cand, DATAFLOW_CODES[dataflow], notes, outside)


def _loop_names(choice: ZigZagChoice, upto: int) -> str:
    """ZigZag's loops up to position `upto`, innermost first, as 'K32, C4' (or 'none')."""
    return ", ".join(f"{d}{f}" for d, f in choice.loops[:upto]) or "none"


def _level_cuts(choice: ZigZagChoice, sp: SystolicSpace, levels: dict[str, str], operand: dict[str, str],
                dataflow: int, notes: list[str]) -> list[int]:
    """Step 2: per level of ours, the number of ZigZag's loops (innermost first) at or below it: the largest cut of
    the operands it keeps at its ZigZag memory, never below the level inside; the array's fold also holds the
    loops of the stationary operand's per-PE register."""
    level_names = sp.level_names
    n_l = len(level_names)
    cuts = [0] * n_l
    inner = 0
    for li in range(n_l - 1, -1, -1):
        zz = levels[level_names[li]]
        kept = [operand[t] for ti, t in enumerate(sp.tensor_names) if not sp.bypass[li, ti]]
        theirs = {op: choice.cuts[op][zz] for op in kept if zz in choice.cuts[op]}
        cut = len(choice.loops) if li == 0 else max([inner, *theirs.values()])
        if li == n_l - 1:   # the array's fold: the loops the dataflow's stationary operand keeps in ZigZag's PEs
            held = STATIONARY[DATAFLOW_CODES[dataflow]]
            register = next(iter(choice.cuts[held]))
            if register not in levels.values() and choice.cuts[held][register] > cut:
                cut = choice.cuts[held][register]
                notes.append(f"{level_names[li]} (the array's fold) holds the loops of {held}'s per-PE {register} "
                             f"([{_loop_names(choice, cut)}]: {DATAFLOW_CODES[dataflow]} keeps {held} in the PEs)")
        for op, c in theirs.items():
            if c != cut:
                notes.append(f"{op} at {level_names[li]}: ZigZag's {zz} holds loops up to [{_loop_names(choice, c)}],"
                             f" ours up to [{_loop_names(choice, cut)}] (one cut per level, nested)")
        cuts[li] = inner = cut
    ours = set(levels.values())
    notes.extend(f"{op}'s {mem} (loops up to [{_loop_names(choice, c)}]) has no level here"
                 for op, mems in choice.cuts.items() for mem, c in mems.items() if mem not in ours)
    return cuts


def _level_loops(choice: ZigZagChoice, sp: SystolicSpace, rank: dict[str, str], cuts: list[int], notes: list[str]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(temporal (L, R), order (L, R)): the loops between consecutive cuts as each level's factors, in ZigZag's
    order (a rank met twice in one level multiplies, placed at its outermost occurrence)."""
    ranks, level_names = sp.rank_names, sp.level_names
    ri = {r: i for i, r in enumerate(ranks)}
    n_l, n_r = len(level_names), len(ranks)
    temporal = np.ones((n_l, n_r), dtype=np.int64)
    order = np.zeros((n_l, n_r), dtype=np.int64)
    for li in range(n_l):
        lo = cuts[li + 1] if li + 1 < n_l else 0
        here = [(rank[d], f) for d, f in choice.loops[lo:cuts[li]] if d in rank]
        seen: list[str] = []                      # outer -> inner, by the outermost occurrence
        for r, f in reversed(here):
            temporal[li, ri[r]] *= f
            if f > 1 and r not in seen:
                seen.append(r)
        real = [r for r, f in here if f > 1]
        if sum(j == 0 or real[j - 1] != r for j, r in enumerate(real)) != len(seen):
            notes.append(f"{level_names[li]}: a rank's loops there are not adjacent in ZigZag's order; merged "
                         f"at the outermost")
        order[li] = [ri[r] for r in ranks if r not in seen] + [ri[r] for r in seen]
    return temporal, order


def _spatial(choice: ZigZagChoice, space: SystolicMapspace, rank: dict[str, str], dataflow: int, refill: str,
             temporal: np.ndarray, order: np.ndarray, notes: list[str]) -> np.ndarray:
    """Step 3: spatial factors (2, R) on our axes; a dim our dataflow cannot unroll becomes a temporal loop at the
    innermost level (`temporal` is updated), and the axes are refilled to ZigZag's PE count from `refill`."""
    sp, engine = space.space, space.engine
    ri = {r: i for i, r in enumerate(sp.rank_names)}
    n_l = len(sp.level_names)
    place = sp.places[dataflow]
    spatial = np.ones((2, len(ri)), dtype=np.int64)
    for d, f in choice.spatial:
        if d not in rank or f == 1:
            continue
        r = ri[rank[d]]
        if place[r] in (ROWS, COLS):
            spatial[place[r], r] *= f
        else:
            temporal[n_l - 1, r] *= f
            notes.append(f"{d} {f} unrolled by ZigZag: {DATAFLOW_CODES[dataflow]} cannot unroll it, so a temporal "
                         f"loop at {sp.level_names[-1]}; axes refilled from: {refill} level")
    zz_pes = math.prod(f for _, f in choice.spatial)
    floor = {"any": 0, "innermost": n_l - 1, "none": n_l}[refill]
    for axis, size in ((ROWS, engine.rows), (COLS, engine.cols)):
        while (spatial.prod() < zz_pes and spatial[axis].prod() < size
               and _refill_one(sp, place, axis, size, floor, zz_pes, temporal, order, spatial, notes)):
            pass
    return spatial


def _refill_one(sp: SystolicSpace, place: np.ndarray, axis: int, size: int, floor: int, zz_pes: int,
                temporal: np.ndarray, order: np.ndarray, spatial: np.ndarray, notes: list[str]) -> bool:
    """Move the largest factor that fits of the innermost temporal loop of `axis`'s ranks (levels innermost first,
    down to `floor`) onto the axis; False when none can move."""
    room = size // spatial[axis].prod()
    for li in range(len(sp.level_names) - 1, floor - 1, -1):
        for r in [int(x) for x in order[li][::-1] if place[x] == axis and temporal[li, x] > 1]:
            g = max(g for g in range(1, room + 1) if temporal[li, r] % g == 0)
            if g > 1:
                temporal[li, r] //= g
                spatial[axis, r] *= g
                notes.append(f"{sp.rank_names[r]} x{g} moved from {sp.level_names[li]} onto "
                             f"{('rows', 'cols')[axis]} (refill to ZigZag's {zz_pes} PEs)")
                return True
    return False


def _cover_ranks(space: SystolicMapspace, dataflow: int, temporal: np.ndarray, spatial: np.ndarray,
                 notes: list[str]) -> None:
    """Make every rank whole where ZigZag floors a non-dividing split: raise its spatial factor if its axis has
    room, else its outermost temporal factor (updates `temporal` and `spatial`)."""
    sp, engine, einsum = space.space, space.engine, space.einsum
    place = sp.places[dataflow]
    axis_size = (engine.rows, engine.cols)
    for r, name in enumerate(sp.rank_names):
        size = einsum.sizes[name]
        have = spatial[:, r].prod() * temporal[:, r].prod()
        if have >= size:
            continue
        t = temporal[:, r].prod()
        ax = int(place[r]) if place[r] in (ROWS, COLS) else None
        need = -(-size // t)
        if ax is not None and spatial[ax].prod() // spatial[ax, r] * need <= axis_size[ax]:
            notes.append(f"{name}: ZigZag covers {have} of {size}; spatial {spatial[ax, r]} -> {need}")
            spatial[ax, r] = need
        else:
            li = next((li for li in range(len(sp.level_names)) if temporal[li, r] > 1), len(sp.level_names) - 1)
            rest = spatial[:, r].prod() * t // temporal[li, r]
            notes.append(f"{name}: ZigZag covers {have} of {size}; {sp.level_names[li]} factor {temporal[li, r]} "
                         f"-> {-(-size // rest)}")
            temporal[li, r] = -(-size // rest)


def best_translation(choice: ZigZagChoice, space: SystolicMapspace, levels: dict[str, str], objective: str = "edp"
                     ) -> tuple[Translation, float, object]:
    """The translation, over the array's allowed dataflows and the refill variants, that our scorer rates best:
    (translation, objective value, scores). Where ZigZag's unrolling fits our array, the variants coincide."""
    best = None
    for d in space.groups:
        for refill in ("any", "innermost", "none"):
            tr = translate(choice, space, levels, d, refill)
            scores = space.score(tr.candidates)
            value = float(scores.objective(objective)[0])
            if best is None or value < best[1]:
                best = (tr, value, scores)
    return best
