"""SCALE-Sim .cfg and topology readers (strict, located errors) and the report writer's exact layout."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_sim.compat.scalesim import (ScaleSimArch, config_text, load_scalesim_config, load_topology, read_report,
                                      simulate, write_reports)
from accel_sim.cli import main
from accel_sim.compat.scalesim.files import COMPUTE_HEADER
from accel_sim.errors import ConfigError

DATA = Path(__file__).parents[2] / "data" / "scalesim"
OK_CFG = (DATA / "ok_config.cfg").read_text()


def cfg_with(tmp_path: Path, old: str, new: str) -> Path:
    """ok_config.cfg with one line replaced."""
    assert old in OK_CFG
    path = tmp_path / "c.cfg"
    path.write_text(OK_CFG.replace(old, new))
    return path


def topo(tmp_path: Path, text: str) -> Path:
    """A topology file with the given text."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


CONV_HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"


def test_reads_shipped_config() -> None:
    """Every number of ok_config.cfg lands in the arch: 8x8 ws, 64/64/32 KiB, USER 16 words/cycle."""
    cfg = load_scalesim_config(DATA / "ok_config.cfg")
    a = cfg.arch
    assert (a.rows, a.cols, a.dataflow, a.interface) == (8, 8, "ws", "USER")
    assert (a.ifmap_sram_kib, a.filter_sram_kib, a.ofmap_sram_kib) == (64, 64, 32)
    assert (a.ofmap_bandwidth, a.ifmap_bank_bandwidth, a.filter_bank_bandwidth) == (16, 16, 16)
    assert (cfg.run_name, cfg.filter_offset) == ("ok_config", 10_000_000)


def test_keys_match_without_case(tmp_path: Path) -> None:
    """Keys are case-insensitive, as configparser (SCALE-Sim's reader) makes them."""
    cfg = load_scalesim_config(cfg_with(tmp_path, "ArrayHeight = 8", "arrayheight = 4"))
    assert cfg.arch.rows == 4


def test_calc_mode_needs_no_bandwidth(tmp_path: Path) -> None:
    """In CALC mode `Bandwidth` is not read, so it may be absent."""
    path = cfg_with(tmp_path, "InterfaceBandwidth = USER", "InterfaceBandwidth = CALC")
    path.write_text(path.read_text().replace("\nBandwidth = 16\n", "\n"))
    assert load_scalesim_config(path).arch.interface == "CALC"


def test_user_mode_requires_bandwidth(tmp_path: Path) -> None:
    """In USER mode a missing `Bandwidth` names architecture_presets.Bandwidth and how to add it."""
    with pytest.raises(ConfigError) as err:
        load_scalesim_config(cfg_with(tmp_path, "\nBandwidth = 16\n", "\n"))
    assert err.value.key_path == "architecture_presets.Bandwidth" and "add a line 'Bandwidth = ...'" in err.value.fix


def test_duplicate_key_is_an_error(tmp_path: Path) -> None:
    """A key given twice (SCALE-Sim's configparser would raise a bare DuplicateOptionError) names both lines."""
    with pytest.raises(ConfigError) as err:
        load_scalesim_config(cfg_with(tmp_path, "ArrayWidth = 8\n", "ArrayWidth = 8\nArrayWidth = 16\n"))
    assert err.value.line == 7 and "first on line 6" in err.value.problem


def test_bank_bandwidth_must_divide_among_banks(tmp_path: Path) -> None:
    """IfmapSRAMBankBandwidth not divisible by IfmapSRAMBankNum (SCALE-Sim asserts) is a located error."""
    with pytest.raises(ConfigError) as err:
        load_scalesim_config(cfg_with(tmp_path, "IfmapSRAMBankNum = 1", "IfmapSRAMBankNum = 3"))
    assert err.value.key_path == "layout.IfmapSRAMBankBandwidth"


@pytest.mark.parametrize(("old", "new", "key"), [
    ("SparsitySupport = false", "SparsitySupport = true", "sparsity.SparsitySupport"),
    ("IfmapCustomLayout = False", "IfmapCustomLayout = True", "layout.IfmapCustomLayout"),
    ("UseRamulatorTrace = False", "UseRamulatorTrace = True", "run_presets.UseRamulatorTrace"),
])
def test_unmodelled_features_are_refused(tmp_path: Path, old: str, new: str, key: str) -> None:
    """Sparsity, custom layouts and Ramulator traces are refused with the key to turn off, not ignored."""
    with pytest.raises(ConfigError) as err:
        load_scalesim_config(cfg_with(tmp_path, old, new))
    assert err.value.key_path == key and "False" in err.value.fix


def test_topology_trailing_comma_is_optional(tmp_path: Path) -> None:
    """SCALE-Sim drops the last field of every row; we read rows with or without the trailing comma alike."""
    with_comma = load_topology(topo(tmp_path, CONV_HEADER + "a, 16, 16, 3, 3, 8, 16, 2,\n"))
    without = load_topology(topo(tmp_path, CONV_HEADER + "a, 16, 16, 3, 3, 8, 16, 2\n"))
    assert with_comma == without and with_comma[0].stride == 2


def test_gemm_topology_runs_as_scalesim_conv(tmp_path: Path) -> None:
    """GEMM M,N,K becomes SCALE-Sim's conv H=M, W=K, R=1, S=K, C=1, stride 1, whose im2col view is M x N x K."""
    (layer,) = load_topology(topo(tmp_path, "Layer, M, N, K,\ng, 37, 23, 29,\n"), gemm=True)
    assert layer.mnk == (37, 23, 29) and (layer.ifmap_h, layer.ifmap_w, layer.filter_w) == (37, 29, 29)


def test_dp_layers_split_per_channel(tmp_path: Path) -> None:
    """As in SCALE-Sim, a conv whose name contains DP runs as one single-channel layer per channel."""
    layers = load_topology(topo(tmp_path, CONV_HEADER + "DP1, 8, 8, 3, 3, 3, 1, 1,\n"))
    assert [l.name for l in layers] == ["DP1Channel_0", "DP1Channel_1", "DP1Channel_2"]
    assert all(l.channels == 1 for l in layers)


def test_gemm_rows_in_conv_mode_hint_at_flag(tmp_path: Path) -> None:
    """A GEMM topology read without --gemm says so and names the row."""
    with pytest.raises(ConfigError) as err:
        load_topology(topo(tmp_path, "Layer, M, N, K,\ng, 37, 23, 29,\n"))
    assert err.value.key_path == "row 1" and "add --gemm" in err.value.problem


def test_non_integer_dimension_names_row_and_column(tmp_path: Path) -> None:
    """'3.5' channels: row 1 column Channels, line 2."""
    with pytest.raises(ConfigError) as err:
        load_topology(topo(tmp_path, CONV_HEADER + "a, 16, 16, 3, 3, 3.5, 16, 1,\n"))
    assert (err.value.line, err.value.key_path) == (2, "row 1 column Channels")


def test_report_layout_matches_scalesim(tmp_path: Path) -> None:
    """Reports have SCALE-Sim's header line, 'LayerID, v, v,' rows, integer counts and float cycles."""
    layers = load_topology(DATA / "ok_gemm.csv", gemm=True)
    write_reports(simulate(layers, load_scalesim_config(DATA / "ok_config.cfg").arch), tmp_path)
    lines = (tmp_path / "COMPUTE_REPORT.csv").read_text().splitlines()
    assert lines[0] == COMPUTE_HEADER and lines[1].startswith("0, ") and lines[1].endswith(",")
    detail = read_report(tmp_path / "DETAILED_ACCESS_REPORT.csv")[0]
    assert detail["SRAM IFMAP Reads"].isdigit() and detail["DRAM IFMAP Start Cycle"].endswith(".0")


@pytest.mark.parametrize("dataflow, interface", [("os", "USER"), ("ws", "CALC"), ("is", "USER")])
def test_config_text_reads_back_as_the_same_arch(tmp_path: Path, dataflow: str, interface: str) -> None:
    """config_text writes SCALE-Sim's .cfg format; reading it back gives the arch it was written from."""
    arch = ScaleSimArch(16, 8, 64, 32, 16, dataflow, interface, 8, 4, 2)
    path = tmp_path / "round.cfg"
    path.write_text(config_text(arch, run_name="round"))
    read = load_scalesim_config(path)
    assert (read.arch, read.run_name) == (arch, "round")


def test_the_shipped_sample_runs_as_the_readme_says(tmp_path: Path) -> None:
    """README: `accel-sim scalesim workloads/scalesim/sample.cfg workloads/scalesim/sample_topology.csv -o DIR`
    writes SCALE-Sim's three reports."""
    root = Path(__file__).resolve().parents[3]
    assert main(["scalesim", str(root / "workloads/scalesim/sample.cfg"),
                 str(root / "workloads/scalesim/sample_topology.csv"), "-o", str(tmp_path)]) == 0
    for name in ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"):
        assert (tmp_path / name).stat().st_size > 0
