"""The CPU cost of one small rank of a job, phase by phase, its inserts one by one against batched
(issue 26 part 2); optionally the 1,024-rank job of bench/jobs.py end to end.

Part 1, in this process: `--ranks` DLRM ranks (bench/jobs.py `make_job`: rank r is PARAM DLRM worker
r mod 7, ~0.87 MB) go through what a job's batch task does (profiler/storage/rank_task.parse_ranks):
an in-memory scratch store, each file parsed and staged, then stored, then its Parquet files
written. The phases, CPU seconds of this process (all its threads, `time.process_time`) per rank:
  parse   reading and decoding the JSON (`TraceReader.batches`)
  stage   its Arrow columns (`Staging.add`), the ops nested and the traces row (`Staging.finish`,
          `metadata.trace_row`)
  insert  into the scratch store with the metrics rows: `one by one`, one transaction and one
          INSERT per table per rank, then one metrics statement for all (the code before batching);
          `batched`, `Store.commit_batch`: one transaction, one statement per table for them all
  write   the ranks' Parquet files and the rows the job summary reads (`rank_task.write_batch`)
Each way runs `--repeat` times after a warm-up; the median of each phase is shown.

`--against DIR` (another checkout, e.g. `git worktree add --detach DIR <commit>`): the whole batch
task (`rank_task.parse_ranks` of `--ranks` files: store opened, files parsed and stored, Parquet
written) timed in a fresh process with each checkout's code, alternately, `--repeat` times: its CPU
seconds per rank, before against after.

Part 2, `--job-of 1024`: bench/jobs.py's generated job (shifted clocks, rank 700 late, rank 333
missing) ingested on a local Ray cluster of `--workers` CPUs, its summary kept, read back by
`job NAME --json` in 3 fresh processes and by the job page's reads (bench/jobs.py `big_job`).

Usage: python -m bench.rank_cost [--ranks 32] [--repeat 3] [--against DIR] [--job-of 1024 --workers 2]
                                 [--profile N] [--section NAME --write-results]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench.ingest import code_version, machine, uptime
from bench.jobs import big_job, make_job
from bench.make_large_trace import SOURCES_DIR
from bench.results import run_report, write_section

from profiler.parse import trace
from profiler.storage.jobs import jobs, rank_task
from profiler.storage import metadata, metrics
from profiler.storage.staging import Staging
from profiler.storage.store import Store
from profiler.storage.commit import Staged

PHASES = ("parse", "stage", "insert", "write")


def _stage_one(path: Path, cpu: dict) -> Staged:
    """`Store.stage` of one file with its parse and staging timed apart (CPU seconds into `cpu`)."""
    import datetime as dt

    started = time.perf_counter()
    reader = trace.TraceReader(path, None, max_bytes=trace.DEFAULT_MAX_BYTES)
    staging = Staging()
    batches = reader.batches()
    while True:
        c0 = time.process_time()
        batch = next(batches, None)
        c1 = time.process_time()
        cpu["parse"] += c1 - c0
        if batch is None:
            break
        staging.add(batch)
        cpu["stage"] += time.process_time() - c1
    c0 = time.process_time()
    span = staging.finish()
    row, notes = metadata.trace_row(reader.summary, "uploaded", span, dt.datetime.now(dt.UTC).replace(tzinfo=None))
    cpu["stage"] += time.process_time() - c0
    return Staged(reader.summary, staging, span, row, notes, started)


def one_way(files: list[Path], batched: bool, base: Path) -> dict:
    """CPU seconds per rank of each phase, storing the ranks one by one or batched."""
    cpu = dict.fromkeys(PHASES, 0.0)
    store = Store(base / "scratch.duckdb", threads=rank_task.task_threads(2), in_memory=True)
    with store.connect() as con:
        staged = [_stage_one(f, cpu) for f in files]
        c0 = time.process_time()
        if batched:
            results = store.commit_batch(staged)
        else:
            results = [store.commit_batch([s], keep_metrics=False)[0] for s in staged]
            con.execute("BEGIN TRANSACTION")
            metrics.store_runs(con, [r.run_id for r in results])
            con.execute("COMMIT")
        cpu["insert"] += time.process_time() - c0
        del staged
        c0 = time.process_time()
        out = rank_task.write_batch(con, [str(f) for f in files], results, str(base / "job"), "cost")
        cpu["write"] += time.process_time() - c0
    assert all(isinstance(r, jobs.RankResult) for r in out), out
    shutil.rmtree(base / "job", ignore_errors=True)
    return {k: v / len(files) for k, v in cpu.items()}


def cost_table(files: list[Path], repeat: int) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        one_way(files[:4], True, Path(tmp))  # warm-up: imports, the metrics layer's first load
        runs: dict[str, list[dict]] = {"one by one": [], "batched": []}
        loads = []
        for _ in range(repeat):
            for way in runs:  # alternating, so that a change of the machine's load falls on both
                runs[way].append(one_way(files, way == "batched", Path(tmp)))
            loads.append(uptime().rsplit("load average:", 1)[-1].strip())
    lines = ["| inserts | " + " | ".join(f"{p} ms" for p in PHASES) + " | total ms per rank | totals of every run ms |",
             "|---|" + "---:|" * (len(PHASES) + 1) + "---|"]
    for way, got in runs.items():
        med = {p: statistics.median(r[p] for r in got) for p in PHASES}
        totals = sorted(sum(r.values()) for r in got)
        lines.append(f"| {way} | " + " | ".join(f"{med[p] * 1e3:.1f}" for p in PHASES)
                     + f" | {statistics.median(totals) * 1e3:.1f} | {', '.join(f'{t * 1e3:.0f}' for t in totals)} |")
    return "\n".join(lines) + f"\n\nLoad average (1, 5, 15 min) after each pair of runs: {'; '.join(loads)}.\n"


TASK = """import sys, tempfile, time
root, files = sys.argv[1], sys.argv[2:]  # run in `root`: `python -c` imports from the working directory
from profiler.storage.jobs import rank_task
assert rank_task.__file__.startswith(root), rank_task.__file__
with tempfile.TemporaryDirectory() as tmp:
    rank_task.parse_ranks(files[:4], tmp + "/warm", "w", sharing=2)
    c = time.process_time()
    rank_task.parse_ranks(files, tmp + "/job", "p", sharing=2)
    print((time.process_time() - c) / len(files))
"""


def against(files: list[Path], other: Path, repeat: int) -> str:
    """CPU seconds per rank of a whole batch task, this checkout's code against `other`'s."""
    import subprocess

    roots = {"before": other.resolve(), "after": ROOT}
    got: dict[str, list[float]] = {k: [] for k in roots}
    loads = []
    for _ in range(repeat):
        for label, root in roots.items():
            out = subprocess.run([sys.executable, "-c", TASK, str(root), *map(str, files)], capture_output=True,
                                 text=True, check=True, cwd=root,
                                 env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
            got[label].append(float(out.stdout.split()[-1]))
        loads.append(uptime().rsplit("load average:", 1)[-1].strip())
    version = subprocess.run(["git", "-C", str(other), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
    rows = "\n".join(f"| {label} ({version if label == 'before' else code_version()}) | "
                     f"{statistics.median(v) * 1e3:.1f} | {', '.join(f'{x * 1e3:.1f}' for x in v)} |"
                     for label, v in got.items())
    return ("| code | CPU ms per rank (median) | every run |\n|---|---:|---|\n" + rows
            + f"\n\nLoad average (1, 5, 15 min) after each pair of runs: {'; '.join(loads)}.\n")


def profile(files: list[Path], top: int) -> None:
    """cProfile of a batch task (`rank_task.parse_ranks`), its top functions by own time."""
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        rank_task.parse_ranks([str(f) for f in files[:4]], tmp + "/warm", "w", sharing=2)
        prof = cProfile.Profile()
        prof.enable()
        rank_task.parse_ranks([str(f) for f in files], tmp + "/job", "p", sharing=2)
        prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=32, help="ranks per batch in part 1 (0: skip it)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--job-of", type=int, default=0, help="part 2: a generated job of this many ranks on Ray")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", default="ray")
    ap.add_argument("--against", type=Path, help="another checkout: its batch task's CPU per rank beside this one's")
    ap.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions of a batch task")
    ap.add_argument("--sources", type=Path, default=Path(os.environ.get("PROFILER_TEST_TRACES") or SOURCES_DIR))
    ap.add_argument("--section", default="Jobs: CPU per rank, inserts one by one and batched")
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    before = machine()
    out = Path(tempfile.mkdtemp(prefix="bench-cost-ranks-"))
    parts = []
    try:
        if args.ranks:
            files = make_job(out, args.ranks, args.sources, late_rank=-1, late_us=0, missing_rank=-1)
            if args.profile:
                profile(files, args.profile)
                return
            print(f"{args.ranks} ranks, phase by phase ({uptime()}) ...", file=sys.stderr)
            mb = sum(f.stat().st_size for f in files) / 1e6 / len(files)
            parts.append(f"**CPU per rank, a batch of {args.ranks} DLRM ranks** (~{mb:.2f} MB each; medians of "
                         f"{args.repeat} runs per way, CPU seconds of the process, all its threads):\n\n"
                         + cost_table(files, args.repeat))
            if args.against:
                print(f"the batch task, against {args.against} ({uptime()}) ...", file=sys.stderr)
                parts.append(f"**A whole batch task of {args.ranks} DLRM ranks** (`rank_task.parse_ranks` in a fresh "
                             f"process, after a warm-up batch of 4; CPU seconds of the process), the code of "
                             f"{args.against} (before) against this checkout's (after), alternately:\n\n"
                             + against(files, args.against, args.repeat))
            for f in files:
                f.unlink()
        if args.job_of:
            from profiler.storage.jobs import engines

            files = make_job(out, args.job_of, args.sources, 700, 20_000, 333)
            started = ""
            if args.engine == "ray":
                print(f"starting Ray ({uptime()}) ...", file=sys.stderr)
                t0 = time.perf_counter()
                engines.start_ray(workers=args.workers)
                started = f"Local Ray cluster of {args.workers} CPUs started in {time.perf_counter() - t0:.1f} s (not in the times). "
            print(f"job of {args.job_of} ranks ({uptime()}) ...", file=sys.stderr)
            parts.append(f"**a job of {args.job_of} generated DLRM ranks** (bench/jobs.py `make_job`: rank r is worker r "
                         f"mod 7, clock shifted by -100..+99 µs, rank 700 20 ms late, rank 333 missing), engine "
                         f"`{args.engine}`, {args.workers} workers; load before: `{uptime()}`. {started}\n\n"
                         + big_job(files, args.workers, args.engine, 700, 333))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    text = run_report(args.section, "rank_cost.py", code_version(), before, uptime(), parts)
    print(text)
    if args.write_results:
        write_section(args.section, text)


if __name__ == "__main__":
    main()
