"""Reads that need no pandas: the query files (a file's header names the SQL modules it includes,
which the session running it installs first: profiler/storage/sql_library.py), one connection for
several queries (``store.session()``, a `Session`: profiler/storage/session.py), and results as numpy
columns through ``db.arrays(sql, params)`` (the `ops` command imports this, not
`profiler.analysis.reads.queries`, so it starts without loading pandas).
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from profiler.errors import QueryError
from profiler.storage.session import StoreHandle

SQL_DIR = Path(__file__).resolve().parent / "sql"


@cache
def sql_text(name: str) -> str:
    """The text of ``sql/<name>.sql``."""
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise QueryError(f"no query file {path.name} in {SQL_DIR}")
    return path.read_text(encoding="utf-8")


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


def run_devices(store: StoreHandle, run_ids) -> dict[str, tuple[list | None, str | None]]:
    """{run_id: (deviceProperties list or None, gpu_name)}."""
    got = store.arrays(sql_text("run_devices"), {"run_ids": [str(r) for r in run_ids]})
    props, names = column(got["device_properties"]), column(got["gpu_name"])
    return {r: (json.loads(p) if isinstance(p, str) else None, n if isinstance(n, str) else None)
            for r, p, n in zip(got["run_id"], props, names)}


def run_shape_records(store: StoreHandle, run_ids) -> dict[str, dict]:
    """{run_id: sql/run_shapes.sql's row as a dict} (NULL: None)."""
    got = store.arrays(sql_text("run_shapes"), {"run_ids": [str(r) for r in run_ids]})
    cols = {k: column(v).tolist() for k, v in got.items()}
    return {r: {k: cols[k][i] for k in cols} for i, r in enumerate(cols.get("run_id", []))}


def by_run(got: dict, run_ids) -> dict[str, dict]:
    """A read of many runs ({column: array} with run_id) split by run: {run_id: its other columns,
    its rows in the read's order}, every one of ``run_ids`` (empty columns for a run with no row)."""
    from profiler.analysis.model import arrays

    at = arrays.rows_of_each(column(got["run_id"]), [str(r) for r in run_ids])
    return {r: {k: v[rows] for k, v in got.items() if k != "run_id"} for r, rows in at.items()}
