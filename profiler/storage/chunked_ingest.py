"""One large trace file ingested with every core: its chunks (profiler/parse/split.py) parsed by this
process and a pool of worker processes, then their rows committed into the store as one upload.

    plan      this process: where to cut
    parse     every process: `chunks.parse_chunk` for each chunk, staged Arrow files in a scratch
              folder; the pool takes the chunks from the front, this process from the back (a
              chunk the pool has not started is taken back), so they meet wherever speed puts them;
              meanwhile a thread of this process hashes the file (its run id)
    commit    this process, once the workers are gone: `chunks.load` the rows in file order,
              `Store.ingest_staged` them (a file already stored is reported as a duplicate)

With n cores there are n - 1 worker processes: this process parses too, instead of waiting, which
saves one process's start (~1 CPU s) and memory (~150 MB). The rows are exactly those of the file
parsed whole (tests/test_chunked_ingest.py); whenever the file cannot be cut (gzip, minified,
small), a chunk fails, the chunks disagree or a worker dies, `ingest` returns None and the caller
parses the file whole, so its error message, if any, is a single upload's. The workers are spawned
(not forked: the caller may hold DuckDB's or Streamlit's threads) and start while the file is cut.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from profiler.parse import split, trace
from profiler.storage import chunks

# smaller files are parsed whole: a worker's start (Python, the parser, Arrow, pandas) costs ~1 CPU s,
# what two cores save on ~100 MB of parsing
MIN_BYTES = 192 << 20
CHUNKS_PER_WORKER = 3


# below this many cores a file is parsed whole by default: on 2 idle cores the chunks saved 4-9 % of
# the time and added 40-70 % of the file to the peak memory (bench/RESULTS.md, "chunked ingest")
MIN_CORES = 4


def workers_default() -> int:
    """Processes for one file: one per core this process may run on (this one included), or 1 (the
    file parsed whole) on a machine of fewer than MIN_CORES cores."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores if cores >= MIN_CORES else 1


def _warm() -> int:
    """A worker's first task, while the file is cut: importing this module loads the parser, and
    Arrow's first array from a list loads pandas (~0.5 s), before the chunks come."""
    import pyarrow as pa

    pa.array([0])
    return os.getpid()


def ingest(store, path: str | os.PathLike, workers: int, *, source: str = "uploaded", keep_python: bool = False,
           progress: Callable[[float], None] | None = None, chunk_bytes: int | None = None):
    """The `IngestResult` of ingesting the plain-JSON file at `path` in chunks on `workers`
    processes (this one and workers - 1 more), or None when it is not worth cutting or cannot be
    cut (the caller parses it whole). `chunk_bytes` (tests) cuts chunks of about that size."""
    started = time.perf_counter()
    size = chunks.estimated_size(path)
    if workers < 2 or (chunk_bytes is None and size < MIN_BYTES) or _gzipped(path):
        return None
    n = chunks.parts(size, size, workers * CHUNKS_PER_WORKER, chunk_bytes)
    if n < 2:
        return None
    helpers = min(workers, n) - 1
    pool = ProcessPoolExecutor(max_workers=helpers, mp_context=multiprocessing.get_context("spawn"))
    hashing = ThreadPoolExecutor(max_workers=1)  # hashlib and reads release the GIL: it overlaps the parse
    try:
        for _ in range(helpers):  # the workers start (and import the parser) while the file is cut
            pool.submit(_warm)
        with tempfile.TemporaryDirectory(prefix="ingest-chunks-") as scratch:
            cuts = split.plan(path, n)
            if cuts is None:
                return None
            digest = hashing.submit(chunks.file_hash, str(path))
            fp = chunks.FilePlan(str(path), cuts, "unhashed", cuts.size)  # its run id once hashed
            parts = _parse(fp, pool, scratch, keep_python, progress or (lambda _fraction: None))
            pool.shutdown(wait=True)  # the workers' memory is given back before the rows are assembled
            run_id, size = digest.result()
            if size > trace.DEFAULT_MAX_BYTES or not chunks.usable(fp, parts):
                return None
            summary, staging = chunks.load(dataclasses.replace(fp, run_id=run_id), parts, scratch)
        result = store.ingest_staged(summary, staging, source=source, started=started)  # a duplicate says so
        if progress:
            progress(1.0)
        return dataclasses.replace(result, chunks=fp.plan.chunks, workers=helpers + 1)
    except BrokenProcessPool:  # a worker died (out of memory?): parsed whole, the file says why
        return None
    except OSError:  # the file cannot be read now: parsed whole, its error names it
        return None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        hashing.shutdown(wait=True, cancel_futures=True)


def _parse(fp: chunks.FilePlan, pool: ProcessPoolExecutor, scratch: str, keep_python: bool,
           report: Callable[[float], None]) -> list:
    """Every chunk's `ChunkResult` (or error), in file order: the pool's from the front, this
    process's from the back."""
    n = fp.plan.chunks
    futures: list[Future] = [pool.submit(chunks.parse_chunk, fp, k, scratch, "file", keep_python) for k in range(n)]
    own: dict[int, object] = {}

    def done() -> None:
        report(0.9 * (len(own) + sum(f.done() and not f.cancelled() for f in futures)) / n)

    for k in reversed(range(n)):
        if not futures[k].cancel():  # the pool has it (or had it): what is left is the pool's
            break
        own[k] = chunks.parse_chunk(fp, k, scratch, "file", keep_python)
        done()
    parts = []
    for k, future in enumerate(futures):
        if k not in own:
            parts.append(future.result())
            done()
        else:
            parts.append(own[k])
    return parts


def _gzipped(path: str | os.PathLike) -> bool:
    """Gzipped files are parsed whole: unpacking one first costs what splitting it would save."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return True  # parsed whole, the file's error names it
