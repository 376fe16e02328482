"""Memory: the [memory] events of a trace in the store, and what the memory queries and findings
make of them, on a hand-written trace, on our H200 samples and on a real third-party trace.
Expected values are computed here independently, from the JSON with plain Python."""
from __future__ import annotations

import gzip
import json
from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from profiler.analysis.findings import memory, timings
from profiler.parse import trace
from profiler.capture.samples import SAMPLES_DIR
from profiler.storage.staging import Staging
from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES, ingest_all

FIXTURE = Path(__file__).parent / "fixtures" / "memory_small.json"
QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _sample(variant: str, cold: bool = False) -> Path:
    (path,) = SAMPLES_DIR.glob(f"default/{variant}_b8_h16_s1024_d64_bf16_causal_{'cold' if cold else 'warm'}.json.gz")
    return path


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _gpu_memory(path: Path) -> list[dict]:
    """The [memory] events on the trace's CUDA device with the most of them, in file order."""
    events = [e["args"] for e in _events(path) if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
    device = Counter(a["Device Id"] for a in events).most_common(1)[0][0]
    return [a for a in events if a["Device Id"] == device]


@pytest.fixture
def small(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    return store, store.ingest(FIXTURE).run_id


def test_every_memory_event_is_stored_with_its_units(small):
    store, run = small
    rows = store.query("SELECT * FROM memory_events WHERE run_id = ? ORDER BY event_idx", [run])
    assert len(rows) == 7
    assert rows["change_bytes"].tolist() == [1000, 2000, 8, -1000, -2000, 500, -500]
    assert rows["total_allocated_bytes"].tolist() == [5000, 7000, 8, 6000, 4000, 4500, 4000]
    assert rows["device_type"].tolist() == [1, 1, 0, 1, 1, 1, 1]
    assert rows["device"].tolist() == [0, 0, -1, 0, 0, 0, 0]
    assert rows["addr"].tolist() == [10, 11, 99, 10, 11, 10, 10]
    assert rows["ts_ns"].tolist()[:2] == [13_000, 45_000]
    assert rows["iteration"].tolist() == [0, 0, 0, 0, 0, 1, 1]


def test_a_block_is_credited_to_the_op_that_asked_for_it_not_the_allocator_op(small):
    store, run = small
    rows = store.query("SELECT op_name, op_input_dims FROM memory_events WHERE run_id = ? ORDER BY event_idx", [run])
    assert rows["op_name"].tolist()[:2] == ["aten::bmm", "aten::_softmax"]  # not aten::empty_strided
    assert json.loads(rows["op_input_dims"][0]) == [[2, 4, 8], [2, 8, 4]]
    assert rows["op_name"].isna().tolist()[3:] == [True, True, True, True]  # outside every op


def test_peak_held_before_and_live_blocks_at_the_peak(small):
    store, run = small
    summary = memory.memory_summary(store, [run]).iloc[0]
    assert (summary["device_type"], summary["device"]) == (1, 0)     # the GPU, not the CPU event
    assert summary["peak_allocated_bytes"] == 7000 and summary["held_at_start_bytes"] == 4000
    assert summary["peak_reserved_bytes"] == 20000 and summary["events"] == 6
    live = memory.live_at_peak(store, run)
    assert live[["size_bytes", "op_name"]].values.tolist() == [[2000, "aten::_softmax"], [1000, "aten::bmm"]]
    peaks = memory.iteration_peaks(store, [run])
    assert peaks[["iteration", "peak_allocated_bytes", "start_allocated_bytes", "peak_above_start_bytes"]
                 ].values.tolist() == [[0, 7000, 4000, 3000], [1, 4500, 4000, 500]]


def test_the_timeline_starts_at_the_first_iteration(small):
    store, run = small
    timeline = memory.memory_timeline(store, [run])
    assert timeline["t_us"].tolist() == [13.0, 45.0, 70.0, 80.0, 110.0, 150.0]


def test_deleting_a_run_deletes_its_memory_events(small):
    from profiler.storage import catalog

    store, run = small
    catalog.delete_runs(store, [run])
    assert store.query("SELECT count(*) AS n FROM memory_events")["n"][0] == 0


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("memory") / "store.duckdb")
    ids = {v: store.ingest(_sample(v), source="captured").run_id for v in ("naive", "sdpa_flash", "sdpa_math")}
    ids["upload"] = store.ingest(FIXTURE.parent / "tiny_naive.json").run_id
    return store, ids


def test_sample_peaks_match_the_trace_json(samples):
    store, ids = samples
    summary = memory.memory_summary(store, [ids["naive"], ids["sdpa_flash"]]).set_index("run_id")
    for variant in ("naive", "sdpa_flash"):
        events = _gpu_memory(_sample(variant))
        assert summary.loc[ids[variant], "peak_allocated_bytes"] == max(a["Total Allocated"] for a in events)
        assert summary.loc[ids[variant], "events"] == len(events)
        first = events[0]
        assert summary.loc[ids[variant], "held_at_start_bytes"] == first["Total Allocated"] - first["Bytes"]


def test_naive_holds_at_least_eight_times_what_flash_holds_at_l1024(samples):
    store, ids = samples
    peaks = timings.run_timings(store, [ids["naive"], ids["sdpa_flash"]]).set_index("run_id")["peak_allocated_bytes"]
    assert peaks[ids["naive"]] >= 8 * peaks[ids["sdpa_flash"]]


def _live_at_peak_by_hand(path: Path) -> list[int]:
    """Sizes of blocks allocated during the recording and live at the first highest total."""
    events = _gpu_memory(path)
    peak = max(range(len(events)), key=lambda i: (events[i]["Total Allocated"], -i))
    live: dict[int, int] = {}
    for a in events[:peak + 1]:
        if a["Bytes"] > 0:
            live[a["Addr"]] = a["Bytes"]
        else:
            live.pop(a["Addr"], None)
    return sorted(live.values(), reverse=True)


def test_live_blocks_at_the_naive_peak_are_score_matrices_with_their_ops(samples):
    store, ids = samples
    live = memory.live_at_peak(store, ids["naive"], limit=50)
    assert live["size_bytes"].tolist() == _live_at_peak_by_hand(_sample("naive"))
    scores = live[live["size_bytes"] == 8 * 16 * 1024 * 1024 * 2]
    assert len(scores) == 2 and set(scores["op_name"]) == {"aten::masked_fill", "aten::_softmax"}
    assert json.loads(scores["op_input_dims"].iloc[0])[0] == [8, 16, 1024, 1024]


def test_the_memory_finding_names_peaks_scores_and_their_makers(samples):
    store, ids = samples
    (finding, missing) = memory.memory_findings(store, [ids["sdpa_flash"], ids["naive"], ids["upload"]])
    naive, flash = (max(a["Total Allocated"] for a in _gpu_memory(_sample(v))) for v in ("naive", "sdpa_flash"))
    assert finding.kind == "memory" and finding.text.startswith("naive")
    assert f"holds {naive / 2**20:,.1f} MiB at its peak" in finding.text
    assert f"{2 * 256:,.1f} MiB of it score matrices (8×16×1024×1024) made by" in finding.text
    assert f"holds {flash / 2**20:,.1f} MiB ({naive / flash:.1f}× less)" in finding.text
    assert missing.kind == "no_memory" and "profile_memory=True" in missing.text


def test_an_upload_without_memory_events_says_so(samples):
    store, ids = samples
    assert memory.runs_without_memory(store, [ids["naive"], ids["upload"]]) == [ids["upload"]]
    assert memory.memory_summary(store, [ids["upload"]]).empty


@pytest.mark.third_party
def test_a_real_third_party_trace_with_memory_events(tmp_path):
    events = _gpu_memory(QWEN)
    store = Store(tmp_path / "store.duckdb")
    run = store.ingest(QWEN).run_id
    summary = memory.memory_summary(store, [run]).iloc[0]
    assert summary["peak_allocated_bytes"] == max(a["Total Allocated"] for a in events)
    assert summary["events"] == len(events)
    assert memory.live_at_peak(store, run, limit=10_000)["size_bytes"].tolist() == _live_at_peak_by_hand(QWEN)


def _makers_by_hand(path: Path) -> dict[int, int | None]:
    """event_idx -> op_id of each [memory] event's maker, from the staged rows with plain Python:
    of the cpu_ops on the event's (pid, tid) whose [ts_ns, ts_ns + dur_ns] holds it, other than
    those that only allocate or copy (SQL LIKE 'aten::empty%', 'aten::new_empty%': '_' is any one
    character; resize_, clone, contiguous), the deepest; of two equally deep, the first to start."""
    staging = Staging()
    for batch in trace.TraceReader(path, path.name).batches():
        staging.add(batch)
    staging.finish()
    ops = staging.tables["ops"].select(["op_id", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "depth"]).to_pylist()
    events = staging.tables["memory"].select(["event_idx", "pid", "tid", "ts_ns"]).to_pylist()
    lanes: dict[tuple, list[dict]] = {}
    for o in sorted(ops, key=lambda o: o["ts_ns"]):
        name = o["name"]
        if o["cat"] == "cpu_op" and name is not None and None not in (o["pid"], o["tid"]) and not (
                fnmatchcase(name, "aten::empty*") or fnmatchcase(name, "aten::new?empty*")
                or name in ("aten::resize_", "aten::clone", "aten::contiguous")):
            lanes.setdefault((o["pid"], o["tid"]), []).append(o)
    makers: dict[int, int | None] = {e["event_idx"]: None for e in events}
    for e in events:
        e["lane"] = (e["pid"], e["tid"])
    for key, lane in lanes.items():  # sweep each thread in time, holding the ops started and not yet ended
        i, open_ops = 0, []
        for e in sorted((e for e in events if e["lane"] == key), key=lambda e: e["ts_ns"]):
            while i < len(lane) and lane[i]["ts_ns"] <= e["ts_ns"]:
                open_ops.append(lane[i])
                i += 1
            open_ops = [o for o in open_ops if o["ts_ns"] + o["dur_ns"] >= e["ts_ns"]]
            best = max(open_ops, key=lambda o: (o["depth"], -o["ts_ns"]), default=None)
            makers[e["event_idx"]] = best and best["op_id"]
    return makers


# the Qwen upload is the one third-party trace with [memory] events: skipped without those traces
MEMORY_TRACES = [pytest.param(p, id=p.name) for p in (FIXTURE, *sorted(SAMPLES.glob("*/*.json.gz")))] + [
    pytest.param(QWEN, id=QWEN.name, marks=pytest.mark.third_party)]


@pytest.fixture(scope="module")
def makers_store(tmp_path_factory) -> tuple[Store, dict[Path, str]]:
    """Every trace of MEMORY_TRACES that is here, stored in one batch (`ingest_all`: the same rows
    as one ingest per file, tests/test_samples.py); {path: run id}."""
    store = Store(tmp_path_factory.mktemp("makers") / "store.duckdb")
    paths = [p.values[0] for p in MEMORY_TRACES if p.values[0].is_file()]
    return store, dict(zip(paths, ingest_all(store, paths)))


@pytest.mark.parametrize("path", MEMORY_TRACES)
def test_each_memory_event_is_credited_to_the_innermost_op_holding_it(makers_store, path):
    store, runs = makers_store
    rows = store.query("SELECT event_idx, coalesce(op_id, -1) AS op_id FROM memory_events WHERE run_id = ?",
                       [runs[path]])
    stored = {int(i): (None if o < 0 else int(o)) for i, o in zip(rows["event_idx"], rows["op_id"])}
    assert stored == _makers_by_hand(path)
