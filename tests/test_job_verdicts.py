"""Issue 37: a job's ranks keep their completeness verdict from ingest, like their metrics: each
rank's worker writes its `stored_completeness` rows as a file of the job (with the definition's
digest in the manifest), and reads take them from there; a rank checked under another definition
is checked again when read. The kept rows equal those a single upload of the same trace keeps,
and those computed now from the rank's own rows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.analysis.reads import completeness as verdicts
from profiler.storage import completeness, job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
pytestmark = [pytest.mark.third_party, pytest.mark.skipif(len(DLRM) < 2, reason="needs the shared DLRM ranks")]


@pytest.fixture
def job_store(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _rows(store, run_ids) -> list[tuple]:
    df = completeness.read(store, run_ids)
    return sorted(tuple(r[1:]) for r in df.itertuples(index=False, name=None))


def _views_sql(store) -> str:
    with store.connect(jobs=True) as con:
        got = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'stored_completeness'").fetchall()
    return got[0][0] if got else ""


def test_ranks_keep_their_verdict_from_ingest(job_store):
    paths = DLRM[:2]
    singles = [job_store.ingest(p).run_id for p in paths]
    result = job_ingest.ingest_job(job_store, paths, "dlrm2", engine="in-process")
    ranks = {Path(r.file).name: r for r in result.ranks}
    doc = json.loads((Path(job_layout.job_root(job_store)) / "manifests" / "dlrm2.json").read_text())
    assert all(job_layout.VERDICT_TABLE in r["files"] for r in doc["ranks"])
    assert {r["completeness_digest"] for r in doc["ranks"]} == {completeness.definition_digest()}
    assert "job_parquet_verdicts" in _views_sql(job_store)
    for path, single in zip(paths, singles):
        rid = ranks[path.name].run_id
        checked = job_store.query("SELECT count(*) AS n FROM stored_completeness WHERE run_id = $r AND reason = 'checked'",
                                  {"r": rid})["n"][0]
        assert checked == 1                                  # kept, not computed on this read
        kept = _rows(job_store, [rid])
        assert kept == _rows(job_store, [single])            # as a single upload of the trace keeps them
        fresh = job_store.query(completeness.query_text(), {"run_ids": [rid]})
        assert kept == sorted(tuple(r[1:]) for r in fresh.itertuples(index=False, name=None))
    said = verdicts.verdicts(job_store, [r.run_id for r in result.ranks])
    assert set(said) == {r.run_id for r in result.ranks}


def test_a_rank_checked_under_another_definition_is_checked_when_read(job_store):
    result = job_ingest.ingest_job(job_store, DLRM[:2], "dlrm2", engine="in-process")
    ids = sorted(r.run_id for r in result.ranks)
    before = _rows(job_store, ids)
    manifest = Path(job_layout.job_root(job_store)) / "manifests" / "dlrm2.json"
    doc = json.loads(manifest.read_text())
    for r in doc["ranks"]:
        r["completeness_digest"] = "an older one"
    manifest.write_text(json.dumps(doc))
    assert "job_parquet_verdicts" not in _views_sql(job_store)
    assert job_store.query("SELECT count(*) AS n FROM stored_completeness WHERE run_id IN (SELECT unnest($i))",
                           {"i": ids})["n"][0] == 0
    assert _rows(job_store, ids) == before                   # computed now, the same rows
