"""Where sweep points run: local processes (default) or a dask.distributed cluster.

Both keep a bounded window of points in flight and yield results as they finish, so the driver
never holds more than a few dozen tasks or results, however long the sweep.

Local processes live for the whole sweep (one pool) and take points in chunks of consecutive points, so a
worker keeps its caches (parsed workloads, the mapper's cached mappings) across points, and neighbouring
grid points - which usually share an engine configuration - land on the same worker.
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

from accel_sim.errors import ConfigError
from accel_sim.mapper import MapperCache

T = TypeVar("T")
R = TypeVar("R")
IN_FLIGHT_PER_WORKER = 4  # enough queued work to hide the driver's commit time; small enough to bound memory
# Points per task, aligned to point ids (ids // chunk; run_sweep rounds CHUNK_POINTS to whole runs of the grid's
# fastest axis: aligned_chunk). A task starts with an empty mapping cache, so a
# point's result depends only on the points before it in its chunk - never on which worker ran what before,
# on the executor (local, dask, one process) or on a resume: the same spec gives the same table every time.
CHUNK_POINTS = 25


# Tasks a sweep is cut into at least, where its points allow and its tasks would share no mapping work: the worker
# that takes the last task runs alone, so the makespan exceeds the mean work by up to a task (tpu_array_resnet50's
# 200 points in 9 tasks of 24 left one of 2 workers idle for 8 points; in 50 tasks of 4 the two stay even)
MIN_TASKS = 32


def sweep_chunk(points: int, group: int, rescored: int, size: int = CHUNK_POINTS) -> int:
    """Points per task of a sweep of `points` in runs of `group` (`aligned_chunk`), of which runs of `rescored` are
    re-scored from one search (`Sweep.rescored_points`). Where those runs span several groups, tasks of `size`
    keep as many together as fit; where they do not, tasks share nothing beyond a group, so they are made small
    enough for MIN_TASKS of them, never below one group. A function of the spec alone, as the table is."""
    if rescored > group:
        return aligned_chunk(group, size)
    return aligned_chunk(group, min(size, max(group, -(-points // MIN_TASKS))))


def aligned_chunk(group: int, size: int = CHUNK_POINTS) -> int:
    """The largest multiple of `group` up to `size` (`size` when one group is larger): chunks of it never split a
    run of `group` consecutive points. A grid's consecutive points that differ only in its fastest axis (often a
    capacity or a bandwidth) share their mapspaces' structure, which a chunk's cache keeps for the next
    (search.MapperCache.shelf); a group split over two chunks builds it twice."""
    return size if group > size else size // group * group


class Executor(Protocol):
    """Runs `fn` over `tasks` and yields results in completion order; fn(task, cache) gets the MapperCache its
    chunk of points shares."""

    def map_unordered(self, fn: Callable[[T, MapperCache], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task, cache) for every task, as they finish."""
        ...


@dataclass(frozen=True)
class LocalExecutor:
    """`workers` local processes (1: run in the calling process, no pickling). `on_point`, when given with
    workers > 1, is called in the driver as each point finishes in a worker (a progress bar moves per point while
    results still come back a chunk at a time)."""

    workers: int = 2
    chunk: int = CHUNK_POINTS
    on_point: Callable[[], None] | None = None

    @property
    def announces_points(self) -> bool:
        """Whether `on_point` is called per finished point (else the caller counts the results it gets)."""
        return self.on_point is not None and self.workers > 1

    def map_unordered(self, fn: Callable[[T, MapperCache], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task, cache) for every task, as they finish (a chunk's results together)."""
        chunks = _chunks(tasks, max(1, self.chunk))
        if self.workers <= 1:  # in this process: each row is yielded (and committed) as soon as it is done
            for chunk in chunks:
                yield from _chunk_results(fn, chunk)
            return
        ticks = multiprocessing.get_context().SimpleQueue() if self.announces_points else None
        listener = threading.Thread(target=_relay, args=(ticks, self.on_point), daemon=True) if ticks else None
        if listener is not None:
            listener.start()
        pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_init_worker, initargs=(os.getpid(), ticks))
        finished = False
        try:
            for results in _windowed(pool.submit, functools.partial(_run_chunk, fn), chunks,
                                     self.workers * IN_FLIGHT_PER_WORKER,
                                     lambda pending: wait(pending, return_when=FIRST_COMPLETED)[0]):
                yield from results
            finished = True
        finally:
            # interrupted (Ctrl-C) or abandoned: drop the queued chunks and stop the workers rather than wait for
            # every chunk in flight, whose results nothing would store (the pool's are this process's only children
            # while a sweep runs)
            pool.shutdown(wait=finished, cancel_futures=not finished)
            if not finished:
                for child in multiprocessing.active_children():
                    child.terminate()
            if listener is not None:
                ticks.put(None)
                listener.join()


_TICKS: Any = None  # in a pool worker: where it announces each finished point (LocalExecutor.on_point), or None


def _init_worker(parent_pid: int, ticks: Any) -> None:
    """Pool-worker initializer: die with the driver, and announce finished points on `ticks` when given."""
    global _TICKS
    _TICKS = ticks
    die_with_parent(parent_pid)


def _relay(ticks: Any, on_point: Callable[[], None]) -> None:
    """Driver thread: one on_point() per tick from the workers, until the None the driver sends at the end."""
    while ticks.get() is not None:
        on_point()


PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_S = 1.0


def die_with_parent(parent_pid: int) -> None:
    """Pool-worker initializer: end this worker when the sweep's driver dies (a SIGKILLed driver cannot shut its
    pool down, and an orphaned worker would keep computing). On Linux the kernel sends SIGKILL on the parent's death
    (prctl PR_SET_PDEATHSIG); everywhere a daemon thread also exits once the parent pid changes (reparenting)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no libc symbol: the watchdog below still works
            pass
    if os.getppid() != parent_pid:  # the driver died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="accel-sim-parent-watch").start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)  # not sys.exit: the pool's worker loop must not get the chance to take another task


def _chunks(tasks: Iterable[T], size: int) -> Iterator[list[T]]:
    """Tasks grouped by point_id // size (position // size for tasks without ids), drawn lazily."""
    for _, group in itertools.groupby(enumerate(tasks), key=lambda it: getattr(it[1], "point_id", it[0]) // size):
        yield [task for _, task in group]


def _chunk_results(fn: Callable[[T, MapperCache], R], chunk: list[T]) -> Iterator[R]:
    """fn over one chunk, its points sharing one mapping cache that starts empty."""
    cache = MapperCache()
    for task in chunk:
        result = fn(task, cache)
        if _TICKS is not None:
            _TICKS.put(1)
        yield result


def _run_chunk(fn: Callable[[T, MapperCache], R], chunk: list[T]) -> list[R]:
    """A whole chunk in a worker process (module level, so it pickles)."""
    return list(_chunk_results(fn, chunk))


@dataclass(frozen=True)
class DaskExecutor:
    """A dask.distributed cluster, by scheduler address ('tcp://host:8786') or an existing Client."""

    address: Any  # str or distributed.Client
    chunk: int = CHUNK_POINTS

    def map_unordered(self, fn: Callable[[T, MapperCache], R], tasks: Iterable[T]) -> Iterator[R]:
        """Results of fn(task, cache) for every task, as they finish on the cluster's workers."""
        own = isinstance(self.address, str)
        client = connect_dask(self.address) if own else self.address   # refuses a missing dask as a ConfigError
        from distributed import wait as dask_wait  # dask is an optional extra (heavy): loaded only for --dask

        try:
            workers = max(1, sum(client.nthreads().values()))

            def submit(f: Callable[[list[T]], list[R]], chunk: list[T]) -> Any:
                return client.submit(f, chunk, pure=False)

            for results in _windowed(submit, functools.partial(_run_chunk, fn), _chunks(tasks, max(1, self.chunk)),
                                     workers * IN_FLIGHT_PER_WORKER,
                                     lambda pending: dask_wait(list(pending), return_when="FIRST_COMPLETED").done):
                yield from results
        finally:
            if own:
                client.close()


CONNECT_TIMEOUT_S = 5  # a scheduler that does not answer in this time is not there (distributed's default: 30 s)


def connect_dask(address: str) -> Any:
    """A distributed.Client of the scheduler at `address`; dask not installed, or an unreachable or malformed
    address, is a ConfigError (exit 2)."""
    try:
        # dask is an optional extra (heavy): loaded only for --dask
        from distributed import Client
    except ImportError:
        raise ConfigError("needs dask.distributed, which is not installed", key_path="--dask",
                          fix="pip install 'accel-sim[dask]', or drop --dask to use local processes") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(f"no dask scheduler answered at {address} within {CONNECT_TIMEOUT_S} s "
                          f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no reply'})",
                          key_path="--dask", fix="start one (`dask scheduler`, see dse/README.md) and give its "
                          "address as tcp://host:8786, or drop --dask to use local processes") from None


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
