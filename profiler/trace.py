"""Parse a PyTorch profiler (Kineto) Chrome trace into typed rows, streaming.

The file is read in chunks (gzip or plain, from a path, bytes or a binary file-like object); the
`traceEvents` array is cut at event boundaries and each piece is decoded with msgspec straight into
small structs, so memory stays bounded by the chunk size whatever the trace size. Only the events
the store keeps become rows; the rest are counted. Timestamps are converted from their decimal text
to integer nanoseconds, so absolute epoch-microsecond traces keep their nanosecond digits.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

from profiler import columns, errors
from profiler.columns import Event, ExactEvent
from profiler.source import CHUNK_BYTES, DEFAULT_MAX_BYTES, Chunks, Progress, Source, display_name

__all__ = ["DEFAULT_MAX_BYTES", "Progress", "Source", "TraceReader", "TraceSummary"]
HEADER_SEARCH_BYTES = 64 << 20  # traceEvents must start within this many bytes

_STRICT = {"strict": False}  # "7" is 7: some writers quote numbers
_EVENTS = msgspec.json.Decoder(list[Event], **_STRICT)
_EVENT = msgspec.json.Decoder(Event, **_STRICT)
_EXACT_EVENTS = msgspec.json.Decoder(list[ExactEvent], **_STRICT)
_EXACT_EVENT = msgspec.json.Decoder(ExactEvent, **_STRICT)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()

KERNEL_COLUMNS = (
    "name", "device", "stream", "ts_ns", "dur_ns", "grid_x", "grid_y", "grid_z",
    "block_x", "block_y", "block_z", "registers_per_thread", "shared_mem_bytes",
    "blocks_per_sm", "warps_per_sm", "est_occupancy_pct", "correlation", "external_id",
)
MEMOP_COLUMNS = (
    "kind", "name", "device", "stream", "ts_ns", "dur_ns", "bytes", "bandwidth_gbps",
    "correlation", "external_id",
)
LAUNCH_COLUMNS = (
    "name", "api_kind", "cbid", "pid", "tid", "ts_ns", "dur_ns", "correlation", "external_id",
)
OP_COLUMNS = ("op_id", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "external_id", "input_dims")
MEMORY_COLUMNS = ("ts_ns", "device_type", "device", "addr", "change_bytes", "total_allocated_bytes",
                  "total_reserved_bytes", "pid", "tid")
COLUMNS = {"kernels": KERNEL_COLUMNS, "memops": MEMOP_COLUMNS, "launches": LAUNCH_COLUMNS, "ops": OP_COLUMNS,
           "memory": MEMORY_COLUMNS}

# one chunk's rows: table -> column -> values (columns in `COLUMNS[table]` order)
Batch = dict[str, dict[str, list]]


# --- cutting the traceEvents array ------------------------------------------------------------

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
_WS = b" \t\r\n"


def _array_start(buf: bytes, name: str) -> tuple[bytes, int] | None:
    """(header prefix, index of the first byte inside the events array), or None to read more."""
    body = buf.lstrip(_WS + b"\xef\xbb\xbf")
    offset = len(buf) - len(body)
    if not body:
        return None
    if body[:1] == b"[":
        return b"", offset + 1
    if body[:1] != b"{":
        try:
            top = _ANY.decode(body)
        except msgspec.DecodeError:
            raise errors.NotJsonError(name, "is not JSON (it does not start with '{' or '[')") from None
        raise errors.NotATraceError(name, f"is JSON but not a trace: its top level is a {type(top).__name__}")
    match = _EVENTS_KEY.search(buf)
    if match is None or match.end() >= len(buf):
        if len(buf) > HEADER_SEARCH_BYTES:
            raise errors.NotATraceError(name, "has no traceEvents list near its start")
        return None
    if buf[match.end():match.end() + 1] != b"[":
        raise errors.NotATraceError(name, "has a traceEvents key that is not a list")
    return buf[: match.end()], match.end() + 1


def _boundaries(buf: bytes, lo: int) -> Iterator[tuple[int, int]]:
    """Candidate cuts between two events, last first: (end of one event, start of the next)."""
    hi = len(buf)
    while (close := buf.rfind(b"}", lo, hi)) >= 0:
        hi = close
        j = close + 1
        while j < len(buf) and buf[j] in _WS:
            j += 1
        if buf[j:j + 1] != b",":
            continue
        j += 1
        while j < len(buf) and buf[j] in _WS:
            j += 1
        if buf[j:j + 1] == b"{":
            yield close + 1, j


def _closings(buf: bytes, prefix: bytes) -> Iterator[tuple[int, dict | list]]:
    """Candidate ends of the events array in the last buffer, last first, each with the decoded
    top level (without events). A candidate is right only if the events before it decode too."""
    hi = len(buf)
    while (close := buf.rfind(b"]", 0, hi)) >= 0:
        hi = close
        suffix = buf[close + 1:]
        if not prefix:
            if not suffix.strip(_WS):
                yield close, []
            continue
        try:
            top = _ANY.decode(prefix + b"[]" + suffix)
        except msgspec.DecodeError:
            continue
        if isinstance(top, dict) and top.get("traceEvents") == []:
            yield close, top


# --- the reader ------------------------------------------------------------------------------

@dataclass
class TraceSummary:
    name: str
    trace_id: str  # first 16 hex digits of sha256(decompressed bytes)
    size_bytes: int
    events: int
    skipped: int
    header: dict


class TraceReader:
    """Iterate `batches()` to stream a trace's rows; `summary` is set once they are exhausted."""

    def __init__(self, src: Source, name: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 keep_python: bool = False, progress: Progress | None = None):
        self.name = display_name(src, name)
        self._chunks = Chunks(src, self.name, max_bytes, progress)
        self._keep_python = keep_python
        self._exact = False  # timestamps read from their text (see columns.needs_exact_ts)
        self._events = self._skipped = self._next_op = 0
        self.summary: TraceSummary | None = None

    def batches(self) -> Iterator[Batch]:
        chunks = iter(self._chunks)
        prefix, buf = self._find_events(chunks)
        for chunk in chunks:
            buf += chunk
            if len(buf) >= CHUNK_BYTES and (cut := self._cut(buf)) is not None:
                events, start = cut
                buf = buf[start:]
                yield self._rows(events)
        yield self._rows(self._last(buf, prefix))
        self.summary = TraceSummary(
            self.name, self._chunks.sha.hexdigest()[:16], self._chunks.size,
            self._events, self._skipped, self._header)

    def _find_events(self, chunks: Iterator[bytes]) -> tuple[bytes, bytes]:
        buf = b""
        for chunk in chunks:
            buf += chunk
            if (start := _array_start(buf, self.name)) is not None:
                return start[0], buf[start[1]:]
        if not buf.strip(_WS):
            raise errors.EmptyTraceError(self.name, "is empty")
        raise self._whole_file_error(buf)

    def _whole_file_error(self, buf: bytes) -> errors.TraceError:
        try:
            top = _ANY.decode(buf)
        except msgspec.DecodeError as e:
            return self._json_error(e)
        kind = type(top).__name__
        if isinstance(top, dict):
            return errors.NotATraceError(self.name, "is JSON but not a trace: it has no traceEvents list")
        return errors.NotATraceError(self.name, f"is JSON but not a trace: its top level is a {kind}")

    def _json_error(self, e: msgspec.DecodeError) -> errors.TraceError:
        if "truncated" in str(e):
            return errors.TruncatedTraceError(self.name, "is truncated: the JSON ends in the middle")
        return errors.NotJsonError(self.name, f"is not valid JSON ({e})")

    def _cut(self, buf: bytes) -> tuple[list[Event], int] | None:
        for attempt, (end, start) in enumerate(_boundaries(buf, 0)):
            try:
                return self._decode(buf[:end]), start
            except msgspec.DecodeError as e:
                if attempt >= 8 or len(buf) > 4 * CHUNK_BYTES:
                    raise self._json_error(e) from e
        return None

    def _last(self, buf: bytes, prefix: bytes) -> list[Event]:
        error: msgspec.DecodeError | None = None
        for end, top in _closings(buf, prefix):
            try:
                events = self._decode(buf[:end].rstrip(_WS).rstrip(b","))
            except msgspec.DecodeError as e:
                error = error or e
                continue
            self._header = top if isinstance(top, dict) else {}
            return events
        if error is not None:
            raise self._json_error(error)
        raise errors.TruncatedTraceError(self.name, "is truncated: the traceEvents list never closes")

    def _decode(self, body: bytes) -> list:
        data = b"[" + body + b"]"
        if not self._exact:
            events, bad = self._decode_with(data, _EVENTS, _EVENT)
            self._exact = columns.needs_exact_ts(events)
        if self._exact:  # from the first chunk with huge float timestamps on, read them as text
            events, bad = self._decode_with(data, _EXACT_EVENTS, _EXACT_EVENT)
        self._skipped += bad
        self._events += bad
        return events

    @staticmethod
    def _decode_with(data: bytes, many: msgspec.json.Decoder, one: msgspec.json.Decoder) -> tuple[list, int]:
        """Events of a JSON array, and how many were skipped for having the wrong types."""
        try:
            return many.decode(data), 0
        except msgspec.ValidationError:
            pass
        good, bad = [], 0
        for raw in _RAW_LIST.decode(data):
            try:
                good.append(one.decode(raw))
            except msgspec.ValidationError:
                bad += 1
        return good, bad

    def _rows(self, events: list) -> Batch:
        self._events += len(events)
        batch: Batch = {}
        for table, evs in columns.split(events, self._keep_python).items():
            if not evs:
                continue
            ts = columns.timestamps(evs, self._exact)
            if None in ts:
                keep = [i for i, t in enumerate(ts) if t is not None]
                self._skipped += len(ts) - len(keep)
                evs, ts = [evs[i] for i in keep], [ts[i] for i in keep]
            if table == "ops":
                batch[table] = columns.op_columns(evs, ts, self._next_op)
                self._next_op += len(evs)
            else:
                batch[table] = columns.BUILDERS[table](evs, ts)
        return batch
