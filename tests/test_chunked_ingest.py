"""A large trace ingested with several worker processes (profiler/storage/jobs/chunked_ingest.py) stores
exactly the rows of the file ingested whole, through `Store.ingest` and the `ingest` command; a
file that cannot be cut, a broken one, and one already stored take the whole-file path."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.storage import catalog
from profiler.storage.jobs import chunked_ingest, chunks
from bench import make_stack_trace
from profiler.storage.store import Store
from tests.test_chunks import KEEP_ALL, _table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def stack_trace(tmp_path_factory) -> Path:
    """A with_stack-shaped trace of ~3 MB (python functions, flows, runtime calls, ops, kernels)."""
    path = tmp_path_factory.mktemp("stack") / "stack.json"
    make_stack_trace.make_stack_trace(path, 3_000_000, units_per_step=50)
    return path


def test_a_file_parsed_by_two_processes_stores_the_rows_of_the_whole_file(tmp_path, stack_trace):
    whole, split = Store(tmp_path / "whole.duckdb"), Store(tmp_path / "split.duckdb")
    want = whole.ingest(stack_trace)
    fractions: list[float] = []
    got = chunked_ingest.ingest(split, stack_trace, 2, chunk_bytes=1 << 20, progress=fractions.append)
    assert got is not None, "the file was parsed whole"
    assert (got.run_id, got.events, got.kernels, got.notes, got.duplicate) == \
        (want.run_id, want.events, want.kernels, want.notes, False)
    assert want.chunks == 0 and got.chunks >= 3
    with split.connect() as split_con, whole.connect() as whole_con:
        for table in catalog.RUN_TABLES + KEEP_ALL:
            assert _table(split_con, table, got.run_id) == _table(whole_con, table, want.run_id), table
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) >= 3


def test_small_gzipped_or_single_worker_files_take_the_whole_file_path(tmp_path, stack_trace):
    store = Store(tmp_path / "s.duckdb")
    assert chunked_ingest.ingest(store, stack_trace, 2) is None  # 3 MB: below MIN_BYTES
    assert chunked_ingest.ingest(store, stack_trace, 1, chunk_bytes=1 << 20) is None
    zipped = tmp_path / "stack.json.gz"
    zipped.write_bytes(gzip.compress(stack_trace.read_bytes()))
    assert chunked_ingest.ingest(store, zipped, 2, chunk_bytes=1 << 20) is None
    first = store.ingest(stack_trace)
    again = chunked_ingest.ingest(store, stack_trace, 2, chunk_bytes=1 << 20)  # already stored
    assert again is not None and again.duplicate and again.run_id == first.run_id
    assert again.events == first.events and again.chunks >= 3


def test_a_truncated_file_fails_as_a_single_upload_does_and_stores_nothing(tmp_path, stack_trace):
    broken = tmp_path / "broken.json"
    data = stack_trace.read_bytes()
    broken.write_bytes(data[: len(data) * 2 // 3])
    store = Store(tmp_path / "s.duckdb")
    assert chunked_ingest.ingest(store, broken, 2, chunk_bytes=1 << 20) is None
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0


@pytest.mark.slow  # a subprocess
def test_the_ingest_command_uses_worker_processes_for_a_large_file(tmp_path, monkeypatch, stack_trace):
    """Through the command line, with the size threshold lowered so that 3 MB counts as large."""
    db = tmp_path / "cli.duckdb"
    code = ("import sys, runpy; from profiler.storage.jobs import chunked_ingest, chunks; "
            "chunked_ingest.MIN_BYTES = chunks.MIN_SPLIT_BYTES = chunks.MIN_CHUNK_BYTES = 1 << 20; "
            "sys.argv = ['profiler', 'ingest', sys.argv[1], '--db', sys.argv[2], '--workers', '2']; "
            "runpy.run_module('profiler', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code, str(stack_trace), str(db)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    whole = Store(tmp_path / "whole.duckdb")
    want = whole.ingest(stack_trace)
    assert f"{want.run_id}  ingested" in out.stdout and "chunks on 2 processes" in out.stdout, out.stdout
    stored = Store(db)
    with stored.connect() as stored_con, whole.connect() as whole_con:
        for table in catalog.RUN_TABLES + KEEP_ALL:
            assert _table(stored_con, table, want.run_id) == _table(whole_con, table, want.run_id), table


def test_a_file_is_parsed_whole_by_default_on_one_core(monkeypatch):
    monkeypatch.setattr(chunked_ingest.os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert chunked_ingest.workers_default() == 1
    monkeypatch.setattr(chunked_ingest.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert chunked_ingest.workers_default() == 2
    monkeypatch.setattr(chunked_ingest.os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    assert chunked_ingest.workers_default() == 16


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_left_to_the_whole_file_path_without_opening_it(tmp_path):
    """Opening a FIFO waits for a writer: the chunked path must not, whatever the workers (the
    whole-file path then refuses it at once, tests/test_security_slow.py)."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    assert chunks.estimated_size(fifo) == 0
    store = Store(tmp_path / "s.duckdb")
    assert chunked_ingest.ingest(store, fifo, 2) is None
    assert chunked_ingest.ingest(store, fifo, 2, chunk_bytes=1 << 20) is None
