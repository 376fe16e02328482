"""A new store file, made as a copy of the one new store this process prepared.

A writing handle's first open of a file that does not exist writes the schema and the metrics
layer's macros into it (`migrations.prepare`: ~60 ms on 2 cores, for a 0.8 MB file that is
mostly zeros). The first time this process makes a store, that is done once in a folder of its
own and the file's bytes are kept (`prepared`); every new store after it is those bytes, put in
place whole, and the open's `prepare` finds them current (~10 ms). `prepare` still checks what it
finds, so a copy made under other definitions is brought up to date as any older store is.
"""
from __future__ import annotations

import os
import secrets
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

from profiler.storage import connection, migrations

_lock = threading.Lock()
_blank: bytes | None = None  # a prepared new store's bytes, once this process made one


def create(store) -> None:
    """Make `store`'s file (a writing `Store` whose path does not exist) as a copy of this
    process's prepared new store. Leaves the file to the open wherever it cannot: the open then
    makes it, or says what is wrong with the path. (The shipped samples' store is put in place the
    same way: `profiler.capture.samples.unpack_shipped`.)"""
    path = Path(store.path)
    part = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    try:
        if path.exists() or not path.parent.is_dir():  # (a name the system refuses raises here)
            return
        data = prepared(store)
        try:
            part.write_bytes(data)
            os.link(part, path)  # the whole file appears at once, and never replaces one made meanwhile
        finally:
            part.unlink(missing_ok=True)
    except OSError:  # made meanwhile, no hard links or no room here: the open makes or opens it
        return


def prepared(store) -> bytes:
    """The bytes of this process's prepared new store (made on the first call, with `store`'s
    DuckDB settings)."""
    global _blank
    with _lock:
        if _blank is None:
            with tempfile.TemporaryDirectory(prefix="profiler-new-store-") as folder:
                new = SimpleNamespace(path=Path(folder) / "new.duckdb", read_only=False, in_memory=False,
                                      threads=store.threads, lock_timeout_s=store.lock_timeout_s,
                                      label="a new store")
                with connection.cursor(new) as con:
                    migrations.prepare(con, new.label, read_only=False)
                _blank = new.path.read_bytes()  # closed above: checkpointed, no log beside it
        return _blank
