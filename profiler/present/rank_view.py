"""The ranked table as pages show it: `ranking.rank_table`'s rows (one per group of repeats) with
the interval in words, what a row is beside the one above it (tied, the same kernels), one rate
column chosen by the roof that bounds the run (TFLOP/s when compute-bound, TB/s when
memory-bound) and the peak memory in MiB. Every figure is `ranking`'s; this module only picks and
formats columns.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import units
from profiler.storage.session import StoreHandle

COLUMNS = ["rank", "label", "us_per_call", "interval", "repeats", "times_fastest", "versus", "run_id", "rate",
           "pct_of_roof", "roof_bound", "peak_allocated_mib", "cold_first_call", "bound", "outliers"]
SHAPE_NOTE = ("Runs are grouped into repeats (one variant, workload, device and cold or warm state: the figure is "
              "their median, the interval their least to their most, an outlier set aside) and ranked only "
              "against groups of the same mode (prefill, decode, train), shape (batch, heads and K/V heads, "
              "query and K/V length, head dim, window, packed lengths, dtype, causal), device and state. Two "
              "groups whose intervals overlap, or whose medians differ by less than the noise floor (the larger "
              "spread of their repeats), are tied.")


def rate(row) -> str | None:
    """'312.4 TFLOP/s' (compute-bound) or '2.91 TB/s' (memory-bound); None where nothing is modelled."""
    if row["roof_bound"] == "compute" and pd.notna(row["tflops"]):
        return f"{row['tflops']:,.1f} TFLOP/s"
    if row["roof_bound"] == "memory" and pd.notna(row["tbps"]):
        return f"{row['tbps']:,.2f} TB/s"
    return None


def interval(row) -> str | None:
    """'57.2–57.7 µs' (the repeats' least to most), or None without a figure."""
    return None if pd.isna(row["us_min"]) else f"{row['us_min']:,.1f}–{row['us_max']:,.1f} µs"


def versus(row) -> str | None:
    """What a row is beside the others: the same kernels as another variant, tied with the one above,
    timed on the CPU."""
    words = []
    if isinstance(row["same_kernels_as"], str):
        words.append(f"same kernels as {row['same_kernels_as']}: not a rival")
    if isinstance(row["tied_with"], str):
        words.append(f"tied with {row['tied_with']}")
    if row["timed_on"] not in (None, "GPU") and isinstance(row["timed_on"], str):
        words.append(row["timed_on"])
    return "; ".join(words) or None


def display(table: pd.DataFrame) -> pd.DataFrame:
    """A `rank_table` ▶ the columns of `COLUMNS`, fastest first."""
    shown = table.copy()
    records = shown.to_dict("records")
    shown["rate"] = [rate(r) for r in records]
    shown["interval"] = [interval(r) for r in records]
    shown["versus"] = [versus(r) for r in records]
    shown["outliers"] = [", ".join(o) or None for o in shown["outliers"]]
    shown["peak_allocated_mib"] = shown["peak_allocated_bytes"] / 2**20
    shown["cold_first_call"] = [None if pd.isna(us) else units.duration(float(us)) for us in shown["cold_us"]]
    return shown[COLUMNS]


def alone_note(titles: list[str]) -> str | None:
    """The sentence under the tables for the workloads where only one variant was selected."""
    if not titles:
        return None
    return f"Not ranked, one variant alone in its workload: {'; '.join(titles)}."


def against_baseline(store: StoreHandle, run_ids, baseline: str) -> pd.DataFrame:
    """The metrics layer's row of each run (``run_queries.run_metrics``) with ``times_baseline``: its
    time per call (`ranking.per_call`, what the ranking sorts by) over the baseline's, for the runs
    of the baseline's workload, device and state only (missing for the others: not comparable)."""
    from profiler.analysis.findings import ranking
    from profiler.analysis.reads import run_queries

    ids = list(dict.fromkeys(run_ids))
    metrics = run_queries.run_metrics(store, ids)
    runs = ranking.runs_of(store, ids).set_index("run_id")
    per_call = runs["us_per_call"]
    same = runs.index[runs["set"] == runs.at[baseline, "set"]] if baseline in runs.index else [baseline]
    base = per_call.get(baseline)
    ratio = [per_call.get(r) / base if r in same and base and pd.notna(base) else None for r in metrics["run_id"]]
    return metrics.assign(times_baseline=pd.array(ratio, dtype="Float64"))
