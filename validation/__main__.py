"""`python -m validation [--check]`: run every comparison, write validation/REPORT.md and report.json.

With --check the committed report.json is read first and the run fails (exit 1) when a met target is no longer
met, an error grew by more than two points, or rows were added or dropped (validation/report.py `regressions`).
"""
from __future__ import annotations

import argparse
import json
import sys

from validation.report import REPORT_JSON, REPORT_MD, collect, regressions, write


def main(argv: list[str] | None = None) -> int:
    """Regenerate the report; with --check, compare against the committed report.json first."""
    parser = argparse.ArgumentParser(prog="python -m validation", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="fail when the new numbers regress against the committed report.json")
    args = parser.parse_args(argv)
    committed = json.loads(REPORT_JSON.read_text()) if args.check and REPORT_JSON.exists() else None
    rows = collect()
    write(rows)
    met = sum(r.met for r in rows)
    print(f"wrote {REPORT_MD} and {REPORT_JSON}: {met} of {len(rows)} targets met")
    if args.check:
        if committed is None:
            print(f"no committed {REPORT_JSON} to check against", file=sys.stderr)
            return 1
        found = regressions(rows, committed)
        for line in found:
            print(f"REGRESSION {line}", file=sys.stderr)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
