"""The SQL console's door into the store: one SELECT, run read-only in a child process that can
reach nothing but the store file, with a row cap and a time limit.

A query typed on the SQL page (or carried by a share link) is text from anyone who can reach the
server, so it runs under every limit DuckDB offers, and in a process of its own:

* **SELECT only**: DuckDB's own parser must find exactly one statement, of type SELECT (which
  includes `WITH`, `FROM x`, `VALUES`, `SHOW`, `DESCRIBE`, `SUMMARIZE`). `INSTALL`, `LOAD`,
  `ATTACH`, `COPY`, `SET`, `PRAGMA`, `CREATE`, `EXPLAIN` and several statements are refused
  before any process starts (`check_select`); the child checks again.
* **A read-only connection with external access disabled**: the child opens the store file with
  `read_only`, `enable_external_access = false` (no file, glob or URL reads: `read_text`,
  `read_csv`, `'/etc/passwd'`, `http://...`), no extension loaded, installed or fetched, no
  spill directory (`temp_directory = ''`), and `lock_configuration = true`, so no `SET` inside a
  query can undo any of it. (What DuckDB reports of itself stays readable: `duckdb_databases()`
  names the store file's path; error messages have paths removed.)
* **Limits**: at most `max_rows` rows come back (the reader stops there; `truncated` says so),
  the query is interrupted after `time_limit_s` (the child waits as long for a writer's lock on
  the file first, and is killed a moment after both if it has not ended), DuckDB gets one thread and `MEMORY_LIMIT`, and the child runs at a lower CPU priority.

The SQL library's modules (`sql/lib/*.sql`, TEMP macros) are installed before the query, so the
documented macros the schema browser lists (`sql_docs.py`) are callable. Errors come back as
`QueryError` sentences (DuckDB's first line, paths removed); no traceback reaches a page.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from profiler.errors import QueryError

ROOT = Path(__file__).resolve().parents[2]
MAX_ROWS = 10_000
TIME_LIMIT_S = 10.0
MAX_QUERY_CHARS = 4_000
MEMORY_LIMIT = "512MB"
NICE = 10
KILL_GRACE_S = 5.0  # after the time limit, how long the child has to stop before it is killed
# every setting the child's connection is opened with: nothing outside the store file, locked
LOCKED_CONFIG = {"enable_external_access": False, "autoload_known_extensions": False,
                 "autoinstall_known_extensions": False, "allow_community_extensions": False,
                 "allow_unsigned_extensions": False, "temp_directory": "", "threads": 1,
                 "memory_limit": MEMORY_LIMIT, "lock_configuration": True}


@dataclass(frozen=True)
class ConsoleResult:
    """The rows of one query: a pandas DataFrame of at most `max_rows` rows; `truncated` when the
    query had more."""
    rows: object
    truncated: bool
    max_rows: int


def check_select(sql: str) -> None:
    """Raise `QueryError` unless `sql` is one SELECT statement (parsed by DuckDB, run nowhere)."""
    import duckdb

    if not sql.strip():
        raise QueryError("The query is empty: write one SELECT statement.")
    if len(sql) > MAX_QUERY_CHARS:
        raise QueryError(f"The query is {len(sql):,} characters long; the console takes at most "
                         f"{MAX_QUERY_CHARS:,}.")
    con = duckdb.connect(":memory:", config=LOCKED_CONFIG)
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"The query does not parse: {_one_line(e)}.") from e
    finally:
        con.close()
    if not statements:
        raise QueryError("The query is empty: write one SELECT statement.")
    if len(statements) > 1:
        raise QueryError(f"The query holds {len(statements)} statements; the console runs one SELECT.")
    kind = statements[0].type.name
    if kind != "SELECT":
        raise QueryError(f"Only SELECT statements run here (this one is {kind}): the console "
                         "reads the store and changes nothing.")


def run_query(db: str | os.PathLike, sql: str, *, max_rows: int = MAX_ROWS,
              time_limit_s: float = TIME_LIMIT_S) -> ConsoleResult:
    """Run one SELECT over the store file `db` in a locked-down child process (above)."""
    import pyarrow as pa

    check_select(sql)
    path = Path(db).resolve()
    if not path.is_file():
        raise QueryError(f"There is no store at {path.name}; ingest a trace into it first.")
    request = json.dumps({"file": path.name, "sql": sql, "max_rows": int(max_rows),
                          "time_limit_s": float(time_limit_s)})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    command = [sys.executable, "-m", "profiler.storage.console_worker"]
    try:
        done = subprocess.run(command, input=request.encode(), capture_output=True, cwd=path.parent,
                              env=env, timeout=2 * time_limit_s + KILL_GRACE_S)
    except subprocess.TimeoutExpired as e:
        raise QueryError(f"The query ran longer than its limit of {time_limit_s:g} s and was stopped.") from e
    if done.returncode != 0:
        raise QueryError(_child_error(done.stderr))
    table = pa.ipc.open_stream(done.stdout).read_all()
    truncated = table.num_rows > max_rows
    return ConsoleResult(table.slice(0, max_rows).to_pandas(), truncated, int(max_rows))


def _child_error(stderr: bytes) -> str:
    """The child's last JSON line's message, else a sentence saying it ended unexpectedly."""
    for line in reversed(stderr.decode("utf-8", "replace").splitlines()):
        try:
            message = json.loads(line).get("error")
        except (json.JSONDecodeError, AttributeError):
            continue
        if message:
            return str(message)
    return "The query process ended unexpectedly (out of memory, or killed)."


def _one_line(e: BaseException) -> str:
    from profiler.storage.connection import one_line

    return one_line(e)
