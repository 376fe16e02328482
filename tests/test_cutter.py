"""The reader cuts the events array only between events, whatever the events hold and wherever
the chunks end: a seeded property test over random valid traces and random chunk sizes, checked
against Python's own json module; plus the scanner on its own."""
from __future__ import annotations

import json
import random

import pytest

from profiler.parse import scan, source, trace

ALPHABET = 'ab },{[]":\\/\n\tµé漢' + "\u2028"


def _text(rng: random.Random, longest: int = 12) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, longest)))


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randint(0, 6 if depth < 4 else 3)
    if kind == 0:
        return rng.randint(-10**6, 10**6)
    if kind == 1:
        return _text(rng)
    if kind == 2:
        return rng.choice([None, True, False, 1.5])
    if kind == 3:
        return "},{" * rng.randint(1, 3)
    if kind in (4, 5):  # lists of small objects: what put '},{' on chunk edges before
        return [{_text(rng, 3): _value(rng, depth + 1)} for _ in range(rng.randint(0, 15))]
    return {_text(rng, 4): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _event(rng: random.Random) -> dict:
    cat = rng.choice(["kernel", "cpu_op", "cuda_runtime", "python_function", "gpu_memcpy"])
    event = {"ph": rng.choice("XXXXi"), "cat": cat, "name": _text(rng, 30), "pid": rng.randint(0, 3),
             "tid": rng.randint(0, 3), "ts": rng.randint(0, 10**9), "dur": rng.randint(0, 10**4),
             "args": {"correlation": rng.randint(1, 99), "stuff": _value(rng)}}
    if rng.random() < 0.3:
        event["args"]["grid"] = [rng.randint(1, 9) for _ in range(3)]
    return event


def _trace_text(rng: random.Random, events: list[dict]) -> bytes:
    separators = rng.choice([(",", ":"), (", ", ": "), (",\n  ", " : ")])
    parts = [json.dumps(e, separators=separators, ensure_ascii=rng.random() < 0.5) for e in events]
    body = "[" + rng.choice(["", " ", "\n"]) + ("," + rng.choice(["", " ", "\n   "])).join(parts) + "]"
    if rng.random() < 0.2:
        return body.encode()
    before = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "a \"traceEvents\": ["}]}
    after = {"traceName": _text(rng), "displayTimeUnit": "ms", "list": [{"]": "}"}]}
    head = json.dumps(before)[:-1] + ', "traceEvents": '
    return (head + body + ", " + json.dumps(after)[1:]).encode()


def _expected(events: list[dict]) -> dict[str, list]:
    """Per table, (name, ts_ns, dur_ns) of the X events the store keeps, in file order."""
    table = {"kernel": "kernels", "cpu_op": "ops", "cuda_runtime": "launches", "gpu_memcpy": "memops"}
    out: dict[str, list] = {t: [] for t in table.values()}
    for e in events:
        if e["ph"] == "X" and e["cat"] in table:
            out[table[e["cat"]]].append((e["name"], e["ts"] * 1000, e["dur"] * 1000))
    return out


def _read(data: bytes) -> tuple[dict[str, list], trace.TraceSummary]:
    reader = trace.TraceReader(data, "random.json")
    got: dict[str, list] = {t: [] for t in ("kernels", "ops", "launches", "memops")}
    for batch in reader.batches():
        for table, columns in batch.items():
            got[table] += zip(columns["name"], columns["ts_ns"], columns["dur_ns"])
    assert reader.summary is not None
    return got, reader.summary


@pytest.mark.parametrize("seed", range(40))
def test_random_traces_read_the_same_at_any_chunk_size(seed, monkeypatch):
    rng = random.Random(seed)
    events = [_event(rng) for _ in range(rng.randint(1, 120))]
    data = _trace_text(rng, events)
    chunk = rng.choice([13, 64, 333, 4096, len(data) // 3 + 1])
    monkeypatch.setattr(source, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(trace, "CHUNK_BYTES", chunk)
    got, summary = _read(data)
    assert got == _expected(events)
    assert summary.events == len(events) and summary.skipped == 0
    if data.startswith(b"{"):
        assert summary.header["traceName"] == json.loads(data)["traceName"]


def test_events_with_many_small_objects_cross_real_chunk_edges():
    """The issue's case: args holding lists of small objects put '},{' on a 4 MiB edge."""
    args = json.dumps({"list": [{"i": i, "s": "},{"} for i in range(40)]})
    data = ('{"traceEvents": [' + ", ".join(
        f'{{"ph": "X", "cat": "kernel", "name": "k{i}", "ts": {i}, "dur": 1, "args": {args}}}'
        for i in range(30_000)) + "]}").encode()
    assert len(data) > 2 * source.CHUNK_BYTES
    got, summary = _read(data)
    assert len(got["kernels"]) == 30_000 and summary.skipped == 0


@pytest.mark.parametrize("seed", range(20))
def test_scanner_finds_the_same_boundaries_as_json(seed):
    """The last comma between top-level values and the closing bracket, in random slices."""
    rng = random.Random(seed)
    values = [_value(rng) for _ in range(rng.randint(1, 30))]
    text = json.dumps(values, ensure_ascii=False).encode()
    body = text[1:]  # the scanner starts inside the array
    scanner = scan.Scanner(max_depth=64)
    commas, close, offset = [], -1, 0
    while offset < len(body) and close < 0:
        piece = body[offset:offset + rng.randint(1, 50)]
        found = scanner.feed(piece)
        if found.last_comma >= 0:
            commas.append(offset + found.last_comma)
        if found.close >= 0:
            close = offset + found.close
        offset += len(piece)
    assert close == len(body) - 1
    prefix = body[:commas[-1]] if commas else b""
    if len(values) > 1:
        assert json.loads(b"[" + prefix + b"]") == values[:-1]


def test_scanner_refuses_deep_nesting_in_linear_time():
    scanner = scan.Scanner(max_depth=64)
    with pytest.raises(scan.TooDeepError, match="deeper than 64"):
        scanner.feed(b"[" * 100_000)


def test_escaped_quotes_and_backslash_runs_across_feeds():
    scanner = scan.Scanner()
    for piece in (b'{"a": "x\\', b'\\', b'\\', b'"", "b": "\\\\"}', b' , {"c": "]"}', b"] tail"):
        found = scanner.feed(piece)
    assert found.close == 0 and scanner.depth == -1
