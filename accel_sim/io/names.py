"""File and folder names made from user text (arch, workload and topology names). Standard library only, so
that commands which load no spec (`accel-sim scalesim`) name their outputs without importing the loaders."""
from __future__ import annotations

import re


def slug(text: str) -> str:
    """`text` as a file or folder name: runs of other characters than letters, digits, '.', '_', '-' become '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "unnamed"
