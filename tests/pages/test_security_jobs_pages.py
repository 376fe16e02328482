"""Pages beside a damaged job (issue 22, class 4): the runs, kernels and timeline pages of unrelated
runs work, and the job page lists the damaged job with its file and reason, and shows the whole
one. Also: a job of a vast world says its missing ranks as ranges (class 6). Damage made by
tests/crafted_jobs.py."""
from __future__ import annotations

import shutil
import time

import pytest

from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from tests.crafted_jobs import ABSURD_TIMESTAMPS, MANIFEST_DAMAGE, RANK_FILE_DAMAGE, rank_trace, write_ranks
from tests.pages.conftest import NAIVE, shown

DAMAGE = {**{f"manifest-{k}": v for k, v in MANIFEST_DAMAGE.items()},
          **{f"file-{k}": v for k, v in RANK_FILE_DAMAGE.items()}}
SOME = ("manifest-not_json", "manifest-files_a_number", "manifest-null", "file-wrong_table", "file-deleted")


@pytest.fixture
def damaged(with_jobs, tmp_path, monkeypatch, request):
    """A private copy with job 'bad' damaged as `request.param` says; (job directory, reason)."""
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    monkeypatch.setenv("PROFILER_SEED", "0")
    shutil.copyfile(with_jobs / "store.duckdb", tmp_path / "store.duckdb")
    shutil.copytree(with_jobs / "store-jobs", tmp_path / "store-jobs")
    monkeypatch.setenv("PROFILER_DB", str(tmp_path / "store.duckdb"))
    damage, reason = DAMAGE[request.param]
    damage(tmp_path / "store-jobs", "bad")
    return tmp_path / "store-jobs", reason


@pytest.mark.parametrize("damaged", sorted(DAMAGE), indirect=True)
def test_job_page_lists_the_damaged_job_and_shows_the_whole_one(pages, damaged, tmp_path):
    _, reason = damaged
    at = pages.open("job", job="bad")
    pages.assert_clean(at)
    warned = [w.value for w in at.warning]
    assert len(warned) == 1 and "cannot be read" in warned[0] and str(tmp_path) not in warned[0]
    assert reason in pages.texts(at), warned
    assert at.selectbox[0].options == ["good"] and at.selectbox[0].value == "good"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["world size"] == "2" and metrics["ranks present"] == "2" and metrics["ranks missing"] == "none"


@pytest.mark.parametrize("damaged", SOME, indirect=True)
@pytest.mark.parametrize("page", ["runs", "kernels", "timeline"])
def test_pages_of_unrelated_runs_work_beside_a_damaged_job(pages, damaged, run_ids, page):
    at = pages.open(page, runs=run_ids[NAIVE])
    pages.assert_clean(at)
    if page == "runs":
        names = set(at.dataframe[0].value.to_string().split())
        assert {"good0.json", "good1.json"} <= names and "bad0.json" not in names
    else:
        assert at.dataframe or at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")


def test_a_vast_world_shows_its_missing_ranks_as_ranges(pages, empty_store, tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    files = write_ranks(tmp_path / "in", {"rank0.json": rank_trace(0, 1_000_000), "rank9.json": rank_trace(9, 1_000_000)})
    job_ingest.ingest_job(empty_store, files, "vast", engine="in-process")
    at = pages.open("job", job="vast")
    pages.assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["world size"] == "1000000" and shown(metrics["ranks missing"]) == "1-8, 10-999999"


def test_absurd_timestamps_in_an_uploaded_job_are_skipped_and_said(pages, empty_store, monkeypatch):
    """A timestamp that overflowed Decimal was a traceback on the upload page (and took 27 s with a
    million-digit exponent): now each such event is skipped, and the job stored."""
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    files = [("rank0.json", rank_trace(0, 4), "application/json")]
    files += [(name, data, "application/json") for name, (data, _) in ABSURD_TIMESTAMPS.items()]
    at = pages.open("upload")
    at.file_uploader[0].set_value(files)
    at.text_input[0].input("times")
    next(b for b in at.button if b.label == "Add to the store").click()
    started = time.perf_counter()
    at = at.run()
    pages.assert_clean(at)
    assert [s.value for s in at.success][0].startswith("Job times: 4 of 4 ranks stored")
    notes = [shown(c.value) for c in at.caption if c.value.startswith("rank ")]
    assert sorted(n.split(":")[0] for n in notes) == ["rank 1", "rank 2", "rank 3"]
    assert all("1 event skipped: start time missing or out of range" in n for n in notes), notes
    assert time.perf_counter() - started < 20  # the exponent once cost 27 s on an idle machine; ~8 s here under a loaded run
