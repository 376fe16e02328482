"""A job's ingest and deletion: the orchestration above the job's pieces. The rank files are
parsed by `parallel` (Ray, a pool of processes, or this process), checked and named here
(`_assemble`), written aside and committed whole by `job_files`; the layout, manifests and value
types are `jobs`'s. Nothing below imports this module."""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from profiler.errors import JobError
from profiler.storage import job_layout
from profiler.storage.jobs import job_files, job_summary, jobs, parallel


def delete_job(store, name: str) -> None:
    """Remove the job called exactly `name` (whole or damaged): its manifest first (readers stop
    seeing it at once), then its files, then its summary. No other job is touched."""
    job_files.delete(job_layout.job_root(store), name)
    job_summary.forget(store, name)


def ingest_job(store, paths: Iterable[str | os.PathLike], job: str, *, skip_bad: bool = False,
               workers: int | None = None, engine: str = "ray", ray_address: str | None = None,
               keep_python: bool = False, progress: Callable[[float], None] | None = None,
               chunk_bytes: int | None = None) -> jobs.JobResult:
    """Ingest the rank traces in `paths` (files, directories, zips) as job `job`, all or nothing.

    engine 'ray': files are parsed by Ray tasks (a local cluster of `workers` CPUs, default one per
    core, or the cluster at `ray_address` / $PROFILER_RAY_ADDRESS); 'processes': a local pool of
    worker processes without Ray; 'in-process': one after the other here. A bad file raises
    `JobError` naming it and nothing lands, unless `skip_bad`: then the job lands without it and
    `jobs.JobResult.skipped` says why. A large file is parsed in chunks by several workers when there
    are more workers than large files (`chunks.parts`; `chunk_bytes` forces chunks of that size).
    """
    started = time.perf_counter()
    key = jobs.job_key(job)
    root = job_layout.job_root(store)
    with job_files.claimed(root, job, key):  # one ingest of a name at a time: a second is refused
        job_files.refuse_taken(root, job, key)
        _clear_stale_unpacks()
        return _ingest(store, root, paths, job, key, started, skip_bad=skip_bad, workers=workers, engine=engine,
                       ray_address=ray_address, keep_python=keep_python, progress=progress, chunk_bytes=chunk_bytes)


def _ingest(store, root: str, paths, job: str, key: str, started: float, *, skip_bad, workers, engine,
            ray_address, keep_python, progress, chunk_bytes) -> jobs.JobResult:
    with tempfile.TemporaryDirectory(prefix=f"{UNPACK_PREFIX}{os.getpid()}-") as unpack:
        files = jobs.trace_files(paths, unpack)
        with job_files.staged(root, key) as under:  # the job's files are written aside, then moved in
            outcomes, used = parallel.run_ranks(files, under, key, engine=engine, workers=workers,
                                                address=ray_address, keep_python=keep_python,
                                                progress=progress, chunk_bytes=chunk_bytes, scratch=unpack)
            result = _assemble(job, key, outcomes, skip_bad)
            result.workers, result.engine = used, engine
            result.seconds = time.perf_counter() - started
            job_files.commit(root, under, result)
    return result


UNPACK_PREFIX = "job-unzip-"  # then the ingest's process id: a killed ingest's folder is removed by the next


def _clear_stale_unpacks() -> None:
    """Remove the unpack folders (in the temporary directory) of ingests whose process is gone."""
    import shutil

    for folder in Path(tempfile.gettempdir()).glob(UNPACK_PREFIX + "*"):
        pid = folder.name[len(UNPACK_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not job_files.alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _assemble(job: str, key: str, outcomes: list, skip_bad: bool) -> jobs.JobResult:
    """Check the workers' outcomes (jobs.RankResult or TraceError per file) and name the ranks."""
    ranks = [o for o in outcomes if isinstance(o, jobs.RankResult)]
    bad = [o for o in outcomes if not isinstance(o, jobs.RankResult)]
    by_rank: dict[int, list[jobs.RankResult]] = {}
    for r in ranks:
        by_rank.setdefault(r.rank, []).append(r)
    clashes = {rank: rs for rank, rs in by_rank.items() if len(rs) > 1}
    if clashes:
        rank, rs = min(clashes.items())
        names = " and ".join(Path(r.file).name for r in rs)
        raise JobError(f"job {job!r}: {names} both say they are rank {rank}")
    if bad and not skip_bad:
        listed = "; ".join(str(e) for e in bad)
        raise JobError(f"job {job!r} was not stored: {listed} (--skip-bad stores the job without "
                       f"{'it' if len(bad) == 1 else 'them'})")
    if not ranks:
        raise JobError(f"job {job!r}: no file could be ingested")
    sizes = {r.world_size for r in ranks if r.world_size}
    world = max(sizes | {max(by_rank) + 1})  # each at most MAX_RANKS (check_rank)
    backends = {r.backend for r in ranks if r.backend}
    return jobs.JobResult(job, key, world, min(backends) if backends else None, sorted(ranks, key=lambda r: r.rank),
                     job_layout.missing_ranges(by_rank, world), [str(e) for e in bad])
