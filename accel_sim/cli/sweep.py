"""The `sweep`, `report` and `check` subcommands of `accel-sim` (registered by accel_sim/cli/__init__.py).

Their machinery (sweep specs, the SQLite store, process pools, HTML reports) loads when one of them runs, so that
`accel-sim run` and the other commands start without it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accel_sim.cli.args import metric_tolerance, output_file, output_folder, positive_int
from accel_sim.errors import ConfigError


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register sweep, report and check on the CLI's subparsers."""
    sw = sub.add_parser("sweep", help="run a design-space sweep spec (dse/*.yaml) into a resumable SQLite store")
    sw.add_argument("spec", help="sweep spec YAML (see dse/)")
    sw.add_argument("--store", type=output_file, help="results store (default: reports/<sweep name>/results.db)")
    sw.add_argument("--workers", type=positive_int, default=2, help="local worker processes (default: 2)")
    sw.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, e.g. tcp://host:8786")
    sw.add_argument("--resume", action="store_true", help="continue a store: skip the points already finished")
    sw.add_argument("--overwrite", action="store_true", help="empty an existing store and start again")
    sw.add_argument("--export", type=output_file, action="append", default=[], metavar="FILE",
                    help="also write the table to FILE (.csv or .parquet); may repeat")
    sw.add_argument("--no-report", action="store_true", help="skip the HTML/Markdown report")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.add_argument("--max-points", type=positive_int, metavar="N",
                    help="allow a sweep of up to N points (default: 100,000; a larger one is refused before it "
                         "starts)")
    sw.set_defaults(handler=cmd_sweep)

    rp = sub.add_parser("report", help="write an HTML report (plots embedded) and a Markdown summary; with two "
                                       "runs, a page comparing them")
    rp.add_argument("target", help="a sweep store, a run folder (accel-sim run -o DIR), or an arch config")
    rp.add_argument("workload", nargs="?", help="with an arch config: the workload to evaluate and report; with a "
                                                "run folder (A): a second run folder or summary.json (B) to compare "
                                                "with it (compare.html)")
    rp.add_argument("--rtol", type=float, default=0.02,
                    help="comparing two runs: a metric moved when it differs by more than this share (default 0.02)")
    rp.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                    help="with an arch config: override a spec field (as in `run`)")
    rp.add_argument("-o", "--output", type=output_folder,
                    help="folder for report.html and report.md (default: beside the input)")
    rp.set_defaults(handler=cmd_report)

    ck = sub.add_parser("check", help="compare results with a baseline; exit 1 with a diff table on a regression")
    ck.add_argument("results", help="a run folder, summary.json, CSV or sweep store")
    ck.add_argument("--baseline", required=True, help="the reference results (same kinds as RESULTS)")
    ck.add_argument("--rtol", type=float, default=0.02, help="relative tolerance per metric (default: 0.02)")
    ck.add_argument("--atol", type=metric_tolerance, action="append", default=[], metavar="METRIC=VALUE",
                    help="absolute tolerance of one metric (VALUE alone: every metric); a change holds when "
                         "|result - baseline| <= atol + rtol x |baseline|; may repeat")
    ck.add_argument("--metrics", nargs="+", default=[], help="compare only these metrics (default: all shared)")
    ck.add_argument("--html", type=output_folder, metavar="DIR",
                    help="also write DIR/compare.html, the page comparing the two runs (run folders or summary.json)")
    ck.set_defaults(handler=cmd_check)


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a sweep; print where the store, front and report went."""
    from rich.console import Console  # rich loads on first use: `accel-sim run` starts without it

    # lazy: the sweep machinery (module docstring)
    from accel_sim.dse.executors import DaskExecutor, LocalExecutor, connect_dask
    from accel_sim.dse.spec import load_sweep
    from accel_sim.dse.store import check_export_target, export_results
    from accel_sim.dse.sweep import run_sweep
    from accel_sim.reports import html

    for out in args.export:  # refused now, not after the whole sweep has run
        check_export_target(out)
    sweep = load_sweep(args.spec, **({"max_points": args.max_points} if args.max_points else {}))
    # the scheduler is reached before the store is opened: a wrong --dask leaves no store behind
    client = connect_dask(args.dask) if args.dask else None
    try:
        executor = DaskExecutor(client) if client is not None else LocalExecutor(args.workers)
        console = Console(stderr=True)
        outcome = run_sweep(sweep, args.store, executor=executor, resume=args.resume, overwrite=args.overwrite,
                            progress=not args.quiet)
    finally:
        if client is not None:
            client.close()
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(outcome.by_status.items())) or "nothing new"
    console.print(f"{sweep.spec.name}: {outcome.total} points, {outcome.skipped} already in the store, "
                  f"{outcome.evaluated} evaluated ({statuses}) in {outcome.elapsed_s:.1f} s "
                  f"= {outcome.points_per_s:.1f} points/s")
    console.print(f"store: {outcome.store}")
    for out in args.export:
        console.print(f"export: {export_results(outcome.store, out)}")
    if not args.no_report:
        page, md = html.write_sweep_report(outcome.store, outcome.store.parent)
        console.print(f"report: {page} and {md} (Pareto front: {outcome.store.parent / 'pareto.csv'})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Report on a sweep store, a run folder, or an (arch, workload) pair evaluated now."""
    from accel_sim.dse.store import is_store  # lazy: the sweep machinery (module docstring)
    from accel_sim.cli.evaluation import evaluate_files  # lazy: the pipeline is heavy; --help skips it
    from accel_sim.cli.provenance import run_folder, run_provenance  # lazy, as above
    from accel_sim.io.load import resolve  # lazy, as above
    from accel_sim.reports import html  # lazy, as above
    target = Path(args.target)
    if args.workload and (target.is_dir() or target.suffix == ".json"):  # two runs: A and B
        paths = html.write_compare_report(target, args.workload, args.output, _tolerance(args.rtol))
    elif is_store(target):
        paths = html.write_sweep_report(target, args.output or target.parent)
    elif target.is_dir():
        paths = html.write_folder_report(target, args.output or target)
    elif args.workload:
        from accel_sim.reports.view import provenance  # lazy, as above

        result = evaluate_files(str(args.target), args.workload, args.overrides)
        out = args.output or run_folder(result.arch.name, result.workload.name, args.overrides)
        origin = provenance(args.command_line, [resolve(args.target, "arch"), resolve(args.workload, "workload")],
                            args.overrides)
        paths = html.write_run_report(result, out, origin, run_provenance(args.target, args.workload, args.overrides))
    else:
        raise ConfigError("not a sweep store or a run folder", file=target,
                          fix="give reports/<sweep>/results.db, a folder from `accel-sim run -o DIR`, "
                              "or an arch config followed by a workload")
    print(f"report: {paths[0]} and {paths[1]}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 when every metric holds within --rtol, 1 with a diff table otherwise."""
    from accel_sim.reports.regression import compare, print_check  # lazy: it reads sweep stores too
    if args.html:  # the page compares two runs: refuse other inputs before the check prints anything
        from accel_sim.reports.run_files import read_run  # lazy, as above

        read_run(args.baseline), read_run(args.results)
    report = compare(args.results, args.baseline, rtol=args.rtol, metrics=args.metrics, atol=dict(args.atol))
    print_check(report)
    sys.stdout.flush()
    if args.html:
        from accel_sim.reports.html import write_compare_report  # lazy: plotly and the page modules load here only

        page, _ = write_compare_report(args.baseline, args.results, args.html, args.rtol)
        print(f"comparison: {page}")
    return 0 if report.passed else 1


def _tolerance(rtol: float) -> float:
    """--rtol as given when it is a tolerance, else ConfigError (check validates its own in `compare`)."""
    if not (rtol >= 0 and rtol < float("inf")):
        raise ConfigError(f"{rtol} is not a tolerance", key_path="--rtol",
                          fix="give a non-negative number such as 0.02")
    return rtol
