"""The one place that maps raw trace argument names to store columns.

Kineto renamed its arguments across versions (`external id` → `External id`), ROCm uses `cid`
where CUDA uses `cbid`, and one trace may hold both `bytes` and `Bytes`. Each column lists every
spelling it accepts, first match wins. `Args` is a msgspec struct generated from this table, so a
trace's `args` object is decoded in the same pass as its event, and unknown keys are skipped
without being built.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec

# column -> accepted spellings, first present wins. Values are kept as written (numbers, strings
# such as ROCm's "stream": "0x0", lists); the store's column types coerce them (profiler/storage/staging.py).
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
    # [memory] instants (profile_memory=True)
    "device_id": ("Device Id",),
    "device_type": ("Device Type",),
    "addr": ("Addr",),
    "total_allocated_bytes": ("Total Allocated",),
    "total_reserved_bytes": ("Total Reserved",),
    # record_shapes: kept as the JSON text written (lists per input), read by profiler/analysis/model/costmodel.py
    "input_dims": ("Input Dims",),
    "input_types": ("Input type",),
    "concrete_inputs": ("Concrete Inputs",),
    # collectives, on PyTorch's `record_param_comms` op (nccl:* annotations give sizes as Input Dims)
    "collective": ("Collective name",),
    "in_msg_nelems": ("In msg nelems",),
    "out_msg_nelems": ("Out msg nelems",),
    "msg_dtype": ("dtype",),
    "group_size": ("Group size",),
    # metadata ('M') events: a process's or thread's name, a process's label ("GPU 0")
    "lane_name": ("name",),
    "lane_labels": ("labels",),
}
RAW_COLUMNS = frozenset({"input_dims", "input_types", "concrete_inputs"})  # not decoded at ingest


def _field_name(column: str, index: int) -> str:
    return f"{column}_{index}"


Args = msgspec.defstruct(
    "Args",
    [
        (_field_name(column, i), msgspec.Raw if column in RAW_COLUMNS else Any,
         msgspec.field(default=msgspec.Raw() if column in RAW_COLUMNS else None, name=raw))
        for column, spellings in ARG_COLUMNS.items()
        for i, raw in enumerate(spellings)
    ],
    gc=False,
)
NO_ARGS = Args()

# column -> the Args attributes that may hold it, in order of preference
_ATTRS: dict[str, tuple[str, ...]] = {
    column: tuple(_field_name(column, i) for i in range(len(spellings)))
    for column, spellings in ARG_COLUMNS.items()
}


def arg_column(args: list, column: str) -> list:
    """The values of `column` for a list of decoded `Args`, first spelling that is present wins."""
    attrs = _ATTRS[column]
    values = list(map(attrgetter(attrs[0]), args))
    for attr in attrs[1:]:
        if None not in values:
            break
        values = [v if v is not None else getattr(a, attr) for v, a in zip(values, args)]
    return values


def raw_text(values: list) -> list:
    """Raw JSON values (msgspec.Raw, empty when absent) -> their text, None where absent."""
    return [bytes(v).decode() if v else None for v in values]


def dims(values: list) -> tuple[list, list, list]:
    """grid / block lists -> x, y, z columns (None where a dimension is missing)."""
    def axis(i: int) -> list:
        return [d[i] if type(d) is list and len(d) > i else None for d in values]

    return axis(0), axis(1), axis(2)
