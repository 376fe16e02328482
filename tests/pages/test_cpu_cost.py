"""CPU-cost page on the fixture store: summary verdict, charts, op table, cuDNN story, empty state."""
from __future__ import annotations

import pytest

from tests.pages.conftest import FLASH, NAIVE, ROCM, tables_with as _table_with


def test_summary_ops_and_charts(pages, page_store, run_ids):
    at = pages.open("cpu-cost", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}")
    pages.assert_clean(at)
    (summary,) = _table_with(at, "bound")
    naive = summary.set_index("run_id").loc[run_ids[NAIVE]]
    # per step: 100 µs of CPU op self time, a 20 µs launch call, one 150.5 µs kernel, a 5 µs copy
    assert (naive["cpu_op_self_us"], naive["launch_api_us"], naive["gpu_kernel_us"]) == (100.0, 20.0, 150.5)
    assert naive["gpu_busy_us"] == 155.5
    assert naive["bound"] in {"gpu", "sync", "collective", "input", "launch", "cpu", "annotation", "unrecorded", "capture", "none"} and 0 <= naive["gpu_idle_pct"] <= 100
    (ops,) = _table_with(at, "self_us_per_iter")       # one op table, a run column
    assert set(ops["run_id"]) == {run_ids[NAIVE], run_ids[FLASH]}
    naive_ops = ops[ops["run_id"] == run_ids[NAIVE]].set_index("op")
    assert naive_ops.loc["aten::masked_fill", "self_us_per_iter"] == 80.0
    assert len(at.get("vega_lite_chart")) == 3          # per iteration, cold/warm, ops
    assert "cuDNN" not in pages.texts(at)            # no cuDNN attention call: no story
    assert "No cold/warm pair among the selected runs" in pages.texts(at)


def test_folded_sections_are_sent_only_when_opened(pages, page_store, run_ids):
    """The op table is folded (and the per-iteration chart over 3 runs or more): closed, the page
    sends neither; opened, each is there."""
    runs = f"{run_ids[NAIVE]},{run_ids[FLASH]}"
    at = pages.open("cpu-cost", runs=runs, opened=())   # 2 runs: the per-iteration chart open, the op table closed
    pages.assert_clean(at)
    assert [e.label for e in at.expander] == ["CPU vs GPU time of every iteration", "Op table"]
    assert len(at.get("vega_lite_chart")) == 3 and not _table_with(at, "self_us_per_iter")
    at = pages.open("cpu-cost", runs=runs, opened=("cpu-cost-ops",), closed=("cpu-cost-iterations",))
    pages.assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2 and len(_table_with(at, "self_us_per_iter")) == 1   # cold/warm, ops


def test_cold_and_warm_runs_of_one_shape_side_by_side(pages, page_store, run_ids):
    with page_store.connect() as con:    # a cold copy of the naive run: three times the CPU time
        naive = run_ids[NAIVE]
        con.execute("INSERT INTO traces SELECT * REPLACE ('c01d' AS run_id, true AS cold)"
                    " FROM traces WHERE run_id = ?", [naive])
        con.execute("INSERT INTO iterations SELECT * REPLACE ('c01d' AS run_id)"
                    " FROM iterations WHERE run_id = ?", [naive])
        con.execute("INSERT INTO ops SELECT * REPLACE ('c01d' AS run_id, 3 * self_ns AS self_ns)"
                    " FROM ops WHERE run_id = ?", [naive])
    page_store.upkeep()  # rows written other than by ingest: their metrics computed now
    at = pages.open("cpu-cost", runs=f"{naive},c01d")
    pages.assert_clean(at)
    (pairs,) = _table_with(at, "cpu_cold_over_warm")
    assert pairs.loc[0, ["variant", "cold_cpu_op_self_us", "warm_cpu_op_self_us"]].tolist() == [
        "naive", 300.0, 100.0]
    assert pairs.loc[0, "cpu_cold_over_warm"] == 3.0


@pytest.mark.third_party
def test_rocm_run_is_cpu_bound(pages, page_store, run_ids):
    at = pages.open("cpu-cost", runs=run_ids[ROCM])
    pages.assert_clean(at)
    (summary,) = _table_with(at, "bound")
    # the MI250 run's GPU idles 98 % of each step while the launching thread works
    assert summary.loc[0, "bound"] == "launch" and summary.loc[0, "gpu_idle_pct"] > 90  # launch calls, every thread (issue 35)


def test_unknown_run_in_the_link_is_reported_not_raised(pages, page_store, run_ids):
    at = pages.open("cpu-cost", runs=f"{run_ids[FLASH]},0123456789abcdef")
    assert not at.exception
    assert len(_table_with(at, "bound")) == 1


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("cpu-cost")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)
