"""What a replay did: a span per einsum and transfer on its resource, the makespan, utilization and buffer use."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.schedule.cpsat import BufferSlot


@dataclass(frozen=True)
class Span:
    """A resource busy from `start` to `end` (arch cycles) with one einsum or transfer."""

    resource: str
    kind: str        # "einsum" or "transfer"
    label: str
    start: float
    end: float


@dataclass(frozen=True)
class Trace:
    """Spans, makespan and the plan the replay followed (the schedule's own makespan and buffers)."""

    spans: tuple[Span, ...]
    clock_hz: float
    resources: tuple[str, ...]
    schedule_makespan_cycles: float
    policy: str = "scheduled"
    buffers: tuple[BufferSlot, ...] = ()
    capacity_bytes: int | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def makespan_cycles(self) -> float:
        """Replayed makespan in arch cycles (the last span's end)."""
        return max((s.end for s in self.spans), default=0.0)

    @property
    def makespan_s(self) -> float:
        """Replayed makespan in seconds."""
        return self.makespan_cycles / self.clock_hz

    @property
    def replay_over_schedule(self) -> float:
        """Replayed makespan relative to the schedule's estimate (1.0: no contention the scheduler missed)."""
        return self.makespan_cycles / self.schedule_makespan_cycles if self.schedule_makespan_cycles else 1.0

    def busy_cycles(self, resource: str) -> float:
        """Cycles `resource` was busy."""
        return sum(s.end - s.start for s in self.spans if s.resource == resource)

    def utilization(self) -> dict[str, float]:
        """Busy fraction of the makespan per resource."""
        span = self.makespan_cycles
        return {r: self.busy_cycles(r) / span if span else 0.0 for r in self.resources}

    def utilization_over_time(self, bins: int = 50) -> pd.DataFrame:
        """Busy fraction of each resource per time bin (rows: bin start in cycles)."""
        import numpy as np
        import pandas as pd

        edges = np.linspace(0.0, self.makespan_cycles, bins + 1)
        data = {}
        for r in self.resources:
            busy = np.zeros(bins)
            for s in self.spans:
                if s.resource == r:
                    busy += np.clip(np.minimum(edges[1:], s.end) - np.maximum(edges[:-1], s.start), 0, None)
            data[r] = busy / np.maximum(np.diff(edges), 1e-12)
        return pd.DataFrame(data, index=pd.Index(edges[:-1], name="start_cycles"))

    def occupancy(self) -> pd.DataFrame:
        """On-chip bytes live over time as a step function (planned lifetimes of on-chip and fused tensors)."""
        import pandas as pd

        events: dict[float, float] = {}
        for b in self.buffers:
            if b.bytes:
                events[b.start] = events.get(b.start, 0.0) + b.bytes
                events[b.end] = events.get(b.end, 0.0) - b.bytes
        times = sorted(events)
        live, rows = 0.0, []
        for t in times:
            live += events[t]
            rows.append((t, live))
        return pd.DataFrame(rows, columns=["cycle", "on_chip_bytes"])

    def to_frame(self) -> pd.DataFrame:
        """One row per span: resource, kind, label (einsum or tensor), start, end (cycles); also `einsum`/`engine`."""
        import pandas as pd

        frame = pd.DataFrame([s.__dict__ for s in self.spans],
                             columns=["resource", "kind", "label", "start", "end"])
        frame["einsum"] = frame["label"]
        frame["engine"] = frame["resource"]
        return frame

    def summary(self) -> dict[str, object]:
        """Headline figures: execution model, makespans (replay vs schedule), utilization, notes."""
        return {"execution": "scheduled", "policy": self.policy,
                "makespan_s": self.makespan_s, "schedule_makespan_cycles": self.schedule_makespan_cycles,
                "replay_makespan_cycles": self.makespan_cycles,
                "replay_over_schedule": self.replay_over_schedule,
                "replay_gap_flagged": abs(self.replay_over_schedule - 1.0) > 0.10,
                "utilization": self.utilization(), "schedule_notes": list(self.notes)}

    def plot_timeline(self) -> Figure:
        """Gantt chart per resource (top), utilization over time (middle) and on-chip bytes over time (bottom)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, ax_u, ax_b) = plt.subplots(3, 1, figsize=(11, 8), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 1, 1]})
        colors = {"einsum": "tab:blue", "transfer": "tab:orange"}
        for y, resource in enumerate(self.resources):
            for kind, color in colors.items():
                bars = [(s.start, s.end - s.start) for s in self.spans if s.resource == resource and s.kind == kind]
                if bars:
                    ax.broken_barh(bars, (y - 0.4, 0.8), color=color)
        ax.set_yticks(range(len(self.resources)), self.resources, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{self.policy}: replay {self.makespan_cycles:,.0f} cycles, schedule "
                     f"{self.schedule_makespan_cycles:,.0f} cycles")
        util = self.utilization_over_time()
        for column in util.columns:
            ax_u.step(util.index, util[column], where="post", label=column)
        ax_u.set_ylabel("utilization")
        ax_u.set_ylim(0, 1.05)
        ax_u.legend(fontsize=7, loc="upper right")
        occ = self.occupancy()
        if len(occ):
            ax_b.step(occ["cycle"], occ["on_chip_bytes"] / 2**20, where="post")
        if self.capacity_bytes:
            ax_b.axhline(self.capacity_bytes / 2**20, color="tab:red", linestyle="--", label="capacity")
            ax_b.legend(fontsize=7, loc="upper right")
        ax_b.set_ylabel("on-chip MiB")
        ax_b.set_xlabel("cycle")
        fig.tight_layout()
        return fig
