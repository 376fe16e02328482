"""First page on a fresh store: what a newcomer waits for after `python -m profiler app`.

A fresh `python -m profiler app` process (`streamlit run app.py` for an older checkout) on an empty store (seeding from data/samples/ on), opened
in a headless Chromium. Times, from the moment the browser asks for the root URL:
  - first page: the runs page's title and its first content (a progress line or the table),
  - first runs: the runs table's caption shows ("N of N runs in the store shown"), sent with its rows,
  - table drawn: the table's grid painted in the browser (its canvas has a size): what the user sees,
  - all samples: every shipped sample is in the store (the progress line is gone).
Server start (process start to the health check answering) is reported apart. Usage:

    python -m bench.first_page [--app-dir DIR | --baseline] [--repeat 3] [--label after] [--until-runs] [--write-results]

`--app-dir` runs another checkout of the app (e.g. an older commit, for a before/after figure).
`--baseline` runs a Streamlit app of a title, a caption and a one-row table instead, timed the same way: the
floor that Streamlit itself (server, front end, browser) sets on this machine.
Needs a Chromium at /usr/bin/chromium (or $PROFILER_CHROMIUM).
"""
from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from playwright import sync_api

ROOT = Path(__file__).resolve().parents[1]
from bench.results import commit_of, write_section

CHROMIUM = os.environ.get("PROFILER_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
RUNS_TEXT = "runs in the store shown"  # the table's caption (a first visit's earlier line says "runs in the store;")
# the runs table's grid painted: a data frame's canvas with a size (the caption above arrives with
# its rows; the grid was drawn 0.5-1.0 s later on 2 busy cores: bench/RESULTS.md, "Kept per run:
# many runs read straight")
GRID_DRAWN = "() => [...document.querySelectorAll('[data-testid=stDataFrame] canvas')].some(c => c.width > 0)"
WAIT_MS = 600_000  # a loaded shared machine seeds the samples in minutes


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_command(app_dir: Path) -> list[str]:
    """How the README starts the server (`python -m profiler app`); `streamlit run app.py` for a
    checkout from before that command (`--before`, `--app-dir`) or a bare Streamlit app."""
    if (app_dir / "profiler" / "present" / "ui" / "serve.py").is_file():
        return [sys.executable, "-m", "profiler", "app"]
    return [sys.executable, "-m", "streamlit", "run", "app.py"]


def one_run(app_dir: Path, browser, all_samples: bool = True) -> dict:
    """Start a fresh server on a fresh store and time the first visit (`all_samples`: until every
    sample is stored, else until the first runs show)."""
    with tempfile.TemporaryDirectory() as tmp:
        port = _port()
        env = {**os.environ, "PROFILER_DB": f"{tmp}/traces.duckdb"}
        env.pop("PROFILER_SEED", None)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [*app_command(Path(app_dir)), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--server.fileWatcherType", "none"],
            cwd=app_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                        break
                except OSError:
                    time.sleep(0.05)
            server_s = time.monotonic() - t0
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            t1 = time.monotonic()
            page.goto(url)
            page.wait_for_selector("h1", timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="stProgress"], [data-testid="stCaptionContainer"]',
                                   timeout=WAIT_MS)
            first_page_s = time.monotonic() - t1
            page.get_by_text(RUNS_TEXT).first.wait_for(timeout=WAIT_MS)
            first_runs_s = time.monotonic() - t1
            page.wait_for_function(GRID_DRAWN, timeout=WAIT_MS)
            table_s = time.monotonic() - t1
            all_s = float("nan")
            if all_samples:
                page.wait_for_selector('[data-testid="stProgress"]', state="detached", timeout=WAIT_MS)
                all_s = time.monotonic() - t1
            caption = page.get_by_text(RUNS_TEXT).first.inner_text()
            page.close()
        finally:
            proc.terminate()
            proc.wait(30)
    return {"server_s": server_s, "first_page_s": first_page_s, "first_runs_s": first_runs_s, "table_s": table_s,
            "all_samples_s": all_s, "caption": caption}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--label", default="")
    ap.add_argument("--baseline", action="store_true", help="time a one-title Streamlit app instead")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--until-runs", action="store_true",
                    help="stop each run when the first runs show (no all-samples figure): many runs on a loaded machine")
    opts = ap.parse_args()
    rows = []
    baseline = tempfile.TemporaryDirectory() if opts.baseline else None
    if baseline:
        Path(baseline.name, "app.py").write_text(
            f'import streamlit as st\nst.title("Runs")\nst.caption("0 {RUNS_TEXT}")\n'
            'st.dataframe({"run": ["a"]})\n')
        opts.app_dir = Path(baseline.name)
        opts.label = opts.label or "baseline: a Streamlit app of a title, a caption and a one-row table"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for i in range(opts.repeat):
            load = os.getloadavg()[0]
            r = one_run(opts.app_dir.resolve(), browser, all_samples=not opts.until_runs)
            r["load"] = load
            rows.append(r)
            print(f"run {i + 1}: server {r['server_s']:.2f} s, first page {r['first_page_s']:.2f} s, "
                  f"first runs {r['first_runs_s']:.2f} s, table drawn {r['table_s']:.2f} s, all samples {r['all_samples_s']:.2f} s "
                  f"(load {load:.2f}; '{r['caption'][:40]}')", flush=True)
        browser.close()
    med = {k: statistics.median(r[k] for r in rows) if not opts.until_runs or k != "all_samples_s" else float("nan")
           for k in ("server_s", "first_page_s", "first_runs_s", "table_s", "all_samples_s")}
    print("median:", {k: round(v, 2) for k, v in med.items()})
    if not opts.write_results:
        return
    commit = commit_of(ROOT if baseline else opts.app_dir)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    label = opts.label or commit
    lines = [f"### {label} (commit {commit}), {when}", "",
             f"Machine: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
             f"Python {platform.python_version()}; {opts.repeat} fresh processes on fresh stores.", "",
             "| run | server start s | first page s | first runs s | table drawn s | all samples s | load avg |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {i + 1} | {r['server_s']:.2f} | {r['first_page_s']:.2f} | {r['first_runs_s']:.2f} | "
              f"{r['table_s']:.2f} | {r['all_samples_s']:.2f} | {r['load']:.2f} |" for i, r in enumerate(rows)]
    lines += [f"| median | {med['server_s']:.2f} | **{med['first_page_s']:.2f}** | "
              f"{med['first_runs_s']:.2f} | {med['table_s']:.2f} | {med['all_samples_s']:.2f} | |", ""]
    section = "First page on a fresh store"
    results = Path(__file__).with_name("RESULTS.md")
    old = results.read_text()
    start = old.find(f"## {section}\n")
    kept = ""
    if start >= 0:  # keep the other labels' subsections (before / after)
        end = old.find("\n## ", start + 1)
        body = old[start:end if end >= 0 else None]
        kept = "\n\n".join("### " + part.rstrip("\n") for part in body.split("\n### ")[1:]
                           if not part.startswith(f"{label} "))
    intro = (f"## {section}\n\n`python -m bench.first_page --write-results` (targets on an idle 2-core "
             "machine: first page under 2 s, all samples under 15 s). A fresh `streamlit run app.py` on an empty store, opened "
             "in headless Chromium; times from the browser's request: *first page* = title plus a "
             "progress line or a caption (since the shipped store: how many runs it holds, before the table), "
             "*first runs* = the table shows runs (its caption, sent with the rows), *table drawn* = its "
             "grid painted, *all samples* = every "
             "shipped sample in the table. Server start is apart. The machine is shared: read the load.\n")
    write_section(section, intro + ("\n" + kept + "\n" if kept else "") + "\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
