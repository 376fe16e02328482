"""Security and robustness of jobs (issue 22, classes 4-6 and two of 8), with inputs made by
tests/crafted_jobs.py: a damaged job is listed with its file and reason and left out while
everything else reads; job names never share a folder and delete removes only the named job;
rank files of before schema version 4, and of the wrong table, are read or refused by their
schema; absurd ranks and timestamps are one line; a refused or killed job ingest leaves the job
directory and the store byte-identical. Commands run through the command line's own `main`
(`cli`), each case within 5 s; memory is measured in a child process."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profiler.analysis.findings import job_queries
from profiler.cli.main import main
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest, jobs
from profiler.storage.store import Store
from tests.crafted import kineto_trace
from tests.crafted_jobs import (ABSURD_RANKS, ABSURD_TIMESTAMPS, COLLIDING_NAMES, MANIFEST_DAMAGE,
                                RANK_FILE_DAMAGE, rank_trace, write_ranks)
from tests.test_security_cli import PROBE, ROOT

DAMAGE = {**{f"manifest-{k}": v for k, v in MANIFEST_DAMAGE.items()},
          **{f"file-{k}": v for k, v in RANK_FILE_DAMAGE.items()}}


PROGRESS = re.compile(r"^job .*\[[#-]+\] +[\d.]+%$")
TIMES: list[float] = []  # seconds of each command of the running test (reset per test)
HANG_S = 30  # a guard against a command that hangs on damage, not a speed target (bench/ times those):
             # on a loaded 2-core CI machine a damaged job's command took 5.1 s


def cli(*args: str) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, seconds) of `python -m profiler ARGS`, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    TIMES.append(time.perf_counter() - started)
    return code, out.getvalue(), err.getvalue(), TIMES[-1]


def snapshot(*paths: Path) -> dict[str, str]:
    """Every file and folder under `paths`: its path and its bytes' hash ('dir' for folders)."""
    seen = {}
    for top in paths:
        for p in [top, *sorted(top.rglob("*"))] if top.is_dir() else [top] if top.exists() else []:
            seen[str(p)] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return seen


def _one_line(text: str, tmp: Path) -> str:
    """The one line of `text` (the progress bar's lines aside); no server path, no traceback."""
    lines = [line for line in text.splitlines() if line.strip() and not PROGRESS.match(line)]
    assert len(lines) == 1, text
    assert str(tmp) not in text and "Traceback" not in text, text
    return lines[0]


@pytest.fixture(autouse=True)
def _default_job_root(monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    TIMES.clear()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict]:
    """A store with two plain runs and two jobs of two ranks, 'good' and 'bad' (built once)."""
    folder = tmp_path_factory.mktemp("template")
    store = Store(folder / "s.duckdb")
    ids = {"plain": store.ingest(kineto_trace(30), "plain.json").run_id,
           "plain2": store.ingest(kineto_trace(60), "plain2.json").run_id}
    for job, world in (("good", 2), ("bad", 4)):
        files = write_ranks(folder / job, {f"{job}{r}.json": rank_trace(r, world, 30 + 3 * r) for r in range(2)})
        job_ingest.ingest_job(store, files, job, engine="in-process")
    return folder, ids


@pytest.fixture
def stored(template, tmp_path) -> tuple[Path, Path, dict]:
    """A private copy of the template: (store file, job directory, run ids)."""
    folder, ids = template
    shutil.copyfile(folder / "s.duckdb", tmp_path / "s.duckdb")
    shutil.copytree(folder / "s-jobs", tmp_path / "s-jobs")
    return tmp_path / "s.duckdb", tmp_path / "s-jobs", ids


# --- class 4: one damaged job does not take the store down --------------------------------------------

@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_job_is_listed_with_its_reason_and_everything_else_reads(stored, tmp_path, case):
    db, root, ids = stored
    damage, reason = DAMAGE[case]
    damage(root, "bad")
    before = snapshot(root)
    code, out, err, _ = cli("summary", "--db", str(db), "--json")
    assert code == 0, err
    names = sorted(r["name"] for r in json.loads(out))
    assert names == ["good0.json", "good1.json", "plain.json", "plain2.json"]
    assert cli("compare", ids["plain"], ids["plain2"], "--db", str(db))[0] == 0  # its time is its own (it
    assert cli("ops", ids["plain"], "--db", str(db))[0] == 0                     # keeps results per run)
    del TIMES[1:]
    code, out, err, _ = cli("job", "good", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["ranks_present"] == [0, 1], err
    code, out, err, _ = cli("job", "bad", "--db", str(db))
    line = _one_line(err, tmp_path)
    assert code == 2 and out == "" and line.startswith("error: job 'bad': ") and reason in line, line
    listed = job_queries.job_list(Store(db))
    assert listed["job"].tolist() == ["good", "bad"] and listed["damaged"].tolist()[0] == ""
    assert reason in listed["damaged"].tolist()[1]
    assert snapshot(root) == before, "reading a job directory never writes it"
    assert max(TIMES) < HANG_S, TIMES
    code, out, err, _ = cli("job", "bad", "--db", str(db), "--delete")  # a damaged job can be removed
    assert code == 0, err
    assert job_queries.job_list(Store(db))["job"].tolist() == ["good"]
    assert not any("job=bad" in p for p in snapshot(root))


def test_a_manifests_path_that_is_a_file_leaves_the_runs_readable(stored, tmp_path):
    db, root, ids = stored
    shutil.rmtree(root / "manifests")
    (root / "manifests").write_text("not a folder")
    code, out, err, seconds = cli("summary", "--db", str(db), "--json")
    assert code == 0 and sorted(r["name"] for r in json.loads(out)) == ["plain.json", "plain2.json"], err
    code, out, err, _ = cli("job", "good", "--db", str(db))
    line = _one_line(err, tmp_path)
    assert code == 2 and "manifests: cannot be listed" in line, line
    assert job_queries.job_list(Store(db))["damaged"].str.startswith("manifests: cannot be listed").all()
    assert seconds < HANG_S
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, 1)})
    before = snapshot(tmp_path)
    code, out, err, _ = cli("ingest", *map(str, files), "--job", "new", "--in-process", "--db", str(db))
    line = _one_line(err, tmp_path)
    assert code == 1 and "cannot be stored: the job directory's manifests: cannot be listed" in line, line
    assert snapshot(tmp_path) == before


# --- class 5: silent loss ---------------------------------------------------------------------------

@pytest.mark.parametrize("pair", COLLIDING_NAMES, ids=lambda p: f"{p[0][:12]}|{p[1][:12]}")
def test_names_that_shared_a_key_are_two_jobs_and_delete_takes_only_one(tmp_path, pair):
    first, second = pair
    db = tmp_path / "s.duckdb"
    for i, name in enumerate(pair):
        files = write_ranks(tmp_path / f"in{i}", {f"rank{i}.json": rank_trace(i, 2, 30 + i)})
        code, out, err, seconds = cli("ingest", *map(str, files), "--job", name, "--in-process", "--db", str(db))
        assert code == 0 and seconds < HANG_S, err
    assert sorted(job_queries.job_list(Store(db))["job"]) == sorted(pair)
    assert len({jobs.job_key(first), jobs.job_key(second)}) == 2
    kept = {p: h for p, h in snapshot(tmp_path / "s-jobs").items() if f"/job={jobs.job_key(first)}/" in p + "/"}
    assert len(kept) > 9
    assert cli("job", second, "--delete", "--db", str(db))[0] == 0
    assert job_queries.job_list(Store(db))["job"].tolist() == [first]
    assert {p: h for p, h in snapshot(tmp_path / "s-jobs").items() if f"/job={jobs.job_key(first)}/" in p + "/"} == kept
    assert job_queries.job_report(Store(db), first)["ranks_present"] == [0]


def _old_job_key(name: str) -> str:
    """The keys of the jobs stored before: characters outside [A-Za-z0-9._-] made '_', cut at 120."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "_", " ".join(name.split()))[:120]


def test_a_job_stored_under_an_old_key_is_neither_shadowed_nor_deleted_by_another_name(tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, 1)})
    monkeypatch.setattr(jobs, "job_key", _old_job_key)
    job_ingest.ingest_job(Store(db), files, "team/a", engine="in-process")  # as the program before stored it
    monkeypatch.undo()
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    assert (tmp_path / "s-jobs" / "manifests" / "team_a.json").is_file()
    before = snapshot(tmp_path / "s-jobs", db)
    code, _, err, _ = cli("ingest", *map(str, files), "--job", "team_a", "--in-process", "--db", str(db))
    assert code == 1 and "its folder name 'team_a' is taken" in _one_line(err, tmp_path)
    code, _, err, _ = cli("job", "team_a", "--delete", "--db", str(db))
    assert code == 2 and "'team_a' is not in the store" in _one_line(err, tmp_path)
    assert snapshot(tmp_path / "s-jobs", db) == before
    assert job_queries.job_report(Store(db), "team/a")["ranks_present"] == [0]
    assert cli("job", "team/a", "--delete", "--db", str(db))[0] == 0
    assert job_queries.job_list(Store(db)).empty


def as_schema_v3(root: Path) -> int:
    """Rewrite the job's rank files as the program before schema version 4 wrote them (the run id
    column called trace_id; the metrics rows kept run_id). Returns how many files changed."""
    changed = 0
    for path in root.rglob("*.parquet"):
        if path.parts[-4] in (job_layout.METRICS_TABLE, job_layout.VERDICT_TABLE):   # neither was written then
            continue
        table = pq.read_table(path)
        pq.write_table(table.rename_columns([job_layout.OLD_RUN_ID if n == "run_id" else n for n in table.column_names]),
                       path)
        changed += 1
    return changed


def test_rank_files_written_before_schema_version_4_read_as_before(stored):
    db, root, _ = stored
    want = job_queries.job_report(Store(db), "good")
    assert as_schema_v3(root) == 2 * 2 * len(job_layout.TABLES)
    got = job_queries.job_report(Store(db), "good")
    assert got == want and len(got["iterations"]) == 2
    runs = Store(db).query("SELECT name, run_id FROM traces ORDER BY name")
    assert runs["run_id"].notna().all() and len(runs) == 6


def test_an_old_store_holding_a_job_summarises_after_the_upgrade(tmp_path, monkeypatch):
    """issue 22, class 8: a v3 store with a job; `summary` after the upgrade failed on NULL run ids."""
    from tests.test_run_id_migration import OLD_SCHEMAS, _old_store

    new = Store(tmp_path / "new.duckdb")
    new.ingest(kineto_trace(30), "plain.json")
    files = write_ranks(tmp_path / "in", {f"rank{r}.json": rank_trace(r, 2, 30 + r) for r in range(2)})
    job_ingest.ingest_job(new, files, "old job", engine="in-process")
    old = tmp_path / "old.duckdb"
    _old_store(old, new.path, OLD_SCHEMAS[0])
    shutil.move(tmp_path / "new-jobs", tmp_path / "old-jobs")
    as_schema_v3(tmp_path / "old-jobs")
    (tmp_path / "upgrade.json").write_bytes(kineto_trace(90))
    code, out, err, seconds = cli("ingest", str(tmp_path / "upgrade.json"), "--db", str(old))  # upgrades it
    assert code == 0, err
    code, out, err, seconds = cli("summary", "--db", str(old))
    assert code == 0 and err == "", err
    assert sum("rank" in line for line in out.splitlines()) == 2
    code, out, err, _ = cli("summary", "--db", str(old), "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["rank0.json"]["iterations"] == 1 and rows["rank1.json"]["run_id"]
    assert job_queries.job_report(Store(old), "old job")["ranks_present"] == [0, 1] and seconds < HANG_S


# --- class 6 and 8: absurd numbers, refusals and kills ------------------------------------------------

@pytest.mark.parametrize("name", sorted(ABSURD_RANKS), ids=lambda n: n[:30])
def test_an_absurd_rank_or_world_size_is_one_line_and_nothing_changes(stored, tmp_path, name):
    db, root, _ = stored
    data, expected = ABSURD_RANKS[name]
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, 2), name: data})
    before = snapshot(tmp_path)
    code, out, err, seconds = cli("ingest", *map(str, files), "--job", "absurd", "--in-process", "--db", str(db))
    line = _one_line(err, tmp_path)
    assert code == 1 and out == "" and expected in line and name[:40] in line, line
    assert snapshot(tmp_path) == before and seconds < HANG_S
    code, out, err, seconds = cli("ingest", *map(str, files), "--job", "absurd", "--in-process", "--skip-bad",
                                  "--db", str(db))
    assert code == 0 and f"SKIPPED {name}" in out and expected in out and seconds < HANG_S, err


@pytest.mark.parametrize("name", sorted(ABSURD_TIMESTAMPS))
def test_an_absurd_timestamp_is_skipped_and_said(stored, tmp_path, name):
    """A timestamp that overflowed Decimal was a traceback; one with a million-digit exponent took
    58 s to refuse. Now the event is skipped, and the rank's line says so."""
    db, _, _ = stored
    data, note = ABSURD_TIMESTAMPS[name]
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, 4), name: data})
    code, out, err, seconds = cli("ingest", *map(str, files), "--job", "times", "--in-process", "--db", str(db))
    assert code == 0 and "2 of 4 ranks stored" in out and seconds < HANG_S, err
    assert f"  {name}\n          note: {note}\n" in out, out


def _probe(*args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """The command line in a child process: its result, seconds and peak memory in MB."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds, peak_kb = done.stderr.split("probe")[1].split()
    return done, float(seconds), int(peak_kb) / 1024


@pytest.mark.slow  # a subprocess
@pytest.mark.parametrize("world", [1_000_000, 2_000_000_000])
def test_a_vast_world_is_bounded_in_time_memory_and_text(stored, tmp_path, world):
    db, _, _ = stored
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, world), "rank7.json": rank_trace(7, world)})
    done, seconds, peak_mb = _probe("ingest", *map(str, files), "--job", "vast", "--in-process", "--db", str(db))
    assert "Traceback" not in done.stderr and seconds < HANG_S and peak_mb < 1024, (done.stderr, seconds, peak_mb)
    if world > job_layout.MAX_RANKS:
        assert done.returncode == 1 and "says its world size is 2000000000" in done.stderr
        return
    assert done.returncode == 0 and f"missing: 1-6, 8-{world - 1};" in done.stdout
    report = job_queries.job_report(Store(db), "vast")
    assert report["ranks_missing"] == [[1, 6], [8, world - 1]]
    assert len(json.dumps(report)) < 10_000


@pytest.mark.slow  # a subprocess
def test_a_refused_job_leaves_store_and_job_folder_byte_identical(stored, tmp_path):
    """A bad file in a job: one line, exit 1 (the documented status of a failed ingest), nothing
    written anywhere, not even the staging folder; a subprocess, as a user runs it."""
    db, root, _ = stored
    good = rank_trace(0, 2, 3000)
    files = write_ranks(tmp_path / "in", {"rank0.json": good, "rank1.json": good[: len(good) // 2]})
    before = snapshot(tmp_path)
    done = subprocess.run([sys.executable, "-m", "profiler", "ingest", *map(str, files), "--job", "cut",
                           "--in-process", "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = _one_line(done.stderr, tmp_path)
    assert done.returncode == 1 and "rank1.json: is truncated" in line, line
    assert snapshot(tmp_path) == before


def _glob(folder: Path, pattern: str) -> list[Path]:
    """The paths matching now; a folder the ingest removes while the scan is inside it matches nothing."""
    try:
        return list(folder.glob(pattern))
    except FileNotFoundError:
        return []


@pytest.fixture(scope="module")
def big_ranks(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("big")
    return write_ranks(folder, {f"rank{r}.json": rank_trace(r, 4, 60_000 + r) for r in range(4)})


@pytest.mark.slow  # a subprocess
def test_kill_9_mid_job_ingest_leaves_store_and_job_folder_as_they_were(stored, big_ranks):
    db, root, _ = stored
    args = [sys.executable, "-m", "profiler", "ingest", *map(str, big_ranks), "--job", "big", "--in-process",
            "--db", str(db)]
    started = time.monotonic()
    timing = subprocess.run([*args[:-1], str(db.with_name("timing.duckdb"))], cwd=ROOT, capture_output=True,
                            timeout=300)
    full = time.monotonic() - started
    assert timing.returncode == 0, timing.stderr
    before = snapshot(root, db)
    n_runs = Store(db, read_only=True).query("SELECT count(*) AS n FROM traces")["n"][0]
    staged = lambda: _glob(db.parent, ".s-jobs.staging-*/*/job=big/rank=*/*.parquet")  # noqa: E731
    triggers = {  # kill when the staging folder appears, when its first and its third rank's files do
        "staging": lambda: _glob(db.parent, ".s-jobs.staging-*"),
        "first rank written": lambda: staged(),
        "third rank written": lambda: len({p.parent.name for p in staged()}) >= 3,
        0.9: None,
    }
    landed, leftovers = 0, []
    scratch = db.parent / "tmp"  # what a killed ingest leaves in its temporary folder stays in the test's
    scratch.mkdir()
    for when, ready in triggers.items():
        child = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env={**os.environ, "TMPDIR": str(scratch)})
        deadline = time.monotonic() + 120
        if ready is None:
            time.sleep(when * full)
        else:
            while not ready() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        if snapshot(root, db) != before:  # it committed just before the kill: the job is whole
            assert when == 0.9 and job_queries.job_report(Store(db, read_only=True), "big")["ranks_present"] == [
                0, 1, 2, 3]
            assert cli("job", "big", "--delete", "--db", str(db))[0] == 0
            # the job's summary (kept in the store after the commit) went with it: the job folder is
            # as it was byte for byte, the store holds the same rows (its file was written)
            assert snapshot(root) == {k: v for k, v in before.items() if k != str(db)}, f"kill at {when}"
            assert Store(db, read_only=True).query("SELECT count(*) AS n FROM job_summaries")["n"][0] == 0
            assert Store(db, read_only=True).query("SELECT count(*) AS n FROM traces")["n"][0] == n_runs
            before = snapshot(root, db)
        else:
            landed += child.returncode == -signal.SIGKILL
            if ready is not None:  # killed once its staging folder was there: the folder is left behind
                left = _glob(db.parent, ".s-jobs.staging-*")
                assert left, f"kill at {when}: a killed ingest leaves its staging folder (beside the job directory)"
                leftovers += left
        assert snapshot(root, db) == before, f"kill at {when}"
    assert landed >= 3, "the kills did not land mid-ingest"
    assert leftovers
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "4 of 4 ranks stored" in done.stdout, done.stderr
    assert not any(p.exists() for p in leftovers), "a killed ingest's staging folder is removed by the next"
    assert not list(db.parent.glob(".s-jobs.staging-*"))


@pytest.mark.slow  # a subprocess
@pytest.mark.parametrize("case", ["manifest-deep_nesting", "file-wrong_table"])
def test_a_damaged_job_costs_a_summary_little_time_and_memory(stored, tmp_path, case):
    db, root, _ = stored
    DAMAGE[case][0](root, "bad")
    done, seconds, peak_mb = _probe("summary", "--db", str(db))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "good0.json" in done.stdout and "bad0.json" not in done.stdout
    assert seconds < HANG_S and peak_mb < 1024, (seconds, peak_mb)


def test_on_a_remote_filesystem_a_jobs_file_checks_are_kept_a_while(stored, monkeypatch):
    """One request per rank file on every read would be slow on object storage: there a job's
    checks are kept REMOTE_RECHECK_S seconds (here an fsspec in-memory filesystem through pyarrow)."""
    from profiler.storage import job_check

    _, root, _ = stored
    uri = f"fsspec+memory:///{root.parent.name}-jobs"
    fs, base = job_layout.filesystem(uri)
    for path in root.rglob("*"):
        if path.is_file():
            fs.create_dir(f"{base}/{path.parent.relative_to(root)}", recursive=True)
            with fs.open_output_stream(f"{base}/{path.relative_to(root)}") as out:
                out.write(path.read_bytes())
    assert [m["job"] for m in job_check.read_jobs(uri).ok] == ["bad", "good"]
    fs.delete_file(f"{base}/{json.loads((root / 'manifests' / 'bad.json').read_text())['ranks'][1]['files']['kernels']}")
    assert len(job_check.read_jobs(uri).ok) == 2, "kept: the file is not asked for again at once"
    monkeypatch.setattr(job_check, "REMOTE_RECHECK_S", 0.0)
    found = job_check.read_jobs(uri)
    assert [m["job"] for m in found.ok] == ["good"] and "is missing (rank 1's kernels)" in found.damaged[0].reason
    fs.delete_dir(base)
