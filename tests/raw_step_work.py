"""A step's GPU work read by hand from the raw JSON (apart from the parser, the store and its SQL):
the independent side of tests/test_step_work.py.

A GPU event (kernel, copy, set) is the work of the step whose runtime / driver call carrying the
same correlation id started inside it (the earliest such call), wherever the event ran. Events with
no such call in a trace that records calls are unattributed; a trace without ProfilerStep windows
is one step, the whole trace, and every event in it is that step's.
"""
from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value())


def union(intervals) -> int:
    total, reach = 0, None
    for s, e in sorted(intervals):
        if reach is None or s >= reach:
            total, reach = total + e - s, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total


def events(path: Path) -> list[dict]:
    raw = Path(path).read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return [e for e in (data if isinstance(data, list) else data["traceEvents"])
            if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e]


def step_work(path: Path) -> dict:
    """{"steps": [{"work": union ns, "sum": summed ns, "spilled": ns after the step's end}, ...],
    "unattributed": events with no call}, from the raw trace."""
    evs = events(path)
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731
    steps = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in evs
                   if str(e.get("name", "")).startswith("ProfilerStep#") and cat(e) != "gpu_user_annotation")
    called: dict = {}
    for e in evs:
        corr = (e.get("args") or {}).get("correlation")
        if cat(e) in API_CATS and corr is not None:
            called[corr] = min(called.get(corr, _ns(e["ts"])), _ns(e["ts"]))
    gpu = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), (e.get("args") or {}).get("correlation"))
           for e in evs if cat(e) in GPU_CATS]
    unattributed = sum(1 for *_, c in gpu if called and c not in called)
    if not steps:
        own = [(s, e) for s, e, _ in gpu]
        return {"steps": [{"work": union(own), "sum": sum(e - s for s, e in own), "spilled": 0}],
                "unattributed": unattributed}
    rows = []
    for lo, hi in steps:
        if called:
            own = [(s, e) for s, e, c in gpu if c in called and lo <= called[c] < hi]
        else:
            own = [(s, e) for s, e, _ in gpu if lo <= s < hi]
        rows.append({"work": union(own), "sum": sum(e - s for s, e in own),
                     "spilled": union((max(s, hi), e) for s, e in own if e > hi)})
    return {"steps": rows, "unattributed": unattributed}
