"""The real thing: `streamlit run app.py` driven by Debian's Chromium through Playwright.

Opens a share URL for every page, checks that the page rendered its content without an exception,
uploads a trace through the uploader (and two at once from two sessions), and saves screenshots to
test-artifacts/ (look at them). Needs a Chromium at /usr/bin/chromium (or $PROFILER_CHROMIUM);
`./run-tests` installs Debian's package when it can.
"""
from __future__ import annotations

import contextlib
import os
import socket
import shutil
import subprocess
import sys
import time
import urllib.request
from urllib.parse import urlparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright import sync_api

from profiler.analysis.reads import run_queries
from profiler.present.share import PAGES, ViewState, parse_url, share_url
from profiler.storage.store import Store
from tests.conftest import ARTIFACTS, HAVE_SHARED, SAMPLES, SHARED_TRACES, ingest_all

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
PAGE_FIXTURES = ROOT / "tests" / "fixtures" / "pages"
# our fixtures, plus a real ROCm trace and real uploads from other people's models when the
# third-party traces are present; our own H200 samples otherwise
SEED = [*sorted(PAGE_FIXTURES.glob("*.json")),
        *([SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"] if HAVE_SHARED else [])]
if HAVE_SHARED:
    SINGLE_UPLOAD = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    UPLOADS = [SHARED_TRACES / "param__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json",
               SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]
else:
    SINGLE_UPLOAD = SAMPLES / "default" / "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
    UPLOADS = [SAMPLES / "default" / "naive_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
               SAMPLES / "default" / "sdpa_cudnn_b8_h16_s1024_d64_bf16_causal_warm.json.gz"]
# what each page must show once rendered, besides its title
PAGE_TEXT = {"runs": "runs in the store", "profile": "Set up a capture",  # torch loads on that click
             "upload": "MB per file",
             "attention": "Roofline"}
WAIT_MS = 90_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, deadline_s: float = 90) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        assert proc.poll() is None, f"streamlit exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"streamlit did not answer on {url} within {deadline_s} s")


# the two ways to start the server: the README's (`python -m profiler app`, pages loaded ahead)
# and Streamlit's own, which serves the same app
APP_COMMANDS = {"profiler app": ["-m", "profiler", "app"], "streamlit run": ["-m", "streamlit", "run", "app.py"]}


@contextlib.contextmanager
def streamlit_app(db: Path, command: str = "profiler app") -> Iterator[str]:
    """The dashboard's server (`APP_COMMANDS[command]`) on a free port over the store `db` (not
    seeded), until the block ends; yields its URL. Its output goes to streamlit.log beside the store."""
    port = _free_port()
    env = {**os.environ, "PROFILER_DB": str(db), "PROFILER_SEED": "0"}
    with open(db.parent / "streamlit.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, *APP_COMMANDS[command], "--server.address", "127.0.0.1",
             "--server.port", str(port), "--server.headless", "true",
             "--server.fileWatcherType", "none"],  # watching the checkout floods inotify here
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A streamlit server on a free port over a temp store seeded from the fixture traces."""
    db = tmp_path_factory.mktemp("browser") / "store.duckdb"
    store = Store(db)
    ids = ingest_all(store, SEED)
    with streamlit_app(db) as url:
        yield url, store, ids


# the page is at rest: no script run, skeleton or stale element, every chart drawn, the fonts
# loaded, and the DOM's size and height the same at two polls in a row (the first poll after
# `settled` resets the mark never counts, so a redraw that has not started yet is waited for)
AT_REST = """() => {
  const busy = document.querySelector('[data-testid="stStatusWidget"], [data-testid*="Skeleton"], [data-stale="true"]');
  const undrawn = Array.from(document.querySelectorAll('.vega-embed')).some(e => !e.querySelector('svg, canvas'));
  const size = document.querySelectorAll('*').length + ':' + document.body.scrollHeight;
  const same = window.__atRest === size;
  window.__atRest = size;
  return !busy && !undrawn && document.fonts.status === 'loaded' && same;
}"""


def settled(page, timeout_ms: int = WAIT_MS) -> None:
    """Wait (a condition, not a fixed sleep) until the page is at rest (AT_REST)."""
    page.evaluate("() => { window.__atRest = null; }")
    page.wait_for_function(AT_REST, polling=200, timeout=timeout_ms)


def until(page, condition: str, arg=None, timeout_ms: int = 10_000) -> bool:
    """Whether the JavaScript `condition(arg)` came true within `timeout_ms` (the caller asserts)."""
    try:
        page.wait_for_function(condition, arg=arg, polling=100, timeout=timeout_ms)
        return True
    except sync_api.TimeoutError:
        return False


def _settle(page) -> None:
    """Wait until the app has loaded, its script run has finished and the page is at rest."""
    page.wait_for_selector('[data-testid="stAppViewContainer"]', timeout=WAIT_MS)
    page.wait_for_selector("h1", timeout=WAIT_MS)
    page.wait_for_function(  # script run finished and every element drawn (no skeletons)
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid*=\"Skeleton\"]')", timeout=WAIT_MS)
    settled(page)


# every open expander shows something: a folded section (`ui.folded`) is sent by the run its opening starts
EXPANDERS_FILLED = ("() => Array.from(document.querySelectorAll('[data-testid=\"stExpander\"] details[open]'))"
                    ".every(d => d.querySelector('[data-testid=\"stExpanderDetails\"] [data-testid=\"stElementContainer\"]'))")


def open_every_expander(page) -> None:
    """Click each closed expander open, one at a time, as a user does (one inside another once
    the outer one is open); after each, wait until every open one shows its content and the page
    is at rest."""
    closed = page.locator('[data-testid="stExpander"] details:not([open]) > summary:not([inert] *):visible')
    for _ in range(30):  # more than any page holds
        if not closed.count():
            return
        closed.first.click()
        page.wait_for_function(EXPANDERS_FILLED, polling=100, timeout=WAIT_MS)
        _settle(page)


def _assert_no_exception(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"{where}: exception shown"
    body = page.inner_text("body")
    assert "Traceback" not in body, f"{where}: traceback shown"
    # Streamlit's dialog for a path that is no page of the app (it then runs the runs page)
    assert "Page not found" not in body, f"{where}: opened at a path that is no page of the app"


def _open(browser, url: str, expect: str = "", width: int = 1400):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(url, timeout=WAIT_MS)
    if expect:
        page.get_by_text(expect).first.wait_for(timeout=WAIT_MS)
    _settle(page)
    return page


def _first_deep_link(browser, url: str, ids: list[str], shot: str) -> None:
    page = _open(browser, share_url(ViewState(page="upload", runs=tuple(ids[:1])), base=url),
                 expect=PAGE_TEXT["upload"])
    try:
        nav = page.inner_text('[data-testid="stSidebarNav"]')
        assert "Analysis" in nav and "CPU cost" in nav, f"not app.py's navigation: {nav!r}"
        assert page.locator('[data-testid="stMain"]').bounding_box()["width"] > 1000, "not wide"
        _assert_no_exception(page, "first deep link")
        page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    finally:
        page.close()


def test_first_visit_after_a_restart_can_be_a_deep_link(server, browser):
    """Runs first (file order) on a fresh server: a shared link, not the root, is its first page."""
    url, _, ids = server
    _first_deep_link(browser, url, ids, "first-visit-upload.png")


def test_streamlit_run_serves_a_first_deep_link_through_app_py(server, browser, tmp_path):
    """The same on a server started by `streamlit run app.py`, which runs a first link to a page
    as that file alone (`view._leave_pages_directory_mode` sends it through app.py)."""
    _, store, ids = server
    db = tmp_path / "store.duckdb"
    shutil.copyfile(store.path, db)
    with streamlit_app(db, "streamlit run") as url:
        _first_deep_link(browser, url, ids, "first-visit-upload-streamlit-run.png")


@pytest.mark.parametrize("name", PAGES)
def test_every_page_renders_from_a_share_url(server, browser, name):
    url, _, ids = server
    link = share_url(ViewState(page=name, runs=tuple(ids[:2])), base=url)
    page = _open(browser, link, expect=PAGE_TEXT.get(name, ""))
    try:
        _assert_no_exception(page, name)
        body = page.inner_text('[data-testid="stMain"]')
        assert PAGE_TEXT.get(name, "") in body
        if name not in ("profile", "upload"):
            assert "No runs selected" not in body, f"{name} lost the runs of {link}"
        assert parse_url(page.url).runs == tuple(ids[:2]), "the URL still holds the shared view"
        page.screenshot(path=str(ARTIFACTS / f"page-{name}.png"), full_page=True)
    finally:
        page.close()


def test_the_runs_page_by_its_name_takes_to_the_root_with_its_query(server, browser):
    """/runs, as the sidebar names the page, opens the runs page at the app's root URL with the
    link's query kept, and no "Page not found" dialog; a path that is no page still gets one."""
    url, _, ids = server
    page = _open(browser, f"{url}/runs?runs={ids[0]},{ids[1]}", expect=PAGE_TEXT["runs"])
    try:
        page.wait_for_url(lambda u: urlparse(u).path in ("", "/"), timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, "/runs")
        assert parse_url(page.url).runs == tuple(ids[:2]), page.url
        assert page.locator("h1").first.inner_text().startswith("Runs")
        page.goto(f"{url}/no-such-page", timeout=WAIT_MS)
        page.get_by_text("Page not found").first.wait_for(timeout=WAIT_MS)
    finally:
        page.close()


def test_sidebar_navigation_keeps_the_selected_runs(server, browser):
    url, _, ids = server
    page = _open(browser, share_url(ViewState(runs=tuple(ids[:2])), base=url),
                 expect=PAGE_TEXT["runs"])
    try:
        page.locator('[data-testid="stSidebarNav"]').get_by_text("Launches").click()
        page.wait_for_url("**/launches**", timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, "launches via the sidebar")
        assert "No runs selected" not in page.inner_text('[data-testid="stMain"]')
        assert parse_url(page.url).runs == tuple(ids[:2]), "the sidebar link lost ?runs="
    finally:
        page.close()


def _choose(page, paths) -> None:
    """Put `paths` (one or a list) in the page's file uploader and wait until every file has
    reached the server: a file still uploading when the form is sent is not in it."""
    names = [str(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(names)
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=\"stFileChip\"]').length >= n"
        " && !document.querySelector('[data-testid=\"stFileChipIconSpinner\"]')", arg=len(names),
        timeout=WAIT_MS)


def _upload(page, path) -> None:
    _choose(page, path)
    page.get_by_role("button", name="Add to the store").click()


def test_upload_through_the_uploader_opens_the_new_run(server, browser):
    url, store, _ = server
    page = _open(browser, f"{url}/upload", expect=PAGE_TEXT["upload"])
    try:
        _upload(page, SINGLE_UPLOAD)
        page.wait_for_selector("text=run(s) ready and selected", timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, "upload")
        page.screenshot(path=str(ARTIFACTS / "upload-done.png"), full_page=True)
        run_id = run_queries.run_catalog(store).set_index("name").loc[SINGLE_UPLOAD.name, "run_id"]
        assert parse_url(page.url).runs == (run_id,)
        page.locator('[data-testid="stPageLink"]').get_by_text("Runs", exact=True).click()
        page.get_by_text("runs in the store").first.wait_for(timeout=WAIT_MS)
        _settle(page)
        with page.expect_download(timeout=WAIT_MS) as download:
            page.get_by_role("button", name="Download the trace").click()
        saved = ARTIFACTS / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.read_bytes() == SINGLE_UPLOAD.read_bytes(), "the original trace comes back"
    finally:
        page.close()


def test_a_bad_upload_is_a_plain_sentence(server, browser, tmp_path):
    url, _, _ = server
    bad = tmp_path / "notes.json"
    bad.write_text("these are my notes, not a trace")
    page = _open(browser, f"{url}/upload", expect=PAGE_TEXT["upload"])
    try:
        _upload(page, bad)
        alert = page.locator('[data-testid="stAlertContentError"]')
        alert.first.wait_for(timeout=WAIT_MS)
        assert "notes.json: is not JSON" in alert.first.inner_text()
        _assert_no_exception(page, "bad upload")
    finally:
        page.close()


@pytest.mark.third_party
@pytest.mark.skipif(not (SHARED_TRACES / "graphs").is_dir(), reason="needs the shared graph pairs")
def test_a_graph_replay_and_its_capture_chosen_together_become_one_run(server, browser):
    """Both files chosen in the uploader, no box ticked: the capture is told by its content and the
    joined run opens (issue 37)."""
    url, store, _ = server
    folder = SHARED_TRACES / "graphs" / "sglang_decode"
    replay, capture = folder / "sglang_Qwen3-8B_decode.json.gz", folder / "capture" / "bs_32_rank0.json.gz"
    page = _open(browser, f"{url}/upload", expect=PAGE_TEXT["upload"])
    try:
        _upload(page, [capture, replay])
        page.wait_for_selector("text=The joined run is ready and selected", timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, "graph pair upload")
        page.screenshot(path=str(ARTIFACTS / "upload-graph-pair.png"), full_page=True)
        run_id = run_queries.run_catalog(store).set_index("name").loc[f"{replay.name} (joined with {capture.name})", "run_id"]
        assert parse_url(page.url).runs == (run_id,)
        assert page.get_by_text("replayed GPU events matched to captured launches").count() == 1
    finally:
        page.close()


def test_two_sessions_upload_at_once_and_keep_both(server, browser):
    url, store, _ = server
    sessions = [_open(browser, f"{url}/upload", expect=PAGE_TEXT["upload"]) for _ in UPLOADS]
    try:
        for page, path in zip(sessions, UPLOADS):
            _choose(page, path)
        for page in sessions:  # both clicks before either finishes
            page.get_by_role("button", name="Add to the store").click()
        for page in sessions:
            page.wait_for_selector("text=run(s) ready and selected", timeout=WAIT_MS)
            _assert_no_exception(page, "concurrent upload")
        names = set(run_queries.run_catalog(store)["name"])
        assert {p.name for p in UPLOADS} <= names
    finally:
        for page in sessions:
            page.close()


@pytest.mark.parametrize("name", ["runs", "kernels"])
def test_dark_theme_in_a_narrow_window(server, browser, name):
    url, _, ids = server
    context = browser.new_context(color_scheme="dark", viewport={"width": 900, "height": 900})
    page = context.new_page()
    try:
        page.goto(share_url(ViewState(page=name, runs=tuple(ids[:2])), base=url), timeout=WAIT_MS)
        _settle(page)
        _assert_no_exception(page, f"{name} (dark)")
        background = page.evaluate(
            "getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor")
        channels = [int(c) for c in background[background.index("(") + 1:-1].split(",")[:3]]
        assert max(channels) < 80, f"not the dark theme: {background}"
        page.screenshot(path=str(ARTIFACTS / f"dark-{name}.png"), full_page=True)
    finally:
        context.close()


def test_attention_roofline_of_the_h200_samples(server, browser):
    """naive, flash, math and cuDNN at L=1024: the roofline draws its roofs and four points."""
    url, store, _ = server
    names = ("naive", "sdpa_flash", "sdpa_math", "sdpa_cudnn")
    runs = tuple(store.ingest(SAMPLES / "default" / f"{n}_b8_h16_s1024_d64_bf16_causal_warm.json.gz").run_id
                 for n in names)
    page = _open(browser, share_url(ViewState(page="attention", runs=runs), base=url), expect="Roofline")
    try:
        _assert_no_exception(page, "attention")
        body = page.inner_text('[data-testid="stMain"]')
        assert "No roofline" not in body and "datasheet" in body
        assert page.locator('[data-testid="stVegaLiteChart"]').count() == 1
        page.screenshot(path=str(ARTIFACTS / "attention-roofline.png"), full_page=True)
        chart = page.locator('[data-testid="stVegaLiteChart"]')
        chart.scroll_into_view_if_needed()
        settled(page)
        chart.screenshot(path=str(ARTIFACTS / "attention-roofline-chart.png"))
        page.get_by_text("One point per op").click()                  # per-op crosses on demand
        _settle(page)
        _assert_no_exception(page, "attention, per op")
        chart.scroll_into_view_if_needed()
        chart.screenshot(path=str(ARTIFACTS / "attention-roofline-per-op.png"))
    finally:
        page.close()


def test_kernels_page_shows_counters_of_the_h200_samples(server, browser):
    """flash and cuDNN with their Nsight Compute exports: the caption and the (ncu) columns are on
    the page a user sees, with the achieved occupancy the export holds."""
    url, store, _ = server
    runs = []
    for name in ("sdpa_flash", "sdpa_cudnn"):
        trace = SAMPLES / "default" / f"{name}_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
        runs.append(store.ingest(trace).run_id)
        store.attach_counters(runs[-1], trace.with_name(trace.name.replace(".json.gz", ".ncu.csv")))
    page = _open(browser, share_url(ViewState(page="kernels", runs=tuple(runs)), base=url), expect="Hardware counters")
    try:
        _assert_no_exception(page, "kernels with counters")
        body = page.inner_text('[data-testid="stMain"]')
        assert "Hardware counters (Nsight Compute, one warm call counted" in body
        page.screenshot(path=str(ARTIFACTS / "kernels-counters.png"), full_page=True)
        page.get_by_text("Kernel table:").first.click()   # with 2 runs it is folded: opening it sends it
        grid = page.locator('[data-testid="stDataFrame"]').nth(1)           # drawn on a canvas: look at it
        grid.wait_for(state="visible")
        assert page.locator('[data-testid="stDataFrame"]').count() == 2      # breakdown, kernels
        grid.scroll_into_view_if_needed()
        grid.hover()
        page.mouse.wheel(700, 0)                                           # scroll to the occupancy columns
        settled(page)
        grid.screenshot(path=str(ARTIFACTS / "kernels-counters-table.png"))
        page.get_by_placeholder("part of a kernel name").fill("flash")   # fewer rows: the table stays open
        page.keyboard.press("Enter")
        page.wait_for_function("() => new URL(location.href).searchParams.get('q') === 'flash'", timeout=WAIT_MS)
        _settle(page)
        assert page.locator('[data-testid="stExpander"] details[open]').count() == 1
        assert page.locator('[data-testid="stDataFrame"]').count() == 2
    finally:
        page.close()
