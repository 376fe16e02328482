"""Pages in a real browser with 4 runs selected: from a click in the sidebar to the page drawn.

A `python -m profiler app` (the README's `streamlit run app.py`) over a store of the 168 shipped H200 samples (built once into
bench/out/samples.duckdb; seeding off), opened in headless Chromium at 1600×1000 on the runs page
with 4 runs of one shape selected (FlashAttention 4, naive, cuDNN, flash at B=8 H=16 L=1024 D=64).
Each analysis page is then reached by clicking its sidebar link; the time runs from the click
until the page's title shows, no element is stale, the app is not running and every chart has
drawn (a canvas or svg in each Vega embed) after the server said the page's script run finished
(Streamlit's `script_finished` message on the websocket, of the last run begun), held for 0.3 s
(not counted). The tour runs
`--repeat` times in one server: the first tour computes what the dashboard keeps per run
(profiler/analysis/reads/kept.py), the later ones read it. Target: every page <= 1 s.

Before the tour, the samples are seeded alone (`seed_if_empty` into a fresh store in this process,
as bench/out/samples.duckdb is built): the figure to hold the seeding inside the app against.
With `--first-page`, bench/first_page.py's measurement follows (a fresh server on an empty store:
first page, and every sample seeded inside the app while the runs page shows its progress), and
`--write-results` writes both sections. Targets: every page <= 1 s; the first page < 2 s; the
samples seeded in < 15 s. Usage:

    python -m bench.browser_pages [--repeat 3] [--first-page 2] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from playwright import sync_api
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
from bench import first_page
from bench.results import commit_of, write_section

from profiler.analysis.reads import run_queries
from profiler.capture.samples import seed_if_empty
from profiler.present.sitemap import BY_PATH
from profiler.storage.store import Store

OUT = ROOT / "bench" / "out"
FOUR = ["flash_attn_4", "naive", "sdpa_cudnn", "sdpa_flash"]
SHAPE = "_b8_h16_s1024_d64_bf16_causal_warm"
TOUR = ("timeline", "kernels", "launches", "cpu-cost", "compare", "sweep", "attention", "memory", "runs")
LIMIT_S = 1.0
SEED_LIMIT_S = 15.0
DRAWN_JS = """(title) => {
  const h1 = document.querySelector('h1');
  if (!h1 || !h1.innerText.startsWith(title)) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (document.querySelector('[data-testid*="Skeleton"]')) return false;
  for (const e of document.querySelectorAll('.vega-embed')) {
    if (!e.querySelector('canvas, svg')) return false;
  }
  return true;
}"""


def sample_store() -> Path:
    """bench/out/samples.duckdb: every shipped sample (built once; ~13 s on 2 cores), upgraded to
    this program's schema and metrics (a copy opened by a server would otherwise redo it each time)."""
    path = OUT / "samples.duckdb"
    OUT.mkdir(exist_ok=True)
    if not path.exists():
        seed_if_empty(Store(path))
    with Store(path).connect():  # brought up to date once (schema, metrics), not by every copy's server
        pass
    return path


def seeding_alone() -> tuple[float, int]:
    """Seconds to seed a fresh store from every shipped sample in this process, and how many."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        added = seed_if_empty(Store(Path(tmp) / "store.duckdb"))
        return time.monotonic() - t0, added


def start(db: Path, app_dir: Path = ROOT) -> tuple[subprocess.Popen, str]:
    port = first_page._port()
    env = {**os.environ, "PROFILER_DB": str(db), "PROFILER_SEED": "0"}
    proc = subprocess.Popen([*first_page.app_command(app_dir), "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.fileWatcherType", "none"],
                            cwd=app_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.05)


FINISHED: list[float] = []  # when the server said a script run finished (monotonic s)
STARTED: list[float] = []  # when the server said a script run began (its `new_session` message)


def listen(page) -> None:
    """Note every `new_session` (a script run begins) and `script_finished` message the app's
    websocket receives."""
    def frame(payload) -> None:
        if isinstance(payload, bytes | bytearray):
            msg = ForwardMsg()
            try:
                msg.ParseFromString(bytes(payload))
            except Exception:  # noqa: BLE001 - a frame that is not one message
                return
            kind = msg.WhichOneof("type")
            if kind == "script_finished":
                FINISHED.append(time.monotonic())
            elif kind == "new_session":
                STARTED.append(time.monotonic())
    page.on("websocket", lambda ws: ws.on("framereceived", frame))


SERVER: dict[str, list[float]] = {}  # per page: seconds from the click until the script run finished


def _last_run_finished(t0: float) -> float | None:
    """When the latest script run since ``t0`` finished; None while one is still running (a run
    that reruns itself, as `streamlit run` does with a first link to a page, ends with the rerun)."""
    ended = [t for t in FINISHED if t > t0]
    if not ended or any(t > ended[-1] for t in STARTED):
        return None
    return ended[-1]


def drawn(page, title: str, t0: float | None = None, path: str | None = None) -> float:
    """Seconds from ``t0`` (now) until the page is drawn (see the module docstring); with
    ``path``, the seconds until the server's last script run finished go to SERVER[path]."""
    t0 = time.monotonic() if t0 is None else t0
    while True:
        while _last_run_finished(t0) is None:
            page.wait_for_timeout(10)
        page.wait_for_function(DRAWN_JS, arg=title, timeout=120_000, polling=20)
        finished = _last_run_finished(t0)
        if finished is None:  # another run began meanwhile
            continue
        took = max(time.monotonic() - t0, finished - t0)
        page.wait_for_timeout(300)
        if page.evaluate(DRAWN_JS, title) and _last_run_finished(t0) == finished:
            if path:
                SERVER.setdefault(path, []).append(finished - t0)
            return took


def tour(page, repeat: int, pages: tuple[str, ...] = TOUR) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {p: [] for p in pages}
    for _ in range(repeat):
        for path in pages:
            title = BY_PATH[path].title
            link = page.locator(f'[data-testid="stSidebarNav"] a[href$="/{path}"]').first
            if path == "runs":
                link = page.locator('[data-testid="stSidebarNav"] a').first
            t0 = time.monotonic()
            link.click()
            took = drawn(page, title, t0, path)
            times[path].append(took)
            charts = page.locator(".vega-embed svg, .vega-embed canvas").count()
            print(f"{path:10s} {took:.2f} s  (script run finished at {SERVER[path][-1]:.2f} s)  charts={charts}",
                  flush=True)
    return times


def pages_bench(repeat: int, pages: tuple[str, ...] = TOUR) -> tuple[dict, float]:
    db = sample_store()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.duckdb"
        shutil.copyfile(db, copy)
        names = run_queries.run_catalog(Store(copy)).set_index("name")["run_id"]
        runs = ",".join(names[v + SHAPE] for v in FOUR)
        proc, url = start(copy)
        try:
            with sync_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=first_page.CHROMIUM, args=first_page.ARGS)
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                listen(page)
                t0 = time.monotonic()
                page.goto(f"{url}/?runs={runs}")
                landing = drawn(page, "Runs", t0)
                print(f"runs (opened by URL, fresh server) {landing:.2f} s", flush=True)
                times = tour(page, repeat, pages)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    return times, landing


def pages_section(times: dict, landing: float, repeat: int, load: tuple, seeded: tuple[float, int]) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = commit_of()
    lines = ["## Pages in Chromium, 4 runs selected", "",
             f"`python -m bench.browser_pages --write-results`, {when}, commit {commit}. Machine: "
             f"{os.cpu_count()} CPUs, Python {platform.python_version()}, load average before "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.", "",
             f"A server over the {seeded[1]} H200 samples, Chromium 1600×1000, 4 runs of one shape selected (FlashAttention 4, "
             "naive, cuDNN, flash; B=8 H=16 L=1024 D=64 bf16 causal). Each page reached by its sidebar link; "
             "time from the click until the server has said the script run finished and the page shows its title "
             "and every chart drawn (no skeleton). "
             f"*first*: the first tour (computes what is kept per run); *later*: median of the {repeat - 1} "
             f"later tours. Target <= {LIMIT_S:g} s. The runs page opened by URL on the fresh server: "
             f"{landing:.2f} s.", "",
             f"Seeding alone (`seed_if_empty`, {seeded[1]} samples into a fresh store, this process): "
             f"{seeded[0]:.1f} s (target < {SEED_LIMIT_S:g} s: {'met' if seeded[0] < SEED_LIMIT_S else 'not met'}). "
             "Seeding inside the app: *all samples* under \"First page on a fresh store\".", "",
             "*script s*: of the later tours' median, the part until the server said the page's script run "
             "finished (the rest is the browser drawing it).", "",
             "| page | first s | later s (median) | later max s | script s | met |", "|---|---:|---:|---:|---:|---|"]
    for path, got in times.items():
        later = got[1:] or got
        server = SERVER.get(path, [float("nan")])
        server = server[1:] or server
        lines.append(f"| {path} | {got[0]:.2f} | {statistics.median(later):.2f} | {max(later):.2f} | "
                     f"{statistics.median(server):.2f} | {'yes' if max(later) <= LIMIT_S else 'no'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--first-page", type=int, default=0, help="also run bench/first_page.py this many times")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--pages", default=",".join(TOUR),
                    help="the pages of the tour, comma-separated (default: all; a look at a few pages "
                         "skips the seeding alone unless --write-results)")
    opts = ap.parse_args()
    pages = tuple(opts.pages.split(","))
    unknown = set(pages) - set(TOUR)
    if unknown:
        ap.error(f"unknown page(s) {', '.join(sorted(unknown))}; known: {', '.join(TOUR)}")
    load = os.getloadavg()
    seeded = (float("nan"), 0)
    if opts.write_results or pages == TOUR:
        seeded = seeding_alone()
        print(f"seeding alone: {seeded[1]} samples in {seeded[0]:.2f} s", flush=True)
    times, landing = pages_bench(opts.repeat, pages)
    if opts.write_results:
        write_section("Pages in Chromium, 4 runs selected",
                      pages_section(times, landing, opts.repeat, load, seeded))
    if opts.first_page:
        argv = ["first_page.py", "--repeat", str(opts.first_page)] + ["--write-results"] * opts.write_results
        sys.argv = argv
        first_page.main()


if __name__ == "__main__":
    main()
