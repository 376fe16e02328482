"""Issue 37: a serving trace without ProfilerStep gets its steps from the serving engine's step
annotations (`execute_…_context_…(…)_generation_…(…)`, profiler/storage/sql/ingest/stage_iterations.sql),
ahead of the most repeated top-level annotation. Checked on a hand-written trace (three engine
steps, a more repeated other annotation, a kernel launched in each step) and on the shared MI300X
pairs, whose one step is the annotation's span read from the raw JSON here."""
from __future__ import annotations

import gzip
import json
from decimal import Decimal

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

STEPS = ["execute_16_context_1(sq16sk16sqsq256sqsk256)_generation_0(sq0sk0sqsq0sqsk0)",
         "execute_2_context_0(sq0sk0sqsq0sqsk0)_generation_2(sq2sk34sqsq2sqsk34)",
         "execute_2_context_0(sq0sk0sqsq0sqsk0)_generation_2(sq2sk36sqsq2sqsk36)"]


def _serving_trace() -> dict:
    events = []
    for i, name in enumerate(STEPS):
        t = 1000 + 100 * i
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": 80})
        for j in range(2):   # a more repeated annotation than the steps, at the top level too
            events.append({"ph": "X", "cat": "user_annotation", "name": "sample_tokens", "pid": 1, "tid": 2,
                           "ts": t + 10 + 30 * j, "dur": 5})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 20,
                       "args": {"External id": 10 + i}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 12, "dur": 4, "args": {"correlation": 100 + i, "External id": 10 + i}})
        events.append({"ph": "X", "cat": "kernel", "name": f"gemm_{i}", "pid": 0, "tid": 7, "ts": t + 20, "dur": 30,
                       "args": {"device": 0, "stream": 7, "correlation": 100 + i, "External id": 10 + i}})
    return {"traceEvents": events}


def test_serving_annotations_are_the_steps(tmp_path, capsys):
    path = tmp_path / "serving.json"
    path.write_text(json.dumps(_serving_trace()))
    store = Store(tmp_path / "s.duckdb")
    assert main(["ingest", str(path), "--db", str(store.path)]) == 0
    capsys.readouterr()
    its = store.query("SELECT iteration, name, start_ns, end_ns FROM iterations ORDER BY iteration")
    assert its["name"].tolist() == STEPS
    assert its["start_ns"].tolist() == [(1000 + 100 * i) * 1000 for i in range(3)]
    assert (its["end_ns"] - its["start_ns"]).tolist() == [80_000] * 3
    assert store.query("SELECT iteration FROM kernels ORDER BY ts_ns")["iteration"].tolist() == [0, 1, 2]


def test_without_serving_annotations_the_repeated_annotation_still_wins(tmp_path, capsys):
    trace = _serving_trace()
    for e in trace["traceEvents"]:
        if e["name"].startswith("execute_"):
            e["name"] = "engine_step"      # no batch in it: not a serving step annotation
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(trace))
    store = Store(tmp_path / "s.duckdb")
    assert main(["ingest", str(path), "--db", str(store.path)]) == 0
    capsys.readouterr()
    assert set(store.query("SELECT name FROM iterations")["name"]) == {"sample_tokens"}


GRAPHS = SHARED_TRACES / "graphs"
REPLAYS = {"sglang": GRAPHS / "sglang_decode/sglang_Qwen3-8B_decode.json.gz",
           "vllm": GRAPHS / "vllm_prefilldecode_piecewise/graph_execution.json.gz"}


@pytest.mark.third_party
@pytest.mark.skipif(not GRAPHS.is_dir(), reason="needs the shared graph pairs")
@pytest.mark.parametrize("pair", sorted(REPLAYS))
def test_a_joined_serving_pair_has_its_annotation_as_its_step(tmp_path, pair, capsys):
    """Joined with its capture (whose own ProfilerStep is not copied into the replay), the replay's
    one step is its engine step: the annotation's span as the raw JSON writes it."""
    from tests.test_graph_join import _joined

    events = json.loads(gzip.decompress(REPLAYS[pair].read_bytes()), parse_float=Decimal)["traceEvents"]
    (raw,) = [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name")).startswith("execute_")]
    assert not any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)
    store, run_id = _joined(tmp_path, pair, capsys)
    (row,) = store.query("SELECT name, start_ns, end_ns FROM iterations WHERE run_id = $r", {"r": run_id}).itertuples()
    assert row.name == raw["name"]
    assert row.end_ns - row.start_ns == int(raw["dur"] * 1000)
    assert not store.query("SELECT count(*) AS n FROM ops WHERE run_id = $r AND name LIKE 'ProfilerStep#%'",
                           {"r": run_id})["n"][0]
    assert store.query("SELECT count(*) - count(iteration) AS n FROM kernels WHERE run_id = $r", {"r": run_id})["n"][0] == 0
