"""Fair turns at a store file between processes: a writer waits for the readers already in, and
readers that come after it wait for it, so a stream of readers never starves an ingest.

DuckDB lets one process write a file, or any number read it, never both; a writer that only
retries its open finds no gap while readers start every second (issue 39: an ingest gave up
after 15 s while 84 readers came and went). Here the store file's `flock` is a gate: a writer
holds it exclusively from before it opens the file until it closes it; a reader takes it shared
for a moment before it opens the file (it waits while a writer holds it). So once a
writer is at the gate no new reader goes in; those inside finish, and DuckDB's own lock (retried
by `connection.open_file`) lets the writer in. `flock` and DuckDB's `fcntl` locks do not touch
each other on a local disk. A file that cannot be opened or locked here (none yet, another
filesystem) is left to DuckDB's lock alone.
"""
from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from profiler import errors


def take(path: Path, write: bool, deadline: float, label: str) -> int | None:
    """Pass the gate of the store file `path` before `deadline` (time.monotonic()): a writer gets
    the open descriptor holding it (close it after the store's database), a reader None after
    passing. StoreLockedError when the gate stays closed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    kind = fcntl.LOCK_EX if write else fcntl.LOCK_SH
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise errors.StoreLockedError(
                    f"{label} is being written by another process (an ingest) that kept it longer than "
                    "this command waits; try again when it has finished.") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        except OSError:  # a filesystem without flock: DuckDB's lock alone
            os.close(fd)
            return None
    if write:
        return fd
    os.close(fd)  # a reader only passes: closing the descriptor releases its shared lock
    return None


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)
