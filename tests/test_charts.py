"""charts.py on DataFrames queried from the hand-written store of test_queries (real DuckDB file).

Every chart must compile to a valid Vega-Lite spec (Altair validates in ``to_dict``) and carry no
fixed background or text colour, so Streamlit's light and dark themes both style it.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kernel_queries, pair_queries, queries as q, units
from profiler.present import charts, curve_charts, style
from tests.tiny_store import RUNS




def _spec(chart) -> dict:
    spec = chart.to_dict(validate=True)
    assert "background" not in spec
    assert not any("color" in str(k).lower() or "background" in str(k).lower()
               for v in spec.get("config", {}).values() if isinstance(v, dict) for k in v)
    assert spec["config"]["axis"]["labelFontSize"] >= 11                # readable type
    return spec


def _rows(spec: dict) -> list[dict]:
    (rows,) = spec["datasets"].values()
    return rows


def test_kernel_time_chart_keeps_the_top_kernels_of_each_run(tiny, labels):
    with tiny.connect() as con:     # a second, shorter kernel in runa
        con.execute("INSERT INTO kernels (run_id, name, ts_ns, dur_ns, iteration)"
                    " VALUES ('runa', 'softmax', 60000, 10000, 0)")
    spec = _spec(charts.kernel_time_chart(kernel_queries.kernel_table(tiny, RUNS), labels, top_n=1))
    rows = _rows(spec)
    assert {(r["run"], r["kernel"]) for r in rows} == {(labels["runa"], "cudnn_fwd"),
                                                       (labels["runb"], "flash_fwd")}
    assert [r["gpu_time_share_pct"] for r in rows if r["kernel"] == "cudnn_fwd"] == [75.0]


def test_launch_and_latency_charts(tiny, labels):
    spec = _spec(charts.launch_api_chart(q.launch_api_table(tiny, RUNS), labels))
    assert len(_rows(spec)) == 4
    scale = spec["layer"][0]["encoding"]["x"]["scale"]
    assert scale["zero"] is True and "type" not in scale               # linear unless asked
    assert len(spec["datasets"][spec["layer"][1]["data"]["name"]] if "data" in spec["layer"][1]
               else _rows(spec)) == 4                                   # a label per bar
    spec = _spec(charts.latency_histogram_chart(q.launch_latency_histogram(tiny, RUNS), labels))
    assert sum(r["launches"] for r in _rows(spec)) == 4
    assert all(r["top"] - r["floor"] == r["launches"] for r in _rows(spec))   # bars, not dashes
    assert spec["encoding"]["y2"]["field"] == "top"
    assert spec["encoding"]["x"]["scale"]["type"] == "log"


def test_cpu_gpu_chart_has_every_metric_of_every_iteration(tiny, labels):
    spec = _spec(charts.cpu_gpu_chart(q.iteration_cpu_gpu(tiny, RUNS), labels))
    rows = _rows(spec)
    assert len(rows) == 3 * len(charts.CPU_GPU_METRICS)
    api = [r["us"] for r in rows if r["metric"] == "launch calls" and r["run"] == labels["runa"]]
    assert sorted(api) == [1.0, 2.0]                                # launch calls only
    sync = [r["us"] for r in rows if r["metric"] == "synchronize" and r["run"] == labels["runa"]]
    assert sorted(sync) == [0.0, 40.0]


def test_cold_warm_and_op_charts(tiny, labels):
    spec = _spec(charts.cold_warm_chart(q.run_cpu_summary(tiny, RUNS)))
    first = {r["label"]: r["us"] for r in _rows(spec) if r["metric"] == "CPU, first iteration"}
    assert first == {labels["runa"]: 30.0, labels["runb"]: 8.0}
    assert {r["temperature"] for r in _rows(spec)} == {"cold", "unknown"}
    _spec(charts.op_self_time_chart(q.op_self_time(tiny, RUNS), labels))


def _runc(tiny) -> None:
    """runc: one cudnn_fwd kernel, runa's iteration 0 without its copy."""
    with tiny.connect() as con:
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events,"
                    " kernels, skipped_events, start_ns, end_ns)"
                    " VALUES ('runc', 'c.json', 'uploaded', now(), 1, 1, 1, 0, 0, 100000)")
        con.execute("INSERT INTO kernels (run_id, name, ts_ns, dur_ns) VALUES ('runc', 'cudnn_fwd', 0, 9000)")
    tiny.upkeep()


def test_alignment_views(tiny):
    _runc(tiny)
    aligned = pair_queries.kernel_alignment(tiny, "runa", "runc", 0)
    spec = _spec(charts.alignment_chart(aligned, "A", "B"))
    assert [(r["run"], r["status"]) for r in _rows(spec)] == [("A", "same"), ("A", "only in a"),
                                                               ("B", "same")]
    delta = _spec(charts.delta_chart(pair_queries.kernel_delta(tiny, "runa", "runc"), top_n=2))
    assert [r["kernel"] for r in _rows(delta)] == ["cudnn_fwd", "Memcpy DtoD (Device -> Device)"]


def test_per_run_and_search(tiny):
    table = kernel_queries.kernel_table(tiny, RUNS)
    parts = charts.per_run(table, ["runb", "runa"])
    assert [r for r, _ in parts] == ["runb", "runa"] and "run_id" not in parts[0][1].columns
    assert charts.search(table, "kernel", "FLASH")["kernel"].tolist() == ["flash_fwd"]
    assert len(charts.search(table, "kernel", "")) == 2
    assert charts.search(table, "kernel", "[").empty          # plain text, not a regex
    assert isinstance(charts.search(table, "kernel", None), pd.DataFrame)


def test_grouped_bars_give_every_bar_its_own_row_and_its_own_label(labels):
    runs = list(labels.values())
    data = pd.DataFrame({"name": ["k1", "k1", "k2", "k3"], "run": [runs[1], runs[0], runs[1], runs[0]],
                         "us": [2.0, 500.0, 1.0, 30.0]})
    chart = charts.grouped_bars(data, "name", "run", "us", style.run_scale(labels), "t", "µs",
                                ["name", "run", "us"], fmt=units.duration)
    spec = _spec(style.configure(chart))
    rows = [(r["row"], r["run"]) for r in _rows(spec)]
    # heaviest group first; inside it the runs in selection order; a blank-labelled second row
    assert rows == [("k1", runs[0]), ("k1" + charts.GAP, runs[1]), ("k3", runs[0]), ("k2", runs[1])]
    bars, text = spec["layer"]
    assert bars["encoding"]["y"]["sort"] == [r for r, _ in rows]
    # every bar, also the blank-labelled ones, carries its value and its run at its end
    assert text["mark"]["type"] == "text" and text["encoding"]["text"]["field"] == "bar_label"
    assert text["mark"]["color"] == style.LABEL_GREY  # not Vega's black: unreadable on the dark theme
    assert [r["bar_label"] for r in _rows(spec)] == [
        f"500 µs · {runs[0]}", f"2 µs · {runs[1]}", f"30 µs · {runs[0]}", f"1 µs · {runs[1]}"]
    scale = bars["encoding"]["x"]["scale"]
    assert scale.get("type") is None and scale["zero"] is True        # linear by default, 1 … 500
    assert scale["domainMax"] > 500                                    # room for the last label
    assert bars["encoding"]["color"]["scale"]["range"] == [labels.colours[r] for r in labels]
    logged = _spec(style.configure(charts.grouped_bars(data, "name", "run", "us", style.run_scale(labels),
                                                       "t", "µs", ["name", "run", "us"], log=True)))
    axis = logged["layer"][0]["encoding"]["x"]
    assert axis["scale"]["type"] == "log" and axis["title"] == "µs (log scale)"   # on request, labelled


def test_a_run_keeps_its_variant_colour_and_categories_theirs(labels):
    scale = style.run_scale(labels).to_dict()
    assert scale["domain"] == list(labels.values())
    # runa: a cold capture of a variant outside the palette; runb: an upload (by its run id)
    assert scale["range"] == [style.variant_colour("cudnn", cold=True), style.variant_colour(None, run_id="runb")]
    reversed_labels = style.RunLabels(dict(reversed(labels.items())), labels.colours)
    flipped = style.run_scale(reversed_labels).to_dict()
    assert dict(zip(flipped["domain"], flipped["range"])) == dict(zip(scale["domain"], scale["range"]))
    only_b = style.run_scale(labels, present=[labels["runb"]]).to_dict()   # the legend lists what is drawn
    assert only_b["domain"] == [labels["runb"]] and only_b["range"] == scale["range"][1:]
    kinds = style.category_colours(["kernel", "op"])
    assert kinds["range"] == [style.CATEGORY_COLOURS["kernel"], style.CATEGORY_COLOURS["op"]]
    assert not set(style.CATEGORY_COLOURS.values()) & set(style.RUN_COLOURS)


def test_short_kernel_names_fold_templates_and_stay_unique():
    flash = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
             "false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
             "false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)")
    nccl = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
    names = pd.Series([flash, flash.replace("64, 128", "128, 64"), "triton_tem_fused_0", flash,
                       "Memcpy DtoD (Device -> Device)", nccl])
    short = "flash_fwd_kernel<Flash_fwd_kernel_traits<…>, false, …>"  # demangled.short at 56 characters
    assert list(style.short_names(names)) == [short, f"{short} #2", "triton_tem_fused_0", short,
                                              "Memcpy DtoD (Device -> Device)",
                                              "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"]
    assert max(len(n) for n in style.short_names(names)) <= style.SHORT_NAME_CHARS + len(" #2")


def test_roofline_and_memory_charts_colour_runs_as_every_other_chart(labels):
    from profiler.present import memory_charts

    (a, la), (b, lb) = list(labels.items())[:2]
    roof = pd.DataFrame({"run_id": [b, a], "intensity": [256.0, 10.0], "tflops": [180.0, 2.0],
                         "bytes_per_iter": [1e6, 1e8], "flops_per_iter": [2.56e8, 1e9], "engine": ["tensor core"] * 2,
                         "dtype": ["bf16"] * 2, "roof_tflops": [989.4] * 2, "pct_of_roof": [18.2, 0.2],
                         "bound": ["compute", "memory"]})
    lines = pd.DataFrame({"gpu_name": ["H200"] * 2, "ceiling": ["bf16 tensor core"] * 2,
                          "intensity": [0.01, 10000.0], "tflops": [0.05, 989.4]})
    timeline = pd.DataFrame({"run_id": [b, a], "t_us": [0.0, 1.0], "iteration": [0, 0],
                             "total_allocated_bytes": [2**20, 2**21], "total_reserved_bytes": [2**21, 2**22]})
    starts = pd.DataFrame({"run": [lb, la], "t_ms": [0.0, 0.0], "iteration": [0, 0]})
    for chart in (curve_charts.roofline_chart(roof, lines, labels),
                  memory_charts.allocated_over_time_chart(timeline, starts, labels)):
        spec = _spec(style.configure(chart))
        scales = [layer["encoding"]["color"]["scale"] for layer in spec["layer"] if "color" in layer.get("encoding", {})]
        assert scales and all(s["domain"] == [lb, la] or s["domain"] == [la, lb] for s in scales)
        assert all(dict(zip(s["domain"], s["range"])) == {la: labels.colours[a], lb: labels.colours[b]}
                   for s in scales)


def test_the_roofline_fits_its_axes_to_the_points(labels):
    (a, _), (b, _) = list(labels.items())[:2]
    roof = pd.DataFrame({"run_id": [a, b], "intensity": [40.0, 160.0], "tflops": [2.0, 30.0]})
    lines = pd.DataFrame({"gpu_name": ["H200"] * 3, "ceiling": ["bf16 tensor core"] * 3,
                          "intensity": [0.01, 206.125, 10000.0], "tflops": [0.048, 989.4, 989.4]})
    (x_lo, x_hi), (y_lo, y_hi) = curve_charts.roofline_domain(roof.assign(run="r"), lines)
    m = curve_charts.ROOF_MARGIN
    assert (x_lo, x_hi) == (40.0 / m, 160.0 * m)                        # not 0.01 … 10,000
    assert y_lo == 2.0 / m
    assert abs(y_hi - 989.4 * 1.5) < 1e-6   # the roof over 13 … 480 FLOP/B reaches the bf16 peak
    spec = _spec(style.configure(curve_charts.roofline_chart(roof, lines, labels)))
    assert spec["layer"][0]["mark"]["clip"] is True                     # roofs cut at the axes
    assert spec["layer"][2]["encoding"]["x"]["scale"]["domain"] == [x_lo, x_hi]
    # below the ridge (206 FLOP/B) the roof is the memory slope: 4.8 TB/s × 60 FLOP/B
    low = curve_charts.ceiling_names(lines, 60.0)["tflops"].iloc[0]
    assert abs(low - 0.048 / 0.01 * 60.0) < 1e-6
