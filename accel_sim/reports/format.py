"""Numbers as people read them: one formatter with SI prefixes for tables, plots and reports."""
from __future__ import annotations

import math


def si_format(value: float, unit: str = "") -> str:
    """A number with an SI prefix and 3 significant digits: 4.59e13 -> "45.9 T"."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}{unit}"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"),
                           (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}".rstrip()
    return f"{value:.3g}{unit}"
