"""Profile page on a CPU machine: skipped variants explained, a real capture, new runs selected."""
from __future__ import annotations

from pathlib import Path

import pytest

from profiler.analysis.reads import run_queries
from profiler.capture.variants import availability, default_device
from profiler.capture.setting import Setting
from tests.pages.conftest import shown

DEVICE = default_device()
NOTE = {"cpu": "No CUDA GPU on this machine", "cuda": "Capturing on this machine's CUDA GPU."}
DTYPE = {"cpu": "fp32", "cuda": "bf16"}  # the page's defaults per device


def test_the_device_is_named_and_skipped_variants_say_why(pages, page_store):
    at = pages.open("profile")
    pages.assert_clean(at)
    assert NOTE[DEVICE] in pages.texts(at)
    skipped = {r.name: r.reason for r in availability(Setting(device=DEVICE, dtype=DTYPE[DEVICE]))
               if not r.available}
    tables = [df.value for df in at.dataframe if "why it is skipped" in df.value.columns]
    if DEVICE == "cpu" or skipped:
        assert dict(zip(tables[0]["variant"], tables[0]["why it is skipped"])) == skipped
    else:
        assert not tables
    offered = next(m for m in at.multiselect if m.label == "variants")
    assert not set(offered.options) & set(skipped)


@pytest.mark.slow  # a real torch capture from the page
def test_capture_adds_selected_runs_with_a_live_bar_per_variant(pages, page_store):
    before = set(run_queries.run_catalog(page_store)["run_id"])
    at = pages.open("profile")
    next(m for m in at.multiselect if m.label == "variants").set_value(["sdpa_math", "naive"])
    next(m for m in at.multiselect if m.label.startswith("sequence lengths")).set_value([128])
    next(b for b in at.button if b.label == "Run capture").click()
    at.run(timeout=300)
    pages.assert_clean(at)
    catalog = run_queries.run_catalog(page_store)
    new = catalog[~catalog["run_id"].isin(before)]
    # a cold and a warm run of each variant, described by the trace's own metadata
    assert sorted(zip(new["variant"], new["cold"])) == [
        ("naive", False), ("naive", True), ("sdpa_math", False), ("sdpa_math", True)]
    shape = "×".join(str(int(next(n for n in at.number_input if n.label == label).value))
                     for label in ("batch", "heads")) + "×128×" + str(int(next(
                         n for n in at.number_input if n.label == "head dim").value))
    assert set(new["shape"]) == {shape}  # the page's defaults for this device, and the chosen length
    assert set(at.query_params["runs"].split(",")) == set(new["run_id"])
    bars = {shown(b.proto.text).split(":")[0]: b.proto.value for b in at.get("progress")}  # text is Markdown
    assert bars == {"sdpa_math": 100, "naive": 100}
    assert "4 new run(s) in the store and selected" in pages.texts(at)
    traces = sorted(p.name for p in (Path(page_store.path).parent / "traces").iterdir())
    assert traces == sorted(f"{r}.json.gz" for r in new["run_id"]), "kept next to the store"


def test_no_sequence_length_disables_the_button(pages, page_store):
    at = pages.open("profile")
    next(m for m in at.multiselect if m.label.startswith("sequence lengths")).set_value([]).run()
    assert next(b for b in at.button if b.label == "Run capture").disabled
    assert "Choose at least one variant and one sequence length." in pages.texts(at)


@pytest.mark.slow  # a real torch capture from the page
def test_a_decode_capture_from_the_page_is_stored_with_its_mode_and_kv_cache(pages, page_store):
    before = set(run_queries.run_catalog(page_store)["run_id"])
    at = pages.open("profile")
    next(s for s in at.selectbox if s.label == "mode").set_value("decode").run()
    expander = [e for e in at.expander if "which mode" in e.label]
    assert expander, "the per-mode table is offered"
    next(n for n in at.number_input if n.label == "KV length (decode)").set_value(64)
    next(m for m in at.multiselect if m.label == "variants").set_value(["sdpa_math"])
    next(m for m in at.multiselect if m.label.startswith("sequence lengths")).set_value([1])
    next(b for b in at.button if b.label == "Run capture").click()
    at.run(timeout=300)
    pages.assert_clean(at)
    new = page_store.query('SELECT mode, seq_len, kv_len, cold FROM traces WHERE run_id NOT IN '
                           '(SELECT unnest($ids))', {"ids": list(before)})
    assert set(new["mode"]) == {"decode"} and set(new["seq_len"]) == {1} and set(new["kv_len"]) == {64}
    assert sorted(new["cold"]) == [False, True]
