"""accel-sim command line: run | workload | validate | scalesim | search | list. Bad input exits 2 with one paragraph, no traceback."""
from __future__ import annotations

import argparse
import atexit
import gc
import json
import math
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from accel_sim.cli.args import output_folder, positive_int, positive_seconds
from accel_sim.cli.sweep import add_commands
from accel_sim.errors import AccelSimError, ConfigError

if TYPE_CHECKING:
    from accel_sim.engines.base import EngineBase
    from accel_sim.spec.arch import Arch
    from accel_sim.spec.mapspace import Mapspace
    from accel_sim.spec.workload import Einsum, Workload

# Before anything imports numpy: the commands do no dense linear algebra that threads would speed up (their numpy
# work is elementwise; sweeps and searches parallelize with processes), and OpenBLAS starting a thread per core
# at `import numpy` costs about 0.05 s of CPU per process. An explicit setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

DEFAULT_ARCH = "tpu_v1"
DEFAULT_WORKLOAD = "llama2-7b-decode-int8"  # TPU v1's 8 GiB Weight Memory holds Llama-2-7B only at int8
TABLE_ROWS = 40


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `accel-sim` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    # the command as typed, for the provenance of the reports it writes
    args.command_line = shlex.join(["accel-sim", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.handler(args)
    except AccelSimError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early: not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: what was unfinished is not written (a run's summary.json is written last; "
                         "a sweep keeps every finished point and continues with --resume)\n")
        return 130


def console() -> None:
    """Entry point of the `accel-sim` console script and `python -m accel_sim.cli`: runs `main` and exits with its
    code, skipping the interpreter's teardown once every exit handler has run."""
    finished: list[int] = []  # main's exit code, once it has returned (not raised)

    def end_without_teardown() -> None:
        # Registered before main runs, so it runs after every exit handler main's imports register (exit handlers
        # run last-in first-out) and after non-daemon threads are joined. What remains of a normal exit is freeing
        # every module and object one by one, about 0.05 s of CPU after a 1 s `accel-sim run`, which the OS does at
        # once. Coverage saves its data in an exit handler registered before this one: then exit normally.
        if not finished or "coverage" in sys.modules:
            return
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe or stream: leave it to the normal exit, which reports it
            return
        os._exit(finished[0])

    atexit.register(end_without_teardown)
    # pydantic looks for plugins on its first model by reading the entry points of every installed distribution
    # (importlib.metadata: 0.02-0.03 s of CPU a command in a full environment); the CLI's models use none. A user
    # who sets the variable keeps their setting.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    finished.append(main())
    sys.exit(finished[0])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="accel-sim", description="Simulate and explore deep-learning accelerators.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="evaluate a workload on an architecture and write a report")
    run.add_argument("arch", nargs="?", default=DEFAULT_ARCH, help=f"arch config (default: {DEFAULT_ARCH})")
    run.add_argument("workload", nargs="?", default=DEFAULT_WORKLOAD,
                     help=f"ONNX model, einsum cascade or zoo recipe (default: {DEFAULT_WORKLOAD})")
    run.add_argument("--json", action="store_true", help="print the summary as JSON only")
    run.add_argument("-o", "--output", type=output_folder, help="report folder (default: reports/<arch>__<workload>)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                     help="override a spec field by key path, e.g. memory.unified_buffer.capacity='8 MiB'; "
                          "paths starting with 'workload.' change a recipe or cascade")
    run.add_argument("--strict", action="store_true", help="unsupported ONNX operators are errors")
    run.add_argument("--all", action="store_true", help="print every einsum, not only the heaviest")
    run.set_defaults(handler=_cmd_run)

    wl = sub.add_parser("workload", help="summarize a workload file")
    wl.add_argument("file")
    wl.add_argument("--json", action="store_true", help="print a JSON object")
    wl.add_argument("--strict", action="store_true", help="unsupported ONNX operators are errors")
    wl.set_defaults(handler=_cmd_workload)

    val = sub.add_parser("validate", help="check arch, workload, sweep and SCALE-Sim files; exit 2 listing every "
                                          "bad one")
    val.add_argument("files", nargs="+")
    val.add_argument("--strict", action="store_true", help="unsupported ONNX operators are errors")
    val.set_defaults(handler=_cmd_validate)

    ss = sub.add_parser("scalesim", help="run a SCALE-Sim config and topology; write SCALE-Sim's three reports")
    ss.add_argument("config", help="SCALE-Sim .cfg file")
    ss.add_argument("topology", help="SCALE-Sim topology .csv (conv columns, or Layer, M, N, K with --gemm)")
    ss.add_argument("--gemm", action="store_true", help="the topology lists GEMMs (Layer, M, N, K)")
    ss.add_argument("-o", "--output", type=output_folder, help="report folder (default: reports/scalesim__<topology stem>)")
    ss.set_defaults(handler=_cmd_scalesim)

    se = sub.add_parser("search", help="map one or every contraction of a workload; print the loop nest and costs")
    se.add_argument("arch", help="arch config")
    se.add_argument("workload", help="ONNX model, einsum cascade or zoo recipe")
    se.add_argument("--einsum", help="only this einsum (default: every distinct contraction)")
    se.add_argument("--objective", choices=["latency", "energy", "edp"], default="edp")
    se.add_argument("--method", choices=["cpsat", "local", "exhaustive", "random", "dataflow"], default="cpsat")
    se.add_argument("--time-limit", type=positive_seconds, default=1.0, help="seconds per einsum (default 1.0)")
    se.add_argument("--engine", help="engine name (default: the first whose mapspace covers the einsum: a "
                                     "systolic array's or a GPU's contractions)")
    se.add_argument("--jobs", type=positive_int, default=1,
                    help="processes that map distinct einsums in parallel (same results as 1; default 1)")
    se.set_defaults(handler=_cmd_search)

    lst = sub.add_parser("list", help="list shipped architectures, workloads, zoo presets and engine kinds")
    lst.set_defaults(handler=_cmd_list)

    add_commands(sub)  # sweep | report | check
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    # One run makes objects that mostly live as long as it does (modules, classes, pydantic schemas, the workload,
    # the mapped einsums, the tables) and little garbage (about 3,000 objects on Llama-2-7B prefill): collecting
    # while they are made walks them again and again to free almost nothing, about 0.03 s of CPU. At the end they
    # are frozen rather than collected (a collection then would walk them all once more); refcounting still frees
    # them, and a caller in the same process (tests) gets its collector back.
    gc.disable()
    try:
        return _run(args)
    finally:
        gc.freeze()
        gc.enable()


def _run(args: argparse.Namespace) -> int:
    """`accel-sim run`: evaluate, write the report files, print the answer, then wait for the roofline PNG."""
    # lazy: the pipeline is heavy (numpy, pydantic, the engines), so `accel-sim --help` and `scalesim` skip it
    from accel_sim.cli.evaluation import evaluate_files
    from accel_sim.cli.provenance import run_folder, run_provenance
    from accel_sim.io.load import resolve
    from accel_sim.reports.render import FigureWorker
    from accel_sim.reports.tables import print_run, write_report
    from accel_sim.reports.view import provenance

    with FigureWorker() as figures:  # imports matplotlib in a child while this process loads and maps
        result = evaluate_files(args.arch, args.workload, args.overrides, strict=args.strict)
        out_dir = args.output or run_folder(result.arch.name, result.workload.name, args.overrides)
        origin = provenance(args.command_line, [resolve(args.arch, "arch"), resolve(args.workload, "workload")],
                            args.overrides)
        write_report(result, out_dir, figures, origin,  # the roofline PNG is drawn by the child meanwhile
                     run_provenance(args.arch, args.workload, args.overrides))
        if args.json:   # the summary as written, its provenance included
            sys.stdout.write((out_dir / "summary.json").read_text())
        else:
            print_run(result, out_dir, rows=None if args.all else TABLE_ROWS)
        sys.stdout.flush()
        figures.wait()  # the answer is printed first; the run ends when its figure is written
    return 0


def _cmd_workload(args: argparse.Namespace) -> int:
    # lazy: the loaders and tables are heavy (numpy, pydantic), as in _cmd_run
    from accel_sim.io.load import load_workload
    from accel_sim.reports.tables import jsonable, print_workload, workload_summary

    workload = load_workload(args.file, strict=args.strict)
    if args.json:
        print(json.dumps(jsonable(workload_summary(workload)), indent=2))
    else:
        print_workload(workload)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    bad = 0
    for name in args.files:
        try:
            print(f"ok  {name}: {_validated(name, args.strict)}")
        except AccelSimError as exc:  # report every bad file, not only the first
            sys.stderr.write(f"error: {exc}\n")
            bad += 1
    if bad:
        sys.stderr.write(f"{bad} of {len(args.files)} files are bad\n")
    return 2 if bad else 0


def _validated(name: str, strict: bool) -> str:
    """What a file holds, once loaded and checked as the command that reads it would; AccelSimError if bad."""
    # lazy: heavy (pydantic, numpy), as in _cmd_run; the public names also load the engine union `Arch` needs
    from accel_sim import load_arch, load_workload
    from accel_sim.io.load import file_kind

    suffix = Path(name).suffix.lower()
    if suffix in (".cfg", ".csv"):
        # lazy: the SCALE-Sim emulator loads only for its files
        from accel_sim.compat.scalesim import load_scalesim_config, load_topology
        if suffix == ".cfg":
            config = load_scalesim_config(name)
            return f"SCALE-Sim config, {config.arch.rows} x {config.arch.cols} array, dataflow {config.arch.dataflow}"
        try:  # the header says which topology kind to load; load_topology reports what is wrong past it
            with open(name, errors="replace") as fh:
                header = fh.readline().split(",")
        except OSError as exc:  # missing, a folder, unreadable: as file_kind reports it for the other kinds
            raise ConfigError(f"cannot read the file ({exc.strerror or exc})", file=name,
                              fix="check the path; a SCALE-Sim topology is a .csv file") from None
        gemm = len(header) > 1 and header[1].strip() == "M"
        return f"SCALE-Sim {'GEMM' if gemm else 'conv'} topology, {len(load_topology(name, gemm=gemm))} layers"
    kind = file_kind(name)
    if kind == "arch":
        arch = load_arch(name)   # the execution model's engine needs are checked as it loads (Arch)
        return f"architecture '{arch.name}', {len(arch.memory)} memory levels, {len(arch.engines)} engines"
    if kind == "sweep":
        from accel_sim.dse.spec import load_sweep  # lazy: the sweep machinery (cli/sweep.py)
        sweep = load_sweep(name)
        return f"sweep spec '{sweep.spec.name}', {sweep.points:,} points"
    workload = load_workload(name, strict=strict)
    note = f", {len(workload.unsupported)} unsupported operators" if workload.unsupported else ""
    return (f"{kind} workload '{workload.name}', {len(workload.einsums)} einsums, "
            f"{workload.total_macs:,} MACs{note}")


def _cmd_scalesim(args: argparse.Namespace) -> int:
    # lazy: the SCALE-Sim emulator and the rich tables it prints load only for this command
    from accel_sim.compat.scalesim import load_scalesim_config, load_topology, print_summary, simulate, write_reports
    from accel_sim.io.names import slug

    config = load_scalesim_config(args.config)
    layers = load_topology(args.topology, gemm=args.gemm)
    reports = simulate(layers, config.arch)
    out_dir = args.output or Path("reports") / f"scalesim__{slug(Path(args.topology).stem)}"
    paths = write_reports(reports, out_dir)
    print_summary(layers, reports, paths)
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from accel_sim.io.load import load_arch, load_workload  # lazy: heavy (pydantic, numpy), as in _cmd_run
    from accel_sim.mapper import MapperCache, loop_nest_text, search_many  # the mapper's CP-SAT pulls ortools (heavy)

    arch = load_arch(args.arch)
    workload = load_workload(args.workload)
    engines = [e for e in arch.engines if args.engine in (None, e.name)]
    if not engines:
        raise ConfigError(f"arch '{arch.name}' has no engine named '{args.engine}'",
                          fix=f"use one of: {', '.join(e.name for e in arch.engines)}", file=args.arch)
    if args.einsum is not None:
        names = [e.name for e in workload.einsums]
        if args.einsum not in names:
            raise ConfigError(f"workload '{workload.name}' has no einsum '{args.einsum}'",
                              fix=f"use one of: {', '.join(names[:20])}{' ...' if len(names) > 20 else ''}",
                              file=args.workload)
        einsums = [workload.einsum(args.einsum)]
    else:
        einsums = [e for e, _ in workload.distinct_contractions()]
    # the mapper is engine-agnostic: any engine that offers a mapspace for the einsum is searched
    placed = [_searchable(einsum, engines, workload, arch, args) for einsum in einsums]
    spaces = [space for _, space in placed]
    if args.method == "exhaustive":
        _check_enumerable(einsums, placed, args.time_limit)
    results = search_many(spaces, args.objective, args.method, args.time_limit, jobs=args.jobs, cache=MapperCache())
    for einsum, (engine, _), r in zip(einsums, placed, results):
        c, st = r.cost, r.stats
        print(f"== {einsum.name} on {engine.name} ({engine.kind}): {dict(einsum.rank_sizes)}")
        print(loop_nest_text(r, arch))
        print(f"cycles {c.total_cycles:,.0f} (compute {c.compute_cycles:,.0f}, fill/drain {c.fill_drain_cycles:,.0f}, "
              f"stall {c.stall_cycles:,.0f})  energy {c.total_energy_j:.4g} J  utilization {c.utilization:.3f}  "
              f"{args.objective} {r.score:.4g}")
        # a local search re-scores candidates it meets again: the count can exceed a small space's size
        print(f"search: {st.method}, {st.candidates:,} scorings in a space of {st.space_size:,} mappings, solver "
              f"{st.solver_status or '-'}, proxy gap {st.gap:.3g}, {st.wall_s:.3f} s\n")
    return 0


def _check_enumerable(einsums: list[Einsum], placed: list[tuple[EngineBase, Mapspace]], time_limit: float) -> None:
    """ConfigError (before any search) when exhaustive search would take much longer than `time_limit` on a space:
    it scores every mapping (mapper.search.exhaustive_seconds) and proves its optimum only by finishing."""
    from accel_sim.mapper.search import EXHAUSTIVE_MAPPINGS_PER_S, exhaustive_seconds  # lazy: numpy

    over = [(space.size(), einsum, engine) for einsum, (engine, space) in zip(einsums, placed)
            if exhaustive_seconds(space) > time_limit]
    if not over:
        return
    size, einsum, engine = max(over, key=lambda entry: entry[0])
    others = f" ({len(over) - 1} more einsums are too large too)" if len(over) > 1 else ""
    raise ConfigError(f"einsum '{einsum.name}' on {engine.name} has {size:,} mappings{others}; exhaustive search "
                      f"scores every one, about {EXHAUSTIVE_MAPPINGS_PER_S:,} a second, so it would take about "
                      f"{size / EXHAUSTIVE_MAPPINGS_PER_S:,.0f} s, past --time-limit {time_limit:g} s, and it cannot "
                      "stop early with a proven optimum", key_path="--method",
                      fix="use --method cpsat (the default) or local, which search within the limit, or name a "
                          "smaller contraction with --einsum, or allow it with --time-limit "
                          f"{math.ceil(size / EXHAUSTIVE_MAPPINGS_PER_S)}")


def _searchable(einsum: Einsum, engines: list[EngineBase], workload: Workload, arch: Arch,
                args: argparse.Namespace) -> tuple[EngineBase, Mapspace]:
    """The first of `engines` that offers a mapspace for `einsum`, with that mapspace (ConfigError if none)."""
    for engine in engines:
        space = engine.mapspace(einsum, workload, arch)
        if space is not None:
            return engine, space
    which = f"engine '{args.engine}'" if args.engine else f"any engine of arch '{arch.name}'"
    offering = [e.name for e in arch.engines if e not in engines]
    raise ConfigError(f"einsum '{einsum.name}' gives {which} ({', '.join(f'{e.name}: {e.kind}' for e in engines)}) "
                      "no mapping choices to search",
                      fix="name a contraction with --einsum" + (f", or another engine with --engine "
                                                                  f"({', '.join(offering)})" if offering else ""),
                      file=args.workload)


def _cmd_list(args: argparse.Namespace) -> int:
    from accel_sim.reports.tables import print_listing  # lazy: heavy (the engines' union, pydantic), as in _cmd_run

    print_listing()
    return 0
