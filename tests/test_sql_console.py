"""The SQL console (profiler/storage/console.py): one SELECT over a real store, in a child process
that opens the file read-only with external access disabled and its configuration locked.

Every way out of the store is tried and must be refused with a sentence (no traceback, nothing
read, nothing written): writes, DDL, `read_text` / `read_csv` / `read_blob` / `glob` of server files,
a file named as a table, URLs, `INSTALL` / `LOAD`, `ATTACH`, `COPY`, `SET` (also as a second
statement), and undoing the lock from inside a query. The row cap and the time limit hold, the
SQL library's macros are callable, and a query's answer matches `summary --json`.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import time

import pytest

from profiler.analysis.reads import schema_browser
from profiler.cli.main import main
from profiler.errors import QueryError
from profiler.storage import console, sql_docs
from profiler.storage.store import Store
from tests.conftest import SAMPLES

RUNS = [SAMPLES / "default" / f"{v}_b8_h16_s1024_d64_bf16_causal_warm.json.gz" for v in ("naive", "sdpa_flash")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("console")
    store = Store(folder / "store.duckdb")
    for path in RUNS:
        store.ingest(path)
    (folder / "secret.txt").write_text("the server's own file\n")
    return store


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


REFUSED_BEFORE_RUNNING = {
    "DELETE FROM traces": "DELETE",
    "DROP TABLE kernels": "DROP",
    "INSERT INTO store_meta VALUES ('a', 'b')": "INSERT",
    "UPDATE traces SET name = 'x'": "UPDATE",
    "CREATE TABLE t AS SELECT 1": "CREATE",
    "INSTALL httpfs": "LOAD",
    "LOAD httpfs": "LOAD",
    "ATTACH 'other.duckdb' AS other": "ATTACH",
    "COPY traces TO 'out.csv'": "COPY",
    "SET enable_external_access = true": "SET",
    "PRAGMA database_list": "PRAGMA",
    "EXPLAIN SELECT 1": "EXPLAIN",
    "CHECKPOINT": "",
}


@pytest.mark.parametrize("sql", REFUSED_BEFORE_RUNNING)
def test_statements_other_than_select_are_refused(store, sql):
    before = _digest(store.path)
    with pytest.raises(QueryError, match="Only SELECT statements run here") as e:
        schema_browser.run_select(store, sql)
    assert REFUSED_BEFORE_RUNNING[sql] in str(e.value)
    assert _digest(store.path) == before


@pytest.mark.parametrize("sql", ["SELECT 1; DELETE FROM traces", "SELECT 1; SET enable_external_access = true",
                                 "SELECT 1; INSTALL httpfs"])
def test_a_second_statement_is_refused(store, sql):
    with pytest.raises(QueryError, match="2 statements"):
        schema_browser.run_select(store, sql)


SERVER_FILE = ["SELECT * FROM read_text('secret.txt')", "SELECT * FROM read_text('/etc/passwd')",
               "SELECT * FROM read_csv('secret.txt')", "SELECT * FROM read_csv_auto('/etc/hostname')",
               "SELECT * FROM read_blob('secret.txt')", "SELECT * FROM glob('*')",
               "SELECT * FROM 'secret.txt'", "SELECT * FROM read_parquet('../*/*.parquet')",
               "SELECT * FROM read_json('/etc/os-release')"]


@pytest.mark.parametrize("sql", SERVER_FILE)
def test_server_files_cannot_be_read(store, sql):
    with pytest.raises(QueryError) as e:
        schema_browser.run_select(store, sql)
    text = str(e.value)
    assert "disabled by configuration" in text or "does not exist" in text, text
    assert "the server's own file" not in text and "/etc" not in text and "root:" not in text


@pytest.mark.parametrize("sql", ["SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
                                 "SELECT * FROM read_parquet('https://example.com/x.parquet')",
                                 "SELECT * FROM 's3://bucket/x.parquet'"])
def test_urls_are_refused(store, sql):
    with pytest.raises(QueryError, match="disabled by configuration|not be loaded|Permission"):
        schema_browser.run_select(store, sql)


def test_the_configuration_is_locked_and_no_extension_loads(store):
    found = schema_browser.run_select(store, "SELECT name, value FROM duckdb_settings() WHERE name IN "
                                             "('enable_external_access', 'lock_configuration', "
                                             "'autoinstall_known_extensions', 'autoload_known_extensions', "
                                             "'access_mode', 'temp_directory')").rows
    settings = dict(zip(found["name"], found["value"]))
    assert settings == {"enable_external_access": "false", "lock_configuration": "true",
                        "autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                        "access_mode": "read_only", "temp_directory": ""}
    with pytest.raises(QueryError):   # a table function that needs an extension: none is fetched
        schema_browser.run_select(store, "SELECT * FROM sqlite_scan('x.db', 't')")


def test_row_cap(store):
    result = schema_browser.run_select(store, "SELECT * FROM range(50000)", max_rows=1234)
    assert result.truncated and len(result.rows) == 1234
    assert list(result.rows["range"][:3]) == [0, 1, 2]
    exact = schema_browser.run_select(store, "SELECT * FROM range(1234)", max_rows=1234)
    assert not exact.truncated and len(exact.rows) == 1234


def test_time_limit_interrupts(store):
    started = time.monotonic()
    with pytest.raises(QueryError, match="longer than its limit of 1 s"):
        schema_browser.run_select(store, "SELECT sum(hash(a.range * b.range)) FROM range(200000) a, "
                                         "range(200000) b", time_limit_s=1)
    assert time.monotonic() - started < 1 + console.KILL_GRACE_S + 3


def test_errors_are_one_sentence_without_paths(store):
    with pytest.raises(QueryError) as e:
        schema_browser.run_select(store, "SELECT no_such_column FROM traces")
    assert "no_such_column" in str(e.value) and "Traceback" not in str(e.value)
    with pytest.raises(QueryError, match="does not parse"):
        schema_browser.run_select(store, "SELEC 1")
    with pytest.raises(QueryError, match="empty"):
        schema_browser.run_select(store, "  -- nothing\n")


def test_library_macros_are_callable_and_columns_unique(store):
    rows = schema_browser.run_select(store, "SELECT run_id, n_iter, n_iter FROM iteration_rows('kernels', "
                                            "(SELECT list(run_id) FROM traces)) LIMIT 3").rows
    assert list(rows.columns) == ["run_id", "n_iter", "n_iter_2"] and len(rows) == 3


def test_a_query_matches_summary_json(store):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["summary", "--json", "--db", str(store.path)]) == 0
    summary = {r["run_id"]: r for r in json.loads(out.getvalue())}
    rows = schema_browser.run_select(store, """
        SELECT t.run_id, (SELECT count(*) FROM kernels k WHERE k.run_id = t.run_id) AS kernels,
               m.gpu_busy_us_per_iter, m.bound, m.iterations
        FROM traces t JOIN run_metrics((SELECT list(run_id) FROM traces)) m USING (run_id)""").rows
    assert set(rows["run_id"]) == set(summary) and len(summary) == len(RUNS)
    for row in rows.itertuples():
        want = summary[row.run_id]
        assert row.kernels == want["kernels"]
        assert row.gpu_busy_us_per_iter == pytest.approx(want["gpu_busy_us_per_iter"], rel=1e-9)
        assert (row.bound, row.iterations) == (want["bound"], want["iterations"])


def test_the_schema_browser_lists_documented_tables_and_macros(store):
    names = {e.name: e for e in sql_docs.entries()}
    assert {"traces", "kernels", "ops", "launches", "launch_targets", "run_metrics", "iteration_rows",
            "memory_device"} <= set(names)
    assert not [n for n in names if n.startswith("_")]
    assert names["run_metrics"].kind == "table macro" and "VARCHAR[]" in names["run_metrics"].args
    cols = schema_browser.column_table(store, "traces")
    kv = cols[cols["column"] == "kv_len"].iloc[0]
    assert kv["type"] == "INTEGER" and "keys per sequence" in kv["meaning"]
    view = schema_browser.column_table(store, "launch_targets")
    assert {"api", "target_name", "target_dur_ns"} <= set(view["column"])
