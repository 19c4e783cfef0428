"""search_many: mapping distinct einsums over several processes gives what one process gives."""
from __future__ import annotations

from accel_sim import load_arch
from accel_sim.mapper.search import search, search_many
from accel_sim.zoo import build


def test_two_processes_equal_one_process() -> None:
    """Each search is deterministic and independent, so spreading a layer's contractions over two processes
    returns the same mappings and costs, in input order, as a loop in this process."""
    arch = load_arch("edge_npu")
    engine = next(e for e in arch.engines if e.kind == "systolic")
    workload = build("bert-base", n_layers=1, seq_len=32)
    spaces = [engine.mapspace(e, workload, arch) for e, _ in workload.distinct_contractions()]
    assert len(spaces) >= 3
    parallel = search_many(spaces, "edp", "local", jobs=2)
    serial = [search(s, "edp", "local") for s in spaces]
    assert [r.mapping for r in parallel] == [r.mapping for r in serial]
    assert [r.cost.total_cycles for r in parallel] == [r.cost.total_cycles for r in serial]
