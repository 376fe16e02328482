"""The browser's CPU per page visit in the tests: a new tab for each page, or a closed tab used again.

The browser tests open each page as a test would: a tab in one shared browser context (the app's
front end fetched and compiled once, tests/conftest.py `SharedContextBrowser`) goes to a share URL
and waits until the page is at rest. Two ways to get that tab are timed in turns over the same
server: `new` opens a tab per page and closes it after; `kept` takes one tab to about:blank after
each page (the app session ends as at a close) and opens the next page in it: the tests' own
`Tabs` (tests/conftest.py). Each round visits every page of the share links (upload and profile left out) with two
default-shape samples selected; the browser's CPU is read from /proc for its processes (browser,
renderer, GPU, utility), the server's the same way. Chromium runs with the tests' CHROMIUM_ARGS.
A `python -m profiler app` over bench/out/samples.duckdb (every shipped sample; seeding off). Usage:

    python -m bench.browser_tabs [--rounds 3] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import sys
import statistics
import time
from pathlib import Path

from playwright import sync_api

from bench.browser_pages import sample_store, start
from bench.ingest import machine
from bench.results import commit_of, write_section
from profiler.present.share import PAGES, ViewState, share_url
from profiler.storage.store import Store
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, Tabs, keep_renderer
from tests.test_browser import _settle

SECTION = "Tests: a closed tab kept for the next test"
VISITED = [p for p in PAGES if p not in ("upload", "profile")]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid_word: bytes) -> float:
    """CPU seconds (user + system) of the live processes whose command line holds `pid_word`."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if pid_word not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


VIEWPORT = {"width": 1400, "height": 1000}


def one_round(context, links: dict[str, str], way: str) -> tuple[float, float, float]:
    """(wall s, browser CPU s, server CPU s) of visiting every link one way."""
    chromium, server, t0 = cpu_s(b"chromium"), cpu_s(b"profiler\x00app"), time.monotonic()
    tabs = Tabs(context, VIEWPORT) if way == "kept" else None
    for url in links.values():
        if tabs:
            page = tabs.new_page()
        else:
            page = context.new_page()
            page.set_viewport_size(VIEWPORT)
        page.goto(url)
        _settle(page)
        page.close()
    return time.monotonic() - t0, cpu_s(b"chromium") - chromium, cpu_s(b"profiler\x00app") - server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    db = sample_store()
    ids = Store(db, read_only=True).query(
        "SELECT run_id FROM traces WHERE name LIKE '%b8_h16_s1024_d64_bf16_causal_warm.json.gz' "
        "AND variant IN ('sdpa_flash', 'naive') ORDER BY variant")["run_id"].tolist()
    load = [os.getloadavg()[0]]
    proc, url = start(db)
    results: dict[str, list[tuple[float, float, float]]] = {"new": [], "kept": []}
    try:
        links = {name: share_url(ViewState(page=name, runs=tuple(ids)), base=url) for name in VISITED}
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = keep_renderer(browser.new_context())
            one_round(context, links, "new")  # the front end fetched and compiled: not counted
            for r in range(args.rounds):
                for way in ("new", "kept"):
                    wall, chromium, server = one_round(context, links, way)
                    results[way].append((wall, chromium, server))
                    load.append(os.getloadavg()[0])
                    print(f"round {r + 1} {way:4s}: {len(links)} pages, {wall:.2f} s, browser CPU {chromium:.2f} s, "
                          f"server CPU {server:.2f} s", flush=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(30)
    rows = []
    for way, runs in results.items():
        per = [c / len(VISITED) for _, c, _ in runs]
        rows.append(f"| {way} | {statistics.median(per):.2f} | {min(per):.2f}-{max(per):.2f} | "
                    f"{statistics.median(w for w, _, _ in runs) / len(VISITED):.2f} | "
                    f"{statistics.median(s for _, _, s in runs) / len(VISITED):.2f} |")
    text = (f"## {SECTION}\n\n`python -m bench.browser_tabs {' '.join(sys.argv[1:])}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, code at {commit_of()}. Machine: "
            f"{machine()}; load average {min(load):.1f}-{max(load):.1f} over the rounds. "
            f"{args.rounds} rounds of {len(VISITED)} page visits each way, in turns (per visit):\n\n"
            "| tab | browser CPU s (median) | spread | wall s | server CPU s |\n|---|---:|---:|---:|---:|\n"
            + "\n".join(rows) + "\n")
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
