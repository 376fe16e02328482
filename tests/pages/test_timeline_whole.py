"""Timeline page, whole-trace span: the "One step / Whole trace" toggle, every step marked on the
views, a window in the trace's own time kept in the URL with the span, and views whose height does
not change with the window. Fixture naive_small.json: ProfilerStep#0 at 1000 µs (400 µs),
ProfilerStep#1 at 1500 µs (400 µs); its last event, a copy, ends at 1725 µs; so the trace is
1000–1900 µs and each step launches one kernel, 60 µs into it."""
from __future__ import annotations

import gzip
import json

import pytest

from tests.pages.conftest import NAIVE, PAGE_FIXTURES, ROCM, ROCM_TRACE, param as _param


def _spec(at) -> dict:
    (chart,) = at.get("vega_lite_chart")
    return json.loads(chart.proto.spec)


def _bars(view: dict) -> list[dict]:
    return view["layer"][0]["data"]["values"] if "values" in view["layer"][0].get("data", {}) \
        else view["data"]["values"]


def _steps(view: dict) -> list[tuple[float, float, str]]:
    """The steps a view marks (start, end, label), from its step-label layer."""
    layer = next(l for l in view["layer"] if l["mark"].get("type") == "text"
                 and l.get("data", {}).get("values") and "odd" in l["data"]["values"][0])
    return [(v["start_us"], v["end_us"], v["text"]) for v in layer["data"]["values"]]


def _span(at):
    return next(b for b in at.button_group if b.label == "Span")


def test_the_toggle_draws_the_whole_trace_with_every_step_marked(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE])
    pages.assert_clean(at)
    assert _span(at).value == "step" and "span" not in at.query_params    # one step is the default
    _span(at).set_value("trace").run()
    pages.assert_clean(at)
    assert _param(at, "span") == ["trace"]
    spec = _spec(at)
    gpu, cpu = spec["vconcat"]
    assert [v["layer"][0]["encoding"]["x"]["scale"]["domain"] for v in (gpu, cpu)] == [[0.0, 900.0]] * 2
    assert _steps(gpu) == _steps(cpu) == [(0.0, 400.0, "ProfilerStep#0 · 400 µs"),
                                          (500.0, 900.0, "ProfilerStep#1 · 400 µs")]
    kernels = sorted(r["start_us"] for r in _bars(gpu) if r["kind"] == "kernel")
    assert kernels == [60.0, 560.0]          # both steps' kernels, in the trace's time
    assert cpu["title"]["subtitle"].startswith("Whole trace, 2 steps (ProfilerStep#0 – ProfilerStep#1)")
    assert at.number_input[0].disabled       # no iteration to choose in the whole trace


def test_the_link_keeps_the_span_and_the_window(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], span="trace", window="450000,900000")
    pages.assert_clean(at)
    assert _span(at).value == "trace"
    gpu = _spec(at)["vconcat"][0]
    assert gpu["layer"][0]["encoding"]["x"]["scale"]["domain"] == [450.0, 900.0]
    assert [r["start_us"] for r in _bars(gpu) if r["kind"] == "kernel"] == [560.0]
    next(b for b in at.button if b.label == "Zoom in").click().run()
    assert _param(at, "window") == ["562500,787500"] and _param(at, "span") == ["trace"]
    next(b for b in at.button if b.label == "Whole trace").click().run()
    assert "window" not in at.query_params and _param(at, "span") == ["trace"]
    # back to one step: a window in the trace's time means nothing there, so it is dropped
    at = pages.open("timeline", runs=run_ids[NAIVE], span="trace", window="450000,900000")
    _span(at).set_value("step").run()
    pages.assert_clean(at)
    assert "span" not in at.query_params and "window" not in at.query_params
    assert "ProfilerStep#0" in json.dumps(_spec(at))


def test_zooming_the_whole_trace_keeps_every_lane_and_the_height(pages, page_store, run_ids):
    heights, lanes = [], []
    for window in (None, "1000,9000"):      # 8 µs at the trace's start: only the step's op there
        params = {"runs": run_ids[NAIVE], "span": "trace"} | ({"window": window} if window else {})
        at = pages.open("timeline", **params)
        pages.assert_clean(at)
        views = _spec(at)["vconcat"]
        heights.append([v["height"] for v in views])
        lanes.append([v["layer"][0]["encoding"]["y"]["scale"]["domain"] for v in views])
    assert heights[0] == heights[1] and lanes[0] == lanes[1]
    assert lanes[0][1] == ["thread 10 · depth 0", "thread 10 · depth 1", "thread 10 · depth 2",
                           "thread 10 · API"]
    # one step, same window: lanes without events in it are dropped, so the chart shrinks
    at = pages.open("timeline", runs=run_ids[NAIVE], window="1000,9000")
    assert sum(v["height"] for v in _spec(at)["vconcat"]) < sum(heights[0])


def test_a_range_on_the_whole_trace_lists_what_ran_across_steps(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], span="trace", range="0,900000")
    pages.assert_clean(at)
    (table,) = [t.value for t in at.dataframe if "events" in t.value.columns]
    kernel = table[table["kind"] == "kernel"]
    assert kernel["events"].tolist() == [2]      # one kernel in each step: the range spans both
    at = pages.open("timeline", runs=run_ids[NAIVE], span="trace", range="500000,900000")
    (table,) = [t.value for t in at.dataframe if "events" in t.value.columns]
    assert table.loc[table["kind"] == "kernel", "events"].tolist() == [1]


STORED = {"cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver", "kernel",
          "gpu_memcpy", "gpu_memset"}  # not Kineto's own "Trace" span of the profiler's session


def _trace_us(path) -> float:
    """A trace's length in µs from its raw JSON: first start to last end of its stored events."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        raw = json.load(f)
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"]))
             for e in (raw["traceEvents"] if isinstance(raw, dict) else raw)
             if e.get("ph") == "X" and e.get("cat") in STORED]
    return max(e for _, e in spans) - min(s for s, _ in spans)


@pytest.mark.third_party
def test_each_run_its_own_scale_shows_each_whole_trace(pages, page_store, run_ids):
    at = pages.open("timeline", runs=f"{run_ids[NAIVE]},{run_ids[ROCM]}", span="trace",
                    scale="independent")
    pages.assert_clean(at)
    views = _spec(at)["vconcat"]
    domains = {v["title"]["text"].split(" · ")[0][:5]: v["layer"][0]["encoding"]["x"]["scale"]["domain"]
               for v in views}
    naive, rocm = _trace_us(PAGE_FIXTURES / NAIVE), _trace_us(ROCM_TRACE)
    assert abs(rocm - naive) > 100, "the traces are as long as each other: the check is idle"
    assert domains["naive"] == [0.0, naive]
    assert [d for k, d in domains.items() if k != "naive"] and all(
        d == pytest.approx([0.0, rocm]) for k, d in domains.items() if k != "naive")


def test_the_iteration_stays_in_the_link_with_the_whole_trace_and_comes_back_with_one_step(pages, page_store, run_ids):
    at = pages.open("timeline", runs=run_ids[NAIVE], iter="1", span="trace")
    pages.assert_clean(at)
    assert _span(at).value == "trace" and at.number_input[0].disabled
    assert _param(at, "iter") == ["1"]                    # kept, not dropped, while the whole trace shows
    _span(at).set_value("step").run()
    pages.assert_clean(at)
    assert at.number_input[0].value == 1 and _param(at, "iter") == ["1"]
    gpu = _spec(at)["vconcat"][0]
    assert gpu["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0.0, 400.0]   # ProfilerStep#1's 400 µs
    kernels = [r["start_us"] for r in _bars(gpu) if r["kind"] == "kernel"]
    assert kernels == [60.0]
    assert "ProfilerStep#1" in _spec(at)["vconcat"][1]["title"]["subtitle"]
