"""Every kind of bad input gets its own error naming the file, and leaves the store untouched."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler import errors
from profiler.storage.catalog import RUN_TABLES
from profiler.storage.store import Store
from tests.conftest import FIXTURES

TABLES = RUN_TABLES
GOOD = (FIXTURES / "tiny_naive.json").read_bytes()


def snapshot(store: Store) -> dict:
    with store.connect() as con:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}


def _one_run(path) -> None:
    Store(path).ingest(FIXTURES / "tiny_inplace.json")


@pytest.fixture
def store(db_path, template_store):
    """A store holding one good run (a copy of one ingested once per test process)."""
    template_store("tiny-inplace-uploaded", _one_run, db_path)
    return Store(db_path)


BAD = [
    ("empty.json", b"", errors.EmptyTraceError, "is empty"),
    ("blank.json", b"  \n\t ", errors.EmptyTraceError, "is empty"),
    ("notes.json", b"hello, I am not JSON", errors.NotJsonError, "not JSON"),
    ("cut.json", GOOD[: len(GOOD) // 2], errors.TruncatedTraceError, "truncated"),
    ("cut_array.json", b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}, {"ph": "X"',
     errors.TruncatedTraceError, "truncated"),
    ("garbage.json", b'{"traceEvents": [{"ph": "X"} oops ]}', errors.NotJsonError, "not valid JSON"),
    ("corrupt.json.gz", gzip.compress(GOOD)[:20] + b"\x00" * 50 + gzip.compress(GOOD)[70:],
     errors.CorruptGzipError, "gzip"),
    ("short.json.gz", gzip.compress(GOOD)[:-30], errors.CorruptGzipError, "truncated"),
    ("config.json", b'{"learning_rate": 0.1, "layers": [1, 2]}', errors.NotATraceError, "no traceEvents"),
    ("numbers.json", b"[1, 2, 3]", errors.NotATraceError, "no trace events"),
    ("scalar.json", b"42", errors.NotATraceError, "top level is a int"),
    ("dict_events.json", b'{"traceEvents": {"a": 1}}', errors.NotATraceError, "not a list"),
]


@pytest.mark.parametrize(("name", "data", "error", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_by_name_and_store_is_unchanged(store, name, data, error, message):
    before = snapshot(store)
    with pytest.raises(error, match=message) as info:
        store.ingest(data, name)
    assert info.value.name == name and str(info.value).startswith(f"{name}: ")
    assert snapshot(store) == before


def test_missing_file_is_a_trace_error(store, tmp_path):
    with pytest.raises(errors.TraceError, match="cannot be read"):
        store.ingest(tmp_path / "nope.json")


def test_size_cap_counts_decompressed_bytes_and_stops_gzip_bombs(store):
    before = snapshot(store)
    padded = GOOD.replace(b'"traceEvents": [', b'"traceEvents": [' + b" " * 3_000_000, 1)
    bomb = gzip.compress(padded)
    assert len(bomb) < 100_000
    with pytest.raises(errors.TraceTooLargeError, match="exceeds the 0.0 GiB limit"):
        store.ingest(bomb, "bomb.json.gz", max_bytes=1_000_000)
    assert snapshot(store) == before
    assert not store.ingest(bomb, "bomb.json.gz").duplicate  # under the default cap it is fine


def test_events_of_the_wrong_type_are_skipped_and_counted(store):
    events = [
        {"ph": "X", "cat": "kernel", "name": "good", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2},
        {"ph": "X", "cat": "kernel", "name": ["not", "a", "string"], "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "bad dur", "ts": 3, "dur": "long"},
        "a string where an event should be",
        7,
        {"ph": "X", "cat": "kernel", "name": "bad ts", "ts": "soon", "dur": 1},
    ]
    result = store.ingest(json.dumps({"traceEvents": events}).encode(), "mixed.json")
    assert (result.events, result.kernels) == (6, 1)
    with store.connect() as con:
        assert con.execute("SELECT skipped_events FROM traces WHERE run_id = ?",
                           [result.run_id]).fetchone() == (5,)
