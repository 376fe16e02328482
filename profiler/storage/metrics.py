"""The metrics layer's upkeep: `sql/metrics.sql` holds every definition (iteration windows, GPU
busy / idle / kernel / copy / communication time, the launching threads' CPU time, launch and
synchronisation time, the verdict), `sql/step_work.sql` a step's GPU work (what it launched) and
`sql/idle_causes.sql` what the host did while the GPU sat idle; this module loads it into a store and keeps its per-iteration
table, `stored_iteration_metrics`, filled: one row per iteration of every run, computed once when
the run is ingested (or, for runs that lack them, when a writing handle opens the store:
`migrations.upkeep`), and all of them again when `metrics.sql` changes. Reads never write them.
Readers go through `run_queries.run_metrics` / `run_queries.iteration_metrics`.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

METRICS_SQL = Path(__file__).with_name("sql") / "metrics.sql"
# the modules of the metrics layer, in the order they load: a step's GPU work and the causes of its
# idle time are macros that metrics.sql's iteration_metrics reads
PARTS = (METRICS_SQL.with_name("windows.sql"), METRICS_SQL.with_name("step_work.sql"), METRICS_SQL.with_name("idle_causes.sql"), METRICS_SQL)
VERSION_KEY = "metrics_sql_sha256"


def definition_digest() -> str:
    """A short hash of the metrics layer's SQL: rows computed under another one are out of date."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in PARTS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def install(con) -> None:
    """Load the macros; recompute every run's metrics if their definition changed, else fill in
    the runs that have none. A store whose macros and table were loaded under this definition
    (the digest it keeps, and they are there) is not written again: the macros live in the file."""
    digest = definition_digest()
    row = con.execute("SELECT value FROM store_meta WHERE key = ?", [VERSION_KEY]).fetchone()
    current = row is not None and row[0] == digest
    if not current:
        con.execute("DROP TABLE IF EXISTS stored_iteration_metrics")
    if not current or not _loaded(con):
        for part in PARTS:
            con.execute(part.read_text(encoding="utf-8"))
    missing = [r[0] for r in con.execute(MISSING_SQL, {"ids": None}).fetchall()]
    store_runs(con, missing)
    if not current:
        con.execute("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [VERSION_KEY, digest])


# metrics.sql's last macro and its table, loaded together with everything before them: the table
# looked up in the catalog, the macro bound (listing duckdb_functions() takes ~15 ms, binding ~4)
TABLE_LOADED_SQL = ("SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = 'stored_iteration_metrics' "
                    "AND database_name = current_database()")
MACRO_LOADED_SQL = "SELECT * FROM run_metrics(NULL::VARCHAR[]) LIMIT 0"


def _loaded(con) -> bool:
    if not con.execute(TABLE_LOADED_SQL).fetchone()[0]:
        return False
    try:
        con.execute(MACRO_LOADED_SQL).fetchall()
    except duckdb.CatalogException:
        return False
    return True


# runs (of $ids, or all when NULL) whose metrics are not kept yet
MISSING_SQL = ("SELECT run_id FROM traces WHERE ($ids IS NULL OR run_id IN (SELECT unnest($ids::VARCHAR[]))) "
               "AND run_id NOT IN (SELECT DISTINCT run_id FROM stored_iteration_metrics)")
FILL_SQL = "INSERT INTO stored_iteration_metrics SELECT * FROM iteration_metrics($ids::VARCHAR[])"


def store_runs(con, run_ids: list[str]) -> None:
    """(Re)compute and keep the per-iteration metrics of these runs (their rows must be stored)."""
    if not run_ids:
        return
    ids = [str(r) for r in run_ids]
    con.execute("DELETE FROM stored_iteration_metrics WHERE run_id IN (SELECT unnest($ids))", {"ids": ids})
    con.execute(FILL_SQL, {"ids": ids})
