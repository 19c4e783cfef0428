"""Architecture specs: shipped configs carry their cited numbers in SI, models are frozen, bad specs explain."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from accel_sim import evaluate, load_workload
from accel_sim.energy import energy_scale_factor
from accel_sim.energy.model import NODE_RANGE_NM, sram_bank_route_mm, wire_energy_j_per_bit_mm
from accel_sim.energy.components import level_area_mm2, level_energy_per_bit
from accel_sim.errors import ConfigError
from accel_sim.io.arch import arch_from_doc, load_arch
from accel_sim.io.yaml import parse_yaml
from accel_sim.engines import SystolicEngine, VectorEngine
from accel_sim.spec.arch import Arch, MemoryLevel
from accel_sim.spec.workload import Access, Affine, Call, Einsum

REPO = Path(__file__).resolve().parents[3]
TPU = REPO / "arch_configs" / "tpu_v1.yaml"
EDGE = REPO / "arch_configs" / "edge_npu.yaml"
BAD = REPO / "tests" / "data" / "bad"
R = Affine.rank

SMALL = """\
name: small
clock: 1 GHz
technology_nm: 7
memory:
  - name: dram
    technology: DRAM
    bandwidth: 100 GB/s
  - name: sram
    technology: SRAM
    capacity: 1 MiB
    bandwidth: 1 TB/s
engines:
  - {name: mxu, kind: systolic, rows: 8, cols: 4}
  - {name: vec, kind: vector, lanes: 16}
"""


def small(text: str = SMALL, **replace: str) -> Arch:
    """Validate SMALL (or `text`) with substring replacements old=new given as keyword pairs."""
    for old, new in replace.items():
        text = text.replace(old.replace("__", " "), new)
    return arch_from_doc(parse_yaml(text, "small.yaml"))


def error_of(text: str) -> ConfigError:
    """The ConfigError validating `text` raises."""
    with pytest.raises(ConfigError) as info:
        arch_from_doc(parse_yaml(text, "bad.yaml"))
    return info.value


def gemm(m: int = 4, n: int = 4, k: int = 4) -> Einsum:
    """Z[m,n] = sum_k A[m,k] * B[k,n]: a contraction (op 'mac')."""
    return Einsum("gemm", Access("Z", (R("m"), R("n"))),
                  Call("mul", (Access("A", (R("m"), R("k"))), Access("B", (R("k"), R("n"))))),
                  {"m": m, "n": n, "k": k})


def exp_map() -> Einsum:
    """Y[i] = exp(X[i]): an elementwise map (op 'exp')."""
    return Einsum("exp", Access("Y", (R("i"),)), Call("exp", (Access("X", (R("i"),)),)), {"i": 8})


# ---------------------------------------------------------------------------------------------
# Shipped configs: the cited numbers, in SI
# ---------------------------------------------------------------------------------------------
def test_tpu_v1_clock_node_and_area_are_the_papers() -> None:
    """Jouppi et al. ISCA 2017 Table 2: 700 MHz, 28 nm, die < 331 mm^2."""
    arch = load_arch(TPU)
    assert (arch.clock_hz, arch.technology_nm, arch.area_mm2) == (700e6, 28.0, 331.0)


def test_tpu_v1_memory_sizes_and_bandwidths_are_the_papers() -> None:
    """ISCA 2017 sec. 2 / Table 2: 8 GiB DDR3 at 34 GB/s, 24 MiB unified buffer, 4 MiB accumulators,
    weight FIFO of four 64 KiB tiles (256 x 256 x 8 b each)."""
    arch = load_arch(TPU)
    ddr3 = arch.level("weight_memory")
    assert (ddr3.technology, ddr3.capacity_bytes, ddr3.bandwidth_bytes_per_s) == ("DDR3", 8 * 2**30, 34e9)
    assert arch.level("unified_buffer").capacity_bytes == 24 * 2**20
    assert arch.level("accumulators").capacity_bytes == 4096 * 256 * 4 == 4 * 2**20
    assert arch.level("weight_fifo").capacity_bytes == 4 * 256 * 256


def test_tpu_v1_on_chip_bandwidths_are_bytes_per_cycle_times_clock() -> None:
    """ISCA 2017 sec. 2: 256 one-byte values per cycle into the matrix unit from the UB (whose results come back
    from the activation unit on a write path of their own) and from the weight FIFO (one shared port); one
    256-element 32-bit partial-sum row per cycle read from and written back to the accumulators, at 700 MHz."""
    arch = load_arch(TPU)
    ub, acc, fifo = (arch.level(n).ports for n in ("unified_buffer", "accumulators", "weight_fifo"))
    assert (ub.read_bytes_per_s, ub.write_bytes_per_s, ub.shared) == pytest.approx((256 * 700e6, 256 * 700e6, False))
    assert (acc.read_bytes_per_s, acc.write_bytes_per_s, acc.shared) == \
        pytest.approx((1024 * 700e6, 1024 * 700e6, False))
    assert fifo.shared and arch.level("weight_fifo").bandwidth_bytes_per_s == pytest.approx(256 * 700e6)


def test_tpu_v1_levels_hold_the_roles_on_their_routes() -> None:
    """ISCA 2017 sec. 2, Fig. 1: weights DDR3 -> weight FIFO -> array; activations Unified Buffer -> array;
    partial sums array -> accumulators -> activation unit -> Unified Buffer. The KV cache (an assumption: TPU v1
    ran no attention) lives with the weights."""
    holds = {m.name: m.holds for m in load_arch(TPU).memory}
    assert holds == {"weight_memory": ("weights", "kv_cache"), "unified_buffer": ("inputs", "outputs"),
                     "accumulators": ("psums",), "weight_fifo": ("weights", "kv_cache")}


def test_levels_on_disjoint_routes_may_be_any_size() -> None:
    """tpu_v1's Accumulators (4 MiB, partial sums only) sit after a Unified Buffer that holds no partial sums, so the
    buffer may shrink below them (a 2 MiB buffer loads); a level that shares a role with an outer one may not
    outgrow it (tests/data/bad/arch_inner_level_larger.yaml)."""
    arch = load_arch(TPU, ["memory.unified_buffer.capacity=2 MiB"])
    assert arch.level("unified_buffer").capacity_bytes == 2 * 2**20 < arch.level("accumulators").capacity_bytes
    with pytest.raises(ConfigError, match="'weight_fifo' .* is larger than 'weight_memory' .* also holds weights"):
        load_arch(TPU, ["memory.weight_fifo.capacity=16 GiB"])  # both hold weights; Weight Memory has 8 GiB


def test_tpu_v1_peak_is_65536_macs_per_cycle_or_92_tops() -> None:
    """ISCA 2017: 65,536 8-bit MACs at 700 MHz = 92 TOPS counting 2 ops per MAC (91.75e12, quoted as 92)."""
    arch = load_arch(TPU)
    mxu = arch.engine("mxu")
    assert mxu.peak_per_cycle(gemm()) == 65536
    tops = 2 * mxu.peak_per_cycle(gemm()) * arch.engine_clock_hz(mxu) / 1e12
    assert tops == pytest.approx(92, rel=0.005)


def test_tpu_v1_pins_no_memory_energy() -> None:
    """Jouppi et al. (ISCA 2017) publish no per-access memory energies, so tpu_v1 pins none: every level's is
    derived from its technology, capacity and the 28 nm node (tests/unit/energy/test_components.py)."""
    arch = load_arch(TPU)
    assert [(lv.technology, lv.read_energy_j_per_bit, lv.write_energy_j_per_bit) for lv in arch.memory] == \
        [("DDR3", None, None)] + [("SRAM", None, None)] * 3


def test_edge_npu_has_eyeriss_array_buffer_and_clock() -> None:
    """Chen et al. JSSC 2017: 168 PEs as 12 x 14, 108 kB global buffer, 200 MHz, 65 nm, 4 x 4 mm die."""
    arch = load_arch(EDGE)
    pe = arch.engine("pe_array")
    assert (pe.rows, pe.cols, pe.peak_per_cycle(gemm())) == (12, 14, 168)
    assert arch.level("global_buffer").capacity_bytes == 108 * 1024
    assert (arch.clock_hz, arch.technology_nm, arch.area_mm2) == (200e6, 65.0, 16.0)


def test_edge_npu_peak_is_33_6_gmacs_at_200_mhz() -> None:
    """168 MACs/cycle x 200 MHz = 33.6e9 MAC/s (JSSC 2017's peak range is 16.8-42.0 GMACS over 100-250 MHz)."""
    arch = load_arch(EDGE)
    pe = arch.engine("pe_array")
    assert pe.peak_per_cycle(gemm()) * arch.engine_clock_hz(pe) == pytest.approx(33.6e9)


def test_edge_npu_dram_link_is_64_bits_at_90_mhz() -> None:
    """JSSC 2017: 64-bit off-chip data bus on a 90 MHz link clock -> 8 B x 90e6 /s = 720 MB/s."""
    dram = load_arch(EDGE).level("dram")
    assert dram.bandwidth_bytes_per_s == pytest.approx(8 * 90e6)
    assert dram.capacity_bytes is None


def test_edge_npu_global_buffer_energy_is_one_4_kb_bank_scaled_to_65_nm_plus_the_wire_to_it() -> None:
    """An access reads one of the 27 banks of 4 KB: Horowitz 2014's 8 KB read (10 pJ per 64 bits at 45 nm) carried
    log-log down to 4 KB along the 8-32 KB slope (x 2 in energy per x 4 in capacity: 10 x sqrt(1/2) = 7.071 pJ),
    to 65 nm by the Stillmaker & Baas factor the MACs use (0.2657 pJ/bit), plus the wire from the port across the
    other banks (sram_bank_route_mm of the level's area at 0.121 pJ/bit/mm: 0.126 pJ/bit). Nothing is pinned in
    the config. (A rel-only approx passed 0.39 pJ against the unbanked 1.32 pJ under pytest's 1e-12 abs.)"""
    arch = load_arch(EDGE)
    glb = arch.level("global_buffer")
    assert glb.read_energy_j_per_bit is None
    bank = 10e-12 * math.sqrt(4 / 8) / 64 * energy_scale_factor(45, 65)
    wire = sram_bank_route_mm(level_area_mm2(glb, 65), 27) * wire_energy_j_per_bit_mm(65)
    assert wire == pytest.approx(0.126e-12, rel=0.01)
    assert level_energy_per_bit(glb, arch.technology_nm)[0] == pytest.approx(bank + wire, rel=1e-9)


@pytest.mark.parametrize("path", sorted((REPO / "arch_configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_can_run_a_contraction_and_an_elementwise_op(path: Path) -> None:
    """Each shipped design has an engine for MACs and one for maps such as exp (else workloads fail)."""
    arch = load_arch(path)
    assert max(e.peak_per_cycle(gemm()) for e in arch.engines) > 0
    assert max(e.peak_per_cycle(exp_map()) for e in arch.engines) > 0


@pytest.mark.parametrize("path", sorted((REPO / "arch_configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_number_in_a_shipped_config_cites_a_source(path: Path) -> None:
    """Every line of a shipped config that sets a number carries a comment (its source) beside it."""
    uncited = [line for line in path.read_text().splitlines()
               if ":" in line and not line.lstrip().startswith("#") and "#" not in line
               and any(ch.isdigit() for ch in line.split(":", 1)[1])
               and not line.lstrip().startswith(("name:", "- name:", "source:"))]
    assert uncited == []


# ---------------------------------------------------------------------------------------------
# Engine behaviour
# ---------------------------------------------------------------------------------------------
def test_systolic_engine_runs_only_contractions() -> None:
    """A MAC array's peak is rows*cols MACs for 'mac' einsums and 0 (cannot run) for maps like exp."""
    engine = small().engine("mxu")
    assert (engine.peak_per_cycle(gemm()), engine.peak_per_cycle(exp_map())) == (32.0, 0.0)


def test_vector_engine_peak_is_lanes_for_every_operator() -> None:
    """A vector unit applies one operator per lane per cycle, MACs included."""
    engine = small().engine("vec")
    assert (engine.peak_per_cycle(gemm()), engine.peak_per_cycle(exp_map())) == (16.0, 16.0)


def test_engine_clock_defaults_to_arch_clock() -> None:
    """An engine without 'clock' runs at the arch clock (1 GHz here)."""
    arch = small()
    assert arch.engine_clock_hz(arch.engine("mxu")) == arch.engine_clock_hz("vec") == 1e9


def test_engine_with_its_own_clock_uses_it() -> None:
    """'clock: 500 MHz' on an engine overrides the 1 GHz arch clock for that engine only."""
    arch = small(**{"lanes: 16": "lanes: 16, clock: 500 MHz"})
    assert (arch.engine_clock_hz("vec"), arch.engine_clock_hz("mxu")) == (500e6, 1e9)


def test_engines_are_the_tagged_classes() -> None:
    """The 'kind' tag selects the engine class."""
    arch = small()
    assert [type(e) for e in arch.engines] == [SystolicEngine, VectorEngine]


def test_systolic_dataflow_defaults_to_weight_stationary() -> None:
    """dataflow is 'ws' when not given (the TPU's)."""
    assert small().engine("mxu").dataflow == "ws"


def test_lookup_of_unknown_level_names_the_existing_ones() -> None:
    """Arch.level raises KeyError listing the level names."""
    with pytest.raises(KeyError, match="dram, sram"):
        small().level("hbm")


# ---------------------------------------------------------------------------------------------
# Units and defaults
# ---------------------------------------------------------------------------------------------
def test_unit_strings_convert_to_si() -> None:
    """'64 KiB' = 65536 B, '2 GHz' = 2e9 Hz, '1.5 TB/s' = 1.5e12 B/s, '0.5 pJ/bit' = 0.5e-12 J/bit."""
    level = MemoryLevel.model_validate({"name": "x", "technology": "SRAM",
                                        "capacity": "64 KiB", "bandwidth": "1.5 TB/s",
                                        "read_energy_per_bit": "0.5 pJ/bit"})
    engine = VectorEngine.model_validate({"name": "v", "kind": "vector", "lanes": 1, "clock": "2 GHz"})
    assert (level.capacity_bytes, level.bandwidth_bytes_per_s, level.read_energy_j_per_bit) == \
        (65536.0, 1.5e12, pytest.approx(0.5e-12))
    assert engine.clock_hz == 2e9


def test_bare_numbers_are_taken_as_si() -> None:
    """capacity: 1024 means 1024 bytes; bandwidth: 1e9 means 1e9 bytes/s."""
    level = MemoryLevel.model_validate({"name": "x", "technology": "SRAM", "capacity": 1024, "bandwidth": 1e9})
    assert (level.capacity_bytes, level.bandwidth_bytes_per_s) == (1024.0, 1e9)


def test_python_names_are_accepted_too() -> None:
    """populate_by_name: capacity_bytes works as well as the YAML key capacity."""
    level = MemoryLevel.model_validate({"name": "x", "technology": "SRAM", "capacity_bytes": 10,
                                        "bandwidth_bytes_per_s": 5})
    assert (level.capacity_bytes, level.bandwidth_bytes_per_s) == (10.0, 5.0)


def test_write_energy_defaults_to_read_energy() -> None:
    """write_energy_per_bit left out -> equal to read_energy_per_bit; given -> kept."""
    same = MemoryLevel.model_validate({"name": "x", "technology": "DRAM",
                                       "bandwidth": 1, "read_energy_per_bit": "2 pJ"})
    own = MemoryLevel.model_validate({"name": "x", "technology": "DRAM", "bandwidth": 1, "read_energy_per_bit": "2 pJ",
                                      "write_energy_per_bit": "3 pJ"})
    assert (same.write_energy_j_per_bit, own.write_energy_j_per_bit) == (pytest.approx(2e-12), pytest.approx(3e-12))


def test_level_defaults_hold_everything_unbounded_with_energies_and_area_unpinned() -> None:
    """Defaults: every role, no capacity (backing store), no pinned energy or area (the technology model prices
    it)."""
    level = MemoryLevel.model_validate({"name": "x", "technology": "DDR4", "bandwidth": 1})
    assert (level.holds, level.capacity_bytes, level.read_energy_j_per_bit, level.write_energy_j_per_bit,
            level.area_mm2) == (("weights", "inputs", "outputs", "psums", "kv_cache"), None, None, None, None)


def test_validated_arch_round_trips_through_its_dump() -> None:
    """Dumping an Arch and validating the dump gives an equal Arch (SI values are stable)."""
    arch = load_arch(TPU)
    assert Arch.model_validate(arch.model_dump()) == arch


# ---------------------------------------------------------------------------------------------
# Frozen
# ---------------------------------------------------------------------------------------------
def test_arch_is_frozen() -> None:
    """Assigning to a field of a validated Arch raises."""
    arch = small()
    with pytest.raises(ValidationError, match="frozen"):
        arch.clock_hz = 2e9


def test_nested_levels_and_engines_are_frozen() -> None:
    """Levels and engines are frozen too, and their containers are tuples."""
    arch = small()
    with pytest.raises(ValidationError, match="frozen"):
        arch.memory[0].bandwidth_bytes_per_s = 1.0
    with pytest.raises(ValidationError, match="frozen"):
        arch.engines[0].rows = 1
    assert isinstance(arch.memory, tuple) and isinstance(arch.engines, tuple)


# ---------------------------------------------------------------------------------------------
# Errors: key path, line and fix
# ---------------------------------------------------------------------------------------------
def test_duplicate_level_name_points_at_the_second_name() -> None:
    """The error sits on the repeated name (line 8), names the first use and says to rename."""
    err = error_of(SMALL.replace("name: sram", "name: dram"))
    assert (err.key_path, err.line) == ("memory[1].name", 8)
    assert "memory[0]" in err.problem and "distinct name" in err.fix


def test_duplicate_engine_name_points_at_the_second_engine() -> None:
    """Two engines called mxu: key path engines[1].name on line 14."""
    err = error_of(SMALL.replace("name: vec", "name: mxu"))
    assert (err.key_path, err.line) == ("engines[1].name", 14)
    assert "distinct name" in err.fix


def test_inner_level_larger_than_outer_is_rejected() -> None:
    """Capacities must not grow inward: an inner level of 2 MiB under an outer 1 MiB fails at its capacity."""
    text = SMALL.replace("engines:",
                         "  - {name: regs, technology: registers, capacity: 2 MiB, bandwidth: 10 TB/s}\nengines:")
    err = error_of(text)
    assert (err.key_path, err.line) == ("memory[2].capacity", 12)
    assert "sram" in err.problem and "outermost first" in err.fix


def test_unbounded_inner_level_does_not_break_the_capacity_order() -> None:
    """Levels without capacity are skipped by the order check (only given capacities are compared): an unbounded
    off-chip level between a bounded one and the SRAM (an on-chip level always has a capacity, and none may hold an
    off-chip one inside it)."""
    text = SMALL.replace("    bandwidth: 100 GB/s\n", "    capacity: 16 GiB\n    bandwidth: 100 GB/s\n"
                         "  - {name: far, technology: HBM2, bandwidth: 1 TB/s}\n")
    assert small(text).level("far").capacity_bytes is None


def test_negative_capacity_names_key_line_and_fix() -> None:
    """capacity: -1 MiB -> memory[1].capacity, line 10, fix with an example size."""
    err = error_of(SMALL.replace("capacity: 1 MiB", "capacity: -1 MiB"))
    assert (err.key_path, err.line) == ("memory[1].capacity", 10)
    assert "greater than zero" in err.problem and "24 MiB" in err.fix


def test_zero_bandwidth_names_key_line_and_fix() -> None:
    """bandwidth: 0 GB/s -> memory[0].bandwidth, line 7, fix with an example bandwidth."""
    err = error_of(SMALL.replace("bandwidth: 100 GB/s", "bandwidth: 0 GB/s"))
    assert (err.key_path, err.line) == ("memory[0].bandwidth", 7)
    assert "900 GB/s" in err.fix


def test_zero_clock_is_rejected() -> None:
    """clock: 0 Hz -> 'clock' on line 2."""
    err = error_of(SMALL.replace("clock: 1 GHz", "clock: 0 Hz"))
    assert (err.key_path, err.line) == ("clock", 2)
    assert "greater than zero" in err.problem


def test_zero_rows_is_rejected() -> None:
    """rows: 0 -> engines[0].rows."""
    err = error_of(SMALL.replace("rows: 8", "rows: 0"))
    assert (err.key_path, err.line) == ("engines[0].rows", 13)
    assert "positive" in err.fix


def test_negative_energy_is_rejected() -> None:
    """read_energy_per_bit: -1 pJ -> not negative, with the key path."""
    err = error_of(SMALL.replace("bandwidth: 1 TB/s", "bandwidth: 1 TB/s\n    read_energy_per_bit: -1 pJ"))
    assert (err.key_path, err.line) == ("memory[1].read_energy_per_bit", 12)
    assert "negative" in err.problem


def test_wrong_dimension_unit_lists_valid_units() -> None:
    """capacity: 1 GHz -> unknown bytes unit 'GHz', the valid units, and an example in the fix."""
    err = error_of(SMALL.replace("capacity: 1 MiB", "capacity: 1 GHz"))
    assert (err.key_path, err.line) == ("memory[1].capacity", 10)
    assert "unknown bytes unit 'GHz'" in err.problem and "MiB" in err.problem and "24 MiB" in err.fix


def test_area_takes_mm2_bare_or_any_area_unit() -> None:
    """area_mm2 is in mm^2: 'area: 331' is 331 mm^2; '500 um2' is 500e-12 m^2 = 5e-4 mm^2."""
    assert small(**{"technology_nm: 7": "technology_nm: 7\narea: 331"}).area_mm2 == 331.0
    assert small(**{"technology_nm: 7": "technology_nm: 7\narea: 500 um2"}).area_mm2 == pytest.approx(5e-4)


def test_area_with_wrong_unit_is_rejected() -> None:
    """area: 331 GHz -> unknown area unit, key 'area' on line 4, example '331 mm2'."""
    err = error_of(SMALL.replace("technology_nm: 7", "technology_nm: 7\narea: 331 GHz"))
    assert (err.key_path, err.line) == ("area", 4)
    assert "unknown area unit 'GHz'" in err.problem and "331 mm2" in err.fix


def test_unknown_engine_kind_lists_valid_kinds() -> None:
    """kind: systolc -> engines[0].kind on line 13, fix lists 'systolic' and 'vector'."""
    err = error_of(SMALL.replace("kind: systolic", "kind: systolc"))
    assert (err.key_path, err.line) == ("engines[0].kind", 13)
    assert "systolc" in err.problem and "'systolic'" in err.fix and "'vector'" in err.fix


def test_unknown_dataflow_lists_the_three() -> None:
    """dataflow: rs is not os/ws/is; the fix lists them."""
    err = error_of(SMALL.replace("cols: 4}", "cols: 4, dataflow: rs}"))
    assert err.key_path == "engines[0].dataflow"
    assert all(f"'{d}'" in err.fix for d in ("os", "ws", "is"))


def test_empty_holds_is_rejected() -> None:
    """holds: [] leaves a level that stores nothing; the fix names the classes."""
    err = error_of(SMALL.replace("bandwidth: 100 GB/s", "bandwidth: 100 GB/s\n    holds: []"))
    assert err.key_path == "memory[0].holds" and "weights" in err.fix


def test_no_engines_is_rejected() -> None:
    """engines: [] -> at least one engine is needed."""
    err = error_of(SMALL.split("engines:")[0] + "engines: []\n")
    assert (err.key_path, err.line) == ("engines", 12)
    assert "add at least one engine" in err.fix


def test_no_memory_is_rejected() -> None:
    """memory: [] -> at least one level is needed."""
    err = error_of("name: x\nclock: 1 GHz\ntechnology_nm: 7\nmemory: []\nengines:\n"
                   "  - {name: v, kind: vector, lanes: 1}\n")
    assert (err.key_path, err.line) == ("memory", 4)
    assert "at least one level" in err.fix


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    """A YAML list at the top is rejected with the file, line 1 and the keys to write."""
    path = tmp_path / "list.yaml"
    path.write_text("- name: dram\n  bandwidth: 1 GB/s\n")
    with pytest.raises(ConfigError) as info:
        load_arch(path)
    assert info.value.line == 1 and "not a YAML mapping" in info.value.problem and "engines" in info.value.fix


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    """An empty file is not an arch either."""
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="empty file"):
        load_arch(path)


# ---------------------------------------------------------------------------------------------
# Overrides through load_arch
# ---------------------------------------------------------------------------------------------
def test_override_by_level_name() -> None:
    """--set memory.unified_buffer.capacity='8 MiB' shrinks the TPU's unified buffer to 8 * 2**20 bytes."""
    arch = load_arch(TPU, ["memory.unified_buffer.capacity=8 MiB"])
    assert arch.level("unified_buffer").capacity_bytes == 8 * 2**20


def test_override_by_index_and_engine_name() -> None:
    """memory.0.bandwidth and engines.mxu.rows address items by index and by name."""
    arch = load_arch(TPU, ["memory.0.bandwidth=68 GB/s", "engines.mxu.rows=128"])
    assert arch.memory[0].bandwidth_bytes_per_s == 68e9
    assert arch.engine("mxu").peak_per_cycle(gemm()) == 128 * 256


def test_override_leaves_the_file_unchanged_on_reload() -> None:
    """Overrides apply to a copy: loading again without them gives the original numbers."""
    load_arch(TPU, ["clock=1 GHz"])
    assert load_arch(TPU).clock_hz == 700e6


def test_invalid_override_value_names_the_set_not_the_files_line() -> None:
    """--set clock='0 Hz' fails validation at 'clock'; the value came from the --set, so the error quotes it and
    blames no line of the file (the file's clock line is fine)."""
    with pytest.raises(ConfigError) as info:
        load_arch(TPU, ["clock=0 Hz"])
    assert (info.value.key_path, info.value.line) == ("clock", None)
    assert "--set 'clock=0 Hz'" in str(info.value)


@pytest.mark.parametrize(("assignment", "message"), [("engines.mxu.rows=true", "expected a number, got true"),
                                                     ("clock=.inf", "finite"), ("clock=.nan", "finite"),
                                                     ("memory.0.bandwidth=.inf", "finite")])
def test_booleans_and_non_finite_numbers_are_refused(assignment: str, message: str) -> None:
    """`rows: true` is not a 1-row array and `clock: .inf` not a clock: both are errors naming the --set."""
    with pytest.raises(ConfigError) as info:
        load_arch(TPU, [assignment])
    assert message in str(info.value) and f"--set '{assignment}'" in str(info.value)


def test_unknown_override_path_lists_level_names() -> None:
    """memory.nope.capacity -> the error names the path and the TPU's level names."""
    with pytest.raises(ConfigError) as info:
        load_arch(TPU, ["memory.nope.capacity=1 MiB"])
    assert info.value.key_path == "memory.nope.capacity"
    assert "weight_memory" in info.value.fix and "unified_buffer" in info.value.fix


# ---------------------------------------------------------------------------------------------
# The bad-input corpus fails in the loader itself (the CLI test runs the same files end to end)
# ---------------------------------------------------------------------------------------------
def _corpus() -> list[tuple[str, dict]]:
    return [(p.name, yaml.safe_load(p.read_text())) for p in sorted(BAD.glob("arch_*.expect.yaml"))]


@pytest.mark.parametrize(("name", "expect"), _corpus(), ids=[n for n, _ in _corpus()])
def test_bad_arch_corpus_raises_config_error_with_expected_text(name: str, expect: dict) -> None:
    """Each arch_* bad file (or bad --set) raises ConfigError whose message holds every expected substring."""
    args = expect["args"]
    stem = name.removesuffix(".expect.yaml")
    path = BAD / f"{stem}.yaml" if "{file}" in args else REPO / args[1]
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    with pytest.raises(ConfigError) as info:
        load_arch(path, overrides)
    for text in expect["contains"]:
        assert text in str(info.value), f"{text!r} missing from: {info.value}"


def test_a_level_admits_roles_and_name_patterns() -> None:
    """holds: [psums] and tensors: ['*.k_cache']: psums and the K cache, nothing else; 'activations' means any
    non-weight role."""
    level = MemoryLevel.model_validate({"name": "acc", "technology": "SRAM", "capacity": "4 MiB", "bandwidth": "1 GB/s",
                                        "holds": ["psums"],
                                        "tensors": ["*.k_cache"]})
    assert level.admits("psums") and level.admits("activations") and not level.admits("weights")
    assert not level.admits("inputs", "L0.attn.q") and level.admits("weights", "L0.attn.k_cache")


def test_activations_and_one_of_its_roles_together_are_a_duplicate() -> None:
    """holds: [activations, inputs] lists 'inputs' twice."""
    err = error_of(SMALL.replace("bandwidth: 100 GB/s", "bandwidth: 100 GB/s\n    holds: [activations, inputs]"))
    assert err.key_path == "memory[0].holds" and "twice" in err.problem


def test_technology_node_must_lie_in_the_scaling_tables_range_unless_nothing_needs_scaling() -> None:
    """Both ends of NODE_RANGE_NM load; a node outside it is an error at technology_nm naming what the tables price
    (before: `validate` said ok and `run` failed with no file or key path). The shipped H100 at 4 nm pins its L2's
    energy and area and its GPU engine is priced from the board's power, so it loads and its energy and area are
    finite numbers."""
    low, high = NODE_RANGE_NM
    for node in (low, high):
        assert small(**{"technology_nm: 7": f"technology_nm: {node:g}"}).technology_nm == node
    for node in (low * 0.7, high * 1.1):
        error = error_of(SMALL.replace("technology_nm: 7", f"technology_nm: {node:g}"))
        assert error.key_path == "technology_nm"
        assert "engine 'mxu' (systolic)" in str(error) and f"between {low:g} and {high:g} nm" in str(error)
    pinned = SMALL.replace("capacity: 1 MiB", "capacity: 1 MiB\n    read_energy_per_bit: 0.5 pJ\n    area: 1 mm2")
    only_levels = pinned.replace("technology_nm: 7", "technology_nm: 4").replace("  - {name: vec, kind: vector, lanes: 16}\n", "")
    assert "engine 'mxu'" in str(error_of(only_levels))
    h100 = load_arch(REPO / "arch_configs" / "gpu" / "h100_sxm5_80gb.yaml")
    assert h100.technology_nm == 4
    result = evaluate(h100, load_workload(REPO / "workloads" / "gemm.einsum.yaml"))
    assert math.isfinite(result.energy_j) and math.isfinite(result.area_mm2)
    unpinned = error_of((REPO / "arch_configs" / "gpu" / "h100_sxm5_80gb.yaml").read_text().replace(
        "    area: 16.17 mm2", ""))
    assert "level 'l2' (no pinned area)" in str(unpinned) and "pin read_energy_per_bit and area of 'l2'" in str(unpinned)
