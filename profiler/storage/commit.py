"""Traces on their way into the store, between the parser and the store's transaction
(`Store.ingest`, `Store.commit_batch`): `parse` a trace into staged Arrow columns, `prepare` it
(its ops nested, its `traces` row made: a `Staged`), and `insert` a batch of them inside the
caller's transaction, one statement per table (sql/ingest/*.sql); what an ingest returns
(`IngestResult`)."""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler import errors
from profiler.storage import tables
from profiler.vocab import attention

if TYPE_CHECKING:
    import duckdb

    from profiler.parse import trace
    from profiler.storage.staging import StagedBatch, Staging

INGEST_SQL = Path(__file__).with_name("sql") / "ingest"


@dataclass(frozen=True)
class IngestResult:
    run_id: str
    name: str
    events: int
    kernels: int
    seconds: float
    duplicate: bool  # the same bytes were already in the store: nothing was written
    notes: tuple[str, ...] = ()  # events skipped, names cut, values stored as missing (with counts)
    chunks: int = 0  # parsed in this many chunks by worker processes (chunked_ingest.py); 0: whole
    workers: int = 1


def ingest_sql(name: str) -> str:
    """The text of sql/ingest/<name>.sql (its stage_* tables are the ingest's staged Arrow tables)."""
    return (INGEST_SQL / f"{name}.sql").read_text()


def insert(con: duckdb.DuckDBPyConnection, rows: list[dict], batch: StagedBatch) -> None:
    """Within the caller's transaction: the batch's `traces` rows, then its staged rows, one
    statement per table for all its runs (sql/ingest/*.sql: their iteration windows and the
    launches' iterations first, per run)."""
    batch.register(con)  # on a failure these go with the cursor, the temp tables with the rollback
    con.execute(ingest_sql("stage_iterations"), {"serving_step": attention.SERVING_STEP})
    con.execute(ingest_sql("stage_launch_iteration"))
    _insert_traces(con, rows)
    for table in tables.INSERTED:  # in order (tables.py): memory_events reads stage_ops
        con.execute(ingest_sql(f"insert_{table.name}"))
        if table.staged:
            batch.release(con, table.staged)
    for name in list(batch.tables):
        batch.release(con, name)
    con.execute("DROP TABLE stage_launch_iteration")
    con.execute("DROP TABLE stage_iterations")


@dataclass
class Staged:
    """One trace parsed (`Store.stage`): its summary, staged rows, time span and `traces` row."""
    summary: trace.TraceSummary
    staging: Staging
    span: Any
    row: dict
    row_notes: list[str]
    started: float

    @property
    def run_id(self) -> str:
        return self.row["run_id"]

    def result(self, duplicate: bool) -> IngestResult:
        return IngestResult(self.summary.run_id, self.summary.name, self.summary.events, self.span.kernels,
                            time.perf_counter() - self.started, duplicate,
                            self.summary.notes + tuple(self.staging.notes()) + tuple(self.row_notes))


def prepare(summary: trace.TraceSummary, staging: Staging, source: str, started: float) -> Staged:
    """A parsed trace's ops nested and its `traces` row made; a trace with no usable events is a
    `NotATraceError`."""
    from profiler.storage import metadata

    if summary.events - summary.skipped == 0:
        why = f" ({'; '.join(summary.notes)})" if summary.notes else ""
        raise errors.NotATraceError(summary.name, f"has no trace events{' that can be used' * bool(why)}{why}")
    span = staging.finish()
    row, row_notes = metadata.trace_row(summary, source, span, dt.datetime.now(dt.UTC).replace(tzinfo=None))
    return Staged(summary, staging, span, row, row_notes, started)


def _insert_traces(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The batch's `traces` rows, in one statement (every row has the same keys: metadata.trace_row)."""
    columns = ", ".join(f'"{column}"' for column in rows[0])  # "window" is an SQL keyword
    marks = ", ".join(f"({', '.join('?' for _ in rows[0])})" for _ in rows)
    con.execute(f"INSERT INTO traces ({columns}) VALUES {marks}", [v for row in rows for v in row.values()])


def parse(src: trace.Source, name: str | None, max_bytes: int, keep_python: bool,
          progress: trace.Progress | None) -> tuple[trace.TraceSummary, Staging]:
    """A trace read into staged Arrow columns (nothing written yet)."""
    from profiler.parse import trace
    from profiler.storage.staging import Staging

    reader = trace.TraceReader(src, name, max_bytes=max_bytes, keep_python=keep_python, progress=progress)
    staging = Staging()
    for batch in reader.batches():
        staging.add(batch)
    assert reader.summary is not None
    return reader.summary, staging
