"""Mapping specs: legality checks and their messages, the array form and its round trip, and Cost arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

from accel_sim.errors import InfeasibleError
from accel_sim.spec.arch import Arch
from accel_sim.spec.cost import Cost
from accel_sim.spec.mapping import Mapping, MappingBatch, tensor_names
from accel_sim.spec.workload import Access, Affine, Call, Einsum

R = Affine.rank
AXES = {"rows": 4, "cols": 4}
GEMM = Einsum("gemm", Access("Z", (R("m"), R("n"))),
              Call("mul", (Access("A", (R("m"), R("k"))), Access("B", (R("k"), R("n"))))),
              {"m": 8, "n": 6, "k": 4})
ARCH = Arch.model_validate({
    "name": "t", "clock": "1 GHz", "technology_nm": 28,
    "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "10 GB/s"},
               {"name": "sram", "technology": "SRAM", "capacity": "4 KiB", "bandwidth": "1 TB/s"}],
    "engines": [{"name": "pe", "kind": "systolic", "rows": 4, "cols": 4}]})
LEGAL = Mapping.of({"dram": {"m": 2, "n": 2}, "sram": {"m": 4, "n": 3}}, {"dram": ("n", "m", "k")},
                   {"rows": {"k": 4}}, {"sram": ["B"]})


def test_legal_mapping_passes_check():
    """Factors 2 x 4 = 8 (m), 2 x 3 = 6 (n), 4 spatial (k) cover the sizes; 4 PEs on rows; B kept in DRAM."""
    LEGAL.check(GEMM, ARCH, AXES)


@pytest.mark.parametrize("mapping,expected", [
    (Mapping.of({"dram": {"m": 2}, "sram": {"m": 3, "n": 6}}, spatial={"rows": {"k": 4}}),
     ["rank 'm'", "multiply to 6", "size 8", "Fix:"]),
    (Mapping.of({"dram": {"m": 8, "n": 6}}, spatial={"rows": {"k": 4, "m": 2}}),
     ["axis 'rows'", "multiply to 8", "its 4 PEs", "Fix:"]),
    (Mapping.of({"dram": {"x": 2}}), ["unknown rank 'x'", "temporal[dram]", "m, n, k"]),
    (Mapping.of({"l2": {"m": 2}}), ["unknown level 'l2'", "dram, sram"]),
    (Mapping.of(spatial={"depth": {"m": 2}}), ["unknown axis 'depth'", "rows, cols"]),
    (Mapping.of(bypass={"sram": ["C"]}), ["unknown tensor 'C'", "A, B, Z"]),
    (Mapping.of(order={"dram": ("m", "n", "n")}), ["order[dram]", "not a permutation", "['m', 'n', 'k']"]),
    (Mapping.of(order={"dram": ("m", "n")}), ["not a permutation"]),
    (Mapping.of({"dram": {"m": 0}}), ["temporal[dram][m] = 0", "positive"]),
    (Mapping.of(bypass={"dram": ["A"], "sram": ["A"]}), ["tensor 'A' is bypassed at every level"]),
    (Mapping.of(spatial_below="rf"), ["unknown level 'rf'", "spatial_below"]),
])
def test_check_rejects_illegal_mappings(mapping, expected):
    """Each illegal choice raises InfeasibleError whose message names it (and the valid names or the fix)."""
    full = Mapping.of({"dram": {"m": 8, "n": 6, "k": 4}})
    candidate = Mapping(mapping.temporal or full.temporal, mapping.order, mapping.spatial, mapping.bypass,
                        mapping.spatial_below)
    with pytest.raises(InfeasibleError) as err:
        candidate.check(GEMM, ARCH, AXES)
    for text in expected:
        assert text in str(err.value)


def test_imperfect_factors_are_legal():
    """m = 8 covered by 3 x 3 = 9 (a partial last tile) passes."""
    Mapping.of({"dram": {"m": 3, "n": 6, "k": 4}, "sram": {"m": 3}}).check(GEMM, ARCH, AXES)


def test_batch_arrays_have_documented_shapes_and_order():
    """B = 2, L = 2 levels, R = 3 ranks (m, n, k), A = 2 axes, T = 3 tensors (inputs, then output)."""
    batch = MappingBatch.from_mappings([LEGAL, Mapping.of({"dram": {"m": 8, "n": 6, "k": 4}})], GEMM, ARCH, AXES)
    assert len(batch) == 2
    assert (batch.temporal.shape, batch.order.shape, batch.spatial.shape, batch.bypass.shape) == \
        ((2, 2, 3), (2, 2, 3), (2, 2, 3), (2, 2, 3))
    assert batch.tensor_names == tensor_names(GEMM) == ("A", "B", "Z")
    assert batch.temporal[0].tolist() == [[2, 2, 1], [4, 3, 1]]
    assert batch.order[0, 0].tolist() == [1, 0, 2]          # n, m, k
    assert batch.spatial[0].tolist() == [[1, 1, 4], [1, 1, 1]]
    assert batch.bypass[0].tolist() == [[False, False, False], [False, True, False]]
    assert batch.fanout.tolist() == [1, 1]


def test_batch_round_trips_through_mapping():
    """mapping(i) rebuilt from the arrays gives the same arrays again."""
    batch = MappingBatch.from_mappings([LEGAL], GEMM, ARCH, AXES)
    again = MappingBatch.from_mappings([batch.mapping(0)], GEMM, ARCH, AXES)
    for name in ("temporal", "order", "spatial", "bypass", "fanout"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(again, name))
    assert batch.mapping(0).factors("sram") == {"m": 4, "n": 3, "k": 1}


def test_costs_add_and_weight_utilization_by_macs():
    """(100 MACs at 0.5) + (300 MACs at 0.9): cycles and accesses add; utilization (50 + 270) / 400 = 0.8."""
    a = Cost(100, 10, 2, 3, {("dram", "A", "read"): 5.0}, {("dram", "read"): 1e-9}, 0.5)
    b = Cost(300, 20, 0, 1, {("dram", "A", "read"): 7.0, ("sram", "A", "fill"): 1.0}, {("mac", "compute"): 2e-9}, 0.9)
    total = a + b
    assert (total.macs, total.total_cycles) == (400, 36)
    assert total.accesses == {("dram", "A", "read"): 12.0, ("sram", "A", "fill"): 1.0}
    assert total.total_energy_j == pytest.approx(3e-9)
    assert total.utilization == pytest.approx(0.8)
    assert sum([a, b]) == total


def test_cost_tables_list_every_entry():
    """to_frame has one row per cycle part, access, energy entry, plus macs and utilization; to_dict's total matches."""
    cost = Cost(8, 4, 1, 2, {("sram", "Z", "update"): 3.0}, {("sram", "write"): 1e-12}, 0.25)
    frame = cost.to_frame()
    assert len(frame) == 3 + 1 + 1 + 2
    assert frame.query("metric == 'accesses'")["value"].tolist() == [3.0]
    assert cost.to_dict()["cycles"]["total"] == 7


def test_vectorized_legality_agrees_with_check():
    """legal() marks exactly the candidates check() accepts: the legal one, and not the under-covering (m 2 x 3 < 8),
    over-wide (8 PEs on a 4-PE axis) or everywhere-bypassed ones."""
    full = {"dram": {"m": 8, "n": 6, "k": 4}}
    candidates = [LEGAL, Mapping.of({"dram": {"m": 2, "n": 6, "k": 4}, "sram": {"m": 3}}),
                  Mapping.of(full, spatial={"rows": {"k": 4, "m": 2}}),
                  Mapping.of(full, bypass={"dram": ["A"], "sram": ["A"]})]
    batch = MappingBatch.from_mappings(candidates, GEMM, ARCH, AXES)
    accepted = []
    for m in candidates:
        try:
            m.check(GEMM, ARCH, AXES)
            accepted.append(True)
        except InfeasibleError:
            accepted.append(False)
    assert batch.legal(GEMM, AXES).tolist() == accepted == [True, False, False, False]
