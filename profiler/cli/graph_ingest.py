"""`ingest REPLAY --capture CAPTURE`: a graph replay trace ingested joined with its capture trace
(profiler/parse/graph_join.py), so that the replayed kernels belong to the captured ops."""
from __future__ import annotations

import argparse
from pathlib import Path

from profiler import errors
from profiler.cli import terminal


TRACE_SUFFIXES = (".json", ".json.gz")


def ingest_joined(args: argparse.Namespace, store) -> int:
    if len(args.files) != 1:
        print("error: --capture joins one replay trace with its capture trace: give one FILE")
        return 2
    return _ingest(store, args.files[0], args.capture, args.python_functions)


def ingest_pair(args: argparse.Namespace, store) -> int:
    """`ingest --graph-pair FILE_OR_FOLDER...`: the replay and the capture found among the files
    (`graph_pair.classify`: the traces say which is which), the other files named and left out."""
    from profiler.storage import graph_pair

    if args.capture is not None:
        print("error: --graph-pair finds the capture trace among the FILEs: leave out --capture")
        return 2
    paths = []
    for name in args.files:
        path = Path(name)
        if path.is_dir():
            paths += sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
        elif path.is_file():
            paths.append(path)
        else:
            print(terminal.inert(f"FAILED  {name}: no such file or folder"))
            return 1
    try:
        replay, capture, others = graph_pair.pair_of(graph_pair.classify(paths))
    except errors.TraceError as e:
        print(terminal.inert(f"FAILED  {e}"))
        return 1
    for other in others:
        print(terminal.inert(f"{'':16s}  left out: {other} (neither a graph capture nor a graph replay trace)"))
    print(terminal.inert(f"{'':16s}  replay {replay}, capture {capture}"))
    return _ingest(store, str(replay), str(capture), args.python_functions)


def _ingest(store, replay: str, capture: str, keep_python: bool) -> int:
    from profiler.storage import graph_pair

    try:
        result, joined = graph_pair.ingest(store, replay, capture, keep_python=keep_python)
    except errors.TraceError as e:
        print(terminal.inert(f"FAILED  {e}"))
        return 1
    status = "already in store" if result.duplicate else "ingested"
    print(f"{result.run_id}  {status:16s}  {result.events:>10,d} events  {result.kernels:>8,d} kernels  "
          f"{result.seconds:6.2f} s  {terminal.inert(result.name)}")
    for note in [*joined.notes(), *result.notes]:
        print(f"{'':16s}  note: {terminal.inert(note)}")
    return 0
