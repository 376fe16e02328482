"""The three timings of a run, each with its own name and unit, and its peak memory.

- ``gpu_us_per_call``: the metrics layer's ``gpu_work_us_per_iter`` (profiler/storage/sql/step_work.sql):
  the GPU work one iteration launched, kernels, copies and sets, overlapping streams counted once,
  wherever it ran (a captured run calls the variant once per iteration; uploads get it per
  iteration). What runs are ranked by: a copy is part of a call's cost (the naive path's
  out-of-place mask is a full-size Memcpy).
- ``kernel_us_per_call``: its kernels alone (``kernel_work_us_per_iter``).
- ``wall_us_per_call``: CUDA events around ``wall_calls`` back-to-back calls outside the profiler,
  divided by the count; a cold run's value is its one first call (``wall_calls`` = 1).
- ``graph_us_per_call``: replay of a CUDA graph of one call, over ``graph_calls`` replays (host
  dispatch removed); None where the variant cannot be captured (``graph_note`` says why).
- ``peak_allocated_bytes``: ``profiler.analysis.findings.memory``'s definition.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.findings import memory
from profiler.analysis.reads import query_files, run_queries
from profiler.analysis.reads.units import json_value
from profiler.storage.session import StoreHandle

COLUMNS = ["run_id", "cold", "gpu_us_per_call", "kernel_us_per_call", "wall_us_per_call", "wall_calls", "graph_us_per_call",
           "graph_calls", "graph_note", "peak_allocated_bytes"]


def gpu_us_per_call(metrics: pd.DataFrame) -> pd.Series:
    """``gpu_us_per_call`` by run id from `run_queries.run_metrics` rows (indexed by run_id): a run that
    launched no GPU work has none (NaN, not 0: nothing to rank by). `run_timings` and the ranking's
    read of thousands of runs (`ranking.per_call`, which needs no other timing) both take it here."""
    busy = metrics["gpu_work_us_per_iter"]
    return busy.where(busy > 0)


def run_timings(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per run in ``run_ids`` order, with COLUMNS (NaN/None where a run lacks a value)."""
    ids = query_files.ids(run_ids)
    table = query_files.run(store, "run_timings", run_ids=ids)
    metrics = run_queries.run_metrics(store, ids).set_index("run_id")
    kernel = metrics["kernel_work_us_per_iter"]
    peaks = memory.memory_summary(store, ids).set_index("run_id")["peak_allocated_bytes"]
    table["gpu_us_per_call"] = table["run_id"].map(gpu_us_per_call(metrics))
    table["kernel_us_per_call"] = table["run_id"].map(kernel.where(kernel > 0))
    table["peak_allocated_bytes"] = table["run_id"].map(peaks)
    return table[COLUMNS]


def catalog_with_timings(store: StoreHandle, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs page's table: the catalog rows ``runs`` (``run_queries.run_catalog``) with each run's
    timings and its peak allocated memory in MiB beside them."""
    measured = run_timings(store, runs["run_id"]).drop(columns=["cold"])
    table = runs.merge(measured, on="run_id", how="left")
    table["peak_allocated_mib"] = table["peak_allocated_bytes"] / 2**20
    return table


def timing_records(store: StoreHandle, run_ids) -> dict[str, dict]:
    """run id -> {column: plain value} for the CLI's summary JSON; ``gpu_us_per_call`` is left out:
    the summary gives it already, as the metrics layer's ``gpu_work_us_per_iter``."""
    table = run_timings(store, run_ids)
    columns = [c for c in COLUMNS[2:] if c != "gpu_us_per_call"]
    return {row["run_id"]: {c: json_value(row[c]) for c in columns} for row in table.to_dict("records")}


def fastest_run(store: StoreHandle, run_ids) -> str | None:
    """The run of ``run_ids`` with the least GPU time per call (``gpu_us_per_call``, what runs are
    ranked by; the first of a tie, in ``run_ids`` order); None when none has a time."""
    table = run_timings(store, run_ids).dropna(subset=["gpu_us_per_call"])
    return None if table.empty else str(table.loc[table["gpu_us_per_call"].idxmin(), "run_id"])
