"""The metrics layer (profiler/storage/sql/metrics.sql) on every real trace, against an independent
computation written here: the trace read with plain json, GPU intervals merged in Python.

For each iteration (ProfilerStep#N window; the whole trace when there is none) the test derives
from the raw events: GPU busy time (the union of the kernels, copies and sets launched in the
window, over all streams, clipped to it), the time only work launched earlier ran, idle time,
kernel time (the union of the window's own kernels), the launching threads' busy time (the union
of their CPU ops and API calls), the idle time split by what the host was doing (every launching
thread, annotations and collectives of any thread) and the verdict. The store must agree to 0.1 %.
"""
from __future__ import annotations

import bisect
import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest

from profiler.analysis.reads import run_queries
from tests.conftest import DEPTH_ONE_SAMPLES, SAMPLES, real_traces, trace_params

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
CPU_CATS = {"cpu_op", "operator"}  # recorded CPU work: ops, not user annotations (labels)
SAMPLE_TRACES = DEPTH_ONE_SAMPLES


def _ns(value) -> int:
    return int((Decimal(value) * 1000).to_integral_value())


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    events = data if isinstance(data, list) else data["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]


def _merged_length(intervals) -> int:
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _gaps(intervals, lo: int, hi: int) -> list[tuple[int, int]]:
    """(start, length) of the stretches of [lo, hi) that no interval covers."""
    gaps, reach = [], lo
    for start, end in sorted(intervals):
        if start > reach:
            gaps.append((reach, start - reach))
        reach = max(reach, end)
    if hi > reach:
        gaps.append((reach, hi - reach))
    return gaps


KINDS = ("sync", "collective", "input", "launch", "cpu", "annotation")   # who claims idle time first


def _host(events, apis, threads, cat) -> list[tuple[str, int, int]]:
    """(kind, start, end) of what the host did: API calls of every thread; CPU ops of the
    launching threads; collectives, DataLoader and other annotations of any thread."""
    out = []
    for e in apis:
        name = e["name"].lower()
        blocking_copy = "memcpy" in name and "async" not in name
        kind = "sync" if ("synchronize" in name or blocking_copy) else "launch" if "launch" in name else "cpu"
        out.append((kind, _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    for e in events:
        name, c = str(e.get("name", "")), cat(e)
        if c not in CPU_CATS | {"user_annotation"} or name.startswith("ProfilerStep#"):
            continue
        args = e.get("args") or {}
        if name.lower().startswith(("nccl:", "c10d::")) or name == "record_param_comms" or "Collective name" in args:
            kind = "collective"
        elif "dataloader" in name.lower():
            kind = "input"
        elif c in CPU_CATS:
            if (str(e.get("pid")), str(e.get("tid"))) not in threads:
                continue
            kind = "cpu"
        else:
            kind = "annotation"
        out.append((kind, _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    return out


def _by_kind(host) -> dict:
    """{kind: (starts, (start, end) pairs sorted by start, the longest one's length)}: each gap then
    looks only at the intervals that can reach it, not at every host interval."""
    out = {}
    for kind in KINDS:
        spans = sorted((s, e) for k, s, e in host if k == kind)
        out[kind] = ([s for s, _ in spans], spans, max((e - s for s, e in spans), default=0))
    return out


def _near(index, start: int, end: int) -> list[tuple[int, int]]:
    """The intervals of one kind that start before `end` and no earlier than `start` less the
    longest one (an interval starting earlier ends before `start`): a superset of those that meet
    [start, end]."""
    starts, spans, longest = index
    return spans[bisect.bisect_left(starts, start - longest):bisect.bisect_right(starts, end)]


def _idle_parts(gaps, host) -> dict:
    """Each gap's time to the first kind (KINDS order) the host was in, capped at what is left; a
    gap that opened while the host sat in a synchronize or copy call is all sync."""
    parts = dict.fromkeys((*KINDS, "unrecorded"), 0)
    kinds = _by_kind(host)
    for start, length in gaps:
        end, left = start + length, length
        opened_in_sync = any(s <= start <= e for s, e in _near(kinds["sync"], start, start))
        for kind in KINDS:
            t = _merged_length((max(s, start), min(e, end)) for s, e in _near(kinds[kind], start, end)
                               if s < end and e > start)
            t = length if kind == "sync" and opened_in_sync else t
            parts[kind] += min(t, left)
            left -= min(t, left)
        parts["unrecorded"] += left
    return parts


def independent(path: Path) -> dict:
    """Per-iteration figures and the verdict from the raw trace."""
    events = _events(path)
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731 (2020 traces capitalise)
    steps = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
                   if str(e.get("name", "")).startswith("ProfilerStep#") and cat(e) != "gpu_user_annotation")
    apis = [e for e in events if cat(e) in API_CATS]
    gpu = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), cat(e) == "kernel", (e.get("args") or {}).get("correlation"))
           for e in events if cat(e) in GPU_CATS]
    if not steps:  # the whole trace
        spans = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
                 if cat(e) in GPU_CATS | API_CATS | {"cpu_op", "user_annotation", "operator"}]
        steps = [(min(s for s, _ in spans), max(e for _, e in spans))]
    whole = len(steps) == 1 and not any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)
    launch_at: dict = {}
    for e in apis:
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None:
            launch_at[corr] = min(launch_at.get(corr, _ns(e["ts"])), _ns(e["ts"]))
    threads = {(str(e.get("pid")), str(e.get("tid"))) for e in apis if "launch" in e["name"].lower()}
    on_threads = lambda e: (str(e.get("pid")), str(e.get("tid"))) in threads  # noqa: E731
    records = bool(launch_at)  # GPU work with no launch in such a trace was launched before it began
    cpu = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events if on_threads(e) and (
        cat(e) in API_CATS or (cat(e) in CPU_CATS and not str(e["name"]).startswith("ProfilerStep#")))]
    host = _host(events, apis, threads, cat)
    capture = any("begincapture" in e["name"].lower() for e in apis)
    rows = []
    for lo, hi in steps:
        def own(s, corr):
            if whole:
                return True
            if corr in launch_at:
                return lo <= launch_at[corr] < hi
            return not records and lo <= s < hi
        clipped = [(max(s, lo), min(e, hi), kernel, own(s, corr), corr in launch_at or not records)
                   for s, e, kernel, corr in gpu if s < hi and e > lo]
        active = [(s, e) for s, e, *_ in clipped]
        mine = [(s, e, k) for s, e, k, o, _ in clipped if o]
        gaps = _gaps(active, lo, hi)
        rows.append({"wall": hi - lo, "active": _merged_length(active),
                     "attributed": _merged_length((s, e) for s, e, _, _, a in clipped if a),
                     "busy": _merged_length((s, e) for s, e, _ in mine),
                     "kernel": _merged_length((s, e) for s, e, k in mine if k),
                     "idle": sum(length for _, length in gaps),
                     "cpu": _merged_length((max(s, lo), min(e, hi)) for s, e in cpu if s < hi and e > lo),
                     **{f"idle_{k}": v for k, v in _idle_parts(gaps, host).items()}})
    wall, idle = sum(r["wall"] for r in rows), sum(r["idle"] for r in rows)
    totals = {k: sum(r[f"idle_{k}"] for r in rows) for k in (*KINDS, "unrecorded")}
    if not any(r["active"] for r in rows):
        bound = "none"
    elif capture:
        bound = "capture"
    elif wall - idle >= 0.85 * wall:  # the GPU ran (own or carried work) 85 % of the iteration
        bound = "gpu"
    elif totals["unrecorded"] >= 0.5 * idle:  # nothing recorded for most of it: no verdict
        bound = "unrecorded"
    else:  # the largest recorded part of the idle time (ties: the first in KINDS order)
        bound = max(KINDS, key=lambda k: (totals[k], -KINDS.index(k)))
    return {"iterations": rows, "bound": bound}


@pytest.fixture(scope="module")
def store(real_and_samples):
    """One store holding every real trace and every sample of SAMPLE_TRACES (a copy of one built
    once per test process, tests/conftest.py): the store, and {path: run id}."""
    db, ids = real_and_samples
    assert set(SAMPLE_TRACES) <= set(ids)
    return db, ids


def _check(store, path: Path) -> None:
    db, ids = store
    expected = independent(path)
    got = run_queries.iteration_metrics(db, [ids[path]])
    assert len(got) == len(expected["iterations"])
    for row, want in zip(got.itertuples(), expected["iterations"]):
        assert row.wall_ns == want["wall"]
        for column, key in (("gpu_busy_ns", "busy"), ("gpu_idle_ns", "idle"), ("kernel_ns", "kernel"),
                            ("cpu_busy_ns", "cpu"), *((f"idle_{k}_ns", f"idle_{k}") for k in (*KINDS, "unrecorded"))):
            assert getattr(row, column) == pytest.approx(want[key], rel=1e-3, abs=1), (row.iteration, column)
        assert row.carried_ns == pytest.approx(want["attributed"] - want["busy"], rel=1e-3, abs=1)
    run = run_queries.run_metrics(db, [ids[path]]).iloc[0]
    assert run["bound"] == expected["bound"]
    shares = ["gpu_busy_pct", "gpu_idle_pct", "carried_pct", "kernel_pct", "comm_pct",
              "exposed_copy_pct", "cpu_busy_pct"]
    assert all(0 <= run[c] <= 100 for c in shares), run[shares].to_dict()
    # the rest of the window ran only work with no launch call in the trace (unattributed)
    assert run["gpu_busy_pct"] + run["gpu_idle_pct"] + run["carried_pct"] <= 100 + 1e-9


@pytest.mark.third_party
@pytest.mark.parametrize("path", trace_params(real_traces()))
def test_real_trace_metrics_match_an_independent_count(store, path):
    _check(store, path)


@pytest.mark.parametrize("path", SAMPLE_TRACES, ids=lambda p: str(p.relative_to(SAMPLES))[:60])
def test_sample_metrics_match_an_independent_count(store, path):
    _check(store, path)


@pytest.mark.third_party
def test_ns_resolution_runs_ahead_and_is_gpu_bound(store):
    """HTA's ns_resolution trace: its GPU work per step is longer than the step, so most of each
    window runs work launched in an earlier one; the GPU is never starved."""
    db, ids = store
    (path,) = [p for p in ids if p.name.startswith("hta__ns_resolution")]
    run = run_queries.run_metrics(db, [ids[path]]).iloc[0]
    assert run["bound"] == "gpu" and run["carried_pct"] > 50 and run["gpu_idle_pct"] < 10
