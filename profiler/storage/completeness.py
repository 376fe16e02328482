"""The completeness verdict's rows, kept in the store: `sql/completeness.sql` (the one definition of
every check, docs/analysis.md "Completeness") run when a run is ingested, its rows written to
`stored_completeness` beside the run's metrics (`metrics.store_runs` calls `store_runs`).

Every run checked has a `checked` row (CHECKED), so that a run whose trace is whole (no finding)
is told from one not checked yet. A writing handle's upkeep (`install`, from
`migrations.upkeep`) checks the runs that have no rows (stores older than schema version 11) and,
when the definition changed (its digest, in `store_meta`), every run again. Reads never write:
`read` gives the kept rows and computes, without keeping them, those of runs that have none (a
job's ranks checked under another definition, or in a job ingested before ranks kept their
rows: a rank's rows are kept in its job's files, `stored_completeness/`, read through job_views.py).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

COMPLETENESS_SQL = Path(__file__).with_name("sql") / "completeness.sql"
TABLE = "stored_completeness"
CHECKED = "checked"
VERSION_KEY = "completeness_sql_sha256"
COLUMNS = "run_id, iteration, reason, count, of_count, expected"


def query_text() -> str:
    return COMPLETENESS_SQL.read_text(encoding="utf-8")


def definition_digest() -> str:
    """A short hash of the checks' SQL, the modules it includes and the metrics layer it reads:
    rows kept under another one are out of date."""
    from profiler.storage import metrics, sql_library

    text = query_text()
    parts = [text, metrics.definition_digest(),
             *(sql_library.module_text(m) for m in sql_library.load_order(sql_library.includes(text))
               if m not in sql_library.STORE_MODULES)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _install_includes(con, text: str) -> None:
    """The library modules the query includes, on `con` (the metrics layer is loaded by the store)."""
    from profiler.storage import sql_library

    for name in sql_library.load_order(sql_library.includes(text)):
        if name not in sql_library.STORE_MODULES:
            con.execute(sql_library.module_text(name))


def store_runs(con, run_ids: list[str]) -> None:
    """(Re)compute and keep the completeness rows of these runs (their rows and metrics stored)."""
    if not run_ids:
        return
    ids = [str(r) for r in run_ids]
    text = query_text()
    _install_includes(con, text)
    con.execute(f"DELETE FROM {TABLE} WHERE run_id IN (SELECT unnest($ids))", {"ids": ids})
    con.execute(f"INSERT INTO {TABLE} ({COLUMNS}) SELECT {COLUMNS} FROM ({text})", {"run_ids": ids})
    con.execute(f"INSERT INTO {TABLE} ({COLUMNS}) SELECT unnest($ids), NULL, '{CHECKED}', 0, 0, true",
                {"ids": ids})


MISSING_SQL = (f"SELECT run_id FROM traces WHERE run_id NOT IN (SELECT run_id FROM {TABLE} "
               f"WHERE reason = '{CHECKED}')")


def install(con) -> None:
    """Check every run again if the definition changed, else the runs not checked yet."""
    digest = definition_digest()
    row = con.execute("SELECT value FROM store_meta WHERE key = ?", [VERSION_KEY]).fetchone()
    current = row is not None and row[0] == digest
    if not current:
        con.execute(f"DELETE FROM {TABLE}")
    store_runs(con, [r[0] for r in con.execute(MISSING_SQL).fetchall()])
    if not current:
        con.execute("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [VERSION_KEY, digest])


def read(db, run_ids: list[str]):
    """The completeness rows (COLUMNS, `checked` rows left out) of `run_ids`, ordered by run,
    iteration (the run's own first) and reason: kept rows where the run was checked at ingest,
    computed now for the others. `db`: a Store or a Session (`query(sql, params)`)."""
    import pandas as pd

    ids = [str(r) for r in run_ids]
    checked = set(db.query(f"SELECT run_id FROM {TABLE} WHERE reason = '{CHECKED}' "
                           "AND run_id IN (SELECT unnest($ids::VARCHAR[]))", {"ids": ids})["run_id"])
    parts = [db.query(f"SELECT {COLUMNS} FROM {TABLE} WHERE reason <> '{CHECKED}' "
                      "AND run_id IN (SELECT unnest($ids::VARCHAR[]))", {"ids": sorted(checked)})]
    unchecked = [r for r in ids if r not in checked]
    if unchecked:
        parts.append(db.query(query_text(), {"run_ids": unchecked}))
    df = pd.concat(parts, ignore_index=True)
    df["iteration"] = df["iteration"].astype("Int64")
    return df.sort_values(["run_id", "iteration", "reason"], na_position="first").reset_index(drop=True)
