"""Inputs that are valid but slow or large to handle (issue 22, class 7), generated on demand.

Each is written quickly as text (gzip where the issue's case was small on disk): ops all at one
timestamp or nested one inside the other, launches and kernels that all share one correlation id,
a gzip of more tiny events than a trace may hold, a zip whose member inflates far beyond its size,
a thread name of many megabytes.
"""
from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

HEAD = b'{"traceEvents": ['
TAIL = b"]}"


def _gzip(path: Path, parts, level: int = 6) -> Path:
    with gzip.open(path, "wb", compresslevel=level) as out:
        out.write(HEAD)
        for k, part in enumerate(parts):
            out.write(b"," * (k > 0) + part)
        out.write(TAIL)
    return path


def _op(ts: int, dur: int, name: str = "aten::op", tid: int = 1) -> bytes:
    return b'{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":%d,"ts":%d,"dur":%d}' % (
        name.encode(), tid, ts, dur)


def ops_at_one_time(path: Path, n: int) -> Path:
    """`n` ops of one thread, all starting at the same microsecond with the same duration: each
    holds all those after it, so they nest `n` deep."""
    one = _op(10, 5)
    return _gzip(path, (b",".join([one] * min(10_000, n - k)) for k in range(0, n, 10_000)))


def ops_side_by_side(path: Path, n: int) -> Path:
    """`n` ops of one thread one after the other: the shape nesting was always fast on."""
    return _gzip(path, (b",".join(_op(10 * i, 5) for i in range(lo, min(n, lo + 10_000)))
                        for lo in range(0, n, 10_000)))


def ops_nested(path: Path, n: int) -> Path:
    """`n` ops of one thread, each starting a microsecond after the one before and ending a
    microsecond before it: nested `n` deep, the innermost an aten::mm that launches a kernel, with
    a [memory] event in it."""
    def parts():
        for lo in range(0, n, 10_000):
            yield b",".join(_op(i, 2 * (n - i), "aten::mm" if i == n - 1 else "aten::op")
                            for i in range(lo, min(n, lo + 10_000)))
        yield (b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":0,'
               b'"args":{"correlation":1}}' % n)
        yield (b'{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":%d,"dur":1,'
               b'"args":{"device":0,"stream":7,"correlation":1}}' % (3 * n))
        yield (b'{"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":%d,'
               b'"args":{"Device Type":0,"Device Id":-1,"Addr":1,"Bytes":64}}' % n)
    return _gzip(path, parts())


def shared_correlation(path: Path, n: int) -> Path:
    """`n` launch calls and `n` kernels that all carry correlation id 1 (the issue's 3,000 × 3,000:
    9 M rows in every join on it), then one launch and kernel of their own id."""
    launch = b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":1,' \
             b'"args":{"correlation":%d}}'
    kernel = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1,' \
             b'"args":{"device":0,"stream":7,"correlation":%d}}'
    return _gzip(path, [b",".join(launch % (10 + i, 1) for i in range(n)),
                        b",".join(kernel % (20 + n + i, 1) for i in range(n)),
                        launch % (5 * n, 2), kernel % (6 * n, 2)])


def tiny_events(path: Path, n: int, event: bytes = b'{"ph":"X","cat":"kernel","ts":1}') -> Path:
    """A gzip of `n` copies of one tiny event: small on disk, more events than a trace may hold
    when `n` > trace.MAX_EVENTS."""
    block = b",".join([event] * 100_000)
    return _gzip(path, (block if n - k >= 100_000 else b",".join([event] * (n - k)) for k in range(0, n, 100_000)))


def huge_lane_names(megabytes: int = 10) -> bytes:
    """A kernel on a thread whose name, and whose pid and tid strings, are `megabytes` MB each."""
    big = "t" * (megabytes << 20)
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": big}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p" + big}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": "P" + big, "tid": "T" + big, "ts": 1, "dur": 2},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 2}]
    return json.dumps({"traceEvents": events}).encode()


def inflating_zip(path: Path, mib: int = 256) -> Path:
    """A job upload: a zip whose trace member holds `mib` MiB of spaces inside traceEvents, deflated
    about 1,000 times (a bomb of the issue's kind, at a size that is quick to write)."""
    info = zipfile.ZipInfo("rank0.json")
    info.compress_type = zipfile.ZIP_DEFLATED
    block = b" " * (1 << 20)
    with zipfile.ZipFile(path, "w") as zf, zf.open(info, "w", force_zip64=True) as out:
        out.write(HEAD)
        for _ in range(mib):
            out.write(block)
        out.write(TAIL)
    return path
