"""The whole trace on the timeline (``/timeline?span=trace``) over the largest shared trace: how
long the page takes to draw it, whole and zoomed.

The trace (default: the ResNet-50 training trace of /work/shared/traces, ~82k events, 6 steps) is
ingested into a fresh store under bench/out/. Three measurements, each for the whole trace and for
a zoomed window (the middle 1/20 of it):

- *read + spec*: ``queries.trace_panels`` (the window's events from DuckDB, merged below a pixel)
  and ``timeline_view.timeline_spec`` in this process, on a fresh ``Store`` each time (nothing
  kept from the last repeat);
- *script run*: the Timeline page in Streamlit's AppTest, a fresh session each repeat;
- *Chromium*: ``streamlit run app.py`` in headless Chromium at 1600×1000; from navigation to the
  chart's bars drawn with the app at rest; with the page's height (the scroll height of the main
  area), which a zoom must not change.

Usage: ``python -m bench.timeline_trace [--trace PATH] [--repeat 3] [--write-results]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.results import write_section

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "kineto__tb_plugin__resnet50_num_workers_0__worker0.pt.trace.json.gz"
CHROMIUM = os.environ.get("PROFILER_CHROMIUM", "/usr/bin/chromium")
HEIGHT = "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"
BARS = "() => document.querySelectorAll('.vega-embed svg path[aria-roledescription=\"bar\"]').length"


def windows(extent: int) -> dict[str, tuple[bool, tuple[int, int] | None]]:
    """The cases: (whole trace?, window). The first step alone, as the page opens by default, is
    the reference measured beside them at the same load."""
    mid = extent // 2
    return {"whole trace": (True, None), "zoomed (1/20)": (True, (mid - extent // 40, mid + extent // 40)),
            "one step (the default view), for reference": (False, None)}


def read_and_spec(db: Path, run: str, case, extent: int) -> tuple[float, dict]:
    from profiler.analysis.reads import timeline_queries as queries
    from profiler.present import narrative, timeline_view
    from profiler.storage.store import Store

    whole, window = case
    t0 = time.perf_counter()
    store = Store(db)
    if whole:
        panels = queries.trace_panels(store, [run], window or (0, extent), True)
    else:
        panels = queries.timeline_panels(store, [run], 0, (0, queries.timeline_extent_ns(store, [run], 0)), True)
    spec = timeline_view.timeline_spec(panels, ["run"], [narrative.panel_caption(p) for p in panels], True)
    took = time.perf_counter() - t0
    marks = panels[0].marks
    return took, {"marks": len(marks), "events": int(marks["events"].sum()),
                  "merged": int(marks.loc[marks["kind"] == "merged", "events"].sum()),
                  "views": len(spec["vconcat"])}


def params(run: str, case) -> dict[str, str]:
    whole, window = case
    return ({"runs": run} | ({"span": "trace"} if whole else {})
            | ({"window": f"{window[0]},{window[1]}"} if window else {}))


def script_run(run: str, case) -> float:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(params(run, case))
    at.switch_page("pages/timeline.py")
    t0 = time.perf_counter()
    at.run()
    took = time.perf_counter() - t0
    assert not at.exception and len(at.get("vega_lite_chart")) == 1, [e.value for e in at.exception]
    return took


def browser_runs(db: Path, run: str, cases: dict, repeat: int) -> dict[str, list[tuple[float, int]]]:
    from playwright import sync_api

    from bench.browser_pages import start
    from profiler.present.share import ViewState, share_url

    proc, url = start(db)
    out: dict[str, list[tuple[float, int]]] = {name: [] for name in cases}
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            for _ in range(repeat):
                for name, (whole, window) in cases.items():
                    page = browser.new_page(viewport={"width": 1600, "height": 1000})
                    link = share_url(ViewState(page="timeline", runs=(run,), window_ns=window,
                                               filters=(("span", "trace"),) if whole else ()), base=url)
                    t0 = time.perf_counter()
                    page.goto(link, timeout=120_000)
                    page.wait_for_function(f"() => ({BARS})() > 0 && !document.querySelector("
                                           "'[data-stale=\"true\"]')", timeout=120_000, polling=20)
                    took = time.perf_counter() - t0
                    page.wait_for_timeout(500)
                    out[name].append((took, page.evaluate(HEIGHT)))
                    page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    from profiler.analysis.reads import timeline_queries as queries
    from profiler.storage.store import Store

    before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="timeline-trace-"))
    db = tmp / "store.duckdb"
    os.environ["PROFILER_DB"] = str(db)
    os.environ["PROFILER_SEED"] = "0"
    store = Store(db)
    result = store.ingest(args.trace, source="uploaded")
    run, events = result.run_id, int(store.query("SELECT events FROM traces WHERE run_id = ?",
                                                 [result.run_id]).iloc[0, 0])
    extent = queries.trace_extent_ns(store, [run])
    del store
    cases = windows(extent)
    rows = []
    for name, case in cases.items():
        reads = [read_and_spec(db, run, case, extent) for _ in range(args.repeat)]
        runs = [script_run(run, case) for _ in range(args.repeat)]
        rows.append((name, case, [t for t, _ in reads], reads[-1][1], runs))
        print(name, f"read+spec {statistics.median(t for t, _ in reads):.3f} s", reads[-1][1],
              f"script run {statistics.median(runs):.3f} s", flush=True)
    chromium = browser_runs(db, run, cases, args.repeat)
    after = os.getloadavg()
    text = report(args, run, events, extent, rows, chromium, before, after)
    print(text)
    if args.write_results:
        write_section("Timeline: the whole trace", text)


def report(args, run, events, extent, rows, chromium, before, after) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "not recorded"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    lines = [
        "## Timeline: the whole trace", "",
        f"`python -m bench.timeline_trace --repeat {args.repeat}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, code at {commit}{' + changes' if dirty else ''}. "
        f"Machine: {os.cpu_count()} CPUs, shared with other engineers; load average (1 min) "
        f"{before[0]:.1f} before, {after[0]:.1f} after.", "",
        f"Trace: `{args.trace.name}` ({events:,} events, {extent / 1e9:.2f} s of trace time), run "
        f"{run}, one run selected, `span=trace` (the reference row: the first step, the default view). "
        f"Medians of {args.repeat}; max in brackets.", "",
        "| window | read + spec s | script run s | Chromium, to bars drawn s | page height px | marks | events drawn | merged |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, _, reads, info, runs in rows:
        b = chromium[name]
        heights = sorted({h for _, h in b})
        lines.append(f"| {name} | {statistics.median(reads):.3f} ({max(reads):.3f}) | "
                     f"{statistics.median(runs):.3f} ({max(runs):.3f}) | "
                     f"{statistics.median(t for t, _ in b):.2f} ({max(t for t, _ in b):.2f}) | "
                     f"{', '.join(map(str, heights))} | {info['marks']:,} | {info['events']:,} | {info['merged']:,} |")
    lines += ["", "*read + spec*: the window's marks from DuckDB and the chart's spec, a fresh store "
              "handle each repeat; *script run*: the page in AppTest, a fresh session each; "
              "*Chromium*: navigation to the chart's bars drawn (includes Streamlit's own page "
              "load, ~1 s on this machine). *merged*: events shorter than a pixel drawn inside grey "
              "marks (docs/architecture.md, the timeline)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
