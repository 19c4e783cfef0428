"""The sweep results store: one SQLite file (WAL mode), one row per design point, committed as each finishes.

A point's row holds its parameters and metrics as JSON objects (the metric set grows as engines add
metrics, so the schema does not hard-code them), its status ('ok', 'infeasible', 'invalid', 'error'),
the reason when it is not ok, and the hash of the spec that produced it. The `meta` table keeps the
spec text and hash so `--resume` can refuse a store written by a different spec.
SQLite commits are atomic: a process killed at any instruction leaves every committed row intact
and no partial one (WAL, synchronous=NORMAL loses nothing on a process kill, only on power loss).
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterable, Iterator

from accel_sim.errors import ConfigError

if sys.platform == "win32":  # the store's writer lock (lock_store): one module per platform
    import msvcrt
else:
    import fcntl

if TYPE_CHECKING:
    import pandas as pd

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points (
    point_id INTEGER PRIMARY KEY,
    design_id INTEGER NOT NULL,
    workload TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    params TEXT NOT NULL,
    metrics TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    elapsed_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rounds (design_id INTEGER PRIMARY KEY, round INTEGER NOT NULL);
"""
STATUSES = ("ok", "infeasible", "invalid", "error")
FIXED_COLUMNS = ("point_id", "design_id", "workload", "status", "error", "spec_hash", "elapsed_s")


@dataclass(frozen=True)
class PointRow:
    """One finished design point as it is stored."""

    point_id: int
    design_id: int
    workload: str
    status: str
    error: str | None
    params: dict[str, object]
    metrics: dict[str, float]
    elapsed_s: float


class ResultStore:
    """An open results store; every `put` is its own committed transaction. It holds the store's writer lock
    (`lock_store`) until closed."""

    def __init__(self, path: Path, connection: sqlite3.Connection, spec_hash: str, lock: IO[str]) -> None:
        self.path = path
        self.spec_hash = spec_hash
        self._db = connection
        self._lock = lock

    def finished_ids(self) -> set[int]:
        """Point ids already in the store (any status: a recorded failure is a finished point)."""
        return {row[0] for row in self._db.execute("SELECT point_id FROM points")}

    def rows(self, point_ids: Iterable[int]) -> list[PointRow]:
        """The stored rows of `point_ids` that are in the store, in point-id order."""
        ids = sorted(set(point_ids))
        if not ids:
            return []
        out = []
        for r in self._db.execute(f"SELECT {_COLUMNS} FROM points WHERE point_id IN ({','.join('?' * len(ids))}) "
                                  "ORDER BY point_id", ids):
            out.append(_row(r))
        return out

    def put(self, row: PointRow) -> None:
        """Insert one point and commit, so a kill right after loses nothing."""
        self._db.execute(
            "INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.point_id, row.design_id, row.workload, row.status, row.error,
             json.dumps(row.params, sort_keys=True), json.dumps(_finite(row.metrics), sort_keys=True),
             self.spec_hash, row.elapsed_s))
        self._db.commit()

    def put_round(self, designs: Iterable[int], round_no: int) -> None:
        """Record that a search evaluated `designs` in round `round_no` (1, 2, ...) and commit; a resumed search
        records the same rounds again (its samplers are seeded), so rewriting is harmless."""
        self._db.executemany("INSERT OR REPLACE INTO rounds VALUES (?, ?)", [(d, round_no) for d in designs])
        self._db.commit()

    def meta(self) -> dict[str, str]:
        """The store's metadata (spec hash, spec name and text, objectives)."""
        return dict(self._db.execute("SELECT key, value FROM meta"))

    def close(self) -> None:
        """Close the connection (rows are already committed) and release the writer lock."""
        self._db.close()
        self._lock.close()  # closing the file releases its lock

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _finite(metrics: dict[str, float]) -> dict[str, float | None]:
    # JSON has no inf/NaN; null reads back as NaN in the DataFrame
    return {k: (v if isinstance(v, (int, float)) and math.isfinite(v) else None) for k, v in metrics.items()}


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def lock_store(path: Path) -> IO[str]:
    """The store's writer lock: an exclusive lock on `<store>.lock` (flock; msvcrt on Windows), released when the
    returned file is closed or its process dies (a SIGKILLed sweep leaves no stale lock). A second sweep on the same
    store, or an --overwrite while one runs, is a ConfigError naming the holder's pid."""
    lock_path = path.with_name(path.name + ".lock")
    handle = lock_path.open("a+")
    try:
        if sys.platform == "win32":
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise ConfigError(f"another sweep (pid {holder}) is writing this store", file=path,
                          fix="wait for it to finish (or stop it), or give this sweep another --store path; "
                              "--overwrite and --resume are refused too while it runs") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def open_store(path: str | Path, *, spec_hash: str, meta: dict[str, str], resume: bool = False,
               overwrite: bool = False) -> ResultStore:
    """Open (or create) the store at `path` for a sweep whose spec hashes to `spec_hash`, holding its writer lock.

    An existing store with rows is reused only with `resume` (and only for the same spec hash), or
    emptied with `overwrite`; anything else is a ConfigError, so finished points are never lost by accident.
    """
    path = Path(path)
    _make_folder(path)
    lock = lock_store(path)  # before anything is read or emptied: a running sweep's rows stay its own
    try:
        return _open_locked(path, spec_hash, meta, resume, overwrite, lock)
    except BaseException:
        lock.close()
        raise


def _open_locked(path: Path, spec_hash: str, meta: dict[str, str], resume: bool, overwrite: bool,
                 lock: IO[str]) -> ResultStore:
    existed = path.exists()
    try:
        db = _connect(path)
        old = dict(db.execute("SELECT key, value FROM meta"))
        count = db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"not a results store ({exc})", file=path,
                          fix="pick a new --store path; an accel-sim store is a SQLite file written by `sweep`"
                          ) from None
    if existed and count and overwrite:
        db.execute("DELETE FROM points")
        db.execute("DELETE FROM meta")
        db.execute("DELETE FROM rounds")
        db.commit()
        old, count = {}, 0
    if count and not resume:
        db.close()
        raise ConfigError(f"the store already holds {count} finished points", file=path,
                          fix="pass --resume to continue this sweep, --overwrite to start again, "
                              "or give another --store path")
    if old.get("spec_hash") not in (None, spec_hash):
        db.close()
        raise ConfigError(f"the store was written by a different sweep spec "
                          f"('{old.get('spec_name', '?')}', hash {old['spec_hash'][:12]})", file=path,
                          fix="resume with the spec that wrote it, or pass --overwrite / another --store path")
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [*meta.items(), ("spec_hash", spec_hash)])
    db.commit()
    return ResultStore(path, db, spec_hash, lock)


_COLUMNS = "point_id, design_id, workload, status, error, params, metrics, elapsed_s"


def _row(r: tuple) -> PointRow:
    return PointRow(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), json.loads(r[6]), r[7])


def iter_rows(path: str | Path) -> Iterator[PointRow]:
    """Stream the stored points in point-id order without holding the table in memory."""
    db = _open_readonly(path)
    try:
        for r in db.execute(f"SELECT {_COLUMNS} FROM points ORDER BY point_id"):
            yield _row(r)
    finally:
        db.close()


def _open_readonly(path: str | Path) -> sqlite3.Connection:
    path = Path(path)
    if not path.is_file():
        raise ConfigError("no results store here", file=path,
                          fix="give the --store path a sweep wrote (default: reports/<sweep name>/results.db)")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    try:
        db.execute("SELECT 1 FROM points LIMIT 1").fetchall()
    except sqlite3.DatabaseError as exc:
        db.close()
        raise ConfigError(f"not a results store ({exc})", file=path,
                          fix="give a SQLite file written by `accel-sim sweep`") from None
    return db


def read_meta(path: str | Path) -> dict[str, str]:
    """The metadata of a store on disk."""
    db = _open_readonly(path)
    try:
        return dict(db.execute("SELECT key, value FROM meta"))
    finally:
        db.close()


def is_store(path: str | Path) -> bool:
    """Whether `path` is a SQLite file (judged by its 16-byte header)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def read_rounds(path: str | Path) -> dict[int, int]:
    """design id -> the search round that evaluated it; empty for grid and random sweeps and for stores written
    before rounds were recorded."""
    db = _open_readonly(path)
    try:
        return dict(db.execute("SELECT design_id, round FROM rounds"))
    except sqlite3.OperationalError:  # a store from before the rounds table: no search order recorded
        return {}
    finally:
        db.close()


def load_results(path: str | Path) -> pd.DataFrame:
    """All points of a store as a DataFrame: fixed columns (with `round` for searched sweeps), then one column per
    parameter and per metric."""
    import pandas as pd  # pandas is heavy to import (~0.5 s): loaded on first use

    rounds = read_rounds(path)
    records = []
    for row in iter_rows(path):
        record: dict[str, object] = {"point_id": row.point_id, "design_id": row.design_id,
                                     "workload": row.workload, "status": row.status, "error": row.error}
        if rounds:
            record["round"] = rounds.get(row.design_id, math.nan)
        record.update(row.params)
        record.update({k: (math.nan if v is None else v) for k, v in row.metrics.items()})
        record["elapsed_s"] = row.elapsed_s
        records.append(record)
    columns = ["point_id", "design_id", "workload", "status", "error"]
    return pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=columns)


def _make_folder(file: Path) -> None:
    """Create the folder `file` goes in; a ConfigError naming `file` when it cannot be (the CLI checks this at parse
    time, cli/args.output_file; the API and default paths end here)."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder {file.parent} ({exc.strerror or exc})", file=file,
                          fix="give a path in a folder you can write to") from None


def check_export_target(out: str | Path) -> None:
    """ConfigError unless `export_results` can write `out`: a .csv, or a .parquet with pyarrow installed (checked
    before a sweep starts, so a missing extra does not fail it at the end)."""
    out = Path(out)
    if out.suffix in (".parquet", ".pq"):
        if importlib.util.find_spec("pyarrow") is None:
            raise ConfigError("Parquet export needs pyarrow, which is not installed", file=out,
                              fix="pip install 'accel-sim[parquet]' or export to .csv")
    elif out.suffix != ".csv":
        raise ConfigError(f"unknown export format '{out.suffix}'", file=out,
                          fix="end the file name in .csv or .parquet")


def export_results(path: str | Path, out: str | Path) -> Path:
    """Write the store's table to CSV or Parquet, chosen by `out`'s suffix, creating `out`'s folder if needed."""
    out = Path(out)
    check_export_target(out)
    frame = load_results(path)
    _make_folder(out)  # as the store's folder is: `--export new/o.csv` after a sweep must not fail
    if out.suffix == ".csv":
        frame.to_csv(out, index=False)
    else:
        frame.to_parquet(out, index=False)
    return out
