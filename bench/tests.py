"""Time the test suite the way CI runs it: every tier, then the quick tier, on this machine's cores.

    python -m bench.tests [--tier full,quick,slow] [--workers N] [--write-results]

Each tier is one `python -m pytest` run as `./run-tests` makes it (one pytest-xdist worker per core,
`--dist worksteal`, the third-party traces required), with `--durations=0`. Prints, and with
`--write-results` writes to bench/RESULTS.md ('## Tests'), each tier's wall time, its counts (the
summary line), the load average before and after, the CPU it took, the ten slowest tests and the
ten test files (groups) that took longest, each file's setup, call and teardown time summed over its
tests (time on a worker: the wall time is about their sum over the workers). Targets on 2 cores:
the full suite under 10 minutes, the quick tier (`-m "not slow"`) under 2; `slow` (`-m slow`, the
rest of the full suite) has none of its own.

The CPU is counted twice: the run's own (pytest and every process it waited for, `getrusage`) and
the machine's busy time over the run (/proc/stat: user, nice, system, irq and softirq time of every
core). The second also holds what no test process waits for (Chromium's processes, Ray's daemons)
and whatever else the machine ran meanwhile; divided by the cores, it is the shortest wall time this
much work could take there.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from bench.ingest import code_version, machine, uptime
from bench.results import children_cpu_s, write_section

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {"full": 600, "quick": 120, "slow": None}
MARKERS = {"full": [], "quick": ["-m", "not slow"], "slow": ["-m", "slow"]}
PHASE = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)$", re.M)
SUMMARY = re.compile(r"^=*\s*(\d[\d,]* (passed|failed).*) in ([\d.]+)s", re.M)


def busy_cpu_s() -> float | None:
    """Seconds the machine's cores have been busy since boot (None where /proc/stat is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def run_tier(tier: str, workers: int) -> dict:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--require-traces",
            "--durations=0", *MARKERS[tier]]
    if workers > 1:
        args += ["-n", str(workers), "--dist", "worksteal"]
    env = {**os.environ, "PROFILER_TEST_TRACES": os.environ.get(
        "PROFILER_TEST_TRACES", str(ROOT.parent / "shared" / "traces"))}
    before = uptime()
    busy, own = busy_cpu_s(), children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    busy = None if busy is None else busy_cpu_s() - busy
    own = children_cpu_s() - own
    out = done.stdout + done.stderr
    summary = SUMMARY.search(out)
    phases = PHASE.findall(out)  # slowest first, as pytest lists them
    groups: dict[str, float] = {}
    for seconds, _, test in phases:
        groups[test.split("::")[0]] = groups.get(test.split("::")[0], 0.0) + float(seconds)
    return {"tier": tier, "command": " ".join(["python -m pytest", *args[3:]]), "wall_s": wall,
            "exit": done.returncode, "summary": summary.group(1) if summary else out.strip().splitlines()[-1],
            "slowest": phases[:10], "groups": sorted(groups.items(), key=lambda kv: -kv[1])[:10],
            "before": before, "after": uptime(), "own_cpu_s": own, "busy_cpu_s": busy}


def section(results: list[dict], workers: int, before: str) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## Tests\n\n`python -m bench.tests {' '.join(sys.argv[1:])}`, {now}, code at {code_version()}. "
             f"Machine: {before}; {workers} pytest-xdist worker(s). (Shared with other engineers: read "
             "the load averages beside the times.)\n",
             "| tier | wall s | target s | met | exit | counts | its CPU s | machine busy s | busy / cores s "
             "| load before | load after |",
             "|---|---:|---:|---|---:|---|---:|---:|---:|---|---|"]
    for r in results:
        load = [u.rsplit("load average:", 1)[-1].strip() for u in (r["before"], r["after"])]
        target = TARGET_S[r["tier"]]
        met = "—" if target is None else ("yes" if r["wall_s"] <= target else "no")
        busy = "—" if r["busy_cpu_s"] is None else f"{r['busy_cpu_s']:.0f}"
        floor = "—" if r["busy_cpu_s"] is None else f"{r['busy_cpu_s'] / os.cpu_count():.0f}"
        lines.append(f"| {r['tier']} | {r['wall_s']:.0f} | {target or '—'} | {met} | {r['exit']} | {r['summary']} | "
                     f"{r['own_cpu_s']:.0f} | {busy} | {floor} | {load[0]} | {load[1]} |")
    for r in results:
        lines += ["", f"Ten slowest of the {r['tier']} tier (`{r['command']}`):", "",
                  "| s | phase | test |", "|---:|---|---|"]
        lines += [f"| {s} | {phase} | `{test}` |" for s, phase, test in r["slowest"]]
        lines += ["", f"Ten longest test files of the {r['tier']} tier (setup, call and teardown summed, "
                  "time on a worker):", "", "| s | file |", "|---:|---|"]
        lines += [f"| {seconds:.0f} | `{group}` |" for group, seconds in r["groups"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="full,quick", help="comma-separated: full, quick, slow")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    results, before = [], machine()  # its uptime: before the first tier
    for tier in args.tier.split(","):
        results.append(run_tier(tier, args.workers))
        r = results[-1]
        busy = "" if r["busy_cpu_s"] is None else f", the machine busy {r['busy_cpu_s']:.0f} CPU s"
        print(f"{tier}: {r['wall_s']:.0f} s, exit {r['exit']}, {r['summary']}; its CPU {r['own_cpu_s']:.0f} s{busy}",
              flush=True)
    text = section(results, args.workers, before)
    print(text)
    if args.write_results:
        write_section("Tests", text)


if __name__ == "__main__":
    main()
