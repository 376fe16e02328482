"""Where a job's tasks run: in this process, on a local pool of processes, or on Ray.

Each engine takes tasks (a function and its arguments, with a tag) and hands back finished ones,
at most `workers` at a time: `submit(tag, fn, *args)`, `busy()`, `next_done(name_of) -> (tag,
value)`, `close()`. Ray is optional; `start_ray` connects to a local cluster or to `address`
(or $PROFILER_RAY_ADDRESS), whose nodes need this package importable.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from profiler.storage.jobs import jobs

RAY_ADDRESS_ENV = "PROFILER_RAY_ADDRESS"
START_ATTEMPTS = 3
RAY_CONNECT_TIMEOUT_S = 5.0  # a cluster address must take a connection within this
RAY_CONNECT_ATTEMPTS = 3
# Ray makes its sockets in <temp>/ray/session_<date>_<time>_<µs>_<pid>/sockets/plasma_store: 64
# bytes past its folder (a 7-digit pid); an AF_UNIX socket's path holds at most 107 bytes
RAY_SOCKET_SUFFIX_BYTES = 64
AF_UNIX_PATH_BYTES = 107
# the process pool's watch: how often a job waiting on its workers looks for a dead one, and how
# long one may lie dead before the job stops without waiting for the pool to notice
WAIT_STEP_S = 0.5
DEAD_WORKER_GRACE_S = 5.0
_ROOT = Path(__file__).resolve().parents[3]


class InProcess:
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


class Processes:
    """Local worker processes without Ray (the standard library's process pool)."""

    def __init__(self, workers=None, address=None):
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or os.cpu_count() or 1
        # spawned, not forked: the caller may hold threads (Streamlit, a Ray client) that a fork would copy
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        self._futures: dict = {}
        self._failed = False

    def submit(self, tag, fn, *args) -> None:
        self._futures[self._pool.submit(fn, *args)] = tag

    def busy(self) -> bool:
        return bool(self._futures)

    def next_done(self, name_of):
        from concurrent.futures.process import BrokenProcessPool

        try:
            future = min(self._wait(), key=lambda f: self._futures[f][1])
            tag = self._futures.pop(future)
            return tag, future.result()
        except BrokenProcessPool:
            self._failed = True
            raise jobs.JobError(f"a worker process stopped while parsing the job's files{self._why()}; "
                                "nothing of the job was stored") from None

    def _wait(self) -> set:
        """The futures done, or BrokenProcessPool: the pool's own when it saw a worker die, else
        ours once a worker has been dead DEAD_WORKER_GRACE_S without the pool saying so (a job
        never waits forever on a pool that missed a death)."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        dead_since = None
        while True:
            done, _ = wait(self._futures, timeout=WAIT_STEP_S, return_when=FIRST_COMPLETED)
            if done:
                return done
            if not any(p.exitcode is not None for p in self._workers()):
                dead_since = None
            elif dead_since is None:
                dead_since = time.monotonic()
            elif time.monotonic() - dead_since > DEAD_WORKER_GRACE_S:
                raise BrokenProcessPool("a worker died and the pool did not say so")

    def _workers(self) -> list:
        """The pool's worker processes now (none once it has shut down)."""
        return list((self._pool._processes or {}).values())

    def _why(self) -> str:
        """How a dead worker ended, e.g. ' (killed by signal 9: out of memory?)'; the SIGTERM the
        pool sends the others once one has died is not the cause."""
        processes = self._workers()
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
        if self._failed:  # the workers left are stopped, not waited for: one may never end its task
            for process in self._workers():
                process.kill()
        self._pool.shutdown(wait=not self._failed, cancel_futures=True)


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
                         log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": _worker_path()}},
                         _temp_dir=local_temp_dir())
            return ray
        except Exception as e:  # noqa: BLE001 - Ray reports a failed start with a bare Exception
            ray.shutdown()
            # a local node that did not come up within Ray's own 30 s (a busy machine) gets another try
            if address or attempt == START_ATTEMPTS or "timed out during startup" not in str(e):
                where = f" at {address}" if address else ""
                raise jobs.JobError(f"cannot start or reach the Ray cluster{where}: {e}") from e
    return ray


def local_temp_dir() -> str | None:
    """Ray's folder for a local cluster: its default (None: $RAY_TMPDIR, else $TMPDIR, else /tmp,
    then 'ray') unless the sockets it makes there would not fit an AF_UNIX path (a long $TMPDIR,
    as under a test runner: Ray refused to start, 'AF_UNIX path length cannot exceed 107 bytes');
    then /tmp/ray-<uid>."""
    base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    if len(os.fsencode(os.path.join(base, "ray"))) + RAY_SOCKET_SUFFIX_BYTES <= AF_UNIX_PATH_BYTES:
        return None
    return f"/tmp/ray-{os.getuid()}"


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


class Ray:
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


ENGINES = {"ray": Ray, "processes": Processes, "in-process": InProcess}
