"""A read never writes (profiler/storage/migrations.py): the metrics layer's rows are computed at
ingest, and for runs that lack them (stores written by older versions, rows written other than by
ingest) when a writing handle opens the store, or by `Store.upkeep()`; reads only read."""
from __future__ import annotations

import hashlib

import duckdb

from profiler.analysis.reads import queries, run_queries
from profiler.storage.store import Store


def _metric_rows(path, run_id: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM stored_iteration_metrics WHERE run_id = ?", [run_id]).fetchone()[0]
    finally:
        con.close()


def _without_metrics(path, run_id: str) -> None:
    """The store as an older version left it: no metrics kept for `run_id`."""
    con = duckdb.connect(str(path))
    try:
        con.execute("DELETE FROM stored_iteration_metrics WHERE run_id = ?", [run_id])
    finally:
        con.close()


def _read_everything(store, ids) -> None:
    with store.session() as db:
        run_queries.run_metrics(db, ids)
        run_queries.iteration_metrics(db, ids)
        queries.iteration_cpu_gpu(db, ids)
        run_queries.run_catalog(db)
    queries.trace_summary(store)


def test_a_read_only_session_over_a_store_missing_metrics_writes_nothing(fixture_store):
    store, ids = fixture_store
    run = ids["tiny_naive.json"]
    _without_metrics(store.path, run)
    before = (hashlib.sha256(store.path.read_bytes()).hexdigest(), store.path.stat().st_mtime_ns)
    reader = Store(store.path, read_only=True)
    _read_everything(reader, list(ids.values()))
    assert run not in set(run_queries.run_metrics(reader, [run])["run_id"])   # nothing made up either
    assert (hashlib.sha256(store.path.read_bytes()).hexdigest(), store.path.stat().st_mtime_ns) == before
    assert _metric_rows(store.path, run) == 0


def test_reads_through_a_writing_handle_do_not_insert_metrics(fixture_store):
    store, ids = fixture_store
    run = ids["tiny_naive.json"]
    with store.connect() as con:        # the handle is open (and up to date); rows then lost
        con.execute("DELETE FROM stored_iteration_metrics WHERE run_id = ?", [run])
    _read_everything(store, list(ids.values()))
    assert _metric_rows(store.path, run) == 0


def test_opening_for_writing_fills_the_missing_metrics(fixture_store):
    store, ids = fixture_store
    run = ids["tiny_naive.json"]
    want = run_queries.run_metrics(store, [run])
    _without_metrics(store.path, run)
    writer = Store(store.path)
    writer.schema_version()             # the first connection of a writing handle: its upkeep
    assert _metric_rows(store.path, run) > 0
    assert run_queries.run_metrics(writer, [run]).equals(want)


def test_upkeep_fills_the_metrics_of_rows_written_other_than_by_ingest(fixture_store):
    store, ids = fixture_store
    run = ids["tiny_naive.json"]
    with store.connect() as con:
        con.execute("DELETE FROM stored_iteration_metrics WHERE run_id = ?", [run])
    store.upkeep()
    assert _metric_rows(store.path, run) > 0
