"""What a run's summary.json records so that it can be reproduced, and the report folder a run writes.

Everything here is deterministic (no dates, no hash-seeded order): the same run gives the same bytes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

from accel_sim import __version__
from accel_sim.io.load import REPO_ROOT, file_kind, resolve, split_overrides
from accel_sim.io.names import slug
from accel_sim.io.yaml import load_yaml, with_overrides
from accel_sim.reports.view import folder_name, git_revision


def run_folder(arch_name: str, workload_name: str, overrides: Sequence[str]) -> Path:
    """reports/<arch>__<workload>, plus '__set-<hash of the --set assignments>' when there are any, so that an
    overridden run does not overwrite the plain run's report. A long generated workload name is shortened
    (reports/view.folder_name); summary.json and the report keep it whole."""
    folder = f"{slug(arch_name)}__{folder_name(workload_name)}"
    if overrides:
        folder += "__set-" + hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:10]
    return Path("reports") / folder


def run_provenance(arch: str, workload: str, overrides: Sequence[str]) -> dict[str, Any]:
    """The inputs of a run: arch file, workload file, every --set as given and in order, a recipe's parameters
    after its overrides, the tool's version and the git revision of its checkout ('unknown' outside one)."""
    arch_path, workload_path = resolve(arch, "arch"), resolve(workload, "workload")
    recipe = None
    if file_kind(workload_path) == "recipe":
        recipe = with_overrides(load_yaml(workload_path), split_overrides(overrides)[1]).data
    return {
        "tool": "accel-sim",
        "version": __version__,
        "git_revision": git_revision(REPO_ROOT),
        "arch_file": _shown(arch_path),
        "workload_file": _shown(workload_path),
        "overrides": list(overrides),
        "workload_recipe": recipe,
    }


def _shown(path: Path) -> str:
    """A path relative to the repository when inside it (the same on every clone), else absolute."""
    full = path.resolve()
    return full.relative_to(REPO_ROOT).as_posix() if full.is_relative_to(REPO_ROOT) else str(full)
