"""The Events page's lists (sql/kernel_instances.sql, sql/op_instances.sql) against the raw JSON
read by hand (tests/raw_trace.py), on an H200 sample and on a real trace of another model: the
longest kernel launch, its duration, the API call with its correlation id and the innermost CPU op
with that call's External id; the longest CPU op; every launch listed once. And the Timeline view
a row opens: the event's step, a window around it, and the link that picks it in the chart."""
from __future__ import annotations

import pytest

from profiler.analysis.reads import event_queries, timeline_queries
from profiler.present import event_rows, share, timeline_view
from profiler.storage.store import Store
from tests import raw_trace
from tests.conftest import HAVE_SHARED, SAMPLES, SHARED_TRACES

NAIVE = SAMPLES / "default" / "naive_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
TRACES = [NAIVE] + ([pytest.param(QWEN, marks=pytest.mark.third_party)] if HAVE_SHARED else [])


def _ns(us) -> int:
    """A JSON µs value as the store's integer ns (exact for the 3 decimals traces write)."""
    return int(round(float(us) * 1000))


def _raw(path):
    events = raw_trace.load(path)["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    return kernels, calls, ops


def _innermost(ops, external_id):
    """The CPU op carrying this External id that lies inside all others that do (the shortest)."""
    found = [o for o in ops if o.get("args", {}).get("External id") == external_id]
    return min(found, key=lambda o: (o["dur"], -o["ts"]))["name"] if found else None


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("events") / "store.duckdb")
    return store, {}


def _run(stored, path):
    store, ids = stored
    if path not in ids:
        ids[path] = store.ingest(path).run_id
    return store, ids[path]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:30])
def test_longest_kernel_and_what_launched_it(stored, path):
    store, run = _run(stored, path)
    kernels, calls, ops = _raw(path)
    rows = event_queries.kernel_instances(store, [run], limit=5)
    want = max(kernels, key=lambda k: k["dur"])
    top = rows.iloc[0]
    assert (top["name"], top["dur_ns"]) == (want["name"], _ns(want["dur"]))
    assert top["matching"] == len(kernels)
    call = calls.get(want["args"].get("correlation"))
    assert top["api"] == (call["name"] if call else None) or (call is None and top["api"] is None)
    ext = (call or want)["args"].get("External id")
    assert top["launch_op"] == _innermost(ops, ext)
    assert list(rows["dur_ns"]) == sorted(rows["dur_ns"], reverse=True)
    grid = want["args"].get("grid")
    if grid:
        assert top["grid"] == "×".join(map(str, grid))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:30])
def test_longest_cpu_op(stored, path):
    store, run = _run(stored, path)
    _, _, ops = _raw(path)
    rows = event_queries.op_instances(store, [run], limit=3)
    work = [o for o in ops if not o["name"].startswith("ProfilerStep#")]
    annotations = [e for e in raw_trace.load(path)["traceEvents"] if e.get("ph") == "X"
                   and e.get("cat") == "user_annotation" and not e["name"].startswith("ProfilerStep#")]
    want = max(work + annotations, key=lambda o: o["dur"])
    assert rows.iloc[0]["dur_ns"] == _ns(want["dur"]) and rows.iloc[0]["name"] == want["name"]
    assert rows.iloc[0]["matching"] == len(work) + len(annotations)


def test_search_matches_kernel_op_or_api(stored):
    store, run = _run(stored, NAIVE)
    kernels, _, _ = _raw(NAIVE)
    soft = event_queries.kernel_instances(store, [run], "SOFTMAX")
    assert len(soft) == sum("softmax" in k["name"].lower() for k in kernels) > 0
    by_op = event_queries.kernel_instances(store, [run], "aten::masked_fill")
    assert len(by_op) > 0 and set(by_op["launch_op"]) == {"aten::masked_fill_"}
    assert event_queries.kernel_instances(store, [run], "no such kernel").empty


def test_a_row_opens_the_timeline_at_its_event_with_the_event_picked(stored):
    store, run = _run(stored, NAIVE)
    rows = event_rows.event_table(event_queries.kernel_instances(store, [run]), {run: "naive"})
    top = rows.iloc[0]
    view = event_rows.timeline_view_of(top)
    assert view.runs == (run,) and view.iteration == top["step"]
    start, end = view.window_ns
    assert start <= top["start_in_step_ns"] and top["start_in_step_ns"] + top["dur_ns"] <= end
    assert share.decode(share.encode(view), "timeline") == view
    assert share.picked_event(view) == (run, int(top["external_id"]))
    panels = timeline_queries.timeline_panels(store, [run], view.iteration, view.window_ns, True)
    link = timeline_view.event_link(panels, *share.picked_event(view))
    assert link is not None
    spec = timeline_view.timeline_spec(panels, ["naive"], [""], True, picked=link)
    pick = next(p for p in spec["params"] if p["name"] == "pick")
    assert pick["value"] == [{"link": link}]
    drawn = [d for v in spec["vconcat"] for d in v["data"]["values"] if d["link"] == link]
    assert {d["kind"] for d in drawn} >= {"kernel", "op"}   # the kernel and the op that launched it
    assert any(d["name"] == top["name"] for d in drawn)


@pytest.mark.parametrize("text", ["nocolon", ":12", "run:x", "r u n:1"])
def test_a_malformed_event_is_refused(text):
    with pytest.raises(share.ShareError):
        share.picked_event(share.ViewState(page="timeline", filters=(("event", text),)))
