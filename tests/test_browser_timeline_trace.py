"""The whole trace on the timeline in Chromium at 1600×1000: the largest shared trace (ResNet-50,
6 ProfilerSteps, ~82k events) opened with ``span=trace``; every step is labelled on the chart;
a Ctrl + wheel zoom goes into the URL and redraws the window's events, and the page keeps its
height (the lanes are the whole trace's, whatever the window); the link brings back the span and
the window. Screenshots: test-artifacts/timeline-whole-trace*.png."""
from __future__ import annotations

import pytest

from profiler.present.share import ViewState, share_url
from profiler.storage.store import Store
from tests.conftest import HAVE_SHARED, SHARED_TRACES
from tests.test_browser import ARTIFACTS, _assert_no_exception, _settle, streamlit_app
from tests.test_browser_timeline import VIEWS, WAIT_MS, _fields, _window

pytestmark = [pytest.mark.browser, pytest.mark.third_party,
              pytest.mark.skipif(not HAVE_SHARED, reason="needs the third-party traces")]
RESNET = SHARED_TRACES / "kineto__tb_plugin__resnet50_num_workers_0__worker0.pt.trace.json.gz"
HEIGHT = "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"
CHART = "() => document.querySelector('.vega-embed svg').getBoundingClientRect().height"


@pytest.fixture(scope="module")
def trace_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser-trace") / "store.duckdb"
    store = Store(db)
    run = store.ingest(RESNET, source="uploaded").run_id
    steps = store.query("SELECT name FROM iterations WHERE run_id = ? ORDER BY iteration", [run])
    with streamlit_app(db) as url:
        yield url, run, list(steps["name"])


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(url, timeout=WAIT_MS)
    _settle(page)
    page.wait_for_selector(".vega-embed svg g.panel_1_marks", timeout=WAIT_MS, state="attached")
    _settle(page)
    return page


def _bars(page) -> list[tuple[str, float]]:
    return [(_fields(b["label"])["event"], float(_fields(b["label"])["start_us"].replace(",", "")))
            for v in page.evaluate(VIEWS) for b in v["bars"]]


def test_zooming_the_whole_trace_keeps_the_page_height(trace_server, browser):
    url, run, steps = trace_server
    page = _open(browser, share_url(ViewState(page="timeline", runs=(run,),
                                              filters=(("span", "trace"),)), base=url))
    try:
        _assert_no_exception(page, "whole trace")
        texts = [t["text"] for v in page.evaluate(VIEWS) for t in v["texts"]]
        assert all(any(t.startswith(f"{name} · ") for t in texts) for name in steps), (steps, texts[:20])
        height, chart = page.evaluate(HEIGHT), page.evaluate(CHART)
        page.screenshot(path=str(ARTIFACTS / "timeline-whole-trace.png"), full_page=True)
        box = page.locator(".vega-embed svg g.panel_0_marks").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] / 2)
        page.keyboard.down("Control")
        for _ in range(4):
            page.mouse.wheel(0, -400)
        page.keyboard.up("Control")
        page.wait_for_function("() => location.search.includes('window=')", timeout=WAIT_MS)
        _settle(page)
        window = _window(page.url)
        assert window[1] - window[0] < 0.5 * 1_292_199_000, window
        bars = _bars(page)
        assert sum(kind != "merged" for kind, _ in bars) > 50, "the zoomed window draws its events"
        assert page.evaluate(HEIGHT) == height and page.evaluate(CHART) == chart, \
            "zooming changed the page's height"
        page.screenshot(path=str(ARTIFACTS / "timeline-whole-trace-zoomed.png"), full_page=True)
        shared = page.url
    finally:
        page.close()
    again = _open(browser.fresh, shared)  # as another browser opens the link
    try:
        _assert_no_exception(again, "shared whole trace")
        assert _window(again.url) == window and "span=trace" in again.url
        assert again.evaluate(HEIGHT) == height
    finally:
        again.close()
