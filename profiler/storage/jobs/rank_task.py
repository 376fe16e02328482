"""The task that parses one rank of a job, run by every engine (profiler/storage/jobs/engines.py).

`parse_rank` ingests one trace with the store's own ingest (`Store.ingest`, the path a single
upload takes) into a private scratch store, then writes each table of that rank as a Parquet file
of the job. `assemble_rank` does the same with the rows of a file parsed in chunks
(profiler/storage/jobs/chunks.py), through `Store.ingest_staged`, the second half of that same ingest.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from profiler import errors
from profiler.storage.jobs import chunks, jobs
from profiler.storage import completeness, job_layout, metrics
from profiler.storage.rss import peak_rss, reset_peak_rss

RANK_TASK_THREADS = 4


def parse_rank(file: str, base: str, key: str, keep_python: bool = False,
               sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """Ingest one rank trace and write its tables under the job directory `base`; `sharing` tasks
    run at once, so its store takes that share of the cores (see `_rank_task`).

    Returns the RankResult, or the TraceError of a bad file (returned, not raised, so the caller
    can name every bad file of a job at once). Files written before a failure are removed."""
    return _rank_task(file, base, key, lambda store: store.ingest(file, keep_python=keep_python), sharing)


def parse_ranks(files: list[str], base: str, key: str, keep_python: bool = False,
                sharing: int = 1) -> list[jobs.RankResult | errors.TraceError]:
    """`parse_rank` for each of several small files, in one task with one scratch store: the
    store is opened, its schema made and the metrics layer loaded once for all of them (for a rank
    of ~1 MB that fixed cost was most of its task), and it is held in memory (nothing of it is
    kept: no commit's log to write, no file to close). The files are parsed one after the other,
    then their staged rows stored together: one statement per table for the whole batch, and one
    for their metrics rows (`Store.commit_batch`; a batch the store refuses is stored one by one,
    so the refused file is named). Each table is read out once for the whole batch and cut into
    its ranks' Parquet files (`write_batch`): the files `parse_rank` writes, same rows and types.
    The outcomes are in file order, a bad file's TraceError among them."""
    from profiler.storage.store import Store

    cpu_started = time.process_time()
    scratch = tempfile.mkdtemp(prefix="ranks-")
    try:
        store = Store(Path(scratch) / "ranks.duckdb", threads=task_threads(sharing), in_memory=True)
        with store.connect() as con:  # held open: each call reuses the database
            parsed = [_stage(store, f, keep_python) for f in files]  # (Staged or exception, seconds, RSS)
            started = time.perf_counter()
            ingested = _commit(store, [got for got, _, _ in parsed])
            ok = sum(1 for got in ingested if not isinstance(got, BaseException))
            timings = [(seconds, grown) for _, seconds, grown in parsed]
            del parsed  # the staged rows: in the store now
            out = write_batch(con, files, ingested, base, key)
            shared_s = (time.perf_counter() - started) / max(1, ok)
            cpu_s = (time.process_time() - cpu_started) / len(files)
            for r, (seconds, grown) in zip(out, timings):
                if isinstance(r, jobs.RankResult):
                    r.seconds, r.cpu_seconds = seconds + shared_s, cpu_s
                    r.peak_rss = max(r.peak_rss, r.start_rss + grown)
            return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _stage(store, file: str, keep_python: bool) -> tuple:
    """One file of a batch parsed and staged (`Store.stage`): the `Staged` or the exception it
    raised, the seconds it took and how much the peak RSS grew."""
    started, start_rss = time.perf_counter(), reset_peak_rss()
    try:
        got = store.stage(file, keep_python=keep_python)
    except (errors.StoreError, KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 - named below, as for a single file
        got = e
    return got, time.perf_counter() - started, peak_rss() - start_rss


def _commit(store, parsed: list) -> list:
    """The staged files of a batch stored in one transaction, one statement per table for all of
    them and their metrics in one (`Store.commit_batch`; should it fail, one by one, so a file the
    store refuses is named); per file its IngestResult, or the exception it raised."""
    staged = iter(store.commit_batch([got for got in parsed if not isinstance(got, BaseException)]))
    return [got if isinstance(got, BaseException) else next(staged) for got in parsed]


def place(file: str, rank: int | None, world: int | None) -> tuple[int, str] | errors.TraceError:
    """Where a rank file sits in its job, the one rule of every rank task: (rank, where it was read)
    from the trace's distributedInfo, else from 'rank<N>' / 'worker<N>' in the file name; a
    TraceError naming the file when neither says, or the rank is impossible (`jobs.check_rank`)."""
    rank_from = "distributedInfo"
    if rank is None:
        rank, rank_from = jobs.rank_from_name(file), "file name"
    if rank is None:
        return errors.TraceError(Path(file).name, "does not say its rank (no distributedInfo, "
                                                  "and no 'rank<N>' or 'worker<N>' in its name)")
    if (absurd := jobs.check_rank(Path(file).name, rank, world)) is not None:
        return absurd
    return int(rank), rank_from


def write_batch(con, files: list[str], ingested: list, base: str,
                 key: str) -> list[jobs.RankResult | errors.TraceError]:
    """Each ingested file's rank placed (`place`), then its tables written under `base` as
    `_rank_task` writes them: one query per table for the whole batch (`_by_rank`). The ranks'
    results share one dict of the batch's rows that the job's summary reads (`_summary_rows`)."""
    start_rss = reset_peak_rss()
    fs, _ = job_layout.filesystem(base)
    outcomes: list = [None] * len(files)
    placed = []  # (file index, trace id, job run id, rank, rank_from, world)
    ids = [got.run_id for got in ingested if not isinstance(got, BaseException)]
    stored = {r: (rank, world) for r, rank, world in con.execute(
        "SELECT run_id, rank, world_size FROM traces WHERE list_contains($ids, run_id)", {"ids": ids}).fetchall()}
    for i, (f, got) in enumerate(zip(files, ingested)):
        if isinstance(got, BaseException):
            outcomes[i] = _failed(f, got)
            continue
        rank, world = stored[got.run_id]
        where = place(f, rank, world)
        if isinstance(where, errors.TraceError):
            outcomes[i] = where
        else:
            placed.append((i, got.run_id, jobs.run_id(key, got.run_id), *where, world))
    if not placed:
        return outcomes
    con.register("batch_ranks", _batch_ranks([p[1:4] for p in placed]))
    written: list[str] = []
    files_of: list[dict] = [{} for _ in placed]
    try:
        for table in job_layout.WRITTEN:
            for n, rows in enumerate(_by_rank(con, table, "true")):
                _, _, rid, rank, _, _ = placed[n]
                path = job_layout.rank_file(base, table, key, rank, rid)
                fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                written.append(path)
                with fs.open_output_stream(path) as sink:
                    pq.write_table(rows, sink, row_group_size=1 << 16)
                files_of[n][table] = path
        inputs = _summary_rows(con)
    except BaseException:  # a batch lands whole or not at all, as a single rank does
        _remove(fs, written)
        raise
    finally:
        con.unregister("batch_ranks")
    digest, checked = metrics.definition_digest(), completeness.definition_digest()
    for n, (i, own, rid, rank, rank_from, world) in enumerate(placed):
        got = ingested[i]
        outcomes[i] = jobs.RankResult(
            file=str(files[i]), rank=rank, rank_from=rank_from, world_size=world, backend=jobs.backend(files[i]),
            run_id=rid, trace_id=own, size_bytes=_size(files[i]), events=got.events, kernels=got.kernels,
            files=files_of[n], seconds=0.0, peak_rss=peak_rss(), start_rss=start_rss, metrics_digest=digest,
            completeness_digest=checked, notes=tuple(got.notes), summary_rows=inputs)
    return outcomes


def _summary_rows(con) -> dict:
    """{table: the rows of it that the job's summary reads} (`jobs.SUMMARY_INPUTS`) of all the
    ranks of the registered `batch_ranks`, one Arrow table each: every rank of the batch gets this
    same dict, so a batch's results, pickled together, carry it (and each table's schema) once."""
    return {table: _batch_rows(con, table, where)[0] for table, where in jobs.SUMMARY_INPUTS.items()}


def _batch_ranks(placed: list[tuple[str, str, int]]):
    """The Arrow table registered as `batch_ranks`: (own run id, the job's run id, rank) per rank,
    with its position."""
    import pyarrow as pa

    return pa.table({"own": [p[0] for p in placed], "rid": [p[1] for p in placed],
                     "rank": pa.array([p[2] for p in placed], pa.int32()), "pos": list(range(len(placed)))})


def _batch_rows(con, table: str, where: str) -> tuple:
    """The rows of `table` matching `where` (on its alias t) of the ranks of the registered
    `batch_ranks` (own run id, the job's run id, rank, position), rank after rank in its order, each
    rank's in the order the store holds them, its run id replaced by the job's and, in `traces`, its
    rank set; and how many rows each rank has."""
    import numpy as np

    rank_col = ", b.rank AS rank" if table == "traces" else ""
    rows = con.sql(f"SELECT t.* REPLACE (b.rid AS run_id{rank_col}), b.pos AS batch_pos "
                   f"FROM {table} t JOIN batch_ranks b ON b.own = t.run_id WHERE {where} "
                   "ORDER BY b.pos, t.rowid").to_arrow_table()
    ranks = con.execute("SELECT count(*) FROM batch_ranks").fetchall()[0][0]
    counts = np.bincount(rows["batch_pos"].to_numpy(), minlength=ranks)
    return rows.drop_columns(["batch_pos"]), counts


def _by_rank(con, table: str, where: str) -> list:
    """`_batch_rows` cut into each rank's rows."""
    import numpy as np

    rows, counts = _batch_rows(con, table, where)
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [rows.slice(starts[n], counts[n]) for n in range(len(counts))]


def _failed(file: str, e: BaseException) -> errors.TraceError:
    """A file's ingest that raised, as its outcome: a TraceError as it is, anything else in one line."""
    from profiler.storage.connection import one_line

    if isinstance(e, errors.TraceError):
        return e
    return errors.TraceError(Path(file).name, f"could not be ingested ({type(e).__name__}: {one_line(e)[:200]})")


def assemble_rank(fp: chunks.FilePlan, parts: list[chunks.ChunkResult], base: str,
                  key: str, sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """The rank of a file parsed in chunks: their rows committed as one trace, written like
    `parse_rank`'s. The chunk files are removed either way."""
    def ingest(store):
        summary, staging = chunks.load(fp, parts, base)
        return store.ingest_staged(summary, staging)

    try:
        result = _rank_task(fp.file, base, key, ingest, sharing)
    finally:
        chunks.discard(fp, base, key)
    if isinstance(result, jobs.RankResult):  # the file's figures: all its tasks together
        worst = max([result, *parts], key=lambda r: r.peak_rss - r.start_rss)
        result.peak_rss, result.start_rss = worst.peak_rss, worst.start_rss
        result.seconds += sum(p.seconds for p in parts)
        result.chunks = len(parts)
    return result


def _rank_task(file: str, base: str, key: str, ingest: Callable,
               sharing: int = 1) -> jobs.RankResult | errors.TraceError:
    """Run `ingest(scratch store)` and write the rank's tables under `base` (see parse_rank).

    Its scratch store's DuckDB threads: `task_threads(sharing)`."""
    from profiler.storage.store import Store

    started, cpu_started = time.perf_counter(), time.process_time()
    start_rss = reset_peak_rss()
    scratch = tempfile.mkdtemp(prefix="rank-")
    written: list[str] = []
    fs, _ = job_layout.filesystem(base)
    try:
        store = Store(Path(scratch) / "rank.duckdb", threads=task_threads(sharing))
        with store.connect() as con:  # held open: the ingest and the reads below share one database
            result = ingest(store)
            rank, world = con.execute("SELECT rank, world_size FROM traces WHERE run_id = ?",
                                      [result.run_id]).fetchall()[0]
            where = place(file, rank, world)
            if isinstance(where, errors.TraceError):
                return where
            rank, rank_from = where
            rid = jobs.run_id(key, result.run_id)
            files = {}
            for table in job_layout.WRITTEN:
                path = job_layout.rank_file(base, table, key, rank, rid)
                fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                select = (f"SELECT * REPLACE ($rid AS run_id{', $rank AS rank' if table == 'traces' else ''}) "
                          f"FROM {table} WHERE run_id = $own")
                params = {"rid": rid, "own": result.run_id, **({"rank": rank} if table == "traces" else {})}
                reader = con.sql(select, params=params).to_arrow_reader(1 << 16)
                written.append(path)
                with fs.open_output_stream(path) as sink, pq.ParquetWriter(sink, reader.schema) as out:
                    for batch in reader:
                        out.write_batch(batch)
                files[table] = path
            con.register("batch_ranks", _batch_ranks([(result.run_id, rid, int(rank))]))
            summary_rows = _summary_rows(con)
            con.unregister("batch_ranks")
        return jobs.RankResult(
            file=str(file), rank=rank, rank_from=rank_from, world_size=world,
            backend=jobs.backend(file),
            run_id=rid, trace_id=result.run_id, size_bytes=_size(file), events=result.events,
            kernels=result.kernels, files=files, seconds=time.perf_counter() - started,
            peak_rss=peak_rss(), start_rss=start_rss, metrics_digest=metrics.definition_digest(),
            completeness_digest=completeness.definition_digest(), notes=tuple(result.notes),
            summary_rows=summary_rows, cpu_seconds=time.process_time() - cpu_started)
    except (errors.StoreError, KeyboardInterrupt, SystemExit):
        _remove(fs, written)
        raise
    except Exception as e:  # noqa: BLE001 - a bad file, or one this program did not foresee: its own one line
        _remove(fs, written)
        return _failed(file, e)
    except BaseException:
        _remove(fs, written)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def task_threads(sharing: int) -> int:
    """DuckDB threads for a rank task when `sharing` tasks run at once: this machine's cores divided
    among them (16 tasks each starting 16 threads, and DuckDB's memory for each, only compete), at
    most RANK_TASK_THREADS: more bought little and cost memory (a 500 MB rank alone on 16 cores,
    16 threads: 16.5-20.8 s and +1.1 GB; on 2 cores, 2 threads: 18.5 s and +0.7 GB)."""
    return min(RANK_TASK_THREADS, max(1, (os.cpu_count() or 1) // max(1, sharing)))


def _size(file: str) -> int:
    return os.path.getsize(file)


def _remove(fs, paths: list[str]) -> None:
    for path in paths:
        try:
            fs.delete_file(path)
        except OSError:
            pass
