"""SCALE-Sim's own input and output files: the .cfg config, the topology .csv (conv or GEMM), the three reports.

Inputs are read strictly: every problem raises ConfigError with the file, line, `section.key` or
`row N column X`, and a fix, where SCALE-Sim 3.0.0 would assert, print a warning and go on, or
silently drop a field. Keys are matched without regard to case, as Python's configparser (which
SCALE-Sim uses) matches them.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from accel_sim.compat.scalesim.base import (
    REPORT_FIELDS,
    LayerReport,
    ScaleSimArch,
    ScaleSimLayer,
)
from accel_sim.errors import ConfigError
from accel_sim.io.limits import MAX_ITERATION_POINTS
from accel_sim.io.text import utf8_text

# Sections and keys SCALE-Sim 3.0.0 reads (scale_config.read_conf_file of the PyPI release): required ones
# must be present, optional ones may be. Values: "int" (positive), "int0" (>= 0), "bool", "ints", or a choice tuple.
_REQUIRED: dict[str, dict[str, object]] = {
    "general": {"run_name": "str"},
    "architecture_presets": {
        "ArrayHeight": "int", "ArrayWidth": "int",
        "IfmapSramSzkB": "int", "FilterSramSzkB": "int", "OfmapSramSzkB": "int",
        "IfmapOffset": "int0", "FilterOffset": "int0", "OfmapOffset": "int0",
        "Dataflow": ("os", "ws", "is"),
        "ReadRequestBuffer": "int", "WriteRequestBuffer": "int",
    },
    "layout": {
        "IfmapCustomLayout": "bool", "IfmapSRAMBankBandwidth": "int", "IfmapSRAMBankNum": "int",
        "IfmapSRAMBankPort": "int",
        "FilterCustomLayout": "bool", "FilterSRAMBankBandwidth": "int", "FilterSRAMBankNum": "int",
        "FilterSRAMBankPort": "int",
    },
    "sparsity": {"SparsitySupport": "bool"},
    "run_presets": {"InterfaceBandwidth": ("USER", "CALC"), "UseRamulatorTrace": "bool"},
}
_OPTIONAL: dict[str, dict[str, object]] = {
    "architecture_presets": {"Bandwidth": "ints"},   # required in USER mode, ignored in CALC mode
    "sparsity": {"SparseRep": "str", "OptimizedMapping": "bool", "BlockSize": "int",
                 "RandomNumberGeneratorSeed": "int0", "NonZeroElems": "int"},
    "network_presets": {"TopologyCsvLoc": "str", "LayoutCsvLoc": "str"},
}
_SECTIONS = tuple(dict.fromkeys([*_REQUIRED, *_OPTIONAL]))

CONV_COLUMNS = ("Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels",
                "Num Filter", "Strides")
GEMM_COLUMNS = ("Layer", "M", "N", "K")

COMPUTE_HEADER = ("LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall Cycles, Overall Util %, "
                  "Mapping Efficiency %, Compute Util %,")
BANDWIDTH_HEADER = ("LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, "
                    "Avg FILTER DRAM BW, Avg OFMAP DRAM BW,")
DETAIL_HEADER = ("LayerID, "
                 "SRAM IFMAP Start Cycle, SRAM IFMAP Stop Cycle, SRAM IFMAP Reads, "
                 "SRAM Filter Start Cycle, SRAM Filter Stop Cycle, SRAM Filter Reads, "
                 "SRAM OFMAP Start Cycle, SRAM OFMAP Stop Cycle, SRAM OFMAP Writes, "
                 "DRAM IFMAP Start Cycle, DRAM IFMAP Stop Cycle, DRAM IFMAP Reads, "
                 "DRAM Filter Start Cycle, DRAM Filter Stop Cycle, DRAM Filter Reads, "
                 "DRAM OFMAP Start Cycle, DRAM OFMAP Stop Cycle, DRAM OFMAP Writes,")
REPORT_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "COMPUTE_REPORT.csv": (COMPUTE_HEADER, REPORT_FIELDS[0:6]),
    "BANDWIDTH_REPORT.csv": (BANDWIDTH_HEADER, REPORT_FIELDS[6:12]),
    "DETAILED_ACCESS_REPORT.csv": (DETAIL_HEADER, REPORT_FIELDS[12:30]),
}


@dataclass(frozen=True)
class ScaleSimConfig:
    """A SCALE-Sim config as read: its run name, the numbers that matter (`arch`) and the address offsets.

    The offsets are checked but change no count: each operand has its own buffer, so only the
    order and repetition of its addresses matter.
    """

    run_name: str
    arch: ScaleSimArch
    ifmap_offset: int
    filter_offset: int
    ofmap_offset: int


def _did_you_mean(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1)
    if not close:
        return ""
    return f" (did you mean '{next(o for o in options if o.lower() == close[0])}'?)"


def _parse_ini(path: Path) -> dict[str, dict[str, tuple[str, int, str]]]:
    """Sections -> lower-case key -> (value, line, key as written); duplicates and stray lines are errors."""
    try:
        text = utf8_text(path.read_bytes(), path)
    except OSError as exc:
        raise ConfigError(f"cannot read the SCALE-Sim config: {exc.strerror}", fix="give the path of a .cfg file",
                          file=path) from None
    sections: dict[str, dict[str, tuple[str, int, str]]] = {}
    section_lines: dict[str, int] = {}
    current: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = re.fullmatch(r"\[([^\]]*)\]", line)
        if header:
            current = header.group(1).strip()
            if current not in _SECTIONS:
                raise ConfigError(f"unknown section [{current}]{_did_you_mean(current, list(_SECTIONS))}",
                                  fix=f"use only the sections SCALE-Sim reads: {', '.join(_SECTIONS)}",
                                  file=path, line=number, key_path=current)
            if current in sections:
                raise ConfigError(f"section [{current}] appears twice (first on line {section_lines[current]})",
                                  fix="merge the two sections into one", file=path, line=number, key_path=current)
            sections[current], section_lines[current] = {}, number
            continue
        match = re.fullmatch(r"([^=:]+?)\s*[=:]\s*(.*)", line)
        if match is None:
            raise ConfigError(f"cannot read '{line}' as 'key = value'", fix="write one 'key = value' per line",
                              file=path, line=number)
        if current is None:
            raise ConfigError(f"'{match.group(1)}' comes before any [section]",
                              fix="put it under its section, e.g. [architecture_presets]", file=path, line=number,
                              key_path=match.group(1))
        key, value = match.group(1), match.group(2).strip()
        known = {**_REQUIRED.get(current, {}), **_OPTIONAL.get(current, {})}
        if key.lower() not in {k.lower() for k in known}:
            raise ConfigError(f"unknown key '{key}' in [{current}]{_did_you_mean(key, list(known))}",
                              fix=f"use one of: {', '.join(known)}", file=path, line=number,
                              key_path=f"{current}.{key}")
        if key.lower() in sections[current]:
            first = sections[current][key.lower()][1]
            raise ConfigError(f"'{key}' is given twice in [{current}] (first on line {first})",
                              fix="keep one of the two lines", file=path, line=number, key_path=f"{current}.{key}")
        sections[current][key.lower()] = (value, number, key)
    return sections


def _value(path: Path, sections: dict, section: str, key: str, kind: object, required: bool = True) -> object:
    """Read and check one value; returns None for an absent optional key."""
    if section not in sections:
        raise ConfigError(f"section [{section}] is missing", fix=f"add a [{section}] section with its keys "
                          f"({', '.join(_REQUIRED.get(section, {}))})", file=path, key_path=section)
    entry = sections[section].get(key.lower())
    key_path = f"{section}.{key}"
    if entry is None:
        if not required:
            return None
        raise ConfigError(f"'{key}' is missing from [{section}]", fix=f"add a line '{key} = ...' under [{section}]",
                          file=path, key_path=key_path)
    raw, line, _ = entry
    if isinstance(kind, tuple):
        if raw not in kind:
            raise ConfigError(f"'{raw}' is not a valid {key}", fix=f"use one of: {', '.join(kind)}",
                              file=path, line=line, key_path=key_path)
        return raw
    if kind == "str":
        return raw
    if kind == "bool":
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"'{raw}' is not a boolean", fix="write True or False", file=path, line=line,
                              key_path=key_path)
        return raw.lower() == "true"
    parts = [p.strip() for p in raw.split(",")] if kind == "ints" else [raw]
    values = []
    for part in parts:
        if not re.fullmatch(r"[+-]?\d+", part):
            raise ConfigError(f"'{raw}' is not a whole number", fix=f"write {key} as an integer, e.g. {key} = 8",
                              file=path, line=line, key_path=key_path)
        number = int(part)
        if number < (0 if kind == "int0" else 1):
            bound = "zero or more" if kind == "int0" else "at least 1"
            raise ConfigError(f"{key} is {number}", fix=f"make it {bound}", file=path, line=line, key_path=key_path)
        values.append(number)
    return values if kind == "ints" else values[0]


def load_scalesim_config(path: str | Path) -> ScaleSimConfig:
    """Read a SCALE-Sim .cfg: all sections SCALE-Sim 3.0.0 requires, checked, with the features we model."""
    path = Path(path)
    sections = _parse_ini(path)
    get = {(s, k): _value(path, sections, s, k, kind) for s, keys in _REQUIRED.items() for k, kind in keys.items()}
    mode = get[("run_presets", "InterfaceBandwidth")]

    def line_of(section: str, key: str) -> int | None:
        entry = sections.get(section, {}).get(key.lower())
        return entry[1] if entry else None

    for section, key, what in (("layout", "IfmapCustomLayout", "custom ifmap layouts"),
                               ("layout", "FilterCustomLayout", "custom filter layouts"),
                               ("sparsity", "SparsitySupport", "sparsity"),
                               ("run_presets", "UseRamulatorTrace", "Ramulator DRAM traces")):
        if get[(section, key)]:
            raise ConfigError(f"{what} are not modelled by accel-sim's SCALE-Sim compatibility mode",
                              fix=f"set {key} = False", file=path, line=line_of(section, key),
                              key_path=f"{section}.{key}")
    for operand in ("Ifmap", "Filter"):
        bw, banks = get[("layout", f"{operand}SRAMBankBandwidth")], get[("layout", f"{operand}SRAMBankNum")]
        if bw % banks:
            # SCALE-Sim asserts that every bank gets the same share of the bandwidth.
            raise ConfigError(f"{operand}SRAMBankBandwidth {bw} is not divisible by {operand}SRAMBankNum {banks}",
                              fix=f"make {operand}SRAMBankBandwidth a multiple of {operand}SRAMBankNum", file=path,
                              line=line_of("layout", f"{operand}SRAMBankBandwidth"),
                              key_path=f"layout.{operand}SRAMBankBandwidth")
    bandwidth = _value(path, sections, "architecture_presets", "Bandwidth", "ints", required=(mode == "USER"))
    for section, keys in _OPTIONAL.items():
        if section in sections:
            for key, kind in keys.items():
                _value(path, sections, section, key, kind, required=False)
    arch = ScaleSimArch(
        rows=get[("architecture_presets", "ArrayHeight")], cols=get[("architecture_presets", "ArrayWidth")],
        ifmap_sram_kib=get[("architecture_presets", "IfmapSramSzkB")],
        filter_sram_kib=get[("architecture_presets", "FilterSramSzkB")],
        ofmap_sram_kib=get[("architecture_presets", "OfmapSramSzkB")],
        dataflow=get[("architecture_presets", "Dataflow")], interface=mode,
        ofmap_bandwidth=bandwidth[0] if bandwidth else get[("architecture_presets", "ArrayWidth")],
        ifmap_bank_bandwidth=get[("layout", "IfmapSRAMBankBandwidth")],
        filter_bank_bandwidth=get[("layout", "FilterSRAMBankBandwidth")],
    )
    return ScaleSimConfig(get[("general", "run_name")], arch, get[("architecture_presets", "IfmapOffset")],
                          get[("architecture_presets", "FilterOffset")], get[("architecture_presets", "OfmapOffset")])


def load_topology(path: str | Path, gemm: bool = False) -> list[ScaleSimLayer]:
    """Read a SCALE-Sim topology .csv (conv columns, or Layer, M, N, K with gemm=True); a trailing comma is optional.

    As in SCALE-Sim, a conv layer whose name contains 'DP' is depthwise: it runs as one single-channel
    layer per channel.
    """
    path = Path(path)
    try:
        lines = utf8_text(path.read_bytes(), path).splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the topology: {exc.strerror}", fix="give the path of a topology .csv",
                          file=path) from None
    columns = GEMM_COLUMNS if gemm else CONV_COLUMNS
    other = "a conv topology (8 columns); drop --gemm" if gemm else "a GEMM topology (4 columns); add --gemm"
    layers: list[ScaleSimLayer] = []
    header_seen = False
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if not header_seen:
            header_seen = True   # SCALE-Sim skips the first line whatever it holds
            continue
        fields = [f.strip() for f in raw.strip().split(",")]
        if fields[-1] == "":
            fields = fields[:-1]
        row = f"row {len(layers) + 1}"
        if len(fields) == len(columns) + 1:
            if fields[-1] != "1:1":
                raise ConfigError(f"sparsity ratio '{fields[-1]}' is not modelled", fix="remove the ratio or write 1:1",
                                  file=path, line=number, key_path=f"{row} column sparsity")
            fields = fields[:-1]
        if len(fields) != len(columns):
            hint = f" (this looks like {other})" if len(fields) in (len(CONV_COLUMNS), len(GEMM_COLUMNS)) else ""
            raise ConfigError(f"{len(fields)} fields where {len(columns)} are expected{hint}",
                              fix=f"write {', '.join(columns)} on every row", file=path, line=number, key_path=row)
        if not fields[0]:
            raise ConfigError("the layer has no name", fix="give every layer a name in the first column",
                              file=path, line=number, key_path=f"{row} column {columns[0]}")
        values = []
        for name, text in zip(columns[1:], fields[1:]):
            if not re.fullmatch(r"\d+", text) or int(text) < 1:
                raise ConfigError(f"'{text}' is not a positive whole number", fix=f"write {name} as an integer >= 1",
                                  file=path, line=number, key_path=f"{row} column {name}")
            values.append(int(text))
        layer = ScaleSimLayer.gemm(fields[0], *values) if gemm else ScaleSimLayer(fields[0], *values)
        points = math.prod(layer.mnk)  # the row's whole work (a depthwise row's channels together)
        if points > MAX_ITERATION_POINTS:  # the einsum loader's bound (io.load): beyond it counts are not exact
            raise ConfigError(f"the layer iterates over {points:.3g} points (output pixels x filters x window x "
                              f"channels), more than 2^53 = {MAX_ITERATION_POINTS:.3g}, beyond which counts are "
                              "not exact", fix="make the layer smaller (fewer output pixels, filters or channels), "
                              "or split it into several rows", file=path, line=number, key_path=row)
        if gemm:
            layers.append(layer)
            continue
        h, w, r, s, c, n, stride = values
        for dim, size, window in (("Filter Height", h, r), ("Filter Width", w, s)):
            if window > size:
                raise ConfigError(f"the filter ({window}) is larger than the ifmap ({size})",
                                  fix=f"make {dim} at most the IFMAP {dim.split()[1]}", file=path, line=number,
                                  key_path=f"{row} column {dim}")
        if "DP" in fields[0]:
            layers.extend(ScaleSimLayer(f"{fields[0]}Channel_{i}", h, w, r, s, 1, n, stride) for i in range(c))
        else:
            layers.append(layer)
    if not layers:
        raise ConfigError("the topology has no layers", fix=f"add rows after the header: {', '.join(columns)}",
                          file=path, line=max(1, len(lines)))
    return layers


def config_text(arch: ScaleSimArch, run_name: str = "accel-sim") -> str:
    """`arch` as a SCALE-Sim 3.0.0 .cfg (what `load_scalesim_config` reads back), e.g. to run SCALE-Sim itself."""
    return f"""[general]
run_name = {run_name}

[architecture_presets]
ArrayHeight = {arch.rows}
ArrayWidth = {arch.cols}
IfmapSramSzkB = {arch.ifmap_sram_kib}
FilterSramSzkB = {arch.filter_sram_kib}
OfmapSramSzkB = {arch.ofmap_sram_kib}
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Bandwidth = {arch.ofmap_bandwidth}
Dataflow = {arch.dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = {arch.ifmap_bank_bandwidth}
IfmapSRAMBankNum = 1
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = {arch.filter_bank_bandwidth}
FilterSRAMBankNum = 1
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = {arch.interface}
UseRamulatorTrace = False
"""


def format_value(value: int | float) -> str:
    """A value as SCALE-Sim prints it: counts as integers, cycles and rates as Python floats."""
    return str(value)


def write_reports(reports: list[LayerReport], out_dir: str | Path) -> list[Path]:
    """Write COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and DETAILED_ACCESS_REPORT.csv in SCALE-Sim's layout."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (header, columns) in REPORT_FILES.items():
        lines = [header]
        for layer_id, report in enumerate(reports):
            lines.append(f"{layer_id}, " + ", ".join(format_value(getattr(report, c)) for c in columns) + ",")
        target = out_dir / name
        target.write_text("\n".join(lines) + "\n")
        written.append(target)
    return written


def print_summary(layers: list[ScaleSimLayer], reports: list[LayerReport], paths: list[Path]) -> None:
    """A short table per layer (cycles, stalls, utilization, DRAM words) and where the reports went."""
    table = Table(title="SCALE-Sim compatible run", title_justify="left")
    for column in ("layer", "M x N x K", "total cycles", "stalls", "overall util %", "mapping eff %",
                   "DRAM reads", "DRAM writes"):
        table.add_column(column, justify="left" if column == "layer" else "right")
    for layer, report in zip(layers, reports):
        m, n, k = layer.mnk
        table.add_row(layer.name, f"{m} x {n} x {k}", f"{report.total_cycles:,}", f"{report.stall_cycles:,}",
                      f"{report.overall_util_pct:.2f}", f"{report.mapping_efficiency_pct:.2f}",
                      f"{report.dram_ifmap_reads + report.dram_filter_reads:,}", f"{report.dram_ofmap_writes:,}")
    console = Console()
    console.print(table)
    console.print(f"total cycles {sum(r.total_cycles for r in reports):,}; reports: "
                  + ", ".join(str(p) for p in paths))


def read_report(path: str | Path) -> list[dict[str, str]]:
    """Rows of a SCALE-Sim (or our) report as {header: text}, for comparisons."""
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.strip()]
    header = [h.strip() for h in lines[0].split(",")]
    return [dict(zip(header, (v.strip() for v in ln.split(",")))) for ln in lines[1:]]
