"""Launches page on the fixture store: API table per run, targets, latency, empty state."""
from __future__ import annotations

import pytest

from tests.pages.conftest import FLASH, NAIVE, ROCM, tables_with as _table_with


def test_api_table_targets_and_latency_per_run(pages, page_store, run_ids):
    at = pages.open("launches", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}")
    pages.assert_clean(at)
    (apis,) = _table_with(at, "category")           # one table, a run column
    naive = apis[apis["run_id"] == run_ids[NAIVE]].set_index("api")
    # per ProfilerStep: one cudaLaunchKernel (20 µs) and one cudaMemcpyAsync (10 µs)
    assert naive.loc["cudaLaunchKernel", ["calls_per_iter", "api_us_per_iter", "kernels_launched_per_iter"]].tolist() == [1.0, 20.0, 1.0]
    assert naive.loc["cudaMemcpyAsync", ["category", "memops_launched_per_iter"]].tolist() == ["memcpy", 1.0]
    assert apis.loc[apis["run_id"] == run_ids[FLASH], "api"].tolist() == ["cudaLaunchKernel"]
    assert apis["run"].str.contains("naive").any() and apis["run"].iloc[0] != apis["run"].iloc[-1]
    (targets,) = _table_with(at, "target_name")
    assert set(targets.loc[targets["run_id"] == run_ids[NAIVE], "target_kind"]) == {"kernel", "memcpy"}
    (latency,) = _table_with(at, "p50_us")
    naive_latency = latency[latency["run_id"] == run_ids[NAIVE]].reset_index(drop=True)
    assert naive_latency.loc[0, "p50_us"] == 30.0      # kernel at +30 µs after its launch call
    assert len(at.get("vega_lite_chart")) == 2          # calls per API + latency histogram
    assert len(at.get("download_button")) == 3          # APIs, targets, latency


def test_folded_sections_are_sent_only_when_opened(pages, page_store, run_ids):
    """The targets and percentiles tables are folded (the histogram too over 3 runs or more):
    closed, the page sends neither; opened, each is there."""
    runs = f"{run_ids[NAIVE]},{run_ids[FLASH]}"
    at = pages.open("launches", runs=runs, opened=())
    pages.assert_clean(at)
    assert len(at.expander) == 3 and not _table_with(at, "target_name") and not _table_with(at, "p50_us")
    assert len(at.get("vega_lite_chart")) == 2 and len(at.get("download_button")) == 1   # the API table's
    at = pages.open("launches", runs=runs, opened=("launches-latency",), closed=("launches-latency-histogram",))
    pages.assert_clean(at)
    assert len(_table_with(at, "p50_us")) == 1 and not _table_with(at, "target_name")
    assert len(at.get("vega_lite_chart")) == 1                                            # calls per API


@pytest.mark.third_party
def test_rocm_hip_launch_apis(pages, page_store, run_ids):
    at = pages.open("launches", runs=run_ids[ROCM])
    pages.assert_clean(at)
    (apis,) = _table_with(at, "category")
    assert {"hipLaunchKernel", "hipExtModuleLaunchKernel"} <= set(apis["api"])
    assert (apis.loc[apis["api"].str.startswith("hip") & apis["api"].str.contains("Launch"),
                     "category"] == "launch").all()


def test_query_params_restore_the_runs(pages, page_store, run_ids):
    at = pages.open("launches", runs=run_ids[FLASH])
    pages.assert_clean(at)
    assert run_ids[FLASH] in "".join(c.value for c in at.code)   # the share link holds the run
    assert len(_table_with(at, "category")) == 1


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("launches")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)
