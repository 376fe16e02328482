"""A job's ranks as a chart: where each rank's step time goes (DataFrame ▶ Altair)."""
from __future__ import annotations

import pandas as pd

from profiler.present.style import altair

alt = altair()

PARTS = {"collective_us": "collective kernels", "other_busy_us": "other GPU work",
         "carried_us": "carried-in GPU work", "gpu_idle_us": "GPU idle"}
# collective: orange, other GPU work: blue, carried in: light blue, idle: grey
COLORS = ["#f58518", "#4c78a8", "#9ecae9", "#c7c7c7"]


def rank_parts(per_rank: pd.DataFrame) -> pd.DataFrame:
    """Per rank, the mean over iterations of step time split into collective kernels, other GPU
    work, carried-in GPU work and GPU idle (they add up to the step time); long form for the chart."""
    columns = ["step_us", "gpu_busy_us", "carried_us", "gpu_idle_us", "collective_us"]
    mean = per_rank.groupby("rank", as_index=False)[columns].mean()
    mean["other_busy_us"] = mean["gpu_busy_us"] - mean["collective_us"]
    long = mean.melt(id_vars=["rank", "step_us"], value_vars=list(PARTS), var_name="part", value_name="us")
    long["stack"] = long["part"].map({part: i for i, part in enumerate(PARTS)})
    long["part"] = long["part"].map(PARTS)
    long["rank"] = long["rank"].astype(str)
    return long


def rank_chart(per_rank: pd.DataFrame) -> alt.Chart:
    """Horizontal stacked bars, one per rank, ranks in order."""
    data = rank_parts(per_rank)
    order = sorted(data["rank"].unique(), key=int)
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("rank:N", sort=order, title="rank", axis=alt.Axis(labelOverlap=False)),
        x=alt.X("us:Q", stack="zero", title="mean µs per iteration"),
        color=alt.Color("part:N", scale=alt.Scale(domain=list(PARTS.values()), range=COLORS),
                        legend=alt.Legend(orient="top", title=None)),
        order=alt.Order("stack:Q"),
        tooltip=["rank:N", "part:N", alt.Tooltip("us:Q", format=",.1f"), alt.Tooltip("step_us:Q", format=",.1f")],
    ).properties(height=alt.Step(20))
