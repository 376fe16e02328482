"""`ingest REPLAY --capture CAPTURE`: a graph replay trace ingested joined with its capture trace
(profiler/parse/graph_join.py), so that the replayed kernels belong to the captured ops."""
from __future__ import annotations

import argparse
import gzip
import io
import zlib
from pathlib import Path

from profiler import errors
from profiler.cli import terminal

MAX_BYTES = 4 << 30


def _read(path: str) -> bytes:
    """A trace file's JSON bytes (gunzipped when gzip), or a TraceError naming it."""
    name = Path(path).name
    try:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.GzipFile(fileobj=io.BytesIO(data)).read(MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise errors.TraceError(name, f"cannot be read ({type(e).__name__}: {str(e)[:120]})") from None
    if len(data) > MAX_BYTES:
        raise errors.TraceError(name, "more than 4 GiB of JSON")
    return data


def ingest_joined(args: argparse.Namespace, store) -> int:
    from profiler.parse import graph_join

    if len(args.files) != 1:
        print("error: --capture joins one replay trace with its capture trace: give one FILE")
        return 2
    (replay,) = args.files
    try:
        joined = graph_join.join(_read(replay), _read(args.capture), Path(replay).name, Path(args.capture).name)
        name = f"{Path(replay).name} (joined with {Path(args.capture).name})"
        result = store.ingest(joined.trace, name=name, keep_python=args.python_functions)
    except errors.TraceError as e:
        print(terminal.inert(f"FAILED  {e}"))
        return 1
    status = "already in store" if result.duplicate else "ingested"
    print(f"{result.run_id}  {status:16s}  {result.events:>10,d} events  {result.kernels:>8,d} kernels  "
          f"{result.seconds:6.2f} s  {terminal.inert(result.name)}")
    for note in [*joined.notes(), *result.notes]:
        print(f"{'':16s}  note: {terminal.inert(note)}")
    return 0
