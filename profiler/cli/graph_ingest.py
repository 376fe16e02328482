"""`ingest REPLAY --capture CAPTURE`: a graph replay trace ingested joined with its capture trace
(profiler/parse/graph_join.py), so that the replayed kernels belong to the captured ops."""
from __future__ import annotations

import argparse

from profiler import errors
from profiler.cli import terminal


def ingest_joined(args: argparse.Namespace, store) -> int:
    from profiler.storage import graph_pair

    if len(args.files) != 1:
        print("error: --capture joins one replay trace with its capture trace: give one FILE")
        return 2
    (replay,) = args.files
    try:
        result, joined = graph_pair.ingest(store, replay, args.capture, keep_python=args.python_functions)
    except errors.TraceError as e:
        print(terminal.inert(f"FAILED  {e}"))
        return 1
    status = "already in store" if result.duplicate else "ingested"
    print(f"{result.run_id}  {status:16s}  {result.events:>10,d} events  {result.kernels:>8,d} kernels  "
          f"{result.seconds:6.2f} s  {terminal.inert(result.name)}")
    for note in [*joined.notes(), *result.notes]:
        print(f"{'':16s}  note: {terminal.inert(note)}")
    return 0
