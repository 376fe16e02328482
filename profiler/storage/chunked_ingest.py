"""One large trace file ingested with every core: its chunks (profiler/parse/split.py) parsed by a
pool of worker processes, then their rows committed into the store by this process, as one upload.

    plan      this process: where to cut, and the file's content hash (its run id)
    parse     workers: `chunks.parse_chunk` for each chunk, staged Arrow files in a scratch folder
    commit    this process: `chunks.load` the rows in file order, `Store.ingest_staged` them

The rows are exactly those of the file parsed whole (tests/test_chunked_ingest.py); whenever the
file cannot be cut (gzip, minified, small) or a chunk fails or the chunks disagree, `ingest` returns
None and the caller parses the file whole, so its error message, if any, is a single upload's.
The workers are spawned (not forked: the caller may hold DuckDB's or Streamlit's threads) and start
while the file is hashed.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from profiler import errors
from profiler.storage import chunks
from profiler.storage.engines import Processes

# smaller files are parsed whole: a worker's start (Python, the parser, Arrow, pandas) costs ~1 CPU s,
# what two cores save on ~100 MB of parsing
MIN_BYTES = 192 << 20
CHUNKS_PER_WORKER = 3               # a few chunks each, so that a slow worker does not hold the end


def workers_default() -> int:
    """Worker processes for one file: one per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _warm() -> int:
    """A worker's first task, while the file is hashed: importing this module loads the parser, and
    Arrow's first array from a list loads pandas (~0.5 s), before the chunks come."""
    import pyarrow as pa

    pa.array([0])
    return os.getpid()


def ingest(store, path: str | os.PathLike, workers: int, *, source: str = "uploaded", keep_python: bool = False,
           progress: Callable[[float], None] | None = None, chunk_bytes: int | None = None):
    """The `IngestResult` of ingesting the plain-JSON file at `path` in chunks on `workers`
    processes, or None when it is not worth cutting or cannot be cut (the caller parses it whole).
    `chunk_bytes` (tests) cuts chunks of about that size whatever the file's size."""
    started = time.perf_counter()
    size = chunks.estimated_size(path)
    if workers < 2 or (chunk_bytes is None and size < MIN_BYTES) or _gzipped(path):
        return None
    report = progress or (lambda _fraction: None)
    n = chunks.parts(size, size, workers * CHUNKS_PER_WORKER, chunk_bytes)
    if n < 2:
        return None
    pool = Processes(min(workers, n))
    try:
        return _run(store, path, n, pool, source, keep_python, report, started)
    except (errors.JobError, BrokenProcessPool):  # a worker died (out of memory?): parsed whole, the file says why
        return None
    finally:
        pool.close()


def _run(store, path, n: int, pool: Processes, source: str, keep_python: bool, report, started: float):
    """Warm the workers, plan and hash the file, parse its chunks, commit their rows."""
    for w in range(pool.workers):  # the workers start (and import the parser) while the file is hashed
        pool.submit(("warm", w), _warm)
    with tempfile.TemporaryDirectory(prefix="ingest-chunks-") as scratch:
        fp = chunks.plan_file(path, n, scratch)
        if fp is None:
            return None
        if store.has_run(fp.run_id):
            return None  # the whole-file path says "already in store" without parsing it
        for k in range(fp.plan.chunks):
            pool.submit(("chunk", k), chunks.parse_chunk, fp, k, scratch, "file", keep_python)
        results = {}
        while pool.busy():
            (kind, k), value = pool.next_done(lambda _tag: Path(path).name)
            if kind == "chunk":
                results[k] = value
                report(0.9 * len(results) / fp.plan.chunks)
        parts = [results[k] for k in sorted(results)]
        if not chunks.usable(fp, parts):
            return None
        summary, staging = chunks.load(fp, parts, scratch)
    result = store.ingest_staged(summary, staging, source=source, started=started)
    report(1.0)
    return dataclasses.replace(result, chunks=fp.plan.chunks, workers=pool.workers)




def _gzipped(path: str | os.PathLike) -> bool:
    """Gzipped files are parsed whole: unpacking one first costs what splitting it would save."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return True  # parsed whole, the file's error names it
