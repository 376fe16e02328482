"""The Events page's rows as a table shows them: the run's label first, times in µs and ms, and
the Timeline view each row opens (share.event_view). Pure pandas (presentation layer)."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import units
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


def picked_fields(row, kind: str) -> tuple[str, ...]:
    """A picked row's words, plain text for `markup.fmt`: kernels: (name, time, launching op,
    API, step); ops: (name, time, self time, the op it sits inside, step)."""
    if kind == "kernels":
        return (str(row["name"]), units.duration(row["dur_us"]), _or(row["launch_op"], "no recorded op"),
                _or(row["api"], "no recorded call"), _or(row["step"], "none"))
    return (str(row["name"]), units.duration(row["dur_us"]), units.duration(row["self_us"]),
            _or(row["parent"], "nothing"), _or(row["step"], "none"))


def _or(value, missing: str) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return missing
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
