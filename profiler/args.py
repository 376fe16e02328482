"""The one place that maps raw trace argument names to store columns.

Kineto renamed its arguments across versions (`external id` → `External id`), ROCm uses `cid`
where CUDA uses `cbid`, and one trace may hold both `bytes` and `Bytes`. Each column lists every
spelling it accepts, first match wins. `Args` is a msgspec struct generated from this table, so a
trace's `args` object is decoded in the same pass as its event, and unknown keys are skipped
without being built.
"""
from __future__ import annotations

from typing import Any

import msgspec

ARG_COLUMNS: dict[str, tuple[str, ...]] = {
    "device": ("device", "Device"),
    "stream": ("stream",),
    "correlation": ("correlation",),
    "external_id": ("External id", "external id"),
    "cbid": ("cbid", "cid"),
    "registers_per_thread": ("registers per thread",),
    "shared_mem_bytes": ("shared memory",),
    "blocks_per_sm": ("blocks per SM",),
    "warps_per_sm": ("warps per SM",),
    "est_occupancy_pct": ("est. achieved occupancy %",),
    "grid": ("grid",),
    "block": ("block",),
    "bytes": ("bytes", "Bytes"),
    "bandwidth_gbps": ("memory bandwidth (GB/s)",),
}


def _field_name(column: str, index: int) -> str:
    return f"{column}_{index}"


Args = msgspec.defstruct(
    "Args",
    [
        (_field_name(column, i), Any, msgspec.field(default=None, name=raw))
        for column, spellings in ARG_COLUMNS.items()
        for i, raw in enumerate(spellings)
    ],
    gc=False,
)

# column -> the Args attributes that may hold it, in order of preference
_ATTRS: dict[str, tuple[str, ...]] = {
    column: tuple(_field_name(column, i) for i in range(len(spellings)))
    for column, spellings in ARG_COLUMNS.items()
}


def arg(args: Any, column: str) -> Any:
    """The value of `column` in a decoded `Args` (None when absent under every spelling)."""
    if args is None:
        return None
    for attr in _ATTRS[column]:
        value = getattr(args, attr)
        if value is not None:
            return value
    return None


def as_int(value: Any) -> int | None:
    """An integer from an int, a float or a numeric string; None for anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def as_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def dim3(value: Any) -> tuple[int | None, int | None, int | None]:
    """grid / block as (x, y, z); missing dimensions are None."""
    if isinstance(value, (list, tuple)):
        dims = [as_int(v) for v in value[:3]]
        return tuple(dims + [None] * (3 - len(dims)))  # type: ignore[return-value]
    return (None, None, None)
