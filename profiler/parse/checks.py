"""Decoded events checked against the parser's limits: wrong types, long names, times out of range.

The limits (docs/architecture.md, "Hostile input") are defined here. Each check returns what it
kept and tells what it skipped, so that the reader (trace.py) counts the reasons.
"""
from __future__ import annotations

import math
from operator import attrgetter

import msgspec

from profiler.parse import columns
from profiler.parse.columns import Event, ExactEvent

MAX_RUN_BYTES = 64 << 20  # bytes without an event boundary (one event, or padding) before we refuse
MAX_EVENTS = 20_000_000
MAX_DEPTH = 64  # bracket nesting inside one event
MAX_NAME_CHARS = 64 << 10  # longer names are cut here and end in TRUNCATED
TRUNCATED = "…[truncated]"
# |ts| and |dur| in ns: start + duration always fits a BIGINT (2**62 ns is 146 years)
MAX_TS_NS = 2**62
MAX_DUR_NS = 2**61

_STRICT = {"strict": False}  # "7" is 7: some writers quote numbers
EVENTS = msgspec.json.Decoder(list[Event], **_STRICT)
EVENT = msgspec.json.Decoder(Event, **_STRICT)
EXACT_EVENTS = msgspec.json.Decoder(list[ExactEvent], **_STRICT)
EXACT_EVENT = msgspec.json.Decoder(ExactEvent, **_STRICT)
RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_name, _ts, _dur = (attrgetter(a) for a in ("name", "ts", "dur"))
WRONG_TYPES = "not an event of the expected types (e.g. a name that is not text)"


def decode_with(data: bytes | memoryview, fast: tuple, many: msgspec.json.Decoder,
                one: msgspec.json.Decoder, fast_first: bool = True) -> tuple[list, int, bool]:
    """Events of a JSON array, how many were skipped for having the wrong types, and whether the
    `fast` decoders (columns.by_category: of a list, of one event) read them all (tried first when
    `fast_first`; it never changes the result, only the time).

    An event is kept when it decodes by `fast` (its category first) or by `many`/`one` (as an
    `Event`): so an event of a category the store skips is never checked further, whichever decoder
    reads its neighbours, and the same events are kept however a file is cut into pieces."""
    if fast_first:
        try:
            return fast[0].decode(data), 0, True
        except msgspec.ValidationError:
            pass
    try:
        return many.decode(data), 0, False
    except msgspec.ValidationError:
        pass
    good, bad = [], 0
    for raw in RAW_LIST.decode(data):
        for decoder in (fast[1], one):
            try:
                good.append(decoder.decode(raw))
                break
            except msgspec.ValidationError:
                continue
        else:
            bad += 1
    return good, bad, False


def cut_names(events: list) -> int:
    """Names longer than MAX_NAME_CHARS are cut there, with a marker; returns how many were."""
    if not events or max(map(len, map(_name, events))) <= MAX_NAME_CHARS:
        return 0
    cut = 0
    for e in events:
        if len(e.name) > MAX_NAME_CHARS:
            e.name = e.name[:MAX_NAME_CHARS] + TRUNCATED
            cut += 1
    return cut


def valid_times(evs: list, exact: bool) -> tuple[list, list, list[tuple[int, str]]]:
    """The events whose start and duration are finite and in range, their starts in ns, and the
    others as (how many, why) in the order they were found."""
    skipped = []
    durs = list(map(_dur, evs))
    if not in_range(durs, MAX_DUR_NS / 1000):
        keep = [i for i, d in enumerate(durs) if in_range((d,), MAX_DUR_NS / 1000)]
        skipped.append((len(evs) - len(keep), "duration out of range"))
        evs = [evs[i] for i in keep]
    if not exact:
        raw = list(map(_ts, evs))
        if None in raw or not in_range(raw, MAX_TS_NS / 1000):
            keep = [i for i, t in enumerate(raw) if t is not None and in_range((t,), MAX_TS_NS / 1000)]
            skipped.append((len(evs) - len(keep), "start time missing or out of range"))
            evs = [evs[i] for i in keep]
    ts = columns.timestamps(evs, exact)
    if exact and (None in ts or not in_range(ts, MAX_TS_NS)):
        keep = [i for i, t in enumerate(ts) if t is not None and -MAX_TS_NS <= t <= MAX_TS_NS]
        skipped.append((len(ts) - len(keep), "start time missing or out of range"))
        evs, ts = [evs[i] for i in keep], [ts[i] for i in keep]
    return evs, ts, skipped


def skip_notes(reasons: dict[str, int], truncated: int) -> tuple[str, ...]:
    """The summary's notes: events skipped by reason, and names cut short."""
    notes = [f"{n:,} event{'s' * (n != 1)} skipped: {why}" for why, n in reasons.items()]
    if truncated:
        notes.append(f"{truncated:,} name{'s' * (truncated != 1)} longer than {MAX_NAME_CHARS >> 10} KiB cut short")
    return tuple(notes)


def in_range(values: list | tuple, limit: float) -> bool:
    """All values are finite numbers within ±limit (a NaN or inf makes the sum non-finite)."""
    if not values:
        return True
    try:
        return math.isfinite(sum(values)) and -limit <= min(values) and max(values) <= limit
    except (TypeError, OverflowError):
        return False
