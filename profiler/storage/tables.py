"""Every per-run table of the store, listed once: what fills it, and how a job keeps it.

A per-run table holds rows of many runs, each with its `run_id`. Four kinds:

* PARSED: copied from the trace at ingest (store.py; `sql/ingest/insert_<name>.sql`, except
  `traces`, one row built in Python); a job keeps one Parquet file of it per rank (jobs.py).
* METRICS: the metrics layer's rows (metrics.py), computed at ingest from the parsed tables; a job
  keeps one file per rank too.
* VERDICT: the completeness verdict's rows (completeness.py), computed at ingest after the
  metrics; a job keeps one file per rank too (a rank checked under another definition is
  checked again when read).
* COUNTERS: attached later by `python -m profiler counters` (counters.py); never in a job.

The readers: `catalog.RUN_TABLES` (what deleting a run deletes), `job_layout.TABLES` / `job_layout.WRITTEN`
(a rank's files), `manifest_check.REQUIRED` (files every manifest has) and the ingest transaction
(`INSERTED`). Adding a per-run table is one line here, its `CREATE TABLE` in schema.sql and, for
a parsed one, its `insert_<name>.sql` (docs/architecture.md, "Adding a per-run table").

Per-job tables (`JOB_SUMMARIES`) hold one job's summary, written at its ingest
(profiler/storage/jobs/job_summary.py): each is the stored answer of one query file of
profiler/analysis/reads/sql, keyed by job name; deleting the job deletes its rows.

Imports nothing (a leaf of the storage layer).
"""
from __future__ import annotations

from dataclasses import dataclass

PARSED, METRICS, COUNTERS, VERDICT = "parsed", "metrics", "counters", "verdict"


@dataclass(frozen=True)
class RunTable:
    name: str
    kind: str                  # PARSED | METRICS | VERDICT | COUNTERS
    in_first_jobs: bool = False  # every job's manifest has its file (not so for tables added later)
    insert_step: int = 0       # its place in ingest's transaction, 1 first (0: not an insert_<name>.sql)
    staged: str | None = None  # the staged rows that insert_<name>.sql copies, released after it


# in a job's order (its manifests list a rank's files in it)
TABLES = (
    RunTable("traces", PARSED, in_first_jobs=True),  # one row, inserted first, from Python
    RunTable("iterations", PARSED, in_first_jobs=True, insert_step=1),
    RunTable("kernels", PARSED, in_first_jobs=True, insert_step=6, staged="kernels"),
    RunTable("memops", PARSED, in_first_jobs=True, insert_step=7, staged="memops"),
    RunTable("launches", PARSED, in_first_jobs=True, insert_step=5, staged="launches"),
    RunTable("ops", PARSED, in_first_jobs=True, insert_step=4, staged="ops"),
    RunTable("lane_names", PARSED, insert_step=3, staged="lane_names"),
    # reads the staged ops (the op that made each block), so it is copied before they are released
    RunTable("memory_events", PARSED, insert_step=2, staged="memory"),
    RunTable("stored_iteration_metrics", METRICS),
    RunTable("stored_completeness", VERDICT),
    RunTable("counter_reports", COUNTERS),
    RunTable("kernel_counters", COUNTERS),
)

PARSED_TABLES = tuple(t.name for t in TABLES if t.kind == PARSED)
METRICS_TABLE = next(t.name for t in TABLES if t.kind == METRICS)
VERDICT_TABLE = next(t.name for t in TABLES if t.kind == VERDICT)
IN_FIRST_JOBS = tuple(t.name for t in TABLES if t.in_first_jobs)
# the ingest transaction's copies from staging, in order (traces' row goes in before them)
INSERTED = tuple(sorted((t for t in TABLES if t.insert_step), key=lambda t: t.insert_step))


@dataclass(frozen=True)
class JobTable:
    name: str
    query: str  # the query file (profiler/analysis/reads/sql/<query>.sql) whose rows it keeps per job


JOB_SUMMARIES = (
    JobTable("job_summary_iterations", "job_rank_iterations"),
    JobTable("job_summary_waits", "job_rank_waits"),
    JobTable("job_summary_collectives", "job_collectives"),
    JobTable("job_summary_clock", "job_clock"),
)
