"""The DuckDB store: one file, opened briefly per call, written one whole trace per transaction.

Ingest streams a trace into compact Arrow columns (profiler/storage/staging.py), nests its ops, and only
then opens the store to work out iterations and copy everything in one transaction. The store
file is therefore held for seconds at most, and other processes (the dashboard, the command line)
get their turn; a locked file is retried briefly.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from profiler import errors
from profiler.storage import metrics, tables
from profiler.storage.schema import SCHEMA_SQL

if TYPE_CHECKING:  # pandas loads only when a query result is read back; the parser (numpy, msgspec) and
    import pandas as pd  # the staging (pyarrow) only when a trace is ingested

    from profiler.parse import trace
    from profiler.storage.staging import Staging

SCHEMA_VERSION = 6
# schema version -> what upgrades a store from the version before it (run in order on open):
# SQL text, or a function of the connection
MIGRATIONS: dict[int, Any] = {
    # ops keep record_shapes' arguments (profiler/analysis/costmodel.py); traces ingested before have NULLs
    2: "ALTER TABLE ops ADD COLUMN IF NOT EXISTS input_dims VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS input_types VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS concrete_inputs VARCHAR;",
    # 3: collective sizes on ops (NULL for traces stored before: delete and ingest them again)
    3: "ALTER TABLE ops ADD COLUMN IF NOT EXISTS collective VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS in_msg_nelems UBIGINT; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS out_msg_nelems UBIGINT; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS msg_dtype VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS group_size INTEGER;",
}
OLD_RUN_ID_COLUMN = "trace_id"  # the run id column's name in stores before schema version 4


def _rename_run_id_columns(con) -> None:
    """Schema version 4: every table's run id column is called run_id (it was trace_id)."""
    tables = con.execute(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_catalog, table_schema, table_name) WHERE c.table_catalog = current_database() "
        "AND c.table_schema = 'main' AND t.table_type = 'BASE TABLE' AND c.column_name = ?",
        [OLD_RUN_ID_COLUMN]).fetchall()
    for (table,) in tables:
        con.execute(f'ALTER TABLE "{table}" RENAME COLUMN {OLD_RUN_ID_COLUMN} TO run_id')


MIGRATIONS[4] = _rename_run_id_columns
# 5: lane_names is a new table (schema.sql makes it); traces stored before have no names, and their
# lanes are labelled by their ids as before
MIGRATIONS[5] = "SELECT 1"
# 6: counter_reports and kernel_counters are new tables (schema.sql makes them); no run has counters yet
MIGRATIONS[6] = "SELECT 1"
INGEST_SQL = Path(__file__).with_name("sql") / "ingest"
LOCK_TIMEOUT_S = 15.0
MEMORY_ENV = "PROFILER_DB_MEMORY"


# DuckDB would download and load an extension when a file or a query needs one (a SQLite file
# given as the store fetched sqlite_scanner from extensions.duckdb.org): no request leaves the server
NO_EXTENSION_LOADING = {"autoload_known_extensions": False, "autoinstall_known_extensions": False,
                        "allow_community_extensions": False}
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
OTHER_FORMATS = {b"SQLite format 3\0": "a SQLite database", b"PAR1": "a Parquet file",
                 b"\x1f\x8b": "a gzip file", b"PK\x03\x04": "a zip file"}


def not_a_store(path: Path) -> str | None:
    """Why the existing `path` is not a DuckDB store (None when it is one), read from its first
    bytes before DuckDB sees it: DuckDB tries to load a reader extension for a SQLite file."""
    if not path.is_file():
        return f"is not a DuckDB store (it is {'a folder' if path.is_dir() else 'not a regular file'})"
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:  # unreadable: DuckDB's own refusal says so, in one line
        return None
    if head[8:12] == DUCKDB_MAGIC or len(head) < 12:  # a shorter one may be a store being created
        return None
    kind = next((what for magic, what in OTHER_FORMATS.items() if head.startswith(magic)), "something else")
    return f"is not a DuckDB store (the file is {kind})"


def duckdb_config(threads: int | None = None) -> dict:
    """DuckDB's settings for a store: `threads` (default: one per core) and a memory limit beyond
    which it spills to disk: $PROFILER_DB_MEMORY, else 256 MB or 128 MB per thread, whichever is
    more (DuckDB needs about that per thread; below it a large ingest on a many-core machine fails
    where a laptop's succeeds); and never an extension loaded or installed on the fly."""
    threads = threads or os.cpu_count() or 1
    return {"threads": threads, "memory_limit": os.environ.get(MEMORY_ENV) or f"{max(256, 128 * threads)}MB",
            **NO_EXTENSION_LOADING}


# data/traces.duckdb in the project folder, wherever the app or the CLI is started from
DEFAULT_DB = Path(__file__).resolve().parents[2] / "data" / "traces.duckdb"

_init_lock = threading.Lock()

# Per store file, one open database shared by the calls in flight in this process, closed when the
# last one ends (so the file is free for other processes between calls). Each call works on its
# own cursor. Closing and reopening the database while another thread still used it made DuckDB
# 2.0 lose its Arrow scan function ("python_arrow_scan does not exist"), hence the sharing.
_open_lock = threading.Lock()
_open_dbs: dict[Path, list] = {}  # path -> [connection, calls in flight]


def default_db_path() -> Path:
    """PROFILER_DB if set, else the project's data/traces.duckdb."""
    return Path(os.environ.get("PROFILER_DB") or DEFAULT_DB)


def ingest_sql(name: str) -> str:
    """The text of sql/ingest/<name>.sql (its stage_* tables are the ingest's staged Arrow tables)."""
    return (INGEST_SQL / f"{name}.sql").read_text()


@dataclass(frozen=True)
class IngestResult:
    run_id: str
    name: str
    events: int
    kernels: int
    seconds: float
    duplicate: bool  # the same bytes were already in the store: nothing was written
    notes: tuple[str, ...] = ()  # events skipped, names cut, values stored as missing (with counts)


def one_line(e: BaseException) -> str:
    """The first line of a DuckDB error, without its 'Error:' prefix or any file path."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = re.sub(r"^[A-Za-z ]*Error: ", "", text)
    text = re.sub(r'"?(?:/[\w.+~-]+){2,}/?"?', "(path)", text)
    return text.rstrip(".")


class Store:
    """A store file. Cheap to construct; every call works on its own short-lived cursor.

    `read_only=True` (the command line's read commands): the file must exist, is never created,
    migrated or written, and other readers may open it at the same time.
    Errors are `StoreError`s of one sentence that name the store by its file name only (they are
    shown in the browser, where the server's paths have no business).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float = LOCK_TIMEOUT_S,
                 read_only: bool = False, threads: int | None = None):
        self.path = Path(path) if path is not None else default_db_path()
        self.threads = threads  # DuckDB threads (default: one per core); a job's worker takes its share
        self.lock_timeout_s = lock_timeout_s
        self.read_only = read_only
        self.label = f"the store {self.path.name}"
        self._ready = False

    # --- connections ------------------------------------------------------------------------

    @contextlib.contextmanager
    def connect(self, *, jobs: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived cursor on the store (schema created or migrated on first use). With
        `jobs`, a read-only view that also holds the ranks of stored jobs (profiler/storage/jobs.py)."""
        key = (self.path.resolve(), self.read_only)
        with _open_lock:
            entry = _open_dbs.get(key)
            if entry is None:
                entry = _open_dbs[key] = [self._open(), 0]
            entry[1] += 1
            con = entry[0].cursor()
        try:
            if not self._ready:
                self._ensure_schema(con)
            if jobs:
                from profiler.storage.job_views import attach_views
                attach_views(con, self)
            yield con
        except duckdb.Error as e:
            raise errors.StoreError(f"{self.label} could not answer: {one_line(e)}.") from e
        finally:
            con.close()
            with _open_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    entry[0].close()
                    del _open_dbs[key]

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.read_only:
            try:
                self.path.stat()
            except OSError as e:  # missing, or a path the system refuses (a name over 255 bytes)
                if e.errno == errno.ENOENT:
                    raise errors.StoreError(f"There is no store at {self.path}; ingest a trace into it first.") from e
                raise errors.StoreError(f"{self.label} cannot be opened: {e.strerror or e}.") from e
            if not self.path.is_file():
                raise errors.StoreError(f"There is no store at {self.path}; ingest a trace into it first.")
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise errors.StoreError(f"{self.label} cannot be created: {e.strerror or e}.") from e
        problem = not_a_store(self.path) if self.path.exists() else None
        if problem:
            raise errors.NotAStoreError(f"{self.label} {problem}; give the path of a store file "
                                        "(or a new one).")
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.02
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only,
                                      config=duckdb_config(self.threads))
            except duckdb.IOException as e:
                if "lock" not in str(e).lower():
                    raise errors.StoreError(f"{self.label} cannot be opened: {one_line(e)}.") from e
                if time.monotonic() >= deadline:
                    raise errors.StoreLockedError(
                        f"{self.label} is locked by another process (waited "
                        f"{self.lock_timeout_s:.0f} s); try again when it has finished.") from e
            except duckdb.Error as e:
                raise errors.StoreError(f"{self.label} cannot be opened: {one_line(e)}.") from e
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _ensure_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        """Migrate an older store, refuse a newer one, then create what is missing."""
        with _init_lock:
            if self._ready:
                return
            version = self._stored_version(con)
            if version > SCHEMA_VERSION:
                raise errors.StoreError(
                    f"{self.label} has schema version {version}, newer than this program "
                    f"understands ({SCHEMA_VERSION}); upgrade the dashboard.")
            if self.read_only:
                if version < SCHEMA_VERSION:
                    raise errors.StoreOutdatedError(
                        f"{self.label} has schema version {version}; ingest a trace into it once "
                        "to upgrade it.")
                self._ready = True
                return
            for target in range(version + 1, SCHEMA_VERSION + 1):
                if callable(MIGRATIONS[target]):
                    MIGRATIONS[target](con)
                else:
                    con.execute(MIGRATIONS[target])
            con.execute(SCHEMA_SQL.read_text())
            metrics.install(con)  # the metrics layer: macros over the schema, per-run metrics kept
            con.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
            self._ready = True

    def _stored_version(self, con: duckdb.DuckDBPyConnection) -> int:
        """The store's schema version; a new, empty file counts as the current one."""
        found = con.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'store_meta'").fetchone()[0]
        row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone() if found else None
        if not row:
            return SCHEMA_VERSION
        try:
            return int(row[0])
        except (TypeError, ValueError):
            raise errors.StoreError(
                f"{self.label} is damaged: its schema version reads {str(row[0])[:40]!r}, not a "
                "number.") from None

    def query(self, sql: str, params: Any = None) -> pd.DataFrame:
        """Run one read query and return its rows as a DataFrame."""
        with self.connect(jobs=True) as con:
            return con.execute(sql, params).df()

    def arrays(self, sql: str, params: Any = None) -> dict:
        """Run one read query and return its rows as {column: numpy array} (no pandas; NULLs masked)."""
        with self.connect(jobs=True) as con:
            return con.execute(sql, params).fetchnumpy()

    def schema_version(self) -> int:
        with self.connect() as con:
            return self._stored_version(con)

    def attach_counters(self, run_id: str, report: str | os.PathLike, ncu_seconds: float | None = None):
        """Attach the Nsight Compute raw CSV export at `report` to the stored run `run_id`
        (profiler/storage/counters.py); returns what matched. Bad files raise `CountersFileError`."""
        from profiler.storage import counters

        return counters.attach(self, run_id, counters.read_file(Path(report)), ncu_seconds)

    # --- ingest -----------------------------------------------------------------------------

    def ingest(self, src: trace.Source, name: str | None = None, *, source: str = "uploaded",
               progress: trace.Progress | None = None, keep_python: bool = False,
               max_bytes: int | None = None) -> IngestResult:
        """Ingest one trace (path, bytes or binary file-like; gzip or plain JSON), of at most
        `max_bytes` once decompressed (default `trace.DEFAULT_MAX_BYTES`).

        Raises a `TraceError` subclass naming the file and the problem; the store is then exactly
        as before. The same bytes ingested twice give the same id, and the second time is a no-op
        (`duplicate`: only when that id really is in the store). What was skipped or stored as
        missing is counted in `notes`.
        """
        if self.read_only:
            raise errors.StoreError(f"{self.label} was opened read-only.")
        from profiler.parse import trace
        from profiler.storage.staging import Staging

        started = time.perf_counter()
        max_bytes = trace.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        reader = trace.TraceReader(src, name, max_bytes=max_bytes, keep_python=keep_python, progress=progress)
        staging = Staging()
        for batch in reader.batches():
            staging.add(batch)
        assert reader.summary is not None
        return self.ingest_staged(reader.summary, staging, source=source, started=started)

    def ingest_staged(self, summary: trace.TraceSummary, staging: Staging, *, source: str = "uploaded",
                      started: float | None = None) -> IngestResult:
        """The second half of `ingest`: a parsed trace's staged rows (its ops not yet nested) into
        the store. Jobs call it with the rows of a file parsed in chunks (profiler/storage/chunks.py)."""
        from profiler.storage import metadata

        started = time.perf_counter() if started is None else started
        if summary.events - summary.skipped == 0:
            why = f" ({'; '.join(summary.notes)})" if summary.notes else ""
            raise errors.NotATraceError(summary.name, f"has no trace events{' that can be used' * bool(why)}{why}")
        span = staging.finish()
        row, row_notes = metadata.trace_row(summary, source, span, dt.datetime.now(dt.UTC).replace(tzinfo=None))
        duplicate = self._commit(row, staging, summary.name)
        return IngestResult(summary.run_id, summary.name, summary.events, span.kernels,
                            time.perf_counter() - started, duplicate,
                            summary.notes + tuple(staging.notes()) + tuple(row_notes))

    def _commit(self, row: dict, staging: Staging, name: str) -> bool:
        """Copy the staged trace into the store in one transaction; True if it was already there.
        A row the store refuses is a `TraceError` naming the file and the column."""
        with self.connect() as con:
            if con.execute("SELECT 1 FROM traces WHERE run_id = ?", [row["run_id"]]).fetchone():
                return True
            staging.register(con)
            self._iterations(con)
            con.execute(ingest_sql("stage_launch_iteration"))
            con.execute("BEGIN TRANSACTION")
            try:
                columns = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                con.execute(f"INSERT INTO traces ({columns}) VALUES ({marks})", list(row.values()))
                for table in tables.INSERTED:  # in order (tables.py): memory_events reads stage_ops
                    con.execute(ingest_sql(f"insert_{table.name}"), {"run_id": row["run_id"]})
                    if table.staged:
                        staging.release(con, table.staged)
                metrics.store_runs(con, [row["run_id"]])
                con.execute("COMMIT")
            except duckdb.Error as e:
                con.execute("ROLLBACK")
                stored = con.execute("SELECT 1 FROM traces WHERE run_id = ?", [row["run_id"]]).fetchone()
                if isinstance(e, duckdb.ConstraintException) and stored:
                    return True  # another thread committed the same trace first
                raise errors.TraceError(name, f"cannot be stored: {one_line(e)}") from e
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return False

    @staticmethod
    def _iterations(con: duckdb.DuckDBPyConnection) -> None:
        """stage_iterations: ProfilerStep windows, else a repeated annotation, else the whole trace."""
        for name in ("iterations_profiler_step", "iterations_repeated_annotation", "iterations_whole_trace"):
            con.execute(f"CREATE OR REPLACE TEMP TABLE stage_iterations AS {ingest_sql(name)}")
            if con.execute("SELECT count(*) FROM stage_iterations").fetchone()[0]:
                return
