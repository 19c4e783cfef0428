"""Multi-core CPU model (engines/multicore.py): placement, slowest-thread pace, nested bandwidth caps."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim import load_arch
from accel_sim.engines.multicore import (cpu_arch, mean_transfer_latency, operator_sync_seconds, reachable_bandwidth,
                                        row_split_factor, slowest_thread_rate, split_rows, threads_per_core)
from accel_sim.errors import ConfigError
from accel_sim.evaluate import evaluate
from accel_sim.io.load import load_workload
from accel_sim.spec.arch import Arch
from accel_sim.spec.cpu import Cpu
from accel_sim.spec.workload import Access, Affine, Call, Einsum, Tensor, Workload

GB = 1e9


def cpu(threads: int, **caps: str) -> Cpu:
    """Two clusters: 4 performance cores (3 GHz, 4 pipes, 10 GB/s each) then 2 efficiency cores (1.5 GHz, 2
    pipes, 5 GB/s each), both on die 0."""
    return Cpu.model_validate({"threads": threads, **caps, "clusters": [
        {"name": "p", "cores": 4, "clock": "3 GHz", "simd_pipes": 4, "core_bandwidth": "10 GB/s"},
        {"name": "e", "cores": 2, "clock": "1.5 GHz", "simd_pipes": 2, "core_bandwidth": "5 GB/s"}]})


def test_threads_fill_clusters_in_order_then_wrap_round_the_cores():
    """3 threads: the first three performance cores. 8 threads on 6 cores: every core one, the first two two."""
    assert [counts for _, counts in threads_per_core(cpu(3), 3)] == [[1, 1, 1, 0], [0, 0]]
    assert [counts for _, counts in threads_per_core(cpu(8), 8)] == [[2, 2, 1, 1], [1, 1]]


def test_slowest_thread_sets_the_pace():
    """A static split waits for its slowest thread. Up to 4 threads all run on performance cores (rate 1); the
    5th lands on an efficiency core at 1.5/3 x 2/4 = 0.25; 8 threads put two threads on a performance core
    (1/2 each), still above 0.25, so the pace stays 0.25."""
    assert slowest_thread_rate(cpu(4), 4) == 1.0
    assert slowest_thread_rate(cpu(5), 5) == pytest.approx(0.25)
    assert slowest_thread_rate(cpu(8), 8) == pytest.approx(0.25)


def test_more_pipes_on_the_first_cluster_speed_it_up_against_the_engines_core():
    """The engines describe a core of 4 pipes at 3 GHz (engine_simd_pipes 4). Giving the performance cluster 8
    pipes doubles its threads' rate (4 threads: 2.0); the 5th thread, on an efficiency core, still runs at
    1.5/3 x 2/4 = 0.25 and sets the pace. Without the pin the first cluster's own pipes are the yardstick, so
    its rate stays 1 and the efficiency core's fell to 1.5/3 x 2/8 = 0.125: more pipes, a slower CPU."""
    def faster(threads: int, pinned: int | None) -> Cpu:
        c = cpu(threads)
        p = c.clusters[0].model_copy(update={"simd_pipes": 8})
        return c.model_copy(update={"clusters": (p, c.clusters[1]), "engine_simd_pipes": pinned})
    assert slowest_thread_rate(faster(4, 4), 4) == pytest.approx(2.0)
    assert slowest_thread_rate(faster(5, 4), 5) == pytest.approx(0.25)
    assert slowest_thread_rate(faster(5, None), 5) == pytest.approx(0.125)


def test_saturation_is_min_of_cores_times_per_core_and_shared():
    """n threads at per-core bandwidth b under a shared bandwidth B draw min(n b, B): with b = 10 GB/s and
    B = 25 GB/s, 1 thread 10, 2 threads 20, 3 and 4 threads 25 (saturated)."""
    assert [reachable_bandwidth(cpu(n, bandwidth="25 GB/s"), n) / GB for n in (1, 2, 3, 4)] == \
        pytest.approx([10, 20, 25, 25])


def test_cluster_and_die_caps_nest():
    """A static split waits for its slowest thread, whose rate is the smallest fair share of the caps it is under.
    Six threads, one a core, with the performance cluster capped at 30 GB/s and the die at 35 GB/s: shares are
    10 (a performance core), 5 (an efficiency core), 30 / 4 = 7.5 (the cluster), 35 / 6 = 5.83 (the die), so
    6 x 5 = 30 GB/s: the efficiency cores' 5 GB/s each bind (adding the clusters up gave 35, as if the faster
    threads could take over the slow ones' rows). Eight threads time-share two performance cores (10 / 2 = 5),
    the cluster gives 30 / 6 = 5 and the die 35 / 8 = 4.375: 8 x 4.375 = 35 GB/s. Uncapped, six threads: 6 x 5."""
    def topology(threads: int) -> Cpu:
        c = cpu(threads, die_bandwidth="35 GB/s")
        p = c.clusters[0].model_copy(update={"bandwidth_bytes_per_s": 30 * GB})
        return c.model_copy(update={"clusters": (p, c.clusters[1])})
    assert reachable_bandwidth(topology(6), 6) / GB == pytest.approx(30)
    assert reachable_bandwidth(topology(8), 8) / GB == pytest.approx(35)
    assert reachable_bandwidth(cpu(6), 6) / GB == pytest.approx(30)


def test_a_starved_cluster_slows_every_thread():
    """The performance cores' reach cut to 1 GB/s each: six threads (four of them there) draw 6 x 1 = 6 GB/s, and
    one thread 1 GB/s; before, the efficiency cluster's 10 GB/s was added to the 4 GB/s and hid it."""
    c = cpu(6)
    starved = c.model_copy(update={"clusters": (c.clusters[0].model_copy(update={"core_bandwidth_bytes_per_s": GB}),
                                                c.clusters[1])})
    assert reachable_bandwidth(starved, 6) / GB == pytest.approx(6)
    assert reachable_bandwidth(starved.model_copy(update={"threads": 1}), 1) / GB == pytest.approx(1)


def arch(threads: int) -> Arch:
    """A one-core vector engine (8 lanes) over 100 GB/s DRAM, on the two-cluster CPU above, shared cap 25 GB/s."""
    return Arch.model_validate({
        "name": "cpu", "clock": "3 GHz", "technology_nm": 7,
        "memory": [{"name": "dram", "technology": "DRAM", "bandwidth": "100 GB/s"}],
        "engines": [{"name": "simd", "kind": "vector", "lanes": 8}],
        "cpu": cpu(threads, bandwidth="25 GB/s").model_dump(by_alias=True)})


def barriered(threads: int) -> Cpu:
    """The two-cluster CPU with 3 barriers per operator: 40 ns within the performance cluster, 100 ns within the
    efficiency cluster, 200 ns between them."""
    spec = cpu(threads).model_dump(by_alias=True)
    spec["clusters"][0]["core_to_core_latency"], spec["clusters"][1]["core_to_core_latency"] = 40e-9, 100e-9
    return Cpu.model_validate({**spec, "barriers_per_operator": 3, "cross_cluster_latency": 200e-9})


def test_barrier_moves_a_line_per_thread_and_one_to_release():
    """One thread passes no barrier. Two threads on the performance cluster: (2 + 1) transfers x 40 ns x 3
    barriers = 360 ns. Six threads (4 performance, 2 efficiency cores): ordered pairs 4 x 3 at 40 ns, 2 x 1 at
    100 ns, 2 x 4 x 2 at 200 ns, mean (480 + 200 + 3200) / 30 = 129.33 ns; 7 x 129.33 x 3 = 2716 ns."""
    assert operator_sync_seconds(barriered(1), 1) == 0.0
    assert operator_sync_seconds(barriered(2), 2) == pytest.approx(360e-9)
    assert mean_transfer_latency(barriered(6), 6) == pytest.approx(3880e-9 / 30)
    assert operator_sync_seconds(barriered(6), 6) == pytest.approx(2716e-9)


def test_barriers_need_cited_latencies():
    """Barriers without a core-to-core latency are rejected, naming what is missing and the fix."""
    with pytest.raises(ValueError) as error:
        cpu(2, barriers_per_operator=3)
    assert "core_to_core_latency" in str(error.value) and "cross_cluster_latency" in str(error.value)
    assert "Fix:" in str(error.value)


def test_every_operator_pays_its_barriers():
    """y = a + b, one operator, on two performance cores with 3 barriers of 40 ns transfers: the latency grows by
    exactly 3 x 3 x 40 ns = 360 ns over the same CPU without barriers."""
    r = Affine.rank
    e = Einsum("add", Access("Y", (r("i"),)), Call("add", (Access("A", (r("i"),)), Access("B", (r("i"),)))),
               {"i": 4096})
    work = Workload("add", tuple(Tensor(t, ("I",), (4096,), 16) for t in "ABY"), (e,))
    plain = arch(2).model_dump(by_alias=True)
    synced = {**plain, "cpu": barriered(2).model_dump(by_alias=True)}
    plain["cpu"] = {**synced["cpu"], "bandwidth": None, "barriers_per_operator": 0}
    plain_s, synced_s = (evaluate(Arch.model_validate(a), work, objective="latency").summary()["latency_s"]
                         for a in (plain, synced))
    assert synced_s - plain_s == pytest.approx(360e-9)


def test_cpu_arch_replicates_the_core_and_caps_the_level():
    """3 threads: 24 lanes at the reference clock, DRAM at min(3 x 10, 25) = 25 GB/s; costing it again does not
    replicate twice (the derived arch has no cpu block)."""
    derived = cpu_arch(arch(3))
    assert derived.engines[0].lanes == 24 and derived.engines[0].clock_hz == pytest.approx(3e9)
    assert derived.memory[0].bandwidth_bytes_per_s == pytest.approx(25 * GB)
    assert cpu_arch(derived) == derived


def test_compute_bound_time_falls_with_threads_until_bandwidth_saturates():
    """y = a + b over 2^24 fp16 elements: 2^24 adds and 3 x 2^25 bytes. One thread: compute 2^24 / 8 lanes /
    3 GHz = 0.699 ms, memory 100.7 MB / 10 GB/s = 10.07 ms, so bandwidth-bound; 2 threads 20 GB/s: 5.03 ms;
    4 threads saturate at 25 GB/s: 4.03 ms, and 4 threads are no faster than 3."""
    r = Affine.rank
    n = 2 ** 24
    e = Einsum("add", Access("Y", (r("i"),)), Call("add", (Access("A", (r("i"),)), Access("B", (r("i"),)))),
               {"i": n})
    work = Workload("add", tuple(Tensor(t, ("I",), (n,), 16) for t in "ABY"), (e,))
    latency = {t: evaluate(arch(t), work, objective="latency").summary()["latency_s"] for t in (1, 2, 3, 4)}
    assert latency[1] == pytest.approx(3 * 2 * n / 10e9, rel=0.01)
    assert latency[2] == pytest.approx(3 * 2 * n / 20e9, rel=0.01)
    assert latency[4] == pytest.approx(3 * 2 * n / 25e9, rel=0.01)
    assert latency[4] == pytest.approx(latency[3])


def test_cpu_with_an_engine_that_is_not_a_core_is_rejected(tmp_path):
    """A 'cpu:' arch whose engine cannot be replicated as cores names the engine's kind and the fix."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nclock: 1 GHz\ntechnology_nm: 7\nmemory:\n  - {name: dram, technology: DRAM, "
                    "bandwidth: 10 GB/s}\nengines:\n  - {name: mxu, kind: systolic, rows: 4, cols: 4}\n"
                    "cpu:\n  threads: 2\n  clusters:\n    - {name: p, cores: 2, clock: 1 GHz, simd_pipes: 2}\n")
    with pytest.raises(ConfigError) as error:
        load_arch(path)
    assert "engines[0].kind" in str(error.value) or "engines.0.kind" in str(error.value)
    assert "Fix: describe one core" in str(error.value)


def einsum(out: dict[str, int], reduced: dict[str, int] | None = None, contraction: bool = False) -> Einsum:
    """Y[out ranks] = A[all ranks] (+ B, or x B summed for a contraction), reducing the `reduced` ranks."""
    r = Affine.rank
    sizes = {**out, **(reduced or {})}
    args = (Access("A", tuple(r(n) for n in sizes)), Access("B", tuple(r(n) for n in sizes)))
    reduce = {"reduce": "sum"} if reduced else {}
    expr = Call("mul" if contraction else "add", args)
    return Einsum("op", Access("Y", tuple(r(n) for n in out)), expr, sizes, **reduce)


def test_split_rows_follow_ggml_kernels():
    """A row is the innermost output dimension. One token's [1, 4096] add: 1 row; its mean square over the 4096
    (a reduction, one row per output element): 1 row; RoPE over [32 heads, 128]: 32 rows. A contraction splits
    the larger of its innermost output rank and the rest (ggml mul_mat nr0 vs nr1): x[1, k] W[k, 4096] -> 4096;
    scores [32 heads, 257 keys] -> 257; [32 heads, 16] -> 32."""
    assert split_rows(einsum({"p": 1, "d": 4096})) == 1
    assert split_rows(einsum({"p": 1}, {"d": 4096})) == 1
    assert split_rows(einsum({"h": 32, "e": 128})) == 32
    assert split_rows(einsum({"p": 1, "d": 4096}, {"k": 64}, contraction=True)) == 4096
    assert split_rows(einsum({"h": 32, "m": 257}, {"e": 128}, contraction=True)) == 257
    assert split_rows(einsum({"h": 32, "e": 16}, {"m": 257}, contraction=True)) == 32


def test_busiest_thread_sets_the_row_split_factor():
    """n x ceil(rows / n) / rows: one row on 8 threads runs on one, 8 x its even-split time; 50 rows on 4
    threads give the busiest 13 (12.5 even), 1.04; 4096 rows divide evenly by 8, 1; no split (0 or 1 thread), 1."""
    one_row, rows_50, rows_4096 = (einsum({"r": n, "d": 64}) for n in (1, 50, 4096))
    assert row_split_factor(one_row, 8) == 8.0
    assert row_split_factor(rows_50, 4) == pytest.approx(1.04)
    assert row_split_factor(rows_4096, 8) == 1.0
    assert row_split_factor(one_row, 0) == row_split_factor(one_row, 1) == 1.0


def test_row_split_stretches_an_operator_to_its_busiest_thread():
    """Y[r, i] = A + B with 8192 elements per row on 4 threads (no barriers): split by rows, one row takes 4 x
    its even-split time (one thread works), 4 rows the same time, 6 rows ceil(6 / 4) x 4 / 6 = 4/3 x."""
    def latency(rows: int, split: str) -> float:
        r = Affine.rank
        e = Einsum("add", Access("Y", (r("r"), r("i"))),
                   Call("add", (Access("A", (r("r"), r("i"))), Access("B", (r("r"), r("i"))))), {"r": rows, "i": 8192})
        work = Workload("add", tuple(Tensor(t, ("R", "I"), (rows, 8192), 16) for t in "ABY"), (e,))
        spec = arch(4).model_dump(by_alias=True)
        spec["cpu"]["operator_split"] = split
        return evaluate(Arch.model_validate(spec), work, objective="latency").summary()["latency_s"]
    assert latency(1, "rows") == pytest.approx(4 * latency(1, "even"))
    assert latency(4, "rows") == pytest.approx(latency(4, "even"))
    assert latency(6, "rows") == pytest.approx(4 / 3 * latency(6, "even"))


def test_operator_split_is_even_unless_named():
    """The default divides work evenly; a split other than 'even' or 'rows' is rejected naming the key."""
    assert cpu(2).operator_split == "even"
    with pytest.raises(ValueError) as error:
        cpu(2, operator_split="chunks")
    assert "operator_split" in str(error.value)


def test_a_cpu_counts_cycles_at_its_first_clusters_clock(tmp_path):
    """A CPU's time follows its clusters' clocks; its arch clock, left out, is the first cluster's (1.5 GHz here),
    and one that differs is refused at 'clock': changing it would have changed the reported cycles and no time."""
    body = ("name: x\ntechnology_nm: 7\nmemory:\n  - {name: dram, technology: DRAM, bandwidth: 10 GB/s}\n"
            "engines:\n  - {name: simd, kind: vector, lanes: 8}\n"
            "cpu:\n  threads: 2\n  clusters:\n    - {name: p, cores: 2, clock: 1.5 GHz, simd_pipes: 2}\n")
    path = tmp_path / "cpu.yaml"
    path.write_text(body)
    assert load_arch(path).clock_hz == 1.5e9
    path.write_text("clock: 2 GHz\n" + body)
    with pytest.raises(ConfigError, match=r"clock 2 GHz differs from the clock of the CPU's first cluster 'p' "
                                          r"\(1\.5 GHz\).*Fix: leave clock out") as error:
        load_arch(path)
    assert error.value.key_path == "clock"


def test_a_cores_own_cache_moves_its_cores_times_its_bandwidth() -> None:
    """The Raspberry Pi 5 config's L1 data cache is described for one Cortex-A76 (64 KiB, 76.8 GB/s): 2 threads on 2
    cores move 2 x 76.8 = 153.6 GB/s through their caches, each tile still in one core's 64 KiB, while the
    LPDDR4X takes the 13.23 GB/s the two cores reach (its 17.07 GB/s peak capped); threads beyond the 4 cores add
    no cache (6 threads: 4 x 76.8)."""
    pi5 = Path(__file__).parents[3] / "arch_configs" / "lut" / "raspberry_pi5_tmac.yaml"
    two = cpu_arch(load_arch(pi5, ["cpu.threads=2"]))
    l1d, dram = two.level("l1d"), two.level("lpddr4x")
    assert (l1d.bandwidth_bytes_per_s / GB, l1d.capacity_bytes) == (pytest.approx(153.6), 64 * 1024)
    assert dram.bandwidth_bytes_per_s / GB == pytest.approx(13.23)
    assert cpu_arch(load_arch(pi5, ["cpu.threads=6"])).level("l1d").bandwidth_bytes_per_s / GB == pytest.approx(307.2)


def test_activations_that_crowd_an_l1_tile_are_set_aside_to_dram_at_every_size() -> None:
    """Two layers of Llama-2-7B int8 decode on the M2 Ultra T-MAC config, the L1 swept 20 -> 16 -> 12 -> 8 KiB:
    at 16 and 12 KiB the layer's q, k and residual rows, homed in the L1, leave L1.attn.v_proj's tiles no room;
    they were never set aside to the unified memory (the routed arch's unified memory passes them by, which was
    read as 'no level further out may hold them'), so those sizes were infeasible while 8 KiB ran. Each size now
    runs, and a smaller L1 is never faster."""
    root = Path(__file__).resolve().parents[3]
    latencies = []
    for capacity in ("20 KiB", "16 KiB", "12 KiB", "8 KiB"):
        arch = load_arch(root / "arch_configs" / "lut" / "m2_ultra_tmac.yaml", [f"memory.l1d.capacity={capacity}"])
        work = load_workload(root / "workloads" / "llama2-7b-decode-int8.yaml", overrides=["n_layers=2"])
        latencies.append(evaluate(arch, work, "latency").summary()["latency_s"])
    assert latencies == sorted(latencies)


def test_threads_beyond_the_cores_add_no_area():
    """Eight threads on the four-core Pi 5 time-share the cores: the engines are the four cores (their area four
    cores', not eight: 0.30 mm2, where one replica per thread gave 0.53 mm2)."""
    pi5 = Path(__file__).resolve().parents[3] / "arch_configs" / "lut" / "raspberry_pi5_tmac.yaml"
    four, eight = (cpu_arch(load_arch(pi5, [f"cpu.threads={n}"])) for n in (4, 8))
    assert sum(e.area_mm2(7) for e in eight.engines) == pytest.approx(sum(e.area_mm2(7) for e in four.engines))
    assert eight.engines[0].units == four.engines[0].units == 4
