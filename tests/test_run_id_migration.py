"""A store written before the run id was called run_id (its tables said trace_id) opens, migrates
and answers exactly as a store written by the current code.

The old store is built from the old schema kept as a fixture (tests/fixtures/store/schema_v<N>.sql)
and filled with the rows the current code ingests from the shipped samples.
"""
from __future__ import annotations

import re

import duckdb
import pandas as pd
import pytest

from profiler import errors
from profiler.analysis.reads import kernel_queries, queries, run_queries
from profiler.storage.store import Store
from profiler.storage.migrations import SCHEMA_VERSION
from tests.conftest import FIXTURES, SAMPLES

OLD_SCHEMAS = sorted((FIXTURES / "store").glob("schema_v*.sql"))
SAMPLE_FILES = sorted((SAMPLES / "default").glob("naive_*.json.gz"))[:2]


def _old_store(path, new_path, schema_file) -> int:
    """A store file at the old schema version holding the rows of the store at ``new_path``."""
    version = int(re.search(r"schema_v(\d+)\.sql$", schema_file.name).group(1))
    con = duckdb.connect(str(path))
    con.execute(schema_file.read_text())
    old_tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND table_name <> 'store_meta'").fetchall()]
    con.execute(f"ATTACH '{new_path}' AS new (READ_ONLY)")
    for table in old_tables:  # the old table's columns only: later versions added some (traces' mode, ...)
        columns = [r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND table_name = ?",
            [table]).fetchall()]
        picked = ", ".join("run_id AS trace_id" if c == "trace_id" else f'"{c}"' for c in columns)
        con.execute(f"INSERT INTO main.{table} BY NAME SELECT {picked} FROM new.main.{table}")
    con.execute("INSERT INTO store_meta VALUES ('schema_version', ?)", [str(version)])
    con.close()
    return version


@pytest.fixture
def stores(tmp_path):
    assert len(OLD_SCHEMAS) == 1, OLD_SCHEMAS
    assert len(SAMPLE_FILES) == 2
    new = Store(tmp_path / "new.duckdb")
    ids = [new.ingest(p).run_id for p in SAMPLE_FILES[:1]]
    old_path = tmp_path / "old.duckdb"
    version = _old_store(old_path, tmp_path / "new.duckdb", OLD_SCHEMAS[0])
    return new, old_path, ids, version


def test_the_old_schema_names_the_run_id_trace_id(stores):
    _, old_path, ids, version = stores
    assert version < SCHEMA_VERSION
    con = duckdb.connect(str(old_path), read_only=True)
    assert con.execute("SELECT trace_id FROM traces").fetchall() == [(ids[0],)]
    con.close()


def test_an_old_store_is_refused_read_only_until_migrated(stores):
    _, old_path, _, version = stores
    with pytest.raises(errors.StoreError, match=f"schema version {version}"):
        Store(old_path, read_only=True).schema_version()


def test_an_old_store_migrates_and_reads_like_a_new_one(stores):
    new, old_path, ids, _ = stores
    old = Store(old_path)
    assert old.schema_version() == SCHEMA_VERSION
    columns = old.query("SELECT table_name, column_name FROM information_schema.columns "
                        "WHERE table_schema = 'main' AND column_name IN ('trace_id', 'run_id')")
    assert "trace_id" not in set(columns["column_name"])
    assert {"traces", "kernels", "ops", "launches", "iterations", "memops"} <= set(columns["table_name"])
    for read in (run_queries.run_catalog, lambda s: run_queries.run_metrics(s, ids),
                 lambda s: kernel_queries.kernel_table(s, ids), lambda s: queries.launch_targets_table(s, ids)):
        want, got = read(new), read(old)
        assert len(want) > 0
        pd.testing.assert_frame_equal(got, want)
    # the migrated run id is still the primary key: the same trace again is a duplicate
    assert old.ingest(SAMPLE_FILES[0]).duplicate
    second = old.ingest(SAMPLE_FILES[1])
    assert not second.duplicate
    assert set(run_queries.run_catalog(old)["run_id"]) == {ids[0], second.run_id}
    # and it reads read-only now
    assert Store(old_path, read_only=True).schema_version() == SCHEMA_VERSION
