"""Opening a store file: what DuckDB may do with it, the check that it is a store at all, the
retry while another process holds its lock, and the one database per file that the calls in
flight in this process share. `Store` (profiler/storage/store.py) is the only caller.

A store file is attached (`ATTACH`) to one in-memory DuckDB per process and settings, not opened
as a database of its own: a new database builds DuckDB's catalog of built-in functions first
(~14 ms of every open, on 2 cores), an attach to one that has it takes ~2 ms. Each cursor's
default database is the file (`USE`), so queries read it as if it were opened alone; detaching
it checkpoints a written file and frees its lock, as closing it did. What does not fit in the
memory limit spills to a folder of this process under the system's temporary directory
(`spill_folder`), made when first needed and removed when the process ends; the folder of a
process killed outright is removed by the next process that makes one (`_sweep_spill_folders`).
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from profiler import errors
from profiler.storage import turns

try:
    import fcntl
except ImportError:  # not a POSIX system: no claims, and no folder of another process removed
    fcntl = None

LOCK_TIMEOUT_S = 15.0
# an ingest (command line or upload) waits its turn behind another ingest already writing the
# store (storage/turns.py) as long as that takes within reason, not the 15 s a read waits
WRITE_WAIT_S = 300.0
MEMORY_ENV = "PROFILER_DB_MEMORY"

# DuckDB would download and load an extension when a file or a query needs one (a SQLite file
# given as the store fetched sqlite_scanner from extensions.duckdb.org): no request leaves the server
NO_EXTENSION_LOADING = {"autoload_known_extensions": False, "autoinstall_known_extensions": False,
                        "allow_community_extensions": False}
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
OTHER_FORMATS = {b"SQLite format 3\0": "a SQLite database", b"PAR1": "a Parquet file",
                 b"\x1f\x8b": "a gzip file", b"PK\x03\x04": "a zip file"}


def not_a_store(path: Path) -> str | None:
    """Why the existing `path` is not a DuckDB store (None when it is one), read from its first
    bytes before DuckDB sees it: DuckDB tries to load a reader extension for a SQLite file."""
    if not path.is_file():
        return f"is not a DuckDB store (it is {'a folder' if path.is_dir() else 'not a regular file'})"
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:  # unreadable: DuckDB's own refusal says so, in one line
        return None
    if head[8:12] == DUCKDB_MAGIC or len(head) < 12:  # a shorter one may be a store being created
        return None
    kind = next((what for magic, what in OTHER_FORMATS.items() if head.startswith(magic)), "something else")
    return f"is not a DuckDB store (the file is {kind})"


def duckdb_config(threads: int | None = None) -> dict:
    """DuckDB's settings for a store: `threads` (default: one per core) and a memory limit beyond
    which it spills to disk: $PROFILER_DB_MEMORY, else 256 MB or 128 MB per thread, whichever is
    more (DuckDB needs about that per thread; below it a large ingest on a many-core machine fails
    where a laptop's succeeds); and never an extension loaded or installed on the fly."""
    threads = threads or os.cpu_count() or 1
    return {"threads": threads, "memory_limit": os.environ.get(MEMORY_ENV) or f"{max(256, 128 * threads)}MB",
            **NO_EXTENSION_LOADING}


def one_line(e: BaseException) -> str:
    """The first line of a DuckDB error, without its 'Error:' prefix or any file path."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = re.sub(r"^[A-Za-z ]*Error: ", "", text)
    text = re.sub(r'"?(?:/[\w.+~-]+){2,}/?"?', "(path)", text)
    return text.rstrip(".")


# Per store file, one open database shared by the calls in flight in this process, closed when the
# last one ends (so the file is free for other processes between calls). Each call works on its
# own cursor. Closing and reopening the database while another thread still used it made DuckDB
# 2.0 lose its Arrow scan function ("python_arrow_scan does not exist"), hence the sharing. DuckDB
# refuses a second database on a file already open in the process with other settings, so a
# read-only call uses the writing database when one is open, and a writing call waits for the
# read-only database to be closed (the app's threads write while the command line reads).
_open = threading.Condition()
_open_dbs: dict[tuple, list] = {}  # (path, in memory) -> [connection, read_only, writer's turn, calls in flight]


def _is_file(path) -> bool:
    """Whether `path` is a file; a path the system refuses (a name too long) is left to the open,
    which names the reason."""
    try:
        return path.is_file()
    except OSError:
        return False


def _open_in_turn(store, deadline: float) -> tuple:
    """(database, read_only, the writer's turn or None): the file opened after its turn came
    (profiler/storage/turns.py: a writer is not starved by readers that keep coming)."""
    turn = None
    if not getattr(store, "in_memory", False) and _is_file(store.path):
        turn = turns.take(store.path, not store.read_only, deadline, store.label)
    try:
        return open_file(store), store.read_only, turn
    except BaseException:
        turns.release(turn)
        raise


@contextlib.contextmanager
def cursor(store) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on `store`'s file (a `Store`: path, read_only, threads, lock_timeout_s, label),
    on the database the calls in flight share; the database is closed after the last of them."""
    key = (store.path.resolve(), bool(getattr(store, "in_memory", False)))
    deadline = time.monotonic() + store.lock_timeout_s
    with _open:
        while (entry := _open_dbs.get(key)) is not None and entry[1] and not store.read_only:
            if not _open.wait(deadline - time.monotonic()):
                raise errors.StoreLockedError(
                    f"{store.label} is open read-only in this process (waited "
                    f"{store.lock_timeout_s:.0f} s); try again when that read has finished.")
        if entry is None:
            entry = _open_dbs[key] = [*_open_in_turn(store, deadline), 0]
        entry[-1] += 1
        con = entry[0].cursor()
    try:
        yield con
    finally:
        con.close()
        with _open:
            entry[-1] -= 1
            if entry[-1] == 0:
                entry[0].close()
                turns.release(entry[2])  # a writer's turn ends with its database
                del _open_dbs[key]
                _open.notify_all()


def open_file(store) -> Attached | duckdb.DuckDBPyConnection:
    """Open `store`'s file: a read-only one must exist, a writing one's folder is made; a file
    that is not a DuckDB store is refused before DuckDB reads it; a lock is waited for."""
    path, label = store.path, store.label
    if getattr(store, "in_memory", False):  # a scratch store: nothing written, no commit's log to flush
        return duckdb.connect(":memory:", config={**duckdb_config(store.threads), "temp_directory": str(path.parent)})
    if store.read_only:
        _must_exist(path, label)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise errors.StoreError(f"{label} cannot be created: {e.strerror or e}.") from e
    try:
        problem = not_a_store(path) if path.exists() else None
    except OSError as e:  # a path the system refuses (a name over 255 bytes), as `_must_exist` says
        raise errors.StoreError(f"{label} cannot be opened: {e.strerror or e}.") from e
    if problem:
        raise errors.NotAStoreError(f"{label} {problem}; give the path of a store file (or a new one).")
    deadline = time.monotonic() + store.lock_timeout_s
    delay = 0.02
    while True:
        try:
            return _attach(path, store.read_only, duckdb_config(store.threads))
        except duckdb.IOException as e:
            if "lock" not in str(e).lower():
                raise errors.StoreError(f"{label} cannot be opened: {one_line(e)}.") from e
            if time.monotonic() >= deadline:
                raise errors.StoreLockedError(
                    f"{label} is locked by another process (waited "
                    f"{store.lock_timeout_s:.0f} s); try again when it has finished.") from e
        except duckdb.Error as e:
            raise errors.StoreError(f"{label} cannot be opened: {one_line(e)}.") from e
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


class Attached:
    """A store file attached to this process's DuckDB (`_attach`): `cursor()` is a connection
    whose default database is the file; `close()` detaches it (a written file is checkpointed
    then, and its lock freed), after the last cursor on it was closed."""

    def __init__(self, instance: duckdb.DuckDBPyConnection, alias: str):
        self._instance, self.alias = instance, alias

    def cursor(self) -> duckdb.DuckDBPyConnection:
        con = self._instance.cursor()
        con.execute(f'USE "{self.alias}"')
        return con

    def close(self) -> None:
        with contextlib.closing(self._instance.cursor()) as con:
            con.execute(f'DETACH "{self.alias}"')


# {(process id, settings): this process's in-memory DuckDB with those settings}; a forked child
# makes its own (DuckDB's threads are not copied by a fork)
_instances: dict[tuple, duckdb.DuckDBPyConnection] = {}
_aliases = itertools.count()


SPILL_PREFIX = "profiler-duckdb-"
CLAIM = ".held"  # beside a spill folder: its process's claim, locked while that process lives
_spill: dict[int, str] = {}  # process id -> its spill folder (a forked child claims its own)


def spill_folder() -> str:
    """Where this process's DuckDB writes what does not fit in its memory limit:
    `$TMPDIR/profiler-duckdb-<pid>-<random>`, claimed by a lock on `<folder>.held` for as long as
    the process lives. DuckDB makes the folder when it first spills and removes it when it closes;
    a process killed outright (SIGKILL, the out-of-memory killer) leaves it behind, spill files and
    all, and the next process to claim a folder removes those whose claim no process holds. The
    random part keeps two processes of one pid apart (containers sharing a /tmp)."""
    pid = os.getpid()
    if pid not in _spill:
        _spill[pid] = _claim_spill_folder()
    return _spill[pid]


def _claim_spill_folder() -> str:
    root = tempfile.gettempdir()
    while True:
        folder = os.path.join(root, f"{SPILL_PREFIX}{os.getpid()}-{secrets.token_hex(4)}")
        try:
            fd = os.open(folder + CLAIM, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError:  # a temporary directory we cannot write: DuckDB says so if it ever spills
            return folder
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process's sweep took it in the instant between: it removes it
            os.close(fd)
            continue
        except OSError:  # a file system without locks: a sweep cannot take it either, so never removes it
            pass
        break  # `fd` is never closed: its lock is held until the process ends, however it ends
    atexit.register(_release_claim, os.getpid(), folder)
    _sweep_spill_folders(root)
    return folder


def _release_claim(pid: int, folder: str) -> None:
    """At a clean exit, the claim file, where DuckDB never made the folder (most processes never
    spill). Where it did, DuckDB removes the folder later, as the interpreter ends; the claim
    stays until the next process's sweep, in case that end is not clean. Not in a forked child,
    which runs its parent's exit handlers."""
    if os.getpid() == pid and not os.path.exists(folder):
        with contextlib.suppress(OSError):
            os.unlink(folder + CLAIM)


def _sweep_spill_folders(root: str) -> None:
    """Remove the spill folders (and claims) in `root` of processes that are gone: those whose
    claim's lock can be taken. A folder without a claim is left alone."""
    if fcntl is None:
        return
    try:
        names = [e.name for e in os.scandir(root) if e.name.startswith(SPILL_PREFIX) and e.name.endswith(CLAIM)]
    except OSError:
        return
    for name in names:
        claim = os.path.join(root, name)
        try:
            fd = os.open(claim, os.O_RDWR)
        except OSError:  # gone meanwhile, or another user's
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its process lives
            os.close(fd)
            continue
        try:
            shutil.rmtree(claim.removesuffix(CLAIM), ignore_errors=True)
            with contextlib.suppress(OSError):
                os.unlink(claim)
        finally:
            os.close(fd)


def _attach(path: Path, read_only: bool, config: dict) -> Attached:
    """`path` attached (read-only or not) to this process's DuckDB of these settings. The caller
    holds `_open`."""
    key = (os.getpid(), tuple(sorted(config.items())))
    instance = _instances.get(key)
    if instance is None:
        instance = _instances[key] = duckdb.connect(":memory:", config={**config, "temp_directory": spill_folder()})
    alias = f"store_{next(_aliases)}"
    quoted = str(path).replace("'", "''")
    with contextlib.closing(instance.cursor()) as con:
        con.execute(f"ATTACH '{quoted}' AS \"{alias}\"" + (" (READ_ONLY)" if read_only else ""))
    return Attached(instance, alias)


def _must_exist(path: Path, label: str) -> None:
    """A read-only store is never created: refuse a missing file, or a path the system refuses."""
    try:
        path.stat()
    except OSError as e:  # missing, or a path the system refuses (a name over 255 bytes)
        if e.errno == errno.ENOENT:
            raise errors.StoreError(f"There is no store at {path}; ingest a trace into it first.") from e
        raise errors.StoreError(f"{label} cannot be opened: {e.strerror or e}.") from e
    if not path.is_file():
        raise errors.StoreError(f"There is no store at {path}; ingest a trace into it first.")
