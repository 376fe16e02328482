"""One large trace of a job parsed by several workers: its chunks (profiler/parse/split.py) are
parsed into staged Arrow columns, written beside the job's files, then assembled in file order into
one rank, with the same rows as the file parsed whole.

    plan_file      driver: where to cut (a gzipped file is first unpacked beside the job's zips),
                   and the file's content hash (its run id), which no chunk can compute alone
    parse_chunk    worker: one chunk -> <root>/chunks/job=<key>/<run id>/<k>/<table>.arrow
    usable         driver: did every chunk parse, and read timestamps the way the whole file would?
    load           worker: the chunks' rows as one staged trace (op ids made global), for
                   `Store.ingest_staged`; `rank_task.assemble_rank` runs it and writes the rank

What is global across a file is made so here: op ids are offset by the ops of earlier chunks, the
row order (event_idx of memory events and lane names) is the chunks' order, counts are summed, and
the header comes from the last chunk, which reads the file's own prefix and ending. A chunk that
fails for any reason, or chunks that disagree, make the caller parse the file whole: its error
message (or its rows) are then exactly those of a single upload.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import stat
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from profiler import errors
from profiler.parse import split, trace
from profiler.storage import job_layout
from profiler.storage.rss import peak_rss, reset_peak_rss
from profiler.storage.staging import Staging

MIN_SPLIT_BYTES = 64 << 20   # smaller files are never split on their own
MIN_CHUNK_BYTES = 32 << 20   # nor cut into chunks smaller than this
READ_BYTES = 8 << 20


@dataclass(frozen=True)
class FilePlan:
    file: str              # the file of the job (its name, rank and backend are read from it)
    plan: split.Plan       # over `file`, or over its unpacked copy when it is gzipped
    run_id: str            # sha256 of the decompressed bytes, as a single upload computes it
    size_bytes: int        # decompressed size


@dataclass
class ChunkResult:
    """What a worker made of one chunk (picklable: it travels back to the driver)."""
    k: int
    folder: str
    events: int
    skipped: int
    reasons: dict[str, int]
    truncated: int
    ops: int
    exact_at_start: bool | None
    exact: bool
    missing: dict[str, int]
    header: dict | None      # the last chunk's only
    seconds: float
    peak_rss: int
    start_rss: int
    tables: list[str] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)  # text values cut at 64 KiB, per table.column
    rows: dict[str, pa.Table] | None = None  # the tables themselves, when parsed where they are assembled


def parts(size: int, total: int, workers: int, chunk_bytes: int | None = None) -> int:
    """How many chunks a file of `size` bytes in a job of `total` bytes is cut into: its share of
    the workers (a job of one file: all of them), at least MIN_CHUNK_BYTES each; or, with
    `chunk_bytes` (tests, benchmarks), as many as that size gives."""
    if chunk_bytes:
        return max(1, -(-size // chunk_bytes))
    if workers < 2 or size < MIN_SPLIT_BYTES:
        return 1
    return max(1, min(round(workers * size / max(total, 1)), size // MIN_CHUNK_BYTES))


def estimated_size(path: str | os.PathLike) -> int:
    """The decompressed size of a trace file: a gzip file's own record of it (modulo 4 GiB, so a
    guess), else its size on disk; 0 for anything but a regular file (opening a FIFO would wait for
    a writer: the whole-file path refuses it at once)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return 0
        size = info.st_size
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b" or size < 18:
                return size
            f.seek(-4, os.SEEK_END)
            return max(size, int.from_bytes(f.read(4), "little"))
    except OSError:
        return 0  # not split: parsed whole, the file's error names it


def plan_file(file: str | os.PathLike, n: int, scratch: str | os.PathLike) -> FilePlan | None:
    """Where to cut `file` into about `n` chunks, or None to parse it whole (it cannot be cut, or
    it has a problem that parsing it whole will name). A gzipped file is unpacked into `scratch`
    first; the copy is removed when the file cannot be cut."""
    try:
        return _plan_file(str(file), n, scratch)
    except OSError:
        return None  # parsed whole, the file's error names it (it cannot be read, the disk is full...)


def _plan_file(file: str, n: int, scratch: str | os.PathLike) -> FilePlan | None:
    unpacked = None
    with open(file, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    if gzipped:
        handle, name = tempfile.mkstemp(dir=scratch, prefix=Path(file).name, suffix=".unpacked.json")
        os.close(handle)
        unpacked = Path(name)
        digest = _unpack(file, unpacked)
        if digest is None:
            unpacked.unlink(missing_ok=True)
            return None
    p = split.plan(unpacked or file, n)
    if p is None:
        if unpacked:
            unpacked.unlink(missing_ok=True)
        return None
    if not gzipped:
        digest = file_hash(file)
    if digest[1] > trace.DEFAULT_MAX_BYTES:
        return None
    return FilePlan(file, p, digest[0], digest[1])


def file_hash(path: str) -> tuple[str, int]:
    """The run id of the plain file at `path` (as `TraceReader` computes it) and its size."""
    sha, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(READ_BYTES):
            sha.update(block)
            size += len(block)
    return sha.hexdigest()[:16], size


def _unpack(path: str, into: Path) -> tuple[str, int] | None:
    """Decompress a gzip file into `into`, hashing as it goes; None if it is corrupt or too large
    (parsed whole, it is refused with a message that says so)."""
    sha, size = hashlib.sha256(), 0
    try:
        with gzip.open(path, "rb") as src, open(into, "wb") as out:
            while block := src.read(READ_BYTES):
                size += len(block)
                if size > trace.DEFAULT_MAX_BYTES:
                    return None
                sha.update(block)
                out.write(block)
    except (OSError, EOFError, zlib.error):
        return None
    return sha.hexdigest()[:16], size


def chunk_folder(base: str, key: str, run_id: str) -> str:
    return f"{base}/chunks/job={key}/{run_id}"


def parse_chunk(fp: FilePlan, k: int, base: str, key: str, keep_python: bool = False,
                in_memory: bool = False) -> ChunkResult | errors.TraceError:
    """Worker: parse chunk `k` of a planned file and write its staged tables as Arrow files (with
    `in_memory`, for the process that assembles them, keep them in the result instead).
    A problem is returned, not raised (the caller then parses the file whole)."""

    started, start_rss = time.perf_counter(), reset_peak_rss()
    folder = f"{chunk_folder(base, key, fp.run_id)}/{k}"
    fs, _ = job_layout.filesystem(base)
    try:
        with split.chunk_stream(fp.plan, k) as stream:
            reader = trace.TraceReader(stream, Path(fp.file).name, keep_python=keep_python, hashed=False)
            staging = Staging()
            for batch in reader.batches():
                staging.add(batch)
        assert reader.summary is not None
        staged = staging.staged()
        tables = [table for table, rows in staged.items() if rows.num_rows]
        if not in_memory:
            fs.create_dir(folder, recursive=True)
            for table in tables:
                with fs.open_output_stream(f"{folder}/{table}.arrow") as sink, \
                        pa.ipc.new_stream(sink, staged[table].schema) as out:
                    out.write_table(staged[table])
        reasons, truncated = reader.skip_counts
        last = k == fp.plan.chunks - 1
        return ChunkResult(
            k, folder, reader.summary.events, reader.summary.skipped, reasons, truncated,
            staged["ops"].num_rows, reader.exact_at_start,
            reader.exact, dict(staging.missing), reader.summary.header if last else None,
            time.perf_counter() - started, peak_rss(), start_rss, tables, dict(staging.cut),
            staged if in_memory else None)
    except (errors.TraceError, OSError) as e:
        return e if isinstance(e, errors.TraceError) else errors.TraceError(Path(fp.file).name, f"chunk {k}: {e}")


def usable(fp: FilePlan, results: list) -> bool:
    """Every chunk parsed, and together they read the file as it reads whole: timestamps are read
    as text from the first batch that needs it on (`TraceReader`), so either no chunk needed that,
    or every chunk did from its first event (then so does the whole file, from its first batch);
    and the events are within the reader's limit."""
    if not all(isinstance(r, ChunkResult) for r in results) or len(results) != fp.plan.chunks:
        return False
    starts = [r.exact_at_start for r in results if r.exact_at_start is not None]
    timestamps_agree = not any(r.exact for r in results) or all(starts)
    return timestamps_agree and sum(r.events for r in results) <= trace.MAX_EVENTS


def load(fp: FilePlan, results: list[ChunkResult], base: str) -> tuple[trace.TraceSummary, Staging]:
    """The chunks' rows as one staged trace, as if the file had been parsed whole."""
    fs, _ = job_layout.filesystem(base)
    staging = Staging()
    ops_before = 0
    for r in sorted(results, key=lambda r: r.k):
        for table in r.tables:
            if r.rows is not None:
                rows = r.rows[table]
            else:
                with fs.open_input_stream(f"{r.folder}/{table}.arrow") as f:
                    rows = pa.ipc.open_stream(f).read_all()
            if table == "ops" and ops_before:  # op ids count from the file's first op
                column = rows.schema.get_field_index("op_id")
                rows = rows.set_column(column, "op_id", pc.add(rows["op_id"], ops_before))
            staging.add_table(table, rows)
        ops_before += r.ops
        for key, n in r.missing.items():
            staging.missing[key] = staging.missing.get(key, 0) + n
        for key, n in r.cut.items():
            staging.cut[key] = staging.cut.get(key, 0) + n
    reasons: dict[str, int] = {}
    for r in results:
        for why, n in r.reasons.items():
            reasons[why] = reasons.get(why, 0) + n
    last = max(results, key=lambda r: r.k)
    summary = trace.TraceSummary(
        Path(fp.file).name, fp.run_id, fp.size_bytes, sum(r.events for r in results),
        sum(r.skipped for r in results), last.header or {},
        trace.skip_notes(reasons, sum(r.truncated for r in results)))
    return summary, staging


def remove_folder(base: str, key: str) -> None:
    """Remove the job's folder of chunk files (empty once each file is assembled)."""
    fs, _ = job_layout.filesystem(base)
    try:
        fs.delete_dir(f"{base}/chunks/job={key}")
    except (OSError, FileNotFoundError):
        pass


def discard(fp: FilePlan, base: str, key: str) -> None:
    """Remove a planned file's chunk files and its unpacked copy (if any)."""
    fs, _ = job_layout.filesystem(base)
    folder = chunk_folder(base, key, fp.run_id)
    try:
        fs.delete_dir(folder)
    except (OSError, FileNotFoundError):
        pass
    if fp.plan.path != fp.file:
        Path(fp.plan.path).unlink(missing_ok=True)

