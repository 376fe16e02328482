"""What a trace says about itself: the row of the `traces` table, from the trace's top level
(deviceProperties, distributedInfo, version keys) and, for captured runs, its "attention_run" object."""
from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from profiler.parse.trace import MAX_NAME_CHARS, TRUNCATED, TraceSummary

RUN_KEY = "attention_run"
RUN_COLUMNS = ("variant", "batch", "heads", "seq_len", "head_dim", "dtype", "causal", "cold",
               "mode", "kv_heads", "kv_len", "window", "varlen")
_INT_RUN_COLUMNS = {"batch", "heads", "seq_len", "head_dim", "kv_heads", "kv_len", "window"}
INT32 = 2**31
# deviceProperties keys the views read as integers (gpus.device_from_trace)
DEVICE_INTS = ("id", "computeMajor", "computeMinor", "numSms", "warpSize", "maxThreadsPerBlock",
               "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor",
               "sharedMemPerBlock", "sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor",
               "sharedMemPerBlockOptin", "totalGlobalMem")


class _Checked:
    """Header values made safe to store, with a count of what had to be dropped."""

    def __init__(self) -> None:
        self.dropped: dict[str, int] = {}

    def drop(self, what: str) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + 1

    def notes(self) -> list[str]:
        return [f"{n} {what} not usable: stored as missing" for what, n in self.dropped.items()]

    def text(self, value: Any, what: str) -> str | None:
        if value is None or value == "":
            return None
        if isinstance(value, (dict, list)):
            self.drop(what)
            return None
        text = str(value)
        return text if len(text) <= MAX_NAME_CHARS else text[:MAX_NAME_CHARS] + TRUNCATED

    def integer(self, value: Any, what: str, limit: int = INT32) -> int | None:
        if value is None:
            return None
        try:
            number = int(value) if not isinstance(value, float) or value.is_integer() else None
        except (TypeError, ValueError, OverflowError):
            number = None
        if isinstance(value, bool) or number is None or not -limit <= number < limit:
            self.drop(what)
            return None
        return number

    def devices(self, props: Any) -> list | None:
        """deviceProperties: a list of objects whose integer fields are integers."""
        if props is None:
            return None
        if not isinstance(props, list):
            self.drop("deviceProperties (not a list)")
            return None
        kept = []
        for entry in props:
            if not isinstance(entry, dict):
                self.drop("deviceProperties entries (not objects)")
                continue
            entry = {k: v for k, v in entry.items() if k not in DEVICE_INTS or v is None
                     or self.integer(v, f"deviceProperties.{k} values", 2**53) is not None}
            if "name" in entry:
                entry["name"] = self.text(entry["name"], "deviceProperties.name values")
            kept.append(self.plain(entry))
        return kept

    def plain(self, value: Any, depth: int = 0) -> Any:
        """`value` as JSON the store accepts: no NaN or infinity, long strings cut, nesting capped."""
        if isinstance(value, float) and not math.isfinite(value):
            self.drop("numbers that are not finite")
            return None
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            return value[:MAX_NAME_CHARS] + TRUNCATED
        if depth > 16 and isinstance(value, (dict, list)):
            self.drop("values nested too deeply")
            return None
        if isinstance(value, dict):
            return {str(k)[:MAX_NAME_CHARS]: self.plain(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.plain(v, depth + 1) for v in value]
        return value


def cuda_version(value: Any) -> str | None:
    """Kineto writes CUDA versions as integers (12040 -> '12.4'); strings pass through."""
    if isinstance(value, int) and value > 1000:
        return f"{value // 1000}.{value % 1000 // 10}"
    return None if value is None else str(value)


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def _varlen(value: Any, checked: _Checked) -> str | None:
    """Packed lengths as stored: '128,384,512' (from a list of whole numbers), else missing."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 < v < INT32 for v in value):
        checked.drop(f"{RUN_KEY}.varlen values")
        return None
    return checked.text(",".join(map(str, value)), f"{RUN_KEY}.varlen values")


def _run_values(run: dict, checked: _Checked) -> dict:
    """The run columns; a captured run from before modes existed (it has a variant and no mode)
    was a prefill with as many K/V heads as heads and as many keys as queries."""
    values = {}
    for column in RUN_COLUMNS:
        value = run.get(column)
        if column == "varlen":
            value = _varlen(value, checked)
        elif column in _INT_RUN_COLUMNS:
            value = checked.integer(value, f"{RUN_KEY}.{column} values")
        elif column in ("causal", "cold"):
            value = None if value is None else bool(value)
        else:
            value = checked.text(value, f"{RUN_KEY}.{column} values")
        values[column] = value
    if values["variant"] is not None:
        values["mode"] = values["mode"] or "prefill"
        values["kv_heads"] = values["kv_heads"] if values["kv_heads"] is not None else values["heads"]
        values["kv_len"] = values["kv_len"] if values["kv_len"] is not None else values["seq_len"]
    return values


def trace_row(summary: TraceSummary, source: str, span: Any, added_at: dt.datetime) -> tuple[dict, list[str]]:
    """The `traces` row for a parsed trace, and notes on header values that were not usable
    (type-checked here so that views can rely on them; see `DEVICE_INTS`)."""
    header = summary.header
    checked = _Checked()
    props = checked.devices(header.get("deviceProperties"))
    first_gpu = props[0] if props else {}
    dist = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else {}
    run = header.get(RUN_KEY) if isinstance(header.get(RUN_KEY), dict) else {}
    run = checked.plain(run)
    row = {
        "run_id": summary.run_id,
        "name": summary.name,
        "source": source,
        "added_at": added_at,
        "size_bytes": summary.size_bytes,
        "gpu_name": checked.text(_first(run.get("device_name"), first_gpu.get("name")), "GPU names"),
        "device_properties": json.dumps(props, allow_nan=False) if props is not None else None,
        "torch_version": _first(run.get("torch_version"), header.get("torch_version"), header.get("pytorch_version")),
        "cuda_version": _first(run.get("cuda_version"), cuda_version(header.get("cuda_runtime_version"))),
        "cudnn_version": _first(run.get("cudnn_version"), header.get("cudnn_version")),
        "driver_version": cuda_version(header.get("cuda_driver_version")),
        "rank": checked.integer(dist.get("rank"), "distributedInfo.rank values"),
        "world_size": checked.integer(dist.get("world_size"), "distributedInfo.world_size values"),
        "events": summary.events,
        "kernels": span.kernels,
        "skipped_events": summary.skipped,
        "start_ns": span.start_ns,
        "end_ns": span.end_ns,
        **_run_values(run, checked),
        "run_meta": json.dumps(run, allow_nan=False) if run else None,
    }
    for key in ("torch_version", "cuda_version", "cudnn_version", "driver_version"):
        row[key] = checked.text(row[key], f"{key} values")
    return row, checked.notes()
