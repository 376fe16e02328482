"""The spill folder of a process's DuckDB (profiler/storage/connection.py, `spill_folder`): a
process killed outright leaves it, spill files and all; the next process that makes one removes it,
and never the folder of a process that still runs. Real processes, a real SIGKILL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import ROOT

# a sort of 3 M rows under a 40 MB limit (DuckDB spills), or of 3,000 ("small": it does not); then
# the folder's path, and a wait if asked
CHILD = """
import sys, time
from profiler.storage import connection
from profiler.storage.store import Store
rows = 3_000 if sys.argv[2] == "small" else 3_000_000
Store(sys.argv[1]).query(f"SELECT max(rn) AS m FROM (SELECT row_number() OVER (ORDER BY hash(i)) AS rn FROM range({rows}) t(i))")
print(connection.spill_folder(), flush=True)
if sys.argv[2] == "wait":
    time.sleep(120)
"""


def _child(scratch, db, then: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(scratch), "PROFILER_DB_MEMORY": "40MB"}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(db), then], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ended(scratch, db, then: str) -> str:
    """A child run to its end; its spill folder."""
    child = _child(scratch, db, then)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return out.strip()


def _left(folder: str) -> tuple[bool, bool]:
    """(the folder is there, its claim is there)"""
    return os.path.isdir(folder), os.path.exists(folder + ".held")


def test_a_killed_processs_spill_folder_is_removed_by_the_next_and_a_live_ones_kept(tmp_path):
    scratch = tmp_path / "tmp"
    (scratch / "profiler-duckdb-123").mkdir(parents=True)  # no claim beside it (an older version's): left alone
    killed, alive = _child(scratch, tmp_path / "a.duckdb", "wait"), _child(scratch, tmp_path / "b.duckdb", "wait")
    try:
        folder_a, folder_b = killed.stdout.readline().strip(), alive.stdout.readline().strip()
        assert folder_a.startswith(str(scratch / "profiler-duckdb-")) and folder_a != folder_b, (folder_a, folder_b)
        assert _left(folder_a) == _left(folder_b) == (True, True)  # each claimed while the other ran
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
        assert _left(folder_a) == (True, True) and os.listdir(folder_a)  # what SIGKILL leaves
        folder_c = _ended(scratch, tmp_path / "c.duckdb", "exit")
        assert _left(folder_a) == (False, False)  # swept by the next process
        assert _left(folder_b) == (True, True)    # a live process's folder kept
        assert _left(folder_c) == (False, True)   # a clean end: DuckDB removed the folder it spilled to
        folder_d = _ended(scratch, tmp_path / "d.duckdb", "small")
        assert _left(folder_c) == (False, False)  # ... and the next process the claim it left
        assert _left(folder_d) == (False, False)  # a clean end that never spilled leaves nothing
        assert _left(folder_b) == (True, True)
        assert (scratch / "profiler-duckdb-123").is_dir()
    finally:
        for child in (killed, alive):
            child.kill()
            child.wait(timeout=30)
