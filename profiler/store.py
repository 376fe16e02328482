"""The DuckDB store: one file, opened briefly per call, written one whole trace per transaction.

Ingest streams a trace into compact Arrow columns (profiler/staging.py), nests its ops, and only
then opens the store to work out iterations and copy everything in one transaction. The store
file is therefore held for seconds at most, and other processes (the dashboard, the command line)
get their turn; a locked file is retried briefly.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from profiler import errors, metadata, trace
from profiler.staging import Staging

if TYPE_CHECKING:  # pandas loads only when a query result is read back
    import pandas as pd

SCHEMA_VERSION = 1
# schema version -> the SQL that upgrades a store from the version before it (run in order on open)
MIGRATIONS: dict[int, str] = {}
SCHEMA_SQL = Path(__file__).with_name("schema.sql")
INGEST_SQL = Path(__file__).with_name("sql") / "ingest"
LOCK_TIMEOUT_S = 15.0
MEMORY_LIMIT = os.environ.get("PROFILER_DB_MEMORY", "256MB")  # DuckDB spills to disk beyond this
DEFAULT_DB = Path("data") / "traces.duckdb"

_init_lock = threading.Lock()

# Per store file, one open database shared by the calls in flight in this process, closed when the
# last one ends (so the file is free for other processes between calls). Each call works on its
# own cursor. Closing and reopening the database while another thread still used it made DuckDB
# 2.0 lose its Arrow scan function ("python_arrow_scan does not exist"), hence the sharing.
_open_lock = threading.Lock()
_open_dbs: dict[Path, list] = {}  # path -> [connection, calls in flight]


def default_db_path() -> Path:
    """PROFILER_DB if set, else data/traces.duckdb."""
    return Path(os.environ.get("PROFILER_DB") or DEFAULT_DB)


def ingest_sql(name: str) -> str:
    """The text of sql/ingest/<name>.sql (its stage_* tables are the ingest's staged Arrow tables)."""
    return (INGEST_SQL / f"{name}.sql").read_text()


@dataclass(frozen=True)
class IngestResult:
    trace_id: str
    name: str
    events: int
    kernels: int
    seconds: float
    duplicate: bool  # the same bytes were already in the store: nothing was written


class Store:
    """A store file. Cheap to construct; every call works on its own short-lived cursor."""

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float = LOCK_TIMEOUT_S):
        self.path = Path(path) if path is not None else default_db_path()
        self.lock_timeout_s = lock_timeout_s
        self._ready = False

    # --- connections ------------------------------------------------------------------------

    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived cursor on the store (schema created or migrated on first use)."""
        key = self.path.resolve()
        with _open_lock:
            entry = _open_dbs.get(key)
            if entry is None:
                entry = _open_dbs[key] = [self._open(), 0]
            entry[1] += 1
            con = entry[0].cursor()
        try:
            if not self._ready:
                self._ensure_schema(con)
            yield con
        except duckdb.Error as e:
            raise errors.StoreError(f"store {self.path}: {e}") from e
        finally:
            con.close()
            with _open_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    entry[0].close()
                    del _open_dbs[key]

    def _open(self) -> duckdb.DuckDBPyConnection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.02
        while True:
            try:
                return duckdb.connect(str(self.path), config={"memory_limit": MEMORY_LIMIT})
            except duckdb.IOException as e:
                if "lock" not in str(e).lower():
                    raise errors.StoreError(f"store {self.path} cannot be opened: {e}") from e
                if time.monotonic() >= deadline:
                    raise errors.StoreLockedError(
                        f"store {self.path} is locked by another process (waited "
                        f"{self.lock_timeout_s:.0f} s); try again when it has finished") from e
            except duckdb.Error as e:
                raise errors.StoreError(f"store {self.path} cannot be opened: {e}") from e
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
                    f"store {self.path} has schema version {version}, newer than this program "
                    f"understands ({SCHEMA_VERSION}); upgrade the dashboard")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                con.execute(MIGRATIONS[target])
            con.execute(SCHEMA_SQL.read_text())
            con.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
            self._ready = True

    @staticmethod
    def _stored_version(con: duckdb.DuckDBPyConnection) -> int:
        """The store's schema version; a new, empty file counts as the current one."""
        found = con.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'store_meta'").fetchone()[0]
        row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone() if found else None
        return int(row[0]) if row else SCHEMA_VERSION

    def query(self, sql: str, params: Any = None) -> pd.DataFrame:
        """Run one read query and return its rows as a DataFrame."""
        with self.connect() as con:
            return con.execute(sql, params).df()

    def schema_version(self) -> int:
        with self.connect() as con:
            return int(con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0])

    # --- ingest -----------------------------------------------------------------------------

    def ingest(self, src: trace.Source, name: str | None = None, *, source: str = "uploaded",
               progress: trace.Progress | None = None, keep_python: bool = False,
               max_bytes: int = trace.DEFAULT_MAX_BYTES) -> IngestResult:
        """Ingest one trace (path, bytes or binary file-like; gzip or plain JSON).

        Raises a `TraceError` subclass naming the file and the problem; the store is then exactly
        as before. The same bytes ingested twice give the same id, and the second time is a no-op.
        """
        started = time.perf_counter()
        reader = trace.TraceReader(src, name, max_bytes=max_bytes, keep_python=keep_python, progress=progress)
        staging = Staging()
        for batch in reader.batches():
            staging.add(batch)
        summary = reader.summary
        assert summary is not None
        if summary.events - summary.skipped == 0:
            raise errors.NotATraceError(reader.name, "has no trace events")
        span = staging.finish()
        row = metadata.trace_row(summary, source, span, dt.datetime.now(dt.UTC).replace(tzinfo=None))
        duplicate = self._commit(row, staging)
        return IngestResult(summary.trace_id, summary.name, summary.events, span.kernels,
                            time.perf_counter() - started, duplicate)

    def _commit(self, row: dict, staging: Staging) -> bool:
        """Copy the staged trace into the store in one transaction; False if it was already there."""
        with self.connect() as con:
            if con.execute("SELECT 1 FROM traces WHERE trace_id = ?", [row["trace_id"]]).fetchone():
                return True
            staging.register(con)
            self._iterations(con)
            con.execute(ingest_sql("stage_launch_iteration"))
            con.execute("BEGIN TRANSACTION")
            try:
                columns = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                con.execute(f"INSERT INTO traces ({columns}) VALUES ({marks})", list(row.values()))
                con.execute(ingest_sql("insert_iterations"), {"trace_id": row["trace_id"]})
                con.execute(ingest_sql("insert_memory_events"), {"trace_id": row["trace_id"]})  # reads stage_ops
                staging.release(con, "memory")
                for table in ("ops", "launches", "kernels", "memops"):
                    con.execute(ingest_sql(f"insert_{table}"), {"trace_id": row["trace_id"]})
                    staging.release(con, table)
                con.execute("COMMIT")
            except duckdb.ConstraintException:
                con.execute("ROLLBACK")
                return True  # another thread committed the same trace first
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
