"""Memory DataFrames (profiler/analysis/findings/memory.py) ▶ Altair charts: allocated bytes over time on a shared
axis with the iterations marked, and peak allocated bytes against sequence length."""
from __future__ import annotations

import math

import pandas as pd

from profiler.present import style
from profiler.present.style import altair

alt = altair()

MIB = 2**20


def allocated_over_time_chart(timeline: pd.DataFrame, iterations: pd.DataFrame,
                              labels: dict[str, str]) -> alt.LayerChart:
    """One step line per run (MiB allocated after each event, time from the run's first
    iteration start in ms) and a rule where each iteration starts."""
    data = timeline.assign(run=timeline["run_id"].map(lambda r: labels.get(r, r)),
                           t_ms=timeline["t_us"] / 1e3,
                           allocated_mib=timeline["total_allocated_bytes"] / MIB,
                           reserved_mib=timeline["total_reserved_bytes"] / MIB)
    line = alt.Chart(data).mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=12)).encode(
        x=alt.X("t_ms:Q", title="time from the run's first iteration start (ms)"),
        y=alt.Y("allocated_mib:Q", title="allocated (MiB)"),
        color=alt.Color("run:N", title="run", scale=style.run_scale(labels, data["run"]),
                        legend=alt.Legend(orient="top", labelLimit=400)),
        tooltip=[alt.Tooltip("run:N"), alt.Tooltip("t_ms:Q", format=".3f", title="ms"),
                 alt.Tooltip("iteration:Q"), alt.Tooltip("allocated_mib:Q", format=",.1f", title="allocated MiB"),
                 alt.Tooltip("reserved_mib:Q", format=",.1f", title="reserved MiB")])
    rules = alt.Chart(iterations).mark_rule(strokeDash=[4, 4], color="gray").encode(
        x="t_ms:Q", tooltip=[alt.Tooltip("run:N"), alt.Tooltip("iteration:Q", title="iteration starts")])
    return alt.layer(rules, line).properties(height=320)


def iteration_starts(iterations: pd.DataFrame, timeline: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Each iteration's start on the timeline's axis (ms from the run's first iteration start)."""
    if iterations.empty:
        return pd.DataFrame(columns=["run", "iteration", "t_ms"])
    first = iterations.groupby("run_id")["start_ns"].transform("min")
    starts = iterations.assign(t_ms=(iterations["start_ns"] - first) / 1e6,
                               run=iterations["run_id"].map(lambda r: labels.get(r, r)))
    return starts[starts["run_id"].isin(timeline["run_id"].unique())][["run", "iteration", "t_ms"]]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values of a log axis from `lo` to `hi` (> 0): 1, 2 and 5 times the powers of ten
    within it, only the powers of ten when it spans more than three decades (a log axis labelled
    at even steps reads like a linear one)."""
    if not (lo > 0 and hi >= lo):
        return []
    steps = (1,) if hi / lo > 1e3 else (1, 2, 5)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [m * 10.0 ** e for e in range(first, last + 1) for m in steps if lo <= m * 10.0 ** e <= hi]


def peak_vs_length_chart(points: pd.DataFrame) -> alt.LayerChart:
    """Peak allocated MiB against sequence length per variant (log-log), every run a point and
    the median per length a line, each variant in its own colour (``style.variant_colour``). The
    x axis is labelled at the lengths measured, the y axis at 1-2-5 steps (`log_ticks`)."""
    data = points.assign(peak_mib=points["peak_allocated_bytes"] / MIB)
    colour = style.series_scale({v: v for v in data["variant"].dropna().unique()})
    lengths = sorted(int(v) for v in data["seq_len"].dropna().unique())
    peaks = data["peak_mib"][data["peak_mib"] > 0]
    lo, hi = (float(peaks.min()), float(peaks.max())) if len(peaks) else (1.0, 1.0)
    ticks = log_ticks(lo / 1.5, hi * 1.5) or None
    base = alt.Chart(data).encode(
        x=alt.X("seq_len:Q", title="sequence length L (log)", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=lengths, format="d")),
        color=alt.Color("variant:N", scale=colour,
                        legend=style.side_legend(data["variant"].nunique(), "variant")))
    dots = base.mark_circle(size=40, opacity=0.6).encode(
        y=alt.Y("peak_mib:Q", title="peak allocated (MiB, log)", scale=alt.Scale(type="log"),
                axis=alt.Axis(values=ticks, format=",~g")),
        tooltip=["variant:N", "seq_len:Q", alt.Tooltip("peak_mib:Q", format=",.1f", title="peak MiB"), "run_id:N"])
    median = base.mark_line().encode(y="median(peak_mib):Q")
    return alt.layer(median, dots).properties(height=320)
