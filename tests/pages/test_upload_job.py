"""Upload page, jobs: several rank traces or one zip become one job with one progress bar; a bad
file stops the job unless the user asks to leave it out."""
from __future__ import annotations

import io
import zipfile

import pytest

from profiler.analysis.findings import job_queries
from profiler.storage import job_layout
from tests.conftest import SHARED_TRACES

DLRM = sorted(SHARED_TRACES.glob("param__dlrm_kineto__worker*.pt.trace.json")) if SHARED_TRACES.is_dir() else []
pytestmark = pytest.mark.third_party


@pytest.fixture
def ranks():
    assert len(DLRM) == 7, f"the 7 DLRM rank traces are not all in {SHARED_TRACES}"  # users of this fixture are marked third_party
    return [(p.name, p.read_bytes(), "application/json") for p in DLRM[:3]]


@pytest.fixture(autouse=True)
def _default_job_root(monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)


def _upload(pages, files, job="", skip_bad=False):
    at = pages.open("upload")
    at.file_uploader[0].set_value(files)
    at.text_input[0].input(job)
    if skip_bad:
        at.checkbox[0].check()
    next(b for b in at.button if b.label == "Add to the store").click()
    return at.run()


def test_files_with_a_job_name_become_one_job(pages, empty_store, ranks):
    at = _upload(pages, ranks, job="dlrm_*part*")
    pages.assert_clean(at)
    assert "Job dlrm\\_\\*part\\*: 3 of 8 ranks stored; missing ranks: 1, 4-7." in [s.value for s in at.success]
    bars = [b.proto.text for b in at.get("progress")]
    assert len(bars) == 1 and bars[0].startswith("job dlrm\\_\\*part\\*: 3 of 8 ranks in "), bars  # escaped
    assert job_queries.job_list(empty_store)["job"].tolist() == ["dlrm_*part*"]


def test_a_zip_is_one_job_and_needs_a_name(pages, empty_store, ranks):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, _ in ranks:
            zf.writestr(f"run/{name}", data)
    archive = [("ranks.zip", buf.getvalue(), "application/zip")]
    at = _upload(pages, archive)
    assert "give the job a name" in at.warning[0].value and job_queries.job_list(empty_store).empty
    at = _upload(pages, archive, job="zipped")
    pages.assert_clean(at)
    assert job_queries.manifest(empty_store, "zipped")["ranks_present"] == [0, 2, 3]


def test_a_bad_file_stops_the_job_unless_left_out(pages, empty_store, ranks):
    files = ranks + [("rank5.json", b'{"traceEvents": [', "application/json")]
    at = _upload(pages, files, job="cut")
    assert not at.exception
    assert "rank5.json: is truncated" in at.error[0].value and job_queries.job_list(empty_store).empty
    at = _upload(pages, files, job="cut", skip_bad=True)
    assert not at.exception and not at.error
    assert at.warning[0].value.startswith("Left out: rank5.json: is truncated")  # markup.md: nothing to escape
    assert job_queries.manifest(empty_store, "cut")["ranks_present"] == [0, 2, 3]


def test_a_folder_of_rank_traces_can_be_chosen_and_becomes_one_job(pages, empty_store, ranks):
    at = pages.open("upload")
    (choose,) = [b for b in at.button_group if b.label == "Choose"]
    assert not at.file_uploader[0].proto.accept_directory      # files by default
    choose.set_value("folder").run()
    pages.assert_clean(at)
    uploader = at.file_uploader[0]
    assert uploader.proto.accept_directory and uploader.proto.multiple_files and uploader.label == "Trace folder"
    uploader.set_value(ranks)
    at.text_input[0].input("dlrm-folder")
    next(b for b in at.button if b.label == "Add to the store").click()
    at.run()
    pages.assert_clean(at)
    assert "Job dlrm-folder: 3 of 8 ranks stored; missing ranks: 1, 4-7." in [s.value for s in at.success]
    assert job_queries.job_list(empty_store)["job"].tolist() == ["dlrm-folder"]
