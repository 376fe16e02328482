"""The pages on runs that were slow rather than wrong (issue 22, class 7; inputs from
tests/crafted_slow.py): launches and kernels sharing one correlation id (the launches page ran
DuckDB out of memory), a 10 MB thread name, ops nested deep. Every analysis page opens clean,
within AppTest's timeout, and shows what it should."""
from __future__ import annotations

import shutil
import time

import pytest

from profiler.storage.store import Store
from tests import crafted_slow

PAGES_READING_RUNS = ("profile", "timeline", "kernels", "launches", "cpu-cost", "memory")


@pytest.fixture(scope="module")
def slow_template(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slow-pages")
    store = Store(folder / "template.duckdb")
    ids = {"correlation": store.ingest(crafted_slow.shared_correlation(folder / "corr.json.gz", 20_000)).run_id,
           "lanes": store.ingest(crafted_slow.huge_lane_names(10), "lanes.json").run_id,
           "deep": store.ingest(crafted_slow.ops_nested(folder / "deep.json.gz", 20_000)).run_id}
    return folder / "template.duckdb", ids


@pytest.fixture
def slow_runs(slow_template, tmp_path, monkeypatch) -> dict[str, str]:
    template, ids = slow_template
    shutil.copyfile(template, tmp_path / "store.duckdb")
    monkeypatch.setenv("PROFILER_DB", str(tmp_path / "store.duckdb"))
    monkeypatch.setenv("PROFILER_SEED", "0")
    return ids


@pytest.mark.parametrize("page", PAGES_READING_RUNS)
def test_each_page_opens_clean_on_every_slow_run(pages, slow_runs, page):
    started = time.monotonic()
    for run in slow_runs.values():
        at = pages.open(page, runs=run)
        pages.assert_clean(at)
    assert time.monotonic() - started < 180


def test_launches_page_links_one_launch_per_correlation_id(pages, slow_runs):
    at = pages.open("launches", runs=slow_runs["correlation"])
    pages.assert_clean(at)
    apis = [df.value for df in at.dataframe if "kernels_launched_per_iter" in df.value.columns]
    assert apis and apis[0]["calls"].sum() == 20_001, "every call is listed"
    assert apis[0]["kernels_launched_per_iter"].sum() == 20_001, "each kernel counted once, not per call"
    targets = [df.value for df in at.dataframe if "target_name" in df.value.columns]
    assert targets and targets[0]["launches"].sum() == 20_001


def test_compare_of_two_slow_runs_opens_clean(pages, slow_runs):
    at = pages.open("compare", runs=f"{slow_runs['correlation']},{slow_runs['deep']}")
    pages.assert_clean(at)
