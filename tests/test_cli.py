"""`python -m profiler ingest / summary` as a user runs them: in this process (`tests.cli_run.cli`,
the same `main(argv)`), and in a subprocess where the process is the point (the entry point and
the environment, a lock held by another process)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import duckdb
import pytest

from profiler import errors
from profiler.present.progress import ProgressBar
from profiler.storage.store import Store
from tests.cli_run import cli
from tests.conftest import FIXTURES, ROOT


def real_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m profiler ARGS` in a new interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "profiler", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)


def test_ingest_reports_each_file_and_fails_after_ingesting_the_rest(db_path, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    done = cli("ingest", str(FIXTURES / "tiny_naive.json"), str(bad), str(FIXTURES / "tiny_inplace.json"),
               "--db", str(db_path))
    assert done.returncode == 1
    lines = [line for line in done.stdout.strip().splitlines() if "note:" not in line]
    assert len(lines) == 4 and lines[3] == "2 of 3 files ingested or already in the store; 1 failed"
    assert "ingested" in lines[0] and "4 kernels" in lines[0]
    assert lines[1] == f"FAILED  {bad}: is truncated: the traceEvents list never closes"
    assert "Traceback" not in done.stdout + done.stderr
    again = cli("ingest", str(FIXTURES / "tiny_naive.json"), "--db", str(db_path))
    assert again.returncode == 0 and "already in store" in again.stdout


def test_summary_json_lists_every_trace_with_counts(db_path):
    cli("ingest", str(FIXTURES / "tiny_naive.json"), str(FIXTURES / "tiny_old_format.json"), "--db", str(db_path))
    done = cli("summary", "--db", str(db_path), "--json")
    assert done.returncode == 0, done.stderr
    runs = {r["name"]: r for r in json.loads(done.stdout)}
    naive = runs["tiny_naive.json"]
    assert naive["variant"] == "naive" and naive["gpu"] == "NVIDIA H200"
    assert (naive["events"], naive["kernels"], naive["iterations"]) == (26, 4, 2)
    # per ProfilerStep (2 of 100 µs): the step's GPU work, kernels + copies it launched, 34.5625 µs,
    # all inside the step (the 1 µs memset has no launch call in the trace: unattributed, counted
    # apart), no percentage above 100
    assert (naive["wall_us_per_iter"], naive["gpu_work_us_per_iter"]) == (100.0, 34.5625)
    assert naive["gpu_busy_us_per_iter"] == 34.5625 and naive["unattributed_per_iter"] == 0.5
    assert naive["gpu_busy_pct"] + naive["gpu_idle_pct"] + naive["carried_pct"] == pytest.approx(99.5)
    assert naive["kernel_us_per_iter"] <= naive["gpu_busy_us_per_iter"] and naive["bound"] == "cpu"
    # launch APIs only (no memcpy, sync or query calls), in calls per iteration
    assert naive["launch_apis"] == {"cudaLaunchKernel": 1.0, "cuLaunchKernelEx": 0.5}
    assert runs["tiny_old_format.json"]["variant"] is None
    assert len(naive["run_id"]) >= 12
    json.loads(done.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))


@pytest.mark.slow
def test_summary_table_and_db_from_environment(db_path):
    import os

    env = dict(os.environ, PROFILER_DB=str(db_path))
    ingested = real_cli("ingest", str(FIXTURES / "tiny_inplace.json"), env=env)
    assert ingested.returncode == 0 and "ingested" in ingested.stdout, ingested.stderr
    done = real_cli("summary", env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "naive_inplace" in done.stdout and "tiny_inplace.json" in done.stdout


@pytest.mark.slow
def test_ingest_waits_for_another_process_holding_the_store(db_path):
    Store(db_path).schema_version()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('locked', flush=True); time.sleep(2); c.close()", str(db_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        result = Store(db_path, lock_timeout_s=20).ingest(FIXTURES / "tiny_naive.json")
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    assert result.kernels == 4 and waited > 0.5


@pytest.mark.slow
def test_a_lock_held_too_long_is_a_clear_error_and_changes_nothing(db_path):
    store = Store(db_path)
    store.ingest(FIXTURES / "tiny_inplace.json")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('locked', flush=True); time.sleep(3)", str(db_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        try:
            Store(db_path, lock_timeout_s=0.5).ingest(FIXTURES / "tiny_naive.json")
            raised = None
        except errors.StoreLockedError as e:
            raised = e
    finally:
        holder.wait(timeout=30)
    assert raised is not None and "locked by another process" in str(raised)
    con = duckdb.connect(str(db_path))
    assert con.execute("SELECT count(*) FROM traces").fetchone() == (1,)
    con.close()


def test_progress_bar_appears_only_for_slow_work():
    quick, slow = io.StringIO(), io.StringIO()
    bar = ProgressBar("quick.json", delay_s=5, stream=quick)
    bar.update(0.5)
    bar.close()
    bar = ProgressBar("slow.json", delay_s=0, stream=slow)
    bar.update(0.5)
    bar.close()
    assert quick.getvalue() == ""
    assert "slow.json" in slow.getvalue() and "50.0%" in slow.getvalue()


def test_help_of_the_command_and_every_subcommand_prints(capsys):
    from profiler.cli.main import build_parser, main

    commands = list(build_parser()._subparsers._group_actions[0].choices)
    assert "ops" in commands and "ingest" in commands
    for argv in [["--help"]] + [[c, "--help"] for c in commands]:
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 0, argv
        assert "usage: python -m profiler" in capsys.readouterr().out, argv
