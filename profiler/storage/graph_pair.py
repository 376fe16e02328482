"""A CUDA/HIP-graph replay trace and its capture trace stored as one joined run (issue 37): the
command line's `ingest REPLAY --capture CAPTURE` and the Upload page (two files, or a zip holding
both) both come here. `pair` tells which file is which (the capture trace records a
`…StreamBeginCapture` call, the replay a `…GraphLaunch`); `ingest` joins them
(profiler/parse/graph_join.py) and stores the result under the name
`<replay> (joined with <capture>)`. Errors are `TraceError`s naming the file.
"""
from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

from profiler import errors

MAX_BYTES = 4 << 30
CAPTURE_MARK, REPLAY_MARK = b"StreamBeginCapture", b"GraphLaunch"


def read(path) -> bytes:
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


def pair(paths: list) -> tuple[Path, Path]:
    """(replay, capture) among exactly two trace files: the capture is the one that records a
    stream capture (`…StreamBeginCapture`), the replay the other, which launches a graph."""
    paths = [Path(p) for p in paths]
    names = ", ".join(p.name for p in paths) or "no file"
    if len(paths) != 2:
        raise errors.TraceError(names, f"a graph pair is two traces, a replay and its capture; "
                                       f"{len(paths)} were given")
    data = {p: read(p) for p in paths}
    captures = [p for p in paths if CAPTURE_MARK in data[p]]
    if len(captures) != 1:
        raise errors.TraceError(names, "exactly one of the two must be a capture trace (with a "
                                       f"…StreamBeginCapture call); {len(captures)} are")
    (capture,) = captures
    (replay,) = [p for p in paths if p != capture]
    if REPLAY_MARK not in data[replay]:
        raise errors.TraceError(replay.name, "no graph launch in it (no …GraphLaunch call): not a graph replay")
    return replay, capture


def ingest(store, replay, capture, *, keep_python: bool = False, names: tuple[str, str] | None = None):
    """(IngestResult, JoinResult): the replay joined with its capture and stored as one run.
    `names`: the files' names as the user knows them (an upload's), else the paths' names."""
    from profiler.parse import graph_join

    replay_name, capture_name = names or (Path(replay).name, Path(capture).name)
    joined = graph_join.join(read(replay), read(capture), replay_name, capture_name)
    result = store.ingest(joined.trace, name=f"{replay_name} (joined with {capture_name})", keep_python=keep_python)
    return result, joined
