"""The whole trace on the timeline, against the raw JSON of the largest shared trace (a ResNet-50
training run, old Kineto format: 6 ProfilerSteps, 9,538 kernels, 42,438 ops), computed here
without the code under test: the trace's start and its steps' places, the events a whole-trace
view reads (every step's, only those in the window), and the level of detail (how many GPU
events the marks merge: shorter than a pixel, in runs of neighbouring pixel columns, per stream)."""
from __future__ import annotations

import collections
import gzip
import json
from decimal import Decimal

import pytest

from profiler.analysis.reads import timeline_queries as q
from profiler.analysis.reads.timeline_queries import TIMELINE_WIDTH_PX
from profiler.present import narrative
from profiler.storage.store import Store
from tests.conftest import HAVE_SHARED, SHARED_TRACES

RESNET = SHARED_TRACES / "kineto__tb_plugin__resnet50_num_workers_0__worker0.pt.trace.json.gz"
pytestmark = [pytest.mark.third_party,
              pytest.mark.skipif(not HAVE_SHARED, reason="needs the third-party traces")]
# the stored events (ops, API calls, GPU work), Kineto's new and old category names
DRAWN = {"cpu_op", "operator", "user_annotation", "gpu_user_annotation", "cuda_runtime", "runtime",
         "cuda_driver", "kernel", "memcpy", "gpu_memcpy", "memset", "gpu_memset"}
GPU = {"kernel", "memcpy", "gpu_memcpy", "memset", "gpu_memset"}


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("trace") / "store.duckdb")
    run = store.ingest(RESNET, source="uploaded").run_id
    with gzip.open(RESNET, "rt") as f:
        raw = json.load(f)
    events = [e for e in (raw["traceEvents"] if isinstance(raw, dict) else raw)
              if e.get("ph") == "X" and str(e.get("cat", "")).lower() in DRAWN]
    return store, run, events


def _ns(us) -> int:
    """µs (int, float or text) as exact ns: a float of 1.6e18 ns loses digits."""
    return int(Decimal(str(us)) * 1000)


def test_the_whole_trace_starts_at_its_first_event_and_marks_every_step(resnet):
    store, run, events = resnet
    origin = min(_ns(e["ts"]) for e in events)
    end = max(_ns(e["ts"]) + _ns(e.get("dur", 0)) for e in events)
    assert q.trace_extent_ns(store, [run]) == end - origin
    (panel,) = q.trace_panels(store, [run], (0, end - origin), True)
    steps = sorted((e["name"], (_ns(e["ts"]) - origin) / 1e3, (_ns(e["ts"]) + _ns(e["dur"]) - origin) / 1e3)
                   for e in events if e["name"].startswith("ProfilerStep#"))
    assert len(steps) == 6
    assert sorted(zip(panel.steps["name"], panel.steps["start_us"], panel.steps["end_us"])) == steps
    gpu = panel.marks[panel.marks["lane_group"] == 2]     # kernels, or kernels merged below a pixel
    inside = {name for name, s, e in steps for t in gpu["start_us"] if s <= t < e}
    assert len(inside) == 6, f"a whole-trace view draws the GPU work of every step, not only {inside}"


def test_a_zoomed_window_reads_only_its_own_events(resnet):
    store, run, events = resnet
    extent = q.trace_extent_ns(store, [run])
    window = (extent // 3, extent // 3 + extent // 50)
    (panel,) = q.trace_panels(store, [run], window, True)
    marks = panel.marks
    assert (marks["end_us"] > window[0] / 1e3).all() and (marks["start_us"] < window[1] / 1e3).all()
    assert panel.domain == (window[0] / 1e3, window[1] / 1e3)
    whole = q.trace_panels(store, [run], (0, extent), True)[0]
    assert sorted(panel.lanes["lane"]) == sorted(whole.lanes["lane"]), \
        "the lanes (and so the height) follow the trace, not the window"
    assert len(set(marks["lane"])) < len(whole.lanes), "the window has every lane: the check is idle"


def test_the_marks_merge_exactly_the_gpu_events_shorter_than_a_pixel(resnet):
    store, run, events = resnet
    origin = min(_ns(e["ts"]) for e in events)
    extent = q.trace_extent_ns(store, [run])
    bucket = extent // TIMELINE_WIDTH_PX
    marks = q.timeline_marks(store, run, origin, (0, extent), max_marks=10**6)
    gpu_marks = marks[marks["lane_group"] == 2]
    gpu = [e for e in events if str(e["cat"]).lower() in GPU]
    assert int(gpu_marks["events"].sum()) == len(gpu) == 9538 + 389
    per_bucket = collections.Counter(
        (e["args"].get("device"), e["args"].get("stream"), (_ns(e["ts"]) - origin) // bucket)
        for e in gpu if _ns(e["dur"]) < bucket)
    islands: list[int] = []       # events per run of neighbouring buckets, stream by stream
    last = None
    for (device, stream, b), n in sorted(per_bucket.items()):
        if last == (device, stream, b - 1):
            islands[-1] += n
        else:
            islands.append(n)
        last = (device, stream, b)
    merged = sum(n for n in islands if n > 1)
    groups = sum(1 for n in islands if n > 1)
    shown = gpu_marks[gpu_marks["kind"] == "merged"]
    assert (int(shown["events"].sum()), len(shown)) == (merged, groups)
    assert merged > 1000, "the check is idle: few GPU events were merged"
    caption = narrative.trace_caption(marks, None)
    total_merged = int(marks.loc[marks["kind"] == "merged", "events"].sum())
    assert f"{total_merged:,} shorter than a pixel are merged into" in caption
