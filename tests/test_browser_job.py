"""The job page in a real browser, on the real 7-of-8-rank DLRM job (needs the third-party traces):
the figures it shows are the job report's (`python -m profiler job NAME --json`), and a screenshot
goes to test-artifacts/job-dlrm.png (look at it)."""
from __future__ import annotations

import pytest

from profiler.analysis.findings import job_queries
from profiler.present.share import ViewState, share_url
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES
from tests.test_browser import (
    ARTIFACTS, _assert_no_exception, _settle, streamlit_app)

pytestmark = [pytest.mark.browser, pytest.mark.third_party]

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []


@pytest.fixture(scope="module")
def job_server(tmp_path_factory):
    """A streamlit server over a store holding the DLRM ranks as the job "dlrm"."""
    if not DLRM:
        pytest.skip("needs the DLRM rank traces of ../shared/traces (PROFILER_TEST_TRACES)")
    db = tmp_path_factory.mktemp("browser-job") / "store.duckdb"
    store = Store(db)
    job_queries.ingest_job(store, [str(p) for p in DLRM], "dlrm", engine="in-process")  # as the CLI and the upload page do
    with streamlit_app(db) as url:
        yield url, store


def test_the_job_page_shows_the_job_report(job_server, browser):
    url, store = job_server
    report = job_queries.job_report(store, "dlrm")
    assert report["ranks_missing"] == [[1, 1]] and len(report["longest_step"]) >= 1
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto(share_url(ViewState(page="job"), base=url), timeout=90_000)
        page.get_by_text("Where each rank's step goes").first.wait_for(timeout=90_000)
        _settle(page)
        _assert_no_exception(page, "job page")
        main = page.inner_text('[data-testid="stMain"]')
        metrics = [" ".join(m.inner_text().split()) for m in page.locator('[data-testid="stMetric"]').all()]
        assert metrics == [f"world size {report['world_size']}", f"ranks present {len(report['ranks_present'])}",
                           "ranks missing 1", f"backend {report['backend']}"], metrics
        for line in job_queries.straggler_sentences(report):  # straggler and longest step, as the report says
            assert line in main
        assert page.locator(".vega-embed svg").count() >= 1, "no rank chart drawn"
        assert page.locator('[data-testid="stDataFrame"]').count() >= 2, "rank and collective tables"
        page.screenshot(path=str(ARTIFACTS / "job-dlrm.png"), full_page=True)
    finally:
        page.close()
