"""Where sweep points run: local processes (default) or a dask.distributed cluster.

Both keep a bounded window of points in flight and yield results as they finish, so the driver
never holds more than a few dozen tasks or results, however long the sweep.

Local processes live for the whole sweep (one pool) and take points in chunks of consecutive points, so a
worker keeps its caches (parsed workloads, the mapper's cached mappings) across points, and neighbouring
grid points - which usually share an engine configuration - land on the same worker.
"""
from __future__ import annotations

import functools
import itertools
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")
IN_FLIGHT_PER_WORKER = 4  # enough queued work to hide the driver's commit time; small enough to bound memory
CHUNK_POINTS = 8  # points per local task: amortizes pickling and keeps neighbours on one worker's caches


class Executor(Protocol):
    """Runs `fn` over `tasks` and yields results in completion order."""

    def map_unordered(self, fn: Callable[[T], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task) for every task, as they finish."""
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """`workers` local processes (1: run in the calling process, no pickling)."""

    workers: int = 2
    chunk: int = CHUNK_POINTS

    def map_unordered(self, fn: Callable[[T], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task) for every task, as they finish (a chunk's results together)."""
        if self.workers <= 1:
            yield from map(fn, tasks)
            return
        chunks = _chunks(tasks, max(1, self.chunk))
        with ProcessPoolExecutor(max_workers=self.workers) as pool:
            for results in _windowed(pool.submit, functools.partial(_run_chunk, fn), chunks,
                                     self.workers * IN_FLIGHT_PER_WORKER,
                                     lambda pending: wait(pending, return_when=FIRST_COMPLETED)[0]):
                yield from results


def _chunks(tasks: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive tasks in lists of `size` (the last may be shorter), drawn lazily."""
    it = iter(tasks)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _run_chunk(fn: Callable[[T], R], chunk: list[T]) -> list[R]:
    """fn over one chunk in a worker process (module level, so it pickles)."""
    return [fn(task) for task in chunk]


@dataclass(frozen=True)
class DaskExecutor:
    """A dask.distributed cluster, by scheduler address ('tcp://host:8786') or an existing Client."""

    address: Any  # str or distributed.Client

    def map_unordered(self, fn: Callable[[T], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task) for every task, as they finish on the cluster's workers."""
        try:
            from distributed import Client, wait as dask_wait
        except ImportError:
            from accel_sim.errors import ConfigError

            raise ConfigError("--dask needs dask.distributed, which is not installed", file=None,
                              fix="pip install 'accel-sim[dask]', or drop --dask to use local processes") from None
        own = isinstance(self.address, str)
        client = Client(self.address) if own else self.address
        try:
            workers = max(1, sum(client.nthreads().values()))

            def submit(f: Callable[[T], R], task: T) -> Any:
                return client.submit(f, task, pure=False)

            yield from _windowed(submit, fn, tasks, workers * IN_FLIGHT_PER_WORKER,
                                 lambda pending: dask_wait(list(pending), return_when="FIRST_COMPLETED").done)
        finally:
            if own:
                client.close()


def _windowed(submit: Callable[..., Any], fn: Callable[[T], R], tasks: Iterable[T], window: int,
              wait_some: Callable[[set], set]) -> Iterator[R]:
    """Keep at most `window` futures in flight; yield each result as its future completes."""
    it = iter(tasks)
    pending: set[Future] = {submit(fn, t) for t in itertools.islice(it, window)}
    while pending:
        done = wait_some(pending)
        pending -= set(done)
        for future in done:
            yield future.result()
        pending |= {submit(fn, t) for t in itertools.islice(it, len(done))}
