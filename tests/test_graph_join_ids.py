"""Issue 37: a graph replay joined by Kineto's graph and node ids ahead of the order match
(profiler/parse/graph_join.py). CUDA 12+ Kineto writes `"graph id"` and `"graph node id"` on each
replayed kernel, copy and set (libkineto's `getGraphNodeMetadata`); no real trace here carries
them (the H100 pairs in tests/fixtures/cuda_graphs/ were written by a Kineto that does not), so
`with_ids` below writes them into a real replay the way CUDA numbers a graph's nodes: in capture
order, which on these one-stream replays is start order. Then two replayed events of two ops trade start
times, as nodes on two streams may: the id join still gives each event its captured op, the order
match does not; where one event lacks its id the join falls back to the order match."""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

from profiler.parse import graph_join

PAIR = Path(__file__).resolve().parent / "fixtures" / "cuda_graphs" / "prefill"
REPLAY = PAIR / "naive_b8_h16_s1024_d64_bf16_causal_warm_20261205T140538Z.json.gz"
CAPTURE = PAIR / "naive_b8_h16_s1024_d64_bf16_causal_warm_20261205T140538Z.capture.json.gz"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def _launched(events: list[dict]) -> dict[int, list[dict]]:
    """{graph launch correlation: its replayed GPU events in start order}."""
    launches = {e["args"]["correlation"] for e in events if "GraphLaunch" in e.get("name", "")}
    out: dict[int, list[dict]] = {c: [] for c in launches}
    for e in events:
        if e.get("cat") in GPU and e.get("args", {}).get("correlation") in out:
            out[e["args"]["correlation"]].append(e)
    return {c: sorted(v, key=lambda e: e["ts"]) for c, v in out.items()}


def tagged(doc: dict) -> dict:
    """The replay with each replayed event tagged by its launch and place in start order (read back
    after the join, whatever the order the join took)."""
    doc = copy.deepcopy(doc)
    for corr, ran in _launched(doc["traceEvents"]).items():
        for i, e in enumerate(ran):
            e["args"]["test tag"] = f"{corr}/{i}"
    return doc


def with_ids(doc: dict) -> dict:
    """The replay with a graph id and node ids written on its replayed events (test helper)."""
    doc = copy.deepcopy(doc)
    for ran in _launched(doc["traceEvents"]).values():
        for i, e in enumerate(ran):
            e["args"]["graph id"], e["args"]["graph node id"] = 3, 1000 + i
    return doc


TRADED = (1, 2)   # the score GEMM and the scaling kernel after it: two ops


def trade(doc: dict) -> dict:
    """Two replayed events of each launch (`TRADED`, places in start order) trade start times."""
    doc = copy.deepcopy(doc)
    for ran in _launched(doc["traceEvents"]).values():
        a, b = (ran[i] for i in TRADED)
        a["ts"], b["ts"] = b["ts"], a["ts"]
    return doc


def _owners(doc: dict) -> tuple[dict[str, str], graph_join.JoinResult]:
    """{an event's `tagged` tag: the CPU op it was given} of a joined replay, read back from the
    joined JSON."""
    got = graph_join.join(json.dumps(doc).encode(), gzip.decompress(CAPTURE.read_bytes()), "replay", "capture")
    joined = json.loads(got.trace)["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in joined
           if e.get("cat") == "cpu_op" and isinstance(e.get("args", {}).get("External id"), int)}
    owners = {e["args"]["test tag"]: ops.get(e["args"].get("External id"))
              for ran in _launched(joined).values() for e in ran}
    return owners, got


def test_node_ids_join_ahead_of_the_order_and_survive_reordered_streams():
    raw = tagged(json.loads(gzip.decompress(REPLAY.read_bytes())))
    baseline, plain = _owners(with_ids(raw))        # ids and start order agree
    assert plain.matched == plain.replayed == plain.by_node_id > 0
    assert "by graph node id" in plain.notes()[0]
    assert all(baseline.values())
    launches = _launched(raw["traceEvents"])
    assert all(len({baseline[f"{c}/{i}"] for i in TRADED}) == 2 for c in launches)   # two different ops
    # the ids' own order wins over start order
    traded, got = _owners(trade(with_ids(raw)))
    assert got.by_node_id == got.matched == got.replayed
    assert traded == baseline
    # without ids the traded pair is given each other's ops
    no_ids, order = _owners(trade(raw))
    assert order.by_node_id == 0 and "by graph node id" not in order.notes()[0]
    moved = {k for k in baseline if no_ids[k] != baseline[k]}
    assert moved == {f"{c}/{i}" for c in launches for i in TRADED}, moved


def test_an_event_without_its_node_id_falls_back_to_the_order_match():
    raw = tagged(json.loads(gzip.decompress(REPLAY.read_bytes())))
    doc = with_ids(raw)
    first = next(iter(_launched(doc["traceEvents"]).values()))[0]
    del first["args"]["graph node id"]
    _, got = _owners(doc)
    launches = len(_launched(raw["traceEvents"]))
    per = got.replayed // launches
    assert got.matched == got.replayed and got.by_node_id == got.replayed - per   # one launch by order
    assert graph_join.node_ids([first]) is None
