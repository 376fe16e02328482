"""Job page on the 7 real DLRM rank traces (a job with rank 1 missing), and an empty store."""
from __future__ import annotations

import pytest

from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []


def _two_jobs(path) -> None:
    store = Store(path)
    job_ingest.ingest_job(store, DLRM, "dlrm", engine="in-process")
    job_ingest.ingest_job(store, DLRM[:3], "dlrm first three", engine="in-process")


@pytest.fixture
def job_store(tmp_path, monkeypatch, template_store):
    """A copy (store file and job files) of a store holding the job 'dlrm' (the 7 ranks) and
    'dlrm first three', ingested once per test process."""
    assert len(DLRM) == 7, f"the 7 DLRM rank traces are not all in {SHARED_TRACES}"  # users of this fixture are marked third_party
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    monkeypatch.setenv("PROFILER_SEED", "0")
    path = tmp_path / "jobs.duckdb"
    template_store("dlrm-jobs", _two_jobs, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return Store(path)


@pytest.mark.third_party
def test_job_page_shows_ranks_missing_rank_and_collectives(pages, job_store):
    at = pages.open("job", job="dlrm")
    pages.assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["world size"] == "8" and metrics["ranks present"] == "7" and metrics["ranks missing"] == "1"
    ranks = at.dataframe[0].value
    assert sorted(ranks["rank"]) == [0, 2, 3, 4, 5, 6, 7]
    longest = int(ranks.loc[ranks["step_us"].idxmax(), "rank"])
    assert f"rank {longest} has the longest step" in pages.texts(at)
    (straggler,) = job_queries.job_report(job_store, "dlrm")["stragglers"]
    assert f"rank {straggler['straggler_rank']} is the straggler" in pages.texts(at)
    assert straggler["straggler_rank"] != longest  # the rank others wait for is not the one that waited
    said = job_queries.job_report(job_store, "dlrm")["rank_waits"]  # who each rank waits for (issue 35)
    assert {w["rank"] for w in said} == {0, 2, 3, 4, 5, 6}
    for w in said:
        assert f"inside collectives for rank {straggler['straggler_rank']}, the last to arrive" in w["sentence"]
        assert w["sentence"] in pages.texts(at)
    assert (ranks["gpu_work_us"] > 0).all()  # the step's GPU work, the one figure
    assert len(at.get("arrow_vega_lite_chart")) + len(at.get("vega_lite_chart")) == 1
    collectives = at.dataframe[1].value
    assert len(collectives) and set(collectives["ranks"]) == {7}
    shown = collectives.merge(job_queries.collectives(job_store, "dlrm"), on=["iteration", "name", "seq"])
    assert len(shown) == len(collectives) and (shown["busbw_gbps_x"] == shown["busbw_gbps_y"]).all()
    assert set(shown["collective_x"]) == {"all_reduce", "all_to_all"} and (shown["bytes_x"] > 0).all()
    at.selectbox[1].select("dlrm first three").run()
    pages.assert_clean(at)
    compared = at.dataframe[-1].value.set_index("measure")  # the last table: after "who waits for whom"
    assert compared.loc["ranks", "dlrm"] == 7 and compared.loc["ranks", "dlrm first three"] == 3


@pytest.mark.third_party
def test_job_from_the_link_is_selected(pages, job_store):
    at = pages.open("job", job="dlrm first three")
    pages.assert_clean(at)
    assert at.selectbox[0].value == "dlrm first three"
    assert sorted(at.dataframe[0].value["rank"]) == [0, 2, 3]


def test_no_job_says_how_to_make_one(pages, empty_store):
    at = pages.open("job")
    assert not at.exception
    assert "No job in the store yet" in at.info[0].value
