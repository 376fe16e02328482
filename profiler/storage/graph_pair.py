"""A CUDA/HIP-graph replay trace and its capture trace stored as one joined run (issue 37): the
command line's `ingest REPLAY --capture CAPTURE` and the Upload page (files chosen together, or a
zip holding them) both come here. `kind` tells which file is which (the capture trace records a
`…StreamBeginCapture` call, the replay a `…GraphLaunch`); `pair` takes the command line's two
files, `pair_of` the upload's several (one capture, one replay, other files left out and named); `ingest` joins them
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


def kind(data: bytes) -> str | None:
    """'capture' for a trace that records a stream capture (`…StreamBeginCapture`: launches
    recorded into a graph, without kernels), 'replay' for one that launches a graph (`…GraphLaunch`),
    None for neither (or not a trace)."""
    if b"traceEvents" not in data[:1 << 20] and not data.lstrip()[:1] == b"[":
        return None
    return "capture" if CAPTURE_MARK in data else "replay" if REPLAY_MARK in data else None


def classify(paths: list) -> dict[Path, str | None]:
    """{path: `kind` of its trace} of each file (read whole: the marks can sit anywhere)."""
    return {Path(p): kind(read(p)) for p in paths}


def pair_of(kinds: dict[Path, str | None]) -> tuple[Path, Path, list[Path]]:
    """(replay, capture, the other files) among classified files: exactly one capture and one
    replay; any other file (neither a capture nor a replay: a README, a reference CSV's JSON) is
    left out and named by the caller. A TraceError names the files otherwise."""
    names = ", ".join(p.name for p in kinds) or "no file"
    captures = [p for p, k in kinds.items() if k == "capture"]
    replays = [p for p, k in kinds.items() if k == "replay"]
    if len(captures) > 1 or len(replays) > 1:
        many = captures if len(captures) > 1 else replays
        raise errors.TraceError(", ".join(p.name for p in many),
                                f"{len(many)} {'capture' if many is captures else 'replay'} traces among the files: "
                                "join one replay with its capture at a time")
    if not captures:
        raise errors.TraceError(names, "no capture trace among them (one recorded while the graph was captured: "
                                       "a …StreamBeginCapture call, launches without kernels)"
                                + ("" if replays else "; nor a graph replay (a …GraphLaunch call)"))
    if not replays:
        raise errors.TraceError(captures[0].name, "a capture trace with no graph replay beside it: choose its "
                                                  "replay trace (the one with …GraphLaunch calls) too, or upload "
                                                  "it alone without joining to see what it captured")
    return replays[0], captures[0], [p for p in kinds if p not in (captures[0], replays[0])]


def pair(paths: list) -> tuple[Path, Path]:
    """(replay, capture) among exactly two trace files (the command line's `--capture`): the
    capture is the one that records a stream capture (`…StreamBeginCapture`), the replay the
    other, which launches a graph."""
    paths = [Path(p) for p in paths]
    names = ", ".join(p.name for p in paths) or "no file"
    if len(paths) != 2:
        raise errors.TraceError(names, f"a graph pair is two traces, a replay and its capture; "
                                       f"{len(paths)} were given")
    kinds = classify(paths)
    captures = [p for p in paths if kinds[p] == "capture"]
    if len(captures) != 1:
        raise errors.TraceError(names, "exactly one of the two must be a capture trace (with a "
                                       f"…StreamBeginCapture call); {len(captures)} are")
    (capture,) = captures
    (replay,) = [p for p in paths if p != capture]
    if kinds[replay] != "replay":
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
