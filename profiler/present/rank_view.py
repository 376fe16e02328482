"""The ranked table as pages show it: `ranking.rank_table`'s rows with one rate column chosen by
the roof that bounds the run (TFLOP/s when compute-bound, TB/s when memory-bound) and the peak
memory in MiB. Every figure is `ranking`'s; this module only picks and formats columns.
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["rank", "label", "gpu_us_per_call", "times_fastest", "rate", "pct_of_roof", "roof_bound",
           "peak_allocated_mib", "cold_us", "bound", "run_id"]
SHAPE_NOTE = ("Runs are ranked only against runs of the same mode (prefill, decode, train) and shape "
              "(batch, heads and K/V heads, query and K/V length, head dim, window, packed lengths, dtype, "
              "causal): a faster time at another shape or mode says nothing about the variant.")


def rate(row) -> str | None:
    """'312.4 TFLOP/s' (compute-bound) or '2.91 TB/s' (memory-bound); None where nothing is modelled."""
    if row["roof_bound"] == "compute" and pd.notna(row["tflops"]):
        return f"{row['tflops']:,.1f} TFLOP/s"
    if row["roof_bound"] == "memory" and pd.notna(row["tbps"]):
        return f"{row['tbps']:,.2f} TB/s"
    return None


def display(table: pd.DataFrame) -> pd.DataFrame:
    """A `rank_table` ▶ the columns of `COLUMNS`, fastest first."""
    shown = table.copy()
    shown["rate"] = [rate(r) for r in shown.to_dict("records")] if len(shown) else []
    shown["peak_allocated_mib"] = shown["peak_allocated_bytes"] / 2**20
    return shown[COLUMNS]


def alone_note(titles: list[str]) -> str | None:
    """The sentence under the tables for runs that no other selected run shares a shape with."""
    if not titles:
        return None
    return (f"Not ranked, no other selected run has the same shape: {len(titles)} run(s) "
            f"({'; '.join(titles)}).")


def against_baseline(store, run_ids, baseline: str) -> pd.DataFrame:
    """The metrics layer's row of each run (``queries.run_metrics``) with ``times_baseline``: its
    time per call (`timings`, what the ranking sorts by) over the baseline's, for the runs of the
    baseline's shape only (missing for the others: they are not comparable)."""
    from profiler.analysis import queries, ranking, timings

    ids = list(dict.fromkeys(run_ids))
    metrics = queries.run_metrics(store, ids)
    per_call = timings.run_timings(store, ids).set_index("run_id")["gpu_us_per_call"]
    same = next((g.run_ids for g in ranking.shape_groups(store, ids) if baseline in g.run_ids), (baseline,))
    base = per_call.get(baseline)
    ratio = [per_call.get(r) / base if r in same and base and pd.notna(base) else None for r in metrics["run_id"]]
    return metrics.assign(times_baseline=pd.array(ratio, dtype="Float64"))
