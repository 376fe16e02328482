"""A new store is a copy of the one new store its process prepared (profiler/storage/blank.py): the
same tables, macros and kept digests as a file prepared the long way, never written over a file
made meanwhile, and brought up to date by the open like any older store when made under other
definitions."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from profiler import errors
from profiler.storage import blank, metrics, migrations
from profiler.storage.store import Store
from tests.conftest import FIXTURES

CATALOG = {
    "tables": "SELECT table_name, column_name, data_type FROM information_schema.columns "
              "WHERE table_catalog = current_database() ORDER BY ALL",
    "macros": "SELECT function_name, function_type, parameters::VARCHAR FROM duckdb_functions() "
              "WHERE database_name = current_database() AND NOT internal ORDER BY ALL",
    "views": "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
             "AND NOT internal ORDER BY ALL",
    "meta": "SELECT * FROM store_meta ORDER BY key",
}


def _catalog(path: Path) -> dict[str, list]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in CATALOG.items()}
    finally:
        con.close()


def _prepared_the_long_way(path: Path) -> Path:
    con = duckdb.connect(str(path))
    try:
        migrations.prepare(con, "a store", read_only=False)
    finally:
        con.close()
    return path


def test_a_new_store_has_what_one_prepared_the_long_way_has(tmp_path):
    copy = Store(tmp_path / "copy.duckdb")
    blank.create(copy)
    assert (tmp_path / "copy.duckdb").read_bytes() == blank.prepared(copy)
    copy.query("SELECT 1")
    made = _catalog(tmp_path / "copy.duckdb")
    assert made == _catalog(_prepared_the_long_way(tmp_path / "long.duckdb"))
    assert len(made["tables"]) > 200 and len(made["macros"]) >= 9 and len(made["meta"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.duckdb", "long.duckdb"]


def test_a_copied_store_ingests_and_reads_as_any_store(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(FIXTURES / "tiny_naive.json").run_id
    assert store.query("SELECT run_id FROM traces")["run_id"].tolist() == [run]
    assert store.query("SELECT count(*) AS n FROM stored_iteration_metrics WHERE run_id = ?", [run])["n"][0] > 0


def test_a_file_that_exists_is_never_replaced(tmp_path):
    path = tmp_path / "s.duckdb"
    path.write_bytes(b"not a store")
    blank.create(Store(path))
    assert path.read_bytes() == b"not a store"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]   # no part file left behind


def test_a_folder_not_made_yet_is_left_to_the_open(tmp_path):
    path = tmp_path / "new" / "folder" / "s.duckdb"
    blank.create(Store(path))
    assert not path.parent.exists()
    Store(path).query("SELECT 1")
    assert path.is_file()


def test_a_copy_made_under_other_metrics_definitions_is_brought_up_to_date(tmp_path, monkeypatch):
    store = Store(tmp_path / "old.duckdb")
    run = store.ingest(FIXTURES / "tiny_naive.json").run_id
    monkeypatch.setattr(metrics, "definition_digest", lambda: "another")
    later = Store(tmp_path / "new.duckdb")                 # a copy kept under the first definition
    later.query("SELECT 1")
    meta = dict(later.query("SELECT key, value FROM store_meta").values.tolist())
    assert meta[metrics.VERSION_KEY] == "another"          # the open found it outdated and rewrote it
    reopened = Store(tmp_path / "old.duckdb")
    reopened.query("SELECT 1")
    assert reopened.query("SELECT count(*) AS n FROM stored_iteration_metrics WHERE run_id = ?", [run])["n"][0] > 0


def test_a_name_the_system_refuses_is_left_to_the_open_and_its_one_line_error(tmp_path):
    path = tmp_path / ("s" * 300 + ".duckdb")
    blank.create(Store(path))
    with pytest.raises(errors.StoreError, match="cannot be opened: File name too long"):
        Store(path).query("SELECT 1")
    assert list(tmp_path.iterdir()) == []
