"""Multi-core CPUs: threads placed on core clusters, the pace of a statically split operator, reachable bandwidth.

A CPU config's engines describe one core of its first cluster (the reference core) and `cpu:` (spec/cpu.py) its
clusters and thread count. `cpu_arch` turns that into the arch the engines cost at the thread count:

- Placement: busy threads fill the clusters in the order listed (performance clusters first, one cluster before
  the next), one thread per core; threads beyond the physical cores wrap round the cores again and time-share
  them (thread i runs on core i mod C).
- Compute: llama.cpp and T-MAC split each operator's rows equally over the threads and wait for all of them at
  the operator's end, so an operator ends when its slowest thread does. With n threads each doing 1/n of the
  work, the operator proceeds at n x the slowest thread's rate, a thread's rate being its core's clock x SIMD
  pipes (relative to the reference core's: the first cluster's clock and `cpu.engine_simd_pipes`, the pipes of the
  core the engines describe) over the threads sharing that core. So the engines become the
  busy cores (`EngineBase.on_cores`, at most one per thread) clocked at the reference clock x that slowest
  relative rate x threads / busy cores: n threads on fewer cores time-share their cycles, and the area counts
  the cores, not the threads.
- Bandwidth: threads draw at most per core `core_bandwidth`, per cluster `bandwidth`, per die `die_bandwidth`,
  all together `cpu.bandwidth`, and never more than the memory level itself gives. The split is static, as for
  compute: each thread streams its equal share of an operator's bytes, so the operator's memory time is its
  slowest thread's. Threads sharing a cap share it fairly (max-min: the slowest thread gets the smallest cap /
  threads under it, the first cap to fill as all rates rise together), so B(n) = min(level, n x min over caps
  of cap / threads under it), the caps being each core (its threads time-share it), each cluster, each die and
  the CPU. A starved cluster then slows every operator, as a slow cluster's compute does, rather than vanishing
  in a sum with the others. The off-chip levels get B(n) as their bandwidth. An on-chip
  level of a CPU config is each core's own (a private L1 data cache): it is described for one core, and the
  threads' cores together move their number of cores times its bandwidth (`_private`); its capacity stays one
  core's, which each thread's tiles use.
- Barriers: every operator ends with `cpu.barriers_per_operator` barriers of all n threads (ggml before June 2024:
  INIT, COMPUTE, FINALIZE). A barrier is a shared counter that every thread decrements and then spins on: the
  threads arrive together (equal shares), so the n read-modify-writes of the counter's cache line serialize,
  one core-to-core transfer each, and the release is one more transfer to the spinning threads (the centralized
  barrier of Mellor-Crummey and Scott, ACM TOCS 9(1), 1991): (n + 1) x the mean latency between two distinct
  active cores. One thread, or threads on one core, pass no barrier that moves a line. Time-sharing a core (n
  above the physical cores) would add context switches to every barrier; they are not modelled. The engines
  carry the result as `operator_sync_s`, which the mapping stage adds to every operator's cost.
- Operator split (`cpu.operator_split: rows`): ggml (llama.cpp as T-MAC built it, ggml.c at kaleid-liner/llama.cpp
  0358ebc) does not divide an operator's work evenly: every kernel gives thread i the rows [i x dr, (i + 1) x dr)
  with dr = ceil(rows / n) (`ggml_compute_forward_add_f32`, `_mul_mat`) or the rows i, i + n, ... (`_rms_norm_f32`,
  `_mul_f32`), a row being the innermost (contiguous) dimension. An operator over fewer rows than threads
  leaves the rest idle at the barrier: a decode step's norms, residual adds and SiLU gate act on one token's
  row and run on one thread (Amdahl per operator), and rows that do not divide by n leave the busiest thread
  ceil(rows / n) of them. The operator then takes n x ceil(rows / n) / rows times its even-split time
  (`row_split_factor`); the mapping stage scales its compute and stall cycles by it. Its memory time is so
  charged at the n-thread bandwidth's share, which understates one thread's reach where the threads together are
  capped; the operators this concerns (one row of a few KB) are not bandwidth-bound in practice. T-MAC's
  matrix multiplies split tiles of its tuned size instead (`n_tile_num` of its kcfg.ini, 16 to 172 per matrix):
  not modelled, the rows of the output stand in for them.
"""
from __future__ import annotations

import math

from accel_sim.spec.arch import Arch, MemoryLevel
from accel_sim.spec.cpu import CoreCluster, Cpu
from accel_sim.spec.fields import memory_kind
from accel_sim.spec.workload import Einsum


def threads_per_core(cpu: Cpu, threads: int) -> list[tuple[CoreCluster, list[int]]]:
    """Each cluster with the thread count on each of its cores: clusters filled in order, then wrapping round."""
    total = cpu.physical_cores
    base, extra = divmod(threads, total)
    placed, index = [], 0
    for cluster in cpu.clusters:
        placed.append((cluster, [base + (1 if index + j < extra else 0) for j in range(cluster.cores)]))
        index += cluster.cores
    return placed


def relative_rate(cluster: CoreCluster, cpu: Cpu) -> float:
    """One core's SIMD throughput relative to the core the engines describe (the first cluster's clock, the
    reference pipes): clock x pipes over the reference's."""
    return cluster.clock_hz * cluster.simd_pipes / (cpu.clusters[0].clock_hz * cpu.reference_simd_pipes)


def slowest_thread_rate(cpu: Cpu, threads: int) -> float:
    """The slowest thread's rate relative to the engines' core to itself: its core's rate over the threads there."""
    return min(relative_rate(cluster, cpu) / on_core
               for cluster, counts in threads_per_core(cpu, threads) for on_core in counts if on_core)


def reachable_bandwidth(cpu: Cpu, threads: int) -> float:
    """Bytes per second `threads` threads draw together under a static split: n x the slowest thread's fair share
    of the per-core, per-cluster, per-die and CPU caps (module docstring; inf: no cap binds)."""
    shares = [(cpu.bandwidth_bytes_per_s or math.inf) / threads]
    on_die: dict[int, int] = {}
    for cluster, counts in threads_per_core(cpu, threads):
        in_cluster = sum(counts)
        if not in_cluster:
            continue
        on_die[cluster.die] = on_die.get(cluster.die, 0) + in_cluster
        shares.append((cluster.bandwidth_bytes_per_s or math.inf) / in_cluster)
        shares += [(cluster.core_bandwidth_bytes_per_s or math.inf) / on_core for on_core in counts if on_core]
    shares += [(cpu.die_bandwidth_bytes_per_s or math.inf) / count for count in on_die.values()]
    return threads * min(shares)


def transfer_latency(cpu: Cpu, a: CoreCluster, b: CoreCluster) -> float:
    """Seconds for a cache line to move from a core of cluster `a` to another core of `b` (`a` is `b`: within one)."""
    if a is b:
        return a.latency_s or 0.0
    return (cpu.cross_cluster_latency_s if a.die == b.die else cpu.cross_die_latency_s) or 0.0


def mean_transfer_latency(cpu: Cpu, threads: int) -> float:
    """Mean core-to-core latency over ordered pairs of distinct cores that `threads` threads occupy (0: one core)."""
    active = [(cluster, sum(1 for on_core in counts if on_core)) for cluster, counts in threads_per_core(cpu, threads)]
    total = pairs = 0.0
    for a, na in active:
        for b, nb in active:
            count = na * (na - 1) if a is b else na * nb
            total += count * transfer_latency(cpu, a, b)
            pairs += count
    return total / pairs if pairs else 0.0


def operator_sync_seconds(cpu: Cpu, threads: int) -> float:
    """Seconds `threads` threads spend in the barriers that end one operator: barriers x (n + 1) transfers each."""
    return cpu.barriers_per_operator * (threads + 1) * mean_transfer_latency(cpu, threads)


def split_rows(einsum: Einsum) -> int:
    """Rows ggml divides `einsum` into among its threads (a row: the output's innermost dimension).

    A contraction (ggml_compute_forward_mul_mat) splits the output's innermost rank (the weight's rows, nr0) or
    the product of the others (nr1), whichever is larger; an operator that reduces its inputs' innermost
    dimension (a norm's mean square, softmax's max and sum) has one row per output element; any other operator
    has one row per output element outside the innermost rank."""
    sizes = [einsum.sizes[r] for r in einsum.output.ranks]
    if not sizes:
        return 1
    if einsum.op == "mac":
        return max(sizes[-1], math.prod(sizes[:-1]))
    return math.prod(sizes) if einsum.reduced_ranks else math.prod(sizes[:-1])


def row_split_factor(einsum: Einsum, threads: int) -> float:
    """An operator's time under ggml's row split over its time under an even split: n x ceil(rows / n) / rows
    (1: the rows divide evenly; n: one row, one thread working). `threads` 0 or 1: no split, 1."""
    if threads <= 1:
        return 1.0
    rows = split_rows(einsum)
    return math.ceil(rows / threads) * threads / rows


_PORTS = ("bandwidth_bytes_per_s", "read_bandwidth_bytes_per_s", "write_bandwidth_bytes_per_s")


def _capped(level: MemoryLevel, bytes_per_s: float) -> MemoryLevel:
    """The level with every port at most `bytes_per_s` (off-chip levels only: on-chip ones are the cores' own)."""
    if memory_kind(level.technology) != "off_chip" or math.isinf(bytes_per_s):
        return level
    return level.model_copy(update={k: min(getattr(level, k), bytes_per_s) for k in _PORTS
                                    if getattr(level, k) is not None})


def _private(level: MemoryLevel, cores: int) -> MemoryLevel:
    """An on-chip level, described for one core, as `cores` cores' own copies move data: every port x `cores`."""
    if memory_kind(level.technology) == "off_chip" or cores == 1:
        return level
    return level.model_copy(update={k: getattr(level, k) * cores for k in _PORTS if getattr(level, k) is not None})


def busy_cores(cpu: Cpu, threads: int) -> int:
    """Physical cores `threads` threads occupy (threads beyond the cores time-share them)."""
    return min(threads, cpu.physical_cores)


def cpu_arch(arch: Arch) -> Arch:
    """The arch its engines are costed on: for a CPU, `cpu.threads` reference cores at the slowest thread's pace,
    paying the barriers that end each operator, and the bandwidth those threads reach; any other arch unchanged."""
    cpu = arch.cpu
    if cpu is None:
        return arch
    cores = busy_cores(cpu, cpu.threads)
    # the busy cores, not one per thread: threads beyond them time-share their cycles (n threads at the slowest
    # thread's rate are n / cores of that rate on each core), so the area is the silicon the run occupies
    clock_hz = cpu.clusters[0].clock_hz * slowest_thread_rate(cpu, cpu.threads) * cpu.threads / cores
    update = {"clock_hz": clock_hz, "operator_sync_s": operator_sync_seconds(cpu, cpu.threads),
              "row_split_threads": cpu.threads if cpu.operator_split == "rows" else 0}
    engines = tuple(e.on_cores(cores).model_copy(update=update) for e in arch.engines)
    bandwidth = reachable_bandwidth(cpu, cpu.threads)
    # cpu None: the result is already per thread count, so costing it again does not replicate the cores twice
    return arch.model_copy(update={"engines": engines, "cpu": None,
                                   "memory": tuple(_private(_capped(m, bandwidth), cores) for m in arch.memory)})
