"""The DuckDB store: one file, opened briefly per call, written one whole trace per transaction.

Ingest streams a trace into compact Arrow columns (profiler/storage/staging.py), nests its ops, and only
then opens the store to work out iterations and copy everything in one transaction (the steps:
profiler/storage/commit.py). The store
file is therefore held for seconds at most, and other processes (the dashboard, the command line)
get their turn; a locked file is retried briefly.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from profiler import errors
from profiler.storage import blank, commit, completeness, connection, job_views, metrics, migrations
# re-exported: callers name them from here
from profiler.storage.commit import IngestResult, Staged
from profiler.storage.connection import LOCK_TIMEOUT_S, one_line
from profiler.storage.run_cache import RunCache
from profiler.storage.session import Session

if TYPE_CHECKING:  # pandas loads only when a query result is read back; the parser (numpy, msgspec) and
    import pandas as pd  # the staging (pyarrow) only when a trace is ingested

    from profiler.parse import trace
    from profiler.storage.staging import Staging

# data/traces.duckdb in the project folder, wherever the app or the CLI is started from
DEFAULT_DB = Path(__file__).resolve().parents[2] / "data" / "traces.duckdb"

_init_lock = threading.Lock()


URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def default_db_path() -> Path:
    """PROFILER_DB if set, else the project's data/traces.duckdb."""
    return Path(os.environ.get("PROFILER_DB") or DEFAULT_DB)


class Store:
    """A store file, and the one object that owns it: its connections (every call works on its
    own short-lived cursor, profiler/storage/connection.py), read-only or writing use, the job
    views attached to reads, read sessions (`session()`), and every result kept per run
    (`cache`, profiler/storage/run_cache.py). Cheap to construct.

    `read_only=True` (the command line's read commands): the file must exist, is never created,
    migrated or written, and other readers may open it at the same time. A writing handle brings
    an older store up to date when it first opens it (`migrations.prepare`); reads never write.
    Errors are `StoreError`s of one sentence that name the store by its file name only (they are
    shown in the browser, where the server's paths have no business).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float = LOCK_TIMEOUT_S,
                 read_only: bool = False, threads: int | None = None, in_memory: bool = False):
        named = os.fspath(path) if path is not None else os.environ.get("PROFILER_DB") or ""
        if URL_SCHEME.match(named):  # never a folder named 'http:' made for it in the working directory
            raise errors.StoreError(f"{named[:120]!r} is a URL: a store is a local file; give its path.")
        self.path = Path(path) if path is not None else default_db_path()
        self.threads = threads  # DuckDB threads (default: one per core); a job's worker takes its share
        # a scratch store held in memory, not in `path` (whose folder takes what DuckDB spills); it
        # lives while a cursor on it is open: a job's batch of ranks (profiler/storage/jobs/rank_task.py)
        self.in_memory = in_memory
        self.lock_timeout_s = lock_timeout_s
        self.read_only = read_only
        self.label = f"the store {self.path.name}"
        self.cache = RunCache()  # results kept per run and stamp, for every reader of this handle
        self._ready = False

    @property
    def store(self) -> Store:
        """Itself: every store handle (a `Store`, a `Session`) names the store that owns it."""
        return self

    # --- connections ------------------------------------------------------------------------

    @contextlib.contextmanager
    def connect(self, *, jobs: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived cursor on the store (on a writing handle's first use the schema is created
        or migrated and the metrics layer kept up to date: `migrations.prepare`). With `jobs`, the
        store's tables also hold the ranks of stored jobs (profiler/storage/job_views.py): reads."""
        if not (self._ready or self.read_only or self.in_memory):
            blank.create(self)  # a new file: a copy of this process's prepared new store
        with connection.cursor(self) as con:
            try:
                if not self._ready:
                    self._prepare(con)
                if jobs:
                    job_views.attach_views(con, self)
                yield con
            except duckdb.Error as e:
                raise errors.StoreError(f"{self.label} could not answer: {one_line(e)}.") from e

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A read `Session`: several queries over one cursor, the job views attached."""
        with self.connect(jobs=True) as con:
            yield Session(con, self)

    def _prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        with _init_lock:
            if not self._ready:
                migrations.prepare(con, self.label, self.read_only)
                self._ready = True

    def upkeep(self) -> None:
        """Compute what the store keeps per run for runs whose rows were written other than by
        ingest (their metrics: `migrations.upkeep`), and forget the results kept for them. A
        writing handle does this when it first opens the file; reads never write."""
        if self.read_only:
            raise errors.StoreError(f"{self.label} was opened read-only.")
        with self.connect() as con:
            migrations.upkeep(con)
        self.cache.clear()

    def query(self, sql: str, params: Any = None) -> pd.DataFrame:
        """Run one read query and return its rows as a DataFrame (on a session of its own, which
        installs the SQL modules the query's header includes)."""
        with self.session() as db:
            return db.query(sql, params)

    def arrays(self, sql: str, params: Any = None) -> dict:
        """Run one read query and return its rows as {column: numpy array} (no pandas; NULLs masked)."""
        with self.session() as db:
            return db.arrays(sql, params)

    def stamps(self, run_ids) -> dict[str, tuple]:
        """{run_id: its stamp} of those of ``run_ids`` in the store (`run_cache.STAMPS_SQL`)."""
        with self.session() as db:
            return db.stamps(run_ids)

    def schema_version(self) -> int:
        with self.connect() as con:
            return migrations.stored_version(con, self.label)

    def attach_counters(self, run_id: str, report: str | os.PathLike, ncu_seconds: float | None = None):
        """Attach the Nsight Compute raw CSV export at `report` to the stored run `run_id`
        (profiler/storage/counters.py); returns what matched. Bad files raise `CountersFileError`."""
        from profiler.storage import counters

        return counters.attach(self, run_id, counters.read_file(Path(report)), ncu_seconds)

    # --- ingest -----------------------------------------------------------------------------

    def run_count(self) -> int:
        """How many runs the store holds (one light query: no pandas)."""
        with self.connect() as con:
            return con.execute("SELECT count(*) FROM traces").fetchone()[0]

    def has_run(self, run_id: str) -> bool:
        with self.connect() as con:
            return con.execute("SELECT 1 FROM traces WHERE run_id = ?", [run_id]).fetchone() is not None

    def ingest(self, src: trace.Source, name: str | None = None, *, source: str = "uploaded",
               progress: trace.Progress | None = None, keep_python: bool = False,
               max_bytes: int | None = None, keep_metrics: bool = True) -> IngestResult:
        """Ingest one trace (path, bytes or binary file-like; gzip or plain JSON), of at most
        `max_bytes` once decompressed (default `trace.DEFAULT_MAX_BYTES`).

        Raises a `TraceError` subclass naming the file and the problem; the store is then exactly
        as before. The same bytes ingested twice give the same id, and the second time is a no-op
        (`duplicate`: only when that id really is in the store). What was skipped or stored as
        missing is counted in `notes`. `keep_metrics=False` leaves the run's metrics rows to the
        caller (`metrics.store_runs` of many runs at once: a job's batch of ranks, rank_task.py).
        A large plain-JSON file parsed in chunks by several processes, with the same rows:
        `chunked_ingest.ingest_file` (profiler/storage/jobs/).
        """
        if self.read_only:
            raise errors.StoreError(f"{self.label} was opened read-only.")
        from profiler.parse import trace

        started = time.perf_counter()
        max_bytes = trace.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        summary, staging = commit.parse(src, name, max_bytes, keep_python, progress)
        return self.ingest_staged(summary, staging, source=source, started=started,
                                  keep_metrics=keep_metrics)

    def ingest_many(self, items: list[tuple[trace.Source, str | None]], *,
                    source: str = "uploaded") -> list[IngestResult]:
        """Ingest several small traces ((source, name) pairs) in one transaction: their rows with
        one statement per table for the whole batch (`commit_batch`), their metrics in one: the
        runs appear together, each with its metrics. For many small files (the shipped samples)
        this is several times faster than `ingest` per file, whose fixed costs (a transaction,
        a statement per table, the metrics statement) are most of a small file's time.

        A file that cannot be parsed raises its `TraceError` before anything is written; when
        the store refuses a row, the batch is rolled back and the files are stored one by one,
        so the error names the file (those before it are stored)."""
        if self.read_only:
            raise errors.StoreError(f"{self.label} was opened read-only.")
        parsed = [self.stage(src, name, source=source) for src, name in items]
        out = self.commit_batch(parsed, stop_at_error=True)
        for got in out:
            if isinstance(got, BaseException):
                raise got
        return out

    def stage(self, src: trace.Source, name: str | None = None, *, source: str = "uploaded",
              keep_python: bool = False, max_bytes: int | None = None,
              progress: trace.Progress | None = None) -> Staged:
        """The first half of `ingest`: one trace parsed into staged rows and its `traces` row,
        nothing written (`commit_batch` stores many of them at once). Raises its `TraceError`."""
        from profiler.parse import trace

        started = time.perf_counter()
        max_bytes = trace.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        summary, staging = commit.parse(src, name, max_bytes, keep_python, progress)
        return commit.prepare(summary, staging, source, started)

    def ingest_staged(self, summary: trace.TraceSummary, staging: Staging, *, source: str = "uploaded",
                      started: float | None = None, keep_metrics: bool = True) -> IngestResult:
        """The second half of `ingest`: a parsed trace's staged rows (its ops not yet nested) into
        the store. Jobs call it with the rows of a file parsed in chunks (profiler/storage/jobs/chunks.py)."""
        staged = commit.prepare(summary, staging, source, time.perf_counter() if started is None else started)
        return staged.result(self._commit(staged, keep_metrics))

    def commit_batch(self, parsed: list[Staged], *, keep_metrics: bool = True,
                     stop_at_error: bool = False) -> list[IngestResult | errors.TraceError]:
        """Store several staged traces in one transaction: each table's rows of all of them with
        one statement (a `StagedBatch`), their metrics with one. A trace already stored, or a
        second copy in the batch, is a duplicate and writes nothing. Should the store refuse a
        row, the batch is rolled back and the traces are committed one by one, so the error (a
        `TraceError`, returned in that trace's place) names the file; with `stop_at_error` the
        ones after it are left out (returned as that same error)."""
        import pyarrow as pa

        from profiler.storage.staging import StagedBatch

        if not parsed:
            return []
        ids = [p.run_id for p in parsed]
        fresh: dict[str, Staged] = {}  # run id -> the first of the batch's copies, if not yet stored
        with self.connect() as con:
            stored = {r[0] for r in con.execute(
                "SELECT run_id FROM traces WHERE list_contains($ids, run_id)", {"ids": ids}).fetchall()}
            for p in parsed:
                if p.run_id not in stored:
                    fresh.setdefault(p.run_id, p)
            if fresh:
                try:  # the runs' staged tables as one (should their columns' types differ: one by one)
                    batch = StagedBatch([(p.run_id, p.staging) for p in fresh.values()])
                except pa.ArrowException:
                    return self._commit_each(parsed, keep_metrics, stop_at_error)
                con.execute("BEGIN TRANSACTION")
                try:
                    commit.insert(con, [p.row for p in fresh.values()], batch)
                    if keep_metrics:
                        metrics.store_runs(con, list(fresh))
                        completeness.store_runs(con, list(fresh))
                    con.execute("COMMIT")
                except duckdb.Error:
                    con.execute("ROLLBACK")
                    return self._commit_each(parsed, keep_metrics, stop_at_error)
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
        return [p.result(fresh.get(p.run_id) is not p) for p in parsed]

    def _commit_each(self, parsed: list[Staged], keep_metrics: bool,
                     stop_at_error: bool) -> list[IngestResult | errors.TraceError]:
        """`commit_batch`'s fallback: one transaction per trace, each failure its own `TraceError`."""
        out: list[IngestResult | errors.TraceError] = []
        for p in parsed:
            if stop_at_error and out and isinstance(out[-1], errors.TraceError):
                out.append(out[-1])
                continue
            try:
                out.append(p.result(self._commit(p, keep_metrics)))
            except errors.TraceError as e:
                out.append(e)
        return out

    def _commit(self, staged: Staged, keep_metrics: bool = True) -> bool:
        """Copy one staged trace into the store in one transaction; True if it was already there.
        A row the store refuses is a `TraceError` naming the file and the column."""
        from profiler.storage.staging import StagedBatch

        run_id = staged.run_id
        with self.connect() as con:
            if con.execute("SELECT 1 FROM traces WHERE run_id = ?", [run_id]).fetchone():
                return True
            con.execute("BEGIN TRANSACTION")
            try:
                commit.insert(con, [staged.row], StagedBatch([(run_id, staged.staging)], take=True))
                if keep_metrics:
                    metrics.store_runs(con, [run_id])
                    completeness.store_runs(con, [run_id])
                con.execute("COMMIT")
            except duckdb.Error as e:
                con.execute("ROLLBACK")
                stored = con.execute("SELECT 1 FROM traces WHERE run_id = ?", [run_id]).fetchone()
                if isinstance(e, duckdb.ConstraintException) and stored:
                    return True  # another thread committed the same trace first
                raise errors.TraceError(staged.summary.name, f"cannot be stored: {one_line(e)}") from e
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return False
