"""SQL ▶ DataFrame: every read the dashboard makes, one query per ``sql/<name>.sql`` file.

Each function is named after its SQL file and the table it returns, takes a store handle (a
``Store`` or its ``Session``: profiler/storage/session.py) and run ids, and returns a pandas DataFrame with units in
its column names (``*_ns``, ``*_us``, ``*_pct``, ``*_bytes``). A file's header names the SQL modules it
includes (profiler/storage/sql/lib/, sql_library.py); a read installs them on its cursor first. Times "per iteration" divide by the
run's ProfilerStep count; a run without iterations counts as one iteration spanning the trace.

The reads live by duty, each imported from its own module: `run_queries` (runs & iterations, the
metrics layer), `kernel_queries`, `timeline_queries`, `pair_queries` (compare) and, here, launches,
CPU cost and the store summary; `query_files.run` runs a file and keeps its rows per run. Add a
query to the module of its section, with its own ``.sql`` file; callers import it from there.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads.query_files import ids as _ids, run as _run
from profiler.analysis.reads.run_queries import run_labels, run_metrics
from profiler.analysis.reads.units import json_value
from profiler.storage.session import StoreHandle


# ── launches ─────────────────────────────────────────────────────────────────────────────────

def launch_api_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """API calls per run by name: api_kind, category (launch/memcpy/memset/sync/other),
    calls_per_iter, calls, api_us_per_iter, mean_us, kernels_launched_per_iter,
    memops_launched_per_iter."""
    return _run(store, "launch_api_table", run_ids=_ids(run_ids))


def launch_targets_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """What each API launched: run_id, api, api_kind, target_kind, target_name,
    launches_per_iter, launches, mean_target_us."""
    return _run(store, "launch_targets_table", run_ids=_ids(run_ids))


def launch_latency_histogram(store: StoreHandle, run_ids) -> pd.DataFrame:
    """API start → kernel start: run_id, api, bin_start_us, bin_end_us, launches."""
    return _run(store, "launch_latency_histogram", run_ids=_ids(run_ids))


def launch_latency_stats(store: StoreHandle, run_ids) -> pd.DataFrame:
    """API start → kernel start: run_id, api, launches, p50_us, p90_us, p99_us, max_us."""
    return _run(store, "launch_latency_stats", run_ids=_ids(run_ids))


# ── CPU cost ─────────────────────────────────────────────────────────────────────────────────

def iteration_cpu_gpu(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run and iteration: wall_us, cpu_busy_us (launching thread), cpu_op_self_us (all
    threads), launch_api_us, sync_us, gpu_busy_us, gpu_idle_us, gpu_kernel_us, gpu_memop_us."""
    return _run(store, "iteration_cpu_gpu", run_ids=_ids(run_ids))


def op_self_time(store: StoreHandle, run_ids, limit: int = 15) -> pd.DataFrame:
    """The ``limit`` heaviest CPU ops per run: op, calls_per_iter, self_us_per_iter,
    total_us_per_iter, self_share_pct."""
    return _run(store, "op_self_time", run_ids=_ids(run_ids), limit=int(limit))


def cudnn_op_time(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run and iteration: cudnn_calls, cudnn_cpu_us (outermost cuDNN ops),
    cudnn_kernel_us (kernels they launched)."""
    return _run(store, "cudnn_op_time", run_ids=_ids(run_ids))


def run_cpu_summary(store: StoreHandle, run_ids, per_iter: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per run: label, cold, iterations, mean per-iteration cpu_busy_us (launching
    thread), cpu_op_self_us, launch_api_us, sync_us, gpu_busy_us and gpu_kernel_us,
    first_iter_cpu_us vs later_iter_cpu_us (CPU op self time), gpu_busy_pct, gpu_idle_pct and
    the metrics layer's verdict ``bound``. ``per_iter``: an ``iteration_cpu_gpu`` result the
    caller already has."""
    per_iter = iteration_cpu_gpu(store, run_ids) if per_iter is None else per_iter
    labels = run_labels(store, run_ids)[["run_id", "label", "cold"]]
    if per_iter.empty:
        return labels.iloc[0:0]
    grouped = per_iter.sort_values("iteration").groupby("run_id")
    summary = grouped[["cpu_busy_us", "cpu_op_self_us", "launch_api_us", "sync_us", "gpu_busy_us",
                       "gpu_kernel_us"]].mean()
    summary["iterations"] = grouped.size()
    summary["first_iter_cpu_us"] = grouped["cpu_op_self_us"].first()
    summary["later_iter_cpu_us"] = grouped["cpu_op_self_us"].apply(lambda s: s.iloc[1:].mean())
    verdict = run_metrics(store, run_ids).set_index("run_id")[["gpu_busy_pct", "gpu_idle_pct", "bound"]]
    return labels.merge(summary.join(verdict).reset_index(), on="run_id")


SHAPE_KEYS = ["variant", "mode", "batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "window",
              "varlen", "dtype", "causal"]


def cold_warm_table(store: StoreHandle, run_ids, per_iter: pd.DataFrame | None = None) -> pd.DataFrame:
    """Captured runs of the same variant and shape, cold (first call of a fresh shape) against
    warm: the SHAPE_KEYS, cold_runs, warm_runs, mean per-iteration cold/warm cpu_op_self_us and
    gpu_kernel_us, and cpu_cold_over_warm. Only shapes with both a cold and a warm run."""
    per_iter = iteration_cpu_gpu(store, run_ids) if per_iter is None else per_iter
    per_run = per_iter.groupby("run_id")[["cpu_op_self_us", "gpu_kernel_us"]].mean()
    runs = run_shapes(store, run_ids).dropna(subset=["variant", "cold"]).join(per_run, on="run_id")
    runs["temp"] = runs["cold"].map({True: "cold", False: "warm"})
    table = runs.pivot_table(index=SHAPE_KEYS, columns="temp", dropna=False, aggfunc={
        "run_id": "count", "cpu_op_self_us": "mean", "gpu_kernel_us": "mean"})
    if table.empty or not {"cold", "warm"} <= set(table.columns.get_level_values(1)):
        return pd.DataFrame(columns=[*SHAPE_KEYS, "cold_runs", "warm_runs"])
    table.columns = [f"{temp}_{name}" for name, temp in table.columns]
    table = table.rename(columns={"cold_run_id": "cold_runs", "warm_run_id": "warm_runs"})
    table = table[(table["cold_runs"] > 0) & (table["warm_runs"] > 0)].reset_index()
    table["cpu_cold_over_warm"] = table["cold_cpu_op_self_us"] / table["warm_cpu_op_self_us"]
    return table


# ── store summary (command line) ─────────────────────────────────────────────────────────────

def trace_summary(store: StoreHandle) -> list[dict]:
    """One dict per run, oldest first, JSON-ready (no NaN: missing values are None): run_id,
    name, source, variant, gpu, events, kernels, iterations, the metrics layer's per-iteration
    figures (kernels_per_iter, wall_us_per_iter, gpu_busy_us_per_iter, kernel_us_per_iter,
    copy_us_per_iter, comm_us_per_iter, carried_us_per_iter, gpu_busy_pct, gpu_idle_pct,
    carried_pct, span_busy_pct (TraceLens's first-to-last busy share), cpu_busy_us_per_iter,
    launch_api_us_per_iter, sync_us_per_iter, bound, profiler_overhead_likely), launch_apis {launch API name: calls per iteration}, added_at."""
    ids = list(store.query("SELECT run_id FROM traces")["run_id"])
    rows = _run(store, "trace_summary", run_ids=ids).to_dict("records")
    for row in rows:
        apis = row.pop("launch_apis")
        for key, value in row.items():
            row[key] = json_value(value)
        row["launch_apis"] = {} if apis is None else {str(k): float(v) for k, v in dict(apis).items()}
    return rows


# ── analysis (findings, compare CLI) ─────────────────────────────────────────────────────────

def memop_table(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Copies and sets per run by name: kind, calls_per_iter, bytes_per_iter, us_per_iter."""
    return _run(store, "memop_table", run_ids=_ids(run_ids))


def run_shapes(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, variant, batch, heads, seq_len, head_dim, dtype, causal, cold, gpu_name."""
    return _run(store, "run_shapes", run_ids=_ids(run_ids))
