"""Sweep page on real H200 sweep captures shipped in data/samples/sweep."""
from __future__ import annotations

import pytest

from profiler.storage.store import Store
from tests.pages.conftest import ROOT

SWEEP = ROOT / "data" / "samples" / "sweep"


@pytest.fixture
def sweep_store(tmp_path, monkeypatch):
    """flex and sdpa_flash at L=512 and 1024, three runs each (they cross over there), plus one naive run."""
    store = Store(tmp_path / "sweep.duckdb")
    names = [f"{v}_b8_h16_s{s}_d64_bf16_causal_warm_r{r}.json.gz"
             for v in ("flex", "sdpa_flash") for s in (512, 1024) for r in (1, 2, 3)]
    ids = {n: store.ingest(SWEEP / n, source="captured").run_id for n in names}
    ids["naive"] = store.ingest(SWEEP / "naive_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz").run_id
    monkeypatch.setenv("PROFILER_DB", str(store.path))
    return store, ids


def test_sweep_chart_table_and_crossover_from_every_captured_run(pages, sweep_store):
    at = pages.open("sweep")
    pages.assert_clean(at)
    table = at.dataframe[0].value
    assert sorted(zip(table["series"], table["seq_len"])) == [
        ("flex", 512), ("flex", 1024), ("sdpa_flash", 512), ("sdpa_flash", 1024)]  # naive: one length
    assert len(at.get("vega_lite_chart")) == 3  # GPU time, CPU time (a chart each), peak memory
    text = pages.texts(at)
    assert "every captured run in the store" in text
    assert "flex is faster at L=512" in text and "sdpa_flash is faster at L=1024" in text
    assert set(table["runs"]) == {3}  # three warm runs per point
    assert "Peak memory against sequence length" in [h.value for h in at.subheader]


def test_sweep_of_the_selected_runs_only(pages, sweep_store):
    _, ids = sweep_store
    flex = [i for n, i in ids.items() if n.startswith("flex")]
    at = pages.open("sweep", runs=",".join(flex))
    pages.assert_clean(at)
    assert set(at.dataframe[0].value["series"]) == {"flex"}
    assert "the 6 selected runs" in pages.texts(at)
    assert "No two variants swap places" in pages.texts(at)


def test_selecting_runs_at_one_length_narrows_the_sweep_to_their_variants(pages, sweep_store):
    _, ids = sweep_store
    picked = [ids["flex_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"],
              ids["sdpa_flash_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"]]
    at = pages.open("sweep", runs=",".join(picked))
    pages.assert_clean(at)
    table = at.dataframe[0].value
    # both variants at both lengths, every warm capture of them (not the two picked runs only)
    assert sorted(zip(table["series"], table["seq_len"])) == [
        ("flex", 512), ("flex", 1024), ("sdpa_flash", 512), ("sdpa_flash", 1024)]
    assert set(table["runs"]) == {3}
    assert "the variants of the 2 selected runs" in pages.texts(at)
    assert "flex is faster at L=512" in pages.texts(at)


def test_no_sweep_says_how_to_make_one(pages, page_store):
    at = pages.open("sweep")
    assert not at.exception
    assert "No sweep here" in at.info[0].value
