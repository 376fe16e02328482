"""Bench: what opening a store costs, and the commands that open one.

Each checkout measured runs in a fresh process of its own (`--before DIR` adds another checkout,
e.g. a worktree of an older commit), over copies of the same two stores: the shipped samples
(data/samples.duckdb.gz unpacked: 401 runs) and a small store of two crafted runs and two jobs of
two ranks (what the command-line tests read). Medians of `--repeat` in one process, after one
untimed round:
  - a new `Store`'s first cursor (a writing handle: the schema and metrics layer checked) and a
    read-only one's; a `session()` (the job views attached); a cursor again on the same handle;
  - commands called in process (`main(argv)`, output captured): summary --json, compare, ops,
    job --json.

    python -m bench.store_open [--before DIR] [--repeat 15] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from bench.results import commit_of, run_report, write_section

ROOT = Path(__file__).resolve().parents[1]
SECTION = "Opening a store"

# run in the checkout measured (its own `profiler` and `tests` packages): prints one JSON object
CHILD = r"""
import contextlib, io, json, shutil, statistics, sys, tempfile, time
from pathlib import Path
from profiler.capture.samples import unpack_shipped
from profiler.cli.main import main
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.crafted import kineto_trace
from tests.crafted_jobs import rank_trace, write_ranks

repeat = int(sys.argv[1])
folder = Path(tempfile.mkdtemp())
samples = folder / "samples.duckdb"
assert unpack_shipped(samples)
small = folder / "small.duckdb"
store = Store(small)
ids = [store.ingest(kineto_trace(n), f"plain{n}.json").run_id for n in (30, 60)]
for job, world in (("good", 2), ("bad", 4)):
    files = write_ranks(folder / job, {f"{job}{r}.json": rank_trace(r, world, 30 + 3 * r) for r in range(2)})
    job_ingest.ingest_job(store, files, job, engine="in-process")

def median_ms(f):
    f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 1)

def cursor(path, **options):
    with Store(path, **options).connect():
        pass

def session(path):
    with Store(path).session():
        pass

def command(*argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(argv)) == 0, argv

same = Store(samples)

def again():
    with same.connect():
        pass

got = {
    "samples: new writing handle, first cursor": median_ms(lambda: cursor(samples)),
    "samples: new read-only handle, first cursor": median_ms(lambda: cursor(samples, read_only=True)),
    "samples: a cursor again on one handle": median_ms(again),
    "small store with jobs: new handle, session() (job views)": median_ms(lambda: session(small)),
    "summary --json (small store)": median_ms(lambda: command("summary", "--db", str(small), "--json")),
    "compare A B (small store)": median_ms(lambda: command("compare", *ids, "--db", str(small))),
    "ops A (small store)": median_ms(lambda: command("ops", ids[0], "--db", str(small))),
    "job good --json (small store)": median_ms(lambda: command("job", "good", "--db", str(small), "--json")),
}
shutil.rmtree(folder, ignore_errors=True)
print(json.dumps(got))
"""


def measure(checkout: Path, repeat: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(repeat)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise SystemExit(f"{checkout}: the measurement failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout, measured the same way first")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    load_before = f"{os.cpu_count()} CPUs ({platform.machine()}), load {os.getloadavg()[0]:.2f}"
    checkouts = ([args.before.resolve()] if args.before else []) + [ROOT]
    results = {c: measure(c, args.repeat) for c in checkouts}
    names = list(results[ROOT])
    header = "| ms (median of %d) | %s |" % (args.repeat, " | ".join(commit_of(c) for c in checkouts))
    lines = [header, "|---|" + "---:|" * len(checkouts)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{results[c].get(name, float('nan')):.1f}" for c in checkouts) + " |")
    table = "\n".join(lines)
    print(table)
    if args.write_results:
        report = run_report(SECTION, __file__, commit_of(ROOT), load_before,
                            f"load {os.getloadavg()[0]:.2f}", [table, ""])
        write_section(SECTION, report)


if __name__ == "__main__":
    main()
