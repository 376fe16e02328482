"""Timeline page on the fixture store: a panel per run aligned at one iteration, URL-kept
iteration / window / scale, hover fields and correlation links in the chart spec, empty state."""
from __future__ import annotations

import json

import pytest

from tests.pages.conftest import FLASH, NAIVE, ROCM, param as _param


def _specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def _panels(at) -> list[dict]:
    """The bars layer of every panel of the page's one timeline chart."""
    (spec,) = _specs(at)
    return [view["layer"][0] for view in spec["vconcat"]]


def _domains(at) -> list[list[float]]:
    return [p["encoding"]["x"]["scale"]["domain"] for p in _panels(at)]


def _subtitle(spec: dict) -> str:
    """The caption of the first view that has one (a run's CPU view: its step's marks)."""
    return next(v["title"]["subtitle"] for v in spec["vconcat"] if "subtitle" in v["title"])


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_one_panel_per_run_on_one_chart(pages, page_store, run_ids):
    at = pages.open("timeline", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}")
    pages.assert_clean(at)
    panels = _panels(at)
    assert len(panels) == 4   # each run's GPU view first, next to the other's, then each run's CPU view
    (spec,) = _specs(at)
    titles = [view["title"]["text"] for view in spec["vconcat"]]
    assert [t.split(" · ")[0] for t in titles] == ["naive bf16 L=256", "sdpa_flash bf16 L=256"] * 2
    assert [t.rsplit(" · ", 1)[-1] for t in titles] == ["GPU", "GPU", "CPU", "CPU"]
    assert all(p["encoding"]["y"]["sort"] == ["GPU 0 · stream 7"] for p in panels[:2])
    lanes = panels[2]["encoding"]["y"]["sort"]
    assert lanes[0] == "thread 10 · depth 0" and lanes[-1] == "thread 10 · API"
    tips = {t["title"] for t in panels[2]["encoding"]["tooltip"]}
    assert {"name", "duration", "details"} <= tips
    assert {p["name"] for p in spec["params"]} >= {"zoom", "brush", "pick", "hover"}
    # both iterations are 400 µs long: the shared scale spans the whole ProfilerStep
    assert _domains(at) == [[0.0, 400.0]] * 4
    assert "ProfilerStep#0" in json.dumps(spec)


@pytest.mark.third_party
def test_iteration_window_and_scale_restore_from_the_url(pages, page_store, run_ids):
    at = pages.open("timeline", runs=f"{run_ids[NAIVE]},{run_ids[ROCM]}", iter="1",
                    window="10000,250000", scale="independent")
    pages.assert_clean(at)
    assert at.number_input[0].value == 1
    assert at.get("segmented_control")[1].proto.default == [1]   # "independent"
    assert "ProfilerStep#1" in json.dumps(_specs(at))
    assert _domains(at)[0] == [10.0, 250.0]


def test_zoom_buttons_move_the_window_in_the_url(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE])
    _button(at, "Zoom in").click().run()
    pages.assert_clean(at)
    assert _param(at, "window") == ["100000,300000"]                # the middle half of 400 µs
    assert _domains(at) == [[100.0, 300.0]] * 2   # the run's GPU view and its CPU view
    _button(at, "Later ▶").click().run()
    assert _param(at, "window") == ["200000,400000"]
    _button(at, "Whole iteration").click().run()
    assert "window" not in at.query_params


def test_search_is_kept_in_the_url_and_counted(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], find="aten::")
    pages.assert_clean(at)
    assert at.text_input[0].value == "aten::"
    (spec,) = _specs(at)
    assert "match “aten::”" in _subtitle(spec)


def test_panel_caption_counts_the_marks(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE])
    pages.assert_clean(at)
    # ProfilerStep#0 of the naive fixture: 3 CPU ops, 2 API calls, 1 kernel, 1 copy
    (spec,) = _specs(at)
    assert _subtitle(spec).startswith(
        "ProfilerStep#0: 7 marks (0 merge events shorter than a pixel)")


def test_an_unknown_scale_in_the_link_falls_back_to_shared(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], scale="sideways", iter="99")
    pages.assert_clean(at)
    assert at.get("segmented_control")[1].proto.default == [0]     # "shared"
    assert "ProfilerStep#1" in json.dumps(_specs(at))               # the run's last iteration


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("timeline")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)
