"""A job's manifest checked field by field when read: its types, counts and file paths.

A manifest must be an object with the fields `manifest` checks; its file paths must be exactly
where `job_layout.rank_file` puts them (so nothing outside the job directory is read). A problem is a
`Damage` naming the manifest and the field; `job_check.read_jobs` lists the job as damaged.
"""
from __future__ import annotations

import re
from typing import Any

from profiler.errors import Damage
from profiler.storage import job_layout, tables

# tables every manifest has (those of the first jobs); later tables may be missing from older jobs
REQUIRED = tables.IN_FIRST_JOBS
_RUN_ID = re.compile(r"[0-9a-f]{16}")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number")


def _field(doc: dict, name: str, kind: type | tuple, rel: str, where: str = "") -> Any:
    if name not in doc:
        raise Damage(rel, f"has no {where}{name!r}")
    value = doc[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise Damage(rel, f"{where}{name!r} is {_kind(value)}")
    return value


def _count(doc: dict, name: str, rel: str, where: str = "", low: int = 0, high: int = 2**62) -> int:
    value = _field(doc, name, int, rel, where)
    if not low <= value <= high:
        raise Damage(rel, f"{where}{name!r} is {value}, outside {low}..{high}")
    return value


def manifest(doc: Any, stem: str, rel: str) -> dict:
    """The manifest `doc`, checked and normalised: ranks sorted, ranks_present and ranks_missing
    (as [first, last] ranges) worked out from the ranks themselves."""
    if not isinstance(doc, dict):
        raise Damage(rel, f"is {_kind(doc)}, not an object")
    job = _field(doc, "job", str, rel)
    if not job.strip() or len(job) > job_layout.MAX_NAME_CHARS:
        raise Damage(rel, f"'job' is empty or longer than {job_layout.MAX_NAME_CHARS} characters")
    key = _field(doc, "key", str, rel)
    if key != stem:
        raise Damage(rel, "its key does not match its file name")
    world = _count(doc, "world_size", rel, low=1, high=job_layout.MAX_RANKS)
    backend = doc.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise Damage(rel, f"'backend' is {_kind(backend)}")
    listed = _field(doc, "ranks", list, rel)
    if not listed:
        raise Damage(rel, "lists no ranks")
    ranks = [_rank(r, key, world, rel) for r in listed]
    ranks.sort(key=lambda r: r["rank"])
    present = [r["rank"] for r in ranks]
    if len(set(present)) != len(present):
        raise Damage(rel, "lists a rank twice")
    skipped = doc.get("skipped", [])
    if not isinstance(skipped, list) or not all(isinstance(s, str) for s in skipped):
        raise Damage(rel, "'skipped' is not a list of text")
    added = doc.get("added_at")
    return {"job": job, "key": key, "world_size": world, "backend": backend, "ranks": ranks,
            "ranks_present": present, "ranks_missing": job_layout.missing_ranges(present, world),
            "skipped": skipped, "added_at": added if isinstance(added, str) else None}


def _rank(r: Any, key: str, world: int, rel: str) -> dict:
    if not isinstance(r, dict):
        raise Damage(rel, f"a rank is {_kind(r)}, not an object")
    rank = _count(r, "rank", rel, "a rank's ", high=world - 1)
    where = f"rank {rank}'s "
    rid = _field(r, "run_id", str, rel, where)
    if not _RUN_ID.fullmatch(rid):
        raise Damage(rel, f"{where}'run_id' is not 16 hex digits")
    files = _field(r, "files", dict, rel, where)
    for table in REQUIRED:
        if table not in files:
            raise Damage(rel, f"{where}files have no {table!r}")
    for table, path in files.items():
        if table not in job_layout.WRITTEN:
            raise Damage(rel, f"{where}files name an unknown table")
        if path != job_layout.rank_file("", table, key, rank, rid)[1:]:
            raise Damage(rel, f"{where}{table} file is not where this job's files are")
    digest, checked = r.get("metrics_digest", ""), r.get("completeness_digest", "")
    name = r.get("file", "")
    return {**r, "rank": rank, "run_id": rid, "files": dict(files),
            "file": name if isinstance(name, str) else str(name)[:200],
            "metrics_digest": digest if isinstance(digest, str) else "",
            "completeness_digest": checked if isinstance(checked, str) else "",
            "size_bytes": _count(r, "size_bytes", rel, where), "events": _count(r, "events", rel, where),
            "kernels": _count(r, "kernels", rel, where)}
