"""The store's schema over time: the version this program writes, what upgrades an older store,
and the upkeep a writing handle does when it opens a store (`prepare`). A read-only handle only
checks the version: it never creates, migrates or writes anything.
"""
from __future__ import annotations

import hashlib
from typing import Any

from profiler import errors
from profiler.storage import completeness, metrics
from profiler.storage.schema import SCHEMA_SQL

SCHEMA_VERSION = 12
# store_meta's key for the digest of the schema.sql a store's tables were last made from
SCHEMA_KEY = "schema_sql_sha256"
# schema version -> what upgrades a store from the version before it (run in order on open):
# SQL text, or a function of the connection
MIGRATIONS: dict[int, Any] = {
    # ops keep record_shapes' arguments (profiler/analysis/model/costmodel.py); traces ingested before have NULLs
    2: "ALTER TABLE ops ADD COLUMN IF NOT EXISTS input_dims VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS input_types VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS concrete_inputs VARCHAR;",
    # 3: collective sizes on ops (NULL for traces stored before: delete and ingest them again)
    3: "ALTER TABLE ops ADD COLUMN IF NOT EXISTS collective VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS in_msg_nelems UBIGINT; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS out_msg_nelems UBIGINT; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS msg_dtype VARCHAR; "
       "ALTER TABLE ops ADD COLUMN IF NOT EXISTS group_size INTEGER;",
}
OLD_RUN_ID_COLUMN = "trace_id"  # the run id column's name in stores before schema version 4


def _rename_run_id_columns(con) -> None:
    """Schema version 4: every table's run id column is called run_id (it was trace_id)."""
    tables = con.execute(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_catalog, table_schema, table_name) WHERE c.table_catalog = current_database() "
        "AND c.table_schema = 'main' AND t.table_type = 'BASE TABLE' AND c.column_name = ?",
        [OLD_RUN_ID_COLUMN]).fetchall()
    for (table,) in tables:
        con.execute(f'ALTER TABLE "{table}" RENAME COLUMN {OLD_RUN_ID_COLUMN} TO run_id')


MIGRATIONS[4] = _rename_run_id_columns
# 5: lane_names is a new table (schema.sql makes it); traces stored before have no names, and their
# lanes are labelled by their ids as before
MIGRATIONS[5] = "SELECT 1"
# 6: counter_reports and kernel_counters are new tables (schema.sql makes them); no run has counters yet
MIGRATIONS[6] = "SELECT 1"
# 7: a captured run's mode and shape beyond batch, heads, seq_len and head_dim (issue 24); runs
# captured before were prefills of multi-head attention over a square
MIGRATIONS[7] = ("ALTER TABLE traces ADD COLUMN IF NOT EXISTS mode VARCHAR; "
                 "ALTER TABLE traces ADD COLUMN IF NOT EXISTS kv_heads INTEGER; "
                 "ALTER TABLE traces ADD COLUMN IF NOT EXISTS kv_len INTEGER; "
                 'ALTER TABLE traces ADD COLUMN IF NOT EXISTS "window" INTEGER; '
                 "ALTER TABLE traces ADD COLUMN IF NOT EXISTS varlen VARCHAR; "
                 "UPDATE traces SET mode = 'prefill', kv_heads = heads, kv_len = seq_len "
                 "WHERE variant IS NOT NULL AND mode IS NULL;")
# 8: the per-job summary tables (tables.JOB_SUMMARIES; schema.sql makes them); jobs stored before
# have no summary and are read from their ranks' files until one is written
MIGRATIONS[8] = "SELECT 1"
# 9: counters keep DRAM bytes, a note on theoretical occupancy and the GPU check (reports attached
# before have NULLs there); gpu_ceilings is a new table (schema.sql makes it)
_COUNTER_COLUMNS = (("kernel_counters", "dram_bytes DOUBLE"), ("kernel_counters", "occupancy_note VARCHAR"),
                    ("counter_reports", "device_check VARCHAR"))


def _counter_columns(con) -> None:
    """Migration 9 on a store that has the counter tables (one older than 6 gets them whole from schema.sql)."""
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    for table, column in _COUNTER_COLUMNS:
        if table in have:
            con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column}")


MIGRATIONS[9] = _counter_columns
# 10: GPU work belongs to the step whose call launched it (issue 35): work launched outside every
# step, or with no launch call in a run that records them (unattributed), belongs to none; before,
# both fell back to the step they ran in
_ATTRIBUTE = """
UPDATE {t} SET iteration = (SELECT arg_min(l.iteration, l.ts_ns) FROM launches l
                            WHERE l.run_id = {t}.run_id AND l.correlation = {t}.correlation)
WHERE run_id IN (SELECT DISTINCT run_id FROM launches WHERE correlation IS NOT NULL);"""
MIGRATIONS[10] = _ATTRIBUTE.format(t="kernels") + _ATTRIBUTE.format(t="memops")
# 11: a job's kept iterations carry the step's GPU work (issue 35); summaries kept before are out of
# date (their stamp covers job_rank_iterations.sql) and are computed again from the ranks' files
MIGRATIONS[11] = "ALTER TABLE IF EXISTS job_summary_iterations ADD COLUMN IF NOT EXISTS gpu_work_us DOUBLE;"
# 12: the completeness verdict is kept at ingest (stored_completeness; schema.sql makes it); runs
# stored before are checked by the upkeep that follows (completeness.install)
MIGRATIONS[12] = "SELECT 1"


def prepare(con, label: str, read_only: bool) -> None:
    """Refuse a store newer than this program; a read-only one must be current. A writing handle
    migrates an older store, creates what is missing, and keeps the metrics layer up to date:
    every run's metrics recomputed when metrics.sql changed, and those of runs that lack them
    (stores written by older versions, rows written other than by ingest) computed now, so that
    no read ever has to write them (`upkeep`). A store already at this version whose tables were
    made from this schema.sql (its digest, kept in `store_meta`) is not written again."""
    version, schema = _kept(con, label)
    if version > SCHEMA_VERSION:
        raise errors.StoreError(
            f"{label} has schema version {version}, newer than this program "
            f"understands ({SCHEMA_VERSION}); upgrade the dashboard.")
    if read_only:
        if version < SCHEMA_VERSION:
            raise errors.StoreOutdatedError(
                f"{label} has schema version {version}; ingest a trace into it once to upgrade it.")
        return
    for target in range(version + 1, SCHEMA_VERSION + 1):
        if callable(MIGRATIONS[target]):
            MIGRATIONS[target](con)
        else:
            con.execute(MIGRATIONS[target])
    digest = schema_digest()
    current = version == SCHEMA_VERSION and schema == digest
    if not current:
        con.execute(SCHEMA_SQL.read_text())
    upkeep(con)
    if not current:
        con.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?), (?, ?)",
                    [str(SCHEMA_VERSION), SCHEMA_KEY, digest])


def schema_digest() -> str:
    """A short hash of schema.sql: a store whose tables were made from another one runs it again."""
    return hashlib.sha256(SCHEMA_SQL.read_bytes()).hexdigest()[:16]


def upkeep(con) -> None:
    """What a writing handle keeps per run beside the rows ingest wrote: the metrics layer
    (profiler/storage/metrics.py: macros loaded, missing or outdated per-run metrics computed),
    then the completeness verdict's rows (profiler/storage/completeness.py), which read them."""
    metrics.install(con)
    completeness.install(con)


def stored_version(con, label: str) -> int:
    """The store's schema version; a new, empty file counts as the current one."""
    return _kept(con, label)[0]


def _kept(con, label: str) -> tuple[int, str | None]:
    """(the store's schema version, the digest of the schema.sql its tables were made from, or
    None); a new, empty file counts as the current version, made from no schema.sql yet."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'store_meta' "
                        "AND database_name = current_database()").fetchone()[0]
    rows = dict(con.execute("SELECT key, value FROM store_meta WHERE key IN ('schema_version', ?)",
                            [SCHEMA_KEY]).fetchall()) if found else {}
    schema = rows.get(SCHEMA_KEY)
    if "schema_version" not in rows:
        return SCHEMA_VERSION, None
    try:
        return int(rows["schema_version"]), schema
    except (TypeError, ValueError):
        raise errors.StoreError(
            f"{label} is damaged: its schema version reads {str(rows['schema_version'])[:40]!r}, not a "
            "number.") from None
