"""DataFrame ▶ Altair (and the small table shaping pages need), for every analysis page.

Charts use no fixed text or background colours, so the Streamlit theme (light or dark) styles
axes and labels; mark colours, type sizes and units come from ``style`` (a run keeps its colour on
every page; categories have fixed colours of their own). Functions
are named after the query whose DataFrame they draw (``kernel_table`` ▶ ``kernel_time_chart``).
``labels`` arguments map run ids to the labels of ``run_queries.run_labels``.
"""
from __future__ import annotations

import math

import pandas as pd

from profiler.analysis.reads import units
from profiler.present import style
from profiler.present.tooltips import tips
from profiler.present.style import altair

alt = altair()

PALETTE = "tableau10"
FACET_WIDTH_PX = 900   # faceted charts cannot stretch to the container
ROW_PX = 16            # one bar of a grouped bar chart
GAP = "\u200b"          # zero-width space: rows of a group after its first one (blank label)
TOP_N = 15
BAR_LABEL_PX = 330     # a bar's label past its end; longer run names end in "…"


def label_map(labels: pd.DataFrame) -> style.RunLabels:
    """``run_labels`` DataFrame ▶ {run_id: label}, with each run's colour (``style.run_labels``)."""
    return style.run_labels(labels)


def per_run(df: pd.DataFrame, run_ids) -> list[tuple[str, pd.DataFrame]]:
    """The rows of each run, in ``run_ids`` order, without the run_id column."""
    return [(r, df[df["run_id"] == r].drop(columns="run_id").reset_index(drop=True))
            for r in run_ids]


def search(df: pd.DataFrame, column: str, text: str | None) -> pd.DataFrame:
    """Rows whose ``column`` contains ``text`` (case-insensitive, plain text); all when empty."""
    if not text:
        return df
    return df[df[column].astype(str).str.contains(text, case=False, regex=False)]


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
                 title: str, x_title: str, tooltip: list[str], log: bool = False,
                 fmt=None) -> alt.LayerChart:
    """Horizontal bars, a group per ``name`` (heaviest first) and a bar per ``series`` in it.
    Every bar has a row of its own, so bars cannot slide off their label (a ``yOffset`` band is
    sized for every series, also those a name lacks); the name labels the group's first row and
    every bar carries its own label at its end: its value (``fmt``, 3 significant digits by
    default) and its series. A linear axis from zero; ``log`` (on request) a labelled log axis."""
    fmt = fmt or _number
    data = data.dropna(subset=[value])
    data = data[data[value] > 0] if log else data
    order = data.groupby(name)[value].max().sort_values(ascending=False).index
    series_order = {s: i for i, s in enumerate(colour.to_dict().get("domain", []))}
    data = data.assign(_g=data[name].map({n: i for i, n in enumerate(order)}),
                       _s=data[series].map(series_order).fillna(len(series_order)))
    data = data.sort_values(["_g", "_s"]).reset_index(drop=True)
    data["row"] = data[name].astype(str) + data.groupby("_g").cumcount().map(lambda k: GAP * k)
    data["bar_label"] = data[value].map(fmt) + " · " + data[series].astype(str)
    top = float(data[value].max()) if len(data) else 1.0
    if log and len(data):
        base = 10 ** math.floor(math.log10(data[value].min()))
        scale = alt.Scale(type="log", domainMin=base, domainMax=top * (top / base) ** 0.7)
    else:  # room right of the longest bar for its label; the axis's ticks stop at the data's
        base, scale = 0, alt.Scale(zero=True, nice=False, domainMax=max(top, 0) * 1.8 or 1)
    axis = None if log else alt.Axis(values=axis_ticks(top), domain=False)
    x = alt.X(f"{value}:Q", title=x_title + (" (log scale)" if log else ""), scale=scale,
              **({"axis": axis} if axis else {}))
    y = alt.Y("row:N", sort=list(data["row"]), title=None, axis=alt.Axis(
        labelLimit=380, labelOverlap=False,  # rows are taller than the type: hide none
        labelExpr=f"indexof(datum.value, '{GAP}') >= 0 ? '' : datum.value"))
    base_chart = alt.Chart(data.drop(columns=["_g", "_s"]), title=title)
    bars = base_chart.mark_bar().encode(
        x=x, x2=alt.X2(datum=base),  # a log scale has no zero: bars start a decade below the least
        y=y, color=alt.Color(f"{series}:N", scale=colour, title=None,
                             legend=alt.Legend(orient="top", columns=2)),
        tooltip=tips(data, tooltip))
    text = base_chart.mark_text(align="left", baseline="middle", dx=4, fontSize=style.FONT_PX - 1,
                                color=style.LABEL_GREY,
                                limit=BAR_LABEL_PX).encode(x=x, y=y, text="bar_label:N")
    return alt.layer(bars, text).properties(height=alt.Step(ROW_PX))


def axis_ticks(top: float) -> list[float]:
    """Round ticks from 0 to the first one at or past ``top`` (steps of 1, 2 or 5 times a power
    of ten, at most 6 steps): a bar axis shows the values its bars reach, not the room beyond
    the longest one that its label takes (max 5: 0, 1, ... 5, not 0 ... 9)."""
    if not top or top <= 0 or not math.isfinite(top):
        return [0.0]
    power = 10 ** math.floor(math.log10(top))
    step = next(m * power for m in (0.2, 0.5, 1, 2, 5, 10) if top / (m * power) <= 6)
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 12) for i in range(count + 1)]


def _number(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 1e5 else f"{value:,.0f}"


# ── kernels ──────────────────────────────────────────────────────────────────────────────────

def kernel_time_chart(kernels: pd.DataFrame, labels: dict[str, str], top_n: int = 8,
                      log: bool = False):
    """GPU time per iteration of each run's ``top_n`` heaviest kernels, a bar per run; the share
    of the run's GPU time and the full name are in the tooltip."""
    top = kernels.sort_values("us_per_iter", ascending=False).groupby("run_id").head(top_n)
    data = _with_labels(kernels[kernels["kernel"].isin(top["kernel"])], labels)
    data = data.assign(name=style.short_names(data["kernel"]))
    return style.configure(grouped_bars(
        data, "name", "run", "us_per_iter", style.run_scale(labels, data["run"]),
        f"GPU time per iteration, top {top_n} kernels of each run", "µs per iteration",
        ["run", "kernel", "us_per_iter", "gpu_time_share_pct", "calls_per_iter", "mean_us",
         "grid", "block", "est_occupancy_pct"], log=log, fmt=units.duration))


# ── launches ─────────────────────────────────────────────────────────────────────────────────

def launch_api_chart(apis: pd.DataFrame, labels: dict[str, str], log: bool = False) -> alt.Chart:
    """Calls per iteration of each runtime / driver API, a bar per run (a log axis on request);
    the y label names the API and its category."""
    data = _with_labels(apis, labels).assign(
        api_label=lambda d: d["api"] + "  (" + d["category"] + ", " + d["api_kind"] + ")")
    return style.configure(grouped_bars(
        data, "api_label", "run", "calls_per_iter", style.run_scale(labels, data["run"]),
        "API calls per iteration", "calls per iteration",
        ["run", "api", "api_kind", "category", "calls_per_iter", "api_us_per_iter", "mean_us",
         "kernels_launched_per_iter", "memops_launched_per_iter"], log=log))


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
        tooltip=tips(data, ["run", "api", "bin_start_us", "bin_end_us", "launches"]),
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
        tooltip=tips(data, ["run", "iteration", "metric", "us", "wall_us"]),
    ).properties(height=110, width=FACET_WIDTH_PX).resolve_scale(y="independent"))


def op_self_time_chart(ops: pd.DataFrame, labels: dict[str, str], log: bool = False) -> alt.Chart:
    """Self CPU time per iteration of the heaviest ops, a bar per run."""
    data = _with_labels(ops, labels)
    return style.configure(grouped_bars(
        data, "op", "run", "self_us_per_iter", style.run_scale(labels, data["run"]),
        "Self CPU time per iteration by op", "self µs per iteration",
        ["run", "op", "calls_per_iter", "self_us_per_iter", "total_us_per_iter", "self_share_pct"],
        log=log, fmt=units.duration))


COLD_WARM = {"first_iter_cpu_us": "CPU, first iteration", "later_iter_cpu_us": "CPU, later (mean)",
             "gpu_kernel_us": "GPU kernels (mean)"}


def cold_warm_chart(summary: pd.DataFrame, log: bool = False) -> alt.Chart:
    """Per run: CPU time of the first iteration vs the later ones, next to GPU kernel time
    (a log axis on request: a cold cuDNN call dwarfs warm ones)."""
    data = summary.assign(temperature=summary["cold"].map({True: "cold", False: "warm"})
                          .fillna("unknown")).melt(id_vars=["label", "temperature"],
                                                   value_vars=list(COLD_WARM), var_name="metric",
                                                   value_name="us").dropna(subset=["us"])
    data["metric"] = data["metric"].map(COLD_WARM)
    return style.configure(grouped_bars(
        data, "label", "metric", "us", style.category_scale(list(COLD_WARM.values())),
        "Cold vs warm: time per iteration", "µs per iteration",
        ["label", "temperature", "metric", "us"], log=log, fmt=units.duration))


# ── compare ──────────────────────────────────────────────────────────────────────────────────

ALIGN_STATUSES = ["same", "same family", "replaced", "only in a", "only in b"]


ALIGN_LABEL_MIN_PX = 40  # narrower cells carry no name (hover still tells it)


def alignment_chart(aligned: pd.DataFrame, label_a: str, label_b: str) -> alt.Chart:
    """Two strips, one per run: a cell per aligned kernel slot, coloured by whether it is in both
    runs or only one, its kernel's short name inside when the cell is wide enough (a variant of
    one or a few kernels reads as named cells, not blank blocks); hover shows the full name."""
    a = aligned.dropna(subset=["name_a"]).assign(run=label_a, name=lambda d: d["name_a"],
                                                  dur_us=lambda d: d["dur_us_a"])
    b = aligned.dropna(subset=["name_b"]).assign(run=label_b, name=lambda d: d["name_b"],
                                                  dur_us=lambda d: d["dur_us_b"])
    data = pd.concat([a, b])[["slot", "run", "name", "dur_us", "status", "family"]]
    data = data.assign(short=style.short_names(data["name"]) if len(data) else data["name"])
    x = alt.X("slot:O", title="aligned position", axis=alt.Axis(labels=False, ticks=False))
    y = alt.Y("run:N", sort=[label_a, label_b], title=None, axis=alt.Axis(labelLimit=320))
    base = alt.Chart(data, title="Kernel sequence of one iteration, aligned")
    cells = base.mark_rect().encode(
        x=x, y=y, color=alt.Color("status:N", scale=alt.Scale(domain=ALIGN_STATUSES, scheme=PALETTE),
                                  legend=alt.Legend(orient="top", title=None)),
        tooltip=tips(data, ["run", "slot", "name", "dur_us", "status", "family"]))
    names = base.mark_text(fontSize=style.FONT_PX - 1, color="#1a1a1a",
                           limit=alt.ExprRef("max(0, bandwidth('x') - 6)"),
                           opacity=alt.ExprRef(f"bandwidth('x') >= {ALIGN_LABEL_MIN_PX} ? 1 : 0")).encode(
        x=x, y=y, text="short:N", tooltip=tips(data, ["run", "slot", "name", "dur_us", "status", "family"]))
    # a fixed row height: the legend above cannot squash the strips
    return style.configure(alt.layer(cells, names).properties(height=alt.Step(34)))


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
        tooltip=tips(data, ["kernel", "calls_a", "calls_b", "us_a", "us_b", "us_delta",
                             "presence"]),
    ).properties(height=alt.Step(ROW_PX + 4)))
