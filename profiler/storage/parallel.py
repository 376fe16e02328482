"""Parse the ranks of a job in parallel: one task per file, or per chunk of a large file; on Ray,
on a local pool of processes, or in this process.

`parse_rank` is the task for a file: it ingests one trace with the store's own ingest
(`Store.ingest`, the path a single upload takes) into a private scratch store, then writes each
table of that rank as a Parquet file of the job. A large file, when there are more workers than
large files, is cut into chunks instead (profiler/storage/chunks.py): `chunks.parse_chunk` tasks
parse them into staged Arrow files, and `assemble_rank` commits their rows into a scratch store
(`Store.ingest_staged`, the second half of that same ingest) and writes the rank the same way.
Every engine runs exactly these functions, so all give the same rows, and the same rows as a
single upload (tests/test_jobs.py, tests/test_chunks.py).

Ray is optional: without it installed, jobs are parsed in this process. A local Ray cluster gets
one worker per core unless `workers` says fewer; `address` (or $PROFILER_RAY_ADDRESS) joins a
running cluster instead, whose nodes need this package importable and the job directory reachable.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from profiler import errors
from profiler.storage import chunks, jobs, metrics
from profiler.storage.rss import peak_rss, reset_peak_rss

RAY_ADDRESS_ENV = "PROFILER_RAY_ADDRESS"
START_ATTEMPTS = 3
RAY_CONNECT_TIMEOUT_S = 5.0  # a cluster address must take a connection within this
RAY_CONNECT_ATTEMPTS = 3
ENGINES = ("ray", "processes", "in-process")
RANK_TASK_THREADS = 4
_ROOT = Path(__file__).resolve().parents[2]


def parse_rank(file: str, base: str, key: str, keep_python: bool = False,
               sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """Ingest one rank trace and write its tables under the job directory `base`; `sharing` tasks
    run at once, so its store takes that share of the cores (see `_rank_task`).

    Returns the RankResult, or the TraceError of a bad file (returned, not raised, so the caller
    can name every bad file of a job at once). Files written before a failure are removed."""
    return _rank_task(file, base, key, lambda store: store.ingest(file, keep_python=keep_python), sharing)


def assemble_rank(fp: chunks.FilePlan, parts: list[chunks.ChunkResult], base: str,
                  key: str, sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """The rank of a file parsed in chunks: their rows committed as one trace, written like
    `parse_rank`'s. The chunk files are removed either way."""
    def ingest(store):
        summary, staging = chunks.load(fp, parts, base)
        return store.ingest_staged(summary, staging)

    try:
        result = _rank_task(fp.file, base, key, ingest, sharing)
    finally:
        chunks.discard(fp, base, key)
    if isinstance(result, jobs.RankResult):  # the file's figures: all its tasks together
        worst = max([result, *parts], key=lambda r: r.peak_rss - r.start_rss)
        result.peak_rss, result.start_rss = worst.peak_rss, worst.start_rss
        result.seconds += sum(p.seconds for p in parts)
        result.chunks = len(parts)
    return result


def _rank_task(file: str, base: str, key: str, ingest: Callable,
               sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """Run `ingest(scratch store)` and write the rank's tables under `base` (see parse_rank).

    Its scratch store's DuckDB threads: `_task_threads(sharing)`."""
    from profiler.storage.store import Store, one_line

    started = time.perf_counter()
    start_rss = reset_peak_rss()
    scratch = tempfile.mkdtemp(prefix="rank-")
    written: list[str] = []
    fs, _ = jobs.filesystem(base)
    try:
        store = Store(Path(scratch) / "rank.duckdb", threads=_task_threads(sharing))
        result = ingest(store)
        with store.connect() as con:
            rank, world = con.execute("SELECT rank, world_size FROM traces").fetchall()[0]
            rank_from = "distributedInfo"
            if rank is None:
                rank, rank_from = jobs.rank_from_name(file), "file name"
            if rank is None:
                return errors.TraceError(Path(file).name, "does not say its rank (no distributedInfo, "
                                                          "and no 'rank<N>' or 'worker<N>' in its name)")
            if (absurd := jobs.check_rank(Path(file).name, rank, world)) is not None:
                return absurd
            rid = jobs.run_id(key, result.run_id)
            files = {}
            for table in jobs.WRITTEN:
                path = jobs.rank_file(base, table, key, rank, rid)
                fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                select = f"SELECT * REPLACE ($rid AS run_id{', $rank AS rank' if table == 'traces' else ''}) FROM {table}"
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
            peak_rss=peak_rss(), start_rss=start_rss, metrics_digest=metrics.definition_digest(),
            notes=tuple(result.notes))
    except errors.TraceError as e:
        _remove(fs, written)
        return e
    except (errors.StoreError, KeyboardInterrupt, SystemExit):
        _remove(fs, written)
        raise
    except Exception as e:  # noqa: BLE001 - a file this program did not foresee: its own one line
        _remove(fs, written)
        return errors.TraceError(Path(file).name, f"could not be ingested ({type(e).__name__}: {one_line(e)[:200]})")
    except BaseException:
        _remove(fs, written)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _task_threads(sharing: int) -> int:
    """DuckDB threads for a rank task when `sharing` tasks run at once: this machine's cores divided
    among them (16 tasks each starting 16 threads, and DuckDB's memory for each, only compete), at
    most RANK_TASK_THREADS: more bought little and cost memory (a 500 MB rank alone on 16 cores,
    16 threads: 16.5-20.8 s and +1.1 GB; on 2 cores, 2 threads: 18.5 s and +0.7 GB)."""
    return min(RANK_TASK_THREADS, max(1, (os.cpu_count() or 1) // max(1, sharing)))


def _size(file: str) -> int:
    return os.path.getsize(file)


def _remove(fs, paths: list[str]) -> None:
    for path in paths:
        try:
            fs.delete_file(path)
        except OSError:
            pass


# --- scheduling -----------------------------------------------------------------------------------

def run_ranks(files: list[Path], base: str, key: str, *, engine: str = "ray", workers: int | None = None,
              address: str | None = None, keep_python: bool = False,
              progress: Callable[[float], None] | None = None, chunk_bytes: int | None = None,
              scratch: str | None = None) -> tuple[list, int]:
    """Each file's outcome (RankResult or TraceError), in file order, and the workers used.

    Files are cut into chunks as `chunks.parts` says (a large file gets its share of the workers;
    `chunk_bytes` forces chunks of about that size); gzipped ones are unpacked into `scratch`
    first (default: a temporary folder). A file whose chunks do not all parse is parsed whole."""
    if engine not in ENGINES:
        raise jobs.JobError(f"unknown engine {engine!r} (use 'ray', 'processes' or 'in-process')")
    with tempfile.TemporaryDirectory(prefix="job-chunks-") as own_scratch:
        pool = {"in-process": _InProcess, "processes": _Processes, "ray": _Ray}[engine](workers, address)
        try:
            job = _Job(files, base, key, pool, keep_python, progress or (lambda _fraction: None))
            return job.run(chunk_bytes, scratch or own_scratch), pool.workers
        finally:
            pool.close()


class _Job:
    """The tasks of one job on one engine: a file's parse, or its chunks then their assembly."""

    def __init__(self, files, base, key, pool, keep_python, report):
        self.files, self.base, self.key, self.pool = files, base, key, pool
        self.keep_python, self.report = keep_python, report
        self.sharing = min(pool.workers, len(files))  # rank tasks running at once: a job of one file gets every core
        self.sizes = [max(f.stat().st_size, 1) for f in files]
        self.credited = [0.0] * len(files)  # progress counted so far per file, in bytes
        self.outcomes: list = [None] * len(files)

    def run(self, chunk_bytes: int | None, scratch: str) -> list:
        estimated = [chunks.estimated_size(f) for f in self.files]
        plans: dict[int, chunks.FilePlan] = {}
        for i, f in enumerate(self.files):
            n = chunks.parts(estimated[i], sum(estimated), self.pool.workers, chunk_bytes)
            if n > 1 and (fp := chunks.plan_file(f, n, scratch)) is not None:
                plans[i] = fp
        got: dict[int, dict] = {i: {} for i in plans}
        for i, fp in plans.items():  # the large files first: they finish last
            for k in range(fp.plan.chunks):
                self.pool.submit(("chunk", i, k), chunks.parse_chunk, fp, k, self.base, self.key, self.keep_python)
        for i, f in enumerate(self.files):
            if i not in plans:
                self._whole(i)
        try:
            while self.pool.busy():
                (kind, i, k), value = self.pool.next_done(self._name)
                if kind != "chunk":
                    self.outcomes[i] = value
                    self._credit(i, self.sizes[i] - self.credited[i])
                    continue
                got[i][k] = value
                self._credit(i, self.sizes[i] / (plans[i].plan.chunks + 1))
                if len(got[i]) == plans[i].plan.chunks:
                    parts = [got[i][k] for k in range(len(got[i]))]
                    if chunks.usable(plans[i], parts):
                        self.pool.submit(("assemble", i, None), assemble_rank, plans[i], parts, self.base, self.key,
                                         self.sharing)
                    else:  # a chunk failed or the chunks disagree: the file, parsed whole, says what it is
                        chunks.discard(plans[i], self.base, self.key)
                        self._whole(i)
        finally:
            for fp in plans.values():
                if fp.plan.path != fp.file:
                    Path(fp.plan.path).unlink(missing_ok=True)
            if plans:
                chunks.remove_folder(self.base, self.key)
        return self.outcomes

    def _whole(self, i: int) -> None:
        self.pool.submit(("file", i, None), parse_rank, str(self.files[i]), self.base, self.key, self.keep_python,
                         self.sharing)

    def _credit(self, i: int, amount: float) -> None:
        self.credited[i] += amount
        self.report(min(1.0, sum(self.credited) / sum(self.sizes)))

    def _name(self, tag) -> str:
        return self.files[tag[1]].name


class _InProcess:
    """Tasks run one after the other in this process, as they are submitted."""

    def __init__(self, workers=None, address=None):
        self.workers = 1
        self._done: list = []

    def submit(self, tag, fn, *args) -> None:
        self._done.append((tag, fn(*args)))

    def busy(self) -> bool:
        return bool(self._done)

    def next_done(self, name_of):
        return self._done.pop(0)

    def close(self) -> None:
        pass


class _Processes:
    """Local worker processes without Ray (the standard library's process pool)."""

    def __init__(self, workers=None, address=None):
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or os.cpu_count() or 1
        # spawned, not forked: the caller may hold threads (Streamlit, a Ray client) that a fork would copy
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        self._futures: dict = {}

    def submit(self, tag, fn, *args) -> None:
        self._futures[self._pool.submit(fn, *args)] = tag

    def busy(self) -> bool:
        return bool(self._futures)

    def next_done(self, name_of):
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        done, _ = wait(self._futures, return_when=FIRST_COMPLETED)
        future = min(done, key=lambda f: self._futures[f][1])
        tag = self._futures.pop(future)
        try:
            return tag, future.result()
        except BrokenProcessPool:
            raise jobs.JobError(f"a worker process stopped while parsing the job's files{self._why()}; "
                                "nothing of the job was stored") from None

    def _why(self) -> str:
        """How a dead worker ended, e.g. ' (killed by signal 9: out of memory?)'; the SIGTERM the
        pool sends the others once one has died is not the cause."""
        processes = list((self._pool._processes or {}).values())
        for _ in range(40):  # the pool stops the others and reaps them all on its own thread: wait for that
            if all(p.exitcode is not None for p in processes):
                break
            time.sleep(0.05)
        codes = sorted({p.exitcode for p in processes if p.exitcode}, key=lambda c: c == -signal.SIGTERM)
        if not codes:
            return ""
        if codes[0] > 0:
            return f" (exit status {codes[0]})"
        return f" (killed by signal {-codes[0]}{': out of memory?' * (codes[0] == -signal.SIGKILL)})"

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def start_ray(workers: int | None = None, address: str | None = None):
    """The `ray` module, connected: to `address` / $PROFILER_RAY_ADDRESS when given, else to a
    local cluster of `workers` CPUs (default: one per core). An existing connection is reused."""
    address = address or os.environ.get(RAY_ADDRESS_ENV)
    if address:
        _reachable(address)
        # a port that answers but is no Ray cluster: Ray tries ~1 s per attempt, 20 by default
        os.environ.setdefault("RAY_NUM_REDIS_GET_RETRIES", str(RAY_CONNECT_ATTEMPTS))
    try:
        import ray
    except ImportError as e:
        raise jobs.JobError("parallel ingest needs Ray (pip install -r requirements-jobs.txt); "
                            "--in-process parses the files one after the other without it") from e
    if ray.is_initialized():
        return ray
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            if address:
                with _quiet_fd(2):  # Ray's C++ client logs each failed attempt straight to stderr
                    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, logging_level="ERROR",
                         log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": _worker_path()}})
            return ray
        except Exception as e:  # noqa: BLE001 - Ray reports a failed start with a bare Exception
            ray.shutdown()
            # a local node that did not come up within Ray's own 30 s (a busy machine) gets another try
            if address or attempt == START_ATTEMPTS or "timed out during startup" not in str(e):
                where = f" at {address}" if address else ""
                raise jobs.JobError(f"cannot start or reach the Ray cluster{where}: {e}") from e
    return ray


def _reachable(address: str, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse, in one line, a cluster address whose host and port take no connection within
    `timeout_s` (Ray itself retried 127.0.0.1:1 for over a minute). 'auto' and 'local' pass."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # not host:port ('auto', 'local'): Ray reads it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError, OverflowError) as e:
        reason = "timed out" if isinstance(e, TimeoutError) else (getattr(e, "strerror", None) or str(e))
        raise jobs.JobError(f"cannot reach the Ray cluster at {address} ({reason}); "
                            "nothing of the job was stored") from None


@contextlib.contextmanager
def _quiet_fd(fd: int) -> Iterator[None]:
    """Output written to file descriptor `fd` (by this process's C++ code too) is dropped."""
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _worker_path() -> str:
    """PYTHONPATH for local Ray workers: this package, then what the caller's PYTHONPATH holds."""
    return os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)


class _Ray:
    """Ray tasks, at most `workers` (default: the cluster's CPUs) in flight at once."""

    def __init__(self, workers=None, address=None):
        self._ray = start_ray(workers, address)
        self.workers = workers or int(self._ray.cluster_resources().get("CPU", 1))
        self._tasks: dict = {}
        self._queue: list = []
        self._pending: dict = {}  # object ref -> tag

    def submit(self, tag, fn, *args) -> None:
        self._queue.append((tag, fn, args))
        self._fill()

    def _fill(self) -> None:
        while self._queue and len(self._pending) < self.workers:
            tag, fn, args = self._queue.pop(0)
            if fn not in self._tasks:
                self._tasks[fn] = self._ray.remote(num_cpus=1, max_retries=0)(fn)
            self._pending[self._tasks[fn].remote(*args)] = tag

    def busy(self) -> bool:
        return bool(self._pending or self._queue)

    def next_done(self, name_of):
        from ray.exceptions import RayError

        ready, _ = self._ray.wait(list(self._pending), num_returns=1)
        tag = self._pending.pop(ready[0])
        try:
            value = self._ray.get(ready[0])
        except RayError as e:
            raise jobs.JobError(f"{name_of(tag)}: the worker parsing it stopped "
                                f"({type(e).__name__}); nothing of the job was stored") from None
        self._fill()
        return tag, value

    def close(self) -> None:
        self._queue.clear()
        for ref in self._pending:  # a failed job stops its other tasks before their files are removed
            self._ray.cancel(ref, force=True)
        if self._pending:
            self._ray.wait(list(self._pending), num_returns=len(self._pending), timeout=30)
