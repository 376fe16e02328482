"""Hardening 3 (issue 39), jobs: a rank file replaced, emptied, linked to another job's, cut,
widened, retyped or doubled is named (file and reason) by `job`, `summary` and `ops` while the
other jobs and runs read; a store of schema version 3 holding a job reads its ranks after the
upgrade, in a fresh process; a pipe in place of a manifest or a rank file is never opened; a job
name or a file name that is not UTF-8 is one line or ingested. Inputs are made here (tests/crafted_jobs.py),
on a real DuckDB store; the process boundary is the point where it says so (a fresh process's caches)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest, jobs
from profiler.storage.store import Store
from tests.crafted import kineto_trace
from tests.crafted_jobs import rank_path, rank_trace, write_ranks
from tests.test_security_jobs import _one_line, cli, snapshot

ROOT = Path(__file__).resolve().parents[1]


def _rewrite(change):
    def damage(path: Path, other: Path) -> None:
        table = pq.read_table(path)
        pq.write_table(change(table), path)
    return damage


def _link(path: Path, other: Path) -> None:
    path.unlink()
    path.symlink_to(other)


def _retyped(t: pa.Table) -> pa.Table:
    i = t.column_names.index("dur_ns")
    return t.set_column(i, "dur_ns", t.column("dur_ns").cast(pa.string()))


def _other_table(path: Path, other: Path) -> None:
    shutil.copyfile(Path(str(path).replace("/kernels/", "/ops/")), path)


# name -> (damage(rank 1's kernels file of job 'bad', rank 1's kernels file of job 'good'), reason)
DAMAGE = {
    "another_tables_file": (_other_table, "does not have the columns of its table"),
    "emptied": (lambda path, other: path.write_bytes(b""), "is not a readable Parquet file"),
    "linked_to_another_jobs": (_link, "is not a regular file"),
    "cut_to_one_row": (_rewrite(lambda t: t.slice(0, 1)), "has 1 rows; its manifest says"),
    "extra_column": (_rewrite(lambda t: t.append_column("extra", pa.array([1] * len(t)))),
                     "does not have the columns of its table"),
    "dur_ns_as_text": (_rewrite(_retyped), "column dur_ns is string, not int64"),
    "rows_doubled": (_rewrite(lambda t: pa.concat_tables([t, t])), "has 22 rows; its manifest says 11"),
}


def _ingest_kept(store: Store, folder: Path, job: str, world: int) -> None:
    files = write_ranks(folder / job, {f"{job}{r}.json": rank_trace(r, world, 30 + 3 * r) for r in range(2)})
    job_queries.ingest_job(store, files, job, engine="in-process")  # as the command line does: a kept summary


@pytest.fixture(autouse=True)
def _default_job_root(monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict]:
    """A store with a plain run and two jobs of two ranks, 'good' and 'bad', each with a kept summary."""
    folder = tmp_path_factory.mktemp("template")
    store = Store(folder / "s.duckdb")
    ids = {"plain": store.ingest(kineto_trace(30), "plain.json").run_id}
    for job, world in (("good", 2), ("bad", 4)):
        _ingest_kept(store, folder, job, world)
    return folder, ids


@pytest.fixture
def stored(template, tmp_path) -> tuple[Path, Path, dict]:
    folder, ids = template
    shutil.copyfile(folder / "s.duckdb", tmp_path / "s.duckdb")
    shutil.copytree(folder / "s-jobs", tmp_path / "s-jobs", symlinks=True)
    return tmp_path / "s.duckdb", tmp_path / "s-jobs", ids


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_rank_file_is_named_by_job_summary_and_ops(stored, tmp_path, case):
    db, root, ids = stored
    good_report = job_queries.job_report(Store(db), "good")
    damage, reason = DAMAGE[case]
    path = rank_path(root, "bad", 1, "kernels")
    damage(path, rank_path(root, "good", 1, "kernels"))
    rel = str(path.relative_to(root))
    before = snapshot(root)

    code, out, err, _ = cli("job", "bad", "--db", str(db))  # was: the kept summary, as if intact
    line = _one_line(err, tmp_path)
    assert code == 2 and out == "" and line.startswith("error: job 'bad': ") and f"{rel}: " in line and reason in line, line

    code, out, err, _ = cli("summary", "--db", str(db), "--json")  # was: the ranks gone without a word
    assert code == 0 and sorted(r["name"] for r in json.loads(out)) == ["good0.json", "good1.json", "plain.json"]
    note = _one_line(err, tmp_path)
    assert note.startswith("note: job 'bad': ") and f"{rel}: " in note and reason in note, note

    bad_run = json.loads((root / "manifests" / "bad.json").read_text())["ranks"][1]["run_id"]
    code, out, err, _ = cli("ops", bad_run, "--db", str(db))  # was: "no run ... in the store"
    line = _one_line(err, tmp_path)
    assert code == 2 and "is a rank of a damaged job 'bad'" in line and reason in line, line

    assert job_queries.job_report(Store(db), "good") == good_report
    assert cli("ops", ids["plain"], "--db", str(db))[0] == 0
    assert snapshot(root) == before, "reading never writes the job directory"


def test_a_summary_is_kept_while_the_files_are_as_they_were(stored):
    """The check above costs a stat per file: an intact job is still read from its kept summary."""
    db, root, _ = stored
    m = job_queries.kept_manifest(Store(db), "good")
    assert m is not None and m["files_seen"]
    os.utime(rank_path(root, "good", 0, "ops"), ns=(1, 1))  # rewritten in place, same size
    assert job_queries.kept_manifest(Store(db), "good")["files_seen"] != m["files_seen"]


def _fresh(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m profiler ARGS` in a fresh process (its caches empty, as a user's command)."""
    return subprocess.run([sys.executable, "-m", "profiler", *args], cwd=ROOT, capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def v3_store_with_jobs(tmp_path: Path) -> tuple[Path, Store]:
    """A store of schema version 3 holding a plain run and job 'old job' (its rank files written
    as version 3 wrote them), upgraded by a fresh process's ingest, then given job 'new job'
    after the upgrade: (the upgraded store's path, the version-3 source store it was made from)."""
    from tests.test_run_id_migration import OLD_SCHEMAS, _old_store
    from tests.test_security_jobs import as_schema_v3

    new = Store(tmp_path / "new.duckdb")
    new.ingest(kineto_trace(30), "plain.json")
    files = write_ranks(tmp_path / "in", {f"rank{r}.json": rank_trace(r, 2, 30 + r) for r in range(2)})
    job_ingest.ingest_job(new, files, "old job", engine="in-process")
    old = tmp_path / "old.duckdb"
    _old_store(old, new.path, OLD_SCHEMAS[0])
    shutil.move(tmp_path / "new-jobs", tmp_path / "old-jobs")
    as_schema_v3(tmp_path / "old-jobs")
    (tmp_path / "upgrade.json").write_bytes(kineto_trace(90))
    assert _fresh("ingest", str(tmp_path / "upgrade.json"), "--db", str(old)).returncode == 0
    later = write_ranks(tmp_path / "later", {f"rank{r}.json": rank_trace(r, 2, 40 + r) for r in range(2)})
    done = _fresh("ingest", *map(str, later), "--job", "new job", "--in-process", "--db", str(old))
    assert done.returncode == 0, done.stderr
    return old, new


@pytest.mark.slow  # fresh processes: the upgrade and the reads
def test_a_schema_v3_store_holding_a_job_reads_its_ranks_in_a_fresh_process(tmp_path):
    """The migrated `traces` table orders its columns otherwise than a fresh one (run_meta at 26,
    not 31): every rank file was refused for its columns, and the union read them by position."""
    old, new = v3_store_with_jobs(tmp_path)
    done = _fresh("summary", "--db", str(old), "--json")
    assert done.returncode == 0 and b"does not have the columns" not in done.stderr, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(r["name"] for r in rows) == ["plain.json", "rank0.json", "rank0.json", "rank1.json",
                                                "rank1.json", "upgrade.json"]
    by_id = {r["run_id"]: r for r in rows}
    want = Store(new.path).query("SELECT run_id, events, kernels FROM traces")
    for rid, events, kernels in zip(want["run_id"], want["events"], want["kernels"]):
        assert rid not in by_id or (by_id[rid]["events"], by_id[rid]["kernels"]) == (events, kernels)
    for job in ("old job", "new job"):
        done = _fresh("job", job, "--db", str(old), "--json")
        assert done.returncode == 0 and json.loads(done.stdout)["ranks_present"] == [0, 1], done.stderr
    for rank in (r for r in rows if r["name"] == "rank0.json"):  # a rank of each job: was "no run ... in the store"
        done = _fresh("ops", rank["run_id"], "--db", str(old))
        assert done.returncode == 0 and done.stdout and b"Traceback" not in done.stderr, done.stderr
    # a value the rank's file holds comes out under its own column (the union read them by position)
    rank0 = rank_path(tmp_path / "old-jobs", jobs.job_key("new job"), 0, "traces")
    table = pq.read_table(rank0)
    pq.write_table(table.set_column(table.column_names.index("mode"), "mode", pa.array(["decode"])), rank0)
    rid = table.column("run_id")[0].as_py()
    got = Store(old).query("SELECT mode, run_meta, kv_heads FROM traces WHERE run_id = ?", [rid])
    assert got.to_dict("records") == [{"mode": "decode", "run_meta": None, "kv_heads": None}]


@pytest.mark.slow  # each command in a process of its own, with a limit
@pytest.mark.parametrize("where", ["manifest", "rank_file"])
def test_a_pipe_in_the_job_directory_is_never_opened(stored, tmp_path, where):
    """A FIFO in place of a manifest hung `job`, `summary`, `compare` and `ops` until killed (its
    reader waits for a writer that never comes). Each runs in a process of its own, with a limit."""
    db, root, ids = stored
    if where == "manifest":
        (root / "manifests" / "bad.json").unlink()
        os.mkfifo(root / "manifests" / "bad.json")
        rel, reason = "manifests/bad.json", "is not a regular file"
    else:
        path = rank_path(root, "bad", 0, "ops")
        path.unlink()
        os.mkfifo(path)
        rel, reason = str(path.relative_to(root)), "is not a regular file"
    good0 = json.loads((root / "manifests" / "good.json").read_text())["ranks"][0]["run_id"]
    refused = [("job", "bad"), ("job", "good", "--compare", "bad")]
    read = [("job", "good", "--json"), ("summary", "--json"), ("compare", ids["plain"], good0), ("ops", good0)]
    for args in refused + read:
        done = _fresh(*args, "--db", str(db), timeout=60)
        text = done.stdout.decode() + done.stderr.decode()
        assert "Traceback" not in text and str(tmp_path) not in done.stderr.decode(), text
        if args in refused:
            assert done.returncode == 2 and f"{rel}: {reason}" in done.stderr.decode(), text
        else:
            assert done.returncode == 0, text
    done = _fresh("summary", "--json", "--db", str(db))
    assert sorted(r["name"] for r in json.loads(done.stdout)) == ["good0.json", "good1.json", "plain.json"]
    assert f"note: job 'bad': {rel}: {reason}" in done.stderr.decode()


@pytest.mark.slow  # bytes on a real command line: processes of their own
def test_names_that_are_not_utf8(tmp_path):
    """A job name that is not UTF-8 (bytes from the command line) is one line; a valid trace whose
    file name is not UTF-8 is ingested, alone or as a rank, its name's stray bytes shown as U+FFFD."""
    db = tmp_path / "s.duckdb"
    plain, rank = os.fsencode(tmp_path) + b"/tr\xffce.json", os.fsencode(tmp_path) + b"/rank0\xfe.json"
    Path(os.fsdecode(plain)).write_bytes(kineto_trace(30))
    Path(os.fsdecode(rank)).write_bytes(rank_trace(0, 1))
    run = lambda *args: subprocess.run([sys.executable, "-m", "profiler", *args, b"--db", os.fsencode(db)],
                                       cwd=ROOT, capture_output=True, timeout=120)
    before = snapshot(tmp_path)
    done = run(b"ingest", rank, b"--job", b"j\xff", b"--in-process")
    assert done.returncode == 1 and done.stderr.decode().splitlines() == [
        "error: The job name 'j\\udcff' is not UTF-8 text: give the name in UTF-8."], done.stderr
    assert snapshot(tmp_path) == before
    assert run(b"ingest", plain).returncode == 0
    done = run(b"ingest", rank, b"--job", b"named", b"--in-process")
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    names = sorted(r["name"] for r in json.loads(run(b"summary", b"--json").stdout))
    assert names == ["rank0\ufffd.json", "tr\ufffdce.json"]
    report = json.loads(run(b"job", b"named", b"--json").stdout)
    assert report["ranks_present"] == [0]
