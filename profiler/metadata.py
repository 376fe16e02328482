"""What a trace says about itself: the row of the `traces` table, from the trace's top level
(deviceProperties, distributedInfo, version keys) and, for captured runs, its "attention_run" object."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from profiler.trace import TraceSummary

RUN_KEY = "attention_run"
RUN_COLUMNS = ("variant", "batch", "heads", "seq_len", "head_dim", "dtype", "causal", "cold")
_INT_RUN_COLUMNS = {"batch", "heads", "seq_len", "head_dim"}


def cuda_version(value: Any) -> str | None:
    """Kineto writes CUDA versions as integers (12040 -> '12.4'); strings pass through."""
    if isinstance(value, int) and value > 1000:
        return f"{value // 1000}.{value % 1000 // 10}"
    return None if value is None else str(value)


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _run_values(run: dict) -> dict:
    values = {}
    for column in RUN_COLUMNS:
        value = run.get(column)
        if column in _INT_RUN_COLUMNS:
            value = _int(value)
        elif column in ("causal", "cold"):
            value = None if value is None else bool(value)
        elif value is not None:
            value = str(value)
        values[column] = value
    return values


def trace_row(summary: TraceSummary, source: str, span: Any, added_at: dt.datetime) -> dict:
    """The `traces` row for a parsed trace."""
    header = summary.header
    props = header.get("deviceProperties")
    props = props if isinstance(props, list) else None
    first_gpu = props[0] if props and isinstance(props[0], dict) else {}
    dist = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    run = header.get(RUN_KEY) if isinstance(header.get(RUN_KEY), dict) else {}
    row = {
        "trace_id": summary.trace_id,
        "name": summary.name,
        "source": source,
        "added_at": added_at,
        "size_bytes": summary.size_bytes,
        "gpu_name": _first(run.get("device_name"), first_gpu.get("name")),
        "device_properties": json.dumps(props) if props is not None else None,
        "torch_version": _first(run.get("torch_version"), header.get("torch_version"), header.get("pytorch_version")),
        "cuda_version": _first(run.get("cuda_version"), cuda_version(header.get("cuda_runtime_version"))),
        "cudnn_version": _first(run.get("cudnn_version"), header.get("cudnn_version")),
        "driver_version": cuda_version(header.get("cuda_driver_version")),
        "rank": _int(dist.get("rank")),
        "world_size": _int(dist.get("world_size")),
        "events": summary.events,
        "kernels": span.kernels,
        "skipped_events": summary.skipped,
        "start_ns": span.start_ns,
        "end_ns": span.end_ns,
        **_run_values(run),
        "run_meta": json.dumps(run) if run else None,
    }
    for key in ("torch_version", "cudnn_version"):
        row[key] = None if row[key] is None else str(row[key])
    return row
