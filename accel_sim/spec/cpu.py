"""A multi-core CPU's topology: core clusters (cores, clock, SIMD pipes, reachable bandwidths) and the thread count.

A CPU config describes its compute engines as ONE core of the first cluster (the reference core); `cpu:` says
how many such cores the software's threads occupy and what memory bandwidth they can reach together. The model
that turns this into an arch at a thread count is `accel_sim.engines.multicore`.

Bandwidth caps nest: each active core draws at most `core_bandwidth`, each cluster at most its `bandwidth`
(its L2 / fabric port), each die at most `die_bandwidth`, the whole CPU at most `bandwidth` (what the memory
system sustains for the CPU). A cap left out is not binding (no measurement was cited for it).

Thread barriers: software that splits every operator over its threads waits for all of them `barriers_per_operator`
times per operator; each barrier moves a shared cache line from core to core, at the core-to-core latency of the
cores involved: `core_to_core_latency` within a cluster, `cross_cluster_latency` between clusters of one die,
`cross_die_latency` between dies. No barriers (0, the default) need no latencies.

Operator split: how the software divides one operator among its threads. `even` (the default): in equal shares.
`rows`: ggml's static split, each thread taking ceil(rows / n) consecutive rows, so an operator with fewer rows than
threads runs on as many threads as it has rows (`engines/multicore.py`, `split_rows`).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, NonNegativeInt, field_validator, model_validator

from accel_sim.spec.fields import SPEC_CONFIG, BytesPerSecond, Hertz, PositiveInt, Seconds, named_entries


class CoreCluster(BaseModel):
    """Identical cores sharing one L2 / fabric port: count, clock, SIMD pipes and reachable bandwidths."""

    model_config = SPEC_CONFIG

    name: str
    cores: PositiveInt
    clock_hz: Hertz = Field(alias="clock")
    simd_pipes: PositiveInt                 # 128-bit SIMD pipes per core (throughput scales with them)
    die: NonNegativeInt = 0                 # which die the cluster sits on (for `Cpu.die_bandwidth`)
    core_bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="core_bandwidth")  # one core's reach
    bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="bandwidth")  # the cluster's reach together
    latency_s: Seconds | None = Field(None, alias="core_to_core_latency")  # a cache line between two of its cores


class Cpu(BaseModel):
    """Core clusters in the order the OS fills them with busy threads (performance clusters first), the thread
    count the software runs, and the bandwidth caps above the clusters."""

    model_config = SPEC_CONFIG

    threads: PositiveInt                    # software threads (llama.cpp -t); may exceed the physical cores
    clusters: tuple[CoreCluster, ...]
    # SIMD pipes of the core the engines describe (None: the first cluster's): pinned, a first cluster given more
    # pipes runs faster than the engines' core, where the pipes only served as the others' yardstick
    engine_simd_pipes: PositiveInt | None = None
    die_bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="die_bandwidth")  # per die, all clusters
    bandwidth_bytes_per_s: BytesPerSecond | None = Field(None, alias="bandwidth")  # the CPU's whole reach
    barriers_per_operator: NonNegativeInt = 0  # thread barriers the software passes per operator (0: none modelled)
    operator_split: Literal["even", "rows"] = "even"  # equal shares, or ggml's ceil(rows / n) rows per thread
    cross_cluster_latency_s: Seconds | None = Field(None, alias="cross_cluster_latency")  # clusters of one die
    cross_die_latency_s: Seconds | None = Field(None, alias="cross_die_latency")  # clusters on different dies

    @field_validator("clusters", mode="after")
    @classmethod
    def _clusters_given(cls, clusters: tuple[CoreCluster, ...]) -> tuple[CoreCluster, ...]:
        return named_entries(clusters, "cluster", "clusters", "a cpu needs at least one core cluster. Fix: list "
                                                              "clusters, e.g. {name: p0, cores: 4, clock: 3.49 GHz, "
                                                              "simd_pipes: 4}")

    @property
    def reference_simd_pipes(self) -> int:
        """SIMD pipes of the core the engines describe: `engine_simd_pipes`, else the first cluster's."""
        return self.engine_simd_pipes or self.clusters[0].simd_pipes

    @property
    def physical_cores(self) -> int:
        """Cores of every cluster together."""
        return sum(c.cores for c in self.clusters)

    @model_validator(mode="after")
    def _barrier_latencies_given(self) -> Cpu:
        if not self.barriers_per_operator:
            return self
        missing = [f"clusters '{c.name}' core_to_core_latency" for c in self.clusters if c.latency_s is None]
        if len(self.clusters) > 1 and self.cross_cluster_latency_s is None:
            missing.append("cross_cluster_latency")
        if len({c.die for c in self.clusters}) > 1 and self.cross_die_latency_s is None:
            missing.append("cross_die_latency")
        if missing:
            raise ValueError(f"barriers_per_operator {self.barriers_per_operator} moves cache lines between cores, "
                             f"but {', '.join(missing)} is not given. Fix: cite a core-to-core latency measurement "
                             f"(e.g. core_to_core_latency: 35 ns), or set barriers_per_operator: 0")
        return self
