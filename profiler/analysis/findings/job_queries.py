"""What a job's ranks say together: per rank and iteration, who waits for whom (the straggler: the
rank the others wait for at collectives), the rank with the longest step (a figure of its own),
collective skew.

Reads the views `profiler/storage/jobs/jobs.py` attaches (`job_ranks` and the rank rows beside the store's
tables) with the SQL of `sql/job_*.sql`. Every number here has its definition in those files. The
rows of those queries are kept per job when it is ingested (`keep_summary`, the store's job summary:
profiler/storage/jobs/job_summary.py) and read from there while the job and the definitions are those
they were computed from; otherwise (a job stored before summaries, or under other definitions)
the queries run over the ranks' files, as they did at ingest.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from profiler.analysis.findings import job_clocks, verdict
from profiler.analysis.reads.reads import sql_text
from profiler.analysis.reads.units import json_value
from profiler.storage import job_check, job_layout
from profiler.storage.jobs import job_summary, jobs
from profiler.storage import tables
from profiler.storage.session import StoreHandle

if TYPE_CHECKING:  # a writing store; its module is not needed to run these
    from profiler.storage.store import Store

SUMMARY_QUERIES = tuple(t.query for t in tables.JOB_SUMMARIES)


LIST_COLUMNS = ["job", "world_size", "backend", "ranks_present", "ranks_missing", "added_at", "damaged"]


def job_list(store: StoreHandle) -> pd.DataFrame:
    """One row per stored job: job, world_size, backend, ranks_present, ranks_missing (as ranges,
    '3-7'), added_at, damaged (why the job cannot be read, naming its file; empty when it reads)."""
    store.query("SELECT 1")  # jobs are read beside the store: a store that cannot be opened says why
    found = job_check.read_jobs(job_layout.job_root(store))
    rows = [{"job": m["job"], "world_size": m["world_size"], "backend": m["backend"],
             "ranks_present": len(m["ranks_present"]), "ranks_missing": jobs.ranges_text(m["ranks_missing"]),
             "added_at": m["added_at"], "damaged": ""} for m in found.ok]
    rows += [{"job": d.job, "damaged": f"{d.file}: {d.reason}"} for d in found.damaged]
    return pd.DataFrame(rows, columns=LIST_COLUMNS)


def missing_text(ranges) -> str:
    """Missing ranks as ranges: [[1, 1], [3, 7]] -> '1, 3-7' ('none' when none is missing)."""
    return jobs.ranges_text(ranges)


def manifest(store: StoreHandle, job: str) -> dict:
    """Job `job`'s manifest (checked); a `JobError` when it is not stored or cannot be read."""
    root = job_layout.job_root(store)
    found = job_check.read_jobs(root)
    for m in found.ok:
        if m["job"] == job:
            return {**m, "files_seen": job_check.files_seen(root, m) or ""}
    for d in found.damaged:
        if d.job == job:
            raise jobs.JobError(f"{d} (the job cannot be read; `job NAME --delete` removes it)")
    known = ", ".join(repr(m["job"]) for m in found.ok) or "none"
    broken = "".join(f"; damaged: {d}" for d in found.damaged[:5])
    raise jobs.JobError(f"job {job!r} is not in the store (stored jobs: {known}{broken})")


def summary_stamp(m: dict) -> str:
    """The stamp of job `m`'s summary: its manifest (with `files_seen`, its files as they are) and
    the queries' definitions."""
    return job_summary.stamp(m, {q: sql_text(q) for q in SUMMARY_QUERIES})


def kept_manifest(store: StoreHandle, job: str) -> dict | None:
    """Job `job`'s manifest, read without opening its rank files (their presence is checked), or
    None when it does not read that way (`manifest` then says why, or the job is damaged)."""
    root = job_layout.job_root(store)
    for m in job_check.read_jobs(root, files=False).ok:
        if m["job"] == job:
            seen = job_check.files_seen(root, m)  # None: a file is missing or not a regular file
            return {**m, "files_seen": seen} if seen is not None else None
    return None


def _kept(store, job: str) -> dict | None:
    """The job's kept summary ({query: rows}), or None when none is kept for it as it is now."""
    m = kept_manifest(store, job)
    return job_summary.read(store, job, summary_stamp(m)) if m is not None else None


def _rows(store, job: str, query: str) -> pd.DataFrame:
    """The rows of sql/<query>.sql for job `job`: kept at ingest, else computed from its ranks."""
    kept = _kept(store, job)
    if kept is not None:
        return kept[query]
    return store.query(sql_text(query), {"job": job})


def ingest_job(store: Store, paths, job: str, **options) -> jobs.JobResult:
    """Ingest the rank traces in `paths` as job `job` and keep its summary: the one call every
    caller makes (the command line, the upload page), so no job lands without the summary its
    reads take (without it every read goes back to the ranks' Parquet files). `options` are
    `job_ingest.ingest_job`'s (skip_bad, workers, engine, ray_address, keep_python, progress,
    chunk_bytes); its errors (`JobError`, `TraceError`) pass through."""
    from profiler.storage.jobs import job_ingest

    result = job_ingest.ingest_job(store, paths, job, **options)
    keep_summary(store, result.job, result.ranks)
    return result


def keep_summary(store: Store, job: str, ranks: list | None = None) -> None:
    """Compute job `job`'s summary with the job queries and keep it in the store (`store`: a
    writing `Store`). Called when a job has been ingested: `ranks`, its ingest's results
    (`JobResult.ranks`), when each brought back the rows the queries read (`summary_rows`), are
    what they run on; else they run over the ranks' files."""
    if ranks and all(r.summary_rows is not None for r in ranks):
        m = kept_manifest(store, job)  # just written by this ingest: its files are not opened again
        if m is not None and sorted(r["run_id"] for r in m["ranks"]) == sorted(r.run_id for r in ranks):
            with job_summary.from_rows(m, ranks) as db:
                frames = {q: db.query(sql_text(q), {"job": job}) for q in SUMMARY_QUERIES}
            job_summary.write(store, job, summary_stamp(m), frames)
            return
    m = manifest(store, job)
    with store.session() as db:
        frames = {q: db.query(sql_text(q), {"job": job}) for q in SUMMARY_QUERIES}
    job_summary.write(store, job, summary_stamp(m), frames)


def rank_iterations(store: StoreHandle, job: str) -> pd.DataFrame:
    """rank, iteration, iteration_name, run_id, step_us, gpu_work_us, gpu_busy_us, carried_us,
    gpu_idle_us, collective_us (the metrics layer's wall, the step's GPU work (step_work.sql), its
    own busy, carried, idle and communication time),
    longest_step_rank (of that iteration: the rank whose step lasted longest, often one that
    waited, not the straggler)."""
    return _with_longest(_rows(store, job, "job_rank_iterations"))


def _with_longest(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df.assign(longest_step_rank=pd.Series(dtype="Int64"))
    longest = df.loc[df.groupby("iteration")["step_us"].idxmax(), ["iteration", "rank"]]
    return df.merge(longest.rename(columns={"rank": "longest_step_rank"}), on="iteration")


def longest_steps(per_rank: pd.DataFrame) -> pd.DataFrame:
    """Per iteration: the rank with the longest step, its step time, the median rank's, and how far
    behind it is. Not the straggler (`stragglers`): a rank that waits at a collective has a long step."""
    if per_rank.empty:
        return pd.DataFrame(columns=["iteration", "longest_step_rank", "step_us", "median_step_us", "behind_us"])
    g = per_rank.groupby("iteration")["step_us"]
    out = per_rank.loc[g.idxmax(), ["iteration", "rank", "step_us"]].rename(columns={"rank": "longest_step_rank"})
    out["median_step_us"] = out["iteration"].map(g.median())
    out["behind_us"] = out["step_us"] - out["median_step_us"]
    return out.reset_index(drop=True)


def rank_waits(store: StoreHandle, job: str) -> pd.DataFrame:
    """Per rank and iteration: collectives, arrived_last, wait_us (time it waited for the others),
    late_us (how long after the first rank it arrived), caused_wait_us (time the others waited
    for it); definitions in sql/job_rank_waits.sql."""
    return _rows(store, job, "job_rank_waits")


def stragglers(waits: pd.DataFrame) -> pd.DataFrame:
    """Per iteration: the straggler, the rank the others waited for longest (caused_wait_us; ties:
    more last arrivals, then the lower rank), with its last arrivals and the others' total wait.
    None when no rank made another wait (no collective ran on two ranks)."""
    cols = ["iteration", "straggler_rank", "caused_wait_us", "arrived_last", "collectives", "others_wait_us"]
    rows = []
    for iteration, g in waits.groupby("iteration", sort=True):
        g = g.sort_values(["caused_wait_us", "arrived_last", "rank"], ascending=[False, False, True])
        top = g.iloc[0]
        if top["caused_wait_us"] <= 0:
            continue
        rows.append([iteration, int(top["rank"]), float(top["caused_wait_us"]), int(top["arrived_last"]),
                     int(top["collectives"]), float(g["wait_us"].sum() - top["wait_us"])])
    return pd.DataFrame(rows, columns=cols)


def straggler_ranking(waits: pd.DataFrame) -> list[int]:
    """Ranks by how late they arrive at the collectives (summed late_us over iterations, latest
    first; ties: more waiting caused, then the lower rank); ranks never late are left out. The
    straggler of an iteration normally leads it; the next ones are the candidates behind it."""
    total = waits.groupby("rank").agg(late=("late_us", "sum"), caused=("caused_wait_us", "sum"))
    total = total[total["late"] > 0].reset_index()
    total = total.sort_values(["late", "caused", "rank"], ascending=[False, False, True])
    return [int(r) for r in total["rank"]]


def stated_waits(per_rank: pd.DataFrame, waits: pd.DataFrame, clock: pd.DataFrame):
    """(clock rows, the waits as stated with their `flag` column, why they are withheld or None):
    none is stated when the clock estimate is inconsistent (job_clocks.verdict); a wait that cannot
    be right is flagged (job_clocks.flag_waits) and its iteration names no straggler."""
    clock = clock.reindex(columns=job_clocks.CLOCK_COLUMNS)
    verdict = job_clocks.verdict(clock)
    if not verdict["consistent"]:
        return clock, job_clocks.flag_waits(per_rank, waits.iloc[0:0], clock), verdict["reason"]
    return clock, job_clocks.flag_waits(per_rank, waits, clock), None


def stated_wait_table(report: dict) -> pd.DataFrame:
    """The report's waits as a table (rank, iteration, collectives, arrived_last, wait_us, late_us,
    caused_wait_us, flag); no rows when they are withheld."""
    return pd.DataFrame(report["waits"], columns=["rank", "iteration", "collectives", "arrived_last", "wait_us",
                                                  "late_us", "caused_wait_us", "flag"])


def clock(store: StoreHandle, job: str) -> pd.DataFrame:
    """Per rank: matched, offset_us, uncertainty_us, applied_us, impossible, worst_excess_us
    (sql/job_clock.sql; job_clocks says what they mean)."""
    return _rows(store, job, "job_clock").reindex(columns=job_clocks.CLOCK_COLUMNS)


def collectives(store: StoreHandle, job: str) -> pd.DataFrame:
    """Each collective across ranks: iteration, name, seq, ranks, last_rank, skew_us, wait_us,
    mean_dur_us; and where the trace gives its size: collective, group_size, bytes, algbw_gbps,
    busbw_gbps (missing otherwise; definitions in sql/job_collectives.sql)."""
    return _sized(_rows(store, job, "job_collectives"))


def _sized(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({"bytes": "Int64", "group_size": "Int64"})


def job_report(store: StoreHandle, job: str) -> dict:
    """Everything `python -m profiler job NAME --json` prints."""
    m = kept_manifest(store, job)
    kept = job_summary.read(store, job, summary_stamp(m)) if m is not None else None
    if kept is None:  # no summary kept for the job as it is: its ranks' files, checked
        m = manifest(store, job)
        kept = {q: store.query(sql_text(q), {"job": job}) for q in SUMMARY_QUERIES}
    per_rank = _with_longest(kept["job_rank_iterations"])
    coll = _sized(kept["job_collectives"])
    clock, waits, withheld = stated_waits(per_rank, kept["job_rank_waits"], kept["job_clock"])
    clean = waits[~waits["iteration"].isin(waits.loc[waits["flag"].notna(), "iteration"])]
    said = verdict.rank_wait_sentences(clean, per_rank, stragglers(clean)) if len(clean) else {}
    return {
        "job": job, "world_size": m["world_size"], "backend": m["backend"],
        "ranks_present": m["ranks_present"], "ranks_missing": m["ranks_missing"],
        "iterations": [{k: json_value(v) for k, v in row.items()} for row in per_rank[
            ["rank", "iteration", "step_us", "gpu_work_us", "gpu_busy_us", "carried_us", "gpu_idle_us", "collective_us",
             "longest_step_rank"]
        ].to_dict("records")],
        "longest_step": [{k: json_value(v) for k, v in row.items()} for row in longest_steps(per_rank).to_dict("records")],
        "clock": [{k: json_value(v) for k, v in row.items()} for row in clock.to_dict("records")],
        "clock_verdict": job_clocks.verdict(clock), "waits_withheld": withheld,
        "waits": [{k: json_value(v) for k, v in row.items()} for row in waits.to_dict("records")],
        "stragglers": [{k: json_value(v) for k, v in row.items()} for row in stragglers(clean).to_dict("records")],
        "straggler_ranking": straggler_ranking(clean),
        "rank_waits": [{"rank": rank, "sentence": text} for rank, text in sorted(said.items())],
        "collectives": [{k: json_value(v) for k, v in row.items()} for row in coll.to_dict("records")],
    }


def summary(report: dict) -> dict:
    """One job's means over its rank-iterations, for comparing jobs."""
    rows = pd.DataFrame(report["iterations"])
    coll = pd.DataFrame(report["collectives"])
    slow = pd.DataFrame(report["longest_step"])
    stragglers_ = pd.DataFrame(report["stragglers"])
    mean = (lambda col: float(rows[col].mean())) if not rows.empty else (lambda col: None)
    return {
        "job": report["job"], "ranks": len(report["ranks_present"]), "world_size": report["world_size"],
        "iterations": int(rows["iteration"].nunique()) if not rows.empty else 0,
        "step_us": mean("step_us"), "gpu_work_us": mean("gpu_work_us"), "collective_us": mean("collective_us"),
        "longest_step_behind_us": float(slow["behind_us"].mean()) if not slow.empty else None,
        "straggler_caused_wait_us": float(stragglers_["caused_wait_us"].mean()) if not stragglers_.empty else None,
        "collective_skew_us": float(coll["skew_us"].mean()) if not coll.empty else None,
    }


def compare(store: StoreHandle, job_a: str, job_b: str) -> pd.DataFrame:
    """Two jobs side by side: one row per measure, columns job_a, job_b and b / a."""
    a, b = summary(job_report(store, job_a)), summary(job_report(store, job_b))
    rows = []
    for key in ("ranks", "world_size", "iterations", "step_us", "gpu_work_us", "collective_us",
                "longest_step_behind_us", "straggler_caused_wait_us", "collective_skew_us"):
        ratio = b[key] / a[key] if a[key] and b[key] is not None else None
        rows.append({"measure": key, job_a: a[key], job_b: b[key], "b_over_a": ratio})
    return pd.DataFrame(rows)


def straggler_sentences(report: dict) -> list[str]:
    """Per iteration: who the others waited for (the straggler) and, apart, whose step was longest.
    The CLI and the job page print these same sentences, after the clocks' (job_clocks.sentences)."""
    clock = pd.DataFrame(report["clock"], columns=job_clocks.CLOCK_COLUMNS)
    lines = job_clocks.sentences(clock, report["clock_verdict"])
    lines += [f"iteration {w['iteration']}: rank {w['rank']}'s wait cannot be right ({w['flag']}): not a "
              f"finding, and the iteration names no straggler" for w in report["waits"] if w["flag"]]
    longest = {s["iteration"]: s for s in report["longest_step"]}
    waits = pd.DataFrame(report["waits"])
    for s in report["stragglers"]:
        mine = waits[(waits["iteration"] == s["iteration"]) & (waits["rank"] == s["straggler_rank"])]
        lines.append(f"iteration {s['iteration']}: rank {s['straggler_rank']} is the straggler: it arrived "
                     f"last at {s['arrived_last']} of its {s['collectives']} collectives and the other ranks "
                     f"waited {s['caused_wait_us']:,.1f} µs for it in all (it waited "
                     f"{float(mine['wait_us'].iloc[0]):,.1f} µs for others)")
    lines += [w["sentence"] for w in report.get("rank_waits", [])]
    if len(report["straggler_ranking"]) > 1:
        lines.append("ranks by how late they reach the collectives, latest first: "
                     + ", ".join(map(str, report["straggler_ranking"])))
    for it, s in longest.items():
        lines.append(f"iteration {it}: rank {s['longest_step_rank']} has the longest step, "
                     f"{s['step_us']:,.1f} µs, {s['behind_us']:,.1f} µs above the median rank "
                     f"({s['median_step_us']:,.1f} µs)")
    return lines
