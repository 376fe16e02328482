"""Job page, issue 37: a rank's clock offset is shown and taken off (the shared DLRM ranks with
rank 4's clock moved by +50 ms, written into temp copies); a clock that jumps withholds the waits."""
from __future__ import annotations

from decimal import Decimal

import pytest

from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.test_job_clocks import DLRM, _shifted

pytestmark = [pytest.mark.third_party,
              pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")]


def _clock_jobs(path) -> None:
    store = Store(path)
    (path.parent / "shift").mkdir()
    (path.parent / "jump").mkdir()
    job_ingest.ingest_job(store, _shifted(path.parent / "shift", 4, 50_000), "shifted", engine="in-process")
    job_ingest.ingest_job(store, _shifted(path.parent / "jump", 3, 5_000, Decimal(9_000)), "jump",
                          engine="in-process")


@pytest.fixture
def clock_store(tmp_path, monkeypatch, template_store):
    """A copy (store file and job files) of a store holding the jobs 'shifted' and 'jump', ingested
    once per test process; PROFILER_DB points at it."""
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    path = tmp_path / "jobs.duckdb"
    template_store("dlrm-clock-jobs", _clock_jobs, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return Store(path)


def test_the_page_shows_each_rank_clock_and_corrects_the_waits(pages, clock_store):
    at = pages.open("job", job="shifted")
    pages.assert_clean(at)
    texts = pages.texts(at)
    assert "rank 4's clock reads +" in texts and "rank 7 is the straggler" in texts
    clock = at.dataframe[-1].value.set_index("rank")   # the last table without a job to compare
    assert abs(clock.loc[4, "applied_us"] - 50_000) < 1_000 and (clock.drop(4)["applied_us"] == 0).all()
    waits = at.dataframe[-2].value
    report = job_queries.job_report(clock_store, "shifted")
    steps = {(i["rank"], i["iteration"]): i["step_us"] for i in report["iterations"]}
    assert len(waits) == 7 and all(w.wait_us <= steps[(w.rank, w.iteration)] for w in waits.itertuples())


def test_the_page_withholds_waits_when_the_clocks_do_not_fit(pages, clock_store):
    at = pages.open("job", job="jump")
    pages.assert_clean(at)
    assert any("clock estimate inconsistent" in w.value for w in at.warning)
    assert "is the straggler" not in pages.texts(at)
    assert at.dataframe[-2].value.empty
