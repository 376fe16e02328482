"""Reads that need no pandas: the query files (with the SQL modules they include: sql_library.py),
one connection for several queries, and results as numpy columns (the `ops` command imports this, not `profiler.analysis.queries`, so it starts
without loading pandas). `queries` re-exports everything here.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from profiler.analysis import sql_library
from profiler.errors import QueryError

SQL_DIR = Path(__file__).resolve().parent / "sql"


@cache
def sql_text(name: str) -> str:
    """The text of ``sql/<name>.sql``; run it through a `Session` (or `query` / `arrays` here), which
    installs the modules its header includes."""
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise QueryError(f"no query file {path.name} in {SQL_DIR}")
    return path.read_text(encoding="utf-8")


class Session:
    """Several queries over one connection: ``with queries.session(store) as db: kernel_table(db,
    ...)``. Opening the store file costs ~50-80 ms, so a page that runs many queries opens it once."""

    def __init__(self, con, path, store=None):
        self._con = con
        self.path = path              # the store file, for messages
        self.store = store            # what opened it: another thread opens its own session there
        self._read: dict = {}         # (sql, params) -> rows: a page asks some things twice
        self._installed: set = set()  # the SQL modules installed on this connection

    def query(self, sql: str, params=None):
        """The rows as a pandas DataFrame; a read asked again in this session is answered from
        the first time (a copy), and any write forgets what was read."""
        sql_library.install(self._con, sql, self._installed)
        if sql.lstrip().upper().startswith(READS):
            key = (sql, _frozen(params))
            if key not in self._read:
                self._read[key] = self._con.execute(sql, params).df()
            return self._read[key].copy(deep=False)
        self._read.clear()
        return self._con.execute(sql, params).df()

    def arrays(self, sql: str, params=None) -> dict:
        """The rows as {column: numpy array} (NULLs: see `column`); no pandas."""
        sql_library.install(self._con, sql, self._installed)
        return self._con.execute(sql, params).fetchnumpy()


READS = ("SELECT", "WITH", "--", "FROM")  # statements that only read (query files start with comments)


def _frozen(value):
    """A hashable stand-in for query parameters (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@contextmanager
def session(store) -> Iterator[Session]:
    """A ``Session`` on one short-lived connection (duckdb errors become ``StoreError``)."""
    with store.connect(jobs=True) as con:
        yield Session(con, store.path, store)


def query(db, sql: str, params=None):
    """The rows as a DataFrame from a `Session` or a `Store` (a store: on a session of its own, so
    that the modules `sql` includes are installed on the connection that runs it)."""
    if isinstance(db, Session):
        return db.query(sql, params)
    with session(db) as s:
        return s.query(sql, params)


def arrays(db, sql: str, params=None) -> dict:
    """{column: numpy array} from a `Session` or a `Store` (NULLs masked: see `column`)."""
    if isinstance(db, Session):
        return db.arrays(sql, params)
    with session(db) as s:
        return s.arrays(sql, params)


def column(values, fill=None):
    """A fetched column as a plain array: NULLs (masked) become `fill` (None: an object array)."""
    import numpy as np

    if not isinstance(values, np.ma.MaskedArray):
        return values
    mask = np.ma.getmaskarray(values)
    if fill is not None:
        return np.where(mask, fill, values.data)
    out = values.data.astype(object)
    out[mask] = None
    return out


def run_devices(store, run_ids) -> dict[str, tuple[list | None, str | None]]:
    """{run_id: (deviceProperties list or None, gpu_name)}."""
    got = arrays(store, sql_text("run_devices"), {"run_ids": [str(r) for r in run_ids]})
    props, names = column(got["device_properties"]), column(got["gpu_name"])
    return {r: (json.loads(p) if isinstance(p, str) else None, n if isinstance(n, str) else None)
            for r, p, n in zip(got["run_id"], props, names)}


def run_shape_records(store, run_ids) -> dict[str, dict]:
    """{run_id: sql/run_shapes.sql's row as a dict} (NULL: None)."""
    got = arrays(store, sql_text("run_shapes"), {"run_ids": [str(r) for r in run_ids]})
    cols = {k: column(v).tolist() for k, v in got.items()}
    return {r: {k: cols[k][i] for k in cols} for i, r in enumerate(cols.get("run_id", []))}
