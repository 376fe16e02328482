"""Issue 22 in Chromium over `streamlit run app.py`: a store whose runs hold every kind of event,
`[memory]` events and a job, with markup, formulas and control characters in every text
(tests/crafted_markup.py). The memory page's expander labels, the job page's metrics and a job
uploaded under a hostile name show the payload as text; no image, link, formula or coloured text
is built from it and the browser asks no host but the app's. Every table's own toolbar "Download
as CSV" exports no live formula and no split row."""
from __future__ import annotations

import csv
import io
import re

import pytest

from profiler.present.share import ViewState, share_url
from profiler.storage import catalog, job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.crafted_markup import hostile_ranks, hostile_trace, payload
from tests.test_browser import (
    ARTIFACTS, WAIT_MS, _assert_no_exception, _choose, _settle, streamlit_app,
)
from tests.test_security_browser import _assert_nothing_built_from_payloads as _nothing_built, _guarded_page

pytestmark = pytest.mark.browser
LIVE_FORMULA = re.compile(r"^[=+\-@\t\r\n]")
NO_FILE_PICKER = "delete window.showSaveFilePicker;"  # Streamlit then downloads through a link
TABLE_PAGES = ("runs", "kernels", "launches", "cpu-cost", "compare", "memory", "job")


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-markup-browser")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(job_layout.JOB_ROOT_ENV, raising=False)  # jobs beside the store, for the server too
        store = Store(folder / "store.duckdb")
        a = store.ingest(hostile_trace("A"), f"{payload('file')}.json".replace("/", "_")).run_id
        b = store.ingest(hostile_trace("B"), "b.json").run_id
        catalog.rename_run(store, b, payload("R")[:catalog.MAX_NAME_CHARS])
        paths = []
        for name, data in hostile_ranks("J"):
            (folder / name).write_bytes(data)
            paths.append(folder / name)
        job = job_ingest.ingest_job(store, paths, f"team {payload('N')}"[:100], engine="in-process").job
        with streamlit_app(folder / "store.duckdb") as url:
            yield url, (a, b), job, folder


def _assert_nothing_built_from_payloads(page, where: str, own_links: bool = False) -> None:
    """No image, link, formula or coloured text from a payload. With `own_links`, the app's links
    to its own pages that carry the payload in their query (the job page's `?job=`) are allowed."""
    if own_links:
        page.evaluate("""() => document.querySelectorAll('a[data-testid="stPageLink-NavLink"]')
            .forEach(a => { if (!/^[a-z]+:/i.test(a.getAttribute('href'))) a.setAttribute('href', '#own'); })""")
    _nothing_built(page, where)


def _visit(browser, url: str, name: str, runs, job: str, wait_for: str):
    """The page `name` over the hostile runs (and job), once `wait_for` (a selector) has drawn."""
    page, foreign = _guarded_page(browser, url)
    page.add_init_script(NO_FILE_PICKER)
    state = ViewState(page=name, runs=runs, filters=(("job", job),) if name == "job" else ())
    page.goto(share_url(state, base=url), timeout=WAIT_MS)
    page.wait_for_selector(wait_for, timeout=WAIT_MS)
    _settle(page)
    _assert_no_exception(page, name)
    return page, foreign


def _main_text(page) -> str:
    return page.inner_text('[data-testid="stMain"]')


def test_memory_and_job_pages_show_the_payload_as_text(hostile_server, browser):
    url, runs, job, _ = hostile_server
    for name, wait_for in (("memory", '[data-testid="stExpander"]'), ("job", '[data-testid="stMetric"]')):
        page, foreign = _visit(browser, url, name, runs, job, wait_for)
        try:
            _assert_nothing_built_from_payloads(page, name)
            text = _main_text(page)
            assert "\u2060" not in text, f"{name}: an invisible character inserted into trace text"
            if name == "memory":
                assert "www.evil.invalid a@evil.invalid" in text, "link-like words not verbatim"
                labels = page.locator('[data-testid="stExpander"] summary').all_inner_texts()
                assert len(labels) == 2 and all("[link](http://evil.invalid/" in t
                                                for t in labels), labels
            else:
                assert "![b](http://evil.invalid/J0.png):red[b]" in text, text[:500]
            page.screenshot(path=str(ARTIFACTS / f"hostile-markup-{name}.png"), full_page=True)
            assert foreign == [], f"{name}: the browser asked another host for {foreign}"
        finally:
            page.close()


def test_a_job_uploaded_under_a_hostile_name_shows_it_as_text(hostile_server, browser, tmp_path):
    url, _, _, _ = hostile_server
    files = []
    for name, data in hostile_ranks("U"):
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    job = f"up {payload('N')}"[:110]
    page, foreign = _guarded_page(browser, url)
    try:
        page.goto(f"{url}/upload", timeout=WAIT_MS)
        _settle(page)
        _choose(page, files)
        page.get_by_role("textbox", name="Job name (optional)").fill(job)
        page.get_by_role("button", name="Add to the store").click()
        alert = page.locator('[data-testid="stMain"] [data-testid^="stAlertContent"]').first
        alert.wait_for(timeout=WAIT_MS)  # success, or the warning or error that says why not
        assert alert.get_attribute("data-testid") == "stAlertContentSuccess", alert.inner_text()
        _settle(page)
        _assert_no_exception(page, "upload")
        _assert_nothing_built_from_payloads(page, "upload", own_links=True)
        progress = page.locator('[data-testid="stProgress"]').all_inner_texts()
        assert any("[link](http://evil.invalid/N)" in t for t in progress), progress
        page.screenshot(path=str(ARTIFACTS / "hostile-markup-upload-job.png"), full_page=True)
        assert foreign == []
    finally:
        page.close()


def _toolbar_csv(page, table) -> str:
    """The CSV that the table's own toolbar button "Download as CSV" writes."""
    table.hover()
    button = table.locator("xpath=ancestor::*[@data-testid='stElementContainer'][1]").get_by_role(
        "button", name="Download as CSV")
    with page.expect_download(timeout=WAIT_MS) as download:  # the next table's grid may lie over it
        button.dispatch_event("click")
    return open(download.value.path(), encoding="utf-8-sig", newline="").read()


@pytest.mark.parametrize("name", TABLE_PAGES)
def test_the_table_toolbar_exports_no_formula_and_no_split_row(hostile_server, browser, name):
    url, runs, job, _ = hostile_server
    page, foreign = _visit(browser, url, name, runs, job, '[data-testid="stDataFrame"]')
    try:
        tables = [t for t in page.locator('[data-testid="stDataFrame"]').all() if t.is_visible()]
        assert tables, f"{name}: no table"
        checked = 0
        for table in tables[:3]:
            table.scroll_into_view_if_needed()
            toolbar = table.locator("xpath=ancestor::*[@data-testid='stElementContainer'][1]").get_by_role(
                "button", name="Download as CSV")
            table.hover()
            if not toolbar.count():   # a table with no rows draws no toolbar (the job's clock-corrected
                continue              # collectives of the crafted job can be empty): nothing to export
            text = _toolbar_csv(page, table)
            assert "\r" not in text, f"{name}: a carriage return in a cell (readers split the row there)"
            rows = list(csv.reader(io.StringIO(text)))
            assert len(text.splitlines()) == len(rows), f"{name}: a cell split a row"
            for row in rows:
                for value in row:
                    numeric = re.fullmatch(r"-?[\d.eE+-]+", value)
                    assert numeric or not LIVE_FORMULA.match(value), f"{name}: live formula {value!r}"
                    assert not re.search("[\x00-\x1f\x7f-\x9f]", value), f"{name}: control character in {value!r}"
            checked += len(rows)
        assert checked > 1
        page.screenshot(path=str(ARTIFACTS / f"hostile-markup-table-{name}.png"), full_page=True)
        assert foreign == []
    finally:
        page.close()
