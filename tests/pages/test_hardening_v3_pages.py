"""Pages over a store written by schema version 3 that holds a job (issue 39): the migrated `traces`
table orders its columns otherwise than a fresh one, and every job's ranks vanished from the pages
(each rank file refused for its columns), a job ingested after the upgrade too. Now the Runs page
lists the ranks of the job stored before the upgrade and of the one stored after, and the job page
shows each whole. The store is made as tests/test_hardening_jobs.py makes it."""
from __future__ import annotations

import pytest

from profiler.storage import job_layout
from tests.test_hardening_jobs import v3_store_with_jobs


@pytest.fixture
def upgraded(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    monkeypatch.setenv("PROFILER_SEED", "0")
    old, _ = v3_store_with_jobs(tmp_path)
    monkeypatch.setenv("PROFILER_DB", str(old))
    return old


@pytest.mark.slow  # the store is upgraded by fresh processes (v3_store_with_jobs)
def test_the_pages_show_the_ranks_of_jobs_stored_before_and_after_the_upgrade(pages, upgraded):
    at = pages.open("runs")
    pages.assert_clean(at)
    names = sorted(at.dataframe[0].value["name"])
    assert names == ["plain.json", "rank0.json", "rank0.json", "rank1.json", "rank1.json", "upgrade.json"], names
    for job in ("old job", "new job"):
        at = pages.open("job", job=job)
        pages.assert_clean(at)
        assert not at.warning, [w.value for w in at.warning]
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["world size"] == "2" and metrics["ranks present"] == "2", metrics
        assert metrics["ranks missing"] == "none", metrics
