"""Graph mode on the GPU (issue 37): `capture --cuda-graph` writes, per warm run, a replay trace
(cudaGraphLaunch and its replayed kernels under the variant's label) and its capture-side trace
(launch calls recorded into the graph, with their ops and shapes, almost no kernel run), each
naming the other. Needs a CUDA GPU; no store here (the trace files themselves are read)."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.capture.recorder import capture
from profiler.capture.config import CaptureConfig

pytestmark = pytest.mark.gpu


def _events(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return doc, doc["traceEvents"]


@pytest.mark.parametrize("mode,seq,kv_len", [("prefill", (512,), None), ("decode", (1,), 2048)])
def test_graph_mode_writes_a_replay_and_its_capture_trace(tmp_path, mode, seq, kv_len):
    config = CaptureConfig(variants=("sdpa_flash", "naive"), seq_lens=seq, batch=4, heads=8, mode=mode,
                           kv_len=kv_len, device="cuda", cuda_graph=True, out_dir=tmp_path, isolate=False)
    outcomes = [o for o in capture(config) if o.path is not None]
    assert {o.variant for o in outcomes} == {"sdpa_flash", "naive"} and not any(o.cold for o in outcomes)
    for o in outcomes:
        replay, events = _events(o.path)
        meta = replay["attention_run"]
        assert meta["graph"] == "replay" and meta["graph_us_per_call"] > 0
        graph_launches = [e for e in events if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e["name"]]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        assert len(graph_launches) == config.active and kernels
        launched = {e["args"]["correlation"] for e in graph_launches}
        assert sum(k["args"].get("correlation") in launched for k in kernels) >= 0.9 * len(kernels)
        capture_doc, cap_events = _events(o.path.with_name(meta["capture_trace"]))
        assert capture_doc["attention_run"]["graph"] == "capture"
        assert capture_doc["attention_run"]["replay_trace"] == o.path.name
        names = [e["name"] for e in cap_events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
        assert any("BeginCapture" in n for n in names) and any("EndCapture" in n for n in names)
        assert sum("aunch" in n for n in names) >= len(kernels) // config.active
        # what the join reads: graph and node ids where this Kineto writes them (printed for the report)
        print(o.variant, mode, sorted({k for e in kernels for k in e["args"] if "graph" in k.lower()}))
