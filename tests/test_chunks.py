"""One trace parsed in chunks by several workers gives exactly the rows of the file parsed whole:
every table the store keeps for a run, row for row, on every real trace; a cut point that falls
inside an event, a minified trace and a failing chunk all fall back to parsing the file whole."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import real_traces, trace_params
from profiler import errors
from profiler.parse import split
from profiler.storage import catalog, job_layout
from profiler.storage.jobs import chunks, job_ingest, jobs
from profiler.storage.store import Store

KEEP_ALL = ("stored_iteration_metrics",)  # beside catalog.RUN_TABLES: the metrics kept per run


def _table(con, table: str, run_id: str) -> list[tuple]:
    """Every row of `table` for one run, sorted, read on `con` (a store's cursor)."""
    drop = " EXCLUDE (added_at)" if table == "traces" else ""
    rows = con.execute(f"SELECT *{drop} FROM {table} WHERE run_id = ? ORDER BY ALL", [run_id]).fetchall()
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in row) for row in rows]


def _ingest_in_chunks(store: Store, path: Path, chunk_bytes: int, tmp: Path):
    """What a job does with a large file, in this process: plan, parse each chunk, assemble."""
    size = chunks.estimated_size(path)
    (tmp / "scratch").mkdir(exist_ok=True)
    fp = chunks.plan_file(path, chunks.parts(size, size, 1, chunk_bytes), tmp / "scratch")
    assert fp is not None, "the trace was not cut"
    base = str(tmp / "job")
    parts = [chunks.parse_chunk(fp, k, base, "key") for k in range(fp.plan.chunks)]
    assert chunks.usable(fp, parts), [str(p) for p in parts if not isinstance(p, chunks.ChunkResult)]
    summary, staging = chunks.load(fp, parts, base)
    chunks.discard(fp, base, "key")
    return fp, store.ingest_staged(summary, staging)


@pytest.mark.third_party
@pytest.mark.parametrize("path", trace_params(real_traces()))
def test_every_table_of_a_trace_parsed_in_chunks_equals_the_whole_file(tmp_path, path):
    path = Path(path)
    whole, split_store = Store(tmp_path / "whole.duckdb"), Store(tmp_path / "split.duckdb")
    want = whole.ingest(path)
    fp, got = _ingest_in_chunks(split_store, path, chunks.estimated_size(path) // 4, tmp_path)
    assert fp.plan.chunks >= 3
    assert (got.run_id, got.events, got.kernels, got.notes) == (want.run_id, want.events, want.kernels, want.notes)
    with split_store.connect() as split_con, whole.connect() as whole_con:
        for table in catalog.RUN_TABLES + KEEP_ALL:
            assert _table(split_con, table, got.run_id) == _table(whole_con, table, want.run_id), table
    assert list((tmp_path / "scratch").iterdir()) == []  # a gzipped trace's unpacked copy is removed


@pytest.mark.slow  # worker processes
@pytest.mark.third_party
@pytest.mark.parametrize("path", trace_params(real_traces()[:3]))
def test_a_job_of_one_file_split_across_worker_processes(tmp_path, monkeypatch, path):
    """Through the job path and real worker processes; the rank's tables equal a single upload's."""
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    store = Store(tmp_path / "store.duckdb")
    src = tmp_path / f"rank0.{Path(path).name}"
    src.write_bytes(Path(path).read_bytes())
    single = store.ingest(src)
    result = job_ingest.ingest_job(store, [src], "split", engine="processes", workers=2,
                             chunk_bytes=chunks.estimated_size(src) // 3)
    rank = result.ranks[0]
    assert rank.chunks >= 3 and rank.trace_id == single.run_id
    for table in job_layout.TABLES:
        exclude = "run_id, added_at, rank" if table == "traces" else "run_id"
        with store.connect(jobs=True) as con:
            rows = [con.execute(f"SELECT * EXCLUDE ({exclude}) FROM {table} WHERE run_id = ? ORDER BY ALL",
                                [rid]).fetchall()
                    for rid in (single.run_id, rank.run_id)]
        assert rows[0] == rows[1], table
    root = Path(job_layout.job_root(store))
    assert not (root / "chunks" / "job=split").exists()


# --- hand-written traces: where a cut point is not between two events ------------------------------

def _event(i: int, args: str = '"External id": 1') -> str:
    return (f'  {{\n    "ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": 1,\n'
            f'    "ts": {100 + 10 * i}, "dur": 5,\n    "args": {{\n      {args}\n    }}\n  }}')


NESTED = '"shapes": [\n      {\n        "a": 1\n      },\n      {\n        "b": 2\n      }\n    ]'


def _trace(events: list[str], after: str = ',\n  "traceName": "hand.json"\n') -> bytes:
    head = '{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n'
    return (head + '  "traceEvents": [\n' + ",\n".join(events) + "\n  ]" + after + "}\n").encode()


def test_a_cut_inside_an_event_fails_to_parse_and_the_file_is_parsed_whole(tmp_path, monkeypatch):
    """The events' args hold a list of objects written one per line, so `},` + newline + `{` also
    occurs inside an event: a chunk cut there does not parse, and the job parses the file whole."""
    path = tmp_path / "rank0.hand.json"
    path.write_bytes(_trace([_event(i, NESTED if i % 2 else '"External id": 1') for i in range(12)]))
    data = path.read_bytes()
    inside = data.index(b"},\n      {") + 1  # the comma between {"a": 1} and {"b": 2} of event 1
    between = data.index(b"},\n  {", inside) + 1  # the comma after event 1
    events_at = data.index(b"[\n  {") + 1
    run_id, size = chunks.file_hash(str(path))
    for cuts, ok in (((inside,), False), ((between,), True)):
        fp = chunks.FilePlan(str(path), split.Plan(str(path), events_at, cuts, len(data)), run_id, size)
        parts = [chunks.parse_chunk(fp, k, str(tmp_path / "job"), "key") for k in range(fp.plan.chunks)]
        assert chunks.usable(fp, parts) is ok, [str(p) for p in parts]
        chunks.discard(fp, str(tmp_path / "job"), "key")
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    store = Store(tmp_path / "store.duckdb")
    single = store.ingest(path)
    # cut every ~200 bytes: some targets find the nested `},` first; the job still gets the whole file's rows
    result = job_ingest.ingest_job(store, [path], "hand", engine="in-process", chunk_bytes=200)
    assert result.ranks[0].trace_id == single.run_id
    for table in ("ops", "traces"):
        with store.connect(jobs=True) as con:
            rows = [con.execute(f"SELECT * EXCLUDE (run_id{', added_at, rank' * (table == 'traces')}) FROM {table} "
                                f"WHERE run_id = ? ORDER BY ALL", [rid]).fetchall()
                    for rid in (single.run_id, result.ranks[0].run_id)]
        assert rows[0] == rows[1] and rows[0], table


def test_split_points_are_between_lines_and_a_minified_trace_is_not_cut(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(_trace([_event(i) for i in range(40)]))
    p = split.plan(path, 4)
    data = path.read_bytes()
    assert p is not None and p.chunks == 4
    assert all(data[c:c + 1] == b"," and data[c + 1:c + 2] == b"\n" for c in p.cuts)
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps(json.loads(data)))  # no newline anywhere
    assert split.plan(flat, 4) is None
    assert chunks.plan_file(flat, 4, tmp_path) is None


def test_header_after_the_events_and_a_bare_array_come_through_chunks(tmp_path):
    store_a, store_b = Store(tmp_path / "a.duckdb"), Store(tmp_path / "b.duckdb")
    for name, data in (("after.json", _trace([_event(i) for i in range(30)],
                                             ',\n  "deviceProperties": [\n    {\n      "id": 0, "name": "X"\n    },'
                                             '\n    {\n      "id": 1, "name": "Y"\n    }\n  ]\n')),
                       ("bare.json", ("[\n" + ",\n".join(_event(i) for i in range(30)) + "\n]\n").encode())):
        path = tmp_path / name
        path.write_bytes(data)
        want = store_a.ingest(path)
        fp, got = _ingest_in_chunks(store_b, path, 600, tmp_path)
        assert fp.plan.chunks >= 3 and got.run_id == want.run_id
        with store_b.connect() as con_b, store_a.connect() as con_a:
            for table in catalog.RUN_TABLES:
                assert _table(con_b, table, got.run_id) == _table(con_a, table, want.run_id), (name, table)


def test_a_bad_file_split_in_chunks_names_itself_as_when_parsed_whole(tmp_path, monkeypatch):
    """A broken event in the middle: its chunk fails, the file is parsed whole, and the job's error
    is the single upload's; nothing lands."""
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    path = tmp_path / "rank0.bad.json"
    events = [_event(i) for i in range(30)]
    events[17] = events[17].replace('"dur": 5', '"dur": 5,,')
    path.write_bytes(_trace(events))
    store = Store(tmp_path / "store.duckdb")
    with pytest.raises(errors.TraceError) as whole:
        store.ingest(path)
    with pytest.raises(jobs.JobError) as job:
        job_ingest.ingest_job(store, [path], "bad", engine="in-process", chunk_bytes=500)
    assert str(whole.value) in str(job.value)
    root = Path(job_layout.job_root(store))
    assert not root.exists() or [p for p in root.rglob("*") if p.is_file()] == []


def test_an_unreadable_or_gzipped_minified_file_is_not_cut(tmp_path):
    assert chunks.plan_file(tmp_path / "missing.json", 4, tmp_path) is None
    assert chunks.estimated_size(tmp_path / "missing.json") == 0
    flat = tmp_path / "flat.json.gz"
    flat.write_bytes(gzip.compress(json.dumps(json.loads(_trace([_event(i) for i in range(40)]))).encode()))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert chunks.plan_file(flat, 4, scratch) is None and list(scratch.iterdir()) == []


def test_timestamps_read_differently_by_chunks_fall_back(tmp_path):
    """Small float times first, epoch-microsecond floats later: a whole-file parse switches to
    reading times as text part-way; chunks that would not match that are refused."""
    events = [_event(i).replace(f'"ts": {100 + 10 * i}', f'"ts": {100 + 10 * i}.5') for i in range(10)]
    events += [_event(i).replace(f'"ts": {100 + 10 * i}', f'"ts": 1712186298{i:06d}.123') for i in range(10, 20)]
    path = tmp_path / "mixed.json"
    path.write_bytes(_trace(events))
    fp = chunks.plan_file(path, 4, tmp_path)
    assert fp is not None
    parts = [chunks.parse_chunk(fp, k, str(tmp_path / "job"), "key") for k in range(fp.plan.chunks)]
    assert all(isinstance(p, chunks.ChunkResult) for p in parts)
    assert not chunks.usable(fp, parts)
