"""Memory page (and the compare page's memory section) on two real H200 samples and a fixture
upload without memory events."""
from __future__ import annotations

from profiler.capture.samples import SAMPLES_DIR
from tests.pages.conftest import NAIVE, tables_with

MIB = 2**20


def _ingest_samples(store) -> dict[str, str]:
    ids = {}
    for variant in ("naive", "sdpa_flash"):
        (path,) = SAMPLES_DIR.glob(f"default/{variant}_b8_h16_s1024_d64_bf16_causal_warm.json.gz")
        ids[variant] = store.ingest(path, source="captured").run_id
    return ids


def test_memory_page_shows_peaks_iterations_and_live_blocks(pages, page_store, run_ids):
    ids = _ingest_samples(page_store)
    at = pages.open("memory", runs=f"{ids['naive']},{ids['sdpa_flash']},{run_ids[NAIVE]}")
    pages.assert_clean(at)
    (summary,) = tables_with(at, "peak_allocated_mib")[:1]
    peaks = summary.set_index("run_id")["peak_allocated_bytes"]
    assert peaks[ids["naive"]] >= 8 * peaks[ids["sdpa_flash"]]
    (per_iter,) = tables_with(at, "peak_above_start_mib")
    assert sorted(per_iter["iteration"].unique()) == [0, 1, 2]
    live = tables_with(at, "size_mib")
    assert len(live) == 2 and "aten::_softmax" in set(live[0]["op_name"]) | set(live[1]["op_name"])
    assert len(at.get("vega_lite_chart")) == 1
    text = [t.value for t in at.text]
    assert any(t.startswith("naive") and "score matrices" in t for t in text)
    assert "has no memory events" in pages.texts(at)  # the hand-written run, in plain words


def test_memory_page_for_runs_without_memory_events_says_so_plainly(pages, page_store, run_ids):
    at = pages.open("memory", runs=run_ids[NAIVE])
    pages.assert_clean(at)
    assert "profile_memory=True" in pages.texts(at)
    assert not at.get("vega_lite_chart")


def test_compare_has_a_memory_section(pages, page_store):
    ids = _ingest_samples(page_store)
    at = pages.open("compare", runs=f"{ids['naive']},{ids['sdpa_flash']}")
    pages.assert_clean(at)
    assert any("less)" in t.value and "MiB" in t.value for t in at.text)
