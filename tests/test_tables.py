"""The per-run table registry (profiler/storage/tables.py) names exactly the store's tables that
carry a run_id, so that deleting a run, a job's rank files and ingest miss none."""
from __future__ import annotations

from profiler.storage import tables
from profiler.storage.store import Store


def test_the_registry_is_every_table_with_a_run_id(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    with store.connect() as con:
        found = {t for (t,) in con.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_catalog, table_schema, table_name) WHERE c.column_name = 'run_id' "
            "AND t.table_type = 'BASE TABLE' AND c.table_schema = 'main' "
            "AND c.table_catalog = current_database()").fetchall()}
    # the per-run tables, and the job summary whose rows repeat a query's run_id column
    assert found == {t.name for t in tables.TABLES} | {"job_summary_iterations"}
    assert "job_summary_iterations" in {t.name for t in tables.JOB_SUMMARIES}


def test_each_parsed_table_but_traces_is_inserted_once_in_order():
    inserted = [t.name for t in tables.INSERTED]
    assert sorted(inserted) == sorted(set(tables.PARSED_TABLES) - {"traces"})
    assert inserted.index("memory_events") < inserted.index("ops"), "memory_events reads the staged ops"
