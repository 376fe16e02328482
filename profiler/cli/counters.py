"""`python -m profiler counters RUN REPORT.csv`: attach Nsight Compute's counters to a stored run.

REPORT.csv is ncu's raw CSV export of a profile of the same kernels (`ncu --import REPORT.ncu-rep
--csv --page raw > REPORT.csv`; `--print-units base` keeps the units plain). Each row is matched
to one launch of the run by the kernel's function name, grid and block, then launch order
(profiler/storage/counters.py); rows that match no launch are listed, never guessed. The run's
earlier counters, if any, are replaced. A file that cannot be read gets one line and exit status 1,
and the store is left as it was.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from profiler import errors
from profiler.cli.terminal import printable
from profiler.storage.store import Store, default_db_path


def register(subparsers) -> None:
    parser = subparsers.add_parser("counters", help="attach Nsight Compute counters (raw CSV export) to a run")
    parser.add_argument("run", metavar="RUN", help="run id or unique prefix (`summary` lists them)")
    parser.add_argument("report", metavar="REPORT.csv", type=Path, help="`ncu --csv --page raw` export")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--db", default=None, help=f"store file (default: $PROFILER_DB or {default_db_path()})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from profiler.cli.compare import resolve_run
    from profiler.storage.counters import attach, read_file, read_handle

    try:
        report = read_file(args.report)  # a bad file is refused before the store is opened for writing
        store = Store(args.db)
        # the run is found on a read-only handle: a refused attach leaves the file's bytes as they were
        attached = attach(store, resolve_run(read_handle(store), args.run), report)
    except errors.ProfilerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"run_id": attached.run_id, "source": attached.source,
                          "report_kernels": attached.report_kernels, "matched": attached.matched,
                          "unmatched": list(attached.unmatched)}, indent=2, ensure_ascii=False))
        return 0
    print(summary_line(attached))
    for row in attached.unmatched:
        print(f"  unmatched  #{row['id']}  grid {tuple(row['grid'])}  block {tuple(row['block'])}  "
              f"{printable(row['kernel'])[:120]}")
    return 0


def summary_line(attached) -> str:
    return (f"{attached.run_id}  counters of {attached.matched} of {attached.report_kernels} kernels in "
            f"{printable(attached.source)} attached"
            + (f"; {len(attached.unmatched)} matched no launch of the run" if attached.unmatched else "")
            + (f" ({printable(attached.device_check)})" if attached.device_check.startswith("cannot tell") else ""))
