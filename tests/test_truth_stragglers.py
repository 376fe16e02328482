"""Issue 21, class 2: the straggler is the rank the others wait for, by arrival at each collective.

Checked three ways: against an independent computation from the raw JSON of the 7 shared DLRM
ranks (each rank's n-th communication kernel of a name in its step is one collective; the last to
start it is waited for); against HTA's `get_potential_stragglers` (pinned in
requirements-dev.txt) on those ranks; and on generated jobs with a known late rank, where the rank
with the longest step is another one.
"""
from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal

import pytest

from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES
from tests.timelines import Timeline

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
COMM = ("nccl", "rccl")


@pytest.fixture
def job_store(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _hta_stragglers(folder, k: int) -> list[int]:
    hta = pytest.importorskip("hta.trace_analysis")
    return sorted(hta.TraceAnalysis(trace_dir=str(folder)).get_potential_stragglers(num_candidates=k))


def raw_waits(paths, offsets: dict | None = None) -> dict[int, dict]:
    """{rank: {wait, late, caused, last}} in µs from the plain JSON: per collective (n-th comm
    kernel of a name inside the rank's ProfilerStep), every rank waits for the latest start;
    `offsets` ({rank: µs}): each rank's clock offset, taken off its starts first."""
    offsets = offsets or {}
    starts: dict[tuple, dict[int, Decimal]] = defaultdict(dict)
    for path in paths:
        data = json.loads(path.read_bytes(), parse_float=Decimal)
        rank = data["distributedInfo"]["rank"]
        events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
        (lo, hi), = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("ProfilerStep#")
                     and e.get("cat") != "gpu_user_annotation"]
        seen: dict[str, int] = defaultdict(int)
        launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
        for e in sorted((e for e in events if e.get("cat") == "kernel"
                         and any(c in e["name"].lower() for c in COMM)), key=lambda e: e["ts"]):
            if lo <= launches.get(e["args"]["correlation"], e["ts"]) < hi:  # its iteration: the launch's
                seen[e["name"]] += 1
                starts[(e["name"], seen[e["name"]])][rank] = e["ts"] - offsets.get(rank, 0)
    out = {r: {"wait": Decimal(0), "late": Decimal(0), "caused": Decimal(0), "last": 0}
           for r in {r for s in starts.values() for r in s}}
    for by_rank in starts.values():
        if len(by_rank) < 2:
            continue
        last = max(by_rank, key=lambda r: (by_rank[r], r))
        first = min(by_rank.values())
        for r, ts in by_rank.items():
            out[r]["wait"] += by_rank[last] - ts
            out[r]["late"] += ts - first
            out[last]["caused"] += by_rank[last] - ts
        out[last]["last"] += 1
    return out


@pytest.mark.third_party
@pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")
def test_dlrm_straggler_by_arrival_matches_the_raw_json_and_hta(job_store, tmp_path):
    job_ingest.ingest_job(job_store, [str(p) for p in DLRM], "dlrm", engine="in-process")
    report = job_queries.job_report(job_store, "dlrm")
    want = raw_waits(DLRM)
    got = {w["rank"]: w for w in report["waits"]}
    assert sorted(got) == sorted(want)
    for rank, w in want.items():
        assert got[rank]["wait_us"] == pytest.approx(float(w["wait"]), abs=1e-3), rank
        assert got[rank]["caused_wait_us"] == pytest.approx(float(w["caused"]), abs=1e-3), rank
        assert got[rank]["late_us"] == pytest.approx(float(w["late"]), abs=1e-3), rank
        assert got[rank]["arrived_last"] == w["last"], rank
    expected_order = sorted((r for r in want if want[r]["late"] > 0),
                            key=lambda r: (-want[r]["late"], -want[r]["caused"], r))
    assert report["straggler_ranking"] == expected_order
    (straggler,) = report["stragglers"]
    assert straggler["straggler_rank"] == max(want, key=lambda r: (want[r]["caused"], want[r]["last"], -r))
    assert report["straggler_ranking"][0] == straggler["straggler_rank"]
    # HTA's candidates (its metric: the start of the last long collective kernel) are our first k
    folder = tmp_path / "dlrm"
    folder.mkdir()
    for p in DLRM:
        (folder / p.name).symlink_to(p)
    for k in (1, 2, 3):
        assert _hta_stragglers(folder, k) == sorted(report["straggler_ranking"][:k]), k
    # "longest step" is a figure of its own, and here it is not the straggler
    (longest,) = report["longest_step"]
    assert longest["longest_step_rank"] != straggler["straggler_rank"]
    assert got[longest["longest_step_rank"]]["wait_us"] > got[straggler["straggler_rank"]]["wait_us"]


def _job(late: int, ranks: int = 4, iterations: int = 2) -> dict[int, bytes]:
    """A job whose rank `late` computes 3 ms longer before each iteration's all-reduce and also
    starts its step last (so its step is the shortest); a small all-gather follows, which the
    next rank reaches 10 µs last."""
    out = {}
    for r in range(ranks):
        t = Timeline(rank=r, world_size=ranks)
        for i in range(iterations):
            base = 10_000 + i * 20_000
            start = base + (400 if r == late else 100 * r)
            compute = 1_000 + (3_000 if r == late else 50 * r)
            arrive = start + 20 + compute
            everyone = max(base + (400 if q == late else 100 * q) + 20 + 1_000 + (3_000 if q == late else 50 * q)
                           for q in range(ranks))  # the last rank's arrival
            t.step(i + 1, start, everyone + 500 + 400 - start)
            t.kernel("compute_gemm", start + 20, compute, launch_at=start + 5)
            t.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", arrive, everyone + 300 - arrive,
                     launch_at=start + 10, stream=20)
            gather = everyone + 310 + (10 if r == (late + 1) % ranks else 0)
            t.kernel("ncclKernel_AllGather_RING_LL_Sum_float", gather, everyone + 500 - gather,
                     launch_at=start + 12, stream=20)
        out[r] = t.bytes()
    return out


@pytest.mark.parametrize("late", [1, 3])
def test_a_generated_late_rank_is_the_straggler_not_the_longest_step(job_store, tmp_path, late):
    folder = tmp_path / f"late{late}"
    folder.mkdir()
    files = []
    for rank, raw in _job(late).items():
        files.append(folder / f"rank{rank}.pt.trace.json")
        files[-1].write_bytes(raw)
    job_ingest.ingest_job(job_store, [str(f) for f in files], "gen", engine="in-process")
    report = job_queries.job_report(job_store, "gen")
    assert report["straggler_ranking"][0] == late
    assert [s["straggler_rank"] for s in report["stragglers"]] == [late, late]
    assert all(s["longest_step_rank"] != late for s in report["longest_step"])
    waits = {(w["rank"], w["iteration"]): w for w in report["waits"]}
    assert all(waits[(late, i)]["wait_us"] < waits[(r, i)]["wait_us"]
               for r in range(4) if r != late for i in (0, 1))
    text = "\n".join(job_queries.straggler_sentences(report))
    assert f"rank {late} is the straggler" in text
    assert _hta_stragglers(folder, 1) == [late]
