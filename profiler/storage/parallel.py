"""Parse the ranks of a job in parallel: one task per file, on Ray or in this process.

`parse_rank` is the task: it ingests one trace with the store's own ingest (`Store.ingest`, the
path a single upload takes) into a private scratch store, then writes each table of that rank as
a Parquet file of the job. Both engines run exactly this function, so the Ray path and the
in-process path give the same rows, and the same rows as a single upload (tests/test_jobs.py).

Ray is optional: without it installed, jobs are parsed in this process. A local Ray cluster gets
one worker per core unless `workers` says fewer; `address` (or $PROFILER_RAY_ADDRESS) joins a
running cluster instead, whose nodes need this package importable and the job directory reachable.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from profiler import errors
from profiler.storage import jobs, metrics

RAY_ADDRESS_ENV = "PROFILER_RAY_ADDRESS"
START_ATTEMPTS = 3
_ROOT = Path(__file__).resolve().parents[2]


def parse_rank(file: str, base: str, key: str, keep_python: bool = False) -> jobs.RankResult | errors.TraceError:
    """Ingest one rank trace and write its tables under the job directory `base`.

    Returns the RankResult, or the TraceError of a bad file (returned, not raised, so the caller
    can name every bad file of a job at once). Files written before a failure are removed."""
    from profiler.storage.store import Store

    started = time.perf_counter()
    start_rss = _reset_peak_rss()
    scratch = tempfile.mkdtemp(prefix="rank-")
    written: list[str] = []
    fs, _ = jobs.filesystem(base)
    try:
        store = Store(Path(scratch) / "rank.duckdb")
        result = store.ingest(file, keep_python=keep_python)
        with store.connect() as con:
            rank, world = con.execute("SELECT rank, world_size FROM traces").fetchall()[0]
            rank_from = "distributedInfo"
            if rank is None:
                rank, rank_from = jobs.rank_from_name(file), "file name"
            if rank is None:
                return errors.TraceError(Path(file).name, "does not say its rank (no distributedInfo, "
                                                          "and no 'rank<N>' or 'worker<N>' in its name)")
            rid = jobs.run_id(key, result.run_id)
            files = {}
            for table in jobs.WRITTEN:
                path = jobs.rank_file(base, table, key, rank, rid)
                fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                id_column = "run_id" if table == jobs.METRICS_TABLE else "run_id"
                select = f"SELECT * REPLACE ($rid AS {id_column}{', $rank AS rank' if table == 'traces' else ''}) FROM {table}"
                params = {"rid": rid, **({"rank": rank} if table == "traces" else {})}
                reader = con.sql(select, params=params).to_arrow_reader(1 << 16)
                written.append(path)
                with fs.open_output_stream(path) as sink, pq.ParquetWriter(sink, reader.schema) as out:
                    for batch in reader:
                        out.write_batch(batch)
                files[table] = path
        return jobs.RankResult(
            file=str(file), rank=int(rank), rank_from=rank_from, world_size=world,
            backend=jobs.backend(file),
            run_id=rid, trace_id=result.run_id, size_bytes=_size(file), events=result.events,
            kernels=result.kernels, files=files, seconds=time.perf_counter() - started,
            peak_rss=_peak_rss(), start_rss=start_rss, metrics_digest=metrics.definition_digest())
    except errors.TraceError as e:
        _remove(fs, written)
        return e
    except BaseException:
        _remove(fs, written)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _status_bytes(field: str) -> int | None:
    """A memory figure of this process from /proc/self/status (Linux), in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> int:
    """This process's RSS now; and, where Linux allows it, its peak RSS reset to that, so that the
    peak read after a task is the task's own (a worker process runs many tasks)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_bytes("VmRSS") or 0


def _peak_rss() -> int:
    return _status_bytes("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _size(file: str) -> int:
    return os.path.getsize(file)


def _remove(fs, paths: list[str]) -> None:
    for path in paths:
        try:
            fs.delete_file(path)
        except OSError:
            pass


# --- engines --------------------------------------------------------------------------------------

def run_ranks(files: list[Path], base: str, key: str, *, engine: str = "ray", workers: int | None = None,
              address: str | None = None, keep_python: bool = False,
              progress: Callable[[float], None] | None = None) -> tuple[list, int]:
    """Each file's outcome (RankResult or TraceError), in file order, and the workers used."""
    sizes = [max(f.stat().st_size, 1) for f in files]
    total = sum(sizes)
    report = progress or (lambda _fraction: None)
    if engine == "in-process":
        outcomes, done = [], 0
        for f, size in zip(files, sizes):
            outcomes.append(parse_rank(str(f), base, key, keep_python))
            done += size
            report(done / total)
        return outcomes, 1
    if engine == "processes":
        return _run_on_processes(files, sizes, base, key, workers, keep_python, report)
    if engine != "ray":
        raise jobs.JobError(f"unknown engine {engine!r} (use 'ray', 'processes' or 'in-process')")
    return _run_on_ray(files, sizes, base, key, workers, address, keep_python, report)


def _run_on_processes(files, sizes, base, key, workers, keep_python, report) -> tuple[list, int]:
    """Local worker processes without Ray (the standard library's process pool)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    count = workers or os.cpu_count() or 1
    total, done = sum(sizes), 0
    outcomes: list = [None] * len(files)
    # spawned, not forked: the caller may hold threads (Streamlit, a Ray client) that a fork would copy
    with ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(parse_rank, str(f), base, key, keep_python): i for i, f in enumerate(files)}
        try:
            for future in as_completed(futures):
                i = futures[future]
                outcomes[i] = future.result()
                done += sizes[i]
                report(done / total)
        except BrokenProcessPool:
            raise jobs.JobError(f"a worker process stopped while parsing {len(files)} files; "
                                "nothing of the job was stored") from None
    return outcomes, count


def start_ray(workers: int | None = None, address: str | None = None):
    """The `ray` module, connected: to `address` / $PROFILER_RAY_ADDRESS when given, else to a
    local cluster of `workers` CPUs (default: one per core). An existing connection is reused."""
    try:
        import ray
    except ImportError as e:
        raise jobs.JobError("parallel ingest needs Ray (pip install -r requirements-jobs.txt); "
                            "--in-process parses the files one after the other without it") from e
    if ray.is_initialized():
        return ray
    address = address or os.environ.get(RAY_ADDRESS_ENV)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            if address:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, logging_level="ERROR",
                         log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(_ROOT)}})
            return ray
        except Exception as e:  # noqa: BLE001 - Ray reports a failed start with a bare Exception
            ray.shutdown()
            # a local node that did not come up within Ray's own 30 s (a busy machine) gets another try
            if address or attempt == START_ATTEMPTS or "timed out during startup" not in str(e):
                where = f" at {address}" if address else ""
                raise jobs.JobError(f"cannot start or reach the Ray cluster{where}: {e}") from e
    return ray


def _run_on_ray(files, sizes, base, key, workers, address, keep_python, report) -> tuple[list, int]:
    ray = start_ray(workers, address)
    from ray.exceptions import RayError

    limit = workers or int(ray.cluster_resources().get("CPU", 1))
    task = ray.remote(num_cpus=1, max_retries=0)(parse_rank)
    total, done = sum(sizes), 0
    outcomes: list = [None] * len(files)
    pending: dict = {}
    queue = list(enumerate(files))
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                i, f = queue.pop(0)
                pending[task.remote(str(f), base, key, keep_python)] = i
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    outcomes[i] = ray.get(ref)
                except RayError as e:
                    raise jobs.JobError(f"{files[i].name}: the worker parsing it stopped "
                                        f"({type(e).__name__}); nothing of the job was stored") from None
                done += sizes[i]
                report(done / total)
    finally:
        for ref in pending:  # a failed job stops its other tasks before their files are removed
            ray.cancel(ref, force=True)
        if pending:
            ray.wait(list(pending), num_returns=len(pending), timeout=30)
    return outcomes, limit
