"""Command line for jobs: `ingest FILES_OR_DIRS --job NAME` and `job NAME [--json] [--compare OTHER]`."""
from __future__ import annotations

import argparse
import json
import sys

from profiler import errors

from profiler.cli import terminal
from profiler.cli.numbers import whole
from profiler.parse import demangled
from profiler.present.progress import ProgressBar


def add_ingest_options(ingest: argparse.ArgumentParser) -> None:
    """The options `ingest` takes for a job (its FILE arguments may then be directories or zips)."""
    ingest.add_argument("--job", default=None, metavar="NAME",
                        help="ingest the files (or directories, zips) as the ranks of one job")
    ingest.add_argument("--skip-bad", action="store_true",
                        help="with --job: store the job without files that cannot be read (default: store nothing)")
    ingest.add_argument("--workers", type=whole(1, 4096), default=None,
                        help="parallel workers: with --job, Ray's (default: one per core of the local Ray "
                             "cluster); for a plain-JSON file of 64 MB or more, processes that parse its "
                             "chunks (default: one per core; on a single core, 1: parsed whole)")
    ingest.add_argument("--ray-address", default=None,
                        help="with --job: a running Ray cluster to use (default: $PROFILER_RAY_ADDRESS, "
                             "else a local one)")
    ingest.add_argument("--in-process", action="store_true",
                        help="parse in this process only: with --job, the files one after the other "
                             "(no Ray); a large file, whole")


def ingest_job(args: argparse.Namespace) -> int:
    from profiler.analysis.findings import job_queries
    from profiler.storage.jobs import jobs
    from profiler.storage.store import Store

    store = Store(args.db)
    bar = ProgressBar(f"job {args.job}", delay_s=1.0)
    try:
        result = job_queries.ingest_job(store, args.files, args.job, skip_bad=args.skip_bad, workers=args.workers,
                                        engine="in-process" if args.in_process else "ray",
                                        ray_address=args.ray_address, keep_python=args.python_functions,
                                        progress=bar.update)
    except (jobs.JobError, errors.TraceError) as e:  # the job was not stored: exit 1, as any failed ingest
        bar.close()
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        bar.close()
    for r in result.ranks:
        print(f"rank {r.rank:>4d}  {r.run_id}  {r.events:>10,d} events  {r.kernels:>8,d} kernels  "
              f"{r.seconds:6.2f} s  {terminal.inert(r.file.rsplit('/', 1)[-1])}" + ("  (rank from file name)" * (r.rank_from == "file name")))
        for note in r.notes:
            print(f"{'':10s}note: {terminal.inert(note)}")
    for line in result.skipped:
        print(f"SKIPPED {terminal.inert(line)}")
    missing = jobs.ranges_text(result.ranks_missing)
    print(f"job {terminal.inert(result.job)}: {len(result.ranks)} of {result.world_size} ranks stored "
          f"({terminal.inert(result.backend or 'backend not given')}); missing: {missing}; "
          f"{result.seconds:.2f} s with {result.workers} {result.engine} worker(s)")
    return 0


def _job(args: argparse.Namespace) -> int:
    from profiler.analysis.findings import job_queries
    from profiler.analysis.reads.units import json_value
    from profiler.storage.store import Store

    store = Store(args.db)
    if args.delete:
        from profiler.storage.jobs import job_ingest

        job_ingest.delete_job(store, args.name)
        print(f"job {terminal.inert(args.name)} deleted")
        return 0
    if args.compare:
        with store.session() as db:  # one cursor for the command's reads
            table = job_queries.compare(db, args.name, args.compare)
        if args.json:
            print(json.dumps(json_value(table.to_dict("records")), indent=2, allow_nan=False))
        else:
            print(terminal.inert(table).to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
        return 0
    with store.session() as db:
        report = job_queries.job_report(db, args.name)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    report = terminal.inert(report)
    missing = job_queries.missing_text(report["ranks_missing"])
    print(f"job {report['job']}: world size {report['world_size']}, backend {report['backend'] or '-'}, "
          f"{len(report['ranks_present'])} ranks present, missing: {missing}")
    if report["clock"]:
        print("clock offsets from the consensus, µs (± uncertainty; * taken off): " + ", ".join(
            f"rank {c['rank']} {c['offset_us']:+,.1f} ± {c['uncertainty_us']:,.1f}{'*' * (c['applied_us'] != 0)}"
            for c in report["clock"]))
    waits = {(w["rank"], w["iteration"]): w for w in report["waits"]}
    stragglers = {s["iteration"]: s["straggler_rank"] for s in report["stragglers"]}
    print(f"{'rank':>5s} {'iter':>5s} {'step µs':>12s} {'GPU work µs':>12s} {'GPU own µs':>12s} {'GPU idle µs':>12s} "
          f"{'collective µs':>14s} {'waited µs':>12s} {'late µs':>12s} {'waited for µs':>14s}")
    for row in report["iterations"]:
        w = waits.get((row["rank"], row["iteration"]))
        mark = "  <- straggler" if stragglers.get(row["iteration"]) == row["rank"] else ""
        mark += "  <- longest step" if row["rank"] == row["longest_step_rank"] else ""
        mark += "  (wait flagged)" if w and w["flag"] else ""
        cells = (f"{w['wait_us']:>12,.1f} {w['late_us']:>12,.1f} {w['caused_wait_us']:>14,.1f}" if w else
                 f"{'-':>12s} {'-':>12s} {'-':>14s}")
        print(f"{row['rank']:>5d} {row['iteration']:>5d} {row['step_us']:>12,.1f} {_num(row['gpu_work_us'])} {row['gpu_busy_us']:>12,.1f} "
              f"{row['gpu_idle_us']:>12,.1f} {row['collective_us']:>14,.1f} {cells}{mark}")
    for line in job_queries.straggler_sentences(report):
        print(line)
    if report["collectives"]:
        worst = max(report["collectives"], key=lambda c: c["skew_us"])
        print(f"{len(report['collectives'])} collectives; largest start skew {worst['skew_us']:,.1f} µs "
              f"(iteration {worst['iteration']}, rank {worst['last_rank']} last to start: {demangled.short(worst['name'], 60)})")
        sized = [c for c in report["collectives"] if c["algbw_gbps"] is not None]
        if sized:
            print(f"{'collective':<14s} {'bytes':>14s} {'algbw GB/s':>11s} {'busbw GB/s':>11s}  kernel")
            for c in sized:
                busbw = f"{c['busbw_gbps']:>11,.3f}" if c["busbw_gbps"] is not None else f"{'-':>11s}"
                print(f"{str(c['collective'])[:14]:<14s} {c['bytes']:>14,d} {c['algbw_gbps']:>11,.3f} {busbw}  "
                      f"{demangled.short(c['name'], 50)}")
    return 0


def _num(value) -> str:
    return f"{value:>12,.1f}" if value is not None else f"{'-':>12s}"


def register(sub) -> None:
    job = sub.add_parser("job", help="a job's ranks: step, GPU work and collective time, the straggler, skew")
    job.add_argument("name", metavar="NAME")
    job.add_argument("--db", default=None, help="store file (default: $PROFILER_DB or data/traces.duckdb)")
    job.add_argument("--json", action="store_true", help="print JSON instead of a table")
    job.add_argument("--compare", default=None, metavar="OTHER", help="compare with another job")
    job.add_argument("--delete", action="store_true", help="remove the job (its manifest, then its files)")
    job.set_defaults(func=_job)
