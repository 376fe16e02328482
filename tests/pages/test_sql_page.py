"""The SQL page (pages/sql.py) through AppTest over a real store: a query a link carries is shown
and not run until Run is pressed; a run puts the query in the URL and shows its rows and a CSV
download; a refused query is one st.error sentence; the schema browser lists the documented
tables and macros with the store's column types."""
from __future__ import annotations

from tests.pages.conftest import FLASH, NAIVE, param

QUERY = "SELECT run_id, kernels FROM traces ORDER BY run_id"


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_a_linked_query_is_shown_before_it_runs(pages, page_store, run_ids):
    at = pages.open("sql", sql=QUERY)
    pages.assert_clean(at)
    assert at.text_area[0].value == QUERY
    assert any("has not run" in i.value for i in at.info)
    assert not [df for df in at.dataframe if "kernels" in df.value.columns]   # nothing ran
    _button(at, "Run query").click().run()
    pages.assert_clean(at)
    rows = next(df.value for df in at.dataframe if "kernels" in df.value.columns)
    assert {run_ids[FLASH], run_ids[NAIVE]} <= set(rows["run_id"])
    want = page_store.query("SELECT run_id, kernels FROM traces ORDER BY run_id")
    assert list(rows["run_id"]) == list(want["run_id"]) and list(rows["kernels"]) == list(want["kernels"])
    assert not at.info, "the note that the query has not run stays after it ran"
    assert param(at, "sql") == [QUERY]


def test_typed_query_goes_into_the_url(pages, page_store):
    at = pages.open("sql")
    pages.assert_clean(at)
    at.text_area[0].set_value("SELECT 42 AS answer").run()
    _button(at, "Run query").click().run()
    pages.assert_clean(at)
    assert param(at, "sql") == ["SELECT 42 AS answer"]
    assert next(df.value for df in at.dataframe if "answer" in df.value.columns)["answer"].tolist() == [42]


def test_a_refused_query_is_one_sentence(pages, page_store):
    at = pages.open("sql", sql="DELETE FROM traces")
    _button(at, "Run query").click().run()
    assert not at.exception
    assert [e.value for e in at.error] and "Only SELECT" in at.error[0].value
    assert len(page_store.query("SELECT run_id FROM traces")) > 0


def test_schema_browser(pages, page_store):
    at = pages.open("sql")
    schema = next(df.value for df in at.dataframe if "about" in df.value.columns)
    assert {"traces", "kernels", "run_metrics", "iteration_rows"} <= set(schema["name"])
    columns = next(df.value for df in at.dataframe if "meaning" in df.value.columns)
    assert "kv_len" in set(columns["column"])     # traces, picked first
    at.selectbox[0].set_value("kernels").run()
    columns = next(df.value for df in at.dataframe if "meaning" in df.value.columns)
    assert {"dur_ns", "grid_x", "correlation"} <= set(columns["column"])
