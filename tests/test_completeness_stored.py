"""Issue 37, item 1: the completeness verdict is stored at ingest (`stored_completeness`,
profiler/storage/completeness.py), filled in for runs of older stores by a writing handle's upkeep
(schema version 12), read from the store (never recomputed for a stored run), and deleted with its run.
"""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from profiler.analysis.reads import completeness
from profiler.errors import StoreOutdatedError
from profiler.storage import catalog, completeness as stored
from profiler.storage.store import Store
from profiler.storage.migrations import SCHEMA_VERSION
from tests.test_completeness import HTA, QWEN, _dump, _load

needs = pytest.mark.skipif(not QWEN.is_file() or not HTA.is_file(), reason="needs the shared traces")
pytestmark = pytest.mark.third_party


def _rows(path, run_id) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT iteration, reason, count, of_count, expected FROM stored_completeness "
                           "WHERE run_id = ? ORDER BY iteration NULLS FIRST, reason", [run_id]).fetchall()
    finally:
        con.close()


def _fresh(store, run_id) -> list[tuple]:
    """The query's rows computed now from the stored trace rows (not from stored_completeness)."""
    df = store.query(stored.query_text(), {"run_ids": [run_id]})
    return [(None if pd.isna(r.iteration) else int(r.iteration), r.reason,
             int(r.count), int(r.of_count), bool(r.expected)) for r in df.itertuples()]


@needs
def test_ingest_stores_the_verdict_with_a_checked_row(tmp_path):
    data = _load()
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    dropped = {id(e) for e in kernels[::10]}                                   # damage: kernels dropped
    data["traceEvents"] = [e for e in data["traceEvents"] if id(e) not in dropped]
    path = tmp_path / "damaged.json"
    path.write_text(_dump(data))
    store = Store(tmp_path / "s.duckdb")
    run_id = store.ingest(path).run_id
    rows = _rows(store.path, run_id)
    assert (None, stored.CHECKED, 0, 0, True) in rows
    found = [r for r in rows if r[1] != stored.CHECKED]
    assert found == _fresh(store, run_id)
    assert any(r[1] == "launch_no_gpu" and r[0] is None and r[2] > 0 for r in found)
    assert not completeness.verdicts(store, [run_id])[run_id]["complete"]


@needs
def test_the_verdict_is_read_from_the_store_not_recomputed(tmp_path):
    """A stored row changed behind the program's back is what the verdict says: it is read, not
    computed again (the cache is fresh: a new Store handle)."""
    store = Store(tmp_path / "s.duckdb")
    run_id = store.ingest(HTA).run_id
    assert completeness.verdicts(Store(store.path), [run_id])[run_id]["complete"]
    con = duckdb.connect(str(store.path))
    con.execute("INSERT INTO stored_completeness VALUES (?, 2, 'step_no_gpu', 1, 1, false)", [run_id])
    con.close()
    v = completeness.verdicts(Store(store.path, read_only=True), [run_id])[run_id]
    assert not v["complete"] and [i["reason"] for i in v["steps"][2]] == ["step_no_gpu"]


@needs
def test_an_older_store_is_checked_when_a_writing_handle_opens_it(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    run_id = store.ingest(HTA).run_id
    expected = _rows(store.path, run_id)
    con = duckdb.connect(str(store.path))
    con.execute("DROP TABLE stored_completeness")      # as a store of schema version 11 was
    con.execute("DELETE FROM store_meta WHERE key = ?", [stored.VERSION_KEY])
    con.execute("UPDATE store_meta SET value = '11' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreOutdatedError):
        Store(store.path, read_only=True).schema_version()
    assert Store(store.path).schema_version() == SCHEMA_VERSION == 12
    assert _rows(store.path, run_id) == expected
    assert completeness.verdicts(Store(store.path, read_only=True), [run_id])[run_id]["complete"]


@needs
def test_a_changed_definition_checks_every_run_again_and_delete_removes_the_rows(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    run_id = store.ingest(HTA).run_id
    expected = _rows(store.path, run_id)
    con = duckdb.connect(str(store.path))
    con.execute("DELETE FROM stored_completeness WHERE reason <> 'checked'")    # rows of an older definition
    con.execute("UPDATE store_meta SET value = 'old' WHERE key = ?", [stored.VERSION_KEY])
    con.close()
    Store(store.path).upkeep()
    assert _rows(store.path, run_id) == expected
    catalog.delete_runs(Store(store.path), [run_id])
    assert _rows(store.path, run_id) == []
