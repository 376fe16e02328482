"""Running a query file: ``run(store, name, **params)`` gives the rows of ``sql/<name>.sql`` as a
DataFrame, kept per run (profiler/analysis/reads/kept.py) for the queries whose rows depend on one run or
one pair. The query modules (`run_queries`, `kernel_queries`, `timeline_queries`, `pair_queries`,
and `queries`, which re-exports them all) read through it.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kept
from profiler.analysis.reads.reads import sql_text
from profiler.storage.session import StoreHandle


# queries whose rows for a run depend only on that run's stored rows: kept per run between page
# runs (profiler/analysis/reads/kept.py), with the order of their ORDER BY ("given": $run_ids' order)
PER_RUN = {name: "given" for name in ("run_labels", "run_metrics", "iteration_metrics", "run_shapes",
                                      "run_devices", "run_timings", "memory_summary")} | {
    name: "run_id" for name in ("run_iterations", "kernel_table", "kernel_configs", "memop_table",
                                "iteration_cpu_gpu", "memory_timeline", "memory_iteration_peaks",
                                "launch_api_table", "launch_targets_table", "launch_latency_histogram",
                                "launch_latency_stats", "op_self_time", "cudnn_op_time", "kernel_counters",
                                "timeline_trace_bounds", "gpu_work_names")}
# queries of one run or a pair, kept whole: the parameters that name runs
PAIRS = {"kernel_delta": ("run_a", "run_b"), "launch_api_delta": ("run_a", "run_b"),
         "cpu_op_delta": ("run_a", "run_b"), "kernel_sequence": ("run_id",),
         "cold_extra_cpu": ("cold", "warm")}


def run(store: StoreHandle, name: str, bulk: int | None = None, **params) -> pd.DataFrame:
    """The rows of ``sql/<name>.sql``; those of the PER_RUN (up to ``bulk`` runs at once, by default
    `kept.SQL_BULK`) and PAIRS queries are kept."""
    if name in PER_RUN:
        rest = tuple(sorted((k, v) for k, v in params.items() if k != "run_ids"))
        return kept.per_run(store, (name, rest), params["run_ids"],
                            lambda ids: read(store, name, run_ids=ids, **dict(rest)), PER_RUN[name],
                            bulk=kept.SQL_BULK if bulk is None else bulk)
    if name in PAIRS:
        return kept.value(store, (name, tuple(sorted(params.items()))), [params[k] for k in PAIRS[name]],
                          lambda: read(store, name, **params))
    return read(store, name, **params)


def read(store: StoreHandle, name: str, **params) -> pd.DataFrame:
    """The rows of ``sql/<name>.sql``. Only reads: the metrics layer's rows were written at ingest
    (or by a writing handle's upkeep, profiler/storage/migrations.py)."""
    return store.query(sql_text(name), params)


def ids(run_ids) -> list[str]:
    return [str(r) for r in run_ids]
