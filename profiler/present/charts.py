"""DataFrame ▶ Altair (and the small table shaping pages need), for every analysis page.

Charts use no fixed text or background colours, so the Streamlit theme (light or dark) styles
axes and labels; mark colours, type sizes and units come from ``style`` (a run keeps its colour on
every page; categories have fixed colours of their own). Functions
are named after the query whose DataFrame they draw (``kernel_table`` ▶ ``kernel_time_chart``).
``labels`` arguments map run ids to the labels of ``queries.run_labels``.
"""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from profiler.present import style

PALETTE = "tableau10"
FACET_WIDTH_PX = 900   # faceted charts cannot stretch to the container
ROW_PX = 16            # one bar of a grouped bar chart
GAP = "\u200b"          # zero-width space: rows of a group after its first one (blank label)
TOP_N = 15


def label_map(labels: pd.DataFrame) -> dict[str, str]:
    """``run_labels`` DataFrame ▶ {run_id: label}."""
    return dict(zip(labels["run_id"], labels["label"]))


def per_run(df: pd.DataFrame, run_ids) -> list[tuple[str, pd.DataFrame]]:
    """The rows of each run, in ``run_ids`` order, without the run_id column."""
    return [(r, df[df["run_id"] == r].drop(columns="run_id").reset_index(drop=True))
            for r in run_ids]


def search(df: pd.DataFrame, column: str, text: str | None) -> pd.DataFrame:
    """Rows whose ``column`` contains ``text`` (case-insensitive, plain text); all when empty."""
    if not text:
        return df
    return df[df[column].astype(str).str.contains(text, case=False, regex=False)]


TIP_TITLES = {  # tooltip rows in words, not column names
    "kernel": "kernel (full name)", "us_per_iter": "µs per iteration",
    "gpu_time_share_pct": "% of the run's summed kernel time", "calls_per_iter": "calls per iteration",
    "mean_us": "mean µs per call", "est_occupancy_pct": "reported occupancy (%)",
    "api_kind": "kind", "api_us_per_iter": "µs in the call per iteration",
    "kernels_launched_per_iter": "kernels launched per iteration",
    "memops_launched_per_iter": "copies / sets launched per iteration",
    "bin_start_us": "from µs", "bin_end_us": "to µs", "self_us_per_iter": "self µs per iteration",
    "total_us_per_iter": "µs per iteration incl. children", "self_share_pct": "share of CPU self time (%)",
    "us": "µs", "wall_us": "iteration wall time (µs)", "label": "run", "dur_us": "µs",
    "us_delta": "µs per iteration, b − a", "us_a": "µs per iteration, a", "us_b": "µs per iteration, b",
    "seq_len": "sequence length", "min_us": "fastest iteration (µs)", "median_us": "median (µs)",
    "max_us": "slowest iteration (µs)", "runs": "captures",
}


def _tips(df: pd.DataFrame, columns: list[str]) -> list[alt.Tooltip]:
    """Typed tooltip channels with readable titles (typed: strings make Altair rebuild its
    schema index, ~10 ms each)."""
    kind = {c: "Q" if pd.api.types.is_numeric_dtype(df[c]) else "N" for c in columns if c in df}
    return [alt.Tooltip(f"{c}:{kind[c]}", title=TIP_TITLES.get(c, c.replace("_", " ")),
                        format=",.4~r" if kind[c] == "Q" else alt.Undefined)
            for c in columns if c in kind]


def with_runs(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """One table for several runs: a ``run`` label column first, and for kernel tables a short
    ``name`` next to the full ``kernel`` name."""
    order = {run: i for i, run in enumerate(labels)}
    out = _with_labels(df, labels).sort_values("run_id", key=lambda r: r.map(order), kind="stable")
    if "kernel" in out:
        out = out.assign(name=style.short_names(out["kernel"]))
    return out[["run", *[c for c in out.columns if c != "run"]]]


def _run_rows() -> alt.Row:
    """One facet row per run, its label above it (long labels would squeeze a left header)."""
    return alt.Row("run:N", title=None, header=alt.Header(
        labelOrient="top", labelAnchor="start", labelAngle=0, labelAlign="left", labelLimit=800))


def _with_labels(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    return df.assign(run=df["run_id"].map(labels).fillna(df["run_id"]))


# ── grouped bars: one row per (name, run), the name on its group's first row ─────────────────

def grouped_bars(data: pd.DataFrame, name: str, series: str, value: str, colour: alt.Scale,
                 title: str, x_title: str, tooltip: list[str]) -> alt.Chart:
    """Horizontal bars, a group per ``name`` (heaviest first) and a bar per ``series`` in it.
    Every bar has a row of its own, so bars cannot slide off their label (a ``yOffset`` band is
    sized for every series, also those a name lacks); the name labels the group's first row.
    Values spanning more than 100× get a log scale."""
    data = data.dropna(subset=[value])
    data = data[data[value] > 0] if style.is_log(style.value_scale(data[value])) else data
    order = data.groupby(name)[value].max().sort_values(ascending=False).index
    series_order = {s: i for i, s in enumerate(colour.to_dict().get("domain", []))}
    data = data.assign(_g=data[name].map({n: i for i, n in enumerate(order)}),
                       _s=data[series].map(series_order).fillna(len(series_order)))
    data = data.sort_values(["_g", "_s"]).reset_index(drop=True)
    data["row"] = data[name].astype(str) + data.groupby("_g").cumcount().map(lambda k: GAP * k)
    scale = style.value_scale(data[value])
    log = style.is_log(scale)
    base = 10 ** math.floor(math.log10(data[value].min())) if log else 0
    return alt.Chart(data.drop(columns=["_g", "_s"]), title=title).mark_bar().encode(
        x=alt.X(f"{value}:Q", title=x_title + (" (log scale)" if log else ""),
                scale=alt.Scale(type="log", domainMin=base) if log else scale),
        x2=alt.X2(datum=base),  # a log scale has no zero: bars start a decade below the least
        y=alt.Y("row:N", sort=list(data["row"]), title=None, axis=alt.Axis(
            labelLimit=380, labelOverlap=False,  # rows are taller than the type: hide none
            labelExpr=f"indexof(datum.value, '{GAP}') >= 0 ? '' : datum.value")),
        color=alt.Color(f"{series}:N", scale=colour, title=None,
                        legend=alt.Legend(orient="top", columns=2)),
        tooltip=_tips(data, tooltip),
    ).properties(height=alt.Step(ROW_PX))


# ── kernels ──────────────────────────────────────────────────────────────────────────────────

def kernel_time_chart(kernels: pd.DataFrame, labels: dict[str, str], top_n: int = 8):
    """GPU time per iteration of each run's ``top_n`` heaviest kernels, a bar per run; the share
    of the run's GPU time and the full name are in the tooltip."""
    top = kernels.sort_values("us_per_iter", ascending=False).groupby("run_id").head(top_n)
    data = _with_labels(kernels[kernels["kernel"].isin(top["kernel"])], labels)
    data = data.assign(name=style.short_names(data["kernel"]))
    return style.configure(grouped_bars(
        data, "name", "run", "us_per_iter", style.run_scale(labels),
        f"GPU time per iteration, top {top_n} kernels of each run", "µs per iteration",
        ["run", "kernel", "us_per_iter", "gpu_time_share_pct", "calls_per_iter", "mean_us",
         "grid", "block", "est_occupancy_pct"]))


# ── launches ─────────────────────────────────────────────────────────────────────────────────

def launch_api_chart(apis: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Calls per iteration of each runtime / driver API, a bar per run (log scale when runs differ
    by orders of magnitude); the y label names the API and its category."""
    data = _with_labels(apis, labels).assign(
        api_label=lambda d: d["api"] + "  (" + d["category"] + ", " + d["api_kind"] + ")")
    return style.configure(grouped_bars(
        data, "api_label", "run", "calls_per_iter", style.run_scale(labels),
        "API calls per iteration", "calls per iteration",
        ["run", "api", "api_kind", "category", "calls_per_iter", "api_us_per_iter", "mean_us",
         "kernels_launched_per_iter", "memops_launched_per_iter"]))


def latency_histogram_chart(hist: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Launch latency distribution (log-spaced bins), one row per run, the APIs of a bin stacked
    (bars run from the stack's floor: a ranged x with a bare y would draw floating dashes)."""
    data = _with_labels(hist, labels).sort_values(["run", "bin_start_us", "api"])
    top = data.groupby(["run", "bin_start_us"])["launches"].cumsum()
    data = data.assign(top=top, floor=top - data["launches"])
    apis = sorted(data["api"].unique())
    return style.configure(alt.Chart(data).mark_rect(opacity=0.85).encode(
        x=alt.X("bin_start_us:Q", scale=alt.Scale(type="log"),
                title="launch latency: API start → kernel start (µs, log)"),
        x2=alt.X2("bin_end_us"),
        y=alt.Y("floor:Q", title="launches"), y2=alt.Y2("top"),
        color=alt.Color("api:N", scale=alt.Scale(domain=apis, scheme="set2"),
                        legend=alt.Legend(orient="top")),
        row=_run_rows(),
        tooltip=_tips(data, ["run", "api", "bin_start_us", "bin_end_us", "launches"]),
    ).properties(height=120, width=FACET_WIDTH_PX).resolve_scale(y="independent"))


# ── CPU cost ─────────────────────────────────────────────────────────────────────────────────

CPU_GPU_METRICS = {"cpu_op_self_us": "CPU ops (self)", "launch_api_us": "launch calls",
                   "sync_us": "synchronize", "gpu_kernel_us": "GPU kernels",
                   "gpu_memop_us": "GPU memcpy/memset"}


def cpu_gpu_chart(per_iter: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """CPU vs GPU time of every iteration, a row per run."""
    data = _with_labels(per_iter, labels).melt(
        id_vars=["run", "iteration", "wall_us"], value_vars=list(CPU_GPU_METRICS),
        var_name="metric", value_name="us")
    data["metric"] = data["metric"].map(CPU_GPU_METRICS)
    metrics = list(CPU_GPU_METRICS.values())
    return style.configure(alt.Chart(data).mark_bar().encode(
        x=alt.X("iteration:O", title="iteration"),
        xOffset=alt.XOffset("metric:N", sort=metrics),
        y=alt.Y("us:Q", title="µs"),
        color=alt.Color("metric:N", sort=metrics, scale=style.category_scale(metrics),
                        legend=alt.Legend(orient="top", title=None)),
        row=_run_rows(),
        tooltip=_tips(data, ["run", "iteration", "metric", "us", "wall_us"]),
    ).properties(height=110, width=FACET_WIDTH_PX).resolve_scale(y="independent"))


def op_self_time_chart(ops: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Self CPU time per iteration of the heaviest ops, a bar per run."""
    data = _with_labels(ops, labels)
    return style.configure(grouped_bars(
        data, "op", "run", "self_us_per_iter", style.run_scale(labels),
        "Self CPU time per iteration by op", "self µs per iteration",
        ["run", "op", "calls_per_iter", "self_us_per_iter", "total_us_per_iter", "self_share_pct"]))


COLD_WARM = {"first_iter_cpu_us": "CPU, first iteration", "later_iter_cpu_us": "CPU, later (mean)",
             "gpu_kernel_us": "GPU kernels (mean)"}


def cold_warm_chart(summary: pd.DataFrame) -> alt.Chart:
    """Per run: CPU time of the first iteration vs the later ones, next to GPU kernel time
    (log scale when they span more than 100×: a cold cuDNN call dwarfs warm ones)."""
    data = summary.assign(temperature=summary["cold"].map({True: "cold", False: "warm"})
                          .fillna("unknown")).melt(id_vars=["label", "temperature"],
                                                   value_vars=list(COLD_WARM), var_name="metric",
                                                   value_name="us").dropna(subset=["us"])
    data["metric"] = data["metric"].map(COLD_WARM)
    return style.configure(grouped_bars(
        data, "label", "metric", "us", style.category_scale(list(COLD_WARM.values())),
        "Cold vs warm: time per iteration", "µs per iteration",
        ["label", "temperature", "metric", "us"]))


# ── compare ──────────────────────────────────────────────────────────────────────────────────

ALIGN_STATUSES = ["same", "same family", "replaced", "only in a", "only in b"]


def alignment_chart(aligned: pd.DataFrame, label_a: str, label_b: str) -> alt.Chart:
    """Two strips, one per run: a cell per aligned kernel slot, coloured by whether it is in both
    runs or only one; hover shows the kernel."""
    a = aligned.dropna(subset=["name_a"]).assign(run=label_a, name=lambda d: d["name_a"],
                                                  dur_us=lambda d: d["dur_us_a"])
    b = aligned.dropna(subset=["name_b"]).assign(run=label_b, name=lambda d: d["name_b"],
                                                  dur_us=lambda d: d["dur_us_b"])
    data = pd.concat([a, b])[["slot", "run", "name", "dur_us", "status", "family"]]
    return style.configure(alt.Chart(data, title="Kernel sequence of one iteration, aligned").mark_rect().encode(
        x=alt.X("slot:O", title="aligned position", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("run:N", sort=[label_a, label_b], title=None, axis=alt.Axis(labelLimit=320)),
        color=alt.Color("status:N", scale=alt.Scale(domain=ALIGN_STATUSES, scheme=PALETTE),
                        legend=alt.Legend(orient="top", title=None)),
        tooltip=_tips(data, ["run", "slot", "name", "dur_us", "status", "family"]),
    ).properties(height=alt.Step(34)))  # a fixed row height: the legend above cannot squash the strips


def delta_chart(delta: pd.DataFrame, top_n: int = TOP_N) -> alt.Chart:
    """Change in time per iteration (b − a) of the kernels that changed most (short names on the
    axis, the full name in the tooltip)."""
    data = delta.reindex(delta["us_delta"].abs().sort_values(ascending=False).index).head(top_n)
    data = data.assign(name=style.short_names(data["kernel"]))
    presence = ["both", "only in a", "only in b"]
    return style.configure(alt.Chart(data, title="GPU time per iteration, b − a").mark_bar().encode(
        x=alt.X("us_delta:Q", title="µs per iteration (b − a)"),
        y=alt.Y("name:N", sort="-x", title=None, axis=alt.Axis(labelLimit=380)),
        color=alt.Color("presence:N", scale=alt.Scale(domain=presence, range=[
            style.CATEGORY_COLOURS["op"], style.CATEGORY_COLOURS["runtime"],
            style.CATEGORY_COLOURS["kernel"]]), legend=alt.Legend(orient="top", title=None)),
        tooltip=_tips(data, ["kernel", "calls_a", "calls_b", "us_a", "us_b", "us_delta",
                             "presence"]),
    ).properties(height=alt.Step(ROW_PX + 4)))


# ── roofline ─────────────────────────────────────────────────────────────────────────────────

def roofline_usable(roof: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``roofline.roofline_table`` that have a point to draw (FLOPs, bytes and time)."""
    if roof.empty or "tflops" not in roof:
        return roof.iloc[0:0]
    return roof[(roof["tflops"] > 0) & roof["intensity"].notna()]


def _under_roof(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["suspect"].isna()] if "suspect" in frame else frame


def roofline_chart(roof: pd.DataFrame, lines: pd.DataFrame, labels: dict[str, str],
                   ops: pd.DataFrame | None = None) -> alt.LayerChart:
    """Log-log roofline: the memory slope and one ceiling per engine (``roofline.ceilings``), a
    point per run (``roofline.roofline_table``) and, when given, a cross per op (``ops_table``).
    A point above its roof is a share above 100 % (`rating.suspect`): not drawn; the tables
    beside the chart say which figure is wrong."""
    roof, ops = _under_roof(roof), None if ops is None else _under_roof(ops)
    points = roof.assign(run=roof["run_id"].map(labels).fillna(roof["run_id"]), what="run")
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP / byte moved)")
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="TFLOP/s")
    roof_lines = alt.Chart(lines).mark_line(strokeDash=[6, 3], color="#555").encode(
        x=x, y=y, detail="ceiling:N", tooltip=_tips(lines, ["gpu_name", "ceiling", "intensity", "tflops"]))
    names = lines.sort_values("intensity").groupby("ceiling", as_index=False).last()
    label = alt.Chart(names).mark_text(align="right", dy=-8, color="#555").encode(x=x, y=y, text="ceiling:N")
    runs = alt.Chart(points).mark_point(filled=True, size=110).encode(
        x=x, y=y, color=alt.Color("run:N", scale=style.run_scale(labels),
                                  legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=_tips(points, ["run", "tflops", "intensity", "bytes_per_iter", "flops_per_iter",
                               "engine", "dtype", "roof_tflops", "pct_of_roof", "bound"]))
    layers = [roof_lines, label, runs]
    if ops is not None and not ops.empty:
        op_points = ops[(ops["tflops"] > 0) & ops["intensity"].notna()].assign(
            run=lambda f: f["run_id"].map(labels).fillna(f["run_id"]))
        layers.append(alt.Chart(op_points).mark_point(shape="cross", size=70).encode(
            x=x, y=y, color=alt.Color("run:N", scale=style.run_scale(labels)),
            tooltip=_tips(op_points, ["run", "op", "shape", "dtype", "engine", "tflops", "intensity", "bound"])))
    return alt.layer(*layers, title="Roofline: modelled FLOPs and bytes per iteration over their kernel time"
                     ).properties(height=360)


# ── sweep ────────────────────────────────────────────────────────────────────────────────────

SWEEP_METRICS = {"gpu_busy_us_per_iter": "GPU busy time per iteration",
                 "cpu_busy_us_per_iter": "CPU time (launching thread) per iteration"}
SWEEP_SHAPE = ["batch", "heads", "head_dim", "dtype", "causal"]


def sweep_series(sweep: pd.DataFrame) -> pd.DataFrame:
    """``roofline.sweep_table`` rows of the (variant, shape) series measured at two or more
    sequence lengths, with a ``series`` label (the variant, plus the shape when several)."""
    keys = ["variant", *SWEEP_SHAPE]
    lengths = sweep.groupby(keys, dropna=False)["seq_len"].transform("nunique")
    out = sweep[lengths >= 2].copy()
    if out.empty:
        return out.assign(series=pd.Series(dtype=str))
    shapes = out[SWEEP_SHAPE].astype(str).agg(" ".join, axis=1)
    out["series"] = out["variant"] if shapes.nunique() <= 1 else out["variant"] + " · " + shapes
    return out.reset_index(drop=True)


def sweep_spread(iterations: pd.DataFrame) -> pd.DataFrame:
    """``roofline.sweep_iterations`` ▶ per series, sequence length and metric: the min, median
    and max over every iteration of every capture, and how many captures and iterations."""
    rows = sweep_series(iterations)
    if rows.empty:
        return pd.DataFrame(columns=["series", "seq_len", "metric", "min_us", "median_us",
                                     "max_us", "captures", "iterations"])
    long = rows.melt(id_vars=["series", "seq_len", "run_id"], value_vars=list(SWEEP_METRICS),
                     var_name="metric", value_name="us")
    long["metric"] = long["metric"].map(SWEEP_METRICS)
    return long.groupby(["series", "seq_len", "metric"], as_index=False).agg(
        min_us=("us", "min"), median_us=("us", "median"), max_us=("us", "max"),
        captures=("run_id", "nunique"), iterations=("us", "count"))


def sweep_chart(series: pd.DataFrame, spread: pd.DataFrame, crossings: list[dict]) -> alt.Chart:
    """GPU (solid) and CPU (dashed) time per iteration vs sequence length on one log-log scale,
    a colour per variant: the lines join the means, the bars span min–max over the iterations
    of every capture (a tick at the median), and dotted rules mark where two variants cross."""
    data = series.melt(id_vars=["series", "seq_len", "runs"], value_vars=list(SWEEP_METRICS),
                       var_name="metric", value_name="us_per_iter")
    data["metric"] = data["metric"].map(SWEEP_METRICS)
    names = sorted(series["series"].unique())
    colour = alt.Scale(domain=names, range=[style.RUN_COLOURS[i % len(style.RUN_COLOURS)]
                                            for i in range(len(names))])
    lengths = sorted(series["seq_len"].unique().tolist())
    x = alt.X("seq_len:Q", title="sequence length", scale=alt.Scale(type="log", base=2),
              axis=alt.Axis(values=lengths))
    y_scale = alt.Scale(type="log")
    metric_dash = alt.StrokeDash("metric:N", sort=list(SWEEP_METRICS.values()), title=None,
                                 scale=alt.Scale(domain=list(SWEEP_METRICS.values()),
                                                 range=[[1, 0], [6, 4]]),
                                 legend=None)  # said in the y title: dash symbols read poorly
    lines = alt.Chart(data).mark_line(point=True).encode(
        x=x, y=alt.Y("us_per_iter:Q", scale=y_scale,
                     title="µs per iteration (log) · solid: GPU · dashed: CPU"),
        color=alt.Color("series:N", title="variant", scale=colour, legend=alt.Legend(orient="top")),
        strokeDash=metric_dash,
        tooltip=_tips(data, ["series", "metric", "seq_len", "us_per_iter", "runs"]))
    bars = alt.Chart(spread).mark_rule(strokeWidth=2, opacity=0.6).encode(
        x=x, y=alt.Y("min_us:Q", scale=y_scale), y2="max_us", color=alt.Color("series:N", scale=colour),
        tooltip=_tips(spread, ["series", "metric", "seq_len", "min_us", "median_us", "max_us",
                               "captures", "iterations"]))
    ticks = alt.Chart(spread).mark_tick(thickness=2, size=12, orient="horizontal").encode(
        x=x, y=alt.Y("median_us:Q", scale=y_scale), color=alt.Color("series:N", scale=colour))
    layers = [bars, ticks, lines]
    if crossings:
        cross = pd.DataFrame([{"seq_len": (c["seq_len_lo"] * c["seq_len_hi"]) ** 0.5,
                               "text": f"{c['faster_below']} ⇄ {c['faster_above']}"}
                              for c in crossings])
        rule = alt.Chart(cross).mark_rule(strokeDash=[2, 3], color="gray").encode(
            x=x, tooltip=[alt.Tooltip("text:N", title="crossover")])
        label = alt.Chart(cross).mark_text(align="left", dx=4, dy=-4, baseline="top",
                                           fontSize=style.FONT_PX, color="gray").encode(
            x=x, y=alt.value(4), text="text:N")
        layers += [rule, label]
    return style.configure(alt.layer(*layers).properties(
        width="container", height=380, padding={"left": 5, "top": 5, "right": 24, "bottom": 5}))
