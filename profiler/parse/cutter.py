"""Where a trace's `traceEvents` array starts, where its events end, what lies around it, and
what is wrong with a file that is no trace, in one sentence naming the file.

The reader (trace.py) cuts the array at these boundaries; see its docstring for how.
"""
from __future__ import annotations

import re

import msgspec

from profiler import errors
from profiler.parse import scan
from profiler.parse.checks import MAX_DEPTH

HEADER_SEARCH_BYTES = 64 << 20  # traceEvents must start within this many bytes
ANY = msgspec.json.Decoder()
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
WS = b" \t\r\n"


def array_start(buf: bytes, name: str, searched: int) -> tuple[bytes, int] | None:
    """(header prefix, index of the first byte inside the events array), or None to read more.
    `searched`: bytes of `buf` already searched for the key without a match."""
    body = buf.lstrip(WS + b"\xef\xbb\xbf")
    offset = len(buf) - len(body)
    if not body:
        return None
    if body[:1] == b"[":
        return b"", offset + 1
    if body[:1] != b"{":
        try:
            top = ANY.decode(body)
        except (msgspec.DecodeError, RecursionError):
            raise errors.NotJsonError(name, "is not JSON (it does not start with '{' or '[')") from None
        raise errors.NotATraceError(name, f"is JSON but not a trace: its top level is a {type(top).__name__}")
    for match in EVENTS_KEY.finditer(buf, max(0, searched - 64)):
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


NEXT_EVENT = re.compile(rb"[ \t\r\n]{0,64}(,)[ \t\r\n]{0,64}\{")  # after an event's '}'


def last_boundary(buf: bytearray) -> int:
    """Offset of the comma of the last `}, {` in `buf`: where an event probably ends; -1 if none.
    (Only a quick guess: more than 64 spaces around the comma are left to the scanner.)"""
    hi = len(buf)
    while (close := buf.rfind(b"}", 0, hi)) >= 0:
        hi = close
        if (match := NEXT_EVENT.match(buf, close + 1)) is not None:
            return match.start(1)
    return -1


def json_error(name: str, e: msgspec.DecodeError, events: int) -> errors.TraceError:
    """msgspec's complaint about a file, after `events` events, as the project's error."""
    text = str(e)
    if "truncated" in text:
        return errors.TruncatedTraceError(name, "is truncated: the JSON ends in the middle")
    if "UTF-8" in text:
        return errors.NotJsonError(name, "is not valid JSON: it has bytes that are not UTF-8 "
                                   f"text (after event {events:,})")
    if "trailing characters" in text:
        return errors.NotJsonError(name, "is not valid JSON: it has data after its end")
    text = re.sub(r" \(byte \d+\)|, got .*$", "", text)
    return errors.NotJsonError(name, f"is not valid JSON after event {events:,} ({text})")


def whole_file_error(name: str, buf: bytes, events: int) -> errors.TraceError:
    """Why a whole file without a traceEvents list is no trace."""
    try:
        top = ANY.decode(buf)
    except msgspec.DecodeError as e:
        return json_error(name, e, events)
    except RecursionError:
        return errors.NestingTooDeepError(name, "nests brackets too deeply")
    kind = type(top).__name__
    if isinstance(top, dict):
        return errors.NotATraceError(name, "is JSON but not a trace: it has no traceEvents list")
    return errors.NotATraceError(name, f"is JSON but not a trace: its top level is a {kind}")


def read_header(name: str, prefix: bytes, suffix: bytes, events: int) -> dict:
    """The trace's top-level object from the text before and after its events array."""
    if not prefix:
        if suffix.strip(WS):
            raise errors.NotJsonError(name, "is not valid JSON: it has data after its end")
        return {}
    try:
        top = ANY.decode(prefix + b"[]" + suffix)
    except msgspec.DecodeError as e:
        raise json_error(name, e, events) from None
    except RecursionError:
        raise errors.NestingTooDeepError(name, "nests brackets too deeply after its events") from None
    return top if isinstance(top, dict) else {}
