"""The clock offsets of a job's ranks computed from the plain JSON, apart from the code under test
(profiler/storage/sql/lib/job_clock.sql): each rank's n-th communication kernel of a name inside
its ProfilerStep (by its launch) is one collective; a collective ends at the same moment on every
rank, so a rank's offset is the median over its collectives of its end minus the median end, its
uncertainty 1.4826 x the median absolute deviation (at least 1 µs), applied when above 3 x that."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from decimal import Decimal

COMM = ("nccl", "rccl")


def raw_collectives(paths) -> dict[tuple, dict[int, tuple[Decimal, Decimal]]]:
    """{(name, n): {rank: (start µs, duration µs)}} from the rank files."""
    out: dict[tuple, dict] = defaultdict(dict)
    for path in paths:
        data = json.loads(open(path, "rb").read(), parse_float=Decimal)
        rank = data["distributedInfo"]["rank"]
        events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
        (lo, hi), = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")
                     and e.get("cat") != "gpu_user_annotation"]
        launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
        seen: dict[str, int] = defaultdict(int)
        for e in sorted((e for e in events if e.get("cat") == "kernel"
                         and any(c in e["name"].lower() for c in COMM)), key=lambda e: e["ts"]):
            if lo <= launches.get(e["args"]["correlation"], e["ts"]) < hi:
                seen[e["name"]] += 1
                out[(e["name"], seen[e["name"]])][rank] = (Decimal(e["ts"]), Decimal(e["dur"]))
    return out


def raw_offsets(paths) -> dict[int, dict]:
    """{rank: {offset, uncertainty, applied, matched}} in µs."""
    diffs: dict[int, list] = defaultdict(list)
    for by_rank in raw_collectives(paths).values():
        if len(by_rank) < 2:
            continue
        ends = {r: ts + dur for r, (ts, dur) in by_rank.items()}
        mid = statistics.median(ends.values())
        for r, end in ends.items():
            diffs[r].append(end - mid)
    out = {}
    for r, d in diffs.items():
        offset = statistics.median(d)
        spread = max(Decimal("1.4826") * statistics.median(abs(x - offset) for x in d), Decimal(1))
        out[r] = {"offset": offset, "uncertainty": spread, "matched": len(d),
                  "applied": offset if abs(offset) > 3 * spread else Decimal(0)}
    return out
