"""Bytes at a memory level -> cycles (EngineBase.transfer_cycles) and the fold count (folds.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from accel_sim.engines.pim import PimEngine
from accel_sim.folds import fold_count
from accel_sim.spec.arch import Arch


def two_level_arch(engine: dict, sram_ports: dict | None = None) -> Arch:
    """1 GHz arch: HBM at 100 GB/s, an SRAM at 1 TB/s (or `sram_ports`), and `engine`."""
    sram = {"name": "sram", "technology": "SRAM", "capacity": "1 MiB", **(sram_ports or {"bandwidth": "1 TB/s"})}
    return Arch.model_validate({"name": "a", "clock": "1 GHz", "technology_nm": 28,
                                "memory": [{"name": "hbm", "bandwidth": "100 GB/s", "technology": "HBM2"}, sram],
                                "engines": [engine]})


def test_transfer_cycles_are_bytes_over_bandwidth_at_the_arch_clock() -> None:
    """1000 B at 100 GB/s take 10 ns = 10 cycles at 1 GHz, whatever the engine's own clock (500 MHz here)."""
    arch = two_level_arch({"name": "v", "kind": "vector", "lanes": 8, "clock": "500 MHz"})
    engine = arch.engines[0]
    assert engine.transfer_cycles(1000.0, 0.0, arch.memory[0], arch) == pytest.approx(10.0)
    assert engine.transfer_cycles(np.array([1000.0, 2000.0]), 0.0, arch.memory[1], arch) == pytest.approx([1.0, 2.0])


def test_a_shared_port_adds_reads_and_writes() -> None:
    """One port of 100 GB/s: 600 B read plus 400 B written take 1000 B / 100 GB/s = 10 cycles at 1 GHz."""
    arch = two_level_arch({"name": "v", "kind": "vector", "lanes": 8})
    assert arch.engines[0].transfer_cycles(600.0, 400.0, arch.memory[0], arch) == pytest.approx(10.0)


def test_separate_ports_take_the_slower_direction() -> None:
    """Read port 1 TB/s, write port 0.5 TB/s at 1 GHz (1000 and 500 B per cycle): 1000 B read and 1000 B written
    take max(1, 2) = 2 cycles; 3000 B read alone max(3, 0) = 3; 1000 B read and 500 B written max(1, 1) = 1."""
    arch = two_level_arch({"name": "v", "kind": "vector", "lanes": 8},
                          {"read_bandwidth": "1 TB/s", "write_bandwidth": "0.5 TB/s"})
    engine, sram = arch.engines[0], arch.memory[1]
    assert engine.transfer_cycles(1000.0, 1000.0, sram, arch) == pytest.approx(2.0)
    assert engine.transfer_cycles(3000.0, 0.0, sram, arch) == pytest.approx(3.0)
    assert engine.transfer_cycles(1000.0, 500.0, sram, arch) == pytest.approx(1.0)


def test_levels_transfer_cycles_match_transfer_cycles_per_level() -> None:
    """The vectorized form takes the levels on the last axis and agrees with the scalar form level by level, on a
    shared port (hbm) and on separate ports (sram)."""
    arch = two_level_arch({"name": "v", "kind": "vector", "lanes": 8},
                          {"read_bandwidth": "1 TB/s", "write_bandwidth": "0.5 TB/s"})
    engine = arch.engines[0]
    read = np.array([[1000.0, 4000.0], [0.0, 1e6]])
    write = np.array([[500.0, 3000.0], [7.0, 0.0]])
    expected = [[engine.transfer_cycles(r, w, lv, arch) for r, w, lv in zip(rr, ww, arch.memory)]
                for rr, ww in zip(read, write)]
    assert engine.levels_transfer_cycles(read, write, arch).ravel() == pytest.approx(np.ravel(expected))


def test_pim_engine_sees_its_own_level_at_the_in_bank_rate() -> None:
    """A PIM engine in 'hbm' reads it at channels x banks x 64 B per t_col (32 x 16 x 64 B / 2 cycles = 16 KiB
    per cycle, 16.4 TB/s at 1 GHz), far above the bus's 100 GB/s; other levels keep their own bandwidth."""
    pim = PimEngine(name="pim", kind="pim", memory="hbm")
    arch = two_level_arch(pim.model_dump(by_alias=True))
    engine = arch.engines[0]
    internal = 32 * 16 * 64 / 2
    assert engine.transfer_cycles(internal * 10, 0.0, arch.memory[0], arch) == pytest.approx(10.0)
    assert engine.transfer_cycles(1000.0, 0.0, arch.memory[1], arch) == pytest.approx(1.0)
    assert engine.levels_transfer_cycles(np.array([internal * 10, 1000.0]), np.zeros(2), arch) == \
        pytest.approx([10.0, 1.0])


@pytest.mark.parametrize("extent, size", [(1, 1), (7, 8), (8, 8), (9, 8), (147, 128), (100_003, 256)])
def test_fold_count_is_ceil_of_extent_over_size(extent: int, size: int) -> None:
    """ceil(extent / size) for ints, and elementwise for integer arrays."""
    assert fold_count(extent, size) == math.ceil(extent / size)
    assert fold_count(np.array([extent, 2 * extent]), size).tolist() == [math.ceil(extent / size),
                                                                         math.ceil(2 * extent / size)]
