"""Thread and stream names from the trace's metadata events label the timeline's lanes."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler.analysis.reads import run_queries, timeline_queries
from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES, real_traces, trace_params


def _meta(event: str, pid, tid, **args) -> dict:
    return {"ph": "M", "name": event, "pid": pid, "tid": tid, "args": args}  # no ts, as Chrome allows


KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
          "args": {"device": 0, "stream": 7, "correlation": 1}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 4,
          "dur": 3, "args": {"correlation": 1}}
OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 2, "dur": 8, "args": {}}


def _ingest(store: Store, events: list, tmp_path: Path, name: str = "t.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return store.ingest(path).run_id


def _lanes(store: Store, run_id: str) -> set[str]:
    return set(timeline_queries.timeline_marks(store, run_id, 0, (0, 100_000))["lane"])  # the first 100 µs


def test_names_label_lanes_and_the_last_name_wins(db_path, tmp_path):
    store = Store(db_path)
    run = _ingest(store, [
        _meta("thread_name", 10, 11, name="thread 11 (pt_main_thread)"),
        _meta("process_labels", 0, 0, labels="GPU 0"),
        _meta("thread_name", 0, 7, name="stream 7 "),
        OP, LAUNCH, KERNEL,
        _meta("thread_name", 10, 11, name="thread 11 (pt_autograd_0)"),  # a rename later in the file
    ], tmp_path)
    rows = store.query("SELECT kind, pid, coalesce(tid, '-') AS tid, name FROM lane_names "
                       "WHERE run_id = ? ORDER BY ALL", [run])
    assert rows.to_dict("records") == [
        {"kind": "process_labels", "pid": "0", "tid": "-", "name": "GPU 0"},
        {"kind": "thread", "pid": "0", "tid": "7", "name": "stream 7"},
        {"kind": "thread", "pid": "10", "tid": "11", "name": "thread 11 (pt_autograd_0)"},
    ]
    assert _lanes(store, run) == {"thread 11 (pt_autograd_0) · depth 0", "thread 11 (pt_autograd_0) · API",
                                  "GPU 0 · stream 7"}


def test_a_trace_without_names_keeps_its_ids(db_path, tmp_path):
    store = Store(db_path)
    run = _ingest(store, [OP, LAUNCH, KERNEL], tmp_path)
    assert store.query("SELECT count(*) AS n FROM lane_names")["n"][0] == 0
    assert _lanes(store, run) == {"thread 11 · depth 0", "thread 11 · API", "GPU 0 · stream 7"}


def test_custom_names_are_kept_as_data(db_path, tmp_path):
    """A name is text: markup in it is stored and shown as written, one name per lane."""
    store = Store(db_path)
    odd = "<b>dataloader</b> **1**"
    run = _ingest(store, [_meta("thread_name", 10, 11, name=odd), OP], tmp_path)
    assert _lanes(store, run) == {f"{odd} · depth 0"}


def test_deleting_a_run_deletes_its_names(db_path, tmp_path):
    from profiler.storage import catalog

    store = Store(db_path)
    run = _ingest(store, [_meta("thread_name", 10, 11, name="main"), OP], tmp_path)
    catalog.delete_runs(store, [run])
    assert store.query("SELECT count(*) AS n FROM lane_names")["n"][0] == 0


def _expected_thread_names(path: Path) -> dict[tuple[str, str], str]:
    """Independently: the last thread_name per (pid, tid), read with the json module."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(str(e["pid"]), str(e["tid"]))] = e["args"]["name"].strip()
    return names


SAMPLE = sorted((SAMPLES / "default").glob("*_warm.json.gz"))[0]


@pytest.mark.parametrize("path", [pytest.param(SAMPLE, id="sample")]
                         + trace_params(real_traces()))
def test_stored_names_equal_the_trace(path, db_path):
    if path is None:
        pytest.skip(f"no third-party traces in {SHARED_TRACES}")
    store = Store(db_path)
    run = store.ingest(path).run_id
    rows = store.query("SELECT pid, tid, name FROM lane_names WHERE run_id = ? AND kind = 'thread'", [run])
    assert {(r.pid, r.tid): r.name for r in rows.itertuples()} == _expected_thread_names(path)


@pytest.mark.third_party
def test_backward_thread_is_named_on_the_timeline(db_path):
    """ns_resolution names its second thread pt_main_thread, then pt_autograd_0."""
    path = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    store = Store(db_path)
    run = store.ingest(path).run_id
    bounds = run_queries.iteration_bounds(store, [run], 0)
    start, end = int(bounds["start_ns"][0]), int(bounds["end_ns"][0])
    lanes = set(timeline_queries.timeline_marks(store, run, start, (0, end - start))["lane"])
    assert "thread 1262 (pt_autograd_0) · depth 0" in lanes
    assert not any("pt_main_thread" in lane and "1262" in lane for lane in lanes)
