"""A server that ends while its preload thread reads the store ends cleanly. A daemon thread still
inside DuckDB's C++ code (fetching a result into pandas) when the interpreter finalizes is unwound
through frames that do not rethrow, and the process aborts ("FATAL: exception not rethrown", exit
-6: seen once in the suite's torch-free page tour). The preload's read now finishes first."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from profiler.storage.store import Store
from tests.crafted import kineto_trace

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import threading, time
    from profiler.analysis.findings import timings
    from profiler.present.ui import session

    session.QUIET_S = 0.0
    reading = threading.Event()

    def slow_read(store, catalog):   # a read as long as a large store's: fetches into pandas
        reading.set()
        with store.connect() as con:
            ends = time.monotonic() + 1.5
            while time.monotonic() < ends:
                con.execute("SELECT * FROM range(300000) t(a), (SELECT 'x' AS b)").df()
        return catalog

    timings.catalog_with_timings = slow_read
    session.seeding().page_drawn()   # no first page to wait for
    session.preload()
    assert reading.wait(60), "the preload never read the store"
    time.sleep(0.3)
    print("exiting while the preload reads")
""")


@pytest.mark.slow  # child processes
@pytest.mark.parametrize("attempt", range(3))
def test_the_process_ends_cleanly_while_the_preload_reads(tmp_path, attempt):
    db = tmp_path / "s.duckdb"
    Store(db).ingest(kineto_trace(30), "one.json")
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PROFILER_DB": str(db), "PROFILER_SEED": "0", "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path)})
    assert "exiting while the preload reads" in done.stdout, done.stderr[-2000:]
    assert done.returncode == 0 and "not rethrown" not in done.stderr, (done.returncode, done.stderr[-2000:])
