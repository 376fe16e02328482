"""The SQL page's reads: the schema browser (the documented tables, views and macros, with each
column's type as the store has it) and one user query run through the locked-down console
(`storage/console.py`: SELECT only, read-only, no file or network access, row cap, time limit).
"""
from __future__ import annotations

from decimal import Decimal

import pandas as pd

from profiler.storage import console, sql_docs
from profiler.storage.console import MAX_QUERY_CHARS, MAX_ROWS, TIME_LIMIT_S, ConsoleResult
from profiler.storage.session import StoreHandle

__all__ = ["EXAMPLE", "MAX_QUERY_CHARS", "MAX_ROWS", "TIME_LIMIT_S", "ConsoleResult", "column_table",
           "run_select", "schema_table"]

COLUMNS_SQL = ("SELECT table_name, column_name, data_type FROM information_schema.columns "
               "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position")
EXAMPLE = ("-- GPU busy time per iteration of every run, fastest first (the metrics layer's run_metrics)\n"
           "SELECT t.name, m.gpu_busy_us_per_iter, m.kernel_us_per_iter, m.bound\n"
           "FROM traces t JOIN run_metrics((SELECT list(run_id) FROM traces)) m USING (run_id)\n"
           "ORDER BY m.gpu_busy_us_per_iter")


def schema_table() -> pd.DataFrame:
    """One row per documented table, view and macro: name, kind, module, about, and how it is
    called (a macro's arguments and outputs)."""
    rows = [{"name": e.name, "kind": e.kind, "module": e.module, "about": e.about,
             "call": f"{e.name}({e.args}) → {e.outputs}" if e.kind.endswith("macro") else ""}
            for e in sql_docs.entries()]
    return pd.DataFrame(rows, columns=["name", "kind", "module", "about", "call"])


def column_table(store: StoreHandle, name: str) -> pd.DataFrame:
    """The columns of table or view `name`: column, type (the store's), and its documented meaning."""
    notes = {e.name: dict(e.columns) for e in sql_docs.entries() if e.columns}.get(name, {})
    found = store.query(COLUMNS_SQL)
    found = found[found["table_name"] == name]
    return pd.DataFrame({"column": found["column_name"], "type": found["data_type"],
                         "meaning": [notes.get(c, "") for c in found["column_name"]]}).reset_index(drop=True)


def run_select(store: StoreHandle, sql: str, *, max_rows: int = console.MAX_ROWS,
               time_limit_s: float = console.TIME_LIMIT_S) -> ConsoleResult:
    """Run one SELECT over the store's file in the console's child process (a `QueryError`
    sentence when it is refused, fails or runs too long)."""
    found = console.run_query(store.path, sql, max_rows=max_rows, time_limit_s=time_limit_s)
    return ConsoleResult(_plain(found.rows), found.truncated, found.max_rows)


def _plain(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows a table can show and a CSV can hold: column names made unique (`a`, `a_2`), HUGEINT
    and DECIMAL values as numbers, lists, structs, maps and blobs as their text."""
    names, seen = [], {}
    for name in map(str, rows.columns):
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    rows = rows.set_axis(names, axis=1)
    for name in names:
        if rows[name].dtype == object:
            rows[name] = rows[name].map(_cell)
    return rows


def _cell(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return str(value.tolist() if hasattr(value, "tolist") else value)
