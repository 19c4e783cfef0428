"""Run every benchmark module in this folder that defines `main()`, in name order."""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def run_all() -> int:
    """Import each benchmarks/<name>.py and call its main(); returns the worst exit code."""
    worst = 0
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"benchmarks.{info.name}")
        if hasattr(module, "main"):
            print(f"== benchmarks/{info.name}.py ==", flush=True)
            worst = max(worst, int(module.main() or 0))
    return worst


if __name__ == "__main__":
    sys.exit(run_all())
