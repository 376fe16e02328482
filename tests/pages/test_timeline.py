"""Timeline page on the fixture store: a panel per run aligned at one iteration, URL-kept
iteration / window / scale, hover fields and correlation links in the chart spec, empty state."""
from __future__ import annotations

import json

import pytest

from tests.pages.conftest import FLASH, NAIVE, ROCM, param as _param


def _specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def test_one_panel_per_run_with_cpu_and_gpu_lanes(pages, page_store, run_ids):
    at = pages.open("timeline", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}")
    pages.assert_clean(at)
    specs = _specs(at)
    assert len(specs) == 2
    lanes = specs[0]["encoding"]["y"]["sort"]
    assert lanes[0] == "CPU 10 · depth 0" and lanes[-1] == "GPU 0 stream 7"
    assert "API 10" in lanes
    tooltip = {t["field"] for t in specs[0]["encoding"]["tooltip"]}
    assert {"grid", "registers_per_thread", "shared_mem_bytes", "est_occupancy_pct", "launch_api"} <= tooltip
    assert any(p["name"] == "pair" for p in specs[0]["params"])   # click links launch and kernel
    # both iterations are 400 µs long: the shared scale spans the whole ProfilerStep
    assert specs[0]["encoding"]["x"]["scale"]["domain"] == [0.0, 400.0]
    assert "ProfilerStep#0" in pages.texts(at)


@pytest.mark.third_party
def test_iteration_window_and_scale_restore_from_the_url(pages, page_store, run_ids):
    at = pages.open("timeline", runs=f"{run_ids[NAIVE]},{run_ids[ROCM]}", iter="1",
                    window="10000,250000", scale="independent")
    pages.assert_clean(at)
    assert at.number_input[0].value == 1
    assert at.slider[0].value == (10.0, 250.0)
    assert at.get("segmented_control")[0].proto.default == [1]   # "independent"
    assert "ProfilerStep#1" in pages.texts(at)
    domains = [s["encoding"]["x"]["scale"]["domain"] for s in _specs(at)]
    assert domains[0] == [10.0, 250.0]


def test_moving_the_window_is_written_to_the_url(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE])
    at.slider[0].set_value((20.0, 200.0)).run()
    pages.assert_clean(at)
    assert _param(at, "window") == ["20000,200000"]
    assert _specs(at)[0]["encoding"]["x"]["scale"]["domain"] == [20.0, 200.0]


def test_panel_caption_counts_the_marks(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE])
    pages.assert_clean(at)
    # ProfilerStep#0 of the naive fixture: 3 CPU ops, 2 API calls, 1 kernel, 1 copy
    assert "ProfilerStep#0: 7 marks (0 merge events shorter than a pixel)" in pages.texts(at)


def test_an_unknown_scale_in_the_link_falls_back_to_shared(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], scale="sideways", iter="99")
    pages.assert_clean(at)
    assert at.get("segmented_control")[0].proto.default == [0]     # "shared"
    assert "ProfilerStep#1" in pages.texts(at)                      # the run's last iteration


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("timeline")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)
