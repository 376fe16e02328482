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
                             "cpu_us_per_iter", "mean_us", "kernels_launched", "memops_launched"]),
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

CPU_GPU_METRICS = {"cpu_op_self_us": "CPU ops (self)", "launch_api_us": "launch/runtime API",
                   "gpu_kernel_us": "GPU kernels", "gpu_memop_us": "GPU memcpy/memset"}


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
    """Rows of ``roofline.roofline_table`` that have numbers (uploads without a shape do not)."""
    if roof.empty or "achieved_tflops" not in roof:
        return roof.iloc[0:0]
    ok = roof["achieved_tflops"].notna()
    return roof[ok & roof["error"].isna()] if "error" in roof else roof[ok]


def roofline_chart(roof: pd.DataFrame, labels: dict[str, str]) -> alt.Chart:
    """Achieved TFLOP/s against arithmetic intensity (log-log), each run next to its roof
    (datasheet peak or bandwidth × intensity, whichever is lower)."""
    data = roof.assign(run=roof["trace_id"].map(labels).fillna(roof["trace_id"])).melt(
        id_vars=["run", "intensity_flop_per_byte", "bound", "pct_of_bound"],
        value_vars=["achieved_tflops", "bound_tflops"], var_name="point", value_name="tflops")
    data = data.dropna(subset=["tflops"]).replace({"point": {"achieved_tflops": "achieved",
                                                             "bound_tflops": "roof"}})
    return alt.Chart(data, title="Roofline: attention FLOPs over GPU time per iteration").mark_point(
        filled=True, size=90).encode(
        x=alt.X("intensity_flop_per_byte:Q", scale=alt.Scale(type="log"),
                title="arithmetic intensity (FLOP / minimum byte)"),
        y=alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="TFLOP/s"),
        color=alt.Color("run:N", scale=alt.Scale(scheme=PALETTE),
                        legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        shape=alt.Shape("point:N", title=None),
        tooltip=_tips(data, ["run", "point", "tflops", "intensity_flop_per_byte", "bound",
                             "pct_of_bound"]),
    )


# ── sweep ────────────────────────────────────────────────────────────────────────────────────

SWEEP_METRICS = {"gpu_us_per_iter": "GPU time per iteration", "cpu_us_per_iter": "CPU time per iteration"}
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
