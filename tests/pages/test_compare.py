"""Compare page on the fixture store: the naive run's extra Memcpy is marked, deltas, URL state."""
from __future__ import annotations

from tests.pages.conftest import FLASH, NAIVE, tables_with as _table_with, param as _param


def test_alignment_marks_the_copy_only_the_naive_run_makes(pages, page_store, run_ids):
    # the naive run as the baseline (by default it is the fastest run: tests/pages/test_compare_baseline.py)
    at = pages.open("compare", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}", a=run_ids[NAIVE])
    pages.assert_clean(at)
    (aligned,) = _table_with(at, "status")
    # two kernels in a, one in b: one pair is replaced, one of a's has no partner
    assert sorted(aligned["status"]) == ["only in a", "replaced"]
    assert set(aligned["name_a"]) == {"void at::native::elementwise_kernel<128, 2>",
                                      "Memcpy DtoD (Device -> Device)"}
    assert "Only in **a: naive" in pages.texts(at)
    findings = [m.value for m in at.markdown if m.value.startswith("- ")]
    assert any("cudaMemcpyAsync" in f for f in findings)      # from profiler.analysis.findings.findings
    (delta,) = _table_with(at, "us_delta")
    delta = delta.set_index("kernel")
    assert delta.loc["Memcpy DtoD (Device -> Device)", ["calls_a", "calls_b", "presence"]].tolist() == [
        1.0, 0.0, "only in a"]
    (apis,) = _table_with(at, "cpu_us_delta")
    assert apis.set_index("api").loc["cudaMemcpyAsync", "calls_delta"] == -1.0
    assert len(at.get("vega_lite_chart")) == 2
    assert len(at.get("download_button")) == 3          # aligned sequence, kernel and API deltas


def test_swapping_runs_is_kept_in_the_url_and_restored(pages, page_store, run_ids):
    runs = f"{run_ids[NAIVE]},{run_ids[FLASH]}"
    at = pages.open("compare", runs=runs, a=run_ids[FLASH], b=run_ids[NAIVE], iter="1")
    pages.assert_clean(at)
    assert at.selectbox[0].value == run_ids[FLASH] and at.number_input[0].value == 1
    (aligned,) = _table_with(at, "status")
    assert sorted(aligned["status"]) == ["only in b", "replaced"]
    at.selectbox[0].select(run_ids[NAIVE]).run()
    at.selectbox[1].select(run_ids[FLASH]).run()
    assert _param(at, "a") == [run_ids[NAIVE]] and _param(at, "b") == [run_ids[FLASH]]


def test_a_link_naming_one_run_on_both_sides_compares_it_with_the_other(pages, page_store, run_ids):
    runs = f"{run_ids[NAIVE]},{run_ids[FLASH]}"
    at = pages.open("compare", runs=runs, a=run_ids[FLASH], b=run_ids[FLASH])
    pages.assert_clean(at)       # run b is chosen among the runs other than the baseline
    assert (at.selectbox[0].value, at.selectbox[1].value) == (run_ids[FLASH], run_ids[NAIVE])
    assert len(at.selectbox[1].options) == 1


def test_one_run_is_not_enough(pages, page_store, run_ids):
    at = pages.open("compare", runs=run_ids[FLASH])
    pages.assert_clean(at)
    assert "needs 2 runs" in pages.texts(at)
    assert not at.dataframe
