"""The cost of issue 39's checks on the ingest benchmark: `ingest` of one large plain-JSON trace
(make_large_trace.py, from the real traces) into a fresh store, by this checkout with the checks
on and with them switched off, in pairs whose order alternates (on/off, off/on, ...), so that the
load of a shared machine falls on both sides alike.

The checks on this path, and how the 'off' side skips them (the same code otherwise): the store
path refused when it is a URL (`store.URL_SCHEME` never matches), the file name made UTF-8 text
(`source.utf8_text` returns the name as given), and the writer's turn at the store file
(`turns.take` takes none: no open, no flock; the stat that decides whether to take one stays). Both sides start the same way, through this module
(`python -m bench.checks_cost --side on|off -- ingest ...`), so they differ only by the checks.

Each run is timed by its wall time and by its CPU time (user + system of the process and the
worker processes it waited for: what the load of other work changes least). The figure is the
median of the paired ratios on/off, with its noise: the ratios' quartiles and a bootstrap 95 %
interval of their median. Target: < 2 % slower.
Usage: python -m bench.checks_cost [--mb 110] [--pairs 15] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.results import children_cpu_s, commit_of

ROOT = Path(__file__).resolve().parents[1]
SECTION = "Ingest: the cost of issue 39's checks"
CHECKS_LINE = "checks timed: "


def checks_off() -> None:
    """Switch this process's checks of issue 39 off (the 'off' side; see the module docstring)."""
    from profiler.parse import source
    from profiler.storage import store, turns

    store.URL_SCHEME = re.compile(r"(?!)")  # matches nothing
    source.utf8_text = lambda name: name
    turns.take = lambda *args, **kw: None


class _TimedPattern:
    def __init__(self, pattern, spent: dict):
        self.pattern, self.spent = pattern, spent

    def match(self, text):
        started = time.perf_counter()
        try:
            return self.pattern.match(text)
        finally:
            self.spent["calls"] += 1
            self.spent["seconds"] += time.perf_counter() - started


def checks_timed() -> dict:
    """Time this process's checks of issue 39 (the 'on' side): {'calls', 'seconds'} summed over
    every call of them during the ingest (the timing adds its own cost to the 'on' side)."""
    from profiler.parse import source
    from profiler.storage import store, turns

    spent = {"calls": 0, "seconds": 0.0}

    def timed(fn):
        def call(*args, **kw):
            started = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent["calls"] += 1
                spent["seconds"] += time.perf_counter() - started
        return call

    store.URL_SCHEME = _TimedPattern(store.URL_SCHEME, spent)
    source.utf8_text = timed(source.utf8_text)
    turns.take, turns.release = timed(turns.take), timed(turns.release)
    return spent


def _ingest(side: str, trace: Path, db: Path) -> tuple[float, float, dict | None]:
    """(wall s, CPU s, the checks' own time or None) of one ingest in a fresh process, on `side`."""
    before = children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bench.checks_cost", "--side", side, "--", "ingest", str(trace),
                           "--db", str(db)], cwd=ROOT, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu = children_cpu_s() - before
    checks = [line[len(CHECKS_LINE):] for line in done.stderr.splitlines() if line.startswith(CHECKS_LINE)]
    return wall, cpu, json.loads(checks[-1]) if checks else None


def measure(trace: Path, scratch: Path, pairs: int) -> dict[str, list[tuple[float, float]]]:
    """Each side's (wall, CPU) per pair; the first pair (a warm-up of the page cache) is dropped."""
    runs: dict[str, list] = {"on": [], "off": []}
    for i in range(pairs + 1):
        for side in ("on", "off")[:: 1 if i % 2 == 0 else -1]:
            db = scratch / f"{side}.duckdb"
            result = _ingest(side, trace, db)
            db.unlink()
            if i:
                runs[side].append(result)
    return runs


def median_interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """A bootstrap 95 % interval of the median of `values` (seeded: the same values, the same interval)."""
    pick = random.Random(39)
    medians = sorted(statistics.median(pick.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(rounds * 0.025)], medians[int(rounds * 0.975) - 1]


def _row(name: str, ratios: list[float]) -> str:
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    low, high = median_interval(ratios)
    slower = sum(r > 1 for r in ratios)
    return (f"| {name} | {(statistics.median(ratios) - 1) * 100:+.2f} % | {(low - 1) * 100:+.2f} to "
            f"{(high - 1) * 100:+.2f} % | {(q1 - 1) * 100:+.2f} to {(q3 - 1) * 100:+.2f} % | "
            f"{slower} of {len(ratios)} |\n")


def _inside(on_runs: list) -> str:
    """The checks' own time, summed inside each 'on' ingest, against that ingest's wall time."""
    timed = [(wall, checks) for wall, _, checks in on_runs if checks]
    if not timed:
        return ""
    us = [checks["seconds"] * 1e6 for _, checks in timed]
    share = [checks["seconds"] / wall * 100 for wall, checks in timed]
    return (f"\nTimed inside each ingest with the checks on: {timed[0][1]['calls']} calls of them, "
            f"{statistics.median(us):,.0f} µs per ingest (median; largest {max(us):,.0f} µs), "
            f"{statistics.median(share):.4f} % of the ingest's wall time (largest {max(share):.4f} %).\n")


def report(runs: dict, size: int, load: tuple[float, float], args: argparse.Namespace) -> str:
    pairs = list(zip(runs["on"], runs["off"]))
    ratios = {what: [on[k] / off[k] for on, off in pairs] for k, what in enumerate(("wall time", "CPU time"))}
    medians = {side: [statistics.median(r[k] for r in runs[side]) for k in (0, 1)] for side in runs}
    commit = commit_of()
    return (f"## {SECTION} ({args.mb} MB)\n\n"
            f"`python -m bench.checks_cost --mb {args.mb} --pairs {args.pairs}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, code at {commit}: `ingest` of "
            f"one {size / 1e6:,.0f} MB plain-JSON trace (make_large_trace.py, real traces) into a fresh store, "
            f"{len(pairs)} pairs of runs with the checks on and off (the same code, the checks skipped; order "
            f"alternating; one warm-up pair dropped); {os.cpu_count()} cores, load average {load[0]:.1f} before "
            f"and {load[1]:.1f} after (a machine shared with other work).\n\n"
            f"Medians of the runs: on {medians['on'][0]:.2f} s wall, {medians['on'][1]:.2f} s CPU; "
            f"off {medians['off'][0]:.2f} s wall, {medians['off'][1]:.2f} s CPU.\n\n"
            "| on / off, paired | median | its 95 % interval (bootstrap) | quartiles | pairs slower with the checks |\n"
            "|---|---:|---:|---:|---:|\n" + "".join(_row(k, v) for k, v in ratios.items())
            + _inside(runs["on"]) + "\nTarget: < 2 % slower. CPU time is the figure to read on a loaded machine: it counts what the "
            "ingest did, not how long it waited for a core.\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", choices=("on", "off"), help="(internal) run the CLI with the checks on or off")
    ap.add_argument("--mb", type=int, default=110)
    ap.add_argument("--pairs", type=int, default=15)
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("cli", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.side:
        spent = checks_timed() if args.side == "on" else checks_off()
        from profiler.cli.main import main as cli_main

        code = cli_main(args.cli[1:] if args.cli[:1] == ["--"] else args.cli)
        if spent:
            print(CHECKS_LINE + json.dumps(spent), file=sys.stderr)
        sys.exit(code)
    from bench.make_large_trace import make_large_trace
    from bench.results import write_section

    with tempfile.TemporaryDirectory(prefix="checks-cost-") as scratch:
        scratch = Path(scratch)
        trace = scratch / "large.json"
        make_large_trace(trace, args.mb * 10**6)
        load = [os.getloadavg()[0]]
        runs = measure(trace, scratch, args.pairs)
        load.append(os.getloadavg()[0])
        text = report(runs, trace.stat().st_size, (load[0], load[1]), args)
    print(text)
    if args.write_results:
        write_section(f"{SECTION} ({args.mb} MB)", text)


if __name__ == "__main__":
    main()
