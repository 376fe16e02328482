"""A job's summary: the rows of its job queries (tables.JOB_SUMMARIES), kept in the store when the
job is ingested so that reading a job of many ranks does not scan every rank's Parquet again.

The rows are computed by the analysis layer (`job_queries.keep_summary`, with the same query files
its readers run) and handed here; this module writes, reads and forgets them. A kept summary has a
stamp (`job_summaries`): a digest of the job's manifest (name, commit time, run ids), of its rank
files as they are on disk (size and mtime, `job_check.files_seen`) and of the definitions it was
computed under (the query files and metrics.sql). A summary of another stamp is never read: a job
deleted and ingested again, a rank file replaced, or a changed definition, is read from its ranks'
files (checked, so a damaged one is named) until a writing handle keeps a new summary.

At ingest the rows are computed from what the rank tasks brought back (`from_rows`: each rank's
rows that the job queries read, `jobs.SUMMARY_INPUTS`), not from the thousands of files just written.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from profiler.storage.jobs import jobs
from profiler.storage import metrics, tables

NAMES = {t.query: t.name for t in tables.JOB_SUMMARIES}


def stamp(manifest: dict, definitions: dict[str, str]) -> str:
    """The stamp of `manifest`'s job under the query texts `definitions` ({query: text})."""
    h = hashlib.sha256()
    for part in (manifest["job"], manifest.get("added_at") or "", manifest.get("files_seen") or "",
                 metrics.definition_digest(),
                 *(f"{q}\0{definitions[q]}" for q in sorted(definitions)),
                 *(f"{r['rank']}:{r['run_id']}" for r in manifest["ranks"])):
        h.update(str(part).encode() + b"\0")
    return h.hexdigest()[:24]


@contextlib.contextmanager
def from_rows(manifest: dict, ranks: list) -> Iterator:
    """A read `Session` on a scratch store (in memory) that holds only the rows the job's summary
    reads, as `ranks` (its `jobs.RankResult`s, each with `summary_rows`, shared by the ranks of one
    task) brought them back, and `job_ranks` of `manifest`'s job: the job queries run on it as on
    the ranks' files (rows of a run not in the manifest are never joined)."""
    import pyarrow as pa

    from profiler.storage.job_views import job_ranks_table
    from profiler.storage.session import Session
    from profiler.storage.store import Store

    with tempfile.TemporaryDirectory(prefix="job-summary-") as scratch:
        store = Store(Path(scratch) / "summary.duckdb", in_memory=True)
        with store.connect() as con:
            con.execute("BEGIN TRANSACTION")
            shared = list({id(r.summary_rows): r.summary_rows for r in ranks}.values())  # one per task
            for table in jobs.SUMMARY_INPUTS:
                con.register("summary_input", pa.concat_tables([rows[table] for rows in shared],
                                                               promote_options="default"))
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM summary_input")
                con.unregister("summary_input")
            con.execute("COMMIT")
            con.register("job_ranks", job_ranks_table([manifest]))
            yield Session(con, store)


def write(store, job: str, stamp_: str, frames: dict) -> None:
    """Replace job `job`'s summary with `frames` ({query: DataFrame of its rows, in order}), in
    one transaction."""
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            _delete(con, job)
            for query, table in NAMES.items():
                df = frames[query].reset_index(drop=True)
                cols = ", ".join(f'"{c}"' for c in df.columns)
                con.register("summary_rows", df.assign(summary_pos=range(len(df))))
                con.execute(f"INSERT INTO {table} (job, pos, {cols}) SELECT $job, summary_pos, {cols} "
                            "FROM summary_rows", {"job": job})
                con.unregister("summary_rows")
            con.execute("INSERT INTO job_summaries VALUES (?, ?, ?)",
                        [job, stamp_, dt.datetime.now(dt.UTC).replace(tzinfo=None)])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def forget(store, job: str) -> None:
    """Delete job `job`'s summary (its job is deleted); the store is not written when it keeps none."""
    with store.connect() as con:
        if not con.execute("SELECT count(*) FROM job_summaries WHERE job = ?", [job]).fetchone()[0]:
            return
        con.execute("BEGIN TRANSACTION")
        _delete(con, job)
        con.execute("COMMIT")


def _delete(con, job: str) -> None:
    con.execute("DELETE FROM job_summaries WHERE job = ?", [job])
    for table in NAMES.values():
        con.execute(f"DELETE FROM {table} WHERE job = ?", [job])


KEPT_SQL = "SELECT count(*) AS n FROM job_summaries WHERE job = $job AND stamp = $stamp"


def read(store, job: str, stamp_: str) -> dict | None:
    """{query: DataFrame of its kept rows, in the query's order} for job `job` under `stamp_`,
    or None when no summary is kept under that stamp. `store`: a Store (read on a cursor without
    the job views) or a Session (on its own cursor)."""
    params = {"job": job, "stamp": stamp_}
    sqls = {q: f"SELECT * EXCLUDE (job, pos) FROM {t} WHERE job = $job ORDER BY pos" for q, t in NAMES.items()}
    if hasattr(store, "connect"):
        with store.connect() as con:
            if not con.execute(KEPT_SQL, params).fetchone()[0]:
                return None
            return {q: con.execute(sql, {"job": job}).df() for q, sql in sqls.items()}
    if not int(store.query(KEPT_SQL, params)["n"][0]):
        return None
    return {q: store.query(sql, {"job": job}) for q, sql in sqls.items()}
