"""Sweep throughput and driver memory.

1. dse/bench_resnet50_500.yaml (500 ResNet-50 points on the systolic array): design points per minute on
   local processes and on a 2-worker dask LocalCluster (when dask.distributed is installed); both tables
   must be equal.
2. dse/bench_random_10k.yaml (10,000 random points): the driver's peak resident memory, which must stay
   under 1 GB because rows stream into the store.

Usage: python -m benchmarks.bench_sweep [--workers 2] [--skip-10k]
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRIVER_LIMIT_BYTES = 1 << 30  # issue 5 acceptance: the driver stays under 1 GB for 10,000 points


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print them; exit 1 if the tables differ or the memory limit is broken."""
    from accel_sim.dse import load_results, load_sweep, run_sweep
    from accel_sim.dse.executors import DaskExecutor, LocalExecutor

    parser = argparse.ArgumentParser(prog="bench_sweep")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-10k", action="store_true")
    args = parser.parse_args(argv if argv is not None else [])
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        sweep = load_sweep(REPO / "dse" / "bench_resnet50_500.yaml")
        local = run_sweep(sweep, Path(tmp) / "local.db", executor=LocalExecutor(args.workers))
        print(f"resnet50 x {sweep.points} points, {args.workers} local processes: {local.elapsed_s:.1f} s = "
              f"{60 * local.points_per_s:.0f} points/min")
        try:
            import distributed
        except ImportError:
            print("dask.distributed not installed: skipped the LocalCluster run (pip install .[dask])")
        else:
            with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None) as c, \
                    distributed.Client(c) as client:
                dask = run_sweep(sweep, Path(tmp) / "dask.db", executor=DaskExecutor(client))
            print(f"resnet50 x {sweep.points} points, {args.workers}-worker dask LocalCluster: {dask.elapsed_s:.1f} s = "
                  f"{60 * dask.points_per_s:.0f} points/min")
            a, b = (load_results(Path(tmp) / f).drop(columns="elapsed_s") for f in ("local.db", "dask.db"))
            same = a.equals(b)
            print(f"local and dask tables identical: {same}")
            status |= 0 if same else 1
        if not args.skip_10k:
            big = load_sweep(REPO / "dse" / "bench_random_10k.yaml")
            outcome = run_sweep(big, Path(tmp) / "big.db", executor=LocalExecutor(args.workers))
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
            print(f"random x {big.points} points: {outcome.elapsed_s:.1f} s = {60 * outcome.points_per_s:.0f} points/min; "
                  f"driver peak RSS {peak / 2**20:.0f} MiB (limit {DRIVER_LIMIT_BYTES / 2**20:.0f} MiB)")
            status |= 0 if peak < DRIVER_LIMIT_BYTES else 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
