"""Issue 37, item 4: clocks across ranks. Each rank's clock offset is estimated from the ends of the
collectives (sql/job_clock.sql, lib/job_clock.sql); waits and the straggler are computed on the
consensus clock; an estimate that does not hold withholds the waits; a wait that cannot be right is
flagged. Checked on the 7 shared DLRM ranks with one rank's clock shifted (written into temp
copies), against the plain JSON (tests/raw_clocks.py, tests/test_truth_stragglers.raw_waits)."""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from profiler.analysis.findings import job_clocks, job_queries
from profiler.cli.main import main
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES
from tests.raw_clocks import raw_collectives, raw_offsets
from tests.test_truth_stragglers import raw_waits

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
needs_dlrm = pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")
pytestmark = pytest.mark.third_party


@pytest.fixture
def job_store(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _shifted(folder: Path, rank: int, shift_us: int, after_us: Decimal | None = None) -> list[Path]:
    """Copies of the DLRM ranks with rank `rank`'s clock moved by `shift_us` (every event's ts;
    with `after_us`, only events from that far into its step on: a clock that jumps)."""
    out = []
    for path in DLRM:
        data = json.loads(path.read_bytes(), parse_float=Decimal)
        if data["distributedInfo"]["rank"] == rank:
            start = min(e["ts"] for e in data["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#"))
            for e in data["traceEvents"]:
                if "ts" in e and (after_us is None or e["ts"] >= start + after_us):
                    e["ts"] = e["ts"] + shift_us
        out.append(folder / path.name)
        out[-1].write_text(json.dumps(data, default=str))
    return out


def _report(store, paths, name="dlrm") -> dict:
    job_ingest.ingest_job(store, [str(p) for p in paths], name, engine="in-process")
    job_queries.keep_summary(store, name)
    return job_queries.job_report(store, name)


@needs_dlrm
@pytest.mark.parametrize("rank,shift_us", [(3, 50_000), (7, -3_000), (0, 50_000)])
def test_a_shifted_rank_clock_is_found_and_taken_off(job_store, tmp_path, rank, shift_us):
    paths = _shifted(tmp_path, rank, shift_us)
    report = _report(job_store, paths)
    clock = {c["rank"]: c for c in report["clock"]}
    assert abs(clock[rank]["offset_us"] - shift_us) <= 1_000
    assert clock[rank]["applied_us"] == clock[rank]["offset_us"]
    assert all(abs(c["offset_us"]) <= 1_000 and c["applied_us"] == 0 for r, c in clock.items() if r != rank)
    want = raw_offsets(paths)   # the same estimate, from the plain JSON
    for r, c in clock.items():
        assert c["offset_us"] == pytest.approx(float(want[r]["offset"]), abs=1e-3), r
        assert c["uncertainty_us"] == pytest.approx(float(want[r]["uncertainty"]), abs=1e-3), r
        assert c["matched"] == want[r]["matched"] == 8
    assert report["clock_verdict"]["consistent"] and report["waits_withheld"] is None
    assert [s["straggler_rank"] for s in report["stragglers"]] == [7]
    assert report["straggler_ranking"][0] == 7
    steps = {(i["rank"], i["iteration"]): i for i in report["iterations"]}
    for w in report["waits"]:
        assert w["wait_us"] <= steps[(w["rank"], w["iteration"])]["step_us"], w
        assert w["flag"] is None
    raw = raw_waits(paths, {r: o["applied"] for r, o in want.items()})
    for w in report["waits"]:
        assert w["wait_us"] == pytest.approx(float(raw[w["rank"]]["wait"]), abs=1e-3), w["rank"]
        assert w["caused_wait_us"] == pytest.approx(float(raw[w["rank"]]["caused"]), abs=1e-3), w["rank"]
    if shift_us > 0:  # as written, the clocks would have made some rank wait longer than its step
        unaligned = raw_waits(paths)
        assert any(float(unaligned[r]["wait"]) > steps[(r, 0)]["step_us"] for r in unaligned)


@needs_dlrm
def test_unshifted_ranks_keep_their_clocks(job_store):
    report = _report(job_store, DLRM)
    assert all(c["applied_us"] == 0 and abs(c["offset_us"]) < 3 for c in report["clock"])
    assert report["clock_verdict"]["consistent"]
    assert [s["straggler_rank"] for s in report["stragglers"]] == [7]
    assert "clocks agree" in "\n".join(job_queries.straggler_sentences(report))


@needs_dlrm
def test_a_clock_that_jumps_withholds_the_waits(job_store, tmp_path, capsys):
    """Rank 3's clock jumps by 5 ms halfway through its step: no one offset fits it."""
    paths = _shifted(tmp_path, 3, 5_000, after_us=Decimal(9_000))
    # independently: with the offsets the plain JSON gives, some rank would have waited longer
    # than its own collective kernel ran, beyond 6 x the median uncertainty
    offsets = raw_offsets(paths)
    tolerance = 6 * sorted(o["uncertainty"] for o in offsets.values())[len(offsets) // 2]
    excess = []
    for by_rank in raw_collectives(paths).values():
        starts = {r: ts - offsets[r]["applied"] for r, (ts, _) in by_rank.items()}
        excess += [max(starts.values()) - starts[r] - by_rank[r][1] for r in by_rank]
    assert max(excess) > tolerance
    report = _report(job_store, paths)
    assert not report["clock_verdict"]["consistent"]
    assert report["waits"] == [] and report["stragglers"] == [] and report["straggler_ranking"] == []
    assert "not stated" in report["waits_withheld"]
    bad = [c for c in report["clock"] if c["impossible"] > 0]
    assert bad and max(c["worst_excess_us"] for c in bad) == pytest.approx(float(max(excess)), abs=1e-3)
    assert main(["job", "dlrm", "--db", str(job_store.path)]) == 0
    out = capsys.readouterr().out
    assert "clock estimate inconsistent" in out and "is the straggler" not in out


@needs_dlrm
def test_the_cli_and_json_state_the_offset(job_store, tmp_path, capsys):
    paths = _shifted(tmp_path, 4, 50_000)
    _report(job_store, paths)
    assert main(["job", "dlrm", "--db", str(job_store.path)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("rank 4's clock"))
    assert "+49,99" in line or "+50,00" in line
    assert "rank 7 is the straggler" in out
    assert main(["job", "dlrm", "--db", str(job_store.path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {c["rank"] for c in report["clock"]} == {0, 2, 3, 4, 5, 6, 7}
    assert report["clock_verdict"]["consistent"] is True


def test_a_wait_longer_than_the_step_or_the_collectives_is_flagged():
    per_rank = pd.DataFrame({"rank": [0, 1, 2], "iteration": [0, 0, 0], "step_us": [100.0, 1000.0, 1000.0],
                             "collective_us": [90.0, 50.0, 500.0]})
    waits = pd.DataFrame({"rank": [0, 1, 2], "iteration": [0, 0, 0], "collectives": [1, 1, 1],
                          "wait_us": [150.0, 80.0, 400.0]})
    clock = pd.DataFrame({"rank": [0, 1, 2], "uncertainty_us": [1.0, 1.0, 1.0]})
    flags = job_clocks.flag_waits(per_rank, waits, clock)["flag"].tolist()
    assert "in a 100.0 µs step" in flags[0]
    assert "its collectives ran 50.0 µs" in flags[1]   # 80 > 50 + 6 µs
    assert flags[2] is None
