"""The job directory's writes: a job's files staged aside and moved in whole, its manifest, delete.

An ingest writes its rank files into a staging folder beside the job directory, on the same disk
(`.<dir name>.staging-<host>-<pid>-<random>/`); only when every rank is whole are its table folders
renamed into the job directory and the manifest written (atomically: written aside, renamed). An
ingest that fails, or is killed, leaves the job directory exactly as it was; a killed one's staging
folder is removed by the next ingest on the same host. (Where the folder above the job directory
cannot be written, the staging folder is made inside it; readers never list it.) A job directory given as a URI (`s3://`,
`file://`) has no rename: files are written in place, where an object appears whole and readers
see nothing of a job until its manifest exists; leftovers are removed by the next ingest of that
name.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from profiler.parse.source import utf8_text
from profiler.storage import job_check, job_layout
from profiler.storage.jobs import jobs

_STAGING = ".{name}.staging-"


def refuse_taken(root: str, job: str, key: str) -> None:
    """A `JobError` when job `job` is stored (whole or damaged), or its key's manifest is taken."""
    import pyarrow.fs as pafs

    read = job_check.read_jobs(root, files=False)
    for d in read.damaged:
        if not d.key:  # the job directory itself cannot be listed
            raise jobs.JobError(f"job {job!r} cannot be stored: the job directory's {d.file}: {d.reason}")
    if any(m["job"] == job for m in read.ok) or any(d.job == job for d in read.damaged):
        raise jobs.JobError(f"job {job!r} is already in the store (delete it first, or choose another name)")
    fs, base = job_layout.filesystem(root)
    if fs.get_file_info(job_layout.manifest_path(base, key)).type != pafs.FileType.NotFound:
        raise jobs.JobError(f"job {job!r}: its folder name {key!r} is taken by another job's (choose another name)")


@contextlib.contextmanager
def staged(root: str, key: str) -> Iterator[str]:
    """Where an ingest writes job `key`'s files: a fresh staging folder (removed at the end, whatever
    happens), or, for a URI, the job directory itself (the job's files removed if it fails)."""
    if "://" in root:
        jobs.remove_job_files(root, key)  # leftovers of an ingest that was killed before its commit
        try:
            yield job_layout.filesystem(root)[1]
        except BaseException:
            jobs.remove_job_files(root, key)
            raise
        return
    _clear_stale(root)
    prefix = _prefix(root) + f"{socket.gethostname()}-{os.getpid()}-"
    try:
        folder = tempfile.mkdtemp(prefix=prefix, dir=os.path.dirname(os.path.abspath(root)))
    except OSError:  # the folder above the job directory is not ours to write: stage inside it
        os.makedirs(root, exist_ok=True)
        folder = tempfile.mkdtemp(prefix=prefix, dir=root)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def claimed(root: str, job: str, key: str) -> Iterator[None]:
    """Job `key` claimed for one ingest at a time: a folder `.<dir name>.ingesting-<key>` made beside
    the job directory (mkdir is atomic), holding its owner's host and process id, removed at the
    end. A second ingest of the name is refused while the owner lives; a killed owner's claim is
    taken over. (A job directory given as a URI has no claim: see docs/store.md.)"""
    if "://" in root:
        yield
        return
    parent = Path(os.path.abspath(root)).parent
    claim = parent / f".{os.path.basename(os.path.abspath(root))}.ingesting-{key}"
    me = f"{socket.gethostname()}-{os.getpid()}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        yield  # nowhere to claim: the commit's own checks remain
        return
    for _ in range(2):
        try:
            claim.mkdir()
            break
        except FileExistsError:
            owner = _owner(claim)
            if owner is not None and owner[0] == socket.gethostname() and not alive(owner[1]):
                shutil.rmtree(claim, ignore_errors=True)  # a killed ingest's: taken over
                continue
            raise jobs.JobError(f"job {job!r} is being ingested by another process"
                                f"{f' ({owner[0]}, process {owner[1]})' if owner else ''}; try again when it has finished") from None
        except OSError:
            yield
            return
    else:
        raise jobs.JobError(f"job {job!r} is being ingested by another process; try again when it has finished")
    try:
        (claim / "owner").write_text(me)
        yield
    finally:
        shutil.rmtree(claim, ignore_errors=True)


def _owner(claim: Path) -> tuple[str, int] | None:
    try:
        host, _, pid = (claim / "owner").read_text()[:300].rpartition("-")
        return (host, int(pid)) if pid.isdigit() else None
    except (OSError, ValueError):
        return None


def _prefix(root: str) -> str:
    return _STAGING.format(name=os.path.basename(os.path.abspath(root)))


def _clear_stale(root: str) -> None:
    """Remove the staging folders of ingests on this host whose process is gone (killed)."""
    parent = Path(os.path.abspath(root)).parent
    host = socket.gethostname()
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    for folder in [*parent.glob(_prefix(root) + "*"), *Path(root).glob(_prefix(root) + "*")]:
        parts = folder.name[len(_prefix(root)):].rsplit("-", 2)
        if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not alive(int(parts[1])):
            shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def commit(root: str, under: str, result: jobs.JobResult) -> None:
    """Move the job's table folders from `under` into the job directory, then write its manifest."""
    moved: list[str] = []
    try:
        _move_in(root, under, result, moved)
    except OSError as e:  # a full disk, a folder in the way: one line; what was moved in goes again
        fs = job_layout.filesystem(root)[0]
        for path in moved:
            with contextlib.suppress(OSError):
                fs.delete_dir(path)
        raise jobs.JobError(f"job {result.job!r} could not be stored: {job_check.plain_reason(e)}") from None


def _move_in(root: str, under: str, result: jobs.JobResult, moved: list[str]) -> None:
    import pyarrow.fs as pafs

    fs, base = job_layout.filesystem(root)
    doc = manifest_doc(result, under)
    if under != base:
        for table in job_layout.WRITTEN:
            src, dst = f"{under}/{table}/job={result.key}", f"{base}/{table}/job={result.key}"
            if fs.get_file_info(src).type != pafs.FileType.Directory:
                continue
            if fs.get_file_info(dst).type != pafs.FileType.NotFound:
                fs.delete_dir(dst)  # files of an ingest killed inside its commit (no manifest: unread)
            fs.create_dir(f"{base}/{table}", recursive=True)
            fs.move(src, dst)
            moved.append(dst)
    write_manifest(root, result.key, doc)


def manifest_doc(result: jobs.JobResult, under: str) -> dict:
    """The manifest of `result`, whose files were written under `under` (paths kept relative)."""
    return {
        "job": result.job, "key": result.key, "world_size": result.world_size, "backend": result.backend,
        "ranks_present": result.ranks_present, "ranks_missing": result.ranks_missing,
        "skipped": result.skipped, "added_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "ranks": [{"rank": r.rank, "rank_from": r.rank_from, "run_id": r.run_id, "trace_id": r.trace_id,
                   "file": utf8_text(Path(r.file).name), "size_bytes": r.size_bytes, "events": r.events,
                   "kernels": r.kernels, "metrics_digest": r.metrics_digest,
                   "completeness_digest": r.completeness_digest,
                   "files": {t: p[len(under) + 1:] for t, p in r.files.items()}}
                  for r in sorted(result.ranks, key=lambda r: r.rank)],
    }


def write_manifest(root: str, key: str, doc: dict) -> None:
    """The job's commit: on a local disk written aside and renamed; an object store makes a written
    object visible whole."""
    import pyarrow.fs as pafs

    fs, base = job_layout.filesystem(root)
    fs.create_dir(f"{base}/manifests", recursive=True)
    final = job_layout.manifest_path(base, key)
    data = json.dumps(doc, indent=1).encode()
    if isinstance(fs, pafs.LocalFileSystem):
        partial = f"{base}/manifests/.{key}.{os.getpid()}.part"
        with fs.open_output_stream(partial) as f:
            f.write(data)
        fs.move(partial, final)
    else:
        with fs.open_output_stream(final) as f:
            f.write(data)


def delete(root: str, name: str) -> None:
    """Remove the job called exactly `name`, found by its manifest's own name (whole or damaged)."""
    import pyarrow.fs as pafs

    fs, base = job_layout.filesystem(root)
    read = job_check.read_jobs(root, files=False)
    keys = [m["key"] for m in read.ok if m["job"] == name] + [d.key for d in read.damaged if d.job == name and d.key]
    if not keys:
        raise jobs.JobError(f"job {name!r} is not in the store")
    for key in keys:
        manifest = job_layout.manifest_path(base, key)
        if fs.get_file_info(manifest).type == pafs.FileType.Directory:
            fs.delete_dir(manifest)  # a damaged job's "manifest" can be a folder
        else:
            fs.delete_file(manifest)
        jobs.remove_job_files(root, key)
