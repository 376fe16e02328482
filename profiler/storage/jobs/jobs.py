"""Jobs: the rank traces of one distributed run, ingested together and kept as Parquet.

A job's ranks are parsed (in parallel on Ray, or in this process: `profiler/storage/jobs/parallel.py`) by the
same code as a single upload, and each rank's tables are written as Parquet files under the job
directory (`job_root()`), partitioned by job and rank:

    <root>/<table>/job=<key>/rank=<rank>/<run id>.parquet     table: traces, iterations, kernels, ...
    <root>/manifests/<key>.json                                the job: ranks, files, missing ranks

The rank files are written aside and moved in whole, and the manifest is written last: the job's
commit (`profiler/storage/jobs/job_files.py`), so a job lands whole or not at all and a failed or killed
ingest leaves the job directory as it was. Readers check manifests and rank files against a schema
(`profiler/storage/job_check.py`) and put the Parquet rows of every job that reads whole beside the
store's own tables (`profiler/storage/job_views.py`), through temporary views of the same names, so
every query and page reads a rank like any other run; a damaged job is left out and listed.

The root can be any path pyarrow opens (a local directory, a network mount, `s3://...`), so
several dashboard instances can read one shared job directory (docs/store.md).
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from profiler import errors
from profiler.errors import JobError
from profiler.storage import job_layout

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,119}")
_HASHED_KEY = re.compile(r".*--[0-9a-f]{16}")
_BACKEND = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"backend"\s*:\s*"([^"\\]{1,40})"')


# --- where jobs live -----------------------------------------------------------------------------

def job_key(name: str) -> str:
    """A job name as a directory name, a different one for every name: a name of letters, digits,
    '.', '_' and '-' (at most 120, not starting with '.') is its own key; any other name is those
    characters of it, then '--' and 16 hex digits of its SHA-256 (a plain name never ends so)."""
    if not isinstance(name, str) or not name.strip():
        raise JobError("A job name cannot be empty.")
    if len(name) > job_layout.MAX_NAME_CHARS:
        raise JobError(f"A job name has at most {job_layout.MAX_NAME_CHARS} characters.")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes from the command line that are not UTF-8 (kept as surrogates)
        raise JobError(f"The job name '{ascii(name)[1:-1][:80]}' is not UTF-8 text: give the name in UTF-8.") from None
    if _PLAIN_KEY.fullmatch(name) and not _HASHED_KEY.fullmatch(name):
        return name
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80].lstrip(".")
    return f"{slug}--{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def run_id(key: str, trace_id: str) -> str:
    """A rank's run id: its trace's content hash within its job (the same file in two jobs, or
    uploaded on its own too, is two runs)."""
    return hashlib.sha256(f"{key}/{trace_id}".encode()).hexdigest()[:16]


# --- ranks ---------------------------------------------------------------------------------------

def rank_from_name(name: str) -> int | None:
    """The rank a file name gives ('rank-3', 'worker3', 'rank_03'), or None."""
    found = _RANK_IN_NAME.findall(Path(name).name)
    if not found:
        return None
    return int(found[-1]) if len(found[-1]) <= 18 else 10**18  # more digits: as absurd, without a huge int


def ranges_text(ranges: Iterable) -> str:
    """[[1, 1], [3, 7]] -> '1, 3-7'; no range -> 'none'."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges) or "none"


def check_rank(name: str, rank: int, world: int | None) -> errors.TraceError | None:
    """Why a file's rank and world size cannot be believed, or None."""
    if not 0 <= rank < job_layout.MAX_RANKS:
        return errors.TraceError(name, f"says it is rank {rank}: a job's ranks are 0 to {job_layout.MAX_RANKS - 1:,}")
    if world is not None and not 1 <= world <= job_layout.MAX_RANKS:
        return errors.TraceError(name, f"says its world size is {world}: at most {job_layout.MAX_RANKS:,} ranks")
    if world is not None and rank >= world:
        return errors.TraceError(name, f"says it is rank {rank} of a world of {world}")
    return None


def backend(path: str | os.PathLike, head_bytes: int = 4 << 20) -> str | None:
    """`distributedInfo.backend` ('nccl', 'gloo', ...) as written near the top of a trace, or None
    (the rank and world size come from the parsed trace itself)."""
    import gzip

    with open(path, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
        try:
            head = stream.read(head_bytes)
        except (OSError, EOFError):
            return None
    match = _BACKEND.search(head)
    return match.group(1).decode(errors="replace") if match else None


def trace_files(paths: Iterable[str | os.PathLike], unpack_dir: str | None = None) -> list[Path]:
    """The trace files named: files as given, directories' `.json` / `.json.gz` files (sorted),
    and the trace members of `.zip` archives (extracted into `unpack_dir`)."""
    found: list[Path] = []
    for item in map(Path, paths):
        if item.is_dir():
            found += sorted(p for p in item.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
        elif item.suffix == ".zip":
            found += unzip(item, unpack_dir or tempfile.mkdtemp(prefix="job-"))
        elif item.is_file():
            found.append(item)
        elif item.exists():
            raise JobError(f"{item.name}: not a regular file (a pipe or device): only files are read")
        else:
            raise JobError(f"{item}: no such file or directory")
    if not found:
        raise JobError("no trace files (.json, .json.gz) among " + ", ".join(map(str, paths)))
    return found


def unzip(archive: str | os.PathLike, into: str | os.PathLike) -> list[Path]:
    """The trace members of a zip archive, extracted flat into `into` (member names are data:
    only their base names are used, so nothing lands outside `into`). The member count, the total
    and every member's declared size are checked before anything is extracted
    (profiler/storage/jobs/unpack.py); the caller removes `into` whatever happens."""
    from profiler.storage.jobs import unpack

    out: list[Path] = []
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for why in (unpack.archive_refusal(infos, into), *map(unpack.refusal, infos)):
                if why is not None:
                    raise JobError(f"{Path(archive).name}: {why}; nothing was extracted")
            for info in infos:
                base = Path(info.filename).name
                if info.is_dir() or not base.endswith(TRACE_SUFFIXES) or base.startswith("."):
                    continue
                target = Path(into) / base
                if target.exists():
                    raise JobError(f"{Path(archive).name}: two members are called {base}")
                with zf.open(info) as src, open(target, "wb") as dst:
                    while chunk := src.read(8 << 20):
                        dst.write(chunk)
                out.append(target)
    except zipfile.BadZipFile as e:
        raise JobError(f"{Path(archive).name}: not a readable zip archive ({e})") from e
    return sorted(out)


def save_uploads(files, folder: str | os.PathLike) -> list[Path]:
    """Uploaded files (objects with `name` and `getbuffer()` or `read()`, e.g. Streamlit's) written
    into `folder` under their base names; zips are unpacked there. Returns the trace files."""
    saved: list[Path] = []
    for f in files:
        target = Path(folder) / Path(f.name).name
        if target.exists():
            raise JobError(f"two uploaded files are called {target.name}: a job needs one file per rank")
        data = f.getbuffer() if hasattr(f, "getbuffer") else f.read()
        target.write_bytes(data)
        saved.append(target)
    zips = [p for p in saved if p.suffix == ".zip"]
    unpacked = Path(folder) / "unzipped"
    unpacked.mkdir(exist_ok=True)
    return [p for p in saved if p.suffix != ".zip"] + [m for z in zips for m in unzip(z, unpacked)]


# --- the job and its manifest ----------------------------------------------------------------------

@dataclass
class RankResult:
    """What a worker made of one file (see rank_task.parse_rank)."""
    file: str
    rank: int
    rank_from: str            # 'distributedInfo' or 'file name'
    world_size: int | None
    backend: str | None
    run_id: str
    trace_id: str
    size_bytes: int
    events: int
    kernels: int
    files: dict[str, str]     # table -> Parquet file
    seconds: float
    peak_rss: int             # the worker process's peak RSS during this file (since start_rss), bytes
    start_rss: int = 0        # the worker process's RSS when it took this file, bytes
    metrics_digest: str = ""  # metrics.definition_digest() of the worker that computed its metrics
    completeness_digest: str = ""  # completeness.definition_digest() of the worker that checked it
    chunks: int = 1           # how many pieces the file was parsed in (profiler/storage/jobs/chunks.py)
    notes: tuple = ()         # events skipped, values stored as missing (IngestResult.notes)
    # the rows of its tables that the job's summary reads ({table: Arrow table}, SUMMARY_INPUTS),
    # so that the summary is computed from them, not from every rank's files; None: not taken. The
    # ranks parsed in one task share one dict holding all of theirs (sent, and read, once)
    summary_rows: dict | None = None
    # CPU seconds of the task's process (all its threads) spent on this file; a batch's, shared
    # evenly among its files
    cpu_seconds: float = 0.0


# A rank's rows that the job queries (profiler/analysis/reads/sql/job_*.sql) read, as filters on its
# tables: its trace and metrics rows, its communication kernels of an iteration, their launch calls,
# and the ops that carry a message size. The summary computed over only these rows equals the one
# computed over all (tests/test_job_summary.py checks it).
SUMMARY_INPUTS = {
    "traces": "true",
    job_layout.METRICS_TABLE: "true",
    "kernels": "t.iteration IS NOT NULL AND is_communication(t.name)",
    "launches": "EXISTS (SELECT 1 FROM kernels k WHERE k.run_id = t.run_id AND k.correlation = t.correlation "
                "AND k.iteration IS NOT NULL AND is_communication(k.name))",
    "ops": "t.in_msg_nelems IS NOT NULL",
}


@dataclass
class JobResult:
    job: str
    key: str
    world_size: int
    backend: str | None
    ranks: list[RankResult]
    ranks_missing: list[list[int]]  # [first, last] ranges
    skipped: list[str] = field(default_factory=list)   # 'file: problem' of files left out (--skip-bad)
    seconds: float = 0.0
    workers: int = 1
    engine: str = "in-process"

    @property
    def ranks_present(self) -> list[int]:
        return sorted(r.rank for r in self.ranks)


def remove_job_files(root: str, key: str) -> None:
    """Delete every Parquet partition of job `key` (uncommitted leftovers or a deleted job)."""
    import pyarrow.fs as pafs  # pyarrow loads only where job files are read or written

    fs, base = job_layout.filesystem(root)
    for table in (*job_layout.WRITTEN, "chunks"):  # chunks: a large file's pieces, while it is parsed
        path = f"{base}/{table}/job={key}"
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            fs.delete_dir(path)
