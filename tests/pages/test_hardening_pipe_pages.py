"""Pages beside a pipe in the job directory (issue 39): a FIFO in place of job 'bad's manifest, or
of one of its rank files, made the Runs and Kernels pages wait for ever (its reader waits for a
writer). Now the pages of unrelated runs draw, and the job page names the file and why."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from profiler.storage import job_layout
from tests.pages.conftest import NAIVE


@pytest.fixture(params=["manifest", "rank_file"])
def piped(with_jobs, tmp_path, monkeypatch, request):  # with_jobs: tests/pages/conftest.py
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    monkeypatch.setenv("PROFILER_SEED", "0")
    shutil.copyfile(with_jobs / "store.duckdb", tmp_path / "store.duckdb")
    shutil.copytree(with_jobs / "store-jobs", tmp_path / "store-jobs")
    monkeypatch.setenv("PROFILER_DB", str(tmp_path / "store.duckdb"))
    root = tmp_path / "store-jobs"
    if request.param == "manifest":
        path = root / "manifests" / "bad.json"
    else:
        doc = json.loads((root / "manifests" / "bad.json").read_text())
        path = root / doc["ranks"][0]["files"]["kernels"]
    path.unlink()
    os.mkfifo(path)
    return str(path.relative_to(root))


@pytest.mark.parametrize("page", ["runs", "kernels"])
def test_pages_of_unrelated_runs_draw_beside_a_pipe(pages, piped, run_ids, page):
    at = pages.open(page, runs=run_ids[NAIVE])
    pages.assert_clean(at)
    assert at.dataframe


def test_the_job_page_names_the_pipe(pages, piped):
    at = pages.open("job", job="bad")
    pages.assert_clean(at)
    warned = [w.value for w in at.warning]
    assert len(warned) == 1 and "is not a regular file" in pages.texts(at), warned
    assert piped.split("/")[-1].replace("_", "\\_") in pages.texts(at) or piped.split("/")[-1] in pages.texts(at)
