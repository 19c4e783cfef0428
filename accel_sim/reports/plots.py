"""Matplotlib figures (imported lazily, Agg backend so it works without a screen)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from accel_sim.evaluate import Result


def roofline_figure(result: Result) -> Figure:
    """Roofline: ops per byte of outermost-memory traffic vs attained ops/s, one marker per einsum."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    arch, outer = result.arch, result.arch.memory[0]
    frame = result.per_einsum()
    frame = frame[(frame["bytes"] > 0) & (frame["ops"] > 0)]
    intensity = frame["ops"] / frame["bytes"]

    fig = Figure(figsize=(7.5, 5.0), layout="constrained")
    ax = fig.add_subplot()
    span = np.logspace(np.log10(max(intensity.min() / 4, 1e-3)), np.log10(intensity.max() * 4), 200) \
        if len(frame) else np.logspace(-2, 4, 200)
    for engine in arch.engines:
        peak = max((engine.peak_per_cycle(e) for e in result.workload.einsums), default=0.0)
        if peak <= 0:
            continue
        peak_ops_s = peak * arch.engine_clock_hz(engine)
        ax.plot(span, np.minimum(peak_ops_s, outer.bandwidth_bytes_per_s * span), lw=1.5,
                label=f"{engine.name} roof ({peak_ops_s / 1e12:.3g} Tops/s, {outer.name} "
                      f"{outer.bandwidth_bytes_per_s / 1e9:.3g} GB/s)")
    for kind, group in frame.groupby("bound"):
        ax.scatter(group["ops"] / group["bytes"], group["ops"] / group["latency_s"], s=14, alpha=0.75,
                   label=f"einsums bound by {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"operational intensity (ops per byte of {outer.name} traffic)")
    ax.set_ylabel("attained throughput (ops/s)")
    ax.set_title(f"{result.workload.name} on {arch.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig
