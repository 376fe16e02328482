"""Command line: `python -m profiler {ingest,summary,variants,capture,compare}`.

Errors of this project are printed as one plain line (the file and the problem) and turn into a
non-zero exit status; no traceback reaches the user.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from profiler import errors
from profiler.progress import ProgressBar
from profiler.store import Store, default_db_path


def _ingest(args: argparse.Namespace) -> int:
    store = Store(args.db)
    failed = 0
    for path in args.files:
        bar = ProgressBar(Path(path).name, delay_s=1.0)
        try:
            result = store.ingest(path, progress=bar.update, keep_python=args.python_functions)
        except errors.ProfilerError as e:
            bar.close()
            print(f"FAILED  {path}: {e.problem if isinstance(e, errors.TraceError) else e}")
            failed += 1
            continue
        bar.close()
        status = "already in store" if result.duplicate else "ingested"
        print(f"{result.trace_id}  {status:16s}  {result.events:>10,d} events  "
              f"{result.kernels:>8,d} kernels  {result.seconds:6.2f} s  {result.name}")
    return 1 if failed else 0


def _summary(args: argparse.Namespace) -> int:
    from profiler import queries  # pandas, only where a table is read back

    from profiler import timings

    rows = queries.trace_summary(Store(args.db))
    measured = timings.timing_records(Store(args.db), [r["id"] for r in rows]) if rows else {}
    for r in rows:
        r.update(measured.get(r["id"], {}))
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print(f"no traces in {Store(args.db).path}")
        return 0
    print(f"{'id':16s}  {'source':8s}  {'variant':15s}  {'events':>9s}  {'kernels':>8s}  "
          f"{'kernel µs/call':>14s}  {'peak MiB':>9s}  {'iters':>5s}  name")
    for r in rows:
        kernel, peak = r.get("kernel_us_per_call"), r.get("peak_allocated_bytes")
        print(f"{r['id']:16s}  {r['source']:8s}  {r['variant'] or '-':15s}  {r['events']:>9,d}  "
              f"{r['kernels']:>8,d}  {'-' if kernel is None else f'{kernel:,.1f}':>14s}  "
              f"{'-' if peak is None else f'{peak / 2**20:,.1f}':>9s}  {r['iterations']:>5d}  {r['name']}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m profiler", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    db_help = f"store file (default: $PROFILER_DB or {default_db_path()})"

    ingest = sub.add_parser("ingest", help="ingest trace files (.json, .json.gz) into the store")
    ingest.add_argument("files", nargs="+", metavar="FILE")
    ingest.add_argument("--db", default=None, help=db_help)
    ingest.add_argument("--python-functions", action="store_true",
                        help="also keep python_function events (large; off by default)")
    ingest.set_defaults(func=_ingest)

    summary = sub.add_parser("summary", help="one row per trace in the store")
    summary.add_argument("--db", default=None, help=db_help)
    summary.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    summary.set_defaults(func=_summary)

    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list:
    """Subcommands that live beside their layer: capture (imports torch lazily) and compare."""
    from profiler import cli_capture, cli_compare

    return [cli_capture.register, cli_compare.register]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    try:
        return args.func(args)
    except errors.ProfilerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        return 0
    except KeyboardInterrupt:
        print(f"interrupted after {time.perf_counter() - started:.1f} s", file=sys.stderr)
        return 130
