"""Charts as a user sees them: `streamlit run app.py` in Chromium at 1600 px, charts drawn as SVG.

Over our H200 samples (cuDNN and flash, cold and warm) and, where the third-party traces are
present, three uploads (Qwen on an H100, a ROCm MI250 run, DLRM on a V100): every analysis page
is photographed to test-artifacts/charts-*.png, and its SVG is checked for what screenshots showed
going wrong: clipped legends, bars beside their labels, axis labels under 11 px, pages taller
than three screens. The timeline is driven with the mouse: Ctrl + wheel on one panel zooms every
panel on a shared scale (and only its own on independent scales), a plain wheel scrolls the page,
hovering a launch draws its flow arrows, and a drag lists what ran in the selected range.
"""
from __future__ import annotations

import pytest

from profiler.present import style
from profiler.present.share import ViewState, share_url
from profiler.present.sitemap import BY_PATH
from profiler.storage.store import Store
from tests.conftest import HAVE_SHARED, SAMPLES, SHARED_TRACES
from tests.test_browser import ARTIFACTS, _assert_no_exception, _settle, settled, streamlit_app, until
from tests.conftest import ingest_all

pytestmark = pytest.mark.browser

WIDTH = 1600
SCREEN = 1000
SAMPLE_RUNS = [SAMPLES / "default" / f"sdpa_{v}_b8_h16_s1024_d64_bf16_causal_{t}.json.gz"
               for v in ("flash", "cudnn") for t in ("warm", "cold")]
UPLOADS = ([SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            SHARED_TRACES / "param__dlrm_kineto__worker0_step_12.1694128201545.pt.trace.json"]
           if HAVE_SHARED else [])
PAGES = ["timeline", "kernels", "launches", "cpu-cost", "compare", "attention", "memory", "sweep"]
ALWAYS_DRAWN = {"timeline", "kernels", "launches", "cpu-cost", "compare"}  # the others may have nothing to draw
BAR_PAGES = {"kernels", "launches", "cpu-cost"}  # pages whose bar charts have a discrete y axis
RUN_COLOURED = {"kernels"}  # pages that draw every sample run of the 4-run selection in its colour

# JavaScript run in the page: facts about the SVG charts
AXIS_FONTS = """() => Array.from(document.querySelectorAll('.vega-embed svg g.role-axis-label text'))
  .map(t => parseFloat(getComputedStyle(t).fontSize))"""
CLIPPED_LEGENDS = """() => Array.from(document.querySelectorAll('.vega-embed svg')).flatMap(svg => {
  const box = svg.getBoundingClientRect();
  return Array.from(svg.querySelectorAll('g.role-legend')).map(g => g.getBoundingClientRect())
    .filter(r => r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1
                                 || r.top < box.top - 1 || r.bottom > box.bottom + 1))
    .map(r => [r.left, r.right, box.left, box.right]);
})"""
# every labelled row of a horizontal bar chart: the gap between the label's and the nearest
# bar's vertical centre, in px (a bar beside its label reads as the wrong name)
# every labelled row of a bar chart with a discrete y axis: the gap between the label's vertical
# centre and that of the nearest bar drawn for it (bars whose description holds ": <label>;"),
# in px; a bar beside its label reads as the wrong name
LABEL_BAR_GAPS = """() => Array.from(document.querySelectorAll('.vega-embed svg g.role-axis'))
  .filter(a => /^Y-axis.*discrete/.test(a.getAttribute('aria-label') || ''))
  .flatMap(a => {
    const view = a.parentElement.closest('g.mark-group');
    const bars = Array.from(view.querySelectorAll('path[aria-roledescription="bar"]'))
      .filter(b => b.getBoundingClientRect().height > 0);
    return Array.from(a.querySelectorAll('g.role-axis-label text')).map(t => t.textContent.trim())
      .filter(text => text).flatMap(text => {
        const el = Array.from(a.querySelectorAll('g.role-axis-label text'))
          .find(t => t.textContent.trim() === text).getBoundingClientRect();
        const own = bars.filter(b => (b.getAttribute('aria-label') + ';').includes(': ' + text + ';'))
          .map(b => b.getBoundingClientRect());
        const gaps = own.map(r => Math.abs((r.top + r.bottom) / 2 - (el.top + el.bottom) / 2));
        return gaps.length ? [Math.min(...gaps)] : [];
      });
  })"""
X_LABELS = """(i) => Array.from(document.querySelectorAll('.vega-embed svg g.role-scope'))
  .filter(g => /^concat_\\d+_group$/.test(g.getAttribute('class').split(' ').pop()))
  .map(g => Array.from(g.querySelectorAll('g.role-axis')).filter(a =>
      (a.getAttribute('aria-label') || '').startsWith('X-axis'))
    .map(a => Array.from(a.querySelectorAll('text')).map(t => t.textContent).join('|')).join())
  .filter(labels => labels)"""  # views with an x axis (on a shared scale, the timeline's first ones)
# every view with bars and a discrete y axis: its bars, its non-blank y labels and its text marks
# (the labels at the bars' ends); each bar must carry a label of either kind
BAR_LABELS = """() => Array.from(document.querySelectorAll('.vega-embed svg g.role-axis'))
  .filter(a => /^Y-axis.*discrete/.test(a.getAttribute('aria-label') || ''))
  .map(a => {
    const view = a.parentElement.closest('g.mark-group');
    const shown = el => el.getBoundingClientRect().height > 0;
    const bars = Array.from(view.querySelectorAll('path[aria-roledescription="bar"]')).filter(shown);
    const labels = Array.from(a.querySelectorAll('g.role-axis-label text'))
      .filter(t => t.textContent.trim() && shown(t));
    const texts = Array.from(view.querySelectorAll('g.mark-text.role-mark text'))
      .filter(t => t.textContent.trim() && shown(t));
    return [bars.length, labels.length, texts.length, (a.closest('svg').getAttribute('aria-label') || '')];
  }).filter(v => v[0] > 0)"""
# the fill of every bar and point drawn for a run (its tooltip names it; not the bars coloured
# by a metric): [run label, colour]
RUN_FILLS = """() => Array.from(document.querySelectorAll(
    '.vega-embed svg path[aria-roledescription="bar"], .vega-embed svg path[aria-roledescription="point"]'))
  .map(p => [p.getAttribute('aria-label') || '', p.getAttribute('fill') || ''])
  .filter(([l, f]) => f && f !== 'transparent' && !l.includes('metric: '))
  .map(([l, f]) => [((l + ';').match(/(?:^|; )run: (.*?);/) || [])[1], f.toLowerCase()])
  .filter(([r]) => r)"""
SCROLL_TOP = "document.querySelector('[data-testid=\"stMain\"]').scrollTop"
PAGE_HEIGHT = ("Math.max(...['stMain', 'stAppViewContainer'].map(t => (document.querySelector("
               "'[data-testid=\"' + t + '\"]') || {}).scrollHeight || 0))")


@pytest.fixture(scope="module")
def charts_server(tmp_path_factory):
    """A streamlit server over a store of the sample runs and the uploads."""
    db = tmp_path_factory.mktemp("browser-charts") / "store.duckdb"
    store = Store(db)
    samples = tuple(ingest_all(store, SAMPLE_RUNS, source="captured"))
    uploads = {p.name.split("__")[0]: r for p, r in zip(UPLOADS, ingest_all(store, UPLOADS))}
    with streamlit_app(db) as url:
        yield url, samples, uploads


def _open(browser, url: str, wait_for: str = ""):
    """A page at 1600 px, its script run finished and ``wait_for`` (a selector) drawn."""
    page = browser.new_page(viewport={"width": WIDTH, "height": SCREEN})
    page.goto(url, timeout=90_000)
    _settle(page)
    if wait_for:  # charts in a collapsed expander are drawn but hidden
        page.wait_for_selector(wait_for, timeout=90_000, state="attached")
        settled(page)
    return page


def _open_timeline(browser, url: str, panels: int):
    return _open(browser, url, f".vega-embed svg g.panel_{panels - 1}_marks")


def _selections(charts_server) -> dict[str, tuple[str, ...]]:
    _, samples, uploads = charts_server
    runs = {"samples": samples[:2], "samples-4": samples}
    runs.update({name: (run,) for name, run in uploads.items()})
    return runs


SELECTIONS = ["samples", "samples-4", *(p.name.split("__")[0] for p in UPLOADS)]
MAX_HEIGHT_PX = 3 * SCREEN  # every page, every selection: at most three screens at 1600 x 1000


def _go(page, page_name: str) -> None:
    """To ``page_name`` by its sidebar link, as a user moves between pages (the selection kept),
    at 1600 x 1000, until its title shows and it is at rest (and its first chart drawn where it
    always has one)."""
    page.set_viewport_size({"width": WIDTH, "height": SCREEN})
    page.locator(f'[data-testid="stSidebarNav"] a[href$="/{page_name}"]').first.click()
    page.wait_for_function("(title) => (document.querySelector('h1') || {}).innerText?.startsWith(title)",
                           arg=BY_PATH[page_name].title, timeout=90_000)
    _settle(page)
    if page_name in ALWAYS_DRAWN:  # charts in a collapsed expander are drawn but hidden
        page.wait_for_selector(".vega-embed svg", timeout=90_000, state="attached")
        settled(page)


@pytest.mark.parametrize("selection", SELECTIONS)
def test_every_page_reads_well_at_1600_px(charts_server, browser, selection):
    """One selection (a test each, so that xdist spreads them), opened by its share URL on the
    first page and taken through every other page by the sidebar: axis labels of 11 px or more,
    legends inside their charts, bars beside their labels and labelled, at most three screens
    tall, and each run drawn in one colour on a page, a sample run in the one `style.variant_colour`
    gives it (so the same on every page and in every selection)."""
    runs = _selections(charts_server)[selection]
    pages = [p for p in PAGES if p != "compare" or len(runs) >= 2]
    url, _, _ = charts_server
    problems, heights = [], {}
    page = _open(browser, share_url(ViewState(page=pages[0], runs=runs), base=url), ".vega-embed svg")
    try:
        for page_name in pages:
            if page_name != pages[0]:
                _go(page, page_name)
            where = f"{page_name} ({selection})"
            _assert_no_exception(page, where)
            assert f"runs={runs[0]}" in page.url.replace("%2C", ","), f"{where}: the selection was not kept"
            heights[page_name] = height = page.evaluate(PAGE_HEIGHT)
            page.set_viewport_size({"width": WIDTH, "height": min(height, 4 * SCREEN)})
            settled(page)  # the charts laid out again for the taller window
            page.screenshot(path=str(ARTIFACTS / f"charts-{selection}-{page_name}.png"))
            problems += _chart_problems(page, where)
            if page_name in BAR_PAGES and not page.evaluate(LABEL_BAR_GAPS):
                problems.append(f"{where}: the bar charts were not found in the SVG")
            if height > MAX_HEIGHT_PX:
                problems.append(f"{where}: {height} px tall, more than {MAX_HEIGHT_PX} px")
            fills: dict[str, set[str]] = {}
            for run, fill in page.evaluate(RUN_FILLS):
                fills.setdefault(run, set()).add(fill)
            # a run keeps one colour on a page; a sample run the colour of its variant, a tint when cold
            problems += [f"{where}: {run} drawn in several colours {sorted(f)}" for run, f in fills.items() if len(f) > 1]
            samples_drawn = {run: next(iter(f)) for run, f in fills.items() if "L=1024" in run}
            if page_name in RUN_COLOURED and selection.startswith("samples"):
                assert len(samples_drawn) == len(runs), f"{where}: not every sample run was found: {sorted(fills)}"
            assert len(set(samples_drawn.values())) == len(samples_drawn), f"{where}: two runs share a colour"
            for run, fill in samples_drawn.items():
                assert fill == style.variant_colour(run.split()[0], cold="(cold)" in run), (where, run, fill)
    finally:
        page.close()
    print(f"{selection} heights (px): {heights}")
    assert not problems, "\n".join(problems)


def _chart_problems(page, where: str) -> list[str]:
    """Axis labels under 11 px, legends outside their chart, bars off or without their labels."""
    problems = []
    fonts = page.evaluate(AXIS_FONTS)
    if fonts and min(fonts) < 11:
        problems.append(f"{where}: axis labels of {min(fonts)} px")
    if clipped := page.evaluate(CLIPPED_LEGENDS):
        problems.append(f"{where}: legend outside its chart {clipped}")
    if where.startswith("timeline"):
        return problems
    gaps = page.evaluate(LABEL_BAR_GAPS)
    if gaps and max(gaps) > 4:
        problems.append(f"{where}: a bar sits {max(gaps):.0f} px off its label")
    for n_bars, n_labels, n_texts, chart in page.evaluate(BAR_LABELS):
        if n_bars not in (n_labels, n_texts):
            problems.append(f"{where}: {n_bars} bars, {n_labels} axis labels and "
                            f"{n_texts} bar labels in {chart[:60]!r}")
    return problems


def _zoom_first_panel(page, before: list[str]) -> None:
    """Ctrl + wheel over the first panel; returns once its axis changed (or 10 s passed) and the
    page is at rest again, so the other panels have followed or not."""
    box = page.locator(".vega-embed svg g.panel_0_marks").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -500)
    page.keyboard.up("Control")
    until(page, f"(first) => ({X_LABELS})()[0] !== first", before[0])
    settled(page)


@pytest.mark.parametrize("scale", ["shared", "independent"])
def test_zooming_one_timeline_panel_moves_the_others_on_a_shared_scale(charts_server, browser, scale):
    url, samples, _ = charts_server
    link = share_url(ViewState(page="timeline", runs=samples[:2],
                               filters=(() if scale == "shared" else (("scale", scale),))), base=url)
    page = _open_timeline(browser, link, 2)
    try:
        before = page.evaluate(X_LABELS)
        # views with an x axis: on a shared scale the first GPU and the first CPU view; on
        # independent scales all four (GPU of run 1, GPU of run 2, CPU of run 1, CPU of run 2)
        assert len(before) == (2 if scale == "shared" else 4) and all(before), f"x axes: {before}"
        _zoom_first_panel(page, before)
        after = page.evaluate(X_LABELS)
        assert after[0] != before[0], "Ctrl + wheel did not zoom the panel under the mouse"
        if scale == "shared":
            assert after[1] == after[0] and after[1] != before[1], "the other panel did not follow"
        else:
            assert after[1] == before[1], "an independent panel followed another's zoom"
            assert after[2] != before[2], "a run's CPU lanes did not follow its GPU lanes"
        page.screenshot(path=str(ARTIFACTS / f"charts-timeline-zoomed-{scale}.png"))
    finally:
        page.close()


def test_the_mouse_wheel_scrolls_the_page_over_a_timeline(charts_server, browser):
    url, samples, _ = charts_server
    page = _open_timeline(browser, share_url(ViewState(page="timeline", runs=samples[:2]), base=url), 2)
    try:
        before = page.evaluate(X_LABELS)
        box = page.locator(".vega-embed svg g.panel_0_marks").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 10)
        top = page.evaluate(SCROLL_TOP)
        page.mouse.wheel(0, 300)
        until(page, f"(top) => {SCROLL_TOP} > top", top)
        settled(page)  # had the wheel zoomed the chart, the axis would have been redrawn by now
        assert page.evaluate(SCROLL_TOP) > top, "the page did not scroll"
        assert page.evaluate(X_LABELS) == before, "a plain wheel zoomed the chart"
    finally:
        page.close()


def test_hovering_a_launch_draws_its_flow_and_a_drag_lists_the_range(charts_server, browser):
    url, samples, _ = charts_server
    page = _open_timeline(browser, share_url(ViewState(page="timeline", runs=samples[:1]), base=url), 1)
    try:
        heads = page.locator(".vega-embed svg g.mark-symbol.role-mark path")
        assert heads.count() == 0, "flows drawn before any hover"
        call = page.locator('.vega-embed svg path[aria-roledescription="bar"][aria-label*="LaunchKernel"]')
        box = max((call.nth(i).bounding_box() for i in range(min(call.count(), 50))),
                  key=lambda b: b["width"])
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        until(page, "() => document.querySelectorAll('.vega-embed svg g.mark-symbol.role-mark path').length >= 1")
        assert heads.count() >= 1, "no flow arrow for the hovered launch"
        page.screenshot(path=str(ARTIFACTS / "charts-timeline-flow.png"))
        frame = page.locator(".vega-embed svg g.panel_0_marks").first.bounding_box()
        y = frame["y"] + 5
        page.mouse.move(frame["x"] + frame["width"] * 0.2, y)
        page.mouse.down()
        page.mouse.move(frame["x"] + frame["width"] * 0.6, y, steps=8)
        page.mouse.up()
        page.get_by_text("Selected range").first.wait_for(timeout=90_000)
        _settle(page)
        _assert_no_exception(page, "range selection")
        assert page.locator('[data-testid="stDataFrame"]').count() == 1, "no table of the range"
        page.screenshot(path=str(ARTIFACTS / "charts-timeline-range.png"), full_page=True)
    finally:
        page.close()


SWEEP = SAMPLES / "sweep"
# the legend entries and the line-end names of every drawn chart: [[legend labels], [names]]
SWEEP_TEXTS = """() => Array.from(document.querySelectorAll('.vega-embed svg'))
  .filter(svg => svg.getBoundingClientRect().height > 0)
  .map(svg => [Array.from(svg.querySelectorAll('g.role-legend-label text')).map(t => t.textContent),
               Array.from(svg.querySelectorAll('g.mark-text.role-mark text')).map(t => t.textContent)
                 .filter(t => !t.includes('⇄'))])"""


@pytest.fixture(scope="module")
def sweep_server(tmp_path_factory):
    """A streamlit server over the first capture of every variant and length of the H200 sweep."""
    db = tmp_path_factory.mktemp("browser-sweep") / "store.duckdb"
    store = Store(db)
    files = sorted(SWEEP.glob("*_r1.json.gz"))
    runs = {p.name: r for p, r in zip(files, ingest_all(store, files, source="captured"))}
    with streamlit_app(db) as url:
        yield url, runs


def test_the_sweep_reads_with_every_variant_and_a_selection_narrows_it(sweep_server, browser):
    url, runs = sweep_server
    variants = {name.split("_b8_")[0] for name in runs}
    assert len(variants) >= 10, f"the sweep samples hold {len(variants)} variants"
    page = _open(browser, share_url(ViewState(page="sweep"), base=url), ".vega-embed svg")
    try:
        _assert_no_exception(page, "sweep")
        page.screenshot(path=str(ARTIFACTS / "charts-sweep-all.png"), full_page=True)
        legend, names = page.evaluate(SWEEP_TEXTS)[0]  # the GPU chart (the CPU one is a tab behind)
        assert set(legend) == variants, f"legend {legend}"               # every variant, in full
        assert sorted(names) == sorted(variants), f"line names {names}"  # each line named once
        assert not page.evaluate(CLIPPED_LEGENDS), "the legend runs out of its chart"
        assert page.evaluate(PAGE_HEIGHT) <= 3.3 * SCREEN
    finally:
        page.close()
    picked = (runs["flex_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"],
              runs["sdpa_flash_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"])
    page = _open(browser, share_url(ViewState(page="sweep", runs=picked), base=url), ".vega-embed svg")
    try:
        _assert_no_exception(page, "sweep of a selection")
        legend, names = page.evaluate(SWEEP_TEXTS)[0]
        assert sorted(legend) == ["flex", "sdpa_flash"] and sorted(names) == ["flex", "sdpa_flash"]
        points = page.locator('.vega-embed svg path[aria-roledescription="line mark"], '
                              '.vega-embed svg path[aria-roledescription="point"]').count()
        assert points >= 2 * 2, "the selection emptied the sweep instead of narrowing it"
        page.screenshot(path=str(ARTIFACTS / "charts-sweep-selected.png"), full_page=True)
    finally:
        page.close()


DECODE = SAMPLES / "modes" / "decode"
# the points of the first chart that open a timeline: [aria-label, centre x, centre y]
SWEEP_POINTS = """() => { const svg = Array.from(document.querySelectorAll('.vega-embed svg'))
    .find(s => s.getBoundingClientRect().height > 0);
  return Array.from(svg.querySelectorAll('path[aria-roledescription="point"]'))
    .map(p => { const r = p.getBoundingClientRect();
                return [p.getAttribute('aria-label') || '', (r.left + r.right) / 2, (r.top + r.bottom) / 2]; })
    .filter(p => p[1] > 0); }"""


@pytest.fixture(scope="module")
def kv_sweep_server(tmp_path_factory):
    """The H200 decode samples (a KV cache of 8192 and 32768 per variant) and the length sweep of
    flex and sdpa_flash at 512 and 1024 tokens with their 3 repeats (they swap the lead there)."""
    db = tmp_path_factory.mktemp("browser-kv-sweep") / "store.duckdb"
    store = Store(db)
    files = [*sorted(DECODE.glob("*.json.gz")),
             *(SWEEP / f"{v}_b8_h16_s{n}_d64_bf16_causal_warm_r{r}.json.gz"
               for v in ("flex", "sdpa_flash") for n in (512, 1024) for r in (1, 2, 3))]
    runs = {p.name: r for p, r in zip(files, ingest_all(store, files, source="captured"))}
    with streamlit_app(db) as url:
        yield url, runs


def test_a_kv_cache_sweep_draws_each_variant_names_the_crossover_and_opens_a_points_timeline(
        kv_sweep_server, browser):
    url, runs = kv_sweep_server
    decode_variants = {name.split("_decode_")[0] for name in runs if "_decode_" in name}
    page = _open(browser, share_url(ViewState(page="sweep"), base=url), ".vega-embed svg")
    try:
        _assert_no_exception(page, "kv sweep")
        page.screenshot(path=str(ARTIFACTS / "charts-sweep-kv.png"), full_page=True)
        body = page.inner_text("body")
        assert "decode: KV cache length sweep" in body and "prefill: sequence length sweep" in body
        legend, names = page.evaluate(SWEEP_TEXTS)[0]          # the decode sweep comes first
        roofs = [n for n in names if n.endswith(" TB/s")]      # the TB/s chart's roof lines, labelled
        assert roofs == ["NVIDIA H200 datasheet 4.8 TB/s"], names
        names = [n for n in names if n not in roofs]
        assert set(legend) == decode_variants and sorted(names) == sorted(decode_variants)
        assert "sdpa_flash overtakes flex for prefill from 1k tokens" in body
        assert "No two variants swap the lead in TB/s" in body
        assert not page.evaluate(CLIPPED_LEGENDS), "the legend runs out of its chart"
        points = page.evaluate(SWEEP_POINTS)
        assert len(points) >= 2 * len(decode_variants), points       # every variant at both lengths
        # a point no other point covers (FlashAttention 4 and the math backend both read ~2.9 TB/s at 8k)
        def run_of(point):
            return point[0].split("run id: ")[-1].split(";")[0]
        label, x, y = next(p for p in points if all(abs(p[1] - q[1]) + abs(p[2] - q[2]) > 12
                                                    for q in points if run_of(q) != run_of(p)))
        page.mouse.click(x, y)                                    # the link opens in this tab
        page.wait_for_url("**/timeline?runs=*", timeout=60_000)
        _settle(page)
        shown = page.url.split("runs=")[1].split("&")[0].split(",")
        assert len(shown) == 1 and shown[0] in runs.values(), page.url
        name = next(n for n, r in runs.items() if r == shown[0])
        assert f"run id: {shown[0]}" in label and name.split("_decode_")[0] in label, (name, label)
        page.wait_for_selector(".vega-embed svg", timeout=90_000, state="attached")
        settled(page)
        _assert_no_exception(page, "the timeline a sweep point opened")
        page.screenshot(path=str(ARTIFACTS / "charts-sweep-kv-timeline.png"), full_page=True)
    finally:
        page.close()
