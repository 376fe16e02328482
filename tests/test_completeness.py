"""Issue 37, item 1: the completeness verdict (storage/sql/completeness.sql, analysis/reads/completeness.py).
Crafted damage of a real trace (the shared TraceLens Qwen H100 trace: 2 steps, 1,465 kernels):
10 % of its kernel events dropped, every event of one step dropped, one kernel made 1 s long,
shapes stripped; each is named with counts that a small script over the raw JSON (here) predicts.
The undamaged shared traces and shipped samples are complete and list only expected notes."""
from __future__ import annotations

import gzip
import json
import random
from decimal import Decimal
from pathlib import Path

import pytest

from profiler.analysis.reads import completeness
from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES, ingest_all

QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
HTA = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"   # V100, 5 steps
SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
pytestmark = pytest.mark.third_party
needs_qwen = pytest.mark.skipif(not QWEN.is_file() or not HTA.is_file(), reason="needs the shared traces")
EXPECTED_NOTES = {"carried_in", "no_launch_calls", "captured", "last_step_partial"}
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _dump(o) -> str:
    """JSON text with Decimals written as the numbers they were read as (no float in between)."""
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dump(v) for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(_dump(v) for v in o) + "]"
    return str(o) if isinstance(o, Decimal) else json.dumps(o)


def _load(path: Path = QWEN) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)


def _steps(events) -> list[tuple]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")


def _launches(events) -> dict:
    return {e["args"]["correlation"]: e for e in events
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}


def _verdict(tmp_path, data) -> dict:
    path = tmp_path / "damaged.json"
    path.write_text(_dump(data))
    store = Store(tmp_path / "s.duckdb")
    run_id = store.ingest(path).run_id
    return completeness.verdicts(store, [run_id])[run_id]


def _one(verdict, reason, iteration=None) -> dict:
    found = [i for i in verdict["damage"] + verdict["limits"] + verdict["notes"]
             if i["reason"] == reason and i["iteration"] == iteration]
    assert len(found) == 1, (reason, verdict)
    return found[0]


@needs_qwen
def test_ten_percent_of_kernels_dropped_is_named_with_its_count(tmp_path):
    data = _load()
    events = data["traceEvents"]
    calls = _launches(events)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    random.Random(37).shuffle(kernels)
    dropped = {id(e) for e in kernels[:len(kernels) // 10]}
    # predicted: dropped kernels whose launch call is in the trace and is a plain kernel launch
    want = sum(1 for e in kernels[:len(kernels) // 10]
               if (c := calls.get(e["args"].get("correlation"))) and "launch" in c["name"].lower()
               and "graph" not in c["name"].lower())
    launches = sum(1 for c in calls.values() if "launch" in c["name"].lower() and "graph" not in c["name"].lower())
    data["traceEvents"] = [e for e in events if id(e) not in dropped]
    v = _verdict(tmp_path, data)
    assert not v["complete"] and completeness.badge(v) == "incomplete: 1"
    item = _one(v, "launch_no_gpu")
    assert want > 50 and item["count"] == want and item["of"] == launches
    assert "have no GPU event" in item["text"] and f"{want:,} of {launches:,}" in item["text"]
    assert sum(i["count"] for s in v["steps"].values() for i in s if i["reason"] == "launch_no_gpu") == want


@needs_qwen
def test_every_event_of_one_step_dropped_names_that_step(tmp_path):
    data = _load(HTA)
    events = data["traceEvents"]
    lo, hi = _steps(events)[2]
    calls = _launches(events)
    gone = {c for c, e in calls.items() if lo <= e["ts"] < hi}
    data["traceEvents"] = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                           or "ts" not in e or not (lo <= e["ts"] < hi)
                           and not (e.get("cat") in GPU_CATS and e["args"].get("correlation") in gone)]
    v = _verdict(tmp_path, data)
    assert not v["complete"]
    assert _one(v, "step_no_gpu", 2)["text"] == "step 2: no GPU event while the other steps have some"
    assert [i["reason"] for i in v["steps"][2]] == ["step_no_gpu"], v["steps"]
    # step 1's kernels that ran in step 2's window (the CPU runs ahead) were dropped with it: step 1
    # is named for them, and is left with under half the GPU events of the median step
    ran_late = sum(1 for e in events if e.get("cat") in GPU_CATS and lo <= e["ts"] < hi
                   and (c := calls.get(e["args"].get("correlation"))) and c["ts"] < lo
                   and "launch" in c["name"].lower())
    assert ran_late > 100 and set(v["steps"]) == {1, 2}
    assert {i["reason"]: i["count"] for i in v["steps"][1]}["launch_no_gpu"] == ran_late
    assert {i["reason"] for i in v["steps"][1]} == {"launch_no_gpu", "step_sparse"}


@needs_qwen
def test_one_malformed_one_second_kernel_is_named(tmp_path):
    data = _load(HTA)
    events = data["traceEvents"]
    lo, hi = _steps(events)[1]
    calls = _launches(events)
    victim = next(e for e in events if e.get("cat") == "kernel"
                  and lo <= calls.get(e["args"].get("correlation"), {"ts": lo - 1})["ts"] < hi)
    victim["dur"] = Decimal(1_000_000)
    v = _verdict(tmp_path, data)
    item = _one(v, "step_one_event", 1)
    assert item["count"] == 1_000_000 and item["of"] == int(hi - lo)
    assert not v["complete"] and "malformed" in item["text"]


@needs_qwen
def test_shapes_stripped_is_a_limit_with_its_cost(tmp_path):
    data = _load()
    cpu_ops = 0
    for e in data["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            e.get("args", {}).pop(key, None)
        cpu_ops += e.get("cat") == "cpu_op" and e.get("ph") == "X"
    v = _verdict(tmp_path, data)
    item = _one(v, "shapes_off")
    assert item["of"] == cpu_ops and item["costs"] == "no FLOPs or bytes: shapes were not recorded"
    assert v["complete"] and completeness.badge(v) == "complete, limits"


def _undamaged() -> list[Path]:
    shared = sorted(SHARED_TRACES.glob("*.json.gz")) + sorted(SHARED_TRACES.glob("param__dlrm*.json"))[:2] \
        + sorted(SHARED_TRACES.glob("graphs/**/*.json.gz"))
    samples = sorted(SAMPLES.rglob("*.json.gz"))
    return shared + random.Random(37).sample(samples, min(25, len(samples)))


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="needs the shared traces")
def test_undamaged_traces_are_complete_with_only_expected_notes(tmp_path, capsys):
    store = Store(tmp_path / "s.duckdb")
    files = list(_undamaged())
    ids = {r: p.name for p, r in zip(files, ingest_all(store, files))}
    for run_id, v in completeness.verdicts(store, list(ids)).items():
        assert v["complete"] and v["damage"] == [] and v["steps"] == {}, (ids[run_id], v["damage"])
        assert {n["reason"] for n in v["notes"]} <= EXPECTED_NOTES, ids[run_id]
        assert {n["reason"] for n in v["limits"]} <= {"shapes_off", "memory_off", "graph_replayed"}, ids[run_id]
    assert main(["summary", "--db", str(store.path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(ids) and all(r["completeness"]["complete"] for r in rows)
