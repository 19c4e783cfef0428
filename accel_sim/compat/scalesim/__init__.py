"""SCALE-Sim 3.0.0 compatibility: its .cfg and topology files in, its three reports out, every column reproduced.

`accel-sim scalesim CFG TOPOLOGY` is `load_scalesim_config` + `load_topology` (files.py) -> `simulate`
(accounting.py) -> `write_reports` (files.py).
The accounting is written up in tests/golden/scalesim/ACCOUNTING.md and checked on its 186 cases.
"""
from __future__ import annotations

from accel_sim.compat.scalesim.base import (
    REPORT_FIELDS,
    LayerReport,
    ScaleSimArch,
    ScaleSimLayer,
    ScaleSimUnsupported,
)
from accel_sim.compat.scalesim.files import (
    REPORT_FILES,
    ScaleSimConfig,
    config_text,
    load_scalesim_config,
    load_topology,
    print_summary,
    read_report,
    write_reports,
)
from accel_sim.compat.scalesim.accounting import simulate, simulate_layer

__all__ = [
    "REPORT_FIELDS", "REPORT_FILES", "LayerReport", "ScaleSimArch", "ScaleSimConfig", "ScaleSimLayer",
    "ScaleSimUnsupported", "config_text", "load_scalesim_config", "load_topology", "print_summary", "read_report",
    "simulate", "simulate_layer", "write_reports",
]
