"""Parse a PyTorch profiler (Kineto) Chrome trace into typed rows, streaming.

The file is read in chunks (gzip or plain, from a path, bytes or a binary file-like object); the
`traceEvents` array is cut at event boundaries and each piece is decoded with msgspec straight into
small structs, so memory stays bounded by the chunk size plus the largest event (at most
`MAX_RUN_BYTES`) whatever the trace size. Events whose numbers are out of range are skipped and
counted by reason; names are cut at `MAX_NAME_CHARS`. Only the events
the store keeps become rows; the rest are counted. Timestamps are converted from their decimal text
to integer nanoseconds, so absolute epoch-microsecond traces keep their nanosecond digits.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter

import msgspec

from profiler import errors
from profiler.parse import columns, scan
from profiler.parse.columns import Event, ExactEvent
from profiler.parse.source import CHUNK_BYTES, DEFAULT_MAX_BYTES, Chunks, Progress, Source, display_name

__all__ = ["DEFAULT_MAX_BYTES", "Progress", "Source", "TraceReader", "TraceSummary"]
HEADER_SEARCH_BYTES = 64 << 20  # traceEvents must start within this many bytes

_STRICT = {"strict": False}  # "7" is 7: some writers quote numbers
_EVENTS = msgspec.json.Decoder(list[Event], **_STRICT)
_EVENT = msgspec.json.Decoder(Event, **_STRICT)
_EXACT_EVENTS = msgspec.json.Decoder(list[ExactEvent], **_STRICT)
_EXACT_EVENT = msgspec.json.Decoder(ExactEvent, **_STRICT)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()
_name, _ts, _dur = (attrgetter(a) for a in ("name", "ts", "dur"))

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
OP_COLUMNS = ("op_id", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "external_id",
              "concrete_inputs", "input_dims", "input_types", "collective", "in_msg_nelems",
              "out_msg_nelems", "msg_dtype", "group_size")
MEMORY_COLUMNS = ("ts_ns", "device_type", "device", "addr", "change_bytes", "total_allocated_bytes",
                  "total_reserved_bytes", "pid", "tid")
LANE_NAME_COLUMNS = ("kind", "pid", "tid", "name")
COLUMNS = {"kernels": KERNEL_COLUMNS, "memops": MEMOP_COLUMNS, "launches": LAUNCH_COLUMNS, "ops": OP_COLUMNS,
           "memory": MEMORY_COLUMNS, "lane_names": LANE_NAME_COLUMNS}

# one chunk's rows: table -> column -> values (columns in `COLUMNS[table]` order)
Batch = dict[str, dict[str, list]]


# --- limits ----------------------------------------------------------------------------------

MAX_RUN_BYTES = 64 << 20  # bytes without an event boundary (one event, or padding) before we refuse
MAX_EVENTS = 20_000_000
MAX_DEPTH = 64  # bracket nesting inside one event
MAX_NAME_CHARS = 64 << 10  # longer names are cut here and end in TRUNCATED
TRUNCATED = "…[truncated]"
# |ts| and |dur| in ns: start + duration always fits a BIGINT (2**62 ns is 146 years)
MAX_TS_NS = 2**62
MAX_DUR_NS = 2**61


# --- cutting the traceEvents array ------------------------------------------------------------

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
_WS = b" \t\r\n"


def _array_start(buf: bytes, name: str, searched: int) -> tuple[bytes, int] | None:
    """(header prefix, index of the first byte inside the events array), or None to read more.
    `searched`: bytes of `buf` already searched for the key without a match."""
    body = buf.lstrip(_WS + b"\xef\xbb\xbf")
    offset = len(buf) - len(body)
    if not body:
        return None
    if body[:1] == b"[":
        return b"", offset + 1
    if body[:1] != b"{":
        try:
            top = _ANY.decode(body)
        except (msgspec.DecodeError, RecursionError):
            raise errors.NotJsonError(name, "is not JSON (it does not start with '{' or '[')") from None
        raise errors.NotATraceError(name, f"is JSON but not a trace: its top level is a {type(top).__name__}")
    for match in _EVENTS_KEY.finditer(buf, max(0, searched - 64)):
        if match.end() >= len(buf):
            return None
        try:  # the key counts only as a key of the top-level object, not inside a string or value
            in_string, depth = scan.state_before(buf[:match.start()], MAX_DEPTH)
        except scan.TooDeepError as e:
            raise errors.NestingTooDeepError(name, f"{e} before its traceEvents list") from None
        if in_string or depth != 1:
            continue
        if buf[match.end():match.end() + 1] != b"[":
            raise errors.NotATraceError(name, "has a traceEvents key that is not a list")
        return buf[offset:match.end()], match.end() + 1  # the header without a leading BOM
    if len(buf) > HEADER_SEARCH_BYTES:
        raise errors.NotATraceError(name, "has no traceEvents list near its start")
    return None


_NEXT_EVENT = re.compile(rb"[ \t\r\n]{0,64}(,)[ \t\r\n]{0,64}\{")  # after an event's '}'


def _last_boundary(buf: bytearray) -> int:
    """Offset of the comma of the last `}, {` in `buf`: where an event probably ends; -1 if none.
    (Only a quick guess: more than 64 spaces around the comma are left to the scanner.)"""
    hi = len(buf)
    while (close := buf.rfind(b"}", 0, hi)) >= 0:
        hi = close
        if (match := _NEXT_EVENT.match(buf, close + 1)) is not None:
            return match.start(1)
    return -1


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
                 keep_python: bool = False, progress: Progress | None = None):
        self.name = display_name(src, name)
        self._chunks = Chunks(src, self.name, max_bytes, progress)
        self._keep_python = keep_python
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
        buf = bytearray(first)
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
            del buf[:end + 1]
            yield self._rows(events)
        yield self._rows(self._last(buf, prefix))
        self.summary = TraceSummary(
            self.name, self._chunks.sha.hexdigest()[:16], self._chunks.size,
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
        _EventCounter(chunks.src, self.name, max_bytes=chunks.max_bytes).count()

    def _find_events(self, chunks: Iterator[bytes]) -> tuple[bytes, bytes]:
        buf, searched = b"", 0
        for chunk in chunks:
            buf += chunk
            if (start := _array_start(buf, self.name, searched)) is not None:
                return start[0], buf[start[1]:]
            searched = len(buf)
        if not buf.strip(_WS):
            raise errors.EmptyTraceError(self.name, "is empty")
        raise self._whole_file_error(buf)

    def _whole_file_error(self, buf: bytes) -> errors.TraceError:
        try:
            top = _ANY.decode(buf)
        except msgspec.DecodeError as e:
            return self._json_error(e)
        except RecursionError:
            return errors.NestingTooDeepError(self.name, "nests brackets too deeply")
        kind = type(top).__name__
        if isinstance(top, dict):
            return errors.NotATraceError(self.name, "is JSON but not a trace: it has no traceEvents list")
        return errors.NotATraceError(self.name, f"is JSON but not a trace: its top level is a {kind}")

    def _json_error(self, e: msgspec.DecodeError) -> errors.TraceError:
        text = str(e)
        if "truncated" in text:
            return errors.TruncatedTraceError(self.name, "is truncated: the JSON ends in the middle")
        if "UTF-8" in text:
            return errors.NotJsonError(self.name, "is not valid JSON: it has bytes that are not UTF-8 "
                                       f"text (after event {self._events:,})")
        if "trailing characters" in text:
            return errors.NotJsonError(self.name, "is not valid JSON: it has data after its end")
        text = re.sub(r" \(byte \d+\)|, got .*$", "", text)
        return errors.NotJsonError(self.name, f"is not valid JSON after event {self._events:,} ({text})")

    def _cut(self, buf: bytearray) -> tuple[list, int] | None:
        """Decoded events up to the last event boundary in `buf`, and the boundary's offset."""
        if self._scanner is None:
            comma = _last_boundary(buf)
            if comma >= 0:
                try:
                    return self._decode(buf[:comma]), comma
                except msgspec.DecodeError:
                    pass  # that `}, {` was inside an event: find the boundary by scanning
            self._scanner, self._scanned = scan.Scanner(max_depth=MAX_DEPTH), 0
        found = self._feed(buf)
        if found.close >= 0:  # the rest of the file follows the array: read it, cut no more
            self._close = found.close
            return None
        if found.last_comma < 0:
            return None
        comma = found.last_comma
        self._scanner = None
        try:
            return self._decode(buf[:comma]), comma
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
                self._scanner, self._scanned = scan.Scanner(max_depth=MAX_DEPTH), 0
            found = self._feed(buf)
        if found.close < 0:
            if not buf.strip(_WS):
                raise errors.TruncatedTraceError(self.name, "is truncated: the traceEvents list never closes")
            raise errors.TruncatedTraceError(
                self.name, f"is truncated: the traceEvents list never closes (it ends in event "
                f"{self._events + 1:,})")
        body = bytes(buf[:found.close]).rstrip(_WS).rstrip(b",")
        suffix = bytes(buf[found.close + 1:])
        try:
            events = self._decode(body) if body.strip(_WS) else []
        except msgspec.DecodeError as e:
            raise self._json_error(e) from None
        self._header = self._read_header(prefix, suffix)
        return events

    def _read_header(self, prefix: bytes, suffix: bytes) -> dict:
        if not prefix:
            if suffix.strip(_WS):
                raise errors.NotJsonError(self.name, "is not valid JSON: it has data after its end")
            return {}
        try:
            top = _ANY.decode(prefix + b"[]" + suffix)
        except msgspec.DecodeError as e:
            raise self._json_error(e) from None
        except RecursionError:
            raise errors.NestingTooDeepError(self.name, "nests brackets too deeply after its events") from None
        return top if isinstance(top, dict) else {}

    def _decode(self, body: bytes | bytearray) -> list:
        data = b"[" + body + b"]"
        try:
            if not self._exact:
                events, bad = self._decode_with(data, _EVENTS, _EVENT)
                self._exact = columns.needs_exact_ts(events)
            if self._exact:  # from the first chunk with huge float timestamps on, read them as text
                events, bad = self._decode_with(data, _EXACT_EVENTS, _EXACT_EVENT)
        except RecursionError:
            raise errors.NestingTooDeepError(
                self.name, f"nests brackets too deeply near event {self._events + 1:,}") from None
        if self.exact_at_start is None and (events or bad):
            self.exact_at_start = self._exact
        self._skip(bad, "not an event of the expected types (e.g. a name that is not text)")
        self._events += bad
        self._cut_names(events)
        return events

    def _skip(self, n: int, why: str) -> None:
        if n:
            self._skipped += n
            self._reasons[why] = self._reasons.get(why, 0) + n

    def _cut_names(self, events: list) -> None:
        """Names longer than MAX_NAME_CHARS are cut there, with a marker (and counted)."""
        if not events or max(map(len, map(_name, events))) <= MAX_NAME_CHARS:
            return
        for e in events:
            if len(e.name) > MAX_NAME_CHARS:
                e.name = e.name[:MAX_NAME_CHARS] + TRUNCATED
                self._truncated += 1

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
        if self._events > MAX_EVENTS:
            raise errors.TraceTooLargeError(self.name, f"has more than {MAX_EVENTS:,} events")
        batch: Batch = {}
        for table, evs in columns.split(events, self._keep_python).items():
            if not evs:
                continue
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
        durs = list(map(_dur, evs))
        if not _in_range(durs, MAX_DUR_NS / 1000):
            keep = [i for i, d in enumerate(durs) if _in_range((d,), MAX_DUR_NS / 1000)]
            self._skip(len(evs) - len(keep), "duration out of range")
            evs = [evs[i] for i in keep]
        if not self._exact:
            raw = list(map(_ts, evs))
            if None in raw or not _in_range(raw, MAX_TS_NS / 1000):
                keep = [i for i, t in enumerate(raw) if t is not None and _in_range((t,), MAX_TS_NS / 1000)]
                self._skip(len(evs) - len(keep), "start time missing or out of range")
                evs = [evs[i] for i in keep]
        ts = columns.timestamps(evs, self._exact)
        if self._exact and (None in ts or not _in_range(ts, MAX_TS_NS)):
            keep = [i for i, t in enumerate(ts) if t is not None and -MAX_TS_NS <= t <= MAX_TS_NS]
            self._skip(len(ts) - len(keep), "start time missing or out of range")
            evs, ts = [evs[i] for i in keep], [ts[i] for i in keep]
        return evs, ts


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

    def _decode(self, body: bytes | bytearray) -> list:
        data = b"[" + body + b"]"
        try:
            return _OBJECTS.decode(data)  # objects skipped field by field: twice as fast as raw values
        except msgspec.ValidationError:
            return _RAW_LIST.decode(data)

    def _rows(self, events: list) -> Batch:
        self._events += len(events)
        if self._events > MAX_EVENTS:
            raise errors.TraceTooLargeError(self.name, f"has more than {MAX_EVENTS:,} events")
        return {}


def skip_notes(reasons: dict[str, int], truncated: int) -> tuple[str, ...]:
    """The summary's notes: events skipped by reason, and names cut short."""
    notes = [f"{n:,} event{'s' * (n != 1)} skipped: {why}" for why, n in reasons.items()]
    if truncated:
        notes.append(f"{truncated:,} name{'s' * (truncated != 1)} longer than {MAX_NAME_CHARS >> 10} KiB cut short")
    return tuple(notes)


def _in_range(values: list | tuple, limit: float) -> bool:
    """All values are finite numbers within ±limit (a NaN or inf makes the sum non-finite)."""
    if not values:
        return True
    try:
        return math.isfinite(sum(values)) and -limit <= min(values) and max(values) <= limit
    except (TypeError, OverflowError):
        return False
