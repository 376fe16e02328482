"""Where a store's jobs live and how their files are laid out.

A job (the rank traces of one distributed run) is kept as Parquet under the job directory, one
file per table and rank, and a manifest that commits it:

    <root>/<table>/job=<key>/rank=<rank>/<run id>.parquet     table: traces, iterations, kernels, ...
    <root>/manifests/<key>.json                                the job: ranks, files, missing ranges

The store's reads use this layout to check and attach committed jobs (`job_check`, `job_views`);
the jobs wing (profiler/storage/jobs/) writes by it.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from profiler.storage import tables
from profiler.storage.session import StoreHandle

if TYPE_CHECKING:  # pyarrow loads only where job files are read or written
    import pyarrow.fs as pafs

JOB_ROOT_ENV = "PROFILER_JOBS"
TABLES = tables.PARSED_TABLES  # a rank's tables from its trace (tables.py)
# the metrics layer's per-iteration rows of each rank (sql/metrics.sql), computed at ingest like a
# single upload's; a rank computed under another definition is recomputed when read (job_views.py)
METRICS_TABLE = tables.METRICS_TABLE
# the completeness verdict's rows of each rank (storage/sql/completeness.sql), checked at ingest like
# a single upload's; a rank checked under another definition (or before ranks kept them) is checked
# again when read (completeness.read finds no `checked` row for it)
VERDICT_TABLE = tables.VERDICT_TABLE
WRITTEN = TABLES + (METRICS_TABLE, VERDICT_TABLE)
MAX_NAME_CHARS = 200
MAX_RANKS = 1 << 20  # a rank or world size at or beyond this is not believed (a file saying so is refused)
OLD_RUN_ID = "trace_id"  # the run id column's name in rank files written before schema version 4


def job_root(store: StoreHandle) -> str:
    """$PROFILER_JOBS if set, else `<store file stem>-jobs/` beside the store file."""
    named = os.environ.get(JOB_ROOT_ENV)
    if named:
        return named
    path = Path(store.path)
    return str(path.with_name(f"{path.stem}-jobs").resolve())


def filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem of `root` and the root's path within it (plain paths are local)."""
    import pyarrow.fs as pafs  # pyarrow loads only where job files are read or written

    if "://" in root:
        return pafs.FileSystem.from_uri(root)
    return pafs.LocalFileSystem(), os.path.abspath(root)

def rank_file(root: str, table: str, key: str, rank: int, rid: str) -> str:
    return f"{root}/{table}/job={key}/rank={rank}/{rid}.parquet"

def missing_ranges(present: Iterable[int], world: int) -> list[list[int]]:
    """The ranks below `world` not in `present`, as [first, last] ranges (never one entry per rank)."""
    out, expected = [], 0
    for rank in sorted(set(present)):
        if rank > expected:
            out.append([expected, rank - 1])
        expected = rank + 1
    if expected < world:
        out.append([expected, world - 1])
    return out

def manifest_path(root: str, key: str) -> str:
    return f"{root}/manifests/{key}.json"


def has_manifests(root: str) -> bool:
    """False when `root` is a local directory without a committed job (nothing to read; no pyarrow)."""
    if "://" in root:
        return True
    try:
        return any(n.endswith(".json") for n in os.listdir(os.path.join(os.path.abspath(root), "manifests")))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True  # job_check.read_jobs says what is wrong
