"""The ranked table as pages show it: `ranking.rank_table`'s rows with one rate column chosen by
the roof that bounds the run (TFLOP/s when compute-bound, TB/s when memory-bound) and the peak
memory in MiB. Every figure is `ranking`'s; this module only picks and formats columns.
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["rank", "label", "kernel_us_per_call", "times_fastest", "rate", "pct_of_roof", "roof_bound",
           "peak_allocated_mib", "cold_us", "bound", "run_id"]
SHAPE_NOTE = ("Runs are ranked only against runs of the same shape (batch, heads, sequence length, "
              "head dim, dtype, causal): a faster time at another shape says nothing about the variant.")


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
