"""Crafted inputs for the security and robustness tests, generated on demand (none is checked in).

`CRAFTED` maps a file name to (its bytes, what must happen): "error: <text>" for a file refused
with that text, or "ok: <text>" for one that ingests with that note. `whitespace_gzip` writes the
gzip bomb of the issue: 1 GiB of spaces inside traceEvents in about 1 MB.
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

GOOD_KERNEL = {"ph": "X", "cat": "kernel", "name": "good_kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 2,
               "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [1, 1, 1], "block": [32, 1, 1]}}
HUGE_NAME_BYTES = 40 << 20


def _trace(*events: dict, **header) -> bytes:
    return json.dumps({**header, "traceEvents": list(events)}).encode()


def _with(**changes) -> dict:
    return {**GOOD_KERNEL, **changes}


def _nested(depth: int) -> bytes:
    return (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "deep", "ts": 1, "dur": 1, "args": {"grid": '
            + b"[" * depth + b"]" * depth + b"}}]}")


CRAFTED: dict[str, tuple[bytes, str]] = {
    "dur_1e16.json": (_trace(GOOD_KERNEL, _with(name="long", dur=1e16)),
                      "ok: 1 event skipped: duration out of range"),
    "dur_1e308.json": (_trace(GOOD_KERNEL, _with(dur=1e308)), "ok: 1 event skipped: duration out of range"),
    "dur_infinity.json": (_trace(GOOD_KERNEL, _with(dur="Infinity")),
                          "ok: 1 event skipped: duration out of range"),
    "dur_nan.json": (_trace(GOOD_KERNEL, _with(dur="nan")), "ok: 1 event skipped: duration out of range"),
    "dur_1e400.json": (_trace(GOOD_KERNEL).replace(b'"dur": 2', b'"dur": 1e400', 1),
                       "error: no trace events that can be used"),
    "ts_1e308.json": (_trace(GOOD_KERNEL, _with(ts=1e308)),
                      "ok: 1 event skipped: start time missing or out of range"),
    "ts_huge_only_row.json": (_trace(_with(ts=10**30)),
                              "error: has no trace events that can be used (1 event skipped: start time"),
    "grid_huge.json": (_trace(GOOD_KERNEL, _with(args={"grid": [2**40, 1, 1], "correlation": 2**70})),
                       "ok: 1 value of kernels.grid_x out of range or not numbers: stored as missing"),
    "deep_args.json": (_nested(100_000), "error: nests brackets deeper than 64 levels"),
    "deep_header.json": (b'{"meta": ' + b"[" * 100_000 + b"]" * 100_000 + b', "traceEvents": []}',
                         "error: nests brackets deeper than 64 levels before its traceEvents list"),
    "latin1.json": (_trace(_with(name="cafe")).replace(b"cafe", b"caf\xe9"),
                    "error: is not valid JSON: it has bytes that are not UTF-8 text"),
    "trailing.json": (_trace(GOOD_KERNEL) + b" garbage", "error: is not valid JSON: it has data after its end"),
    "devices_list_of_str.json": (_trace(GOOD_KERNEL, deviceProperties=["x"]),
                                 "ok: 1 deviceProperties entries (not objects) not usable"),
    "devices_bad_id.json": (_trace(GOOD_KERNEL, deviceProperties=[{"id": [1], "name": "GPU"}]),
                            "ok: 1 deviceProperties.id values not usable"),
    "devices_not_list.json": (_trace(GOOD_KERNEL, deviceProperties={"id": 0}),
                              "ok: 1 deviceProperties (not a list) not usable"),
    "run_shape_huge.json": (_trace(GOOD_KERNEL, attention_run={"variant": "x", "batch": 10**20, "seq_len": "n"}),
                            "ok: 1 attention_run.batch values not usable"),
}


def huge_name_trace() -> bytes:
    """A kernel whose name is 40 MB, next to a normal one."""
    return _trace(GOOD_KERNEL, _with(name="n" * HUGE_NAME_BYTES, ts=20))


def whitespace_gzip(path: Path, gib: int = 1) -> Path:
    """A valid gzip of `gib` GiB of spaces between two events of traceEvents (about 1 MB a GiB).

    One MiB of spaces is deflated once with a full flush (which makes its output independent of
    what came before) and that output repeated, so writing it takes well under a second."""
    head = b'{"traceEvents": [' + json.dumps(GOOD_KERNEL).encode() + b","
    tail = json.dumps(_with(ts=30)).encode() + b"]}"
    block = b" " * (1 << 20)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    first = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeated = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = deflate.compress(tail) + deflate.flush()
    crc = zlib.crc32(head)
    for _ in range(gib << 10):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + (gib << 30) + len(tail)
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + first)
        for _ in range(gib << 10):
            out.write(repeated)
        out.write(last + crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
    return path


def kineto_trace(events: int, name_prefix: str = "k") -> bytes:
    """A plain trace of `events` events (kernels, launches and ops), built as text quickly."""
    parts = []
    for i in range(events // 3):
        ts = 1000 + i * 10
        parts.append(f'{{"ph":"X","cat":"cpu_op","name":"aten::op{i % 50}","pid":1,"tid":1,"ts":{ts},"dur":8}}')
        parts.append(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{ts + 1},'
                     f'"dur":2,"args":{{"correlation":{i},"cbid":211}}}}')
        parts.append(f'{{"ph":"X","cat":"kernel","name":"{name_prefix}{i % 97}","pid":0,"tid":7,"ts":{ts + 3},'
                     f'"dur":5,"args":{{"device":0,"stream":7,"correlation":{i},"grid":[64,1,1],"block":[128,1,1]}}}}')
    return ('{"traceEvents": [' + ",".join(parts) + "]}").encode()
