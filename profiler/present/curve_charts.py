"""Charts of a quantity over an axis: the roofline (TFLOP/s against FLOPs per byte, with the
device's ceilings) and a sweep over one axis of the shape (TFLOP/s or TB/s per variant, with the
spread of the repeats and the crossovers marked; each point links to its run's timeline). Same conventions as ``charts``: theme colours, run colours from ``style``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from profiler.analysis.findings import sweeps
from profiler.present import share, style
from profiler.present.tooltips import tips
from profiler.present.style import altair

alt = altair()


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
    names = ceiling_names(lines, x_hi)
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
        top = max(top, ceiling_names(lines, x_hi)["tflops"].max() * 1.5)
    return (float(x_lo), float(x_hi)), (float(pts["tflops"].min() / ROOF_MARGIN), float(top))


def ceiling_names(lines: pd.DataFrame, x: float) -> pd.DataFrame:
    """Each ceiling's height at intensity ``x`` (log-log interpolation of its samples)."""
    rows = []
    for (gpu, ceiling), line in lines.groupby(["gpu_name", "ceiling"], sort=False):
        line = line.sort_values("intensity")
        y = np.exp(np.interp(np.log(x), np.log(line["intensity"]), np.log(line["tflops"])))
        rows.append((gpu, ceiling, x, float(y)))
    return pd.DataFrame(rows, columns=["gpu_name", "ceiling", "intensity", "tflops"])


# ── sweep ────────────────────────────────────────────────────────────────────────────────────

SWEEP_SHAPE = sweeps.SHAPE   # the shape keys a curve holds fixed but its axis: queries.SHAPE_KEYS less the variant


def timeline_link(run_id: str, base: str = "") -> str:
    """The share URL of the timeline page with this run selected (what a sweep's point opens),
    under the app's root URL `base`."""
    return share.share_url(share.ViewState(page="timeline", runs=(run_id,)), base=base)


def sweep_table(curves: pd.DataFrame, base: str = "") -> pd.DataFrame:
    """One sweep's curves as the page's table: variant, the axis value (`x`), the throughput at the
    median, slowest and fastest repeat kept, the time per call (median, least, most: the figure every
    ranking shows), repeats used of runs, outliers (run ids), same_kernels_as (of `sweep_leads.ranked_curves`:
    the variant whose kernels it runs there, None without it) and `timeline` (the link of the run
    nearest the median)."""
    out = curves[["variant", "x", "median", "min", "max", "us_per_call", "us_min", "us_max", "repeats", "runs",
                  "outliers", "run_id"]].copy()
    out["same_kernels_as"] = curves["same_kernels_as"] if "same_kernels_as" in curves else None
    out["outliers"] = [", ".join(o) or None for o in out["outliers"]]
    out["timeline"] = [timeline_link(r, base) for r in out["run_id"]]
    return out.reset_index(drop=True)


HEIGHT_PX = 340
# the plot area inside it: the chart fits its title, x axis and padding into HEIGHT_PX (measured
# in Chromium: ~234 px of plot)
PLOT_PX = 220
LABEL_PX = style.FONT_PX + 5   # the least distance between two end-of-line labels (a line of text and a gap)


def label_positions(values: list[float], lo: float, hi: float, height_px: int = PLOT_PX,
                    log: bool = True) -> list[float]:
    """Where each line's end label sits on an axis from ``lo`` to ``hi`` (log or linear) drawn
    ``height_px`` high: at its line's end, pushed up (in the values' order) until it is at least
    `LABEL_PX` from the label below, so no two labels overlap. The axis grows to hold the top label, which
    squeezes the pixels a unit takes: the positions are computed again on the grown axis until
    they hold."""
    if not values:
        return []
    to, back = (math.log10, lambda y: 10 ** y) if log else (float, float)
    order = sorted(range(len(values)), key=lambda i: values[i])
    top, out = hi, list(values)
    for _ in range(20):
        span = (to(top) - to(lo)) if top > lo and (lo > 0 or not log) else 1.0
        gap = span * LABEL_PX / height_px                       # LABEL_PX in axis units
        below = -math.inf
        for i in order:
            y = max(to(values[i]), below + gap)
            out[i], below = back(y), y
        if max(out) <= top * 1.0001:
            break
        top = max(out)
    return out


def sweep_chart(curves: pd.DataFrame, points: pd.DataFrame, crossings: pd.DataFrame, base: str = "",
                log_y: bool = True, roofs: pd.DataFrame | None = None) -> alt.Chart:
    """One sweep (`sweeps.sweep_curves` rows of one sweep, its `sweep_points` and `crossovers`):
    TFLOP/s or TB/s against the axis, a line per variant in its colour through the medians of the
    repeats, a rule from the least to the most of them, every repeat a dot; a click on a dot or a
    median point opens that run's timeline (under the app's root URL `base`). Dotted rules mark
    where two variants swap the lead. The y axis is log (`log_y`) or linear from 0; `roofs`
    (`sweep_roofs.bandwidth_roofs`, TB/s) are drawn as dashed horizontal lines, labelled."""
    axis, metric = curves["axis"].iloc[0], curves["metric"].iloc[0]
    unit = sweeps.METRICS[metric]
    data = curves.assign(timeline=[timeline_link(r, base) for r in curves["run_id"]])
    dots = points.assign(timeline=[timeline_link(r, base) for r in points["run_id"]])
    xs = sorted(data["x"].unique().tolist())
    log_x = xs[0] > 0
    x_scale = (alt.Scale(type="log", base=2, domain=[xs[0], xs[-1] * 2 ** 1.2], nice=False) if log_x
               else alt.Scale(domain=[xs[0], xs[-1] * 1.25], nice=False))
    x = alt.X("x:Q", title=sweeps.AXIS_NAMES[axis] + (" (log)" if log_x else ""), scale=x_scale,
              axis=alt.Axis(values=xs))
    roofs = roofs if roofs is not None and metric == "tbps" else pd.DataFrame(columns=["tbps", "text"])
    lo = float(min(data["min"].min(), dots["value"].min())) if log_y else 0.0
    hi = float(max(data["max"].max(), dots["value"].max(), *roofs["tbps"]))
    ends = data.sort_values("x").groupby("variant", as_index=False).last()
    ends["label_y"] = label_positions(ends["median"].tolist(), lo, hi, log=log_y)
    top = max(hi, float(ends["label_y"].max())) * (1.0 if log_y else 1.05)
    y_scale = (alt.Scale(type="log", domain=[lo, top], nice=False) if log_y
               else alt.Scale(domain=[0, top], nice=False))
    y_title = f"{unit}{' (log)' if log_y else ''}: " + ("the shape's bytes over GPU time" if metric == "tbps" else "the shape's FLOPs over GPU time")
    colour = style.series_scale(dict(zip(data["variant"], data["variant"])))
    legend = style.side_legend(data["variant"].nunique(), "variant")
    color = alt.Color("variant:N", scale=colour, legend=legend)
    bands = alt.Chart(data).mark_rule(strokeWidth=3, opacity=0.45).encode(
        x=x, y=alt.Y("min:Q", scale=y_scale), y2="max", color=alt.Color("variant:N", scale=colour),
        tooltip=tips(data, ["variant", "x", "min", "median", "max", "runs"]))
    lines = alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=70, filled=True, cursor="pointer")).encode(
        x=x, y=alt.Y("median:Q", scale=y_scale, title=y_title), color=color, href="timeline:N",
        tooltip=tips(data, ["variant", "x", "median", "min", "max", "runs", "run_id"]))
    repeats = alt.Chart(dots).mark_point(size=30, opacity=0.8, cursor="pointer").encode(
        x=x, y=alt.Y("value:Q", scale=y_scale), color=alt.Color("variant:N", scale=colour),
        href="timeline:N", tooltip=tips(dots, ["variant", "x", "value", "run_id"]))
    names = alt.Chart(ends).mark_text(align="left", dx=8, fontSize=style.FONT_PX - 1, limit=160).encode(
        x=x, y=alt.Y("label_y:Q", scale=y_scale), text="variant:N",
        color=alt.Color("variant:N", scale=colour, legend=None))
    layers = [bands, repeats, lines, names]
    if not roofs.empty:  # the GPU's bandwidth: datasheet and measured, what the decode band is read against
        roof = alt.Chart(roofs).mark_rule(strokeDash=[6, 4], color="#444", strokeWidth=1.5).encode(
            y=alt.Y("tbps:Q", scale=y_scale), tooltip=[alt.Tooltip("text:N", title="roof")])
        roof_text = alt.Chart(roofs).mark_text(align="left", baseline="bottom", dx=4, dy=-2, color="#444",
                                               fontSize=style.FONT_PX - 1).encode(
            x=alt.value(0), y=alt.Y("tbps:Q", scale=y_scale), text="text:N")
        layers += [roof, roof_text]
    if not crossings.empty:
        cross = pd.DataFrame({"x": [(lo * hi) ** 0.5 if log_x else (lo + hi) / 2
                                    for lo, hi in zip(crossings["x_lo"], crossings["x_hi"])],
                              "text": [f"{a} ⇄ {b}" for a, b in zip(crossings["trailer"], crossings["leader"])]})
        cross["y_px"] = cross.groupby("x").cumcount() * (style.FONT_PX + 4) + 4   # stacked, not overprinted
        rule = alt.Chart(cross).mark_rule(strokeDash=[2, 3], color="gray").encode(
            x=x, tooltip=[alt.Tooltip("text:N", title="crossover")])
        label = alt.Chart(cross).mark_text(align="left", dx=4, baseline="top", fontSize=style.FONT_PX,
                                           color="gray").encode(x=x, y=alt.Y("y_px:Q", scale=None), text="text:N")
        layers += [rule, label]
    return style.configure(alt.layer(*layers, title=f"{unit} per variant, median of the repeats (dots: each run)")
                           .properties(width="container", height=HEIGHT_PX,
                                       padding={"left": 5, "top": 5, "right": 24, "bottom": 5}))
