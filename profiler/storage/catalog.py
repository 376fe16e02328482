"""Edit the run catalog: rename and delete runs, and keep each run's original trace file.

Each edit is one short transaction through ``Store.connect()``, so other sessions reading or
ingesting at the same time wait at most for that transaction. A run's id is its content hash and
never changes; only its display name can. The original trace of a run (for Perfetto) is kept as
``<traces dir>/<run id>.json.gz``; the dashboard uses ``traces/`` next to the store file.
"""
from __future__ import annotations

import gzip
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from profiler.errors import RunNameError, UnknownRunError
from profiler.storage import tables

MAX_NAME_CHARS = 200
# every table keyed by run_id (tables.py) but the metrics, deleted apart; traces last so a run is
# never left half-described
RUN_TABLES = tuple(t.name for t in reversed(tables.TABLES) if t.kind != tables.METRICS)


def clean_name(name: str) -> str:
    """``name`` with surrounding whitespace removed; raises ``RunNameError`` when unusable."""
    cleaned = " ".join(str(name).split())
    if not cleaned:
        raise RunNameError("A run name cannot be empty.")
    if len(cleaned) > MAX_NAME_CHARS:
        raise RunNameError(f"A run name can have at most {MAX_NAME_CHARS} characters "
                           f"(this one has {len(cleaned)}).")
    return cleaned


def rename_run(store, run_id: str, name: str) -> str:
    """Give ``run_id`` a new display name; returns the name stored."""
    cleaned = clean_name(name)
    with store.connect() as con:
        rows = con.execute("UPDATE traces SET name = $name WHERE run_id = $id RETURNING run_id",
                           {"name": cleaned, "id": run_id}).fetchall()
    if not rows:
        raise UnknownRunError(f"Run {run_id} is not in the store (it may have been deleted).")
    return cleaned


def delete_runs(store, run_ids: Iterable[str], traces_dir: Path | None = None) -> int:
    """Delete runs, all their rows (one transaction) and their kept trace files; returns how
    many runs were deleted."""
    ids = list(dict.fromkeys(str(r) for r in run_ids))
    if not ids:
        return 0
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            deleted = _delete_rows(con, ids)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    for run_id in ids if traces_dir is not None else ():
        (Path(traces_dir) / f"{run_id}.json.gz").unlink(missing_ok=True)
    return deleted


def _delete_rows(con, ids: list[str]) -> int:
    for table in RUN_TABLES[:-1]:
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest($ids))", {"ids": ids})
    con.execute(f"DELETE FROM {tables.METRICS_TABLE} WHERE run_id IN (SELECT unnest($ids))", {"ids": ids})
    return len(con.execute("DELETE FROM traces WHERE run_id IN (SELECT unnest($ids)) "
                           "RETURNING run_id", {"ids": ids}).fetchall())


def trace_path(traces_dir: Path, run_id: str) -> Path | None:
    """The kept original trace of ``run_id``, or None when there is none."""
    path = Path(traces_dir) / f"{run_id}.json.gz"
    return path if path.is_file() else None


def keep_trace(src: BinaryIO, traces_dir: Path, run_id: str) -> Path:
    """Keep an uploaded trace (binary file-like, plain JSON or gzip) as ``<run id>.json.gz``;
    plain JSON is gzipped at level 1 (fast). An existing copy is left as it is."""
    target = Path(traces_dir) / f"{run_id}.json.gz"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{run_id}.{threading.get_ident()}.part")
    src.seek(0)
    gzipped = src.read(2) == b"\x1f\x8b"
    src.seek(0)
    with (open(partial, "wb") if gzipped else gzip.open(partial, "wb", compresslevel=1)) as out:
        shutil.copyfileobj(src, out, 8 << 20)
    partial.replace(target)  # atomic: nobody sees a half-written trace
    return target


def adopt_trace(path: Path, traces_dir: Path, run_id: str) -> Path:
    """Move a captured trace file (already ``.json.gz``) to ``<run id>.json.gz``."""
    target = Path(traces_dir) / f"{run_id}.json.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    Path(path).replace(target)
    return target
