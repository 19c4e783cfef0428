"""Draw a run's roofline PNG in a forked child that imports matplotlib while the parent is still evaluating.

Importing matplotlib and drawing the figure cost about 0.5 s of CPU, a third of an `accel-sim run`; on a machine
with a second core the child does that work in parallel with loading and mapping. Where fork is not the safe
default (anything but Linux) or a child cannot be started, the figure is drawn in-process as before.
"""
from __future__ import annotations

import gc
import multiprocessing
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from accel_sim.reports.plots import write_roofline

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from accel_sim.reports.plots import RooflineData


def _serve(conn: Connection, parent_end: Connection) -> None:
    """Child: import the plotting stack, then draw the one figure the parent sends and report how it went."""
    # the fork copied the parent's end of the pipe too: close it here, or this child holds its own pipe open and
    # never sees the end of file when the parent closes its end or dies (a run that failed before its figure)
    parent_end.close()
    # no garbage collection in this one-figure process: a collection walks every object inherited from the parent,
    # copying their pages on write, to free cycles that die with the process anyway (about 0.03 s CPU a run)
    gc.disable()
    try:
        import matplotlib  # matplotlib is heavy to import: loaded on first use

        matplotlib.use("Agg")
        _skip_artist_docs()
        import matplotlib.backends.backend_agg  # noqa: F401  (the import is the work done ahead of time)
        import matplotlib.figure  # noqa: F401

        job = conn.recv()
        data, path, dpi = job
        write_roofline(data, path, dpi)
        conn.send(None)
    except (EOFError, KeyboardInterrupt):  # the parent went away or the user interrupted: nothing to report
        return
    except Exception as exc:  # noqa: BLE001  (any drawing failure is reported to the parent, which raises it)
        conn.send(f"{type(exc).__name__}: {exc}")


def _skip_artist_docs() -> None:
    """Stop matplotlib writing the `set()` signature and property docstrings of every Artist class it defines, in
    this one-figure child only: about 0.09 s of the child's 0.36 s CPU goes to them (inspecting each setter's
    docstring) while importing matplotlib.figure, and no one reads a docstring here. Drawing never reads them
    (`Artist.set` maps keywords through the alias table, not the signature), so the PNG is the same bytes
    (tests/unit/reports/test_render.py); a matplotlib without these private names is left as it is."""
    import matplotlib.artist  # matplotlib is heavy to import: loaded on first use

    if hasattr(matplotlib.artist, "kwdoc") and hasattr(matplotlib.artist.Artist, "_update_set_signature_and_docstring"):
        matplotlib.artist.kwdoc = lambda _artist: ""  # also read by the docstring templates of lines, patches, text
        matplotlib.artist.Artist._update_set_signature_and_docstring = classmethod(lambda _cls: None)


class FigureWorker:
    """A child process that draws one roofline figure: `submit` hands it the data, `wait` collects the PNG (so a
    caller prints its answer in between); `draw` does both. As a context manager it also stops the child when the
    caller fails before submitting (`close`), so an in-process caller (a notebook, a test) leaves no process behind."""

    def __enter__(self) -> FigureWorker:
        """The worker itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the child if its figure was never collected."""
        self.close()

    def close(self) -> None:
        """Close the pipe (the child reads the end of file and exits) and reap the child; a submitted figure not yet
        collected is abandoned."""
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join()
        self._conn = self._process = self._pending = None

    def __init__(self) -> None:
        """Start the child (Linux fork) or fall back to drawing in-process."""
        self._conn: Connection | None = None
        self._process: multiprocessing.Process | None = None
        self._pending: tuple[RooflineData, Path, int] | None = None  # submitted, not yet collected by `wait`
        if not sys.platform.startswith("linux"):
            return
        try:
            context = multiprocessing.get_context("fork")
            # Python's documented idiom for a fork without exec (see `gc.freeze`): the objects alive now (modules,
            # classes, pydantic schemas: most of them for the rest of the run) leave the collector's generations, so
            # neither the child's pages nor this process's one full collection of a run walk them (0.01-0.02 s CPU)
            gc.freeze()
            parent_end, child_end = context.Pipe()
            process = context.Process(target=_serve, args=(child_end, parent_end), daemon=True)
            process.start()
        except OSError:  # no processes left to fork: draw in-process
            return
        child_end.close()
        self._conn, self._process = parent_end, process

    def submit(self, data: RooflineData, path: Path, dpi: int) -> None:
        """Hand the child the roofline of `data` to write to `path` and return at once (`wait` collects it);
        with no child, draw it here and now."""
        if self._conn is None or self._process is None:
            write_roofline(data, path, dpi)
            return
        try:
            self._conn.send((data, path, dpi))
        except BrokenPipeError:  # the child died: draw here instead
            self._conn.close()
            self._conn = self._process = None
            self.submit(data, path, dpi)
            return
        self._pending = (data, path, dpi)

    def wait(self) -> None:
        """Block until the submitted figure is written; raise if drawing it failed (nothing submitted: return)."""
        if self._pending is None or self._conn is None or self._process is None:
            return
        conn, process, pending = self._conn, self._process, self._pending
        self._conn = self._process = self._pending = None
        try:
            error = conn.recv()
        except EOFError:  # the child died: draw here instead
            self.submit(*pending)
            return
        finally:
            conn.close()
        process.join()
        if error is not None:
            raise RuntimeError(f"drawing {pending[1]} failed: {error}")

    def draw(self, data: RooflineData, path: Path, dpi: int) -> None:
        """Write the roofline of `data` to `path` as PNG (in the child when there is one) and wait for it."""
        self.submit(data, path, dpi)
        self.wait()
