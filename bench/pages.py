"""Time every page's script run (Streamlit AppTest) on a store holding 10 runs plus one uploaded
trace of more than 1 million events, and a job of the 7 DLRM rank traces.

The store (bench/out/pages.duckdb) gets the five real traces of ../shared/traces, five fixture
traces of tests/fixtures, one large trace written by bench/make_large_trace.py and the job
"dlrm"; building it once takes a minute, later runs reuse it. A second store holds the shipped
H200 samples. Each page is opened the way a shared link opens it (app.py, ?runs=...), in a fresh
AppTest session, after one warm-up run of the app so that module imports are not counted. The
first of the repeats of a selection is the one that computes what the dashboard then keeps per
run (profiler/analysis/reads/kept.py): its time is the "first s" column. Every page of
profiler.present.share.PAGES must be in the scenarios. Usage:

    python -m bench.pages [--mb 230] [--repeat 5] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from bench.make_large_trace import make_large_trace
from bench.results import write_section

from profiler.analysis.findings import job_queries
from profiler.analysis.reads import queries, run_queries, timeline_queries
from profiler.capture.samples import seed_if_empty
from profiler.present.share import PAGES as ALL_PAGES
from profiler.present.ui import preload
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store

OUT = ROOT / "bench" / "out"
SHARED = Path(os.environ.get("PROFILER_TEST_TRACES") or ROOT.parent / "shared" / "traces")
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "pages").glob("*.json")) + sorted(
    (ROOT / "tests" / "fixtures").glob("tiny_*.json"))
PAGES = ("timeline", "kernels", "launches", "cpu-cost", "compare", "attention", "memory")  # analysis pages
OTHER_PAGES = ("runs", "upload", "profile", "sweep")
DLRM = sorted(SHARED.glob("param__dlrm_kineto__worker*.pt.trace.json"))
JOB = "dlrm"
SAMPLES = ROOT / "data" / "samples"
LIMIT_S = 1.0


def build_store(path: Path, mb: float) -> tuple[Store, list[str], str]:
    """The bench store: (store, the 10 small run ids, the large run id)."""
    store = Store(path)
    small = sorted(SHARED.glob("*.json*")) + FIXTURES
    ids = [store.ingest(p).run_id for p in small[:10]]
    large = OUT / f"pages-large-{int(mb)}mb.trace.json"
    if not large.exists():
        print(f"writing {large.name} ...", flush=True)
        make_large_trace(large, int(mb * 1e6), SHARED)
    result = store.ingest(large)
    print(f"large run {result.run_id}: {result.events:,} events, {result.kernels:,} kernels"
          f"{' (already stored)' if result.duplicate else f', ingested in {result.seconds:.1f} s'}")
    if JOB not in set(job_queries.job_list(store)["job"]):
        job_ingest.ingest_job(store, DLRM, JOB, engine="in-process")
    return store, ids, result.run_id


def time_page(page: str, params: dict[str, str], repeat: int) -> dict:
    """Median and max seconds of ``repeat`` script runs, each in a fresh session."""
    from streamlit.testing.v1 import AppTest

    times, charts, problems = [], 0, []
    for _ in range(repeat):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        for key, value in params.items():
            at.query_params[key] = value
        at.switch_page(f"pages/{page.replace('-', '_')}.py")
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        charts = len(at.get("vega_lite_chart"))
        problems = [str(e.value)[:120] for e in list(at.exception) + list(at.error)]
    return {"median_s": statistics.median(times), "max_s": max(times), "first_s": times[0],
            "charts": charts, "problems": problems}


def scenarios(small: list[str], large: str) -> list[tuple[str, str, dict[str, str]]]:
    every = ",".join([large, *small])
    return ([(page, "all 11 runs", {"runs": every}) for page in PAGES + OTHER_PAGES]
            + [(page, "none", {}) for page in ("runs", "sweep")]
            + [(page, "large run alone", {"runs": large}) for page in PAGES if page != "compare"]
            + [("compare", "large vs a small run", {"runs": f"{large},{small[0]}"}),
               ("job", f"job {JOB} ({len(DLRM)} ranks)", {"job": JOB})])


def check_coverage(pages: set[str]) -> None:
    """Every page of the app is timed."""
    missing = [p for p in ALL_PAGES if p not in pages]
    if missing:
        raise SystemExit(f"bench/pages.py times no scenario of the page(s) {', '.join(missing)}")


def timeline_stress(store: Store, large: str) -> str:
    """One timeline panel over the whole large trace (every event in the window)."""
    with store.session() as db:
        bounds = db.query("SELECT start_ns, end_ns, events FROM traces WHERE run_id = $id",
                          {"id": large}).iloc[0]
        span = int(bounds.end_ns - bounds.start_ns)
        store.cache.clear()  # time the query, not what the pages kept
        start = time.perf_counter()
        marks = timeline_queries.timeline_marks(db, large, int(bounds.start_ns), (0, span))
        seconds = time.perf_counter() - start
    return (f"timeline_marks over the whole large trace ({int(bounds.events):,} events, "
            f"{span / 1e9:.1f} s of trace time): {len(marks):,} marks sent of "
            f"{int(marks['marks_before_cap'].iloc[0]):,} after merging, in {seconds:.3f} s")


def report(rows: list[tuple], notes: list[str], events: int, repeat: int) -> str:
    load = os.getloadavg()
    lines = ["## Pages", "",
             f"`python -m bench.pages --write-results`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. "
             f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (shared with other engineers).", "",
             f"Store: 10 runs (5 real traces, 5 fixtures) + one uploaded trace of {events:,} events "
             f"(bench/make_large_trace.py) + the job {JOB!r} of the {len(DLRM)} DLRM rank traces; the "
             f"last rows use a second store of the shipped H200 samples. Each page opened as a shared "
             f"link in a fresh AppTest session, {repeat} times in one process, after one warm-up run "
             f"of the app (imports not counted). *first s*: the first of the repeats, which computes "
             f"what the dashboard then keeps per run (profiler/analysis/reads/kept.py); the other repeats "
             f"read it. Target: every script run < {LIMIT_S:.0f} s.", "",
             "| page | runs selected | median s | max s | first s | charts | met | problems |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for page, runs, r in rows:
        ok = "yes" if r["max_s"] < LIMIT_S and not r["problems"] else "**no**"
        lines.append(f"| {page} | {runs} | {r['median_s']:.2f} | {r['max_s']:.2f} | {r['first_s']:.2f} "
                     f"| {r['charts']} | {ok} | {'; '.join(r['problems']) or '-'} |")
    return "\n".join(lines + [""] + [f"- {note}" for note in notes] + [""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=230, help="large trace size, MB (>1M events)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    db = OUT / "pages.duckdb"
    store, small, large = build_store(db, args.mb)
    events = int(store.query("SELECT events FROM traces WHERE run_id = $id", {"id": large}).iloc[0, 0])
    os.environ["PROFILER_DB"], os.environ["PROFILER_SEED"] = str(db), "0"
    warm_up_s = time_page("kernels", {"runs": large}, 1)["max_s"]   # imports, store cache
    preload().join()  # the app warms the chart modules on a helper thread at start (ui.preload)
    rows, plan = [], scenarios(small, large)
    check_coverage({page for page, _, _ in plan})
    for page, runs, params in plan:
        rows.append((page, runs, time_page(page, params, args.repeat)))
        print(page, runs, f"{rows[-1][2]['median_s']:.2f} s", rows[-1][2]["problems"], flush=True)
    samples_db = OUT / "pages-samples.duckdb"
    seed_if_empty(Store(samples_db), SAMPLES)
    os.environ["PROFILER_DB"] = str(samples_db)
    catalog = run_queries.run_catalog(Store(samples_db))
    shapes = queries.run_shapes(Store(samples_db), catalog["run_id"])
    warm = shapes[(shapes["cold"] == False) & shapes["seq_len"].notna()]  # noqa: E712
    four = ",".join(catalog["run_id"][:4])
    rows.append(("sweep", f"none, {len(catalog)} H200 sample runs ({len(warm)} warm with a shape)",
                 time_page("sweep", {}, args.repeat)))
    for page in ("runs", "attention", "memory"):
        rows.append((page, "4 of the H200 samples", time_page(page, {"runs": four}, args.repeat)))
    notes = [timeline_stress(store, large),
             f"Warm-up (the first script run in a fresh process: imports of streamlit, altair, "
             f"pandas, duckdb and opening the store): {warm_up_s:.2f} s, not counted above; the chart modules "
             f"load on a helper thread when the app starts (ui.preload), awaited before timing; torch "
             f"loads only when a capture starts"]
    text = report(rows, notes, events, args.repeat)
    print(text)
    if args.write_results:
        write_section("Pages", text)


if __name__ == "__main__":
    main()
