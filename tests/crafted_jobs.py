"""Crafted jobs for the security suite (tests/test_security_jobs.py, tests/pages/test_security_jobs_pages.py),
generated on demand (none is checked in): rank traces, the ways a stored job can be damaged (each a
function of the job directory and the job's key, with the text its reason must hold), job names the
old keys confused, and absurd numbers in a rank's header or timestamps.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.crafted import kineto_trace


def rank_trace(rank: int | None, world: int | None = None, events: int = 30, *, ts: str | None = None) -> bytes:
    """A small trace of `events` events; `rank`/`world` in its distributedInfo (none when rank is
    None); `ts`: the text of its second event's timestamp, after a first one in epoch microseconds
    with decimals (so that timestamps are read exactly, from their text)."""
    body = kineto_trace(events, name_prefix=f"r{rank}_k")
    if ts is not None:
        body = body.replace(b'"ts":1000,', b'"ts":1712186298123456.789,', 1)
        body = body.replace(b'"ts":1001,', b'"ts":' + ts.encode() + b",", 1)
    if rank is None:
        return body
    info = json.dumps({"distributedInfo": {"rank": rank, "world_size": world, "backend": "nccl"}})
    return info[:-1].encode() + b", " + body[1:]


def write_ranks(folder: Path, ranks: dict[str, bytes]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in ranks.items():
        (folder / name).write_bytes(data)
    return [folder / name for name in ranks]


# --- damage to a stored job ------------------------------------------------------------------------

def _manifest(root: Path, key: str) -> Path:
    return root / "manifests" / f"{key}.json"


def _write(data: bytes) -> Callable:
    return lambda root, key: _manifest(root, key).write_bytes(data)


def _edit(change: Callable[[dict], None]) -> Callable:
    def damage(root: Path, key: str) -> None:
        doc = json.loads(_manifest(root, key).read_text())
        change(doc)
        _manifest(root, key).write_text(json.dumps(doc))
    return damage


def _cut(root: Path, key: str) -> None:
    text = _manifest(root, key).read_bytes()
    _manifest(root, key).write_bytes(text[: len(text) // 2])


def _folder_for_manifest(root: Path, key: str) -> None:
    _manifest(root, key).unlink()
    _manifest(root, key).mkdir()


def rank_path(root: Path, key: str, rank: int, table: str) -> Path:
    doc = json.loads(_manifest(root, key).read_text())
    return root / next(r for r in doc["ranks"] if r["rank"] == rank)["files"][table]


def _file(change: Callable[[Path, Path], None], table: str = "kernels") -> Callable:
    """A damage to rank 1's `table` file: change(that file, rank 0's file of the same table)."""
    return lambda root, key: change(rank_path(root, key, 1, table), rank_path(root, key, 0, table))


def _replace_with_folder(path: Path, _other: Path) -> None:
    path.unlink()
    path.mkdir()


def _wrong_table(root: Path, key: str) -> None:
    shutil.copyfile(rank_path(root, key, 1, "ops"), rank_path(root, key, 1, "kernels"))


# name -> (damage(root, key), text the job's reason holds)
MANIFEST_DAMAGE: dict[str, tuple[Callable, str]] = {
    "not_json": (_write(b"{not json"), "is not JSON"),
    "empty_file": (_write(b""), "is not JSON"),
    "null": (_write(b"null"), "is null, not an object"),
    "a_list": (_write(b"[1, 2]"), "is a list, not an object"),
    "cut_short": (_cut, "is not JSON"),
    "deep_nesting": (_write(b"[" * 100_000 + b"]" * 100_000), "is not JSON"),
    "ranks_a_number": (_edit(lambda d: d.update(ranks=3)), "'ranks' is a number"),
    "files_a_number": (_edit(lambda d: d["ranks"][0].update(files=7)), "'files' is a number"),
    "rank_is_text": (_edit(lambda d: d["ranks"][0].update(rank="0")), "'rank' is text"),
    "no_job": (_edit(lambda d: d.pop("job")), "has no 'job'"),
    "world_size_2e9": (_edit(lambda d: d.update(world_size=2_000_000_000)), "'world_size' is 2000000000"),
    "rank_beyond_world": (_edit(lambda d: d["ranks"][1].update(rank=99)), "'rank' is 99"),
    "file_outside": (_edit(lambda d: d["ranks"][0]["files"].update(kernels="../../../etc/passwd")),
                     "kernels file is not where this job's files are"),
    "run_id_sql": (_edit(lambda d: d["ranks"][0].update(run_id="x' OR '1'='1")), "is not 16 hex digits"),
    "rank_twice": (_edit(lambda d: d["ranks"].append(d["ranks"][0])), "lists a rank twice"),
    "key_of_another": (_edit(lambda d: d.update(key="good")), "its key does not match its file name"),
    "manifest_a_folder": (_folder_for_manifest, "is not a file"),
}
RANK_FILE_DAMAGE: dict[str, tuple[Callable, str]] = {
    "deleted": (_file(lambda path, _: path.unlink()), "is missing (rank 1's kernels)"),
    "wrong_table": (_wrong_table, "does not have the columns of its table"),
    "other_ranks_rows": (_file(lambda path, other: shutil.copyfile(other, path)), "holds rows of another run"),
    "not_parquet": (_file(lambda path, _: path.write_bytes(b"PAR1 garbage PAR1")), "is not a readable Parquet file"),
    "cut_short": (_file(lambda path, _: path.write_bytes(path.read_bytes()[:200])), "is not a readable Parquet file"),
    "a_folder": (_file(_replace_with_folder), "is missing (rank 1's kernels)"),
    "traces_deleted": (_file(lambda path, _: path.unlink(), "traces"), "is missing (rank 1's traces)"),
}


# --- names --------------------------------------------------------------------------------------------

def _sha16(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


# pairs of distinct job names that the old keys (characters outside [A-Za-z0-9._-] dropped, cut
# at 120) made one folder
COLLIDING_NAMES: list[tuple[str, str]] = [
    ("team/a", "team_a"),
    ("中文名字作业", "日本語ジョブ"),
    ("a b", "a  b"),
    ("x" * 120 + "1", "x" * 120 + "2"),
    ("team/a", f"team_a--{_sha16('team/a')}"),  # a plain name shaped like the hashed key of another
    ("..", "__"),
]


# --- absurd numbers ---------------------------------------------------------------------------------

# file name -> (its bytes, text of the one line that refuses it)
ABSURD_RANKS: dict[str, tuple[bytes, str]] = {
    "world_2e8.json": (rank_trace(0, 200_000_000), "says its world size is 200000000"),
    "world_2e9.json": (rank_trace(0, 2_000_000_000), "says its world size is 2000000000"),
    "world_1e7.json": (rank_trace(3, 10_000_000), "says its world size is 10000000"),
    "rank_2e9.json": (rank_trace(2_000_000_000), "says it is rank 2000000000"),
    "rank_negative.json": (rank_trace(-1, 8), "says it is rank -1"),
    "rank_beyond_world.json": (rank_trace(9, 8), "says it is rank 9 of a world of 8"),
    "trace_rank99999999999.json": (rank_trace(None), "says it is rank 99999999999"),
    "rank" + "9" * 200 + ".json": (rank_trace(None), "says it is rank 1000000000000000000"),
}
# file name -> (its bytes, the note its rank is ingested with): timestamps whose text is valid JSON
# but no time (Decimal overflow, a million-digit exponent)
ABSURD_TIMESTAMPS: dict[str, tuple[bytes, str]] = {
    "ts_1e999999.json": (rank_trace(1, 4, ts="1e999999"), "1 event skipped: start time missing or out of range"),
    "ts_exponent_million_digits.json": (rank_trace(2, 4, ts="1e" + "9" * 1_000_000),
                                        "1 event skipped: start time missing or out of range"),
    "ts_1e400000_decimal.json": (rank_trace(3, 4, ts="1.5e400000"),
                                 "1 event skipped: start time missing or out of range"),
}
