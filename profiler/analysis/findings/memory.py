"""GPU (or CPU) memory of each run, from the trace's '[memory]' events (profile_memory=True).

One definition each, read by the memory page, the compare page, the sweep, `summary --json` and
the findings:
- ``peak_allocated_bytes``: the highest 'Total Allocated' the allocator reported on the run's
  memory device (its CUDA device with the most memory events, else the CPU) during the recording.
  It includes what was held before the recording began (``held_at_start_bytes``: inputs, caches).
- per iteration: the peak during the iteration and the peak above what was allocated when the
  iteration began (``peak_above_start_bytes``).
- live at the peak: blocks allocated during the recording and not yet freed at the first event
  that reached the peak, with the CPU op that made each one and that op's input shapes.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kept, queries, query_files, reads, run_queries
from profiler.analysis.findings.finding import Finding
from profiler.storage.session import StoreHandle

MIB = 2**20
SCORE_ITEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
NO_EVENTS = ("has no memory events: its trace was recorded without profile_memory=True, so "
             "allocations cannot be shown")


def memory_summary(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run with memory events: run_id, device_type (1 CUDA, 0 CPU), device, events,
    peak_allocated_bytes, peak_reserved_bytes, held_at_start_bytes, peak_event_idx, peak_ts_ns,
    peak_iteration. Runs without memory events are absent (see ``runs_without_memory``)."""
    return query_files.run(store, "memory_summary", run_ids=query_files.ids(run_ids))


def runs_without_memory(store: StoreHandle, run_ids) -> list[str]:
    """The runs among ``run_ids`` whose traces hold no memory events, in order."""
    have = set(memory_summary(store, run_ids)["run_id"])
    return [r for r in query_files.ids(run_ids) if r not in have]


def memory_timeline(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Allocated bytes after each memory event: run_id, event_idx, t_us (from the run's first
    iteration start), iteration, change_bytes, total_allocated_bytes, total_reserved_bytes."""
    return query_files.run(store, "memory_timeline", run_ids=query_files.ids(run_ids))


def iteration_peaks(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, iteration, events, peak_allocated_bytes, start_allocated_bytes, peak_above_start_bytes."""
    return query_files.run(store, "memory_iteration_peaks", run_ids=query_files.ids(run_ids))


def live_at_peak(store: StoreHandle, run_id: str, limit: int = 10) -> pd.DataFrame:
    """The largest blocks live at the run's peak: event_idx, ts_ns, iteration, size_bytes,
    op_name (None when no CPU op encloses the allocation), op_input_dims (JSON text or None)."""
    return store.query(reads.sql_text("memory_live_at_peak"), {"run_id": str(run_id), "limit": int(limit)})


def score_bytes(shape: dict) -> int | None:
    """Bytes of one batch×heads×L×L score matrix in the run's dtype; None for runs without a shape."""
    try:
        item = SCORE_ITEM_BYTES[shape["dtype"]]
        return int(shape["batch"]) * int(shape["heads"]) * int(shape["seq_len"]) ** 2 * item
    except (KeyError, TypeError, ValueError):
        return None


def mib(n: float) -> str:
    return f"{n / MIB:,.1f} MiB"


def _scores_at_peak(store, run_id: str, shape: dict) -> tuple[int, list[str]]:
    """(bytes in score-sized blocks live at the peak, the ops that made them)."""
    size = score_bytes(shape)
    if not size:
        return 0, []
    live = live_at_peak(store, run_id, limit=50)
    elements = size // SCORE_ITEM_BYTES[shape["dtype"]]
    scores = live[live["size_bytes"].isin([size, elements * 4])]  # in the run's dtype, or fp32 (math backend)
    makers = list(dict.fromkeys(scores["op_name"].fillna("no CPU op")))
    return int(scores["size_bytes"].sum()), makers


def memory_findings(store: StoreHandle, run_ids) -> list:
    """One 'memory' finding for the selected runs that have memory events: the run with the
    highest peak, how much of it score-matrix-sized blocks and which ops made them, and each
    other run's peak; plus one 'no_memory' finding naming runs without memory events. Kept per
    set of runs (profiler/analysis/reads/kept.py)."""
    run_ids = query_files.ids(run_ids)
    return kept.value(store, ("memory_findings",), run_ids, lambda: _memory_findings(store, run_ids))


def _memory_findings(store, run_ids: list[str]) -> list:

    summary = memory_summary(store, run_ids).set_index("run_id")
    summary = summary[summary["peak_allocated_bytes"].notna()]  # events without totals say no peak
    labels = run_queries.run_labels(store, run_ids).set_index("run_id")["label"].to_dict()
    found = []
    if not summary.empty:
        shapes = queries.run_shapes(store, run_ids).set_index("run_id")
        top = summary["peak_allocated_bytes"].idxmax()
        peak = int(summary.loc[top, "peak_allocated_bytes"])
        held = int(summary.loc[top, "held_at_start_bytes"])
        shape = shapes.loc[top].to_dict() if top in shapes.index else {}
        score_total, makers = _scores_at_peak(store, top, shape)
        text = f"{labels.get(top, top)} holds {mib(peak)} at its peak ({mib(held)} of it held before the recording)"
        if score_total:
            dims = f"{shape['batch']}×{shape['heads']}×{shape['seq_len']}×{shape['seq_len']}"
            text += f", {mib(score_total)} of it score matrices ({dims}) made by {', '.join(makers)}"
        others = [r for r in run_ids if r in summary.index and r != top]
        parts = [f"{labels.get(r, r)} holds {mib(summary.loc[r, 'peak_allocated_bytes'])}"
                 + (f" ({peak / summary.loc[r, 'peak_allocated_bytes']:.1f}× less)"
                    if summary.loc[r, "peak_allocated_bytes"] > 0 else "") for r in others]
        text += "; " + "; ".join(parts) + "." if parts else "."
        found.append(Finding("memory", text, {
            "peak_allocated_bytes": {r: int(summary.loc[r, "peak_allocated_bytes"]) for r in summary.index},
            "held_at_start_bytes": held, "score_bytes_at_peak": score_total, "score_makers": makers}))
    missing = [r for r in run_ids if r not in summary.index]
    if missing:
        names = ", ".join(labels.get(r, r) for r in missing)
        found.append(Finding("no_memory", f"{names} {NO_EVENTS}.", {"runs": missing}))
    return found
