"""Hardening 3 (issue 39), archives: a zip's member count and total size are checked before any
member is extracted; a refused archive is one line, leaves nothing in the temporary directory or
beside the job directory, and the store's bytes as they were. Archives are made here: members of
zeros (which deflate a thousandfold), and members whose declared sizes are written into the zip's
central directory (a bomb's header, without writing gigabytes)."""
from __future__ import annotations

import io
import struct
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from profiler.storage import job_layout
from profiler.storage.jobs import jobs, unpack
from tests.crafted_jobs import rank_trace
from tests.test_security_jobs import _one_line, cli, snapshot


def _zeros(path: Path, members: int, size: int) -> Path:
    zeros = bytes(size)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("rank0.json", rank_trace(0, members))
        for i in range(1, members):
            zf.writestr(f"rank{i}.json", zeros)
    return path


def _declared(path: Path, members: int, declared: int) -> Path:
    """`members` small members whose central directory says each unpacks to `declared` bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for i in range(members):
            zf.writestr(f"rank{i}.json", rank_trace(i, members))
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at != -1:
        struct.pack_into("<I", data, at + 24, declared)  # the entry's uncompressed size
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    return path


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """The temporary directory the ingest unpacks into, empty, watched by the test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return folder


CASES = {
    "3000_members_of_1_MiB": (lambda p: _zeros(p, 3000, 1 << 20), "has 3,000 members (at most 2,048"),
    "100000_tiny_members": (lambda p: _zeros(p, 100_000, 1), "has 100,000 members (at most 2,048"),
    "400_members_declaring_100_MiB": (lambda p: _declared(p, 400, 100 << 20),
                                      "would unpack to 39.1 GiB in all (the limit is 32 GiB)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_archive_over_the_caps_is_refused_before_anything_is_extracted(tmp_path, private_tmp, case):
    make, reason = CASES[case]
    archive = make(tmp_path / "ranks.zip")
    db = tmp_path / "store" / "s.duckdb"
    db.parent.mkdir()
    (tmp_path / "seed.json").write_bytes(rank_trace(None))
    assert cli("ingest", str(tmp_path / "seed.json"), "--db", str(db))[0] == 0
    before = snapshot(tmp_path / "store", private_tmp)
    started = time.perf_counter()
    code, out, err, _ = cli("ingest", str(archive), "--job", "bomb", "--in-process", "--db", str(db))
    seconds = time.perf_counter() - started
    line = _one_line(err, tmp_path)
    assert code == 1 and line.startswith(f"error: ranks.zip: {reason}") and line.endswith("; nothing was extracted"), line
    assert seconds < 10, seconds
    assert snapshot(tmp_path / "store", private_tmp) == before, "nothing beside the job directory or in /tmp"


def test_an_uploaded_archive_over_the_caps_leaves_its_folder_as_it_was(tmp_path):
    """The upload page's path (profiler/present/ui/work.py): uploads saved, zips unpacked, in a folder
    of its own; the archive is refused before a member is written."""
    archive = _zeros(tmp_path / "ranks.zip", 3000, 1 << 20)
    upload = io.BytesIO(archive.read_bytes())
    upload.name = "ranks.zip"
    folder = tmp_path / "upload"
    folder.mkdir()
    with pytest.raises(jobs.JobError, match="has 3,000 members"):
        jobs.save_uploads([upload], folder)
    assert sorted(p.name for p in folder.rglob("*")) == ["ranks.zip", "unzipped"]
    assert not any((folder / "unzipped").iterdir())


def test_an_archive_larger_than_the_free_space_is_refused(tmp_path):
    archive = _declared(tmp_path / "ranks.zip", 2, 2**32 - 1)  # 8 GiB declared in all
    infos = zipfile.ZipFile(archive).infolist()
    free = unpack.shutil.disk_usage(tmp_path).free
    why = unpack.archive_refusal(infos, tmp_path)
    if free < 2 * (2**32 - 1):
        assert why is not None and "free" in why, why
    else:
        assert why is None  # within every cap, on a disk with room: the members' own checks follow
        assert unpack.refusal(infos[0]) is not None  # 4 GiB from a few bytes: its ratio refuses it


def test_a_killed_ingests_unpack_folder_is_removed_by_the_next(tmp_path, private_tmp):
    from profiler.storage.jobs import job_ingest

    dead = private_tmp / f"{job_ingest.UNPACK_PREFIX}999999999-abc"
    dead.mkdir()
    (dead / "rank0.json").write_bytes(b"{}")
    mine = private_tmp / f"{job_ingest.UNPACK_PREFIX}1-live"  # pid 1 is alive: not touched
    mine.mkdir()
    (tmp_path / "rank0.json").write_bytes(rank_trace(0, 1))
    code, _, err, _ = cli("ingest", str(tmp_path / "rank0.json"), "--job", "j", "--in-process",
                          "--db", str(tmp_path / "s.duckdb"))
    assert code == 0, err
    assert sorted(p.name for p in private_tmp.iterdir()) == [mine.name]
