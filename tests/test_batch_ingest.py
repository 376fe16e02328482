"""Batched inserts (Store.commit_batch, staging.StagedBatch): the staged rows of several traces go
into the store with one statement per table, every derived table (iterations, the launches'
iterations) worked out per run within the batch. Checked table by table against one ingest per
file, on the real DLRM ranks and a ResNet trace, with two small traces beside them whose
iterations come from the fallbacks (a repeated annotation; the whole trace), so that each run of
a batch picks its own. A batch the store refuses is stored one by one: the error names the bad
file and the other runs are stored as alone; a job's batch of ranks names it in its place."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profiler import errors
from profiler.storage.jobs import jobs, rank_task
from profiler.storage import job_layout, metadata
from profiler.storage.session import StoreHandle
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
RESNET = SHARED_TRACES / "kineto__tb_plugin__resnet50_num_workers_0__worker0.pt.trace.json.gz"
needs_traces = pytest.mark.skipif(len(DLRM) != 7 or not RESNET.is_file(), reason="needs the shared traces")


def _event(ph: str, cat: str, name: str, ts: int, dur: int, **args) -> dict:
    return {"ph": ph, "cat": cat, "name": name, "pid": 1, "tid": 1 if cat != "kernel" else 7,
            "ts": ts, "dur": dur, "args": args}


def _annotated() -> bytes:
    """Three top-level 'step' annotations (no ProfilerStep), each launching one kernel."""
    events = []
    for i in range(3):
        t = 1000 * i
        events += [_event("X", "user_annotation", "step", t, 500),
                   _event("X", "cpu_op", "aten::mm", t + 10, 100, **{"External id": i + 1}),
                   _event("X", "cuda_runtime", "cudaLaunchKernel", t + 20, 10, correlation=i + 1),
                   _event("X", "kernel", "gemm", t + 600, 50, device=0, stream=7, correlation=i + 1)]
    events.append(_event("X", "user_annotation", "once", 5000, 10))
    return json.dumps({"traceEvents": events}).encode()


def _bare() -> bytes:
    """Two kernels and nothing else: one '(whole trace)' iteration."""
    return json.dumps({"traceEvents": [_event("X", "kernel", "k", 100, 5, device=0, stream=7, correlation=1),
                                       _event("X", "kernel", "k", 300, 5, device=0, stream=7, correlation=2)]}).encode()


def _files(tmp: Path) -> list[Path]:
    (tmp / "annotated.json").write_bytes(_annotated())
    (tmp / "bare.json").write_bytes(_bare())
    return [*DLRM[:4], tmp / "annotated.json", RESNET, *DLRM[4:], tmp / "bare.json"]


def _run_tables(store: StoreHandle) -> list[str]:
    names = store.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                        "AND table_type = 'BASE TABLE'")["table_name"]
    return [t for t in names if "run_id" in store.query(f"SELECT * FROM {t} LIMIT 0").columns]


def _rows(store: StoreHandle, table: str, run_id: str) -> list[str]:
    """Every row of `table` for one run, sorted (added_at aside: a clock, not data)."""
    cols = [c for c in store.query(f"SELECT * FROM {table} LIMIT 0").columns if c != "added_at"]
    quoted = ", ".join(f'"{c}"' for c in cols)
    rows = store.query(f"SELECT {quoted} FROM {table} WHERE run_id = ?", [run_id])
    return sorted(map(str, rows.itertuples(index=False)))


def _same_runs(got: Store, want: Store, run_ids: list[str]) -> int:
    """Assert every table holds the same rows for every run in both stores; how many held rows."""
    with_rows = 0
    with got.session() as got_db, want.session() as want_db:  # one open file each for every read
        for table in _run_tables(want_db):
            for run_id in run_ids:
                rows = _rows(got_db, table, run_id)
                assert rows == _rows(want_db, table, run_id), (table, run_id)
                with_rows += bool(rows)
    return with_rows


@pytest.mark.third_party
@needs_traces
def test_a_batch_stores_every_run_as_one_ingest_per_file_does(tmp_path):
    files = _files(tmp_path)
    one, many = Store(tmp_path / "one.duckdb"), Store(tmp_path / "many.duckdb")
    singles = [one.ingest(f) for f in files]
    batch = many.ingest_many([(f, None) for f in files])
    assert [(r.run_id, r.name, r.events, r.kernels, r.notes, r.duplicate) for r in batch] == \
           [(r.run_id, r.name, r.events, r.kernels, r.notes, False) for r in singles]
    ids = [r.run_id for r in singles]
    assert _same_runs(many, one, ids) >= len(files) * 6  # traces, iterations, ops, kernels, launches, metrics
    iterations = many.query("SELECT run_id, count(*) AS n, min(name) AS first FROM iterations GROUP BY run_id")
    by_run = {r.run_id: (r.n, r.first) for r in iterations.itertuples()}
    assert by_run[ids[4]] == (3, "step")  # its repeated annotation, not the one beside it
    assert by_run[ids[-1]] == (1, "(whole trace)")
    assert all(by_run[i][1].startswith("ProfilerStep#") for i in ids[:4] + ids[6:-1])
    kernels = many.query("SELECT iteration FROM kernels WHERE run_id = ? ORDER BY ts_ns", [ids[4]])
    assert kernels["iteration"].tolist() == [0, 1, 2]  # by their launches' windows (they run after them)


@pytest.mark.third_party
@needs_traces
def test_a_second_batch_and_a_repeated_file_write_nothing_twice(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    first = store.ingest_many([(DLRM[0], None), (DLRM[1], None), (DLRM[0], "again")])
    assert [r.duplicate for r in first] == [False, False, True]
    again = store.ingest_many([(DLRM[1], None), (DLRM[2], None)])
    assert [r.duplicate for r in again] == [True, False]
    counts = store.query("SELECT (SELECT count(*) FROM traces) AS t, "
                         "(SELECT count(DISTINCT run_id) FROM kernels) AS k").iloc[0].tolist()
    assert counts == [3, 3]


def _refusing(monkeypatch, bad_name: str) -> None:
    """The store refuses the `traces` row of the file named `bad_name` (its name NULL: NOT NULL)."""
    trace_row = metadata.trace_row

    def refused(summary, *args):
        row, notes = trace_row(summary, *args)
        if summary.name == bad_name:
            row["name"] = None
        return row, notes
    monkeypatch.setattr(metadata, "trace_row", refused)


@pytest.mark.third_party
@needs_traces
def test_a_refused_batch_is_stored_one_by_one_and_names_the_file(tmp_path, monkeypatch):
    files = DLRM[:4]
    want = Store(tmp_path / "want.duckdb")
    before = want.ingest(DLRM[5])
    stored = [want.ingest(f) for f in files[:2]]
    store = Store(tmp_path / "store.duckdb")
    store.ingest(DLRM[5])
    _refusing(monkeypatch, files[2].name)
    with pytest.raises(errors.TraceError, match=f"{files[2].name}.*cannot be stored") as e:
        store.ingest_many([(f, None) for f in files])
    assert "name" in str(e.value)
    ids = [before.run_id] + [r.run_id for r in stored]
    assert sorted(store.query("SELECT run_id FROM traces")["run_id"]) == sorted(ids)  # those before it
    assert _same_runs(store, want, ids) >= 3 * 6  # the earlier run intact, the others as alone
    for table in _run_tables(store):
        left = store.query(f"SELECT count(*) AS n FROM {table} WHERE run_id NOT IN (SELECT unnest($ids))",
                           {"ids": ids})["n"][0]
        assert left == 0, table  # nothing of the refused file, nor of the one after it


@pytest.mark.third_party
@needs_traces
def test_a_job_batch_the_store_refuses_names_the_file_in_its_place(tmp_path, monkeypatch):
    files = [str(f) for f in DLRM[:4]]
    good = rank_task.parse_ranks(files, str(tmp_path / "good"), "k", sharing=2)
    _refusing(monkeypatch, DLRM[1].name)
    got = rank_task.parse_ranks(files, str(tmp_path / "refused"), "k", sharing=2)
    assert isinstance(got[1], errors.TraceError) and DLRM[1].name in str(got[1]) and "cannot be stored" in str(got[1])
    assert not list((tmp_path / "refused").rglob(f"{good[1].run_id}.parquet"))
    for n in (0, 2, 3):
        assert isinstance(got[n], jobs.RankResult) and got[n].run_id == good[n].run_id
        for table in job_layout.WRITTEN:
            a, b = pq.read_table(got[n].files[table]), pq.read_table(good[n].files[table])
            if table == "traces":
                a, b = a.drop_columns(["added_at"]), b.drop_columns(["added_at"])
            assert a.equals(b), table  # the same rows, in the same order


def test_runs_whose_staged_columns_cannot_be_joined_are_stored_one_by_one(tmp_path, monkeypatch):
    """Should the runs' staged tables not concatenate (an Arrow error), each run is committed alone."""
    import pyarrow as pa

    from profiler.storage import staging

    files = [tmp_path / "annotated.json", tmp_path / "bare.json"]
    files[0].write_bytes(_annotated())
    files[1].write_bytes(_bare())
    want = Store(tmp_path / "want.duckdb")
    ids = [want.ingest(f).run_id for f in files]

    original = staging.StagedBatch.__init__

    def init(self, runs, *, take=False):
        if len(runs) > 1:
            raise pa.ArrowInvalid("schemas differ")
        original(self, runs, take=take)
    monkeypatch.setattr(staging.StagedBatch, "__init__", init)
    store = Store(tmp_path / "store.duckdb")
    got = store.ingest_many([(f, None) for f in files])
    assert [r.run_id for r in got] == ids and not any(r.duplicate for r in got)
    assert _same_runs(store, want, ids) >= 2 * 5

