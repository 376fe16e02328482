"""Security and robustness in a real browser: `streamlit run app.py` and Chromium.

Every page opens runs whose every text carries markup payloads (images and links to an outside
host, colour directives, KaTeX, HTML, autolinks), next to a run with malformed device properties,
extreme numbers and a 40 MB name. The browser's requests are routed: any request to a host other
than the app fails the test, and no image, link, formula or coloured text may be built from a
payload. Then every crafted input of tests/crafted.py, the 1 GiB-of-spaces gzip and the 40 MB name
go through the upload page at once: each gets its own outcome and nothing raises.
"""
from __future__ import annotations

import functools
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from profiler.present.share import PAGES, ViewState, share_url
from profiler.storage import catalog
from profiler.storage.store import Store
from tests.conftest import Tabs, keep_renderer
from tests.crafted import CRAFTED, huge_name_trace, whitespace_gzip
from tests.pages.test_security_pages import FLASH, NAIVE, odd_trace, payload, payload_trace
from tests.test_browser import (
    ARTIFACTS, PAGE_TEXT, WAIT_MS, _assert_no_exception, _choose, _settle, streamlit_app,
)

pytestmark = pytest.mark.browser
LITERAL_ON = {"timeline", "kernels", "launches", "cpu-cost"}  # pages with run labels as headings


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("hostile-browser") / "store.duckdb"
    store = Store(db)
    a = store.ingest(payload_trace(NAIVE, "A"), f"{payload('file')}.json").run_id
    b = store.ingest(payload_trace(FLASH, "B"), "b.json").run_id
    odd = store.ingest(odd_trace(), "odd.json").run_id
    catalog.rename_run(store, b, payload("R")[:catalog.MAX_NAME_CHARS])
    with streamlit_app(db) as url:
        yield url, store, (a, b, odd)


class _Guard:
    """The guarded pages' browser context, one per test process (the app's front end fetched and
    compiled once, `keep_renderer`): every request to a host other than the app of the page opened
    last is aborted and recorded in that page's list."""

    def __init__(self, browser):
        viewport = {"width": 1400, "height": 1000}
        self.context = keep_renderer(browser.new_context(viewport=viewport))
        self.tabs = Tabs(self.context, viewport)
        self.app_host, self.foreign = "", []
        self.context.route("**/*", self._route)

    def _route(self, r) -> None:
        target = r.request.url
        if target.startswith(("data:", "blob:")) or urlsplit(target).netloc == self.app_host:
            r.continue_()
        else:
            self.foreign.append(target)
            r.abort()


@functools.cache
def _guard(browser) -> _Guard:
    return _Guard(browser)


def _guarded_page(browser, url: str):
    """(page, foreign): a page whose requests to any host but the app at `url` are aborted and
    recorded in `foreign`; close the page when done."""
    guard = _guard(browser)
    guard.app_host, guard.foreign = urlsplit(url).netloc, []
    return guard.tabs.new_page(), guard.foreign


def _assert_nothing_built_from_payloads(page, where: str) -> None:
    for selector, what in (('img[src*="evil"]', "image"), ('a[href*="evil"]:not([href^="#"])', "link"),
                           (".katex", "formula"), ('[data-testid="stMarkdownContainer"] img', "image")):
        found = page.locator(selector)
        assert found.count() == 0, (f"{where}: a {what} was built from a payload: "
                                    f"{[found.nth(i).evaluate('e => e.parentElement.outerHTML')[:300] for i in range(min(found.count(), 3))]}")
    coloured = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMarkdownContainer"] span')]
        .filter(s => s.textContent.includes('red-') && (s.getAttribute('style') || s.className).match(/color|red/i))
        .length""")
    assert coloured == 0, f"{where}: coloured text was built from a payload"


@pytest.mark.parametrize("name", PAGES)
def test_payloads_on_every_page_stay_text_and_fetch_nothing(hostile_server, browser, name):
    url, _, (a, b, odd) = hostile_server
    runs = (a, b) if name == "compare" else (a, b, odd)
    page, foreign = _guarded_page(browser, url)
    try:
        page.goto(share_url(ViewState(page=name, runs=runs), base=url), timeout=WAIT_MS)
        if PAGE_TEXT.get(name):
            page.get_by_text(PAGE_TEXT[name]).first.wait_for(timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, name)
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0, f"{name}: error shown"
        _assert_nothing_built_from_payloads(page, name)
        if name in LITERAL_ON:  # the payloads appear as literal text once the page has drawn them
            shown = """() => {
                const main = document.querySelector('[data-testid="stMain"]');
                const body = main ? main.innerText : '';
                return body.includes('[link](http://evil.invalid/') && body.includes(':red[red-');
            }"""
            try:
                page.wait_for_function(shown, timeout=WAIT_MS)
            except PlaywrightTimeout:
                body = page.inner_text('[data-testid="stMain"]')[:300]
                raise AssertionError(f"{name}: payload not shown as text; the page reads {body!r}") from None
            _assert_nothing_built_from_payloads(page, name)
        page.screenshot(path=str(ARTIFACTS / f"hostile-{name}.png"), full_page=True)
        assert foreign == [], f"{name}: the browser asked another host for {foreign}"
    finally:
        page.close()


def test_every_crafted_upload_gets_its_own_outcome(hostile_server, browser, tmp_path):
    url, store, _ = hostile_server
    files = []
    for file_name, (data, _) in CRAFTED.items():
        (tmp_path / file_name).write_bytes(data)
        files.append(tmp_path / file_name)
    files.append(whitespace_gzip(tmp_path / "spaces.json.gz"))
    (tmp_path / "huge_name.json").write_bytes(huge_name_trace())
    files.append(tmp_path / "huge_name.json")
    failing = {n for n, (_, e) in CRAFTED.items() if e.startswith("error")} | {"spaces.json.gz"}
    page, foreign = _guarded_page(browser, url)
    try:
        page.goto(f"{url}/upload", timeout=WAIT_MS)
        page.get_by_text(PAGE_TEXT["upload"]).first.wait_for(timeout=WAIT_MS)
        _settle(page)
        _choose(page, [str(f) for f in files])
        page.get_by_role("button", name="Add to the store").click()
        try:
            page.wait_for_selector("text=failed (see above)", timeout=WAIT_MS * 2)
        finally:
            page.screenshot(path=str(ARTIFACTS / "hostile-uploads.png"), full_page=True)
        _settle(page)
        _assert_no_exception(page, "crafted uploads")
        errors = [e.strip().splitlines()[-1]  # after the icon's name
                  for e in page.locator('[data-testid="stAlertContentError"]').all_inner_texts()]
        assert sorted(e.split(": ", 1)[0] for e in errors) == sorted(failing), errors
        assert f"{len(files) - len(failing)} of {len(files)} files added" in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "hostile-uploads.png"), full_page=True)
        names = set(store.query("SELECT name FROM traces")["name"])
        assert {f.name for f in files} - failing <= names and not failing & names
        assert foreign == []
    finally:
        page.close()
