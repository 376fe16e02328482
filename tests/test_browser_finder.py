"""Finding runs and events as a new user does, in Chromium at 1600×1000 over all 401 shipped H200
runs (issue 40): the app over a fresh store (the shipped samples, already ingested, as a new store
holds them), driven by Playwright.

* the default-shape winner in at most 4 actions (type label words, one click: one run per variant);
* the decode KV=32768 GQA 32/8 winner by typing the app's own label words;
* the slowest kernel of the naive run and the op that launched it from the Events page in 2
  actions, then the Timeline opened at it with its flow drawn;
* a SQL query from a link shown before it runs, then run, its CSV matching `summary --json`;
* no element's text cut (scrollWidth > clientWidth) and no page taller than 3,000 px, on every
  page (the Sweep also over the whole store).

Expected answers come from the sample files' raw JSON (tests/raw_trace.py), not from the store.
Screenshots: test-artifacts/finder-*.png.
"""
from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import re
import statistics
from urllib.parse import urlencode

import pytest

from profiler.capture.samples import SAMPLES_DIR, sample_files, unpack_shipped
from profiler.cli.main import main
from profiler.present.sitemap import BY_PATH, DEFAULT_PAGE, SITE
from profiler.present.style import HIGHLIGHT
from profiler.storage.store import Store
from tests import raw_trace
from tests.test_browser import ARTIFACTS, _assert_no_exception, _settle, open_every_expander, streamlit_app

pytestmark = pytest.mark.browser

WAIT_MS = 90_000
NAIVE = SAMPLES_DIR / "default" / "naive_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
# text an element clips (ellipsis, or overflow hidden) that is wider than the element; charts
# (SVG: names cut to their bars, hover tells) and the canvas grids (hover and copy give the full
# text) aside
CUT = """() => Array.from(document.querySelectorAll('[data-testid="stAppViewContainer"] *')).filter(e => {
  if (e instanceof SVGElement || e.closest('svg') || e.closest('[data-testid="stDataFrame"]')) return false;
  if (!e.textContent.trim() || e.clientWidth <= 2) return false;   // inline, or visually hidden
  const s = getComputedStyle(e);
  if (s.display === 'none' || s.visibility === 'hidden') return false;
  const clips = s.textOverflow === 'ellipsis' || ['hidden', 'clip'].includes(s.overflowX);
  return clips && e.scrollWidth > e.clientWidth + 1;
}).map(e => e.tagName + '.' + (e.getAttribute('data-testid') || '') + ': ' + e.textContent.trim().slice(0, 60))"""
HEIGHT = "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"


@pytest.fixture(scope="module")
def finder_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser-finder") / "store.duckdb"
    assert unpack_shipped(db)  # a fresh store, as the app makes one: every shipped sample
    store = Store(db)
    assert len(store.query("SELECT run_id FROM traces")) == len(sample_files(SAMPLES_DIR))
    ids = dict(store.query("SELECT name, run_id FROM traces").itertuples(index=False))
    with streamlit_app(db) as url:
        yield url, db, ids


def _page(browser, url: str, expect: str | None = None):
    """A fresh page at `url`, drawn: `expect` (a text the page shows once its script ran) seen."""
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(url, timeout=WAIT_MS)
    if expect:
        page.get_by_text(expect).first.wait_for(timeout=WAIT_MS)
    _settle(page)
    return page


RUNS_DRAWN = "runs in the store shown"   # the runs page's caption, under its filters


def _metas() -> dict:
    out = {}
    for path in sample_files():
        with gzip.open(path, "rt") as f:
            out[path] = json.load(f)["attention_run"]
    return out


def _raw_winner(wanted) -> str:
    """The variant whose median repeat (GPU time per step from the raw events) is fastest among
    the sample files whose attention_run `wanted(meta)` accepts."""
    times: dict[str, list[float]] = {}
    for path, meta in _metas().items():
        if wanted(meta):
            events = raw_trace.load(path)["traceEvents"]
            times.setdefault(meta["variant"], []).append(
                raw_trace.us_per_step(events, cats=raw_trace.GPU_WORK, inside_steps=True))
    medians = {}
    for variant, values in times.items():
        mid = statistics.median(values)
        medians[variant] = min(values, key=lambda v: abs(v - mid))
    return min(medians, key=medians.get)


def _search_and_pick_one_per_variant(page, words: str) -> str:
    """Actions 1 and 2: type the words, press the button; the ranking's text once drawn."""
    box = page.get_by_label("search words (as labels read)")
    box.fill(words)
    box.press("Enter")
    _settle(page)
    page.get_by_text(RUNS_DRAWN).wait_for(timeout=WAIT_MS)
    page.get_by_role("button", name="Select one run per variant").click()
    page.get_by_text(" is fastest at ").first.wait_for(timeout=WAIT_MS)
    _settle(page)
    return page.inner_text("[data-testid='stMain']")


def _sentence(text: str, group: str) -> str:
    """The ranking sentence under the group title that starts with `group`."""
    lines = [line for line in text.splitlines() if line.strip()]
    at = next(i for i, line in enumerate(lines) if line.startswith(group))
    return lines[at + 1]


def test_default_shape_winner_in_two_actions(finder_server, browser):
    url, _, _ = finder_server
    page = _page(browser, url, RUNS_DRAWN)
    text = _search_and_pick_one_per_variant(page, "prefill L=1024 warm")
    _assert_no_exception(page, "runs")
    page.screenshot(path=str(ARTIFACTS / "finder-default-winner.png"), full_page=True)
    sentence = _sentence(text, "prefill B=8 H=16 L=1024 D=64 bf16 causal")
    winner = _raw_winner(lambda m: (m["batch"], m["heads"], m["seq_len"], m["head_dim"], m["dtype"], m["causal"],
                                    m["cold"], m.get("mode", "prefill"), m.get("kv_heads", 16), m.get("window"),
                                    m.get("varlen")) == (8, 16, 1024, 64, "bf16", True, False, "prefill", 16, None,
                                                         None))
    assert sentence.startswith(f"{winner} bf16 L=1024 · ") and " is fastest at " in sentence, sentence


def test_decode_gqa_winner_by_label_words(finder_server, browser):
    url, _, _ = finder_server
    page = _page(browser, url, RUNS_DRAWN)
    text = _search_and_pick_one_per_variant(page, "decode KV=32768 GQA 32/8")
    page.screenshot(path=str(ARTIFACTS / "finder-decode-winner.png"), full_page=True)
    sentence = _sentence(text, "decode B=8 H=32/8 L=1 KV=32768 D=128 bf16 causal")
    winner = _raw_winner(lambda m: m.get("mode") == "decode" and m.get("kv_len") == 32768 and m["heads"] == 32
                         and m.get("kv_heads") == 8 and m["batch"] == 8 and not m["cold"])
    assert sentence.startswith(f"{winner} bf16 decode KV=32768 GQA 32/8 · "), sentence
    assert len(re.findall(r"runs=([^&]+)", page.url)[0].split("%2C")) == len(
        {m["variant"] for m in _metas().values() if m.get("mode") == "decode" and m.get("kv_len") == 32768
         and m.get("kv_heads") == 8 and not m["cold"]})


def _innermost_launching_op(path) -> tuple[str, float, str]:
    """(kernel name, its µs, the innermost CPU op with its launch call's External id), of the
    longest kernel, from the raw JSON."""
    events = raw_trace.load(path)["traceEvents"]
    kernel = max((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["dur"])
    call = next(e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e.get("args", {}).get("correlation") == kernel["args"]["correlation"])
    ops = [e for e in events if e.get("cat") == "cpu_op"
           and e.get("args", {}).get("External id") == call["args"]["External id"]]
    return kernel["name"], kernel["dur"], min(ops, key=lambda o: o["dur"])["name"]


def test_slowest_naive_kernel_and_its_op_in_two_actions(finder_server, browser):
    url, _, ids = finder_server
    page = _page(browser, f"{url}/?runs={ids[NAIVE.name.removesuffix('.json.gz')]}", RUNS_DRAWN)
    link = page.get_by_test_id("stMain").get_by_role("link", name="Events", exact=True)
    link.click()   # action 1
    page.get_by_text("kernel launches, the longest first").wait_for(timeout=WAIT_MS)
    _settle(page)
    grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    page.mouse.click(grid["x"] + 16, grid["y"] + 35 + 17)                               # action 2: row 1
    page.get_by_text("Picked:").wait_for(timeout=WAIT_MS)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "finder-events.png"))
    picked = page.get_by_text("Picked:").inner_text()
    name, dur_us, op = _innermost_launching_op(NAIVE)
    assert picked.startswith(f"Picked: {name} · ") and f"launched by {op} through cudaLaunchKernel" in picked, picked
    assert "\u2060" not in picked   # copied as the trace writes it
    assert f"{dur_us:.0f}" in picked.replace(",", "") or f"{dur_us:.1f}" in picked, (picked, dur_us)
    assert not page.evaluate(CUT), page.evaluate(CUT)
    page.get_by_text("Open it on the Timeline").click()
    page.wait_for_selector(".vega-embed svg g.panel_1_marks", timeout=WAIT_MS, state="attached")
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "finder-events-timeline.png"))
    outlined = page.evaluate("""c => Array.from(document.querySelectorAll('path[aria-roledescription="bar"]'))
        .filter(b => (b.getAttribute('stroke') || '').toLowerCase() === c).map(b => b.getAttribute('aria-label'))""",
                             HIGHLIGHT)
    assert any(name[:40] in label or "kernel" in label for label in outlined), outlined
    assert any(op in label for label in outlined), outlined     # the op that launched it, outlined too


QUERY = ("SELECT t.run_id, (SELECT count(*) FROM kernels k WHERE k.run_id = t.run_id) AS kernels,\n"
         "       m.gpu_busy_us_per_iter\n"
         "FROM traces t JOIN run_metrics((SELECT list(run_id) FROM traces)) m USING (run_id)\n"
         "WHERE t.name LIKE 'naive%' ORDER BY t.run_id")


def test_sql_from_a_link_is_shown_then_runs_and_matches_summary(finder_server, browser, tmp_path):
    url, db, _ = finder_server
    page = _page(browser, f"{url}/sql?{urlencode({'sql': QUERY})}", "has not run")
    assert page.get_by_label("Query (one SELECT)").input_value() == QUERY
    assert page.get_by_text("has not run").count() == 1
    tables = page.get_by_test_id("stDataFrame").count()          # the schema browser's (folded)
    page.get_by_role("button", name="Run query").click()
    page.get_by_text(re.compile(r"^\d[\d,]* rows")).wait_for(timeout=WAIT_MS)
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "finder-sql.png"), full_page=True)
    assert page.get_by_text("has not run").count() == 0
    assert page.get_by_test_id("stDataFrame").count() == tables + 1
    with page.expect_download(timeout=WAIT_MS) as download:
        page.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["summary", "--json", "--db", str(db)]) == 0
    summary = {r["run_id"]: r for r in json.loads(out.getvalue()) if r["name"].startswith("naive")}
    assert rows and {r["run_id"] for r in rows} == set(summary)
    for r in rows:
        assert int(r["kernels"]) == summary[r["run_id"]]["kernels"]
        assert float(r["gpu_busy_us_per_iter"]) == pytest.approx(summary[r["run_id"]]["gpu_busy_us_per_iter"])
    assert not page.evaluate(CUT), page.evaluate(CUT)


EVERY_PAGE = [p.url_path for p in SITE] + ["events?events=ops", "sweep (unfiltered)"]


@pytest.mark.parametrize("path", EVERY_PAGE)
def test_no_text_cut_and_pages_within_three_screens(finder_server, browser, path):
    """Every page over 4 runs (and the Sweep over the whole store): at most 3,000 px tall as it
    opens at 1600 x 1000, and no element's text cut with every expander open."""
    url, _, ids = finder_server
    runs = ",".join(ids[n] for n in sorted(ids)[:4])
    at = "" if path == DEFAULT_PAGE else path  # the runs page is the app's root URL, as its share links say
    target = f"{url}/sweep" if path == "sweep (unfiltered)" else f"{url}/{at}{'&' if '?' in at else '?'}runs={runs}"
    page = _page(browser, target)
    page.locator("h1", has_text=BY_PATH[path.split("?")[0].split(" ")[0] or "runs"].title).first.wait_for(timeout=WAIT_MS)
    _settle(page)
    _assert_no_exception(page, path)
    if path.startswith(("sweep", "timeline", "kernels", "compare")):  # charts drawn before measuring
        page.wait_for_selector(".vega-embed svg", timeout=WAIT_MS, state="attached")
        _settle(page)
    height = page.evaluate(HEIGHT)
    open_every_expander(page)  # each drawn and the page at rest before the text is measured
    name = re.sub(r"[^a-z]+", "-", path) or "runs"
    page.screenshot(path=str(ARTIFACTS / f"finder-cut-{name}.png"), full_page=True)
    assert not page.evaluate(CUT), page.evaluate(CUT)
    assert height <= 3000, f"{path}: {height} px tall at 1600 x 1000"
