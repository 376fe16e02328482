"""A read session: several queries over one cursor of a `Store` (`Store.session()`), with the
store's job views attached. Opening the store file costs ~50-80 ms, so a page that runs many
queries opens it once.

A `Session` reads like its `Store` (`query`, `arrays`, `stamps`, `session`, `cache`, `path`), so
every read function takes either and never asks which one it was given: `StoreHandle` is that
shared shape, the type of the `store` parameter of every read (a function that writes takes a
`Store`).
"""
from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from profiler.storage import sql_library
from profiler.storage.run_cache import STAMPS_SQL, stamps_of

if TYPE_CHECKING:
    from profiler.storage.run_cache import RunCache

READS = ("SELECT", "WITH", "--", "FROM")  # statements that only read (query files start with comments)


class StoreHandle(Protocol):
    """What a read needs of the store it is handed: a `Store` or one of its `Session`s."""

    path: Path          # the store file, for messages
    cache: RunCache     # results kept per run and stamp (profiler/storage/run_cache.py)

    def session(self) -> AbstractContextManager[StoreHandle]:
        """Several reads over one cursor (a session hands back itself)."""
        ...

    def query(self, sql: str, params: Any = None) -> Any:
        """The rows as a pandas DataFrame."""
        ...

    def arrays(self, sql: str, params: Any = None) -> dict:
        """The rows as {column: numpy array}, NULLs masked; no pandas."""
        ...

    def stamps(self, run_ids) -> dict[str, tuple]:
        """{run_id: its stamp} of those of ``run_ids`` in the store."""
        ...


def _frozen(value):
    """A hashable stand-in for query parameters (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


class Session:
    """Queries over one cursor of ``store``: ``with store.session() as db: kernel_table(db, ...)``."""

    def __init__(self, con, store):
        self._con = con
        self.store = store            # the store that opened it: another thread opens its own session there
        self.path = store.path        # the store file, for messages
        self.cache = store.cache      # the store's results kept per run (profiler/storage/run_cache.py)
        self._read: dict = {}         # (sql, params) -> rows: a page asks some things twice
        self._stamps: dict = {}       # run_id -> its stamp, read once per session
        self._installed: set = set()  # the SQL modules installed on this cursor (sql_library.install)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """This session itself: a read function handed a session uses its cursor."""
        yield self

    def query(self, sql: str, params=None):
        """The rows as a pandas DataFrame; a read asked again in this session is answered from
        the first time (a copy), and any write forgets what was read. The modules the text's
        header includes are installed first."""
        sql_library.install(self._con, sql, self._installed)
        if sql.lstrip().upper().startswith(READS):
            key = (sql, _frozen(params))
            if key not in self._read:
                self._read[key] = self._con.execute(sql, params).df()
            return self._read[key].copy(deep=False)
        self._forget()
        return self._con.execute(sql, params).df()

    def arrays(self, sql: str, params=None) -> dict:
        """The rows as {column: numpy array} (NULLs masked: see `reads.column`); no pandas."""
        sql_library.install(self._con, sql, self._installed)
        return self._con.execute(sql, params).fetchnumpy()

    def stamps(self, run_ids) -> dict[str, tuple]:
        """{run_id: its stamp} of those of ``run_ids`` in the store (`run_cache.STAMPS_SQL`),
        each run's read once in this session."""
        ids = [str(r) for r in run_ids]
        unread = [r for r in dict.fromkeys(ids) if r not in self._stamps]
        if unread:
            self._stamps.update(stamps_of(self.arrays(STAMPS_SQL, {"run_ids": unread})))
        return {r: self._stamps[r] for r in ids if r in self._stamps}

    def _forget(self) -> None:
        self._read.clear()
        self._stamps.clear()
