"""Parse the ranks of a job in parallel: one task per file, or per chunk of a large file; on Ray,
on a local pool of processes, or in this process (the engines: profiler/storage/jobs/engines.py).

`parse_rank` is the task for a file (profiler/storage/jobs/rank_task.py): it ingests one trace with the
store's own ingest into a private scratch store, then writes each table of that rank as a Parquet
file of the job. A large file, when there are more workers than large files, is cut into chunks
instead (profiler/storage/jobs/chunks.py): `chunks.parse_chunk` tasks parse them into staged Arrow
files, and `assemble_rank` commits their rows into a scratch store and writes the rank the same
way. Every engine runs exactly these functions, so all give the same rows, and the same rows as a
single upload (tests/test_jobs.py, tests/test_chunks.py).

Ray is optional: without it installed, jobs are parsed in this process. A local Ray cluster gets
one worker per core unless `workers` says fewer; `address` (or $PROFILER_RAY_ADDRESS) joins a
running cluster instead, whose nodes need this package importable and the job directory reachable.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from profiler.storage.jobs import chunks, jobs
from profiler.storage.jobs.engines import ENGINES
from profiler.storage.jobs.rank_task import assemble_rank, parse_rank, parse_ranks

# Small files are parsed several to a task (`rank_task.parse_ranks`): a rank of ~1 MB cost ~0.4 s
# alone, mostly its scratch store's opening, schema and metrics layer, plus the engine's dispatch.
BATCH_MAX_BYTES = 64 << 20  # files at most this large are batched, and a batch holds at most this much
BATCH_MAX_FILES = 64
BATCHES_PER_WORKER = 4      # at least this many batches per worker, so that they end together

# --- scheduling -----------------------------------------------------------------------------------

def run_ranks(files: list[Path], base: str, key: str, *, engine: str = "ray", workers: int | None = None,
              address: str | None = None, keep_python: bool = False,
              progress: Callable[[float], None] | None = None, chunk_bytes: int | None = None,
              scratch: str | None = None) -> tuple[list, int]:
    """Each file's outcome (RankResult or TraceError), in file order, and the workers used.

    Files are cut into chunks as `chunks.parts` says (a large file gets its share of the workers;
    `chunk_bytes` forces chunks of about that size); gzipped ones are unpacked into `scratch`
    first (default: a temporary folder). A file whose chunks do not all parse is parsed whole."""
    if engine not in ENGINES:
        raise jobs.JobError(f"unknown engine {engine!r} (use 'ray', 'processes' or 'in-process')")
    with tempfile.TemporaryDirectory(prefix="job-chunks-") as own_scratch:
        pool = ENGINES[engine](workers, address)
        try:
            job = _Job(files, base, key, pool, keep_python, progress or (lambda _fraction: None))
            return job.run(chunk_bytes, scratch or own_scratch), pool.workers
        finally:
            pool.close()


class _Job:
    """The tasks of one job on one engine: a file's parse, or its chunks then their assembly."""

    def __init__(self, files, base, key, pool, keep_python, report):
        self.files, self.base, self.key, self.pool = files, base, key, pool
        self.keep_python, self.report = keep_python, report
        self.sharing = min(pool.workers, len(files))  # rank tasks running at once: a job of one file gets every core
        self.sizes = [max(f.stat().st_size, 1) for f in files]
        self.credited = [0.0] * len(files)  # progress counted so far per file, in bytes
        self.outcomes: list = [None] * len(files)

    def run(self, chunk_bytes: int | None, scratch: str) -> list:
        estimated = [chunks.estimated_size(f) for f in self.files]
        plans: dict[int, chunks.FilePlan] = {}
        for i, f in enumerate(self.files):
            n = chunks.parts(estimated[i], sum(estimated), self.pool.workers, chunk_bytes)
            if n > 1 and (fp := chunks.plan_file(f, n, scratch)) is not None:
                plans[i] = fp
        got: dict[int, dict] = {i: {} for i in plans}
        for i, fp in plans.items():  # the large files first: they finish last
            for k in range(fp.plan.chunks):
                self.pool.submit(("chunk", i, k), chunks.parse_chunk, fp, k, self.base, self.key, self.keep_python)
        for batch in self._batches([i for i in range(len(self.files)) if i not in plans]):
            if len(batch) == 1:
                self._whole(batch[0])
            else:
                self.pool.submit(("batch", batch[0], tuple(batch)), parse_ranks, [str(self.files[i]) for i in batch],
                                 self.base, self.key, self.keep_python, self.sharing)
        try:
            while self.pool.busy():
                (kind, i, k), value = self.pool.next_done(self._name)
                if kind == "batch":
                    for j, outcome in zip(k, value):
                        self.outcomes[j] = outcome
                        self._credit(j, self.sizes[j] - self.credited[j])
                    continue
                if kind != "chunk":
                    self.outcomes[i] = value
                    self._credit(i, self.sizes[i] - self.credited[i])
                    continue
                got[i][k] = value
                self._credit(i, self.sizes[i] / (plans[i].plan.chunks + 1))
                if len(got[i]) == plans[i].plan.chunks:
                    parts = [got[i][k] for k in range(len(got[i]))]
                    if chunks.usable(plans[i], parts):
                        self.pool.submit(("assemble", i, None), assemble_rank, plans[i], parts, self.base, self.key,
                                         self.sharing)
                    else:  # a chunk failed or the chunks disagree: the file, parsed whole, says what it is
                        chunks.discard(plans[i], self.base, self.key)
                        self._whole(i)
        finally:
            for fp in plans.values():
                if fp.plan.path != fp.file:
                    Path(fp.plan.path).unlink(missing_ok=True)
            if plans:
                chunks.remove_folder(self.base, self.key)
        return self.outcomes

    def _batches(self, whole: list[int]) -> list[list[int]]:
        """The files parsed whole, in tasks: small ones (BATCH_MAX_BYTES) several to a task, in
        file order, at most BATCH_MAX_FILES or BATCH_MAX_BYTES each and at least BATCHES_PER_WORKER
        tasks per worker where there are files enough; a larger file alone."""
        small = [i for i in whole if self.sizes[i] <= BATCH_MAX_BYTES]
        per = max(1, min(BATCH_MAX_FILES, -(-len(small) // (self.pool.workers * BATCHES_PER_WORKER))))
        out: list[list[int]] = [[i] for i in whole if self.sizes[i] > BATCH_MAX_BYTES]
        batch: list[int] = []
        for i in small:
            if batch and (len(batch) == per or sum(self.sizes[j] for j in batch) + self.sizes[i] > BATCH_MAX_BYTES):
                out.append(batch)
                batch = []
            batch.append(i)
        return out + ([batch] if batch else [])

    def _whole(self, i: int) -> None:
        self.pool.submit(("file", i, None), parse_rank, str(self.files[i]), self.base, self.key, self.keep_python,
                         self.sharing)

    def _credit(self, i: int, amount: float) -> None:
        self.credited[i] += amount
        self.report(min(1.0, sum(self.credited) / sum(self.sizes)))

    def _name(self, tag) -> str:
        return self.files[tag[1]].name
