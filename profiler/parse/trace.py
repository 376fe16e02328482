"""Parse a PyTorch profiler (Kineto) Chrome trace into typed rows, streaming.

The file is read in chunks (gzip or plain, from a path, bytes or a binary file-like object); the
`traceEvents` array is cut at event boundaries and each piece is decoded with msgspec straight into
small structs, so memory stays bounded by the chunk size plus the largest event (at most
`MAX_RUN_BYTES`) whatever the trace size. Events whose numbers are out of range are skipped and
counted by reason; names are cut at `MAX_NAME_CHARS`. Only the events
the store keeps become rows; the rest are counted. Timestamps are converted from their decimal text
to integer nanoseconds, so absolute epoch-microsecond traces keep their nanosecond digits.

The parts: `cutter.py` (where the array starts and its events end; a file that is no trace),
`checks.py` (the limits, and the events checked against them), `columns.py` (events to columns).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import msgspec

from profiler import errors
from profiler.parse import checks, columns, cutter, scan
# the limits and the tables' columns, read by the storage layer and the tests as trace.<name>
from profiler.parse.checks import (MAX_DEPTH, MAX_DUR_NS, MAX_EVENTS, MAX_NAME_CHARS, MAX_RUN_BYTES,
                                   MAX_TS_NS, TRUNCATED, skip_notes)
from profiler.parse.columns import COLUMNS, Batch
from profiler.parse.source import CHUNK_BYTES, DEFAULT_MAX_BYTES, Chunks, Progress, Source, display_name

__all__ = ["COLUMNS", "DEFAULT_MAX_BYTES", "MAX_DEPTH", "MAX_DUR_NS", "MAX_EVENTS", "MAX_NAME_CHARS",
           "MAX_RUN_BYTES", "MAX_TS_NS", "TRUNCATED", "Batch", "Progress", "Source", "TraceReader",
           "TraceSummary", "skip_notes"]
# --- the reader ------------------------------------------------------------------------------

@dataclass
class TraceSummary:
    name: str
    run_id: str  # first 16 hex digits of sha256(decompressed bytes)
    size_bytes: int
    events: int
    skipped: int
    header: dict
    notes: tuple[str, ...] = ()  # what was skipped or cut, and why, with counts


class TraceReader:
    """Iterate `batches()` to stream a trace's rows; `summary` is set once they are exhausted.

    The events array is cut at event boundaries: the last `}, {` of the buffer when the events
    before it decode (a cut inside an event or a string never does), else the last comma between
    events that `scan.Scanner` finds by tracking strings and nesting. Each byte is scanned at most
    once and the buffer never holds more than `MAX_RUN_BYTES` past the last boundary.
    """

    def __init__(self, src: Source, name: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 keep_python: bool = False, progress: Progress | None = None, hashed: bool = True):
        self.name = display_name(src, name)
        self._chunks = Chunks(src, self.name, max_bytes, progress, hashed)  # unhashed: the summary's run_id is ""
        self._keep_python = keep_python
        self._skipped_categories = columns.skipped_categories(keep_python)
        self._pieces = self._misses = 0  # pieces decoded, and how many in a row the fast decoder failed
        self._exact = False  # timestamps read from their text (see columns.needs_exact_ts)
        self._events = self._skipped = self._next_op = 0
        self._reasons: dict[str, int] = {}
        self._truncated = 0
        self._scanner: scan.Scanner | None = None
        self._scanned = 0
        self._close = -1  # offset in the buffer of the bracket that closes the events array, once seen
        self._counted = False  # whether the events were counted ahead (see _count_ahead)
        self._seen = (0, 0)  # (source position, decompressed bytes) at the last cut
        self.summary: TraceSummary | None = None
        # whether the first events decoded were read with exact (text) timestamps; with `exact`
        # (at the end), what a reader of one chunk of a file reports (profiler/parse/split.py)
        self.exact_at_start: bool | None = None

    def batches(self) -> Iterator[Batch]:
        chunks = iter(self._chunks)
        prefix, first = self._find_events(chunks)
        buf = bytearray(b"[")  # the pieces are cut out of `buf` as JSON arrays: it starts with a '['
        buf += first
        for chunk in chunks:
            buf += chunk
            if len(buf) < CHUNK_BYTES:
                continue
            cut = self._cut(buf) if self._close < 0 else None
            if cut is None:
                if len(buf) - max(self._close, 0) > MAX_RUN_BYTES:
                    raise errors.TraceTooLargeError(
                        self.name, f"has more than {MAX_RUN_BYTES >> 20} MiB without an event boundary "
                        f"after event {self._events:,} (an event that large, or padding, is refused)")
                continue
            events, end = cut
            self._count_ahead(len(events), end + 1, len(buf))
            buf[end] = _OPEN  # the comma after the piece opens the next one
            del buf[:end]
            yield self._rows(events)
        yield self._rows(self._last(buf, prefix))
        sha = self._chunks.sha
        self.summary = TraceSummary(
            self.name, sha.hexdigest()[:16] if sha is not None else "", self._chunks.size,
            self._events, self._skipped, self._header, skip_notes(self._reasons, self._truncated))

    @property
    def exact(self) -> bool:
        """Whether timestamps are read from their text (from the first batch that needed it on)."""
        return self._exact

    @property
    def skip_counts(self) -> tuple[dict[str, int], int]:
        """Events skipped so far by reason, and names cut short."""
        return dict(self._reasons), self._truncated

    def _count_ahead(self, events: int, nbytes: int, buffered: int) -> None:
        """Before a piece's rows are built: when the events still to come, judged by this piece's
        events per byte and the bytes left (by the compression ratio of the last stretch read),
        could take the trace past MAX_EVENTS, count them all first in a pass that builds nothing,
        and refuse the trace at once if there are too many (a 2 MB gzip of 21 M tiny events took
        minutes and GBs to refuse once their rows were built). Never for typical traces, whose
        events are hundreds of bytes each; once at most per trace."""
        chunks = self._chunks
        position, consumed = chunks.position, chunks.consumed
        read, made = position - self._seen[0], consumed - self._seen[1]
        self._seen = (position, consumed)
        if self._counted or not chunks.reopenable or not chunks.total or read <= 0:
            return
        left = (chunks.total - position) * made / read + buffered
        if self._events + events * (1 + left / max(nbytes, 1)) <= MAX_EVENTS:
            return
        self._counted = True
        _EventCounter(chunks.src, self.name, max_bytes=chunks.max_bytes, hashed=False).count()

    def _find_events(self, chunks: Iterator[bytes]) -> tuple[bytes, bytes]:
        buf, searched = b"", 0
        for chunk in chunks:
            buf += chunk
            if (start := cutter.array_start(buf, self.name, searched)) is not None:
                return start[0], buf[start[1]:]
            searched = len(buf)
        if not buf.strip(cutter.WS):
            raise errors.EmptyTraceError(self.name, "is empty")
        raise cutter.whole_file_error(self.name, buf, self._events)

    def _json_error(self, e: msgspec.DecodeError) -> errors.TraceError:
        return cutter.json_error(self.name, e, self._events)

    def _cut(self, buf: bytearray) -> tuple[list, int] | None:
        """Decoded events up to the last event boundary in `buf`, and the boundary's offset."""
        if self._scanner is None:
            comma = cutter.last_boundary(buf)
            if comma >= 0:
                try:
                    return self._decode(_piece(buf, comma)), comma
                except msgspec.DecodeError:
                    pass  # that `}, {` was inside an event: find the boundary by scanning
            self._scanner, self._scanned = scan.Scanner(max_depth=MAX_DEPTH), 1
        found = self._feed(buf)
        if found.close >= 0:  # the rest of the file follows the array: read it, cut no more
            self._close = found.close
            return None
        if found.last_comma < 0:
            return None
        comma = found.last_comma
        self._scanner = None
        try:
            return self._decode(_piece(buf, comma)), comma
        except msgspec.DecodeError as e:
            raise self._json_error(e) from None

    def _feed(self, buf: bytearray) -> scan.Found:
        """Scan the bytes of `buf` not scanned yet; offsets in the result are offsets in `buf`."""
        assert self._scanner is not None
        base, self._scanned = self._scanned, len(buf)
        try:
            with memoryview(buf) as view:
                found = self._scanner.feed(view[base:])
        except scan.TooDeepError as e:
            raise errors.NestingTooDeepError(self.name, f"{e} in event {self._events + 1:,}") from None
        return scan.Found(found.last_comma + base if found.last_comma >= 0 else -1,
                          found.close + base if found.close >= 0 else -1)

    def _last(self, buf: bytearray, prefix: bytes) -> list:
        """The events of the last buffer, and the header from the text around the array."""
        if self._close >= 0:
            found = scan.Found(-1, self._close)
        else:
            if self._scanner is None:
                self._scanner, self._scanned = scan.Scanner(max_depth=MAX_DEPTH), 1
            found = self._feed(buf)
        if found.close < 0:
            if not buf[1:].strip(cutter.WS):
                raise errors.TruncatedTraceError(self.name, "is truncated: the traceEvents list never closes")
            raise errors.TruncatedTraceError(
                self.name, f"is truncated: the traceEvents list never closes (it ends in event "
                f"{self._events + 1:,})")
        body = bytes(buf[1:found.close]).rstrip(cutter.WS).rstrip(b",")
        suffix = bytes(buf[found.close + 1:])
        try:
            events = self._decode(b"[" + body + b"]") if body.strip(cutter.WS) else []
        except msgspec.DecodeError as e:
            raise self._json_error(e) from None
        self._header = cutter.read_header(self.name, prefix, suffix, self._events)
        return events

    def _decode(self, data: bytes | bytearray | memoryview) -> list:
        """The events of `data`, a JSON array of them."""
        try:
            if not self._exact:
                events, bad = self._decode_as(data, False)
                self._exact = columns.needs_exact_ts(events, self._skipped_categories)
            if self._exact:  # from the first chunk with huge float timestamps on, read them as text
                events, bad = self._decode_as(data, True)
        except RecursionError:
            raise errors.NestingTooDeepError(
                self.name, f"nests brackets too deeply near event {self._events + 1:,}") from None
        if self.exact_at_start is None and (events or bad):
            self.exact_at_start = self._exact
        self._skip(bad, checks.WRONG_TYPES)
        self._events += bad
        return events

    def _decode_as(self, data: bytes | bytearray | memoryview, exact: bool) -> tuple[list, int]:
        """Events and how many had the wrong types. Each piece is first read by category
        (`columns.by_category`), unless that failed on the last two pieces (a trace of other
        categories, or of events without one): then only every 16th piece tries it."""
        fast = columns.by_category(exact, self._keep_python)
        many, one = (checks.EXACT_EVENTS, checks.EXACT_EVENT) if exact else (checks.EVENTS, checks.EVENT)
        self._pieces += 1
        first = self._misses < 2 or self._pieces % 16 == 0
        events, bad, fast_read = checks.decode_with(data, fast, many, one, first)
        if first:
            self._misses = 0 if fast_read else self._misses + 1
        return events, bad

    def _skip(self, n: int, why: str) -> None:
        if n:
            self._skipped += n
            self._reasons[why] = self._reasons.get(why, 0) + n

    def _rows(self, events: list) -> Batch:
        self._events += len(events)
        if self._events > MAX_EVENTS:
            raise errors.TraceTooLargeError(self.name, f"has more than {MAX_EVENTS:,} events")
        batch: Batch = {}
        for table, evs in columns.split(events, self._keep_python).items():
            if not evs:
                continue
            self._truncated += checks.cut_names(evs)  # of the events kept, whichever decoder read them
            if table == "lane_names":
                batch[table] = columns.lane_name_columns(evs)
                continue
            evs, ts = self._valid_times(evs)
            if not evs:
                continue
            if table == "ops":
                batch[table] = columns.op_columns(evs, ts, self._next_op)
                self._next_op += len(evs)
            else:
                batch[table] = columns.BUILDERS[table](evs, ts)
        return batch

    def _valid_times(self, evs: list) -> tuple[list, list]:
        """The events whose start and duration are finite and in range, and their starts in ns;
        the others are skipped and counted by reason."""
        evs, ts, skipped = checks.valid_times(evs, self._exact)
        for n, why in skipped:
            self._skip(n, why)
        return evs, ts


_OPEN, _CLOSE, _COMMA = b"[],"


def _piece(buf: bytearray, comma: int) -> bytes:
    """`buf` (which starts with '[') up to the comma at `comma`, as a JSON array, in one copy (a
    `bytes`: the decoded timestamps keep views of it)."""
    buf[comma] = _CLOSE
    try:
        with memoryview(buf) as view, view[:comma + 1] as piece:
            return bytes(piece)
    finally:
        buf[comma] = _COMMA


class _Object(msgspec.Struct, gc=False):
    """Any JSON object, its fields skipped."""


_OBJECTS = msgspec.json.Decoder(list[_Object])


class _EventCounter(TraceReader):
    """Counts a trace's events without building rows: each piece is decoded only into raw values."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._counted = True

    def count(self) -> int:
        for _ in self.batches():
            pass
        return self._events

    def _decode(self, data: bytes | bytearray | memoryview) -> list:
        try:
            return _OBJECTS.decode(data)  # objects skipped field by field: twice as fast as raw values
        except msgspec.ValidationError:
            return checks.RAW_LIST.decode(data)

    def _rows(self, events: list) -> Batch:
        self._events += len(events)
        if self._events > MAX_EVENTS:
            raise errors.TraceTooLargeError(self.name, f"has more than {MAX_EVENTS:,} events")
        return {}
