"""The timeline PNG folds identical resources into one row, as the HTML timeline does."""
from __future__ import annotations

from accel_sim.sim.trace import Span, Trace


def _trace() -> Trace:
    """An NPU and 32 PIM channels that all run the same attention span; channel 31 also runs a second one."""
    channels = [f"pim.ch{c:02d}" for c in range(32)]
    spans = [Span("npu", "einsum", "ffn", 0.0, 90.0)]
    spans += [Span(ch, "einsum", "qk", 10.0, 60.0) for ch in channels]
    spans.append(Span("pim.ch31", "einsum", "av", 60.0, 80.0))
    return Trace(execution="npu_pim", policy="neupims", spans=tuple(spans), clock_hz=1e9,
                 resources=("npu", *channels), makespan_cycles=90.0)


def test_identical_pim_channels_are_one_row() -> None:
    """31 channels with the same spans are one row 'pim.ch × 31'; the channel that differs keeps its own row."""
    rows, drawn = _trace().timeline_rows()
    assert rows == ["npu", "pim.ch × 31", "pim.ch31"]
    assert drawn == ["npu", "pim.ch00", "pim.ch31"]


def test_the_png_shows_the_folded_rows() -> None:
    """plot_timeline labels its Gantt rows with the folded names, one tick per row."""
    fig = _trace().plot_timeline()
    gantt = fig.axes[0]
    assert [t.get_text() for t in gantt.get_yticklabels()] == ["npu", "pim.ch × 31", "pim.ch31"]
    assert len(gantt.collections) == 3  # one bar collection per row (a single span kind)


def test_overlapping_spans_of_one_resource_count_once_in_its_utilization() -> None:
    """Three GEMMs on one array, each 638 cycles, started 128 apart (the schedule overlaps a GEMM's fill with the
    last one's drain), then a 85-cycle add, in a 1,092-cycle run: the array is busy from 113 to 1,092, 979 cycles,
    0.8965 of the run. Summing the spans gave (3 x 638 + 85) / 1,092 = 1.83."""
    spans = [Span("pe_2d", "einsum", name, start, start + 638) for name, start in (("A", 113), ("B", 241), ("C", 369))]
    spans += [Span("pe_2d", "einsum", "S", 1007, 1092), Span("pe_1d", "einsum", "H", 0, 113)]
    trace = Trace(execution="scheduled", policy="CP-SAT optimal", spans=tuple(spans), clock_hz=1e9,
                  resources=("pe_1d", "pe_2d"), makespan_cycles=1092)
    assert trace.utilization()["pe_2d"] == 979 / 1092
    assert trace.utilization_over_time(bins=4)["pe_2d"].max() <= 1.0
