"""Read jobs back: the Parquet rows of every committed job beside the store's own tables.

`attach_views` runs on each read cursor (`Store.connect(jobs=True)`: `Store.query`,
`queries.session`): temporary views named like the store's tables put both together, so every
query and page reads a job's ranks like any other run.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from profiler.storage import jobs, metrics

if TYPE_CHECKING:  # pyarrow loads only when the store has jobs
    import pyarrow as pa

_SCHEMAS: dict[str, pa.Schema] = {}


def _schema(con: duckdb.DuckDBPyConnection, db: str, table: str) -> pa.Schema:
    if table not in _SCHEMAS:
        _SCHEMAS[table] = con.sql(f'SELECT * FROM "{db}".main.{table} LIMIT 0').to_arrow_table().schema
    return _SCHEMAS[table]


def attach_views(con: duckdb.DuckDBPyConnection, store) -> None:
    """On this cursor, make `traces`, `kernels`, ... (and `launch_targets`) read the store's rows
    plus the Parquet rows of every committed job, and add `job_ranks` (one row per rank of a job).
    Nothing is done when there is no job, so a store without jobs is read exactly as before."""
    root = jobs.job_root(store)
    if not jobs.has_manifests(root):
        return
    import pyarrow as pa

    try:
        _attach(con, root)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise jobs.JobError(f"the job directory {root} cannot be read: {e}") from e


def _attach(con: duckdb.DuckDBPyConnection, root: str) -> None:
    import pyarrow as pa
    import pyarrow.dataset as pads

    manifests = jobs.read_manifests(root)
    if not manifests:
        return
    fs, base = jobs.filesystem(root)
    db = con.execute("SELECT current_database()").fetchall()[0][0]
    for table in jobs.TABLES:
        # a table added after a job was ingested (lane_names) has no file for that job's ranks
        files = [f"{base}/{rank['files'][table]}" for m in manifests for rank in m["ranks"]
                 if table in rank["files"]]
        if not files:
            continue
        con.register(f"job_parquet_{table}", pads.dataset(files, schema=_schema(con, db, table),
                                                          format="parquet", filesystem=fs))
        con.execute(f'CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM "{db}".main.{table} '
                    f"UNION ALL SELECT * FROM job_parquet_{table}")
    view_sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'launch_targets' "
                           "AND NOT temporary").fetchall()
    if view_sql:
        con.execute(view_sql[0][0].replace("CREATE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
    _attach_metrics(con, db, manifests, fs, base)
    rows = [{"job": m["job"], "world_size": m["world_size"], "backend": m["backend"], "rank": r["rank"],
             "run_id": r["run_id"], "file": r["file"], "size_bytes": r["size_bytes"]}
            for m in manifests for r in m["ranks"]]
    con.register("job_ranks", pa.Table.from_pylist(rows))


def _attach_metrics(con: duckdb.DuckDBPyConnection, db: str, manifests: list[dict], fs, base: str) -> None:
    """`stored_iteration_metrics`: the store's rows, the rows each rank's worker computed at ingest,
    and, for ranks computed under another definition of metrics.sql (or before ranks kept them),
    the same macro's rows computed now from the rank's tables (the views above)."""
    import pyarrow.dataset as pads

    table = jobs.METRICS_TABLE
    current = metrics.definition_digest()
    ranks = [r for m in manifests for r in m["ranks"]]
    kept = [f"{base}/{r['files'][table]}" for r in ranks
            if r.get("metrics_digest") == current and table in r["files"]]
    stale = [r["run_id"] for r in ranks if r.get("metrics_digest") != current or table not in r["files"]]
    parts = [f'SELECT * FROM "{db}".main.{table}']
    if kept:
        con.register("job_parquet_metrics", pads.dataset(kept, schema=_schema(con, db, table),
                                                         format="parquet", filesystem=fs))
        parts.append("SELECT * FROM job_parquet_metrics")
    if stale:
        ids = ", ".join("'" + str(rid).replace("'", "''") + "'" for rid in stale)
        parts.append(f"SELECT * FROM iteration_metrics([{ids}]::VARCHAR[])")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS " + " UNION ALL ".join(parts))
