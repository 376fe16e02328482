"""The SQL console's child process (`python -m profiler.storage.console_worker`): reads a JSON
request on stdin ({"file", "sql", "max_rows", "time_limit_s"}), opens the store file in its
working folder read-only under `console.LOCKED_CONFIG`, runs the one SELECT and writes at most
max_rows + 1 rows to stdout as an Arrow IPC stream (one more than the cap, so the parent knows
the query had more). On failure: exit 2, one JSON line `{"error": sentence}` on stderr.
Why it is a process of its own, and every limit: `console.py`.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time



def _connect(file: str, deadline: float):
    """The store read-only and locked down; waits for a writer's lock until `deadline`."""
    import duckdb

    from profiler.storage.console import LOCKED_CONFIG

    while True:
        try:
            return duckdb.connect(file, read_only=True, config=LOCKED_CONFIG)
        except duckdb.IOException as e:
            if "lock" not in str(e).lower() or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def _install_library(con) -> None:
    """The SQL library's modules (TEMP macros), so the documented macros are callable."""
    import duckdb

    from profiler.storage import sql_library

    names = sorted(p.stem for p in sql_library.LIB_DIR.glob("*.sql"))
    skipped: set[str] = set()
    for name in sql_library.load_order(names):
        text = sql_library.module_text(name)
        if name in sql_library.STORE_MODULES or skipped & set(sql_library.includes(text)):
            continue
        try:
            con.execute(text)
        except duckdb.CatalogException:    # a module over the job views (job_ranks): no jobs attached here
            skipped.add(name)


def _rows(con, sql: str, max_rows: int):
    """At most max_rows + 1 rows of the query, as one Arrow table (the reader stops early)."""
    import pyarrow as pa

    reader = con.sql(sql).to_arrow_reader(min(max_rows + 1, 10_000))
    batches, count = [], 0
    for batch in reader:
        batches.append(batch)
        count += batch.num_rows
        if count > max_rows:
            break
    return pa.Table.from_batches(batches, schema=reader.schema).slice(0, max_rows + 1)


def run(request: dict) -> int:
    import duckdb
    import pyarrow as pa

    from profiler.errors import QueryError
    from profiler.storage.connection import one_line
    from profiler.storage.console import check_select

    limit = float(request["time_limit_s"])
    timer = None
    try:
        check_select(request["sql"])
        con = _connect(request["file"], time.monotonic() + limit)
        _install_library(con)
        timer = threading.Timer(limit, con.interrupt)
        timer.start()
        table = _rows(con, request["sql"], int(request["max_rows"]))
    except QueryError as e:
        return _fail(str(e))
    except duckdb.IOException as e:
        if "lock" not in str(e).lower():
            return _fail(f"The query failed: {one_line(e)}.")
        return _fail(f"The store stayed busy for {limit:g} s (another process is writing to it); "
                     "try again in a moment.")
    except duckdb.InterruptException:
        return _fail(f"The query ran longer than its limit of {limit:g} s and was stopped.")
    except duckdb.Error as e:
        return _fail(f"The query failed: {one_line(e)}.")
    finally:
        if timer is not None:
            timer.cancel()
    with pa.ipc.new_stream(sys.stdout.buffer, table.schema) as out:
        out.write_table(table)
    return 0


def _fail(message: str) -> int:
    print(json.dumps({"error": message}), file=sys.stderr, flush=True)
    return 2


def main() -> int:
    try:
        os.nice(10)
    except (AttributeError, OSError):
        pass
    return run(json.loads(sys.stdin.read()))


if __name__ == "__main__":
    sys.exit(main())
