"""Capacity at tile scope: a level too small for an operand's tiles stages it without reuse, and that costs.

Hand case: Z[16,16] = A[16,16] x W[16,16], int8, on a 4 x 4 output-stationary array (rows M, cols N, time K;
16 folds of 4 x 4 outputs) at 1 GHz. DRAM holds everything at 1 GB/s (1 byte a cycle); one SRAM `buf` holds
only the weights. The mapping is the dataflow's own (`mapper: method: dataflow`), so only capacity varies.
- Each fold streams its 4 rows of A (4 x 16) and its 4 columns of W (16 x 4): the PEs consume 16 x 64 = 1,024
  elements of each. A bypasses `buf` (it holds only weights): 1,024 bytes from DRAM whatever its size.
- `buf` of 4 KiB keeps W whole (256 B): DRAM serves W once, 256 B; 128 B holds one double-buffered 16 x 4
  column slice (2 x 64 B), which stays while the 4 row folds under it run: again 256 B.
- `buf` of 64 B holds no double-buffered slice: W is staged through it without reuse, so DRAM serves all 1,024
  elements the PEs consume, and every one is filled into and read out of `buf`.
- A staging buffer still holds what the array takes in one cycle, twice over (one cycle read out while the next
  arrives, `residency.spilled_occupancy`): W enters the output-stationary array along its top edge, one element
  per column a cycle, 4 B, so `buf` needs 2 x 4 = 8 B. At 8 B W is staged as at 64 B; at 7 B no mapping runs
  (an InfeasibleError naming `buf`, 7 bytes and the 8 it needs).
- Z is written once: 256 B. DRAM is the busiest level (compute is 16 x 16 = 256 cycles plus 16 x 6 of fill and
  drain), so cycles = DRAM bytes: 1,024 + 256 + 256 = 1,536, or 1,024 + 1,024 + 256 = 2,304 once W is staged.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import gemm
from hypothesis import given, settings, strategies as st

from accel_sim import evaluate
from accel_sim.engines.fold_timing import DATAFLOW_CODES
from accel_sim.engines.residency import array_analyses, array_traffic
from accel_sim.errors import InfeasibleError
from accel_sim.io.einsum import parse_cascade
from accel_sim.io.load import load_arch, load_workload
from accel_sim.io.yaml import parse_yaml
from accel_sim.mapper.search import best_cost
from accel_sim.sim.placement import assign_homes, bystanders, crowding_homes
from accel_sim.spec.arch import Arch
from accel_sim.spec.mapping import MappingBatch

ROOT = Path(__file__).resolve().parents[3]


def weight_buffer_arch(capacity: str, method: str = "dataflow", rows: int = 4, cols: int = 4,
                       dataflow: str = "os") -> Arch:
    """DRAM (1 byte a cycle, 10 pJ/bit) and a weights-only SRAM of `capacity` (1 pJ/bit) beside a systolic array."""
    return Arch.model_validate({
        "name": "weight buffer", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "read_energy_per_bit": "10 pJ"},
                   {"name": "buf", "technology": "SRAM", "capacity": capacity, "bandwidth": "64 GB/s",
                    "read_energy_per_bit": "1 pJ", "holds": ["weights"]}],
        "engines": [{"name": "sa", "kind": "systolic", "rows": rows, "cols": cols, "dataflow": dataflow,
                     "mapper": {"method": method}}]})


@pytest.mark.parametrize("capacity, dram_w, cycles", [("4 KiB", 256, 1536), ("128 B", 256, 1536),
                                                      ("64 B", 1024, 2304), ("8 B", 1024, 2304)])
def test_a_weight_buffer_too_small_for_its_tiles_stages_them_and_pays_in_dram_time(capacity: str, dram_w: int,
                                                                                   cycles: int) -> None:
    """The module docstring's derivation: DRAM bytes of W and the DRAM-bound cycles at each buffer size."""
    cost = evaluate(weight_buffer_arch(capacity), gemm(16, 16, 16), objective="latency").einsums[0].cost
    assert cost.accesses[("dram", "A", "read")] == 1024 and cost.accesses[("dram", "Z", "write")] == 256
    assert cost.accesses[("dram", "W", "read")] == dram_w
    assert cost.accesses[("buf", "W", "fill")] == dram_w and cost.accesses[("buf", "W", "read")] == 1024
    assert cost.total_cycles == cycles


def test_a_staging_buffer_below_two_cycles_of_edge_transfer_is_infeasible() -> None:
    """The module docstring's derivation: `buf` of 7 B cannot stage W's 4 B a cycle double-buffered (8 B)."""
    work = gemm(16, 16, 16)
    arch = weight_buffer_arch("7 B")
    with pytest.raises(InfeasibleError) as error:
        best_cost(arch.engines[0], work.einsums[0], work, arch, "latency")
    message = str(error.value)
    assert "'buf' holds 7 bytes" in message and "(tensor 'W') need 8 bytes" in message


def test_a_tile_that_fits_nowhere_is_an_error_naming_the_level_and_bytes() -> None:
    """The Unified-Buffer case: a level that is the only one holding the activations (nothing to stage them from)
    and smaller than one double-buffered tile is an InfeasibleError with the level, its bytes and the fix."""
    arch = Arch.model_validate({
        "name": "tiny", "clock": "1 GHz", "technology_nm": 28,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "1 GB/s", "holds": ["weights"]},
                   {"name": "ub", "technology": "SRAM", "capacity": "8 B", "bandwidth": "64 GB/s",
                    "holds": ["activations"]}],
        "engines": [{"name": "sa", "kind": "systolic", "rows": 4, "cols": 4, "dataflow": "os"}]})
    work = gemm(16, 16, 16)
    with pytest.raises(InfeasibleError) as error:
        best_cost(arch.engines[0], work.einsums[0], work, arch, "latency")
    message = str(error.value)
    assert "'ub' holds 8 bytes" in message and "Fix: raise memory.ub.capacity" in message


def _fits(arch: Arch, work, mapping) -> bool:  # noqa: ANN001 (test helper)
    """Whether the reported mapping fits every on-chip level (the engine's own residency/staging choice)."""
    engine = arch.engines[0]
    einsum = work.einsums[0]
    batch = MappingBatch.from_mappings([mapping], einsum, arch, {"rows": engine.rows, "cols": engine.cols})
    codes = np.array([DATAFLOW_CODES.index(engine.dataflow)])
    analyses = array_analyses(einsum, work, arch, engine.rows, engine.cols, batch, codes)
    return bool(array_traffic(einsum, work, arch, engine.rows, engine.cols, analyses).fits[0])


@settings(max_examples=20, deadline=None)
@given(m=st.sampled_from((4, 8, 12, 16)), n=st.sampled_from((4, 8, 16)), k=st.sampled_from((4, 8, 16)),
       dataflow=st.sampled_from(("os", "ws", "is")), big=st.integers(8, 12), shrink=st.integers(1, 8),
       objective=st.sampled_from(("latency", "energy")))
def test_shrinking_a_buffer_never_lowers_the_objective_and_every_reported_tile_fits(
        m: int, n: int, k: int, dataflow: str, big: int, shrink: int, objective: str) -> None:
    """Random GEMMs and buffer sizes, exhaustive mapping, pinned per-bit energies: a smaller buffer admits a
    subset of the mappings (and stages what it cannot keep), so the optimum latency (or energy) never falls (a
    buffer too small to stage anything is infeasible: infinite), and the mapping each run reports fits its
    levels."""
    work = gemm(m, n, k)
    results = []
    for capacity in (2 ** big, 2 ** max(0, big - shrink)):
        arch = weight_buffer_arch(f"{capacity} B", "exhaustive", dataflow=dataflow)
        try:
            found = best_cost(arch.engines[0], work.einsums[0], work, arch, objective)
        except InfeasibleError:
            assert capacity < 2 * 4, "only a buffer below two cycles of a 4-wide edge (8 B) stages nothing"
            results.append(np.inf)
            continue
        assert found.mapping is not None and _fits(arch, work, found.mapping)
        results.append(found.cost.total_cycles if objective == "latency" else found.cost.total_energy_j)
    assert results[1] >= results[0] * (1 - 1e-12)


def test_the_capacity_a_tile_error_names_is_enough_to_map() -> None:
    """TPU v1's accumulators as one bank: the GEMM's partial sums (32 bit) cross the array's edge one a cycle on
    the one-PE mapping, double-buffered: 2 x 4 B = 8 B. At 7 B no mapping fits and the error names 8 B, the
    one-PE mapping's need, the least of the two it weighs (before: 512 B, the full-array mapping's alone); at 8 B
    the einsum maps."""
    gemm = load_workload(ROOT / "workloads" / "gemm.einsum.yaml")
    sets = ["memory.accumulators.banks=1"]
    with pytest.raises(InfeasibleError, match=r"need 8 bytes .* at least 8 bytes"):
        evaluate(load_arch(ROOT / "arch_configs" / "tpu_v1.yaml", [*sets, "memory.accumulators.capacity=7 B"]), gemm)
    assert evaluate(load_arch(ROOT / "arch_configs" / "tpu_v1.yaml", [*sets, "memory.accumulators.capacity=8 B"]),
                    gemm).cycles > 0


# The docstring's GEMM three times: the first and last read one weight W, the middle one its own weight V. W is
# read by two einsums, so an on-chip copy of it (256 B) may live in `buf` from the first to the last
# (sim/placement.py); the middle GEMM does not touch it, so its tiles of V have `buf`'s capacity less W's 256 B.
SHARED_WEIGHT = """
name: shared weight
ranks: {m: 16, k: 16, n: 16}
default_bits: 8
tensors:
  W: {kind: weight}
  V: {kind: weight}
  A0: {kind: activation}
  A1: {kind: activation}
  A2: {kind: activation}
einsums:
  - Z0[m,n] = A0[m,k] * W[k,n]
  - Z1[m,n] = A1[m,k] * V[k,n]
  - Z2[m,n] = A2[m,k] * W[k,n]
"""


def test_an_einsum_has_for_its_tiles_the_room_its_bystanders_leave() -> None:
    """At 1 KiB W's copy lives in `buf` (256 B of it) over the three einsums; the middle one, which does not read W,
    has 1,024 - 256 = 768 B for its tiles, the others all 1,024."""
    work = parse_cascade(parse_yaml(SHARED_WEIGHT, "<shared weight>"))
    arch = weight_buffer_arch("1 KiB")
    homes = assign_homes(arch, work)
    assert [(h.lifetime.tensor, h.level) for h in homes if h.lifetime.role == "weights"] == [("W", "buf")]
    rooms = [1024 - sum(size for _, size in held.get("buf", ())) for held in bystanders(arch, work, homes)]
    assert rooms == [1024, 768, 1024]


@pytest.mark.parametrize("capacity, w_spilled", [(256 + 128, 0), (256 + 64, 256), (256 + 7, 256)])
def test_a_live_tensor_that_would_crowd_out_a_tile_lives_further_out(capacity: int, w_spilled: int) -> None:
    """The middle GEMM keeps a double-buffered 128 B slice of V (docstring: DRAM serves V once, 1,536 cycles). Beside
    W's 256 B copy that needs 384 B; below, W's copy is refused (`buf` reports its 256 B spilled, W is read from
    DRAM as before) and every GEMM still takes 1,536 cycles, never more for keeping something on chip (at 263 B
    the slice would not even have its 8 B of staging)."""
    work = parse_cascade(parse_yaml(SHARED_WEIGHT, "<shared weight>"))
    result = evaluate(weight_buffer_arch(f"{capacity} B"), work, objective="latency")
    assert [e.cost.total_cycles for e in result.einsums] == [1536, 1536, 1536]
    assert result.einsums[1].cost.accesses[("dram", "V", "read")] == 256
    buf = next(use for use in result.trace.memory if use.level == "buf")
    assert buf.spilled_bytes == w_spilled


@settings(max_examples=40, deadline=None)
@given(sizes=st.tuples(*(st.sampled_from((4, 8, 16, 32)) for _ in range(3))), data=st.data(),
       dataflow=st.sampled_from(("os", "ws")))
def test_a_smaller_buffer_beside_a_shared_weight_never_runs_faster(sizes: tuple[int, int, int], data: st.DataObject,
                                                                 dataflow: str) -> None:
    """The shared-weight chain at random sizes, the buffer around W's k x n bytes (where its copy and the middle
    GEMM's tiles compete): shrinking the buffer never lowers the latency the latency objective finds (a home that
    would crowd a tile out moves outward instead), or it is an InfeasibleError naming the fix."""
    m, k, n = sizes
    text = SHARED_WEIGHT.replace("{m: 16, k: 16, n: 16}", f"{{m: {m}, k: {k}, n: {n}}}")
    work = parse_cascade(parse_yaml(text, "<shared weight>"))
    capacity = data.draw(st.integers(8, 3 * k * n), label="capacity")
    small = data.draw(st.integers(8, capacity), label="smaller")

    def cycles(size: int) -> float | None:
        try:
            return evaluate(weight_buffer_arch(f"{size} B", dataflow=dataflow), work, objective="latency").cycles
        except InfeasibleError as error:
            assert "Fix:" in str(error)
            return None

    before, after = cycles(capacity), cycles(small)
    if before is None:
        assert after is None
    elif after is not None:
        assert after >= before


def test_a_crowding_tensor_with_no_level_further_out_stays_and_the_einsum_maps_in_its_room() -> None:
    """With DRAM holding no weights, W's and V's only copies live in `buf` (1 KiB) for the whole run: neither can
    move out. Told that no mapping fits beside them, the placement sets no budget (nothing can move) and hands each
    GEMM the room the weight it does not read leaves: 1,024 - 256 = 768 B (V beside the first and last, W beside
    the middle)."""
    work = parse_cascade(parse_yaml(SHARED_WEIGHT, "<shared weight>"))
    spec = weight_buffer_arch("1 KiB").model_dump(by_alias=True)
    spec["memory"][0]["holds"] = ["activations"]
    arch = Arch.model_validate(spec)
    budgets, crowded = crowding_homes(arch, work, assign_homes(arch, work), lambda i, room: False)
    assert budgets == {}
    assert {i: (room.level("buf").room_bytes, room.level("buf").reserved) for i, room in crowded.items()} == {
        0: (768, (("V", 256.0),)), 1: (768, (("W", 256.0),)), 2: (768, (("V", 256.0),))}


def test_a_shared_weight_whose_only_level_is_its_backing_level_is_kept_once() -> None:
    """With DRAM holding no weights, `buf` keeps W and V (256 B each) for the whole run; W, read by two GEMMs, needs
    no second copy there: 512 B of `buf` run the chain and its live peak is 512 B (a second copy made it 768 B,
    and 512 B an error)."""
    work = parse_cascade(parse_yaml(SHARED_WEIGHT, "<shared weight>"))
    spec = weight_buffer_arch("512 B").model_dump(by_alias=True)
    spec["memory"][0]["holds"] = ["activations"]
    result = evaluate(Arch.model_validate(spec), work, objective="latency")
    buf = next(use for use in result.trace.memory if use.level == "buf")
    assert (buf.peak_bytes, buf.spilled_bytes) == (512, 0)


def test_a_tile_with_no_room_beside_a_tensor_that_cannot_move_is_an_error_naming_it() -> None:
    """The docstring's 7 B case, as 263 B of which an unmovable 256 B tensor keeps 256: the error names the tensor,
    the 7 B left and the capacity that gives V's staging its 8 B (264)."""
    work = gemm(16, 16, 16)
    arch = weight_buffer_arch(f"{256 + 7} B")
    buf = arch.level("buf").reserving((("W_other", 256.0),))
    room = arch.model_copy(update={"memory": (arch.memory[0], buf)})
    with pytest.raises(InfeasibleError) as error:
        best_cost(room.engines[0], work.einsums[0], work, room, "latency")
    message = " ".join(str(error.value).split())
    assert ("'buf' holds 263 bytes, of which 256 keep live tensors that no level further out may hold ('W_other'), "
            "leaving 7") in message
    assert "capacity to at least 264 bytes" in message
