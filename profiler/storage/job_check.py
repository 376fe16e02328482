"""A job's manifest and rank files, checked against a schema when read.

The job directory is shared and lives longer than any one program: a manifest may be cut short,
hand-edited or copied, a Parquet file deleted or replaced. `read_jobs` returns the jobs that read
whole and, apart, each damaged job with the file at fault and why; readers attach only the whole
ones (profiler/storage/job_views.py), so one damaged job never hides the others or the store's
own runs. Reasons name the job and a path inside the job directory, never a server path.

A manifest must be an object with the fields `manifest_check.py` checks; its file paths must be exactly
where `job_layout.rank_file` puts them (so nothing outside the job directory is read). A rank file must
exist, be Parquet, have its table's columns and types (Parquet of schema version 3 and before,
whose run id column was called `trace_id`, reads as `old`), hold only its own run's rows, and its
kernels file as many rows as the manifest says. File checks are cached per path, size and mtime;
on a remote filesystem a job's checks are kept a minute (one request per file otherwise, per read).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from profiler.errors import Damage
from profiler.storage import job_layout, manifest_check

MAX_MANIFEST_BYTES = 64 << 20
_CACHE: dict[tuple, str] = {}  # (file, size, mtime, run id, rows) -> layout
REMOTE_RECHECK_S = 60.0
_REMOTE: dict[tuple, tuple] = {}  # (manifest, mtime, size) -> (when, layouts, Damage or None)


@dataclass(frozen=True)
class Damaged:
    job: str      # the job's name as its manifest says it, else the manifest's file name
    file: str     # the file at fault, relative to the job directory
    reason: str
    key: str = ""  # the manifest's file name without .json ("" when no manifest can be listed)
    run_ids: tuple = ()  # its ranks' run ids, when its manifest reads (a rank file is at fault)

    def __str__(self) -> str:
        return f"job {self.job!r}: {self.file}: {self.reason}"


@dataclass
class JobsRead:
    ok: list[dict] = field(default_factory=list)        # normalised manifests (see `manifest_check.manifest`)
    damaged: list[Damaged] = field(default_factory=list)
    layouts: dict[str, str] = field(default_factory=dict)  # rank file (under the root) -> 'current' | 'old'


_SCHEMAS: dict = {}


def table_schemas(con=None) -> dict:
    """{table: pyarrow schema} of the rank files' tables, as this program's store defines them: read
    from `con` (a store's cursor), else from a store made in memory; the same for every store of
    this version, so found once per process."""
    if not _SCHEMAS:
        _SCHEMAS.update(_read_schemas(con) if con is not None else _memory_schemas())
    return _SCHEMAS


def _read_schemas(con) -> dict:
    db = con.execute("SELECT current_database()").fetchall()[0][0]
    return {t: con.sql(f'SELECT * FROM "{db}".main.{t} LIMIT 0').to_arrow_table().schema for t in job_layout.WRITTEN}


def _memory_schemas() -> dict:
    import duckdb

    from profiler.storage import metrics
    from profiler.storage.schema import SCHEMA_SQL

    con = duckdb.connect(":memory:")
    try:
        con.execute(SCHEMA_SQL.read_text())
        metrics.install(con)
        return _read_schemas(con)
    finally:
        con.close()


def read_jobs(root: str, files: bool = True, con=None) -> JobsRead:
    """Every job under `root`: those that read whole, and the damaged ones with their reasons.
    `files`: check the rank files too (else only the manifests), against the tables of `con`."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    schemas = table_schemas(con) if files else None
    out = JobsRead()
    try:
        fs, base = job_layout.filesystem(root)
        entries = fs.get_file_info(pafs.FileSelector(f"{base}/manifests", allow_not_found=True))
    except (OSError, ValueError, pa.ArrowException) as e:
        out.damaged.append(Damaged("(every job)", "manifests", f"cannot be listed ({plain_reason(e)})"))
        return out
    seen_names: set[str] = set()
    for entry in sorted(entries, key=lambda i: i.path):
        name = entry.path.rsplit("/", 1)[-1]
        if not name.endswith(".json") or name.startswith("."):
            continue
        rel = f"manifests/{name}"
        m = None
        try:
            if entry.type == pafs.FileType.Directory:
                raise Damage(rel, "is not a file")
            if entry.type != pafs.FileType.File or not _regular(fs, entry.path):
                raise Damage(rel, "is not a regular file (a pipe, device or link): never opened")
            m = manifest_check.manifest(_load(fs, entry.path, rel), name[: -len(".json")], rel)
            if m["job"] in seen_names:
                raise Damage(rel, "names a job that another manifest names too")
            if schemas is not None:
                out.layouts.update(_checked_files(fs, base, m, schemas, (entry.path, entry.mtime_ns, entry.size)))
        except Damage as e:
            job = m["job"] if m is not None else _job_of(fs, entry, name)
            out.damaged.append(Damaged(job, e.file, e.reason, name[: -len(".json")],
                                       tuple(r["run_id"] for r in m["ranks"]) if m is not None else ()))
            continue
        seen_names.add(m["job"])
        out.ok.append(m)
    return out


def files_seen(root: str, m: dict) -> str | None:
    """A digest of job `m`'s rank files as they are on disk (each one's path, size and mtime), or
    None when one is not a regular file (missing, a folder, a pipe, a symbolic link): a stat per
    file, the check of a read that does not open them. A kept summary is read only while its job's
    files are as they were when it was kept (a file replaced, emptied or cut changes it)."""
    import hashlib
    import stat as st

    import pyarrow.fs as pafs

    fs, base = job_layout.filesystem(root)
    paths = [path for r in m["ranks"] for path in r["files"].values()]
    h = hashlib.sha256()
    if isinstance(fs, pafs.LocalFileSystem):  # lstat: a link is not what the ingest wrote
        for path in paths:
            try:
                info = os.lstat(f"{base}/{path}")
            except OSError:
                return None
            if not st.S_ISREG(info.st_mode):
                return None
            h.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
        return h.hexdigest()[:24]
    for path, info in zip(paths, fs.get_file_info([f"{base}/{p}" for p in paths])):
        if info.type != pafs.FileType.File:
            return None
        h.update(f"{path}\0{info.size}\0{info.mtime_ns}\0".encode())
    return h.hexdigest()[:24]


def _regular(fs, path: str) -> bool:
    """On a local disk: `path` is a regular file, not a link to one (a pipe would block its reader)."""
    import stat as st

    import pyarrow.fs as pafs

    if not isinstance(fs, pafs.LocalFileSystem):
        return True
    try:
        return st.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def plain_reason(e: BaseException) -> str:
    """The first line of an error, server paths replaced by '(path)'."""
    text = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
    return re.sub(r"(?:/[^\s/'\"]+){2,}/?", "(path)", text)[:200]


def _load(fs, path: str, rel: str) -> Any:
    try:
        with fs.open_input_stream(path) as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except OSError as e:
        raise Damage(rel, f"cannot be read ({plain_reason(e)})") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise Damage(rel, f"is larger than {MAX_MANIFEST_BYTES >> 20} MiB")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise Damage(rel, "is not JSON") from None


def _job_of(fs, entry, name: str) -> str:
    """The job a damaged manifest belongs to: its "job" field when that reads, else its file name
    (a manifest that is not a regular file, a pipe say, is never opened)."""
    import pyarrow.fs as pafs

    if entry.type != pafs.FileType.File or not _regular(fs, entry.path):
        return name[: -len(".json")]
    try:
        with fs.open_input_stream(entry.path) as f:
            doc = json.loads(f.read(MAX_MANIFEST_BYTES))
        if isinstance(doc, dict) and isinstance(doc.get("job"), str) and doc["job"].strip():
            return doc["job"][:200]
    except Exception:  # noqa: BLE001 - any failure: the file name names it
        pass
    return name[: -len(".json")]


# --- the rank files -----------------------------------------------------------------------------------

def _checked_files(fs, base: str, m: dict, schemas: dict, manifest: tuple) -> dict[str, str]:
    """`_rank_files`; on a remote filesystem (one request per file) its answer for this manifest
    is kept REMOTE_RECHECK_S seconds (a file removed meanwhile fails a query in one line)."""
    import pyarrow.fs as pafs

    if isinstance(fs, pafs.LocalFileSystem):  # a stat per file: cheap enough for every read
        return _rank_files(fs, base, m, schemas)
    kept = _REMOTE.get(manifest)
    if kept is None or time.monotonic() - kept[0] > REMOTE_RECHECK_S:
        try:
            kept = _REMOTE[manifest] = (time.monotonic(), _rank_files(fs, base, m, schemas), None)
        except Damage as e:
            kept = _REMOTE[manifest] = (time.monotonic(), {}, e)
    if kept[2] is not None:
        raise kept[2]
    return kept[1]


def _rank_files(fs, base: str, m: dict, schemas: dict) -> dict[str, str]:
    """{file: layout} of job `m`'s rank files; raises Damage naming the first bad one."""
    import pyarrow.fs as pafs

    wanted = [(r, table, path) for r in m["ranks"] for table, path in r["files"].items() if table in schemas]
    infos = fs.get_file_info([f"{base}/{path}" for _, _, path in wanted])
    layouts = {}
    for (r, table, path), info in zip(wanted, infos):
        if info.type == pafs.FileType.NotFound or info.type == pafs.FileType.Directory:
            raise Damage(path, f"is missing (rank {r['rank']}'s {table})")
        if info.type != pafs.FileType.File or not _regular(fs, info.path):
            raise Damage(path, f"is not a regular file (a pipe, device or link; rank {r['rank']}'s {table})")
        expect = r["kernels"] if table == "kernels" else 1 if table == "traces" else None
        stamp = (info.path, info.size, info.mtime_ns, r["run_id"], expect)
        if stamp not in _CACHE:
            if len(_CACHE) > 100_000:
                _CACHE.clear()
            _CACHE[stamp] = _layout(fs, info.path, path, schemas[table], r["run_id"], expect)
        layouts[path] = _CACHE[stamp]
    return layouts


def _layout(fs, full: str, path: str, schema, rid: str, rows: int | None) -> str:
    """'current' or 'old' (run id column called trace_id): the file's columns against its table's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with fs.open_input_file(full) as f:
            meta = pq.ParquetFile(f).metadata
            got = meta.schema.to_arrow_schema()
            stats = _id_bounds(meta, got)
    except (OSError, pa.ArrowException):
        raise Damage(path, "is not a readable Parquet file") from None
    names = got.names
    if len(names) == len(set(names)) and set(names) == set(schema.names):
        layout = "current"
    elif set(names) == {job_layout.OLD_RUN_ID if n == "run_id" else n for n in schema.names} and len(names) == len(schema):
        layout = "old"
    else:
        raise Damage(path, f"does not have the columns of its table "
                     f"({len(names)} columns, {len(schema.names)} expected)")
    for want in schema:  # by name: a store migrated from an older version orders its columns otherwise
        have = got.field(job_layout.OLD_RUN_ID if layout == "old" and want.name == "run_id" else want.name)
        if not _same_type(have.type, want.type):
            raise Damage(path, f"column {want.name} is {have.type}, not {want.type}")
    if any(bound != rid for bound in stats):
        raise Damage(path, "holds rows of another run")
    if rows is not None and meta.num_rows != rows:
        raise Damage(path, f"has {meta.num_rows:,} rows; its manifest says {rows:,}")
    return layout


def _id_bounds(meta, schema) -> list:
    """The run id column's min and max in every row group (as far as the file keeps statistics)."""
    names = schema.names
    column = names.index("run_id") if "run_id" in names else names.index(job_layout.OLD_RUN_ID) \
        if job_layout.OLD_RUN_ID in names else None
    if column is None:
        return []
    bounds = []
    for g in range(meta.num_row_groups):
        st = meta.row_group(g).column(column).statistics
        if st is not None and st.has_min_max:
            bounds += [st.min, st.max]
    return bounds


def _same_type(have, want) -> bool:
    import pyarrow as pa

    text = (pa.string(), pa.large_string(), pa.string_view())
    return have.equals(want) or (have in text and want in text)
