"""Issue 37, item 1 on the pages: the runs table's completeness badge and the line on top of Compare,
for the shared Qwen trace as written and with 10 % of its kernel events dropped."""
from __future__ import annotations

import random

import pytest

from profiler.storage.store import Store
from tests.pages.conftest import tables_with
from tests.test_completeness import QWEN, _dump, _load

pytestmark = [pytest.mark.third_party, pytest.mark.skipif(not QWEN.is_file(), reason="needs the shared Qwen trace")]


def _two_runs(path) -> tuple[str, str]:
    """The Qwen trace as written and with 10 % of its kernel events dropped, ingested into `path`."""
    data = _load()
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    gone = {id(e) for e in random.Random(37).sample(kernels, len(kernels) // 10)}
    data["traceEvents"] = [e for e in data["traceEvents"] if id(e) not in gone]
    dropped = path.parent / "qwen-dropped.json"
    dropped.write_text(_dump(data))
    store = Store(path)
    return store.ingest(QWEN).run_id, store.ingest(dropped).run_id


@pytest.fixture
def two_runs(tmp_path, monkeypatch, template_store):
    """A copy of a store holding both runs, ingested once per test process; PROFILER_DB points at it."""
    path = tmp_path / "s.duckdb"
    whole, damaged = template_store("qwen-whole-and-dropped", _two_runs, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return whole, damaged


def test_the_runs_table_says_which_trace_is_incomplete(pages, two_runs):
    whole, damaged = two_runs
    at = pages.open("runs")
    pages.assert_clean(at)
    (table,) = tables_with(at, "completeness")
    badge = dict(zip(table["run_id"], table["completeness"]))
    assert badge == {whole: "complete", damaged: "incomplete: 1"}


def test_compare_starts_with_the_incomplete_trace(pages, two_runs):
    whole, damaged = two_runs
    at = pages.open("compare", runs=f"{whole},{damaged}")
    pages.assert_clean(at)
    (warning,) = [w.value for w in at.warning if "incomplete traces" in w.value]
    assert "qwen-dropped.json" in warning and "have no GPU event" in warning
    assert "Qwen_Qwen1.5" not in warning


def test_the_runs_page_warns_of_the_incomplete_selected_run_by_its_label(pages, two_runs):
    whole, damaged = two_runs
    at = pages.open("runs", runs=f"{whole},{damaged}")
    pages.assert_clean(at)
    warned = [w.value for w in at.warning if "INCOMPLETE" in w.value]
    assert len(warned) == 1 and "qwen-dropped.json" in warned[0] and "have no GPU event" in warned[0]
