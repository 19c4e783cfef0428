"""The matplotlib Pareto PNG: the knee is a black star outside the colour scale, with its own legend entry."""
from __future__ import annotations

import matplotlib.colors as mcolors
import pandas as pd

from accel_sim.dse.pareto import pareto_front
from accel_sim.reports.figures import pareto_figure

OBJECTIVES = {"latency_s": "min", "energy_j": "min", "area_mm2": "min"}


def _frame() -> pd.DataFrame:
    """Six feasible points trading latency against energy (area varies) and one infeasible one."""
    rows = [(i, 1.0 + i, 6.0 - i, 2.0 + (i % 3)) for i in range(6)]
    frame = pd.DataFrame(rows, columns=["point_id", "latency_s", "energy_j", "area_mm2"]).assign(status="ok")
    return pd.concat([frame, pd.DataFrame([{"point_id": 6, "latency_s": 3.0, "energy_j": 3.0, "area_mm2": 9.0,
                                            "status": "infeasible"}])], ignore_index=True)


def test_knee_is_a_black_star_outside_the_colour_scale() -> None:
    """With a third objective on the colour bar, the knee is drawn in black (not mapped through the colormap), is
    listed in the legend, and the title says three objectives are shown on two axes."""
    frame = _frame()
    front = pareto_front(frame[frame["status"] == "ok"], OBJECTIVES)
    fig = pareto_figure(frame, OBJECTIVES, front, "mlp")
    ax = fig.axes[0]
    knee = next(c for c in ax.collections if c.get_label().startswith("knee"))
    assert knee.get_array() is None  # not coloured by the colormap
    assert mcolors.to_hex(knee.get_facecolor()[0]) == "#000000"
    assert len(knee.get_offsets()) == int(front["knee"].sum()) == 1
    coloured = [c for c in ax.collections if c.get_array() is not None]
    assert len(coloured) == 1 and len(fig.axes) == 2  # the feasible points on a colour bar
    assert any(t.get_text().startswith("knee") for t in ax.get_legend().get_texts())
    assert "3 objectives shown on 2 axes" in ax.get_title()


def test_two_objectives_need_no_projection_note() -> None:
    """A 2-objective front is drawn as it is: no colour bar, no note in the title."""
    objectives = {"latency_s": "min", "energy_j": "min"}
    frame = _frame()
    fig = pareto_figure(frame, objectives, pareto_front(frame[frame["status"] == "ok"], objectives), "mlp")
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "mlp"
