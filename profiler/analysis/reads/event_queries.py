"""Events one by one (the Events page): every kernel launch and every CPU op call of the selected
runs, not summed per name, longest first, each with what the Timeline needs to open at it (its
step, its start in that step, the external id its flow arrows join on)."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import query_files
from profiler.storage.session import StoreHandle

MAX_EVENTS = 2_000   # rows a page lists (the longest); `matching` counts them all


def kernel_instances(store: StoreHandle, run_ids, search: str = "", limit: int = MAX_EVENTS) -> pd.DataFrame:
    """One row per kernel launch (sql/kernel_instances.sql): run_id, name, dur_ns, start_ns,
    step, start_in_step_ns, device, stream, grid, block, api, launch_op, external_id,
    correlation, matching; `search` keeps those whose kernel, launching op or API contains it."""
    return query_files.read(store, "kernel_instances", run_ids=query_files.ids(run_ids),
                            search=search.strip(), limit=int(limit))


def op_instances(store: StoreHandle, run_ids, search: str = "", limit: int = MAX_EVENTS) -> pd.DataFrame:
    """One row per CPU op or annotation call that is work (sql/op_instances.sql): run_id, name,
    cat, dur_ns, self_ns, start_ns, step, start_in_step_ns, thread, depth, parent, input_dims,
    kernels, external_id, matching; `search` keeps those whose name contains it."""
    return query_files.read(store, "op_instances", run_ids=query_files.ids(run_ids),
                            search=search.strip(), limit=int(limit))
