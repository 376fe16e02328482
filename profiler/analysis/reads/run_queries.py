"""Runs and their iterations: the catalog, the metrics layer's figures (sql/metrics.sql), labels,
iteration windows. DataFrames with units in their column names (profiler/analysis/reads/queries.py)."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import query_files
from profiler.storage.session import StoreHandle


# ── runs & iterations ────────────────────────────────────────────────────────────────────────

def run_catalog(store: StoreHandle) -> pd.DataFrame:
    """Every run, newest first: run_id, name, variant, shape (B×H×L×D), batch, heads, seq_len,
    head_dim, mode, kv_heads, kv_len, window, varlen (as `run_shapes` gives them), dtype, causal, cold,
    gpu_name, versions, iterations, kernels_per_iter, gpu_busy_us_per_iter, gpu_busy_pct,
    gpu_idle_pct, cpu_busy_us_per_iter, bound (all from the metrics layer), events, size_bytes,
    source, added_at."""
    ids = list(store.query("SELECT run_id FROM traces")["run_id"])
    return query_files.run(store, "run_catalog", run_ids=ids)


# ── the metrics layer (definitions in sql/metrics.sql) ──────────────────────────────────────

def run_metrics(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per run (in ``run_ids`` order), means per iteration: wall_us_per_iter,
    gpu_busy_us_per_iter, gpu_idle_us_per_iter, carried_us_per_iter (GPU work launched before
    the iteration), kernel_us_per_iter, copy_us_per_iter, exposed_copy_us_per_iter,
    comm_us_per_iter, kernel_sum_us_per_iter, kernels_per_iter, cpu_busy_us_per_iter (launching
    thread), launch_api_us_per_iter, launch_calls_per_iter, sync_us_per_iter,
    idle_sync_us_per_iter, idle_cpu_us_per_iter, cpu_events_per_iter; shares of the iteration
    gpu_busy_pct, gpu_idle_pct, carried_pct, kernel_pct, comm_pct, exposed_copy_pct, cpu_busy_pct
    (busy + carried + idle = 100); bound ('gpu' | 'cpu' | 'sync' | 'mixed' | 'none') and
    profiler_overhead_likely."""
    return query_files.run(store, "run_metrics", run_ids=query_files.ids(run_ids))


def iteration_metrics(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run and iteration, in ns: name, start_ns, end_ns, wall_ns, gpu_active_ns, gpu_busy_ns,
    carried_ns, gpu_idle_ns, idle_sync_ns, idle_cpu_ns, kernel_ns, copy_ns, comm_ns,
    kernel_sum_ns, kernels, cpu_busy_ns, cpu_events, launch_api_ns, launch_calls, sync_ns."""
    return query_files.run(store, "iteration_metrics", run_ids=query_files.ids(run_ids))


def run_labels(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, label (variant/shape or file name + short id), name, source, gpu_name, cold."""
    return query_files.run(store, "run_labels", run_ids=query_files.ids(run_ids))


def run_iterations(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, iteration, name, start_ns, end_ns, dur_us (whole trace when none recorded)."""
    return query_files.run(store, "run_iterations", run_ids=query_files.ids(run_ids))


def iteration_bounds(store: StoreHandle, run_ids, iteration: int) -> pd.DataFrame:
    """Per run, in ``run_ids`` order, the chosen iteration (its last one when it has fewer):
    run_id, iteration, name, start_ns, end_ns, dur_us. Runs missing from the store are left out."""
    iters = run_iterations(store, run_ids)
    if iters.empty:
        return iters
    last = iters.groupby("run_id")["iteration"].transform("max")
    chosen = iters[iters["iteration"] == last.clip(upper=iteration)]
    order = {run: i for i, run in enumerate(query_files.ids(run_ids))}
    return chosen.sort_values("run_id", key=lambda ids: ids.map(order), ignore_index=True)
