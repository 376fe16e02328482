"""Job ingest benchmark (issue 13): a job of many rank traces, wall time and memory vs workers.

Rank files are made from real traces: the PARAM DLRM worker traces of ../shared/traces cycled to
`--ranks` files with their distributedInfo rank and world size rewritten (so each is a distinct
rank of one job), and optionally `--big-ranks` files of `--rank-mb` MB each (bench/make_large_trace.py's
mix, ranks rewritten the same way) for throughput, and `--one-file-mb`: a job of one such file,
which more than one worker parses in chunks (profiler/storage/jobs/chunks.py). Each worker count ingests
the whole job into a fresh store; each engine is started once before the timings (its start is
reported apart). Peak RSS per worker is each task's own peak (Linux VmHWM, reset when the task
starts); for a file parsed in chunks, the largest of its chunk and assembly tasks. A task's growth
is that peak less the RSS it started with: the largest (a worker's first task also pays for DuckDB's
and the parser's first use, ~0.1 GB) and the median.
Usage: python -m bench.jobs [--ranks 64] [--workers 1,2] [--engine ray|processes|in-process[,...]]
                            [--big-ranks 0 --rank-mb 32] [--one-file-mb 0] [--write-results]
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench.ingest import code_version, machine, uptime
from bench.make_large_trace import SOURCES_DIR, make_large_trace
from bench.results import run_report, write_section

from profiler.storage.jobs import engines, job_ingest
from profiler.storage.store import Store

_RANK = re.compile(rb'("distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*)\d+')
_WORLD = re.compile(rb'("distributedInfo"\s*:\s*\{[^{}]*?"world_size"\s*:\s*)\d+')


def with_rank(data: bytes, rank: int, world: int) -> bytes:
    """The trace bytes with distributedInfo saying rank/world (added at the top if missing)."""
    if _RANK.search(data):  # at the top or after the events
        data = _RANK.sub(lambda m: m.group(1) + b"%d" % rank, data)
        return _WORLD.sub(lambda m: m.group(1) + b"%d" % world, data)
    info = b'"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d}' % (rank, world)
    start = data.index(b"{")
    return data[: start + 1] + info + b"," + data[start + 1:]


def make_ranks(out: Path, ranks: int, sources: Path) -> list[Path]:
    dlrm = sorted(sources.glob("param__dlrm_kineto__worker*.pt.trace.json"))
    if not dlrm:
        raise SystemExit(f"no DLRM worker traces in {sources}")
    blobs = [p.read_bytes() for p in dlrm]
    paths = []
    for rank in range(ranks):
        path = out / f"rank{rank}.pt.trace.json"
        path.write_bytes(with_rank(blobs[rank % len(blobs)], rank, ranks))
        paths.append(path)
    return paths


_TS = re.compile(rb'("ts"\s*:\s*)(\d+)')


def clock_offset_us(rank: int) -> int:
    """A rank's clock offset in a generated job: -100..+99 µs, spread over the ranks."""
    return (rank * 7919) % 200 - 100


def make_job(out: Path, world: int, sources: Path, late_rank: int, late_us: int,
             missing_rank: int) -> list[Path]:
    """A job of `world` ranks from the DLRM worker traces (rank r is worker r mod 7): every rank's
    clock shifted by `clock_offset_us`, rank `late_rank`'s by `late_us` more (it reaches every
    collective that much later: the planted straggler), rank `missing_rank` left out."""
    dlrm = sorted(sources.glob("param__dlrm_kineto__worker*.pt.trace.json"))
    if not dlrm:
        raise SystemExit(f"no DLRM worker traces in {sources}")
    blobs = [p.read_bytes() for p in dlrm]
    paths = []
    for rank in range(world):
        if rank == missing_rank:
            continue
        shift = clock_offset_us(rank) + (late_us if rank == late_rank else 0)
        data = _TS.sub(lambda m, shift=shift: m.group(1) + b"%d" % (int(m.group(2)) + shift), blobs[rank % len(blobs)])
        path = out / f"rank{rank}.pt.trace.json"
        path.write_bytes(with_rank(data, rank, world))
        paths.append(path)
    return paths


def make_big_ranks(out: Path, ranks: int, mb: float, sources: Path) -> list[Path]:
    template = out / "template.json"
    make_large_trace(template, int(mb * 1e6), sources)
    data = template.read_bytes()
    template.unlink()
    paths = []
    for rank in range(ranks):
        path = out / f"big_rank{rank}.pt.trace.json"
        path.write_bytes(with_rank(data, rank, ranks))
        paths.append(path)
    return paths


def run(files: list[Path], workers: int, engine: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-job-") as tmp:
        store = Store(Path(tmp) / "bench.duckdb")
        t0 = time.perf_counter()
        result = job_ingest.ingest_job(store, files, f"bench-{workers}", engine=engine, workers=workers)
        seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        rows = store.query("SELECT count(*) AS n FROM kernels")["n"][0]
        view_s = time.perf_counter() - t1
    largest = max(r.size_bytes for r in result.ranks)
    worst = max(result.ranks, key=lambda r: r.peak_rss)
    growth = max(result.ranks, key=lambda r: r.peak_rss - r.start_rss)
    growths = sorted(r.peak_rss - r.start_rss for r in result.ranks)
    return {"workers": workers, "seconds": seconds, "chunks": max(r.chunks for r in result.ranks), "mb": sum(r.size_bytes for r in result.ranks) / 1e6,
            "ranks": len(result.ranks), "kernels": rows, "view_s": view_s, "largest": largest,
            "peak": worst.peak_rss, "growth": growth.peak_rss - growth.start_rss,
            "growth_file": growth.size_bytes, "median_growth": growths[len(growths) // 2], "task_s": sum(r.seconds for r in result.ranks)}


def big_job(files: list[Path], workers: int, engine: str, late: int, missing: int) -> str:
    """Ingest the generated job, keep its summary, read it back; the results as Markdown."""
    import json
    import subprocess

    from profiler.analysis.findings import job_queries

    with tempfile.TemporaryDirectory(prefix="bench-bigjob-") as tmp:
        db = Path(tmp) / "bench.duckdb"
        store = Store(db)
        t0, c0 = time.perf_counter(), time.process_time()
        result = job_ingest.ingest_job(store, files, "big", engine=engine, workers=workers)
        ingest_s, driver_cpu = time.perf_counter() - t0, time.process_time() - c0
        t1, c1 = time.perf_counter(), time.process_time()
        job_queries.keep_summary(store, "big", result.ranks)
        summary_s, summary_cpu = time.perf_counter() - t1, time.process_time() - c1
        cli = []
        for _ in range(3):  # a fresh process each time, as a user runs it
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "profiler", "job", "big", "--json", "--db", str(db)],
                                 capture_output=True, text=True, cwd=ROOT, check=True,
                                 env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                     filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
            cli.append(time.perf_counter() - t)
            report = json.loads(out.stdout)
        page = []
        for _ in range(3):  # what the job page reads, in this process (imports done)
            t = time.perf_counter()
            with store.session() as db_:
                job_queries.job_list(db_)
                job_queries.job_report(db_, "big")
                job_queries.rank_iterations(db_, "big")
                job_queries.collectives(db_, "big")
                job_queries.rank_waits(db_, "big")
            page.append(time.perf_counter() - t)
    growth = sorted(r.peak_rss - r.start_rss for r in result.ranks)
    straggler = [s["straggler_rank"] for s in report["stragglers"]]
    return (f"| engine | workers | ranks | MB | ingest s | summary s | `job --json` s (3 fresh processes) | "
            f"page reads s (3) | worker peak RSS MB (max) | task growth MB (median / max) |\n"
            f"|---|---:|---:|---:|---:|---:|---|---|---:|---:|\n"
            f"| {engine} | {result.workers} | {len(result.ranks)} | {sum(r.size_bytes for r in result.ranks) / 1e6:.0f} | "
            f"{ingest_s:.1f} | {summary_s:.1f} | {', '.join(f'{c:.2f}' for c in cli)} | "
            f"{', '.join(f'{c:.2f}' for c in page)} | {max(r.peak_rss for r in result.ranks) / 1e6:.0f} | "
            f"{growth[len(growth) // 2] / 1e6:.0f} / {growth[-1] / 1e6:.0f} |\n\n"
            f"CPU: the tasks {sum(r.cpu_seconds for r in result.ranks):.1f} s "
            f"({sum(r.cpu_seconds for r in result.ranks) / len(result.ranks):.3f} s per rank: each task's process, "
            f"all its threads), the driver {driver_cpu:.1f} s during the ingest and {summary_cpu:.1f} s for the "
            f"summary.\n\n"
            f"Read back: straggler(s) {straggler} (planted: {late}), ranks missing {report['ranks_missing']} "
            f"(left out: {missing}), world size {report['world_size']}, {len(report['ranks_present'])} ranks present.\n")


def table(runs: list[dict]) -> str:
    lines = ["| workers | ranks | chunks of the largest | MB | seconds | MB/s | speed-up | sum of task s | kernels read back (s) | "
             "largest file MB | worker peak RSS MB | peak / largest file | task's own growth MB | growth / its file | "
             "median task's growth MB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        lines.append(
            f"| {r['workers']} | {r['ranks']} | {r['chunks']} | {r['mb']:.0f} | {r['seconds']:.2f} | {r['mb'] / r['seconds']:.1f} | "
            f"{runs[0]['seconds'] / r['seconds']:.2f} | {r['task_s']:.1f} | {r['kernels']:,} ({r['view_s']:.2f}) | "
            f"{r['largest'] / 1e6:.1f} | {r['peak'] / 1e6:.0f} | {r['peak'] / r['largest']:.1f} | "
            f"{r['growth'] / 1e6:.0f} | {r['growth'] / r['growth_file']:.2f} | {r['median_growth'] / 1e6:.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--engine", default="ray", help="ray, processes or in-process; several: comma-separated")
    ap.add_argument("--big-ranks", type=int, default=0, help="also a job of this many large rank files")
    ap.add_argument("--rank-mb", type=float, default=32)
    ap.add_argument("--one-file-mb", type=float, default=0, help="also a job of one file of this many MB")
    ap.add_argument("--sources", type=Path, default=Path(os.environ.get("PROFILER_TEST_TRACES") or SOURCES_DIR))
    ap.add_argument("--job-of", type=int, default=0, help="also a generated job of this many ranks (make_job): "
                    "ingest, its summary, read-back by `job --json` and the page's reads")
    ap.add_argument("--late-rank", type=int, default=700)
    ap.add_argument("--missing-rank", type=int, default=333)
    ap.add_argument("--repeat", type=int, default=1, help="runs per worker count; the median run is shown")
    ap.add_argument("--section", default="Jobs")
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    engine_names = args.engine.split(",")
    before = machine()
    started = ""
    out = Path(tempfile.mkdtemp(prefix="bench-ranks-"))
    try:
        jobs_made = {f"{args.ranks} DLRM ranks": make_ranks(out, args.ranks, args.sources)} if args.ranks else {}
        if args.big_ranks:
            jobs_made[f"{args.big_ranks} ranks of {args.rank_mb:.0f} MB"] = make_big_ranks(
                out, args.big_ranks, args.rank_mb, args.sources)
        if args.one_file_mb:
            jobs_made[f"one file of {args.one_file_mb:.0f} MB"] = make_big_ranks(
                out, 1, args.one_file_mb, args.sources)
        parts = []
        generated = make_job(out, args.job_of, args.sources, args.late_rank, 20_000, args.missing_rank) \
            if args.job_of else None
        for engine in engine_names:
            if engine == "ray":
                print(f"starting Ray ({uptime()}) ...", file=sys.stderr)
                t0 = time.perf_counter()
                engines.start_ray(workers=max(counts))
                started += (f"Local Ray cluster of {max(counts)} CPUs started in {time.perf_counter() - t0:.1f} s "
                            "(not in the times). ")
            if generated:
                print(f"job of {args.job_of} ranks, {engine} ({uptime()}) ...", file=sys.stderr)
                parts.append(f"**a job of {args.job_of} generated DLRM ranks** (rank r: worker r mod 7, its clock "
                             f"shifted by -100..+99 µs, rank {args.late_rank} 20 ms late, rank {args.missing_rank} "
                             f"missing), engine `{engine}`, {max(counts)} workers:\n\n"
                             + big_job(generated, max(counts), engine, args.late_rank, args.missing_rank))
            for label, files in jobs_made.items():
                runs = []
                for w in counts:
                    print(f"{label}, {engine}: {w} worker(s) ({uptime()}) ...", file=sys.stderr)
                    tries = []
                    for _ in range(args.repeat):
                        tries.append(run(files, w, engine))
                        tries[-1]["load"] = uptime().rsplit("load average:", 1)[-1].strip()
                    tries.sort(key=lambda r: r["seconds"])
                    runs.append(tries[len(tries) // 2])
                    runs[-1]["all"] = ", ".join(f"{r['seconds']:.2f}" for r in tries)
                parts.append(f"**{label}**, engine `{engine}`:\n\n{table(runs)}\n\n"
                             + "Seconds of every run, and the load average (1, 5, 15 min) after the median one: "
                             + "; ".join(f"{r['workers']} worker(s): {r['all']} s, load {r['load']}" for r in runs)
                             + ".\n")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    text = run_report(args.section, "jobs.py", code_version(), before, uptime(), parts, started)
    print(text)
    if args.write_results:
        write_section(args.section, text)


if __name__ == "__main__":
    main()
