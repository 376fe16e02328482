"""Hardening 3 (issue 39), concurrent writers: two ingests of one job name at once (the first on
Ray, as the command line does by default) no longer both say they stored the job while only one
remains: the second is refused in one line while the first runs, and the first's ranks are all
stored. Real processes, a real store and job directory."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.crafted_jobs import rank_trace, write_ranks

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, **kw) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PROFILER_JOBS"}
    return subprocess.Popen([sys.executable, "-m", "profiler", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A real local Ray cluster of 2 CPUs, started as the command line starts it, from a $TMPDIR
    too long for the sockets Ray makes under it (where Ray had refused to start: 'AF_UNIX path
    length cannot exceed 107 bytes')."""
    import ray

    from profiler.storage.jobs import engines, jobs

    long_tmp = str(tmp_path_factory.mktemp("t" * 60))
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = long_tmp
    try:
        assert len(os.path.join(long_tmp, "ray")) + engines.RAY_SOCKET_SUFFIX_BYTES > engines.AF_UNIX_PATH_BYTES
        engines.start_ray(workers=2)
    except jobs.JobError as e:  # Ray's own fixed waits (its node 30 s, the raylet ~15 s for its agent) ran out
        pytest.fail(f"{e} (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", pytrace=False)
    finally:
        os.environ.pop("TMPDIR") if saved is None else os.environ.__setitem__("TMPDIR", saved)
    assert ray.is_initialized() and ray.cluster_resources()["CPU"] == 2
    yield ray
    ray.shutdown()


def test_rays_folder_is_short_enough_for_its_sockets(monkeypatch):
    from profiler.storage.jobs import engines

    monkeypatch.delenv("RAY_TMPDIR", raising=False)
    monkeypatch.setenv("TMPDIR", "/tmp")
    assert engines.local_temp_dir() is None  # Ray's own default, /tmp/ray
    monkeypatch.setenv("TMPDIR", "/tmp/" + "t" * 40)
    assert engines.local_temp_dir() == f"/tmp/ray-{os.getuid()}"
    monkeypatch.setenv("RAY_TMPDIR", "/tmp")  # Ray reads RAY_TMPDIR before TMPDIR
    assert engines.local_temp_dir() is None


@pytest.mark.slow  # two ingests in processes of their own, at once
@pytest.mark.parametrize("engine", ["in-process", "ray"])
def test_two_ingests_of_one_job_name_at_once_one_is_refused(tmp_path, monkeypatch, request, engine):
    """The first runs here (in a thread, held at its first progress report until the second has
    answered); the second is the command line, in its own process."""
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    from profiler.storage.jobs import job_ingest
    from profiler.storage.store import Store

    monkeypatch.delenv("PROFILER_JOBS", raising=False)
    db = tmp_path / "s.duckdb"
    first = write_ranks(tmp_path / "a", {f"rank{r}.json": rank_trace(r, 8, 2000) for r in range(0, 8, 2)})
    second = write_ranks(tmp_path / "b", {f"rank{r}.json": rank_trace(r, 8, 2000) for r in range(1, 8, 2)})
    claim = tmp_path / ".s-jobs.ingesting-dup"
    outcome: list = []
    answered = threading.Event()
    one = threading.Thread(target=lambda: outcome.append(job_ingest.ingest_job(
        Store(db), first, "dup", engine=engine, workers=2, progress=lambda _: answered.wait(120))))
    one.start()
    try:
        assert _wait_for(lambda: claim.is_dir() or not one.is_alive(), 120), "the first never claimed the name"
        two = _cli("ingest", *map(str, second), "--job", "dup", "--in-process", "--db", str(db))
        out, err = two.communicate(timeout=120)
        assert two.returncode == 1 and out == b"", err
        lines = err.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: job 'dup' is being ingested by another process"), err
        assert f"process {os.getpid()}" in lines[0]
    finally:
        answered.set()
        one.join(300)
    assert outcome and outcome[0].ranks_present == [0, 2, 4, 6] and outcome[0].engine == engine
    assert not claim.exists()
    done = subprocess.run([sys.executable, "-m", "profiler", "job", "dup", "--json", "--db", str(db)], cwd=ROOT,
                          capture_output=True, timeout=120)
    assert json.loads(done.stdout)["ranks_present"] == [0, 2, 4, 6]
    again = subprocess.run([sys.executable, "-m", "profiler", "ingest", *map(str, second), "--job", "dup",
                            "--in-process", "--db", str(db)], cwd=ROOT, capture_output=True, timeout=120)
    assert again.returncode == 1 and b"is already in the store" in again.stderr  # after: serialised, refused


@pytest.mark.slow  # the ingest in a fresh process
def test_a_killed_ingests_claim_is_taken_over(tmp_path):
    import socket

    claim = tmp_path / ".s-jobs.ingesting-dup"
    claim.mkdir()
    (claim / "owner").write_text(f"{socket.gethostname()}-999999999")  # a process that is gone
    files = write_ranks(tmp_path / "a", {"rank0.json": rank_trace(0, 1)})
    done = subprocess.run([sys.executable, "-m", "profiler", "ingest", *map(str, files), "--job", "dup",
                           "--in-process", "--db", str(tmp_path / "s.duckdb")], cwd=ROOT, capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert not claim.exists()
