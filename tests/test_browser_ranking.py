"""Ranking and finding runs in a real Chromium (`streamlit run app.py`, see tests/test_browser.py).

The store holds four H200 samples of one shape (FlashAttention 4, naive, cuDNN, flash) and flash at
another length. The order and the margin are computed again from the trace JSON (kernel time inside
the ProfilerStep windows over the number of steps), independently of the store. Screenshots go
to test-artifacts/ranking-*.png.
"""
from __future__ import annotations

import pytest

from profiler.storage.store import Store
from tests.test_browser import ARTIFACTS, WAIT_MS, _assert_no_exception, settled, streamlit_app
from tests.test_rank import DEFAULT, VARIANTS, _gpu_us_per_step, _trace

pytestmark = pytest.mark.browser
OTHER_SHAPE = DEFAULT.parent / "sweep" / "sdpa_flash_b8_h16_s2048_d64_bf16_causal_warm_r1.json.gz"
TABLE_ROWS = """(header) => {
  for (const d of document.querySelectorAll('[data-testid="stDataFrame"]')) {
    const rows = [...d.querySelectorAll('table tr')].map(r => [...r.querySelectorAll('td,th')].map(c => c.innerText));
    if (rows.length && rows[0].includes(header)) return rows;
  }
  return null;
}"""


@pytest.fixture(scope="module")
def ranked_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser-rank") / "store.duckdb"
    store = Store(db)
    ids = {v: store.ingest(_trace(v), name=f"{v}_b8_h16_s1024_d64_bf16_causal_warm").run_id for v in VARIANTS}
    ids["flash_2048"] = store.ingest(OTHER_SHAPE, name=OTHER_SHAPE.name.removesuffix(".json.gz")).run_id
    with streamlit_app(db) as url:
        yield url, ids


def _settled(browser, url: str, header: str):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(url, timeout=WAIT_MS)
    page.wait_for_function(f"() => ({TABLE_ROWS})({header!r}) !== null", timeout=WAIT_MS)
    settled(page)
    return page


def _table(page, header: str) -> list[dict]:
    rows = page.evaluate(TABLE_ROWS, header)
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def _check_ranking(page, ids) -> None:
    truth = sorted(VARIANTS, key=_gpu_us_per_step)
    rows = _table(page, "× fastest")
    assert [r["run id"] for r in rows] == [ids[v] for v in truth]
    assert [r["#"] for r in rows] == ["1", "2", "3", "4"]
    ratio = _gpu_us_per_step(truth[1]) / _gpu_us_per_step(truth[0])
    body = page.inner_text('[data-testid="stMain"]')
    assert (f"{truth[0]} bf16 L=1024 · {ids[truth[0]][:6]} is fastest at {_gpu_us_per_step(truth[0]):,.1f} µs "
            f"per call, {ratio:.2f}× faster than {truth[1]} bf16 L=1024") in body
    heading = page.locator('[data-testid="stHeading"]', has_text="Which run wins" if "Which run wins" in body
                           else "runs ranked").first
    heading.locator('[data-testid="stTooltipHoverTarget"]').first.hover()  # the method note: its help
    note = page.locator('[data-testid="stTooltipContent"]').first
    note.wait_for(timeout=10_000)
    assert "ranked only against groups of the same mode" in note.inner_text()
    assert "Not ranked, one variant alone in its workload: prefill B=8 H=16 L=2048" in body


def test_runs_page_ranks_n_runs_by_shape(ranked_server, browser):
    url, ids = ranked_server
    runs = ",".join([ids[v] for v in VARIANTS] + [ids["flash_2048"]])
    page = _settled(browser, f"{url}/?runs={runs}", "× fastest")
    try:
        _assert_no_exception(page, "runs ranking")
        _check_ranking(page, ids)
        page.screenshot(path=str(ARTIFACTS / "ranking-runs.png"), full_page=True)
    finally:
        page.close()


def test_compare_ranks_n_runs_against_a_baseline(ranked_server, browser):
    url, ids = ranked_server
    runs = ",".join([ids[v] for v in VARIANTS] + [ids["flash_2048"]])
    page = _settled(browser, f"{url}/compare?runs={runs}&a={ids['sdpa_flash']}", "× fastest")
    try:
        _assert_no_exception(page, "compare ranking")
        _check_ranking(page, ids)
        page.wait_for_function(f"() => ({TABLE_ROWS})('µs / call × baseline') !== null", timeout=WAIT_MS)
        versus = {r["run"].split(": ", 1)[1].split(" · ")[-1]: r["µs / call × baseline"]
                  for r in _table(page, "µs / call × baseline")}
        for variant in VARIANTS:
            want = _gpu_us_per_step(variant) / _gpu_us_per_step("sdpa_flash")
            assert float(versus[ids[variant][:6]]) == pytest.approx(want, abs=0.006)
        assert versus[ids["flash_2048"][:6]] == ""      # another shape: not compared (drawn as —)
        page.screenshot(path=str(ARTIFACTS / "ranking-compare.png"), full_page=True)
    finally:
        page.close()


def test_runs_filters_narrow_the_table_and_stay_in_the_url(ranked_server, browser):
    url, ids = ranked_server
    page = _settled(browser, f"{url}/?variant=sdpa_flash", "run")
    try:
        rows = _table(page, "run")   # the run as every page labels it: 'variant dtype L=… · id'
        assert len(rows) == 2 and all(r["run"].startswith("sdpa_flash ") for r in rows)
        box = page.get_by_label("search words (as labels read)")
        box.fill("L=2048")
        box.press("Enter")
        page.wait_for_url("**text=**", timeout=WAIT_MS)
        page.wait_for_function(f"() => {{ const r = ({TABLE_ROWS})('run'); return r && r.length === 2; }}",
                               timeout=WAIT_MS)
        assert ["L=2048" in r["run"] for r in _table(page, "run")] == [True]
        assert "1 of 5 runs in the store shown" in page.inner_text('[data-testid="stMain"]')
        _assert_no_exception(page, "runs filters")
        page.screenshot(path=str(ARTIFACTS / "ranking-filters.png"), full_page=True)
    finally:
        page.close()
