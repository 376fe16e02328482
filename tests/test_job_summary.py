"""A job's summary (profiler/storage/jobs/job_summary.py): the job queries' rows kept at ingest, read
instead of every rank's Parquet. Checked against the queries run over the ranks' files and against
an independent computation from the plain JSON (tests/test_truth_stragglers.raw_waits), on the
shared DLRM ranks and on a generated job with shifted clocks, a late rank and a missing one; a job
deleted and ingested again gets a new summary; a store from before summaries still reads."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from profiler.analysis.findings import job_queries
from profiler.storage.jobs import job_ingest, job_summary, jobs
from profiler.storage import job_layout, tables
from profiler.storage.store import Store
from profiler.storage.migrations import SCHEMA_VERSION
from tests.conftest import SHARED_TRACES
from tests.raw_clocks import raw_offsets
from tests.test_truth_stragglers import raw_waits

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
needs_dlrm = pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")
_TS = re.compile(rb'("ts"\s*:\s*)(\d+)')
_INFO = re.compile(rb'("distributedInfo"\s*:\s*\{)[^{}]*\}')


@pytest.fixture
def job_store(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _from_files(store, job: str) -> dict:
    """The report computed from the ranks' files (no summary read)."""
    kept, job_summary.read = job_summary.read, lambda *a: None
    try:
        return job_queries.job_report(store, job)
    finally:
        job_summary.read = kept


def _counted(fn):
    def counted(*args):
        counted.calls += 1
        return fn(*args)
    counted.calls = 0
    return counted


def _generated(folder: Path, world: int, late: int, late_us: int, missing: int) -> list[Path]:
    """Rank r is DLRM worker r mod 7 with its clock shifted by (r * 37) mod 50 µs, rank `late`'s
    by `late_us` more; rank `missing` is left out."""
    blobs = [p.read_bytes() for p in DLRM]
    out = []
    for r in range(world):
        if r == missing:
            continue
        shift = (r * 37) % 50 + (late_us if r == late else 0)
        data = _TS.sub(lambda m, shift=shift: m.group(1) + b"%d" % (int(m.group(2)) + shift), blobs[r % 7])
        data = _INFO.sub(lambda m, r=r: m.group(1) + b'"backend": "nccl", "rank": %d, "world_size": %d}' % (r, world), data)
        out.append(folder / f"rank{r}.pt.trace.json")
        out[-1].write_bytes(data)
    return out


def _check_against_raw(report: dict, paths: list[Path], offsets: dict | None = None) -> None:
    want = raw_waits(paths, offsets)
    got = {w["rank"]: w for w in report["waits"]}
    assert sorted(got) == sorted(want)
    for rank, w in want.items():
        assert got[rank]["wait_us"] == pytest.approx(float(w["wait"]), abs=1e-3), rank
        assert got[rank]["late_us"] == pytest.approx(float(w["late"]), abs=1e-3), rank
        assert got[rank]["caused_wait_us"] == pytest.approx(float(w["caused"]), abs=1e-3), rank
        assert got[rank]["arrived_last"] == w["last"], rank


@pytest.mark.third_party
@needs_dlrm
def test_summary_of_the_dlrm_ranks_is_the_queries_rows_and_the_raw_json(job_store):
    job_ingest.ingest_job(job_store, DLRM, "dlrm", engine="in-process")
    job_queries.keep_summary(job_store, "dlrm")
    m = job_queries.manifest(job_store, "dlrm")
    kept = job_summary.read(job_store, "dlrm", job_queries.summary_stamp(m))
    assert kept is not None and len(kept["job_rank_waits"]) == 7
    report = job_queries.job_report(job_store, "dlrm")
    assert json.dumps(report) == json.dumps(_from_files(job_store, "dlrm"))
    _check_against_raw(report, DLRM)
    with job_store.session() as db:  # the page reads through a session: the same rows
        assert job_queries.rank_waits(db, "dlrm").equals(kept["job_rank_waits"])


@pytest.mark.third_party
@needs_dlrm
def test_summary_of_a_generated_job_finds_the_shifted_clock_and_the_missing_rank(job_store, tmp_path):
    paths = _generated(tmp_path, world=24, late=17, late_us=20_000, missing=5)
    result = job_ingest.ingest_job(job_store, paths, "gen", engine="in-process")  # several ranks to a task
    back = {run_id for r in result.ranks for run_id in r.summary_rows["kernels"]["run_id"].to_pylist()}
    assert back == {r.run_id for r in result.ranks}  # each rank's collectives came back
    computed, job_summary.from_rows = job_summary.from_rows, _counted(job_summary.from_rows)
    try:  # the summary is computed from the rows the tasks brought back, not from the files
        job_queries.keep_summary(job_store, "gen", result.ranks)
    finally:
        job_summary.from_rows, used = computed, job_summary.from_rows.calls
    assert used == 1
    report = job_queries.job_report(job_store, "gen")
    assert json.dumps(report) == json.dumps(_from_files(job_store, "gen"))
    assert report["ranks_missing"] == [[5, 5]] and len(report["ranks_present"]) == 23
    # rank 17's 20 ms is a clock offset, found and taken off (issue 37): the straggler is then a
    # copy of DLRM's worker 7 (r mod 7 == 6), as the plain JSON with the same offsets says
    offsets = raw_offsets(paths)
    clock = {c["rank"]: c for c in report["clock"]}
    assert clock[17]["applied_us"] == pytest.approx(float(offsets[17]["applied"]), abs=1e-3)
    assert abs(clock[17]["applied_us"] - 20_000) < 1_000
    assert report["straggler_ranking"][0] % 7 == 6
    assert [s["straggler_rank"] for s in report["stragglers"]] == [report["straggler_ranking"][0]]
    _check_against_raw(report, paths, {r: o["applied"] for r, o in offsets.items()})


@pytest.mark.third_party
@needs_dlrm
def test_a_job_deleted_and_ingested_again_gets_a_new_summary(job_store):
    job_ingest.ingest_job(job_store, DLRM[:4], "j", engine="in-process")
    job_queries.keep_summary(job_store, "j")
    first = job_store.query("SELECT stamp FROM job_summaries WHERE job = 'j'")["stamp"].tolist()
    job_ingest.delete_job(job_store, "j")
    for t in tables.JOB_SUMMARIES:
        assert job_store.query(f"SELECT count(*) AS n FROM {t.name} WHERE job = 'j'")["n"][0] == 0
    assert job_store.query("SELECT count(*) AS n FROM job_summaries")["n"][0] == 0
    job_ingest.ingest_job(job_store, DLRM, "j", engine="in-process")
    job_queries.keep_summary(job_store, "j")
    second = job_store.query("SELECT stamp FROM job_summaries WHERE job = 'j'")["stamp"].tolist()
    assert len(first) == len(second) == 1 and first != second
    report = job_queries.job_report(job_store, "j")
    assert len(report["ranks_present"]) == 7 and {w["rank"] for w in report["waits"]} == {0, 2, 3, 4, 5, 6, 7}
    assert json.dumps(report) == json.dumps(_from_files(job_store, "j"))


@pytest.mark.third_party
@needs_dlrm
def test_a_summary_is_not_read_once_a_rank_file_is_gone(job_store):
    job_ingest.ingest_job(job_store, DLRM, "dlrm", engine="in-process")
    job_queries.keep_summary(job_store, "dlrm")
    m = job_queries.manifest(job_store, "dlrm")
    (Path(job_layout.job_root(job_store)) / m["ranks"][2]["files"]["kernels"]).unlink()
    with pytest.raises(jobs.JobError, match="cannot be read"):
        job_queries.job_report(job_store, "dlrm")


@pytest.mark.third_party
@needs_dlrm
def test_a_store_from_before_summaries_is_migrated_and_its_jobs_read(job_store):
    job_ingest.ingest_job(job_store, DLRM, "old", engine="in-process")
    with job_store.connect() as con:  # as schema version 6 left it: no summary tables
        for t in (*[t.name for t in tables.JOB_SUMMARIES], "job_summaries"):
            con.execute(f"DROP TABLE {t}")
        con.execute("UPDATE store_meta SET value = '6' WHERE key = 'schema_version'")
    reopened = Store(job_store.path)
    assert reopened.schema_version() == SCHEMA_VERSION
    assert reopened.query("SELECT count(*) AS n FROM job_summaries")["n"][0] == 0
    report = job_queries.job_report(reopened, "old")  # no summary: read from the ranks' files
    _check_against_raw(report, DLRM)
    job_queries.keep_summary(reopened, "old")
    assert json.dumps(job_queries.job_report(reopened, "old")) == json.dumps(report)
