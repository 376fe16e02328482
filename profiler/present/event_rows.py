"""The Events page's rows as a table shows them: the run's label first, times in µs and ms, and
the Timeline view each row opens (share.event_view). Pure pandas (presentation layer)."""
from __future__ import annotations

import pandas as pd

from profiler.present import share


def event_table(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """``event_queries`` rows with ``run`` (the label), ``dur_us``, ``self_us`` (ops),
    ``start_ms`` (from the trace's start) and ``start_in_step_us``; the query's order kept."""
    out = df.assign(run=df["run_id"].map(labels).fillna(df["run_id"]),
                    dur_us=df["dur_ns"] / 1e3, start_ms=df["start_ns"] / 1e6,
                    start_in_step_us=df["start_in_step_ns"] / 1e3)
    if "self_ns" in out:
        out = out.assign(self_us=out["self_ns"] / 1e3)
    return out.reset_index(drop=True)


def timeline_view_of(row) -> share.ViewState | None:
    """The Timeline at this event (a row of ``event_table``), or None when the event lies outside
    every step or has no external id to pick it by."""
    if pd.isna(row["step"]) or pd.isna(row["start_in_step_ns"]) or pd.isna(row["external_id"]):
        return None
    return share.event_view(str(row["run_id"]), int(row["step"]), int(row["start_in_step_ns"]),
                            int(row["dur_ns"]), int(row["external_id"]))
