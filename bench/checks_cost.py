"""The cost of issue 39's checks on the ingest benchmark: `python -m profiler ingest` of one
large plain-JSON trace into a fresh store, by this checkout and by the code before the checks
(a `git archive` of BASE unpacked into a scratch folder), in alternation, so that both see the
same machine load. The checks on this path: the store path refused when it is a URL, the file
name made UTF-8 text, and the writer's turn at the store file (turns.py: one open and flock per
database opened). Target: < 2 % slower (median of the runs).
Usage: python bench/checks_cost.py [--base 9a42195] [--mb 110] [--runs 7] [--write-results]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_large_trace import make_large_trace  # noqa: E402
from results import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _tree(base: str, into: Path) -> Path:
    """The code at commit `base`, unpacked (profiler/ is all an ingest imports)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", base, "profiler"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _ingest(tree: Path, trace: Path, db: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "profiler", "ingest", str(trace), "--db", str(db)], cwd=tree,
                   check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(tree)})
    return time.perf_counter() - started


def _checks_us(folder: Path, n: int = 20_000) -> float:
    """Microseconds the added checks take per ingest, timed alone (the end-to-end medians on a
    shared machine differ by more than they can): the URL test, the name made UTF-8 text, and a
    writer's turn (open, flock, close) at a store file."""
    sys.path.insert(0, str(ROOT))
    from profiler.parse.source import utf8_text
    from profiler.storage import store, turns

    path = folder / "turn.duckdb"
    path.write_bytes(b"x")
    started = time.perf_counter()
    for _ in range(n):
        store._URL.match(str(path))
        utf8_text("large.json")
        turns.release(turns.take(path, True, time.monotonic() + 1, "the store"))
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="9a42195")
    ap.add_argument("--mb", type=int, default=110)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="checks-cost-") as scratch:
        scratch = Path(scratch)
        trace = scratch / "large.json"
        make_large_trace(trace, args.mb * 10**6)
        (scratch / "base").mkdir()
        base = _tree(args.base, scratch / "base")
        times: dict[str, list[float]] = {"before": [], "after": []}
        load = [os.getloadavg()[0]]
        for i in range(args.runs):
            for name, tree in (("before", base), ("after", ROOT))[:: 1 if i % 2 == 0 else -1]:
                times[name].append(_ingest(tree, trace, scratch / f"{name}{i}.duckdb"))
                (scratch / f"{name}{i}.duckdb").unlink()
        load.append(os.getloadavg()[0])
        size = trace.stat().st_size
        alone_us = _checks_us(scratch)
    med = {k: statistics.median(v) for k, v in times.items()}
    spread = {k: (min(v), max(v)) for k, v in times.items()}
    ratio = med["after"] / med["before"]
    text = (f"## Ingest: the cost of issue 39's checks ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
            f"`python bench/checks_cost.py --base {args.base} --mb {args.mb} --runs {args.runs}`: "
            f"`python -m profiler ingest` of one {size / 1e6:,.0f} MB plain-JSON trace (make_large_trace.py, "
            f"real traces) into a fresh store, before ({args.base}) and after the checks, in alternation; "
            f"{os.cpu_count()} cores, load average {load[0]:.1f} before and {load[1]:.1f} after (a machine "
            f"shared with other work).\n\n"
            f"| code | median s | min s | max s |\n|---|---:|---:|---:|\n"
            + "".join(f"| {k} | {med[k]:.2f} | {spread[k][0]:.2f} | {spread[k][1]:.2f} |\n" for k in ("before", "after"))
            + f"\nafter / before (medians): {ratio:.3f} ({(ratio - 1) * 100:+.1f} %); target < 2 % slower. "
            f"The added checks timed alone: {alone_us:.1f} µs per ingest, "
            f"{alone_us / 1e6 / med['before'] * 100:.5f} % of the median ingest.\n")
    print(text)
    if args.write_results:
        write_section(text.splitlines()[0][3:], text)


if __name__ == "__main__":
    main()
