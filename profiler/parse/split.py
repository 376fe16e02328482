"""Cut one large plain-JSON trace into chunks of its `traceEvents` array that parse on their own.

A chunk is a byte range of the file read through a `TraceReader` like any trace, with a few bytes
around it that make it one:

    chunk 0 .. n-2:   "[" + file[lo:hi] + "]"              a bare array of events
    last chunk:       file[:events_at] + file[lo:]           the file's own header, the last events,
                                                             the closing bracket and what follows it

`lo`/`hi` are the commas between two top-level events (`hi` excluded, `lo` skipped). The cut
points are found from lines: a raw newline never occurs inside a JSON string, so a comma followed
only by blanks and a newline is outside every string; we take one whose line ends `},` and whose
next line starts with `{`. That does not prove the comma is between two events and not between two
objects nested inside one (in an event's args, say). Parsing proves it: a chunk whose brackets do
not balance, or that holds anything but a list of values, fails to parse as a bare array, and the
caller then parses the file whole (profiler/storage/jobs/chunks.py). When every chunk parses, the
chunks' events are exactly the file's, in order, and the last chunk's header is the file's.

Traces without line breaks between events (minified) have no cut points: they are parsed whole.
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass

from profiler import errors
from profiler.parse import cutter

WINDOW_BYTES = 1 << 20  # bytes read at a target offset to look for a cut point
SEARCH_BYTES = 16 << 20  # give up on a target after this many bytes without one
# `}` then the comma, blanks only up to the newline (so the comma is outside strings), then `{`
_CUT = re.compile(rb"\}[ \t\r]*(,)[ \t\r]*\n[ \t\r\n]*\{")


@dataclass(frozen=True)
class Plan:
    """Where the chunks of one file are: `events_at` is the first byte inside the events array,
    `cuts` the offsets of the commas between chunks (ascending), `size` the file's size."""
    path: str
    events_at: int
    cuts: tuple[int, ...]
    size: int

    @property
    def chunks(self) -> int:
        return len(self.cuts) + 1

    def span(self, k: int) -> tuple[int, int]:
        """Byte range of the file that chunk `k` reads (the last one also reads the header)."""
        lo = self.events_at if k == 0 else self.cuts[k - 1] + 1
        hi = self.cuts[k] if k < len(self.cuts) else self.size
        return lo, hi


def plan(path: str | os.PathLike, parts: int) -> Plan | None:
    """Up to `parts` chunks of roughly equal size for the plain (not gzipped) JSON trace at
    `path`, or None when it cannot be cut (gzip, minified, no events array near its start, or
    one piece only). Reads the head of the file and a window at each target offset."""
    path = str(path)
    size = os.path.getsize(path)
    if parts < 2:
        return None
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":
            return None
        events_at = _events_start(f, os.path.basename(path))
        if events_at is None:
            return None
        cuts: list[int] = []
        step = (size - events_at) / parts
        for k in range(1, parts):
            target = max(int(events_at + k * step), cuts[-1] + 1 if cuts else events_at)
            cut = _cut_after(f, target, size)
            if cut is not None and (not cuts or cut > cuts[-1]):
                cuts.append(cut)
    cuts = [c for c in cuts if c < size]
    return Plan(path, events_at, tuple(cuts), size) if cuts else None


def _events_start(f, name: str) -> int | None:
    """Offset of the first byte inside the events array (as `TraceReader` finds it), or None."""
    f.seek(0)
    buf, searched = b"", 0
    while len(buf) <= cutter.HEADER_SEARCH_BYTES:
        chunk = f.read(1 << 20)
        if not chunk:
            return None
        buf += chunk
        try:
            found = cutter.array_start(buf, name, searched)
        except errors.TraceError:
            return None  # parsed whole, the file gets its own error message
        if found is not None:
            return found[1]
        searched = len(buf)
    return None


def _cut_after(f, target: int, size: int) -> int | None:
    """Offset of the first cut-point comma at or after `target`, or None within SEARCH_BYTES."""
    pos = target
    carry = b""
    while pos < size and pos - target < SEARCH_BYTES:
        f.seek(pos)
        window = f.read(WINDOW_BYTES)
        if not window:
            return None
        text = carry + window
        match = _CUT.search(text)
        if match is not None:
            return pos - len(carry) + match.start(1)
        carry = text[-256:]  # a cut point across two windows (blanks of more than 256 bytes are not)
        pos += len(window)
    return None


class ChunkStream(io.RawIOBase):
    """One chunk of a planned file as a readable stream: `before` + file[lo:hi] + `after`, reading
    only that byte range of the file."""

    def __init__(self, path: str, pieces: list[tuple[int, int]], before: bytes = b"", after: bytes = b""):
        self._f = open(path, "rb")  # noqa: SIM115 - closed with the stream
        self._parts: list = [before, *pieces, after]
        self._done = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self._parts:
            part = self._parts[0]
            if isinstance(part, bytes):
                data = part[:len(b)]
                self._parts[0] = part[len(data):]
            else:
                lo, hi = part
                self._f.seek(lo)
                data = self._f.read(min(len(b), hi - lo))
                self._parts[0] = (lo + len(data), hi)
                if not data and lo < hi:
                    raise OSError(f"{self._f.name} is shorter than when it was planned")
            if data:
                b[:len(data)] = data
                self._done += len(data)
                return len(data)
            self._parts.pop(0)
        return 0

    def tell(self) -> int:
        return self._done

    def close(self) -> None:
        self._f.close()
        super().close()


def chunk_stream(p: Plan, k: int) -> io.BufferedReader:
    """Chunk `k` of the plan as a binary stream for `TraceReader` (see the module doc for what it
    holds); close it when done."""
    lo, hi = p.span(k)
    if k < p.chunks - 1:
        return io.BufferedReader(ChunkStream(p.path, [(lo, hi)], b"[", b"]"), 1 << 20)
    return io.BufferedReader(ChunkStream(p.path, [(0, p.events_at), (lo, hi)]), 1 << 20)
