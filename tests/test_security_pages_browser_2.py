"""Issue 22, classes 4-7 in Chromium over `streamlit run app.py`: beside a damaged job, a run whose
lane names are 10 MB and a run whose 3,000 launches and 3,000 kernels share one correlation id, every
page that reads them draws in bounded time, sends the browser a bounded page, shows the damaged
job with its reason, and asks no host but the app's (inputs from tests/crafted_jobs.py and
tests/crafted_slow.py)."""
from __future__ import annotations

import time

import pytest

from profiler.present.share import ViewState, share_url
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.crafted_jobs import MANIFEST_DAMAGE, rank_trace, write_ranks
from tests.crafted_slow import huge_lane_names, shared_correlation
from tests.test_browser import (
    ARTIFACTS, WAIT_MS, _assert_no_exception, _settle, streamlit_app,
)
from tests.test_security_browser import _guarded_page

pytestmark = pytest.mark.browser
PAGE_SECONDS = 30          # drawn and settled, on a loaded 2-core machine
PAGE_BYTES = 5 * 2**20     # the rendered page's HTML (the 10 MB names must not reach it whole)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slow-jobs-browser")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
        store = Store(folder / "store.duckdb")
        lanes = store.ingest(huge_lane_names(10), "lanes.json").run_id
        shared = store.ingest(shared_correlation(folder / "shared.json.gz", 3000), "shared.json.gz").run_id
        for job in ("good", "bad"):
            files = write_ranks(folder / job, {f"{job}{r}.json": rank_trace(r, 2, 30) for r in range(2)})
            job_ingest.ingest_job(store, files, job, engine="in-process")
        damage, reason = MANIFEST_DAMAGE["not_json"]
        damage(folder / "store-jobs", "bad")
        with streamlit_app(folder / "store.duckdb") as url:
            yield url, {"lanes": lanes, "shared": shared}, reason


CHART, TABLE = '[data-testid="stVegaLiteChart"]', '[data-testid="stDataFrame"]'


@pytest.mark.parametrize("name, run, drawn", [("timeline", "lanes", CHART), ("runs", "lanes", TABLE),
                                              ("kernels", "shared", TABLE), ("launches", "shared", CHART),
                                              ("timeline", "shared", CHART), ("job", None, CHART)])
def test_each_page_draws_in_bounded_time_and_size(server, browser, name, run, drawn):
    url, runs, reason = server
    page, foreign = _guarded_page(browser, url)
    state = ViewState(page=name, runs=(runs[run],) if run else (), filters=(("job", "good"),) if name == "job" else ())
    started = time.perf_counter()
    try:
        page.goto(share_url(state, base=url), timeout=WAIT_MS)
        page.wait_for_selector(drawn, timeout=WAIT_MS)   # the page's content, not only its title
        _settle(page)
        seconds = time.perf_counter() - started
        _assert_no_exception(page, name)
        assert seconds < PAGE_SECONDS, f"{name}: {seconds:.1f} s"
        assert len(page.content()) < PAGE_BYTES, name
        body = page.inner_text('[data-testid="stMain"]')
        if name == "job":
            assert "bad" in body and reason in body    # listed as damaged, with why
        page.screenshot(path=str(ARTIFACTS / f"slow-{name}-{run}.png"), full_page=False)
        assert foreign == [], foreign
    finally:
        page.close()
