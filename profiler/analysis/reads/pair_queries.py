"""Reads of two runs side by side: kernel sequences of an iteration and their alignment, per-name
deltas of kernels, launch APIs and CPU ops."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.model import diff
from profiler.analysis.reads import kept, query_files
from profiler.errors import QueryError, UnknownRunError
from profiler.analysis.reads.run_queries import iteration_bounds
from profiler.storage.session import StoreHandle

ALIGN_MAX_KERNELS = 4000      # longer iterations are cut before alignment


# ── compare ──────────────────────────────────────────────────────────────────────────────────

def kernel_sequence(store: StoreHandle, run_id: str, iteration: int) -> pd.DataFrame:
    """Kernels and copies of one iteration in start order: seq, kind, name, stream, start_us
    (from the iteration start), dur_us, launch_api."""
    bounds = iteration_bounds(store, [run_id], iteration)
    if bounds.empty:
        raise UnknownRunError(f"run {run_id} is not in the store (deleted, or a mistyped link?)")
    row = bounds.iloc[0]
    return query_files.run(store, "kernel_sequence", run_id=run_id, start_ns=int(row.start_ns),
                end_ns=int(row.end_ns))


def kernel_delta(store: StoreHandle, run_a: str, run_b: str) -> pd.DataFrame:
    """Per kernel name, per iteration: calls_a, calls_b, calls_delta, us_a, us_b, us_delta,
    presence ('both' | 'only in a' | 'only in b')."""
    _check_pair(run_a, run_b)
    return query_files.run(store, "kernel_delta", run_a=run_a, run_b=run_b)


def launch_api_delta(store: StoreHandle, run_a: str, run_b: str) -> pd.DataFrame:
    """Per API name, per iteration: api_kind, calls_a/b/delta, cpu_us_a/b/delta, presence."""
    _check_pair(run_a, run_b)
    return query_files.run(store, "launch_api_delta", run_a=run_a, run_b=run_b)


def _check_pair(run_a: str, run_b: str) -> None:
    if run_a == run_b:
        raise QueryError(f"compare needs two different runs; both sides are {run_a}")


def kernel_alignment(store: StoreHandle, run_a: str, run_b: str, iteration: int) -> pd.DataFrame:
    """The kernel sequences of one iteration of each run, aligned by kernel family
    (``diff.align_kernel_sequences``): slot, seq_a, name_a, dur_us_a, seq_b, name_b, dur_us_b,
    family, status ('same' | 'same family' | 'replaced' | 'only in a' | 'only in b')."""
    _check_pair(run_a, run_b)
    return kept.value(store, ("kernel_alignment", run_a, run_b, int(iteration)), [run_a, run_b],
                      lambda: _kernel_alignment(store, run_a, run_b, iteration))


def _kernel_alignment(store, run_a: str, run_b: str, iteration: int) -> pd.DataFrame:
    seq_a = kernel_sequence(store, run_a, iteration).head(ALIGN_MAX_KERNELS)
    seq_b = kernel_sequence(store, run_b, iteration).head(ALIGN_MAX_KERNELS)
    return diff.align_kernel_sequences(seq_a, seq_b)


def cpu_op_delta(store: StoreHandle, run_a: str, run_b: str) -> pd.DataFrame:
    """CPU ops per iteration, by name: calls_a/b/delta, self_us_a/b/delta, presence."""
    _check_pair(run_a, run_b)
    return query_files.run(store, "cpu_op_delta", run_a=run_a, run_b=run_b)
