"""A graph replay trace joined with its capture trace (`ingest REPLAY --capture CAPTURE`, issue 37).

A replay trace holds `cudaGraphLaunch`/`hipGraphLaunch` and the kernels it replayed, with no op or
shapes; the capture trace holds the launch calls recorded into each graph (between a thread's
`…StreamBeginCapture` and `…StreamEndCapture`) and the ops, with shapes, that made them. The join:
1. each graph launch's replayed GPU events (their correlation is the launch's), in start order, or,
   where every one carries Kineto's `graph id` and `graph node id` (CUDA 12+ Kineto writes them on
   replayed kernels, copies and sets; `GRAPH_ID`, `NODE_ID`), in node order: a graph's nodes are
   numbered as they were captured, so node order is capture order even where the replay ran
   nodes on several streams at once and start order is not;
2. the captured graph it replays: the one whose launches, in order, best match those events by
   kernel name (ROCm writes the kernel's name on its launch call, `args.kernel`; where a launch
   has none, by order alone), ties to the graph of the same size;
3. events and launches aligned: by node id (the i-th node of the graph, the i-th captured launch)
   where the ids are there and the counts agree; else in order by name (difflib's longest
   matching blocks), tolerating a few unmatched on either side;
4. for each matched event, the capture's ops that enclosed its launch (outermost first, with
   their args: shapes, types, concrete inputs; not the capture's `ProfilerStep#N`, whose copies
   would cut the replay into one step per replayed call) are written into the replay inside its graph
   launch's span, on the launching thread, under fresh External ids, and the event takes the
   innermost one's External id; the graph launch's own External id is dropped (the kernels belong
   to the captured ops, not to the replay call). Consecutive events that the same captured call
   launched (an attention op's main and reduce kernels) share one copy of its ops, stretched over
   their slots: one call with its kernels, as in the capture, not one call per kernel.
The result is a trace like any other (its own run id); the counts say how many replayed events
were matched and how many were not. Stdlib only; numbers keep their written digits (Decimal).
"""
from __future__ import annotations

import difflib
import json
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from profiler import errors

RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
GPU = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
OPS = ("cpu_op", "user_annotation", "Operator")
GRAPH_ID, NODE_ID = "graph id", "graph node id"   # Kineto's args on a replayed GPU event (CUDA 12+)
CAPTURE_STEP = "ProfilerStep#"   # the capture's profiler step: not copied (the replay's steps are its own)


@dataclass
class JoinResult:
    trace: bytes            # the joined trace (plain JSON)
    graph_launches: int
    replayed: int           # GPU events replayed by them
    matched: int            # of those, matched to a captured launch (and given its ops)
    replayed_us: float
    matched_us: float
    by_node_id: int = 0     # of the matched, those matched by graph node id (the rest by order)

    def notes(self) -> list[str]:
        share = 100 * self.matched_us / self.replayed_us if self.replayed_us else 0.0
        how = (f" ({self.by_node_id:,} by graph node id, {self.matched - self.by_node_id:,} by order)"
               if self.by_node_id else "")
        return [f"graph join: {self.matched:,} of {self.replayed:,} replayed GPU events matched to captured "
                f"launches{how} ({share:.1f} % of their time) over {self.graph_launches:,} graph launches; "
                f"{self.replayed - self.matched:,} not matched"]


def _load(data: bytes, label: str) -> dict:
    try:
        doc = json.loads(data, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.TraceError(label, f"not a JSON trace ({e.__class__.__name__})") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise errors.TraceError(label, "no traceEvents list")
    return doc


def _dump(o) -> str:
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dump(v) for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(_dump(v) for v in o) + "]"
    return str(o) if isinstance(o, Decimal) else json.dumps(o)


def _x(events, cats):
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in cats
            and isinstance(e.get("ts"), (int, Decimal)) and isinstance(e.get("args", {}), dict)]


def captured_graphs(events) -> list[list[dict]]:
    """Per captured graph (in capture order), its launch calls in order."""
    by_thread = defaultdict(list)
    for e in _x(events, RUNTIME):
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    graphs = []
    for calls in by_thread.values():
        current = None
        for e in sorted(calls, key=lambda e: e["ts"]):
            name = str(e.get("name", ""))
            if "StreamBeginCapture" in name:
                current = []
                graphs.append((e["ts"], current))
            elif "StreamEndCapture" in name:
                current = None
            elif current is not None and "graph" not in name.lower() and \
                    any(w in name.lower() for w in ("launch", "memcpy", "memset")):
                current.append(e)
    return [g for _, g in sorted(graphs, key=lambda t: t[0])]


def _enclosing(ops_by_thread, launch) -> list[dict]:
    """The capture's ops around `launch` on its thread, outermost first."""
    ts = launch["ts"]
    found = [o for o in ops_by_thread.get((launch.get("pid"), launch.get("tid")), ())
             if o["ts"] <= ts <= o["ts"] + o.get("dur", 0)]
    return sorted(found, key=lambda o: (o["ts"], -o.get("dur", 0)))


def node_ids(ran: list[dict]) -> list[int] | None:
    """The graph node id of each replayed event, or None unless every one has a graph id and a
    node id (integers) and all share one graph id."""
    ids = [(e["args"].get(GRAPH_ID), e["args"].get(NODE_ID)) for e in ran]
    if not ids or not all(isinstance(g, int) and isinstance(n, int) for g, n in ids) or len({g for g, _ in ids}) != 1:
        return None
    return [n for _, n in ids]


def _name(e) -> str:
    return str(e.get("args", {}).get("kernel") or e.get("name", ""))


def join(replay_bytes: bytes, capture_bytes: bytes, replay_label: str, capture_label: str) -> JoinResult:
    """The replay trace with the capture's ops written in for the events it matched (see above)."""
    replay, capture = _load(replay_bytes, replay_label), _load(capture_bytes, capture_label)
    graphs = captured_graphs(capture["traceEvents"])
    if not graphs:
        raise errors.TraceError(capture_label, "no graph capture in it (no …StreamBeginCapture call)")
    events = replay["traceEvents"]
    launches = [e for e in _x(events, RUNTIME) if "graphlaunch" in str(e.get("name", "")).lower()]
    if not launches:
        raise errors.TraceError(replay_label, "no graph launch in it (no …GraphLaunch call)")
    gpu = defaultdict(list)
    for e in _x(events, GPU):
        gpu[e["args"].get("correlation")].append(e)
    cap_ops = defaultdict(list)
    for o in _x(capture["traceEvents"], OPS):
        if not str(o.get("name", "")).startswith(CAPTURE_STEP):   # the capture's own step is no op of the replay
            cap_ops[(o.get("pid"), o.get("tid"))].append(o)
    next_id = 1 + max((int(e["args"]["External id"]) for e in events if isinstance(e, dict)
                       and isinstance(e.get("args"), dict) and isinstance(e["args"].get("External id"), int)),
                      default=0)
    added, replayed, matched, by_id, replayed_us, matched_us = [], 0, 0, 0, Decimal(0), Decimal(0)
    for launch in launches:
        ran = sorted(gpu.get(launch["args"].get("correlation"), ()), key=lambda e: e["ts"])
        nodes = node_ids(ran)
        if nodes is not None:   # capture order: node order
            ran = [e for _, e in sorted(zip(nodes, ran), key=lambda t: t[0])]
        replayed += len(ran)
        replayed_us += sum(Decimal(e.get("dur", 0)) for e in ran)
        names = [_name(e) for e in ran]
        best = max(graphs, key=lambda g: (difflib.SequenceMatcher(None, [_name(c) for c in g], names,
                                                                  autojunk=False).ratio(), len(g) == len(ran)))
        if nodes is not None and len(best) == len(ran):
            pairs = list(zip(range(len(ran)), range(len(ran))))
        else:
            pairs = _align([_name(c) for c in best], names)
        launch["args"].pop("External id", None)
        slot = Decimal(launch.get("dur", 0)) / max(len(pairs), 1)
        last: tuple[list, list, int | None] = ([], [], None)   # the previous stack, its copies, its owner
        for k, (ci, ri) in enumerate(pairs):
            stack = _enclosing(cap_ops, best[ci]) or []
            if not stack:
                continue
            start, owner = launch["ts"] + slot * k, None
            if [id(o) for o in stack] == last[0]:   # the same captured call launched this one too
                for depth, copy in enumerate(last[1]):
                    end = start + max(slot - Decimal("0.002") * depth, Decimal("0.001"))
                    copy["dur"] = (end - copy["ts"]).quantize(Decimal("0.001"))
                owner = last[2]
            else:
                copies = []
                for depth, op in enumerate(stack):
                    width = max(slot - Decimal("0.002") * depth, Decimal("0.001"))
                    copies.append({**op, "pid": launch.get("pid"), "tid": launch.get("tid"),
                                   "ts": (start + Decimal("0.001") * depth).quantize(Decimal("0.001")),
                                   "dur": width.quantize(Decimal("0.001")),
                                   "args": {**op.get("args", {}), "External id": next_id}})
                    owner = next_id if op.get("cat") in ("cpu_op", "Operator") or owner is None else owner
                    next_id += 1
                added += copies
                last = ([id(o) for o in stack], copies, owner)
            ran[ri]["args"]["External id"] = owner  # the innermost CPU op (not an annotation)
            matched += 1
            by_id += nodes is not None and len(best) == len(ran)
            matched_us += Decimal(ran[ri].get("dur", 0))
    replay["traceEvents"] = events + added
    return JoinResult(_dump(replay).encode(), len(launches), replayed, matched, float(replayed_us), float(matched_us),
                      by_id)


def _align(captured: list[str], ran: list[str]) -> list[tuple[int, int]]:
    """(captured index, replayed index) pairs: equal names in order (difflib's matching blocks);
    where the two have no name in common (a CUDA capture writes no kernel name), by order."""
    blocks = difflib.SequenceMatcher(None, captured, ran, autojunk=False).get_matching_blocks()
    pairs = [(b.a + i, b.b + i) for b in blocks for i in range(b.size)]
    return pairs or list(zip(range(len(captured)), range(len(ran))))
