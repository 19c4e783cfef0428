"""What an execution model did: spans on resources, the makespan, utilization and buffer use.

Every execution model (spec/execution.py) returns this one type. A span is one resource (an engine, a pool of
arrays, a PIM channel, a memory link) busy from `start` to `end` arch cycles with one einsum, transfer or group;
`bytes` and `instance` (a sub-batch, an unrolled copy) are filled where the model knows them. A model's own
figures that no other model has (tokens of a decode iteration, the items an NPU+PIM co-simulation ran) live in
`detail`, a typed record of that model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from accel_sim.schedule.model import BufferSlot

GAP_FLAG = 0.10  # a replay this far from its plan is flagged: contention the planner did not model


@dataclass(frozen=True)
class Span:
    """A resource busy from `start` to `end` (arch cycles) with one einsum, transfer or group of einsums."""

    resource: str
    kind: str        # "einsum", "transfer", "group", "mode"
    label: str
    start: float
    end: float
    bytes: float = 0.0   # bytes it moved over its resource, where known
    instance: int = 0    # the sub-batch or unrolled copy it belongs to


@dataclass(frozen=True)
class LevelUse:
    """One memory level over a run: capacity, peak live bytes of the tensors homed there, bytes refused there
    (tensors whose first choice it was, homed further out), bytes read and written, and its busy fraction
    (cycles its traffic needs, summed over einsums, over the makespan)."""

    level: str
    capacity_bytes: float | None
    peak_bytes: float
    spilled_bytes: float
    read_bytes: float
    write_bytes: float
    utilization: float

    def summary(self) -> dict[str, float | None]:
        """JSON-ready figures."""
        return {"capacity_bytes": self.capacity_bytes, "peak_bytes": self.peak_bytes,
                "spilled_bytes": self.spilled_bytes, "read_bytes": self.read_bytes, "write_bytes": self.write_bytes,
                "bandwidth_utilization": self.utilization}


class TraceDetail(Protocol):
    """Figures of one execution model beyond the common trace (e.g. tokens per second of a decode iteration)."""

    def summary(self, makespan_s: float) -> dict[str, object]:
        """Headline figures given the trace's makespan in seconds."""
        ...


@dataclass(frozen=True)
class Trace:
    """Spans, the makespan and, for planned executions, the plan the replay followed."""

    execution: str                  # the execution kind that made it (spec/execution.py)
    policy: str                     # how it ran: 'back to back', 'CP-SAT optimal', 'neupims', 'dataflow', ...
    spans: tuple[Span, ...]
    clock_hz: float
    resources: tuple[str, ...]
    makespan_cycles: float
    concurrent: bool = True         # engines work at the same time (utilization counts every engine's peak)
    instances: int = 1              # copies of the workload it ran (pipelined instances)
    planned_cycles: float | None = None    # the schedule's own makespan of what was replayed
    replayed_cycles: float | None = None   # the replay's makespan of the same
    buffers: tuple[BufferSlot, ...] = ()
    capacity_bytes: int | None = None   # bytes the buffers may use: the buffer level's room
    buffer_level: str = ""              # the memory level the buffers live in (a schedule's on-chip level)
    spill_level: str = ""               # where the schedule's spilled buffers and the graph's inputs and outputs live
    notes: tuple[str, ...] = ()
    detail: TraceDetail | None = None
    memory: tuple[LevelUse, ...] = ()   # per memory level, outer -> inner (sim/placement.py memory_use)

    @property
    def makespan_s(self) -> float:
        """Makespan in seconds."""
        return self.makespan_cycles / self.clock_hz

    @property
    def replay_over_schedule(self) -> float:
        """Replayed makespan relative to the schedule's estimate (1.0: no contention the scheduler missed)."""
        if not self.planned_cycles or self.replayed_cycles is None:
            return 1.0
        return self.replayed_cycles / self.planned_cycles

    def busy_cycles(self, resource: str) -> float:
        """Cycles `resource` (or every resource of the group `resource`, e.g. 'pim', summed over its members) was
        busy: a resource's overlapping spans (one einsum's fill beside the last one's drain) count once."""
        return sum(_union_length(s) for s in self._busy_intervals(resource).values())

    def _busy_intervals(self, resource: str) -> dict[str, list[tuple[float, float]]]:
        """(start, end) of the spans of `resource`, or of each member of the group `resource`, by member."""
        out: dict[str, list[tuple[float, float]]] = {}
        for s in self.spans:
            if _group(s.resource) == resource or s.resource == resource:
                out.setdefault(s.resource, []).append((s.start, s.end))
        return out

    def utilization(self) -> dict[str, float]:
        """Busy fraction of the replayed span per resource group ('pim.ch03' is in group 'pim', averaged)."""
        span = self.replayed_cycles if self.replayed_cycles is not None else self.makespan_cycles
        groups: dict[str, int] = {}
        for r in self.resources:
            groups[_group(r)] = groups.get(_group(r), 0) + 1
        return {g: self.busy_cycles(g) / (n * span) if span else 0.0 for g, n in groups.items()}

    def utilization_over_time(self, bins: int = 50) -> pd.DataFrame:
        """Busy fraction of each resource group per time bin (rows: bin start in cycles)."""
        import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

        end = max((s.end for s in self.spans), default=0.0)
        edges = np.linspace(0.0, end, bins + 1)
        groups: dict[str, int] = {}
        for r in self.resources:
            groups[_group(r)] = groups.get(_group(r), 0) + 1
        data = {}
        for g, members in groups.items():
            busy = np.zeros(bins)
            for intervals in self._busy_intervals(g).values():
                for start, stop in _merged(intervals):
                    busy += np.clip(np.minimum(edges[1:], stop) - np.maximum(edges[:-1], start), 0, None)
            data[g] = busy / (np.maximum(np.diff(edges), 1e-12) * members)
        return pd.DataFrame(data, index=pd.Index(edges[:-1], name="start_cycles"))

    def occupancy(self) -> pd.DataFrame:
        """On-chip bytes live over time as a step function (planned lifetimes of on-chip and fused tensors)."""
        import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

        events: dict[float, float] = {}
        for b in self.buffers:
            if b.bytes:
                events[b.start] = events.get(b.start, 0.0) + b.bytes
                events[b.end] = events.get(b.end, 0.0) - b.bytes
        live, rows = 0.0, []
        for t in sorted(events):
            live += events[t]
            rows.append((t, live))
        return pd.DataFrame(rows, columns=["cycle", "on_chip_bytes"])

    def to_frame(self) -> pd.DataFrame:
        """One row per span: resource, kind, label, start, end (cycles), bytes, instance; also `einsum`/`engine`."""
        import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

        columns = ["resource", "kind", "label", "start", "end", "bytes", "instance"]
        frame = pd.DataFrame([s.__dict__ for s in self.spans], columns=columns)
        frame["einsum"] = frame["label"]
        frame["engine"] = frame["resource"]
        return frame

    def summary(self) -> dict[str, object]:
        """Headline figures: execution kind, policy, makespan, utilization; the plan vs replay where planned."""
        out: dict[str, object] = {"execution": self.execution, "policy": self.policy, "makespan_s": self.makespan_s}
        if self.instances > 1:
            out["instances"] = self.instances
        if self.planned_cycles is not None:
            out.update({"schedule_makespan_cycles": self.planned_cycles,
                        "replay_makespan_cycles": self.replayed_cycles,
                        "replay_over_schedule": self.replay_over_schedule,
                        "replay_gap_flagged": abs(self.replay_over_schedule - 1.0) > GAP_FLAG})
        out["utilization"] = self.utilization()
        if self.memory:
            out["memory"] = {use.level: use.summary() for use in self.memory}
        if self.detail is not None:
            out.update(self.detail.summary(self.makespan_s))
        if self.planned_cycles is not None:
            out["schedule_notes"] = list(self.notes)
        return out

    def timeline_rows(self) -> tuple[list[str], list[str]]:
        """The rows of a timeline, identical resources folded ('pim.ch × 32', as the HTML report does), and the
        resource drawn on each (the first of a folded family; their spans are the same)."""
        _, row_of = fold_resources((s.resource, s.label, s.start, s.end) for s in self.spans)
        first: dict[str, str] = {}
        for resource in self.resources:
            first.setdefault(row_of.get(resource, resource), resource)
        return list(first), list(first.values())

    def plot_timeline(self) -> Figure:
        """Gantt chart per resource (top), utilization over time (middle) and on-chip bytes over time (bottom)."""
        import matplotlib  # matplotlib is heavy to import: loaded on first use

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # matplotlib is heavy to import: loaded on first use

        fig, (ax, ax_u, ax_b) = plt.subplots(3, 1, figsize=(11, 8), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 1, 1]})
        colors = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
        kinds = {k: colors[i % len(colors)] for i, k in enumerate(dict.fromkeys(s.kind for s in self.spans))}
        rows, drawn = self.timeline_rows()
        for y, resource in enumerate(drawn):
            for kind, color in kinds.items():
                bars = [(s.start, s.end - s.start) for s in self.spans if s.resource == resource and s.kind == kind]
                if bars:
                    ax.broken_barh(bars, (y - 0.4, 0.8), color=color, label=kind)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.invert_yaxis()
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize=7)
        title = f"{self.execution} ({self.policy}): {self.makespan_cycles:,.0f} cycles"
        if self.planned_cycles is not None:
            title += f"; replay {self.replayed_cycles:,.0f}, schedule {self.planned_cycles:,.0f} cycles"
        ax.set_title(title)
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


def fold_resources(spans: Iterable[tuple[str, str, float, float]]) -> tuple[list[str], dict[str, str]]:
    """Timeline rows with identical resources folded: 32 PIM channels that run the same spans (resource, label,
    start, end) at the same times become one row 'pim.ch × 32'. Returns the row labels (first-seen order) and each
    resource's row."""
    by_resource: dict[str, list[tuple]] = {}
    for resource, label, start, end in spans:
        by_resource.setdefault(resource, []).append((label, round(start, 6), round(end, 6)))
    families: dict[tuple, list[str]] = {}
    for resource, seq in by_resource.items():
        family = resource.rstrip("0123456789")
        families.setdefault((family, tuple(sorted(seq))), []).append(resource)
    row_of, rows = {}, []
    for (family, _), members in families.items():
        label = members[0] if len(members) == 1 else f"{family.rstrip('._')} × {len(members)}"
        rows.append(label)
        row_of.update({m: label for m in members})
    return rows, row_of


def _group(resource: str) -> str:
    """The group of a resource: the part before the first dot ('pim.ch03' -> 'pim')."""
    return resource.split(".")[0]


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """`intervals` with the overlapping ones joined, in order."""
    out: list[tuple[float, float]] = []
    for start, stop in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def _union_length(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of `intervals`."""
    return sum(stop - start for start, stop in _merged(intervals))
