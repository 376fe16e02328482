"""The timeline as an engineer comparing runs uses it: `streamlit run app.py` in Chromium at 1600 px
over four H200 samples (flash, cuDNN, naive, FlashAttention 4).

What the SVG shows is checked against the store, computed here from its raw tables: a view
captioned with a step draws only that step's events (ops that start in it, launches made in it and
the GPU work those launches caused), and the step's end is labelled; the GPU lanes of all runs sit
next to each other above the CPU lanes; wide bars carry their names inside; a wheel zoom, a pan
and a dragged range go into the URL and come back from it, the range highlighted in every view.
Screenshots: test-artifacts/timeline-*.png.
"""
from __future__ import annotations

import itertools
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from profiler.present.share import ViewState, share_url
from profiler.storage.store import Store
from tests.conftest import SAMPLES, ingest_all
from tests.test_browser import (
    ARTIFACTS, _assert_no_exception, _settle, settled, streamlit_app)

pytestmark = pytest.mark.browser

WIDTH = 1600
RUNS = [SAMPLES / "default" / f"{v}_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
        for v in ("sdpa_flash", "sdpa_cudnn", "naive", "flash_attn_4")]
WAIT_MS = 90_000

# every view of the timeline chart: its title, its bars (aria-label and box), the text marks
# drawn in it (names inside bars, the step's end) and its lane labels, boxes in page pixels
VIEWS = """() => Array.from(document.querySelectorAll('.vega-embed svg g.role-scope'))
  .filter(g => /^concat_\\d+_group$/.test(g.getAttribute('class').split(' ').pop()))
  .map(g => {
    const box = e => { const r = e.getBoundingClientRect();
                       return {x: r.left, y: r.top, w: r.width, h: r.height}; };
    const title = Array.from(g.querySelectorAll('g.role-title-text text')).map(t => t.textContent).join(' ');
    const bars = Array.from(g.querySelectorAll('path[aria-roledescription="bar"]'))
      .map(b => ({label: b.getAttribute('aria-label') || '', ...box(b)}));
    const texts = Array.from(g.querySelectorAll('g.mark-text.role-mark text'))
      .filter(t => parseFloat(t.getAttribute('opacity') ?? '1') > 0 && t.textContent)
      .map(t => ({text: t.textContent, ...box(t)}));
    const lanes = Array.from(g.querySelectorAll('g.role-axis'))
      .filter(a => /^Y-axis/.test(a.getAttribute('aria-label') || ''))
      .flatMap(a => Array.from(a.querySelectorAll('g.role-axis-label text')))
      .map(t => ({text: t.textContent, ...box(t)}));
    const ranges = Array.from(g.querySelectorAll('g.mark-rect.role-mark'))
      .filter(m => /layer_2_marks/.test(m.getAttribute('class')))
      .flatMap(m => Array.from(m.querySelectorAll('path'))).map(box);
    return {title, bars, texts, lanes, ranges};
  })"""
X_LABELS = """() => Array.from(document.querySelectorAll('.vega-embed svg g.role-axis'))
  .filter(a => (a.getAttribute('aria-label') || '').startsWith('X-axis'))
  .map(a => Array.from(a.querySelectorAll('text')).map(t => t.textContent).join('|'))"""


def _fields(label: str) -> dict[str, str]:
    """A bar's aria-label ("start_us: 12.5; lane: …; name: …") as a dict."""
    parts = re.split(r"; (?=[a-z_ ]+: )", label)
    return dict(p.split(": ", 1) for p in parts if ": " in p)


@pytest.fixture(scope="module")
def timeline_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser-timeline") / "store.duckdb"
    store = Store(db)
    ids = tuple(ingest_all(store, RUNS, source="captured"))
    with streamlit_app(db) as url:
        yield url, store, ids


def _open(browser, url: str, views: int):
    page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
    page.goto(url, timeout=WAIT_MS)
    _settle(page)
    page.wait_for_selector(f".vega-embed svg g.panel_{views - 1}_marks", timeout=WAIT_MS,
                           state="attached")
    _settle(page)
    return page


def _step_events(store: Store, run_id: str, iteration: int) -> dict[str, set]:
    """Per kind group, (name, start µs from the step's start rounded to 0.01) of the events of a
    step, from the raw tables and the step's window (not the stored iteration numbers): ops and
    API calls that start inside the step, GPU work whose launching call started inside it."""
    it = store.query("SELECT start_ns, end_ns FROM iterations WHERE run_id = ? ORDER BY iteration",
                     [run_id]).iloc[iteration]
    s, e = int(it.start_ns), int(it.end_ns)

    def rel(ts):
        return round((int(ts) - s) / 1e3, 2)

    ops = store.query("SELECT name, ts_ns FROM ops WHERE run_id = ? AND ts_ns >= ? AND ts_ns < ?",
                      [run_id, s, e])
    calls = store.query("SELECT name, ts_ns, correlation FROM launches WHERE run_id = ?", [run_id])
    inside = set(calls.loc[(calls.ts_ns >= s) & (calls.ts_ns < e), "correlation"].dropna().astype(int))
    gpu = store.query("SELECT name, ts_ns, correlation FROM kernels WHERE run_id = ? UNION ALL "
                      "SELECT name, ts_ns, correlation FROM memops WHERE run_id = ?", [run_id, run_id])
    gpu = gpu[gpu.correlation.isin(inside)]
    return {"op": {(n, rel(t)) for n, t in zip(ops.name, ops.ts_ns)},
            "api": {(n, rel(t)) for n, t in zip(calls.name, calls.ts_ns) if s <= t < e},
            "gpu": {(n, rel(t)) for n, t in zip(gpu.name, gpu.ts_ns)}}


GROUP = {"op": "op", "runtime": "api", "driver": "api", "kernel": "gpu", "memcpy": "gpu",
         "memset": "gpu"}


@pytest.mark.parametrize("window", [None, (200_000, 447_000)])
def test_a_view_never_draws_another_steps_events(timeline_server, browser, window):
    url, store, ids = timeline_server
    page = _open(browser, share_url(ViewState(page="timeline", runs=ids, window_ns=window),
                                    base=url), 2 * len(ids))
    try:
        _assert_no_exception(page, "timeline")
        views = page.evaluate(VIEWS)
        assert len(views) == 2 * len(ids), [v["title"] for v in views]
        checked, next_step_in_window = 0, 0
        for run in ids:
            own, later = _step_events(store, run, 0), _step_events(store, run, 1)
            lo, hi = (window or (0, 10**12))
            next_step_in_window += sum(lo / 1e3 <= t < hi / 1e3 for g in later.values() for _, t in g)
            mine = [v for v in views if run[:6] in v["title"]]
            assert len(mine) == 2 and "ProfilerStep#6" in mine[0]["title"], [v["title"] for v in mine]
            for view in mine:
                for bar in view["bars"]:
                    f = _fields(bar["label"])
                    if f["event"] == "merged":
                        continue
                    key = (f["name"], round(float(f["start_us"].replace(",", "")), 2))
                    assert key in own[GROUP[f["event"]]], (
                        f"{view['title']}: {f['event']} {key} is not an event of ProfilerStep#6")
                    checked += 1
        assert checked > 40, "too few bars were checked"
        assert next_step_in_window > 0, "the window holds no later step's events: the check is idle"
        flash = next(v for v in views if ids[0][:6] in v["title"] and v["title"].endswith("CPU"))
        assert any(t["text"].startswith("ProfilerStep#6 ends at 313 µs") for t in flash["texts"]), \
            "the step's end is not labelled"
        page.screenshot(path=str(ARTIFACTS / f"timeline-steps-{'whole' if window is None else 'late'}.png"))
    finally:
        page.close()


def test_gpu_lanes_of_all_runs_sit_together_and_cpu_depths_collapse(timeline_server, browser):
    url, _, ids = timeline_server
    for collapse in (False, True):
        state = ViewState(page="timeline", runs=ids, filters=(("cpu", "one"),) if collapse else ())
        page = _open(browser, share_url(state, base=url), 2 * len(ids))
        try:
            views = page.evaluate(VIEWS)
            gpu = [v for v in views if v["title"].endswith("GPU")]
            cpu = [v for v in views if v["title"].endswith("CPU")]
            assert len(gpu) == len(cpu) == len(ids) and views[:len(ids)] == gpu
            assert all(run[:6] in v["title"] for run, v in zip(ids, gpu)), "GPU views out of run order"
            bottom_gpu = max(lane["y"] + lane["h"] for v in gpu for lane in v["lanes"])
            top_cpu = min(lane["y"] for v in cpu for lane in v["lanes"])
            assert bottom_gpu < top_cpu, "a CPU lane sits among the GPU lanes"
            for a, b in itertools.pairwise(gpu):
                gap = min(lane["y"] for lane in b["lanes"]) - max(lane["y"] + lane["h"] for lane in a["lanes"])
                assert gap < 60, f"{a['title']} and {b['title']}: GPU lanes {gap:.0f} px apart"
            depth_lanes = [lane["text"] for v in cpu for lane in v["lanes"] if "depth" in lane["text"]]
            assert bool(depth_lanes) != collapse, depth_lanes[:5]
            if collapse:
                assert all(sum("· ops" in lane["text"] for lane in v["lanes"]) >= 1 for v in cpu)
            page.screenshot(path=str(ARTIFACTS / f"timeline-lanes{'-collapsed' if collapse else ''}.png"))
        finally:
            page.close()


def test_wide_bars_carry_their_names_inside(timeline_server, browser):
    url, _, ids = timeline_server
    page = _open(browser, share_url(ViewState(page="timeline", runs=ids[:2]), base=url), 4)
    try:
        wide = 0
        for view in page.evaluate(VIEWS):
            for bar in view["bars"]:
                f = _fields(bar["label"])
                if bar["w"] < 120 or f["event"] == "merged":
                    continue
                wide += 1
                inside = [t for t in view["texts"]
                          if bar["x"] - 1 <= t["x"] and t["x"] + t["w"] <= bar["x"] + bar["w"] + 1
                          and bar["y"] <= t["y"] + t["h"] / 2 <= bar["y"] + bar["h"]
                          and f["name"].startswith(t["text"].rstrip("…"))]
                assert inside, f"{view['title']}: no name inside the {bar['w']:.0f} px bar of {f['name']}"
        assert wide >= 8, f"only {wide} wide bars: the check is idle"
    finally:
        page.close()


def _window(url: str) -> tuple[int, int] | None:
    w = parse_qs(urlsplit(url).query).get("window")
    return tuple(int(t) for t in w[0].split(",")) if w else None


def _ranges(page) -> list[list[tuple[int, ...]]]:
    """The range's highlight in each view, to the pixel."""
    return [[tuple(round(b[k]) for k in "xywh") for b in v["ranges"]] for v in page.evaluate(VIEWS)]


def test_zoom_pan_and_range_come_back_from_the_share_url(timeline_server, browser):
    url, _, ids = timeline_server
    runs = ids[:2]
    page = _open(browser, share_url(ViewState(page="timeline", runs=runs), base=url), 4)
    try:
        box = page.locator(".vega-embed svg g.panel_2_marks").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
        page.keyboard.down("Control")
        page.mouse.wheel(0, -400)
        page.keyboard.up("Control")
        page.wait_for_function("() => location.search.includes('window=')", timeout=WAIT_MS)
        _settle(page)
        zoomed = _window(page.url)
        box = page.locator(".vega-embed svg g.panel_2_marks").first.bounding_box()
        y = box["y"] + box["height"] / 2
        page.keyboard.down("Shift")  # pan: shift + drag to the left shows later times
        page.mouse.move(box["x"] + box["width"] * 0.6, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.4, y, steps=6)
        page.mouse.up()
        page.keyboard.up("Shift")
        page.wait_for_function(f"() => !location.search.includes('window={zoomed[0]}%2C')"
                               f" && !location.search.includes('window={zoomed[0]},')", timeout=WAIT_MS)
        _settle(page)
        panned = _window(page.url)
        assert panned[0] > zoomed[0] and panned[1] - panned[0] == pytest.approx(zoomed[1] - zoomed[0], rel=0.02)
        box = page.locator(".vega-embed svg g.panel_2_marks").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 5)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 5, steps=6)
        page.mouse.up()
        page.wait_for_function("() => location.search.includes('range=')", timeout=WAIT_MS)
        page.get_by_text("Selected range").first.wait_for(timeout=WAIT_MS)
        _settle(page)
        shared, axes = page.url, page.evaluate(X_LABELS)
        ranges = _ranges(page)
        assert len(ranges) == 4 and all(len(r) == 1 for r in ranges), "the range is not in every view"
        page.screenshot(path=str(ARTIFACTS / "timeline-range-every-view.png"))
        # the buttons zoom about the current window, not about the whole iteration
        centre = sum(panned) / 2
        page.get_by_role("button", name="Zoom in").click()
        page.wait_for_function(f"() => !location.search.includes('window={panned[0]}')", timeout=WAIT_MS)
        _settle(page)
        inner = _window(page.url)
        assert abs(sum(inner) / 2 - centre) <= 1 and inner[1] - inner[0] < panned[1] - panned[0]
        settled(page)  # a rerun that dropped the range would have rewritten the URL by now
        assert "range=" in page.url, "zooming dropped the dragged range"
        assert all(len(r) == 1 for r in _ranges(page)), "zooming dropped the range's highlight"
    finally:
        page.close()
    again = _open(browser.fresh, shared, 4)  # as another browser opens the link
    try:
        _assert_no_exception(again, "shared timeline")
        assert _window(again.url) == panned
        assert again.evaluate(X_LABELS) == axes, "the shared link shows another window"
        assert _ranges(again) == ranges, "the range came back elsewhere"
        assert again.get_by_text("Selected range").count() >= 1
    finally:
        again.close()
