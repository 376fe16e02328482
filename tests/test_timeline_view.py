"""timeline_view on the hand-written store of tiny_store.py (real DuckDB): links and flow arrows
from the trace's ids, the window arithmetic of the page's buttons, the range statistics against a
computation written here, and the Vega-Lite spec's linked zoom."""
from __future__ import annotations

import json

from profiler.analysis.reads import timeline_queries, units
from profiler.present import timeline_steps, timeline_view as tv, timeline_window as tw


def _panels(tiny, shared=True, window=(0, 100_000)):
    return timeline_queries.timeline_panels(tiny, ["runa", "runb"], 0, window, shared)


def test_links_join_an_op_with_its_launches_and_kernels(tiny):
    marks = _panels(tiny)[0][3]
    rows = {(r["kind"], r["name"]): r["link"] for r in tv.panel_data(marks, 0, None)}
    # external id 3: the cuDNN op, both of its launches, its kernel (tiny_store's OPS/LAUNCHES)
    assert rows[("op", "aten::_cudnn_attention_forward")] == "0:3"
    assert rows[("driver", "cuLaunchKernel")] == rows[("runtime", "cudaMemcpyAsync")] == "0:3"
    assert rows[("kernel", "cudnn_fwd")] == "0:3"
    assert rows[("op", "ProfilerStep#1")] == "0:1"


def test_flows_go_from_the_op_to_the_launch_to_the_gpu_work(tiny):
    flows = tv.flow_data(_panels(tiny)[0][3], 0)
    segments = {}
    for r in flows:
        segments.setdefault(r["flow"], []).append((r["order"], r["lane"], r["start_us"]))
    got = sorted(tuple(p[1:] for p in sorted(s)) for s in segments.values())
    assert got == sorted([
        (("thread 7 · depth 2", 16.0), ("thread 7 · API", 16.0)),       # op ▶ cuLaunchKernel
        (("thread 7 · depth 2", 20.0), ("thread 7 · API", 20.0)),       # op ▶ cudaMemcpyAsync
        (("thread 7 · API", 16.0), ("GPU 0 · stream 7", 30.0)),         # launch ▶ cudnn_fwd
        (("thread 7 · API", 20.0), ("GPU 0 · stream 7", 50.0)),         # memcpy call ▶ the copy
    ])
    assert sum(r["head"] for r in flows) == 4


def test_search_marks_hits_and_tooltips_have_no_nulls(tiny):
    data = tv.panel_data(_panels(tiny)[0][3], 0, "CUDNN")
    assert {r["name"] for r in data if r["hit"]} == {"aten::_cudnn_attention_forward", "cudnn_fwd"}
    kernel = next(r for r in data if r["kind"] == "kernel")
    assert kernel["details"] == ("grid 8×1×1 · block 128×1×1 · 168 regs · 100,000 B shared · "
                                 "reported occupancy 0 % · via cuLaunchKernel")
    assert kernel["duration"] == "20 µs" and kernel["starts"] == "30 µs"
    assert all(v is not None for r in data for c, v in r.items() if c in dict(tv.TOOLTIP))


def test_window_buttons_zoom_about_the_centre_and_stay_inside():
    assert tw.zoom_window((0, 1000_000), 1000_000, 0.5) == (250_000, 750_000)
    assert tw.zoom_window((250_000, 750_000), 1000_000, 4.0) == (0, 1000_000)
    assert tw.pan_window((0, 200_000), 1000_000, 0.5) == (100_000, 300_000)
    assert tw.pan_window((900_000, 1000_000), 1000_000, 0.5) == (900_000, 1000_000)
    assert tw.pan_window((0, 200_000), 1000_000, -0.5) == (0, 200_000)


def test_brushed_range_from_the_selection_state():
    assert tw.brushed_ns({"brush": {"start_us": [250.5, 10.0]}}) == (10_000, 250_500)
    assert tw.brushed_ns({"brush": {}}) is None and tw.brushed_ns(None) is None


def test_range_stats_count_total_and_self_time_inside_the_range(tiny):
    stats = timeline_queries.timeline_range_stats(tiny, ["runa"], 0, (10_000, 20_000))
    got = {r.name: (r.events, r.total_ns, r.self_ns) for r in stats.itertuples()}
    # by hand from tiny_store: an event's time inside [10, 20) µs; ops' self time scaled by that share
    assert got == {
        "ProfilerStep#1": (1, 10_000, 70_000 * 10_000 / 100_000),
        "aten::scaled_dot_product_attention": (1, 10_000, round(20_000 * 10_000 / 30_000)),
        "aten::_cudnn_attention_forward": (1, 5_000, 10_000 * 5_000 / 10_000),
        "cuLaunchKernel": (1, 2_000, 2_000),
    }
    table = tw.range_table(stats, {"runa": "A"})
    assert table.loc[table["name"] == "ProfilerStep#1", "total"].item() == "10 µs"


def test_spec_links_zoom_on_a_shared_scale_and_not_on_independent_ones(tiny):
    panels = _panels(tiny)
    spec = tv.timeline_spec(panels, ["A", "B"], ["a", "b"], True)
    json.dumps(spec)  # plain JSON, ready for st.vega_lite_chart
    params = {p["name"]: p for p in spec["params"]}
    # views: the GPU lanes of A and B, then the CPU lanes of A and B
    assert [v["title"]["text"] for v in spec["vconcat"]] == [
        "A · ProfilerStep#1 · GPU", "B · (whole trace) · GPU", "A · CPU", "B · CPU"]
    assert params["zoom"]["bind"] == "scales"
    assert sorted(params["zoom"]["views"]) == ["panel_0", "panel_1", "panel_2", "panel_3"]
    assert params["zoom"]["select"]["zoom"].startswith("wheel!["), "plain wheel must scroll the page"
    assert spec["resolve"]["scale"]["x"] == "shared"
    assert [v["layer"][0]["encoding"]["x"]["scale"]["domain"] for v in spec["vconcat"]] == [[0, 100]] * 4
    own = tv.timeline_spec(_panels(tiny, False), ["A", "B"], ["a", "b"], False)
    zooms = {p["name"]: p["views"] for p in own["params"] if p["name"].startswith("zoom")}
    assert zooms == {"zoom_0": ["panel_0", "panel_2"], "zoom_1": ["panel_1", "panel_3"]}, \
        "a run's GPU and CPU views zoom together, apart from the other run's"
    assert own["resolve"]["scale"]["x"] == "independent"
    assert [v["layer"][0]["encoding"]["x"]["scale"]["domain"] for v in own["vconcat"]] == [
        [0, 100], [0, 50], [0, 100], [0, 50]]
    assert spec["config"]["axis"]["labelFontSize"] >= 11


def test_each_panel_draws_only_its_own_iteration(tiny):
    # runa's iteration 0 is 100 µs; a 150 µs window must not draw iteration 1's ops
    (_, _, domain, marks, _, *_), _ = timeline_queries.timeline_panels(tiny, ["runa", "runb"], 0, (0, 150_000), True)
    assert domain == (0.0, 150.0) and "ProfilerStep#2" not in set(marks["name"])
    assert marks["start_us"].max() < 100


def test_scale_hint_only_past_a_hundredfold():
    import pandas as pd
    short, long = pd.DataFrame({"end_us": [2.0]}), pd.DataFrame({"end_us": [500.0]})
    assert timeline_steps.scale_hint([(0, 0, 0, short), (0, 0, 0, long)]) == 250
    assert timeline_steps.scale_hint([(0, 0, 0, short), (0, 0, 0, short)]) is None
    assert units.duration(1_050_000) == "1.05 s"


def test_collapsed_cpu_lanes_name_only_the_innermost_ops(tiny):
    marks = _panels(tiny, window=(0, 200_000))[0][3]
    ops = marks[marks["kind"] == "op"]
    collapsed = tv.collapse_depths(marks)
    cpu = collapsed[collapsed["lane_group"] == 0]
    assert set(cpu["lane"]) == {"thread 7 · ops"} and len(cpu) == len(ops)
    assert cpu["level"].is_monotonic_increasing, "deeper ops must be drawn over the outer ones"
    # by brute force: an op is named when no op one level deeper starts inside it
    inner = {r.name for r in ops.itertuples()
             if not any(o.level == r.level + 1 and r.start_us <= o.start_us < r.end_us
                        for o in ops.itertuples())}
    assert {"ProfilerStep#1", "aten::scaled_dot_product_attention"}.isdisjoint(inner)
    data = tv.panel_data(collapsed, 0, None)
    assert {r["name"] for r in data if r["kind"] == "op" and r["label"]} == inner
    assert all(r["label"] == r["name"] for r in data if r["kind"] != "op")   # API and GPU rows
    assert tv.collapse_depths(marks[marks["lane_group"] > 0]).equals(marks[marks["lane_group"] > 0])


def test_a_panel_past_its_steps_end_says_so(tiny):
    # runa's ProfilerStep#1 is 100 µs long: a window from 120 µs draws none of it (nor step 2)
    panel = timeline_queries.timeline_panels(tiny, ["runa"], 0, (120_000, 180_000), True)[0]
    assert panel.marks.empty and panel.step_end_us == 100
    assert tw.empty_note("A", panel) == ("A: ProfilerStep#1 ends at 100 µs, before this window "
                                         "(120 µs – 180 µs); later steps are not drawn.")
    spec = tv.timeline_spec(_panels(tiny), ["A", "B"], ["a", "b"], True, brush_us=(10.0, 20.0))
    brush = next(p for p in spec["params"] if p["name"] == "brush")
    assert brush["value"] == {"x": [10.0, 20.0]}
    # every view draws the range and names its bars; a view whose window holds its step's end
    # draws the end as a labelled rule
    for view in spec["vconcat"]:
        assert any(layer.get("transform", [{}])[0].get("calculate", "").startswith("brush")
                   for layer in view["layer"])
        assert any(layer["mark"]["type"] == "text" and layer["encoding"]["text"]["field"] == "label"
                   for layer in view["layer"])
    ends = [layer["data"]["values"][0]["text"] for view in spec["vconcat"] for layer in view["layer"]
            if layer["mark"]["type"] == "text" and "data" in layer
            and "text" in layer["data"]["values"][0]]
    assert "ProfilerStep#1 ends at 100 µs · later steps not drawn" in ends
