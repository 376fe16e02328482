"""The Events page (pages/events.py) through AppTest over a real store: kernel launches longest
first with what launched them, CPU ops on request, the filter and the list kind in the URL, and a
picked row's link to the Timeline at that event."""
from __future__ import annotations

from tests.pages.conftest import NAIVE, param


def test_kernel_launches_longest_first(pages, page_store, run_ids):
    at = pages.open("events", runs=run_ids[NAIVE])
    pages.assert_clean(at)
    rows = at.dataframe[0].value
    want = page_store.query("SELECT name, dur_ns FROM kernels WHERE run_id = ? ORDER BY dur_ns DESC",
                            [run_ids[NAIVE]])
    assert list(rows["dur_ns"]) == list(want["dur_ns"]) and rows["name"].iloc[0] == want["name"].iloc[0]
    assert {"launch_op", "api", "grid", "block", "stream"} <= set(rows.columns)


def test_ops_and_filter_live_in_the_url(pages, page_store, run_ids):
    at = pages.open("events", runs=run_ids[NAIVE], events="ops", q="aten::")
    pages.assert_clean(at)
    rows = at.dataframe[0].value
    assert len(rows) and all("aten::" in n for n in rows["name"])
    at.text_input[0].set_value("bmm").run()
    assert param(at, "q") == ["bmm"] and param(at, "events") == ["ops"]


def test_no_match_is_said(pages, page_store, run_ids):
    at = pages.open("events", runs=run_ids[NAIVE], q="no such kernel")
    pages.assert_clean(at)
    assert any("No events match" in i.value for i in at.info)
