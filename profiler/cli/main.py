"""Command line: `python -m profiler {ingest,summary,variants,capture,compare,ops,job,counters,rank,check}`.

Errors of this project are printed as one plain line (the file and the problem) and turn into a
non-zero exit status (1 for a file given as the store that is not one); no traceback reaches the
user. Control characters in what is printed (trace text) are shown escaped (cli/terminal.py).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from profiler import errors
from profiler.cli import terminal
from profiler.present.progress import ProgressBar
from profiler.storage import job_layout
from profiler.storage.connection import WRITE_WAIT_S
from profiler.storage.store import Store, default_db_path


def _ingest(args: argparse.Namespace) -> int:
    """Each file succeeds or fails on its own; a summary line at the end; exit 1 if any failed."""
    if args.job is not None:
        from profiler.cli import job as cli_job
        return cli_job.ingest_job(args)
    from profiler.storage.jobs import chunked_ingest  # pyarrow loads only where a trace is ingested

    store = Store(args.db, lock_timeout_s=WRITE_WAIT_S)
    if args.capture is not None or args.graph_pair:
        from profiler.cli import graph_ingest
        return graph_ingest.ingest_pair(args, store) if args.graph_pair else graph_ingest.ingest_joined(args, store)
    failed = 0
    workers = 1 if args.in_process else args.workers or chunked_ingest.workers_default()
    for path in args.files:
        bar = ProgressBar(Path(path).name, delay_s=1.0)
        try:
            result = chunked_ingest.ingest_file(store, path, workers, progress=bar.update,
                                                keep_python=args.python_functions)
        except (errors.StoreLockedError, errors.NotAStoreError):
            bar.close()
            raise  # the same for every file that follows
        except errors.ProfilerError as e:
            bar.close()
            print(terminal.inert(f"FAILED  {path}: {e.problem if isinstance(e, errors.TraceError) else e}"))
            failed += 1
            continue
        except (Exception, MemoryError) as e:  # noqa: BLE001 - one line per file, never a traceback
            bar.close()
            print(terminal.inert(f"FAILED  {path}: could not be ingested ({type(e).__name__}: {str(e)[:200]})"))
            failed += 1
            continue
        bar.close()
        status = "already in store" if result.duplicate else "ingested"
        print(f"{result.run_id}  {status:16s}  {result.events:>10,d} events  "
              f"{result.kernels:>8,d} kernels  {result.seconds:6.2f} s  {terminal.inert(result.name)}"
              + (f"  ({result.chunks} chunks on {result.workers} processes)" if result.chunks else ""))
        for note in result.notes:
            print(f"{'':16s}  note: {terminal.inert(note)}")
    if len(args.files) > 1:
        print(f"{len(args.files) - failed} of {len(args.files)} files ingested or already in the store"
              + (f"; {failed} failed" if failed else ""))
    return 1 if failed else 0


def _summary(args: argparse.Namespace) -> int:
    from profiler.analysis.reads import queries  # pandas, only where a table is read back

    from profiler.analysis.reads import completeness, graphs
    from profiler.analysis.findings import timings

    store = Store(args.db, read_only=True)
    with store.session() as db:  # one cursor for the command's reads
        rows = queries.trace_summary(db)
        measured = timings.timing_records(db, [r["run_id"] for r in rows]) if rows else {}
        whole = completeness.verdicts(db, [r["run_id"] for r in rows]) if rows else {}
        graphed = graphs.describe(db, [r["run_id"] for r in rows])
        _damaged_notes(db)
    for r in rows:
        r.update(measured.get(r["run_id"], {}))
        r["completeness"] = whole[r["run_id"]]
        r["graph"] = graphed.get(r["run_id"])
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    if not rows:
        print(f"no traces in {store.path}")
        return 0
    rows = terminal.inert(rows)  # one line per run, whatever its names hold
    print(f"{'run id':16s}  {'source':8s}  {'variant':15s}  {'events':>9s}  {'kernels':>8s}  "
          f"{'iters':>5s}  {'GPU work µs/iter':>16s}  {'busy %':>6s}  {'bound':13s}  "
          f"{'kernel µs/call':>14s}  {'peak MiB':>9s}  {'trace':16s}  name")
    for r in rows:
        work, kernel, peak = r["gpu_work_us_per_iter"], r.get("kernel_us_per_call"), r.get("peak_allocated_bytes")
        print(f"{r['run_id']:16s}  {r['source']:8s}  {r['variant'] or '-':15s}  {r['events']:>9,d}  "
              f"{r['kernels']:>8,d}  {r['iterations']:>5d}  {_num(work, '16,.1f')}  "
              f"{_num(r['gpu_busy_pct'], '6.1f')}  {_bound(r):13s}  "
              f"{_num(kernel, '14,.1f')}  {_num(None if peak is None else peak / 2**20, '9,.1f')}  "
              f"{completeness.badge(r['completeness']):16s}  {r['name']}")
        if r["completeness"]["qualifier"]:
            print(f"{'':16s}  figures above: {r['completeness']['qualifier']}")
        if r.get("steps_differ"):
            print(f"{'':16s}  its steps differ: {r['gpu_work_min_us']:,.1f} to {r['gpu_work_max_us']:,.1f} µs of GPU work")
    return 0


def _bound(row: dict) -> str:
    """What bounds a run, or 'graph capture' for a trace that captured graphs and ran none."""
    graph = row.get("graph") or {}
    return "graph capture" if graph.get("role") == "capture" else row["bound"] or "-"
def _damaged_notes(store) -> None:
    """One line on stderr per damaged job: its ranks are left out of what is listed."""
    from profiler.storage import job_check

    root = job_layout.job_root(store)
    if job_layout.has_manifests(root):
        for d in job_check.read_jobs(root).damaged:
            print(terminal.inert(f"note: {d}; its ranks are left out (`job NAME --delete` removes it)"),
                  file=sys.stderr)


def _num(value, spec: str) -> str:
    width = spec.split(",")[0].split(".")[0]
    return f"{'-':>{width}s}" if value is None else format(value, spec)


EXAMPLES = """examples:
  python -m profiler app                                  the dashboard, on http://localhost:8501
  python -m profiler ingest trace.json.gz                 store a torch.profiler trace
  python -m profiler summary                              one line per stored run (run ids first)
  python -m profiler summary --json                       the same as JSON, every figure
  python -m profiler variants                             which attention variants can run here
  python -m profiler capture --variants sdpa_flash,flex --seq 1024,4096
                                                          profile variants over a length sweep
  python -m profiler capture --mode decode --heads 32 --kv-heads 8 --kv-len 32768
                                                          decode against a 32k KV cache, GQA 32/8
  python -m profiler rank 3f2a9c 9be1c0 7d5e04            rank runs by time per call, and say why
  python -m profiler compare 3f2a9c 9be1c0                what differs between two runs
  python -m profiler check 3f2a9c 9be1c0 --max-slowdown 5
                                                          exit 1 when the second is 5 % slower
  python -m profiler ops 3f2a9c                           FLOPs, bytes and % of peak per op
  python -m profiler ingest ranks/ --job train-0412       a multi-rank job's files
  python -m profiler job train-0412                       its ranks, waits and the straggler
  python -m profiler ceilings h200.json                   keep a GPU's measured ceilings for its runs

Runs are named by their id or any unique prefix of it. The store is $PROFILER_DB, else
data/traces.duckdb; every command takes --db. `python -m profiler COMMAND --help` for the rest."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m profiler", description=__doc__.splitlines()[0],
                                     epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    db_help = f"store file (default: $PROFILER_DB or {default_db_path()})"

    ingest = sub.add_parser("ingest", help="ingest trace files (.json, .json.gz) into the store")
    ingest.add_argument("files", nargs="+", metavar="FILE")
    from profiler.cli.job import add_ingest_options
    add_ingest_options(ingest)
    ingest.add_argument("--db", default=None, help=db_help)
    ingest.add_argument("--capture", default=None, metavar="CAPTURE",
                        help="FILE is a CUDA/HIP graph replay trace and CAPTURE the trace recorded while its graphs "
                             "were captured: the replayed kernels are joined to the captured ops")
    ingest.add_argument("--graph-pair", action="store_true",
                        help="the FILEs (or the folders, searched for .json and .json.gz) hold one graph replay trace "
                             "and its capture trace: the traces tell which is which, and they are joined")
    ingest.add_argument("--python-functions", action="store_true",
                        help="also keep python_function events (large; off by default)")
    ingest.set_defaults(func=_ingest)

    summary = sub.add_parser("summary", help="one row per trace in the store")
    summary.add_argument("--db", default=None, help=db_help)
    summary.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    summary.set_defaults(func=_summary)

    app = sub.add_parser("app", help="the dashboard's server (`streamlit run app.py`, first pages sooner)",
                         description="Start the dashboard: `streamlit run app.py` with the pages' modules loaded "
                                     "while the server starts. The store is $PROFILER_DB, else data/traces.duckdb.")
    app.add_argument("options", nargs="*", metavar="OPTION",
                     help="any option of `streamlit run` (`streamlit run --help` lists them), e.g. "
                          "--server.address 127.0.0.1 --server.port 8502")
    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list:
    """Subcommands that live beside their layer: capture (imports torch lazily), compare, ops, job."""
    from profiler.cli import (capture as cli_capture, ceilings as cli_ceilings, compare as cli_compare,
                              counters as cli_counters, job as cli_job, ops as cli_ops, rank as cli_rank)

    return [cli_capture.register, cli_compare.register, cli_ops.register, cli_job.register, cli_counters.register,
            cli_rank.register, cli_ceilings.register]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["app"] and not {"-h", "--help"} & set(argv):  # every option after it is streamlit's
        from profiler.present.ui import serve
        return serve.main(argv[1:])
    args = build_parser().parse_args(argv)
    with terminal.printable_output():  # trace text never drives the terminal (cli/terminal.py)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        return args.func(args)
    except errors.ProfilerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1 if isinstance(e, errors.NotAStoreError) else 2
    except BrokenPipeError:  # output piped into `head` and the like
        return 0
    except KeyboardInterrupt:
        print(f"interrupted after {time.perf_counter() - started:.1f} s", file=sys.stderr)
        return 130
