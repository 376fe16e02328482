"""Tooltips in words: typed Altair tooltip channels whose titles say what a column means."""
from __future__ import annotations

import pandas as pd

from profiler.present.style import altair

alt = altair()


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


def tips(df: pd.DataFrame, columns: list[str]) -> list[alt.Tooltip]:
    """Typed tooltip channels with readable titles (typed: strings make Altair rebuild its
    schema index, ~10 ms each)."""
    kind = {c: "Q" if pd.api.types.is_numeric_dtype(df[c]) else "N" for c in columns if c in df}
    return [alt.Tooltip(f"{c}:{kind[c]}", title=TIP_TITLES.get(c, c.replace("_", " ")),
                        format=",.4~r" if kind[c] == "Q" else alt.Undefined)
            for c in columns if c in kind]
