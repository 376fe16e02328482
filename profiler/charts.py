"""DataFrame ▶ Altair (and the small table shaping pages need), for every analysis page.

Charts use no fixed text or background colours, so the Streamlit theme (light or dark) styles
axes and labels; marks use the ``tableau10`` palette, which reads on both backgrounds. Functions
are named after the query whose DataFrame they draw (``kernel_table`` ▶ ``kernel_time_chart``).
``labels`` arguments map run ids to the labels of ``queries.run_labels``.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

PALETTE = "tableau10"
HIGHLIGHT = "#e45756"   # selected launch/kernel pair: visible on light and dark backgrounds
LANE_PX = 24           # per timeline row
AXES_PX = 90           # title, x axis and its label: autosize "fit" counts them in the height
FACET_WIDTH_PX = 760   # faceted charts cannot stretch to the container
EVENT_KINDS = ["op", "runtime", "driver", "kernel", "memcpy", "memset", "merged"]
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


def _tips(df: pd.DataFrame, columns: list[str]) -> list[alt.Tooltip]:
    """Typed tooltip channels (strings make Altair rebuild its schema index: ~10 ms each)."""
    kind = {c: "Q" if pd.api.types.is_numeric_dtype(df[c]) else "N" for c in columns if c in df}
    return [alt.Tooltip(f"{c}:{kind[c]}") for c in columns if c in kind]


def _run_rows() -> alt.Row:
    """One facet row per run, its label above it (long labels would squeeze a left header)."""
    return alt.Row("run:N", title=None, header=alt.Header(
        labelOrient="top", labelAnchor="start", labelAngle=0, labelAlign="left", labelLimit=800))


def _with_labels(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    return df.assign(run=df["run_id"].map(labels).fillna(df["run_id"]))


# ── timeline ─────────────────────────────────────────────────────────────────────────────────

TIMELINE_TOOLTIP = ["name", "kind", "dur_us", "start_us", "events", "grid", "block",
                    "registers_per_thread", "shared_mem_bytes", "est_occupancy_pct",
                    "launch_api", "correlation"]


def lane_order(marks: pd.DataFrame) -> list[str]:
    """CPU op rows (by depth), then API rows, then GPU streams."""
    lanes = marks[["lane_group", "lane", "level"]].drop_duplicates("lane")
    return lanes.sort_values(["lane_group", "lane", "level"])["lane"].tolist()


def timeline_chart(marks: pd.DataFrame, title: str,
                   x_domain_us: tuple[float, float] | None = None) -> alt.Chart:
    """One panel: a bar per mark on its lane; zoom/pan on time; clicking a launch or kernel
    outlines every mark with its correlation id (the launch and what it launched)."""
    pair = alt.selection_point(fields=["link"], on="click", empty=False, name="pair")
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    scale = alt.Scale(domain=list(x_domain_us)) if x_domain_us else alt.Undefined
    lanes = lane_order(marks)
    data = _linked(marks)
    return alt.Chart(data, title=alt.Title(title, anchor="start", fontSize=12)).mark_bar(
        clip=True).encode(
        x=alt.X("start_us:Q", title="µs from iteration start", scale=scale),
        x2=alt.X2("end_us"),
        y=alt.Y("lane:N", sort=lanes, title=None,
                axis=alt.Axis(labelLimit=220, labelOverlap=False)),
        color=alt.Color("kind:N", scale=alt.Scale(domain=EVENT_KINDS, scheme=PALETTE),
                        title="event"),
        stroke=alt.StrokeValue(None, condition={"param": "pair", "value": HIGHLIGHT, "empty": False}),
        strokeWidth=alt.StrokeWidthValue(0, condition={"param": "pair", "value": 3, "empty": False}),
        tooltip=_tips(data, TIMELINE_TOOLTIP),
    ).add_params(pair, zoom).properties(height=LANE_PX * max(len(lanes), 1) + AXES_PX)


def _linked(marks: pd.DataFrame) -> pd.DataFrame:
    """Marks with a ``link`` key: the correlation id, or a key of its own for marks without one
    (ops, merged buckets), so clicking them highlights nothing else."""
    own = "m" + pd.Series(range(len(marks)), index=marks.index).astype(str)
    link = marks["correlation"].astype("string").fillna(own)
    keep = [c for c in TIMELINE_TOOLTIP + ["lane", "end_us"] if c in marks.columns]
    return marks[keep].assign(link=link)


# ── kernels ──────────────────────────────────────────────────────────────────────────────────

def kernel_time_chart(kernels: pd.DataFrame, labels: dict[str, str], top_n: int = 8):
    """Share of each run's GPU time of its ``top_n`` heaviest kernels (shares compare runs of
    very different lengths), one bar per run."""
    top = kernels.sort_values("us_per_iter", ascending=False).groupby("run_id").head(top_n)
    data = _with_labels(kernels[kernels["kernel"].isin(top["kernel"])], labels)
    title = f"Share of GPU time, top {top_n} kernels of each run"
    return alt.Chart(data, title=title).mark_bar().encode(
        x=alt.X("gpu_time_share_pct:Q", title="% of the run's GPU kernel time"),
        y=alt.Y("kernel:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
        yOffset=alt.YOffset("run:N"),
        color=alt.Color("run:N", scale=alt.Scale(scheme=PALETTE),
                        legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=_tips(data, ["run", "kernel", "gpu_time_share_pct", "calls_per_iter",
                             "us_per_iter", "mean_us", "grid", "block", "est_occupancy_pct"]),
    )


# ── launches ─────────────────────────────────────────────────────────────────────────────────

def launch_api_chart(apis: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Calls per iteration of each runtime / driver API (log scale: runs differ by orders of
    magnitude), a bar per run; the y label names the API and its category."""
    data = _with_labels(apis, labels).assign(
        api_label=lambda d: d["api"] + "  (" + d["category"] + ", " + d["api_kind"] + ")")
    return alt.Chart(data, title="API calls per iteration").mark_bar().encode(
        x=alt.X("calls_per_iter:Q", scale=alt.Scale(type="symlog"),
                title="calls per iteration (symmetric log scale)"),
        y=alt.Y("api_label:N", sort="-x", title=None, axis=alt.Axis(labelLimit=360)),
        yOffset=alt.YOffset("run:N"),
        color=alt.Color("run:N", scale=alt.Scale(scheme=PALETTE),
                        legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=_tips(data, ["run", "api", "api_kind", "category", "calls_per_iter",
                             "api_us_per_iter", "mean_us", "kernels_launched_per_iter", "memops_launched_per_iter"]),
    )


def latency_histogram_chart(hist: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Launch latency distribution (log-spaced bins), one row per run, a colour per API."""
    data = _with_labels(hist, labels)
    return alt.Chart(data).mark_bar(opacity=0.8).encode(
        x=alt.X("bin_start_us:Q", scale=alt.Scale(type="log"),
                title="launch latency: API start → kernel start (µs, log)"),
        x2=alt.X2("bin_end_us"),
        y=alt.Y("launches:Q", stack=True, title="launches"),
        color=alt.Color("api:N", scale=alt.Scale(scheme=PALETTE), legend=alt.Legend(orient="top")),
        row=_run_rows(),
        tooltip=_tips(data, ["run", "api", "bin_start_us", "bin_end_us", "launches"]),
    ).properties(height=120, width=FACET_WIDTH_PX).resolve_scale(y="independent")


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
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("iteration:O", title="iteration"),
        xOffset=alt.XOffset("metric:N", sort=list(CPU_GPU_METRICS.values())),
        y=alt.Y("us:Q", title="µs"),
        color=alt.Color("metric:N", sort=list(CPU_GPU_METRICS.values()),
                        scale=alt.Scale(scheme=PALETTE), legend=alt.Legend(orient="top")),
        row=_run_rows(),
        tooltip=_tips(data, ["run", "iteration", "metric", "us", "wall_us"]),
    ).properties(height=140, width=FACET_WIDTH_PX).resolve_scale(y="independent")


def op_self_time_chart(ops: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Self CPU time per iteration of the heaviest ops, one bar per run."""
    data = _with_labels(ops, labels)
    return alt.Chart(data, title="Self CPU time per iteration by op").mark_bar().encode(
        x=alt.X("self_us_per_iter:Q", title="self µs per iteration"),
        y=alt.Y("op:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
        yOffset=alt.YOffset("run:N"),
        color=alt.Color("run:N", scale=alt.Scale(scheme=PALETTE),
                        legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=_tips(data, ["run", "op", "calls_per_iter", "self_us_per_iter",
                             "total_us_per_iter", "self_share_pct"]),
    )


def cold_warm_chart(summary: pd.DataFrame) -> alt.Chart:
    """Per run: CPU time of the first iteration vs the later ones, next to GPU kernel time."""
    cols = {"first_iter_cpu_us": "CPU, first iteration", "later_iter_cpu_us": "CPU, later (mean)",
            "gpu_kernel_us": "GPU kernels (mean)"}
    data = summary.assign(temperature=summary["cold"].map({True: "cold", False: "warm"})
                          .fillna("unknown")).melt(id_vars=["label", "temperature"],
                                                   value_vars=list(cols), var_name="metric",
                                                   value_name="us").dropna(subset=["us"])
    data["metric"] = data["metric"].map(cols)
    return alt.Chart(data, title="Cold vs warm: CPU per iteration").mark_bar().encode(
        x=alt.X("us:Q", title="µs per iteration"),
        y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=320)),
        yOffset=alt.YOffset("metric:N", sort=list(cols.values())),
        color=alt.Color("metric:N", sort=list(cols.values()), scale=alt.Scale(scheme=PALETTE)),
        tooltip=_tips(data, ["label", "temperature", "metric", "us"]),
    )


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
    return alt.Chart(data, title="Kernel sequence of one iteration, aligned").mark_rect().encode(
        x=alt.X("slot:O", title="aligned position", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("run:N", sort=[label_a, label_b], title=None, axis=alt.Axis(labelLimit=320)),
        color=alt.Color("status:N", scale=alt.Scale(domain=ALIGN_STATUSES, scheme=PALETTE),
                        legend=alt.Legend(orient="top", title=None)),
        tooltip=_tips(data, ["run", "slot", "name", "dur_us", "status", "family"]),
    ).properties(height=alt.Step(34))  # a fixed row height: the legend above cannot squash the strips


def delta_chart(delta: pd.DataFrame, top_n: int = TOP_N) -> alt.Chart:
    """Change in time per iteration (b − a) of the kernels that changed most."""
    data = delta.reindex(delta["us_delta"].abs().sort_values(ascending=False).index).head(top_n)
    return alt.Chart(data, title="GPU time per iteration, b − a").mark_bar().encode(
        x=alt.X("us_delta:Q", title="µs per iteration (b − a)"),
        y=alt.Y("kernel:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
        color=alt.Color("presence:N", scale=alt.Scale(domain=["both", "only in a", "only in b"],
                                                      scheme=PALETTE)),
        tooltip=_tips(data, ["kernel", "calls_a", "calls_b", "us_a", "us_b", "us_delta",
                             "presence"]),
    )


# ── roofline ─────────────────────────────────────────────────────────────────────────────────

def roofline_usable(roof: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``roofline.roofline_table`` that have a point to draw (FLOPs, bytes and time)."""
    if roof.empty or "tflops" not in roof:
        return roof.iloc[0:0]
    return roof[(roof["tflops"] > 0) & roof["intensity"].notna()]


def roofline_chart(roof: pd.DataFrame, lines: pd.DataFrame, labels: dict[str, str],
                   ops: pd.DataFrame | None = None) -> alt.LayerChart:
    """Log-log roofline: the memory slope and one ceiling per engine (``roofline.ceilings``), a
    point per run (``roofline.roofline_table``) and, when given, a cross per op (``ops_table``)."""
    points = roof.assign(run=roof["run_id"].map(labels).fillna(roof["run_id"]), what="run")
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP / byte moved)")
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="TFLOP/s")
    roof_lines = alt.Chart(lines).mark_line(strokeDash=[6, 3], color="#555").encode(
        x=x, y=y, detail="ceiling:N", tooltip=_tips(lines, ["gpu_name", "ceiling", "intensity", "tflops"]))
    names = lines.sort_values("intensity").groupby("ceiling", as_index=False).last()
    label = alt.Chart(names).mark_text(align="right", dy=-8, color="#555").encode(x=x, y=y, text="ceiling:N")
    runs = alt.Chart(points).mark_point(filled=True, size=110).encode(
        x=x, y=y, color=alt.Color("run:N", scale=alt.Scale(scheme=PALETTE),
                                  legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=_tips(points, ["run", "tflops", "intensity", "bytes_per_iter", "flops_per_iter",
                               "engine", "dtype", "roof_tflops", "pct_of_roof", "bound"]))
    layers = [roof_lines, label, runs]
    if ops is not None and not ops.empty:
        op_points = ops[(ops["tflops"] > 0) & ops["intensity"].notna()].assign(
            run=lambda f: f["run_id"].map(labels).fillna(f["run_id"]))
        layers.append(alt.Chart(op_points).mark_point(shape="cross", size=70).encode(
            x=x, y=y, color=alt.Color("run:N"),
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


def sweep_chart(series: pd.DataFrame) -> alt.Chart:
    """GPU and CPU time per iteration vs sequence length, a line per series, log-log: where two
    lines cross, the faster variant changes."""
    data = series.melt(id_vars=["series", "seq_len", "runs"], value_vars=list(SWEEP_METRICS),
                       var_name="metric", value_name="us_per_iter")
    data["metric"] = data["metric"].map(SWEEP_METRICS)
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("seq_len:Q", title="sequence length", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=sorted(series["seq_len"].unique().tolist()))),
        y=alt.Y("us_per_iter:Q", title="µs per iteration (log)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title="variant", scale=alt.Scale(scheme=PALETTE),
                        legend=alt.Legend(orient="top")),
        tooltip=_tips(data, ["series", "metric", "seq_len", "us_per_iter", "runs"]),
    ).properties(width=FACET_WIDTH_PX // 2, height=300).facet(
        column=alt.Column("metric:N", title=None, sort=list(SWEEP_METRICS.values()))
    ).resolve_scale(y="independent")
