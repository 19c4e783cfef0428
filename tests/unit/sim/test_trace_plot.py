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
