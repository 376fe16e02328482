"""One large trace file ingested with every core: its chunks (profiler/parse/split.py) parsed by this
process and a pool of worker processes, then their rows committed into the store as one upload.

    plan      this process: where to cut
    parse     every process: `chunks.parse_chunk` for each chunk, staged Arrow files in a scratch
              folder (this process keeps its own in memory); the workers take chunks from the
              front, this process from the back, each the next one when it is free, so they meet
              wherever speed puts them; meanwhile threads of this process hash the file (its run
              id) and open the store
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
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from profiler.parse import split, trace
from profiler.storage.jobs import chunks

# smaller files are parsed whole: a worker's start (Python, the parser, Arrow) costs CPU time that
# two cores only win back on a large file
MIN_BYTES = 192 << 20
CHUNKS_PER_WORKER = 3  # a few chunks per process, so that a slow one does not hold the end


# below this many cores a file is parsed whole by default. Two cores are enough since the workers
# leave before the rows are assembled and each takes a chunk only when free: on 2 idle cores the
# chunks take 500 MB traces 14-28 % faster than one process, for 0.05-0.10x the file more peak
# memory (bench/RESULTS.md, "Ingest, every mix")
MIN_CORES = 2


def workers_default() -> int:
    """Processes for one file: one per core this process may run on (this one included), or 1 (the
    file parsed whole) on a machine of fewer than MIN_CORES cores."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores if cores >= MIN_CORES else 1


def _warm() -> int:
    """A worker's first task, while the file is cut: importing this module loads the parser and
    the staging (Arrow) before the chunks come."""
    return os.getpid()


def ingest_file(store, path: str | os.PathLike, workers: int, *, source: str = "uploaded",
                keep_python: bool = False, progress: Callable[[float], None] | None = None):
    """`store.ingest(path)` with the same rows, parsed in chunks on `workers` processes where the
    file is large plain JSON (`ingest`), whole otherwise."""
    done = ingest(store, path, workers, source=source, keep_python=keep_python, progress=progress)
    return done if done is not None else store.ingest(path, source=source, progress=progress,
                                                       keep_python=keep_python)


def ingest(store, path: str | os.PathLike, workers: int, *, source: str = "uploaded", keep_python: bool = False,
           progress: Callable[[float], None] | None = None, chunk_bytes: int | None = None):
    """The `IngestResult` of ingesting the plain-JSON file at `path` in chunks on `workers`
    processes (this one and workers - 1 more), or None when it is not worth cutting or cannot be
    cut (the caller parses it whole). `chunk_bytes` (tests) cuts chunks of about that size."""
    started = time.perf_counter()
    size = chunks.estimated_size(path)
    if workers < 2 or not size or (chunk_bytes is None and size < MIN_BYTES) or _gzipped(path):
        return None
    n = chunks.parts(size, size, workers * CHUNKS_PER_WORKER, chunk_bytes)
    if n < 2:
        return None
    helpers = min(workers, n) - 1
    pool = ProcessPoolExecutor(max_workers=helpers, mp_context=multiprocessing.get_context("spawn"))
    # hashlib, reads and DuckDB release the GIL: the file is hashed and the store opened (made,
    # migrated) on threads while the file parses
    helping = ThreadPoolExecutor(max_workers=2)
    try:
        for _ in range(helpers):  # the workers start (and import the parser) while the file is cut
            pool.submit(_warm)
        with tempfile.TemporaryDirectory(prefix="ingest-chunks-") as scratch:
            cuts = split.plan(path, n)
            if cuts is None:
                return None
            digest = helping.submit(chunks.file_hash, str(path))
            opened = helping.submit(store.has_run, "")
            fp = chunks.FilePlan(str(path), cuts, "unhashed", cuts.size)  # its run id once hashed
            parts = _parse(fp, pool, scratch, keep_python, progress or (lambda _fraction: None), helpers)
            pool.shutdown(wait=True)  # the workers' memory is given back before the rows are assembled
            run_id, size = digest.result()
            opened.result()  # a store that cannot be opened says so here, as it would at the commit
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
        helping.shutdown(wait=True, cancel_futures=True)


def _parse(fp: chunks.FilePlan, pool: ProcessPoolExecutor, scratch: str, keep_python: bool,
           report: Callable[[float], None], helpers: int) -> list:
    """Every chunk's `ChunkResult` (or error), in file order: the pool's from the front, this
    process's from the back, each taking the next chunk only when it is free (an executor given
    every chunk at once hands some to a worker before it can start them: on one mix this process
    then sat idle for a third of the parse). A worker that died raises `BrokenProcessPool`."""
    chunks_left = _Ends(fp.plan.chunks)
    parts: dict[int, object] = {}
    changed = threading.Condition()

    def feed() -> None:  # a worker is free: give it the next chunk
        k = chunks_left.front()
        if k is None:
            return
        try:
            future = pool.submit(chunks.parse_chunk, fp, k, scratch, "file", keep_python)
        except (BrokenProcessPool, RuntimeError) as e:  # RuntimeError: the pool was shut down
            future = Future()
            future.set_exception(e)
        future.add_done_callback(lambda f, k=k: arrived(k, f))

    def arrived(k: int, future: Future) -> None:
        with changed:
            parts[k] = future.exception() or future.result()
            changed.notify_all()
        feed()

    for _ in range(helpers):
        feed()
    while (k := chunks_left.back()) is not None:
        part = chunks.parse_chunk(fp, k, scratch, "file", keep_python, in_memory=True)
        with changed:
            parts[k] = part
        report(0.9 * len(parts) / fp.plan.chunks)
    with changed:
        while len(parts) < fp.plan.chunks:
            changed.wait(0.5)
            report(0.9 * len(parts) / fp.plan.chunks)
    for part in parts.values():
        if isinstance(part, BrokenProcessPool):
            raise part
    return [parts[k] for k in range(fp.plan.chunks)]


class _Ends:
    """Chunks 0 .. n-1 handed out from both ends, each once (thread-safe)."""

    def __init__(self, n: int):
        self._lo, self._hi = 0, n - 1
        self._lock = threading.Lock()

    def front(self) -> int | None:
        with self._lock:
            if self._lo > self._hi:
                return None
            self._lo += 1
            return self._lo - 1

    def back(self) -> int | None:
        with self._lock:
            if self._lo > self._hi:
                return None
            self._hi -= 1
            return self._hi + 1


def _gzipped(path: str | os.PathLike) -> bool:
    """Gzipped files are parsed whole: unpacking one first costs what splitting it would save."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return True  # parsed whole, the file's error names it
