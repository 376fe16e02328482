"""Charts of a quantity over an axis: the roofline (TFLOP/s against FLOPs per byte, with the
device's ceilings) and the sweep over sequence lengths (time per iteration, with its spread and
the crossovers named). Same conventions as ``charts``: theme colours, run colours from ``style``.
"""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from profiler.present import style
from profiler.present.tooltips import tips


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
    The axes fit the points (``roofline_domain``): the roofs are clipped to them, each named at
    the right edge. A point above its roof is a share above 100 % (`rating.suspect`): not drawn;
    the tables beside the chart say which figure is wrong."""
    roof, ops = _under_roof(roof), None if ops is None else _under_roof(ops)
    points = roof.assign(run=roof["run_id"].map(labels).fillna(roof["run_id"]), what="run")
    op_points = None
    if ops is not None and not ops.empty:
        op_points = ops[(ops["tflops"] > 0) & ops["intensity"].notna()].assign(
            run=lambda f: f["run_id"].map(labels).fillna(f["run_id"]))
    drawn = pd.concat([points, op_points]) if op_points is not None else points
    (x_lo, x_hi), (y_lo, y_hi) = roofline_domain(drawn, lines)
    x = alt.X("intensity:Q", scale=alt.Scale(type="log", domain=[x_lo, x_hi], nice=False),
              title="arithmetic intensity (FLOP / byte moved, log)")
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log", domain=[y_lo, y_hi], nice=False),
              title="TFLOP/s (log)")
    colour = style.run_scale(labels, drawn["run"])
    roof_lines = alt.Chart(lines).mark_line(strokeDash=[6, 3], color="#555", clip=True).encode(
        x=x, y=y, detail="ceiling:N", tooltip=tips(lines, ["gpu_name", "ceiling", "intensity", "tflops"]))
    names = _ceiling_names(lines, x_hi)
    names = names[(names["tflops"] >= y_lo) & (names["tflops"] <= y_hi)]
    label = alt.Chart(names).mark_text(align="right", dy=-8, color="#555").encode(x=x, y=y, text="ceiling:N")
    runs = alt.Chart(points).mark_point(filled=True, size=110).encode(
        x=x, y=y, color=alt.Color("run:N", scale=colour,
                                  legend=alt.Legend(orient="top", labelLimit=400, columns=2)),
        tooltip=tips(points, ["run", "tflops", "intensity", "bytes_per_iter", "flops_per_iter",
                               "engine", "dtype", "roof_tflops", "pct_of_roof", "bound"]))
    layers = [roof_lines, label, runs]
    if op_points is not None and not op_points.empty:
        layers.append(alt.Chart(op_points).mark_point(shape="cross", size=70).encode(
            x=x, y=y, color=alt.Color("run:N", scale=colour),
            tooltip=tips(op_points, ["run", "op", "shape", "dtype", "engine", "tflops", "intensity", "bound"])))
    return alt.layer(*layers, title="Roofline: modelled FLOPs and bytes per iteration over their kernel time"
                     ).properties(height=360)


ROOF_MARGIN = 3.0  # the axes reach this factor past the outermost points


def roofline_domain(points: pd.DataFrame, lines: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """Log axes that fit the points: intensity from the least to the most ÷/× ``ROOF_MARGIN``;
    TFLOP/s from the least point ÷ ``ROOF_MARGIN`` up to the highest roof over that intensity
    range (or the highest point × ``ROOF_MARGIN``), so the gap to the roof stays visible."""
    pts = points[(points["tflops"] > 0) & (points["intensity"] > 0)]
    if pts.empty:
        return (0.01, 10_000.0), (0.01, 10_000.0)
    x_lo, x_hi = pts["intensity"].min() / ROOF_MARGIN, pts["intensity"].max() * ROOF_MARGIN
    top = pts["tflops"].max() * ROOF_MARGIN
    if not lines.empty:
        top = max(top, _ceiling_names(lines, x_hi)["tflops"].max() * 1.5)
    return (float(x_lo), float(x_hi)), (float(pts["tflops"].min() / ROOF_MARGIN), float(top))


def _ceiling_names(lines: pd.DataFrame, x: float) -> pd.DataFrame:
    """Each ceiling's height at intensity ``x`` (log-log interpolation of its samples)."""
    rows = []
    for (gpu, ceiling), line in lines.groupby(["gpu_name", "ceiling"], sort=False):
        line = line.sort_values("intensity")
        y = np.exp(np.interp(np.log(x), np.log(line["intensity"]), np.log(line["tflops"])))
        rows.append((gpu, ceiling, x, float(y)))
    return pd.DataFrame(rows, columns=["gpu_name", "ceiling", "intensity", "tflops"])


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


def sweep_chart(series: pd.DataFrame, spread: pd.DataFrame, crossings: list[dict],
                metric: str = "gpu_busy_us_per_iter") -> alt.Chart:
    """One metric of ``SWEEP_METRICS`` per iteration vs sequence length (log-log), a line per
    series in its variant's colour (``style.variant_colour``) named at its right end: the line
    joins the means, the bars span min–max over the iterations of every capture (a tick at the
    median); for GPU time, dotted rules mark where two variants cross."""
    title = SWEEP_METRICS[metric]
    data = series.rename(columns={metric: "us_per_iter"}).assign(metric=title)
    spread = spread[spread["metric"] == title]
    colour = style.series_scale(dict(zip(series["series"], series["variant"])))
    lengths = sorted(series["seq_len"].unique().tolist())
    x = alt.X("seq_len:Q", title="sequence length (log)",
              scale=alt.Scale(type="log", base=2, domain=[lengths[0], lengths[-1] * 2 ** 1.6], nice=False),
              axis=alt.Axis(values=lengths))
    y_scale = alt.Scale(type="log")
    legend = style.side_legend(series["series"].nunique(), "variant")
    lines = alt.Chart(data).mark_line(point=True).encode(
        x=x, y=alt.Y("us_per_iter:Q", scale=y_scale, title="µs per iteration (log)"),
        color=alt.Color("series:N", scale=colour, legend=legend),
        tooltip=tips(data, ["series", "metric", "seq_len", "us_per_iter", "runs"]))
    ends = data.sort_values("seq_len").groupby("series", as_index=False).last()
    names = alt.Chart(ends).mark_text(align="left", dx=6, fontSize=style.FONT_PX - 1, limit=160).encode(
        x=x, y=alt.Y("us_per_iter:Q", scale=y_scale), text="series:N",
        color=alt.Color("series:N", scale=colour, legend=None))
    bars = alt.Chart(spread).mark_rule(strokeWidth=2, opacity=0.6).encode(
        x=x, y=alt.Y("min_us:Q", scale=y_scale), y2="max_us", color=alt.Color("series:N", scale=colour),
        tooltip=tips(spread, ["series", "metric", "seq_len", "min_us", "median_us", "max_us",
                               "captures", "iterations"]))
    ticks = alt.Chart(spread).mark_tick(thickness=2, size=12, orient="horizontal").encode(
        x=x, y=alt.Y("median_us:Q", scale=y_scale), color=alt.Color("series:N", scale=colour))
    layers = [bars, ticks, lines, names]
    if crossings:
        cross = pd.DataFrame([{"seq_len": (c["seq_len_lo"] * c["seq_len_hi"]) ** 0.5,
                               "text": f"{c['faster_below']} ⇄ {c['faster_above']}"}
                              for c in crossings])
        cross["y_px"] = cross.groupby("seq_len").cumcount() * (style.FONT_PX + 4) + 4  # stacked, not overprinted
        rule = alt.Chart(cross).mark_rule(strokeDash=[2, 3], color="gray").encode(
            x=x, tooltip=[alt.Tooltip("text:N", title="crossover")])
        label = alt.Chart(cross).mark_text(align="left", dx=4, dy=-4, baseline="top",
                                           fontSize=style.FONT_PX, color="gray").encode(
            x=x, y=alt.Y("y_px:Q", scale=None), text="text:N")
        layers += [rule, label]
    return style.configure(alt.layer(*layers, title=title).properties(
        width="container", height=340, padding={"left": 5, "top": 5, "right": 24, "bottom": 5}))
