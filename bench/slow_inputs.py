"""Inputs that are slow rather than wrong (issue 22, class 7): nesting at scale, shared correlation
ids, a gzip of more tiny events than a trace may hold, an inflating zip member.

1. `nesting.nest` and `nesting.innermost` in process on the shapes that were quadratic: every op at
   one timestamp, one chain nested n deep, one lane per op; n = 100k .. 1M. Target: 1M in seconds.
   `--before COMMIT` also times that commit's nesting.py (read with git show) where it finishes.
2. The command line on generated gzip traces (a fresh process each; seconds inside main() and the
   process's peak memory, VmHWM): ingest of 1M ops side by side (a baseline), 1M at one timestamp
   and 1M deep; 3,000 and 20,000 launches and kernels of one correlation id; `ops` on the deep run
   and on the 20,000 one; `compare` 3,000 vs 20,000; 21M tiny events (refused); a job zip whose
   member inflates 1,000x (refused). Target: each < 5 s, < 1 GB.

Usage: python -m bench.slow_inputs [--before 2e5ec68] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import types
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from bench.results import write_section

from profiler.parse import nesting
from tests import crafted_slow
from tests.test_security_cli import PROBE

OUT = ROOT / "bench" / "out" / "slow-inputs"
SIZES = (100_000, 200_000, 400_000, 1_000_000)


def shapes(n: int) -> dict[str, tuple]:
    """(lanes, starts, durs), sorted as nest() wants them."""
    idx = np.arange(n, dtype=np.int64)
    zeros = np.zeros(n, dtype=np.int64)
    return {"one timestamp": (zeros, zeros + 10, zeros + 5),
            "nested n deep": (zeros, idx, 2 * (n - idx)),
            "one lane per op": (idx, zeros, zeros + 5)}


def old_nesting(commit: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{commit}:profiler/parse/nesting.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("nesting_before")
    exec(compile(source, "nesting_before.py", "exec"), module.__dict__)  # noqa: S102 - our own file, from git
    return module


def time_nesting(module, sizes, limit_s: float = 60.0) -> list[dict]:
    """Seconds for nest() and for innermost() with one instant per op (at its start + 1)."""
    rows, slow = [], set()
    for n in sizes:
        for shape, (lanes, starts, durs) in shapes(n).items():
            if shape in slow:
                continue
            started = time.perf_counter()
            _, depths, _ = module.nest(lanes, starts, durs)
            nest_s = time.perf_counter() - started
            started = time.perf_counter()
            module.innermost(lanes, starts, starts + durs, depths, lanes, starts + 1)
            inner_s = time.perf_counter() - started
            rows.append({"n": n, "shape": shape, "nest_s": nest_s, "innermost_s": inner_s})
            print(rows[-1], flush=True)
            if nest_s + inner_s > limit_s / 4:  # the next size would pass the limit: stop this shape
                slow.add(shape)
    return rows


def probe(*args: str) -> dict:
    cpu = os.times()
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True)
    cpu_s = sum(os.times()[2:4]) - sum(cpu[2:4])
    seconds, peak_kb = done.stderr.rsplit("probe", 1)[1].split()
    text = (done.stdout + done.stderr.split("probe")[0]).strip().splitlines()
    return {"exit": done.returncode, "seconds": float(seconds), "cpu_s": cpu_s, "peak_mb": int(peak_kb) / 1024,
            "line": text[0] if text else ""}


def command_line() -> list[tuple[str, str, dict]]:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.duckdb*"):
        old.unlink()
    db = str(OUT / "s.duckdb")
    made = {
        "flat": crafted_slow.ops_side_by_side(OUT / "ops-side-by-side-1M.json.gz", 1_000_000),
        "same": crafted_slow.ops_at_one_time(OUT / "ops-one-timestamp-1M.json.gz", 1_000_000),
        "deep": crafted_slow.ops_nested(OUT / "ops-nested-1M.json.gz", 1_000_000),
        "corr3k": crafted_slow.shared_correlation(OUT / "correlation-3000.json.gz", 3_000),
        "corr20k": crafted_slow.shared_correlation(OUT / "correlation-20000.json.gz", 20_000),
        "tiny": crafted_slow.tiny_events(OUT / "tiny-21M.json.gz", 21_000_000),
        "zip": crafted_slow.inflating_zip(OUT / "job-bomb.zip", 256),
    }
    size = {k: f"{p.stat().st_size / 1e6:.2f} MB" for k, p in made.items()}
    rows = []
    for key, what in (("flat", "ingest 1M ops side by side (the shape nesting was fast on: baseline)"),
                      ("same", "ingest 1M ops at one timestamp"), ("deep", "ingest 1M ops nested 1M deep"),
                      ("corr3k", "ingest 3,000 launches + 3,000 kernels of one correlation id"),
                      ("corr20k", "ingest 20,000 launches + 20,000 kernels of one correlation id")):
        rows.append((what, size[key], probe("ingest", str(made[key]), "--db", db)))
    runs = {k: rows[i][2]["line"].split()[0] for i, k in ((3, "corr3k"), (4, "corr20k"))}
    deep = rows[2][2]["line"].split()[0]
    rows.append(("`ops` on the 1M-deep run (a kernel under the innermost op)", "", probe("ops", deep, "--db", db)))
    rows.append(("`ops` on the 20,000 run", "", probe("ops", runs["corr20k"], "--db", db)))
    rows.append(("`compare` 3,000 vs 20,000", "", probe("compare", runs["corr3k"], runs["corr20k"], "--db", db)))
    rows.append(("ingest 21M tiny events (refused)", size["tiny"], probe("ingest", str(made["tiny"]), "--db", db)))
    rows.append(("job zip, member of 256 MiB of spaces (refused)", size["zip"],
                 probe("ingest", str(made["zip"]), "--job", "bomb", "--in-process", "--db", db)))
    for row in rows:
        print(row, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="also time this commit's nesting.py")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()
    after = time_nesting(nesting, SIZES)
    before = time_nesting(old_nesting(args.before), SIZES[:2]) if args.before else []
    cli = command_line()
    load_after = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    old = {(r["n"], r["shape"]): r for r in before}

    def was(r: dict) -> str:
        o = old.get((r["n"], r["shape"]))
        return f"{o['nest_s']:.2f} + {o['innermost_s']:.2f}" if o else "-"

    nest_rows = "\n".join(f"| {r['shape']} | {r['n']:,} | {r['nest_s']:.2f} | {r['innermost_s']:.2f} | {was(r)} |"
                          for r in after)
    cli_rows = "\n".join(f"| {what} | {size} | {r['seconds']:.2f} | {r['cpu_s']:.2f} | {r['peak_mb']:,.0f} | {r['exit']} | "
                         f"`{r['line'][:110]}` |" for what, size, r in cli)
    text = f"""## Slow inputs

`python -m bench.slow_inputs{' --before ' + args.before if args.before else ''} --write-results`, {stamp}, code at commit {commit}. Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, load average {' / '.join(f'{x:.2f}' for x in load)} at the start and {' / '.join(f'{x:.2f}' for x in load_after)} at the end (shared with other engineers: wall times stretch with the load; the CPU column does not).

**Nesting** (`profiler/parse/nesting.py`, in process, seconds; "before": the same call on commit {args.before or '(not run)'}, stopped once a shape passed 15 s):

| shape | ops | nest s | innermost s | before: nest + innermost s |
|---|---:|---:|---:|---:|
{nest_rows}

**Command line** (a fresh process each: seconds inside `main()`, CPU seconds of the process, peak memory VmHWM; the first line it printed). Targets: < 5 s and < 1 GB each.

| what | gzip | s | CPU s | peak MB | exit | first line |
|---|---:|---:|---:|---:|---:|---|
{cli_rows}

Before (issue 22, and this branch's own first measurements): `ops` on the 1M-deep run with its kernel 140 s wall (19 s CPU, on a loaded machine); 100k ops at one timestamp 7.7 s, 200k 17 s, 400k 92 s, 1M killed at 150 s; 3,000 × 3,000 of one id: `ops` 10 s and 2.3 GB, `compare` killed at 2.8 GB; 21M tiny events refused after 49.5 s at 2.6 GB; the 5 GiB zip member extracted before refusal.
"""
    print(text)
    if args.write_results:
        write_section("Slow inputs", text)


if __name__ == "__main__":
    main()
