"""Read jobs back: the Parquet rows of every committed job beside the store's own tables.

`attach_views` runs on each read cursor (`Store.connect(jobs=True)`: `Store.query`,
`store.session()`): temporary views named like the store's tables put both together, so every
query and page reads a job's ranks like any other run.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from profiler.errors import JobError
from profiler.storage import completeness, job_check, job_layout, metrics
from profiler.storage.session import StoreHandle

if TYPE_CHECKING:  # pyarrow loads only when the store has jobs
    import pyarrow as pa


def _schema(con: duckdb.DuckDBPyConnection, db: str, table: str) -> pa.Schema:
    return job_check.table_schemas(con)[table]


def attach_views(con: duckdb.DuckDBPyConnection, store: StoreHandle) -> None:
    """On this cursor, make `traces`, `kernels`, ... (and `launch_targets`) read the store's rows
    plus the Parquet rows of every committed job that reads whole, and add `job_ranks` (one row per
    rank of such a job). Damaged jobs are left out (`job_check.read_jobs` says which and why). Nothing is
    done when there is no job, so a store without jobs is read exactly as before."""
    root = job_layout.job_root(store)
    if not job_layout.has_manifests(root):
        return
    import pyarrow as pa

    try:
        _attach(con, root, job_check.read_jobs(root, con=con))
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise JobError(f"the job directory cannot be read: {job_check.plain_reason(e)}") from e


def _attach(con: duckdb.DuckDBPyConnection, root: str, found: job_check.JobsRead) -> None:
    manifests = found.ok
    if not manifests:
        return
    fs, base = job_layout.filesystem(root)
    db = con.execute("SELECT current_database()").fetchall()[0][0]
    for table in job_layout.TABLES:
        # a table added after a job was ingested (lane_names) has no file for that job's ranks
        schema = _schema(con, db, table)
        parts = [f'SELECT {_columns(schema)} FROM "{db}".main.{table}']
        for layout in ("current", "old"):
            files = [f"{base}/{path}" for m in manifests for rank in m["ranks"]
                     if (path := rank["files"].get(table)) and found.layouts.get(path) == layout]
            if files:
                parts.append(_dataset(con, f"job_parquet_{table}_{layout}", files, schema, fs, layout))
        if len(parts) > 1:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS " + " UNION ALL ".join(parts))
    view_sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'launch_targets' "
                           "AND NOT temporary").fetchall()
    if view_sql:
        con.execute(view_sql[0][0].replace("CREATE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
    _attach_metrics(con, db, manifests, fs, base, found.layouts)
    _attach_verdicts(con, db, manifests, fs, base, found.layouts)
    con.register("job_ranks", job_ranks_table(manifests))


def job_ranks_table(manifests: list[dict]):
    """The rows of `job_ranks`, one per rank of each manifest's job (an Arrow table)."""
    import pyarrow as pa

    return pa.Table.from_pylist([{"job": m["job"], "world_size": m["world_size"], "backend": m["backend"],
                                  "rank": r["rank"], "run_id": r["run_id"], "file": r["file"],
                                  "size_bytes": r["size_bytes"]} for m in manifests for r in m["ranks"]])


def _dataset(con, name: str, files: list[str], schema: pa.Schema, fs, layout: str) -> str:
    """Register the files as `name`; the SELECT that reads them with the table's column names
    (rank files of schema version 3 and before call the run id column trace_id)."""
    import pyarrow.dataset as pads

    columns = _columns(schema, old=layout == "old")
    if layout == "old":
        schema = _renamed(schema, "run_id", job_layout.OLD_RUN_ID)
    con.register(name, pads.dataset(files, schema=schema, format="parquet", filesystem=fs))
    return f"SELECT {columns} FROM {name}"


def _columns(schema: pa.Schema, old: bool = False) -> str:
    """The table's columns named one by one: UNION ALL matches columns by position, and a store
    migrated from an older version orders its columns otherwise than a rank file (or a fresh store)."""
    def one(name: str) -> str:
        quoted = '"' + name.replace('"', '""') + '"'
        return f'"{job_layout.OLD_RUN_ID}" AS run_id' if old and name == "run_id" else quoted
    return ", ".join(one(n) for n in schema.names)


def _renamed(schema: pa.Schema, old: str, new: str) -> pa.Schema:
    return schema.set(schema.get_field_index(old), schema.field(old).with_name(new))


def _attach_metrics(con: duckdb.DuckDBPyConnection, db: str, manifests: list[dict], fs, base: str,
                    layouts: dict[str, str]) -> None:
    """`stored_iteration_metrics`: the store's rows, the rows each rank's worker computed at ingest,
    and, for ranks computed under another definition of metrics.sql (or before ranks kept them),
    the same macro's rows computed now from the rank's tables (the views above)."""
    import pyarrow.dataset as pads

    table = job_layout.METRICS_TABLE
    current = metrics.definition_digest()
    ranks = [r for m in manifests for r in m["ranks"]]
    fresh = [r for r in ranks if r.get("metrics_digest") == current and layouts.get(r["files"].get(table)) == "current"]
    kept = [f"{base}/{r['files'][table]}" for r in fresh]
    fresh_ids = {r["run_id"] for r in fresh}
    stale = [r["run_id"] for r in ranks if r["run_id"] not in fresh_ids]
    schema = _schema(con, db, table)
    parts = [f'SELECT {_columns(schema)} FROM "{db}".main.{table}']
    if kept:
        con.register("job_parquet_metrics", pads.dataset(kept, schema=schema, format="parquet", filesystem=fs))
        parts.append(f"SELECT {_columns(schema)} FROM job_parquet_metrics")
    if stale:
        ids = ", ".join("'" + str(rid).replace("'", "''") + "'" for rid in stale)
        parts.append(f"SELECT {_columns(schema)} FROM iteration_metrics([{ids}]::VARCHAR[])")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS " + " UNION ALL ".join(parts))


def _attach_verdicts(con: duckdb.DuckDBPyConnection, db: str, manifests: list[dict], fs, base: str,
                     layouts: dict[str, str]) -> None:
    """`stored_completeness`: the store's rows and the rows each rank's worker checked at ingest
    under the current definition of completeness.sql. A rank checked under another one (or before
    ranks kept them) has no row, so `completeness.read` checks it when read."""
    import pyarrow.dataset as pads

    table = job_layout.VERDICT_TABLE
    current = completeness.definition_digest()
    kept = [f"{base}/{r['files'][table]}" for m in manifests for r in m["ranks"]
            if r.get("completeness_digest") == current and layouts.get(r["files"].get(table)) == "current"]
    if not kept:
        return
    schema = _schema(con, db, table)
    con.register("job_parquet_verdicts", pads.dataset(kept, schema=schema, format="parquet", filesystem=fs))
    con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT {_columns(schema)} FROM \"{db}\".main.{table} "
                f"UNION ALL SELECT {_columns(schema)} FROM job_parquet_verdicts")
