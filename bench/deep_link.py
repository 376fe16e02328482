"""A cold deep link: a shared URL opened as the first request to a freshly started server.

Each run starts `python -m profiler app` (`streamlit run app.py` for an older checkout) over a
copy of bench/out/samples.duckdb (every shipped H200 sample; seeding off), waits for its health
check, then opens in headless Chromium at 1600×1000 the share URL of one analysis page with 4 runs
of one shape selected (FlashAttention 4, naive, cuDNN, flash at B=8 H=16 L=1024 D=64). The time
runs from `goto` until the server said its last script run finished (a first link to a page under
`streamlit run` runs twice) and the page shows its title with every chart drawn
(bench/browser_pages.py's `drawn`).
The 1-minute load average is read before each run and written beside it. Target: <= 2 s.
`--idle-s N` opens the link N seconds after the health check instead of at once: a server that has
been up a while (its warm-up done) but has served no page yet, as a link shared with a team's
running server finds it; printed, not written. `--baseline` opens the same URLs on a bare Streamlit
app instead (`streamlit run`: one page of that path and title drawing a Vega-Lite bar chart and a
table of the linked runs, nothing imported: no pandas, no Altair): the floor that Streamlit itself
(server, front end, a chart drawn by the browser) sets for a cold deep link on this machine. Usage:

    python -m bench.deep_link [--pages timeline,kernels,compare] [--repeat 3] [--before DIR | --baseline]
                              [--idle-s N] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from playwright import sync_api

from bench import browser_pages, first_page
from bench.results import commit_of, write_section
from profiler.analysis.reads import run_queries
from profiler.present.sitemap import BY_PATH
from profiler.storage.store import Store

LIMIT_S = 2.0
SECTION = "Cold deep link"


def one_link(db: Path, path: str, browser, app_dir: Path = browser_pages.ROOT,
             idle_s: float = 0.0) -> tuple[float, float]:
    """(seconds until drawn, load average before) for `path` opened on a fresh server, `idle_s`
    after its health check answered."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.duckdb"
        shutil.copyfile(db, copy)
        names = run_queries.run_catalog(Store(copy)).set_index("name")["run_id"]
        runs = ",".join(names[v + browser_pages.SHAPE] for v in browser_pages.FOUR)
        load = os.getloadavg()[0]
        proc, url = browser_pages.start(copy, app_dir)
        try:
            time.sleep(idle_s)
            load = os.getloadavg()[0] if idle_s else load
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            browser_pages.listen(page)
            t0 = time.monotonic()
            page.goto(f"{url}/{path}?runs={runs}")
            took = browser_pages.drawn(page, BY_PATH[path].title, t0)
            page.close()
        finally:
            proc.terminate()
            proc.wait(30)
    return took, load


# the bare app of `--baseline`: the page of the link's path and title, a chart and a table of its runs,
# with nothing imported (a spec of inline values, a table of a dict)
BASELINE_APP = """import streamlit as st


def page():
    st.title({title!r})
    runs = st.query_params.get("runs", "").split(",")
    st.vega_lite_chart(spec={{"data": {{"values": [{{"run": r, "us": i + 1}} for i, r in enumerate(runs)]}},
                             "mark": "bar", "encoding": {{"x": {{"field": "us", "type": "quantitative"}},
                                                         "y": {{"field": "run", "type": "nominal"}}}}}})
    st.dataframe({{"run": runs}})


st.navigation([st.Page(page, title={title!r}, url_path={path!r}, default=True)]).run()
"""


def baseline_app(folder: Path, path: str) -> Path:
    """A bare Streamlit app in ``folder`` whose one page is ``path`` (`BASELINE_APP`)."""
    (folder / "app.py").write_text(BASELINE_APP.format(title=BY_PATH[path].title, path=path), encoding="utf-8")
    return folder


def section(rows: list[tuple[str, float, float]]) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = commit_of()
    lines = [f"## {SECTION}", "",
             f"`python -m bench.deep_link --write-results`, {when}, commit {commit}. Machine: "
             f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), Python "
             f"{platform.python_version()}, shared: the load average (1 min) is read before each run.", "",
             "A fresh server per row over the shipped samples; the page's share URL with 4 runs is the "
             "server's first request; time from `goto` until the script run finished and every chart "
             f"drew. Target <= {LIMIT_S:g} s.", "",
             "| page | run | s | load avg | met |", "|---|---:|---:|---:|---|"]
    for i, (path, took, load) in enumerate(rows):
        lines.append(f"| {path} | {i + 1} | {took:.2f} | {load:.2f} | {'yes' if took <= LIMIT_S else 'no'} |")
    for path in dict.fromkeys(p for p, _, _ in rows):
        got = [t for p, t, _ in rows if p == path]
        lines.append(f"| {path} | median | **{statistics.median(got):.2f}** | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="timeline,kernels,compare")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--idle-s", type=float, default=0.0,
                    help="open each link this many seconds after the server answered (printed, not written)")
    ap.add_argument("--baseline", action="store_true",
                    help="open the same links on a bare Streamlit app of a chart and a table (printed, not written)")
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout of the app (an older commit): each run is paired with one of it, "
                         "printed (not written) beside, the same page just before")
    opts = ap.parse_args()
    pages = opts.pages.split(",")
    if unknown := [p for p in pages if p not in BY_PATH]:
        ap.error(f"unknown page(s) {', '.join(unknown)}; known: {', '.join(BY_PATH)}")
    db = browser_pages.sample_store()
    rows = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=first_page.CHROMIUM, args=first_page.ARGS)
        for path in pages:
            bare = tempfile.TemporaryDirectory() if opts.baseline else None
            app_dir = baseline_app(Path(bare.name), path) if bare else browser_pages.ROOT
            for _ in range(opts.repeat):
                if opts.before:
                    was, load = one_link(db, path, browser, opts.before.resolve(), opts.idle_s)
                    print(f"{path:10s} {was:.2f} s before (load {load:.2f})", flush=True)
                took, load = one_link(db, path, browser, app_dir, idle_s=opts.idle_s)
                rows.append((path, took, load))
                print(f"{path:10s} {took:.2f} s (load {load:.2f}){' bare Streamlit' if bare else ''}", flush=True)
            if bare:
                bare.cleanup()
        browser.close()
    if opts.write_results and not (opts.idle_s or opts.baseline):
        write_section(SECTION, section(rows))
    elif opts.write_results:
        print("not written: --idle-s and --baseline measure another case than the section's")


if __name__ == "__main__":
    main()
