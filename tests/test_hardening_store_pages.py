"""Hardening 3 (issue 39), the app over a file that is not a store: started with PROFILER_DB
naming a SQLite database, a Parquet file, a JSON file or a folder (and the shipped samples'
seeding on, as a fresh deployment has it), the Runs page says one sentence and shows no exception
box, traceback or server path: in Streamlit's AppTest for each kind, and in Chromium over a real
server (a free port) for two of them. The file is left as it was."""
from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from tests.crafted import kineto_trace
from tests.pages.conftest import scan_installed_components_once

ROOT = Path(__file__).resolve().parents[1]


def _not_a_store(folder: Path, kind: str) -> tuple[Path, str]:
    """A path of `kind` and the words the page's sentence must hold."""
    if kind == "sqlite":
        path = folder / "store.db"
        with contextlib.closing(sqlite3.connect(path)) as con:
            con.execute("CREATE TABLE traces (x)")
            con.commit()
        return path, "is not a DuckDB store (the file is a SQLite database)"
    if kind == "parquet":
        path = folder / "store.parquet"
        pq.write_table(pa.table({"x": [1, 2]}), path)
        return path, "is not a DuckDB store (the file is a Parquet file)"
    if kind == "json":
        path = folder / "store.json"
        path.write_bytes(kineto_trace(5))
        return path, "is not a DuckDB store (the file is something else)"
    path = folder / "store_folder"
    path.mkdir()
    return path, "is not a DuckDB store (it is a folder)"


def _digest(path: Path) -> str:
    return "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["sqlite", "parquet", "json", "folder"])
def test_the_runs_page_over_a_file_that_is_not_a_store_says_one_sentence(tmp_path, monkeypatch, kind):
    path, words = _not_a_store(tmp_path, kind)
    before = _digest(path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "1")  # as deployed: seeding is what opened the file unguarded
    scan_installed_components_once()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and words in errors[0].replace("\\", ""), errors
    assert str(tmp_path) not in errors[0]
    assert _digest(path) == before


@contextlib.contextmanager
def _server(db: Path):
    from tests.test_browser import _free_port, _wait_healthy

    port = _free_port()
    env = {**os.environ, "PROFILER_DB": str(db), "PROFILER_SEED": "1"}
    with open(db.parent / "streamlit.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                                 "--server.port", str(port), "--server.headless", "true",
                                 "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            _wait_healthy(f"http://127.0.0.1:{port}", proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.parametrize("kind", ["sqlite", "folder"])
def test_in_chromium_the_runs_page_shows_one_sentence_and_no_exception(tmp_path, browser, kind):
    from tests.test_browser import _settle

    path, words = _not_a_store(tmp_path, kind)
    with _server(path) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, timeout=60_000)
        page.get_by_text(words).first.wait_for(timeout=60_000)
        _settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        body = page.inner_text("body")
        assert "Traceback" not in body and str(tmp_path) not in body, body
        assert page.locator('[data-testid="stAlertContentError"]').count() == 1
        page.close()
