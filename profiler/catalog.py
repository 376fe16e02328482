"""Edit the run catalog: rename and delete runs.

Each edit is one short transaction through ``Store.connect()``, so other sessions reading or
ingesting at the same time wait at most for that transaction. A run's id is its content hash and
never changes; only its display name can.
"""
from __future__ import annotations

from collections.abc import Iterable

from profiler.errors import StoreError, UnknownRunError

MAX_NAME_CHARS = 200
# every table keyed by trace_id; traces last so a run is never left half-described
RUN_TABLES = ("kernels", "memops", "launches", "ops", "iterations", "traces")


class RunNameError(StoreError):
    """A new run name that cannot be used; the message says why."""


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
        rows = con.execute("UPDATE traces SET name = $name WHERE trace_id = $id RETURNING trace_id",
                           {"name": cleaned, "id": run_id}).fetchall()
    if not rows:
        raise UnknownRunError(f"Run {run_id} is not in the store (it may have been deleted).")
    return cleaned


def delete_runs(store, run_ids: Iterable[str]) -> int:
    """Delete runs and all their rows in one transaction; returns how many runs were deleted."""
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
    return deleted


def _delete_rows(con, ids: list[str]) -> int:
    for table in RUN_TABLES[:-1]:
        con.execute(f"DELETE FROM {table} WHERE trace_id IN (SELECT unnest($ids))", {"ids": ids})
    return len(con.execute("DELETE FROM traces WHERE trace_id IN (SELECT unnest($ids)) "
                           "RETURNING trace_id", {"ids": ids}).fetchall())
