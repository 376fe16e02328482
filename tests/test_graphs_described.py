"""Issue 37, item 2 (its first part): a graph capture trace ingested alone is described as a capture,
a replay trace says what its graphs replayed; on the shared MI300X pairs (SGLang decode, vLLM
piecewise), checked against counts taken from the raw JSON here."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from profiler.analysis.reads import completeness, graphs
from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

G = SHARED_TRACES / "graphs"
PAIRS = {  # replay, capture
    "sglang": (G / "sglang_decode/sglang_Qwen3-8B_decode.json.gz", G / "sglang_decode/capture/bs_32_rank0.json.gz"),
    "vllm": (G / "vllm_prefilldecode_piecewise/graph_execution.json.gz",
             next(iter(sorted((G / "vllm_prefilldecode_piecewise/capture").glob("*.json.gz"))), None)),
}
pytestmark = [pytest.mark.third_party, pytest.mark.skipif(not G.is_dir(), reason="needs the shared graph pairs")]
RUNTIME = ("cuda_runtime", "cuda_driver")


def _events(path):
    doc = json.load(gzip.open(path))
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def raw_capture(path) -> list[int]:
    """Kernel launch calls per captured graph, in order: between a thread's StreamBeginCapture and
    its next StreamEndCapture."""
    by_thread = defaultdict(list)
    for e in _events(path):
        if e.get("cat") in RUNTIME and e.get("ph") == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    graphs_ = []
    for calls in by_thread.values():
        open_ = None
        for e in sorted(calls, key=lambda e: e["ts"]):
            if "StreamBeginCapture" in e["name"]:
                open_ = [e["ts"], 0]
                graphs_.append(open_)
            elif "StreamEndCapture" in e["name"]:
                open_ = None
            elif open_ is not None and "launch" in e["name"].lower() and "graph" not in e["name"].lower():
                open_[1] += 1
    return [n for _, n in sorted(graphs_)]


def raw_replay(path) -> tuple[int, int]:
    """(graph launches, GPU events whose correlation is one's)."""
    events = _events(path)
    launched = {e["args"]["correlation"] for e in events if e.get("cat") in RUNTIME and "GraphLaunch" in e["name"]}
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return len(launched), sum(e["args"].get("correlation") in launched for e in gpu)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_capture_is_described_as_a_capture_and_a_replay_as_a_replay(tmp_path, pair, capsys):
    replay, capture = PAIRS[pair]
    store = Store(tmp_path / "s.duckdb")
    rid, cid = store.ingest(replay).run_id, store.ingest(capture).run_id
    found = graphs.describe(store, [rid, cid])
    per_graph = raw_capture(capture)
    c = found[cid]
    assert c["role"] == "capture" and c["graphs_captured"] == len(per_graph)
    assert c["captured_launches"] == sum(per_graph)
    assert (c["launches_per_graph_min"], c["launches_per_graph_max"]) == (min(per_graph), max(per_graph))
    assert c["text"].startswith(f"a graph capture: {len(per_graph):,} graph(s) captured")
    launches, replayed = raw_replay(replay)
    r = found[rid]
    assert r["role"] == "replay" and (r["graph_launches"], r["replayed_events"]) == (launches, replayed)
    assert replayed == sum(per_graph)   # what the capture recorded is what the replay ran, one for one
    verdict = completeness.verdicts(store, [rid, cid])
    (limit,) = [i for i in verdict[rid]["limits"] if i["reason"] == "graph_replayed"]
    assert limit["count"] == replayed and verdict[rid]["complete"]
    (note,) = [i for i in verdict[cid]["notes"] if i["reason"] == "captured"]
    assert note["count"] == sum(per_graph) and verdict[cid]["complete"]
    assert main(["summary", "--db", str(store.path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(cid))
    assert "graph capture" in line
