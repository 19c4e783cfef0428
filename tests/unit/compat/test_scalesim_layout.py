"""The fast SCALE-Sim read buffer (layout arithmetic) equals the word-by-word §6 algorithm on materialized streams.

Oracle: `compat.scalesim.buffers.prefetch_stream` / `demand_streams` / `_read_buffer_user`, the materialized
algorithm of tests/golden/scalesim/ACCOUNTING.md §6, which reproduced SCALE-Sim 3.0.0 on all 159 USER
reference cases before the fast path existed (and whose outputs the golden test still pins through the fast path).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scalesim_cases import CASES, arch_of, layer_of

from accel_sim.compat.scalesim import base as scb
from accel_sim.compat.scalesim import buffers as scbuf
from accel_sim.compat.scalesim import layout as sl
from accel_sim.compat.scalesim import accounting as sc
from accel_sim.folds import fold_plan


def _reference_reads(layer: scb.ScaleSimLayer, arch: scb.ScaleSimArch, op: str) -> scbuf._ReadResult:
    """The word-by-word §6 read buffer on the materialized prefetch and demand streams."""
    if_s, fl_s, _ = scbuf.demand_streams(layer, arch)
    tot = getattr(arch, f"{op}_sram_kib") * 1024
    return scbuf._read_buffer_user(scbuf.prefetch_stream(layer, arch, op), if_s if op == "ifmap" else fl_s, tot,
                                getattr(arch, f"{op}_bank_bandwidth"))


def _same_reads(layer: scb.ScaleSimLayer, arch: scb.ScaleSimArch, op: str) -> bool | None:
    """Whether the fast read buffer equals the reference (None where the fast path declines: overrun re-fetch)."""
    fast = scbuf._read_buffer_fast(layer, arch, op, getattr(arch, f"{op}_sram_kib") * 1024,
                                getattr(arch, f"{op}_bank_bandwidth"))
    if fast is None:
        return None
    ref = _reference_reads(layer, arch, op)
    return ((fast.dram_reads, fast.dram_start, fast.dram_stop) == (ref.dram_reads, ref.dram_start, ref.dram_stop)
            and np.array_equal(fast.fetch_rows, ref.fetch_rows) and np.array_equal(fast.fetch_done, ref.fetch_done))


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("operand", ["ifmap", "filter"])
@pytest.mark.parametrize("dims", [(7, 9, 3, 3, 3, 5, 1), (9, 9, 3, 3, 2, 7, 2), (1, 40, 1, 40, 1, 9, 1)])
def test_valid_index_is_the_position_among_fetched_words(dataflow: str, operand: str, dims: tuple) -> None:
    """Every valid cell's closed-form index equals its rank among the non -1 words of the materialized prefetch stream.

    A 4x3 array leaves padding lanes in last blocks (5, 7 or 9 filters; 16-35 pixels; 27-54 taps), the strided
    conv has no window overrun ((9 - 3) % 2 = 0), and the GEMV-like layer's extent (1 pixel) is below the block width.
    """
    layer = scb.ScaleSimLayer("L", *dims)
    arch = scb.ScaleSimArch(4, 3, 1, 1, 1, dataflow, "USER", 4, 4, 4)
    m, n, k = layer.mnk
    plan = fold_plan(m, n, k, 4, 3, dataflow)
    lay = sl.stream_layout(dataflow, operand, m, n, k, 4, 3, int(plan.row_folds), int(plan.col_folds))
    stream = scbuf.prefetch_stream(layer, arch, operand)
    r, c = np.divmod(np.arange(lay.n_rows * lay.width), lay.width)
    if lay.family == "diag":
        order = scbuf._antidiagonal_order(lay.n_rows, lay.width)
        r, c = r[order], c[order]
    valid = stream != -1
    assert lay.valid_words == int(valid.sum())
    np.testing.assert_array_equal(sl.valid_index(lay, r[valid], c[valid]), np.arange(int(valid.sum())))


@pytest.mark.parametrize("family", ["diag", "tile"])
@pytest.mark.parametrize("extent, width, blocks, lanes", [(5, 3, 4, 10), (2, 7, 3, 21), (9, 4, 1, 1), (1, 5, 2, 6)])
def test_cell_key_orders_the_stream_and_key_at_inverts_the_index(family: str, extent: int, width: int, blocks: int,
                                                                 lanes: int) -> None:
    """Sorted by stream index, valid cells' keys strictly increase, and key_at(index) is the key of that index's cell.

    The layouts leave 2, 0, 3 and 4 padding lanes in the last block, and include one block and one-row blocks.
    """
    lay = sl.StreamLayout(family, extent, width, lanes, blocks, True, 0, True)
    r, c = np.divmod(np.arange(lay.n_rows * width), width)
    valid = ~((r >= lay.n_rows - extent) & (c >= lay.pad_cols))
    order = np.argsort(sl.valid_index(lay, r[valid], c[valid]))
    keys = sl.cell_key(lay, r[valid], c[valid])[order]
    assert np.all(np.diff(keys) > 0)
    np.testing.assert_array_equal([sl.key_at(lay, i) for i in range(lay.valid_words)], keys)


@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
@pytest.mark.parametrize("dims", [(7, 9, 3, 3, 3, 5, 1), (9, 9, 3, 3, 2, 7, 2), (8, 6, 2, 3, 1, 4, 1)])
def test_probe_cell_is_one_of_the_copies(dataflow: str, dims: tuple) -> None:
    """Each ifmap word's probe cell is among the cells copy_cells lists for it (the probe only orders the test)."""
    layer = scb.ScaleSimLayer("L", *dims)
    m, n, k = layer.mnk
    plan = fold_plan(m, n, k, 4, 3, dataflow)
    lay = sl.stream_layout(dataflow, "ifmap", m, n, k, 4, 3, int(plan.row_folds), int(plan.col_folds))
    r, c = np.divmod(np.arange(lay.n_rows * lay.width), lay.width)
    keep = ~((r >= lay.n_rows - lay.extent) & (c >= lay.pad_cols))
    rows, cols = sl.copy_cells(lay, layer, r[keep], c[keep])
    probe_row, probe_col = sl.probe_cells(lay, layer, r[keep], c[keep])
    assert ((rows == probe_row[:, None]) & (cols == probe_col[:, None])).any(axis=1).all()


def test_fast_read_buffer_equals_reference_on_every_user_case() -> None:
    """On all 159 USER reference cases x 2 operands, fetch rows, completion cycles and DRAM reads equal the reference.

    The 3 overrun cases that re-fetch ifmap are the only ones the fast path declines (they fall back to the reference).
    """
    declined, compared = 0, 0
    for case in CASES:
        if case["interface_mode"] != "USER":
            continue
        for op in ("ifmap", "filter"):
            same = _same_reads(layer_of(case), arch_of(case), op)
            if same is None:
                declined += 1
                continue
            compared += 1
            assert same, (case["case_id"], op)
    assert (compared, declined) == (315, 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=st.integers(3, 14), w=st.integers(3, 14), r=st.integers(1, 4), s=st.integers(1, 4), ch=st.integers(1, 6),
       nf=st.integers(1, 40), stride=st.integers(1, 3), rows=st.integers(2, 9), cols=st.integers(2, 9),
       dataflow=st.sampled_from(["os", "ws", "is"]), kib=st.integers(1, 2), bank=st.sampled_from([1, 4, 8]))
def test_fast_read_buffer_equals_reference_on_random_convs(h, w, r, s, ch, nf, stride, rows, cols, dataflow, kib,
                                                           bank) -> None:
    """Random small convs with 1-2 KiB buffers (so they re-fetch, wrap and see repeated ifmap words): fast == reference."""
    r, s = min(r, h), min(s, w)
    layer = scb.ScaleSimLayer("L", h, w, r, s, ch, nf, stride)
    arch = scb.ScaleSimArch(rows, cols, kib, kib, kib, dataflow, "USER", bank, bank, bank)
    for op in ("ifmap", "filter"):
        assert _same_reads(layer, arch, op) in (True, None)


def _golden_case(case_id: str) -> tuple[scb.ScaleSimLayer, scb.ScaleSimArch, object]:
    """The layer, arch and fold plan of one golden case."""
    case = next(c for c in CASES if c["case_id"] == case_id)
    layer, arch = layer_of(case), arch_of(case)
    return layer, arch, fold_plan(*layer.mnk, arch.rows, arch.cols, arch.dataflow)


@pytest.mark.parametrize("case_id", ["c000", "c030", "c083", "c112", "c140"])
def test_ofmap_row_counts_equal_the_materialized_demand(case_id: str) -> None:
    """The closed-form ofmap words per demand row equal the counts of the materialized ofmap demand (§6)."""
    layer, arch, plan = _golden_case(case_id)
    _, _, counts = scbuf.demand_streams(layer, arch)
    np.testing.assert_array_equal(sc._ofmap_row_counts(plan, arch.dataflow), counts)


@pytest.mark.parametrize("case_id", ["c000", "c030", "c083", "c089", "c112", "c140"])
def test_demand_row_bounds_equal_the_materialized_demand(case_id: str) -> None:
    """First and last demand rows with an address (overrun convs c083/c089 included) equal the materialized demand's."""
    layer, arch, plan = _golden_case(case_id)
    if_s, fl_s, counts = scbuf.demand_streams(layer, arch)
    expected = {op: (int(d.rows[d.addrs != -1][0]), int(d.rows[d.addrs != -1][-1]))
                for op, d in (("ifmap", if_s), ("filter", fl_s))}
    written = np.flatnonzero(counts)
    expected["ofmap"] = (int(written[0]), int(written[-1]))
    assert sc._demand_row_bounds(layer, arch, plan) == expected


def test_user_mode_never_materializes_the_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-fetching, draining USER layer without overrun (ResNet-18 conv2 on a 32x32 array) builds no demand stream."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("demand stream materialized")

    monkeypatch.setattr(sc, "demand_streams", refuse)
    monkeypatch.setattr(sc, "prefetch_stream", refuse)
    layer = scb.ScaleSimLayer("r18_conv2", 58, 58, 3, 3, 64, 64, 1)
    arch = scb.ScaleSimArch(32, 32, 512, 512, 256, "os", "USER", 32, 32, 32)
    report = sc.simulate_layer(layer, arch)
    assert report.dram_ifmap_reads > scb.valid_ifmap_entries(layer)   # it did re-fetch
