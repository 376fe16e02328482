"""Write a large Kineto trace (plain .json) built from the real traces in ../shared/traces.

Each round appends every object-layout source trace once more, shifted to start after the previous
block ends, with correlation / External id / Python ids and flow ids offset so they stay distinct.
Timestamps are shifted in integer nanoseconds and every other float is copied verbatim, so no digit
is lost. The output is written event by event; only the source traces (~25 MB of JSON) are held.
Bare-array (2020-era) traces are left out: their capitalized categories never share a file with
today's. Usage: python -m bench.make_large_trace OUT.json [--mb 500]
"""
import argparse
import gzip
import os
from decimal import Decimal
from pathlib import Path

import msgspec

SOURCES_DIR = Path(os.environ.get("PROFILER_TEST_TRACES", Path(__file__).resolve().parents[2] / "shared" / "traces"))
ARG_IDS = ("correlation", "External id", "external id", "Python id", "Python parent id")
FLOW_PHASES = {"s", "f", "t"}
GAP_NS = 1_000_000  # 1 ms of idle time between blocks

_decoder = msgspec.json.Decoder(float_hook=lambda s: msgspec.Raw(s.encode()))
_encoder = msgspec.json.Encoder()


def _ns(value) -> int:
    """A ts / dur value (int, or a float kept as raw text) in integer nanoseconds."""
    text = bytes(value).decode() if isinstance(value, msgspec.Raw) else str(value)
    return int(Decimal(text) * 1000)


class Source:
    """One real trace, parsed once: its top level, its events and their start times in ns."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        doc = _decoder.decode(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
        self.name = path.name
        self.top = doc if isinstance(doc, dict) else None
        self.events = doc["traceEvents"] if self.top else doc
        self.starts = [_ns(e["ts"]) if "ts" in e else None for e in self.events]
        self.t0 = min(t for t in self.starts if t is not None)
        self.t1 = max(t + _ns(e.get("dur", 0)) for e, t in zip(self.events, self.starts) if t is not None)
        self.max_id = max(_ids(self.events), default=0)


def _ids(events):
    for e in events:
        if e.get("ph") in FLOW_PHASES and isinstance(e.get("id"), int):
            yield e["id"]
        args = e.get("args") or {}
        yield from (args[k] for k in ARG_IDS if isinstance(args.get(k), int))


def _shifted(event: dict, start_ns, dt_ns: int, did: int) -> dict:
    out = dict(event)
    if start_ns is not None:
        out["ts"] = msgspec.Raw(b"%d.%03d" % divmod(start_ns + dt_ns, 1000))
    if event.get("ph") in FLOW_PHASES and isinstance(event.get("id"), int):
        out["id"] = event["id"] + did
    args = event.get("args")
    if args and any(k in args for k in ARG_IDS):
        out["args"] = {k: v + did if k in ARG_IDS and isinstance(v, int) and v > 0 else v
                       for k, v in args.items()}
    return out


def _block(src: Source, cursor_ns: int, did: int, first_round: bool) -> list[bytes]:
    """One copy of a source's events, starting at cursor_ns, each encoded as JSON."""
    dt = cursor_ns - src.t0
    return [_encoder.encode(_shifted(e, t, dt, did)) for e, t in zip(src.events, src.starts)
            if first_round or e.get("ph") != "M"]  # metadata events once, as Kineto writes them


def _top_level_parts(header: dict) -> tuple[bytes, bytes]:
    """The header's keys before and after traceEvents, in their own order, as JSON text."""
    keys = list(header)
    cut = keys.index("traceEvents")
    def enc(ks):
        return b"".join(_encoder.encode(k) + b": " + _encoder.encode(header[k]) + b",\n" for k in ks)
    after = enc([k for k in keys[cut + 1:] if k != "traceName"])
    return b"{\n" + enc(keys[:cut]), after + b'"traceName": "bench_large_trace"\n}\n'


def load_sources(sources_dir: Path = SOURCES_DIR) -> list[Source]:
    srcs = [Source(p) for p in sorted(sources_dir.glob("*.json*"))]
    return sorted((s for s in srcs if s.top), key=lambda s: -len(s.events))


def make_large_trace(path, min_bytes: int, sources_dir: Path = SOURCES_DIR) -> dict:
    """Write a trace of at least min_bytes to path; return its size, event count and rounds.

    The largest source gives the top level (deviceProperties, distributedInfo, ...) and the
    time origin."""
    srcs = load_sources(sources_dir)
    stride = 10 ** len(str(max(s.max_id for s in srcs)))
    head, tail = _top_level_parts(srcs[0].top)
    cursor, block_no, rounds, events = srcs[0].t0, 0, 0, 0
    with open(path, "wb") as out:
        written = out.write(head + b'"traceEvents": [\n')
        while written < min_bytes:
            for src in srcs:
                block = _block(src, cursor, block_no * stride, rounds == 0)
                written += out.write((b",\n" if block_no else b"") + b",\n".join(block))
                events += len(block)
                cursor += src.t1 - src.t0 + GAP_NS
                block_no += 1
            rounds += 1
        written += out.write(b"\n],\n" + tail)
    return {"path": str(path), "bytes": written, "events": events, "rounds": rounds}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=500, help="minimum size, MB (10^6 bytes)")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(make_large_trace(args.out, int(args.mb * 1e6)))


if __name__ == "__main__":
    main()
