"""The reader decodes each piece of a trace by category first (`columns.by_category`): events of
categories the store never keeps are read no further. That may only change the time, never the
result: the rows, counts and notes equal those of decoding every event in full, however the file
is cut into pieces, on real traces and on crafted ones with events of other categories, events
without a category and events of the wrong types."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler.parse import checks, columns, source, trace
from tests import raw_trace
from tests.conftest import real_traces, trace_params

SAMPLES = sorted((Path(__file__).parent.parent / "data" / "samples" / "default").glob("*_warm.json.gz"))[:4]


def _read(src, **kwargs) -> tuple[dict, trace.TraceSummary]:
    reader = trace.TraceReader(src, "t.json", **kwargs)
    rows: dict[str, dict[str, list]] = {}
    for batch in reader.batches():
        for table, cols in batch.items():
            for column, values in cols.items():
                rows.setdefault(table, {}).setdefault(column, []).extend(values)
    assert reader.summary is not None
    return rows, reader.summary


def _in_full(monkeypatch) -> None:
    """Every piece decoded as `Event`s first, as before the category decoders."""
    decode = checks.decode_with
    monkeypatch.setattr(checks, "decode_with", lambda data, fast, many, one, first=True:
                        decode(data, fast, many, one, False))


def _both(monkeypatch, src, **kwargs):
    fast = _read(src, **kwargs)
    with monkeypatch.context() as m:
        _in_full(m)
        full = _read(src, **kwargs)
    return fast, full


@pytest.mark.parametrize("path", trace_params(real_traces() + SAMPLES))
def test_reading_by_category_gives_the_rows_of_reading_every_event(monkeypatch, path):
    (rows, summary), (rows_full, summary_full) = _both(monkeypatch, path)
    assert rows == rows_full
    assert (summary.events, summary.skipped, summary.notes) == \
        (summary_full.events, summary_full.skipped, summary_full.notes)
    # and against the raw file: every complete kernel event is a kernel row
    top = raw_trace.load(path)
    events = top["traceEvents"] if isinstance(top, dict) else top
    kernels = sum(e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel") for e in events)
    assert len(rows.get("kernels", {}).get("name", [])) == kernels
    assert summary.events == len(events)


def _crafted() -> tuple[bytes, int, int]:
    """A trace of 6,000 rounds of: a kernel, a Python frame, a flow, an event of a category the
    reader does not know, a metadata event without a category; every 500th round also a Python
    frame and a kernel of the wrong types. Returns the text, the rounds, and the bad kernels."""
    events = []
    for i in range(6000):
        events += [
            {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1733000000000000.5 + i,
             "dur": 1.25, "args": {"device": 0, "stream": 7, "correlation": i, "grid": [1, 2, 3]}},
            {"ph": "X", "cat": "python_function", "name": "model.py(12): forward" * 8, "pid": 1, "tid": 1,
             "ts": 1733000000000000.25 + i, "dur": 3.0, "args": {"Python id": i}},
            {"ph": "s", "cat": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": 1733000000000000.0 + i},
            {"ph": "X", "cat": "some_new_category", "name": "x", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": i % 5, "args": {"name": f"thread {i % 5}"}},
        ]
        if i % 500 == 0:
            events.append({"ph": "X", "cat": "python_function", "name": 5, "pid": "x", "ts": "soon"})
            events.append({"ph": "X", "cat": "kernel", "name": ["not", "text"], "pid": 0, "tid": 7,
                           "ts": 1733000000000000.0, "dur": 1.0})
    body = ",\n".join(json.dumps(e) for e in events)
    return ('{"traceEvents": [\n' + body + '\n]}').encode(), 6000, 12


@pytest.mark.parametrize("piece", [1 << 12, 1 << 16, 1 << 20])
def test_other_categories_and_bad_events_are_read_alike_however_the_file_is_cut(monkeypatch, piece):
    monkeypatch.setattr(source, "CHUNK_BYTES", piece)
    monkeypatch.setattr(trace, "CHUNK_BYTES", piece)
    data, rounds, bad_kernels = _crafted()
    (rows, summary), (rows_full, summary_full) = _both(monkeypatch, data)
    assert rows == rows_full
    assert (summary.events, summary.skipped, summary.notes) == \
        (summary_full.events, summary_full.skipped, summary_full.notes)
    # a Python frame of the wrong types is skipped unread, like every Python frame: only the bad
    # kernels count as skipped
    assert summary.skipped == bad_kernels
    assert rows["kernels"]["name"] == [f"k{i}" for i in range(rounds)]
    assert rows["kernels"]["ts_ns"][:2] == [1733000000000000500, 1733000000000001500]  # exact digits
    assert len(rows["lane_names"]["name"]) == rounds
    assert "ops" not in rows


def test_python_frames_are_read_in_full_when_kept(monkeypatch):
    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(trace, "CHUNK_BYTES", 1 << 16)
    data, rounds, bad_kernels = _crafted()
    (rows, summary), (rows_full, _) = _both(monkeypatch, gzip.compress(data), keep_python=True)
    assert rows == rows_full
    assert rows["ops"]["name"] == ["model.py(12): forward" * 8] * rounds
    assert summary.skipped == bad_kernels + rounds // 500  # now the bad frames count too


def test_categories_skipped_and_read_do_not_overlap():
    for keep_python in (False, True):
        skipped = columns.skipped_categories(keep_python)
        assert not skipped & set(columns.CATEGORY_TABLE)
        assert ("python_function" in skipped) is not keep_python


def test_timestamps_read_many_at_once_equal_those_read_one_by_one():
    """`columns.timestamps` reads Kineto's 'digits.ddd' texts with numpy; any other text, and any
    batch that mixes widths, is read one by one (`to_ns`): the same integers either way."""
    import random

    import msgspec

    rng = random.Random(7)
    shapes = ["1733000000000999.000", "0001.500", "12.5", "-1.000", "9999999999999999.999",
              "9223372036854775.807", "9223372036854775.808", "1e3", "17.0000", "1.000"]
    for _ in range(300):
        width = rng.randint(1, 17)
        texts = [f"{rng.randrange(10 ** width):0{width}d}.{rng.randrange(1000):03d}" for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.3:
            texts[rng.randrange(len(texts))] = rng.choice(shapes)
        events = [columns.ExactEvent(ts=msgspec.Raw(t.encode())) for t in texts]
        assert columns.timestamps(events, True) == [columns.to_ns(msgspec.Raw(t.encode())) for t in texts]
    assert columns.kineto_ns([msgspec.Raw(b"1733000000000999.000")] * 3) == [1733000000000999000] * 3
