"""Decoded trace events -> columns of the store's tables, one list per column.

Work is done a column at a time with list comprehensions over the events of one table, which
is several times faster in CPython than building a row per event. Timestamps become integer
nanoseconds: integers and small floats exactly by arithmetic; absolute epoch-microsecond
timestamps with decimals (~1.7e15, past a double's 16 digits) are decoded from their text instead
(`ExactEvent`, see `needs_exact_ts`).
"""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import cache
from operator import attrgetter
from typing import Any, Union

import msgspec
import numpy as np

from profiler.parse.args import NO_ARGS, RAW_COLUMNS, Args, arg_column, dims, raw_text


# the tables the parser fills, and their columns in order (the store's staging reads them)
KERNEL_COLUMNS = (
    "name", "device", "stream", "ts_ns", "dur_ns", "grid_x", "grid_y", "grid_z",
    "block_x", "block_y", "block_z", "registers_per_thread", "shared_mem_bytes",
    "blocks_per_sm", "warps_per_sm", "est_occupancy_pct", "correlation", "external_id",
)
MEMOP_COLUMNS = (
    "kind", "name", "device", "stream", "ts_ns", "dur_ns", "bytes", "bandwidth_gbps",
    "correlation", "external_id",
)
LAUNCH_COLUMNS = (
    "name", "api_kind", "cbid", "pid", "tid", "ts_ns", "dur_ns", "correlation", "external_id",
)
OP_COLUMNS = ("op_id", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "external_id",
              "concrete_inputs", "input_dims", "input_types", "collective", "in_msg_nelems",
              "out_msg_nelems", "msg_dtype", "group_size")
MEMORY_COLUMNS = ("ts_ns", "device_type", "device", "addr", "change_bytes", "total_allocated_bytes",
                  "total_reserved_bytes", "pid", "tid")
LANE_NAME_COLUMNS = ("kind", "pid", "tid", "name")
COLUMNS = {"kernels": KERNEL_COLUMNS, "memops": MEMOP_COLUMNS, "launches": LAUNCH_COLUMNS, "ops": OP_COLUMNS,
           "memory": MEMORY_COLUMNS, "lane_names": LANE_NAME_COLUMNS}

# one chunk's rows: table -> column -> values (columns in `COLUMNS[table]` order)
Batch = dict[str, dict[str, list]]


def _fields(ts_type: Any) -> list:
    return [("ph", str, ""), ("name", str, ""), ("pid", int | str | None, None), ("tid", int | str | None, None),
            ("ts", ts_type, None), ("dur", float, 0.0), ("args", Args | None, None)]


def _event_struct(name: str, ts_type: Any) -> type:
    return msgspec.defstruct(name, [("cat", str, ""), *_fields(ts_type)], gc=False)


Event = _event_struct("Event", int | float | None)
ExactEvent = _event_struct("ExactEvent", msgspec.Raw)

# a timestamp's text longer than this is not a number any trace writes; one whose exponent puts it
# past 10^MAX_US_DIGITS microseconds is out of range: both are missing, without converting them
MAX_NUMBER_CHARS = 64
MAX_US_DIGITS = 30
# a float timestamp at or above this many microseconds cannot be trusted to the nanosecond
EXACT_FLOAT_US = 2.0**53 / 1000 / 4

# trace category -> store table (2020-era traces capitalise categories)
CATEGORY_TABLE = {
    "kernel": "kernels", "Kernel": "kernels",
    "gpu_memcpy": "memops", "Memcpy": "memops",
    "gpu_memset": "memops", "Memset": "memops",
    "cuda_runtime": "launches", "Runtime": "launches", "cuda_driver": "launches",
    "cpu_op": "ops", "Operator": "ops", "user_annotation": "ops", "gpu_user_annotation": "ops",
}
MEMOP_KIND = {"gpu_memcpy": "memcpy", "Memcpy": "memcpy", "gpu_memset": "memset", "Memset": "memset"}
OP_CATEGORY = {"Operator": "cpu_op"}  # normalise old names

Columns = dict[str, list]
_ts, _dur, _name, _cat, _pid, _tid = (attrgetter(a) for a in ("ts", "dur", "name", "cat", "pid", "tid"))


def needs_exact_ts(events: list, skipped: frozenset[str]) -> bool:
    """True when some timestamp (of an event not of a `skipped` category) is a float too large to
    keep its nanosecond digits."""
    return any(type(t) is float and not -EXACT_FLOAT_US < t < EXACT_FLOAT_US and c not in skipped
               for t, c in zip(map(_ts, events), map(_cat, events)))


def to_ns(raw: Any) -> int | None:
    """Decimal microseconds (text such as b'1712186298123456.789', or a number) -> integer ns."""
    if raw is None:
        return None
    if isinstance(raw, (int, float)):
        return round(raw * 1000)
    text = bytes(raw)
    if text[-4:-3] == b".":  # Kineto writes exactly three decimals
        try:
            return int(text.replace(b".", b"", 1))
        except ValueError:
            pass
    if len(text) > MAX_NUMBER_CHARS:
        return None
    try:
        value = Decimal(text.decode())
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return None
    if not value.is_finite() or value.adjusted() > MAX_US_DIGITS:  # '1e999999': never converted
        return None
    return int((value * 1000).to_integral_value())


# categories whose events the store never keeps (Python frames unless asked for, flows, the
# profiler's own spans): their events are skipped by category, before anything else is read
SKIPPED_CATEGORIES = frozenset({"python_function", "ac2g", "async", "fwdbwd", "Trace", "overhead",
                                "cuda_sync", "cuda_profiler_range"})
# the other categories the fast decoder knows ('[memory]' instants are `cpu_instant_event`s)
READ_CATEGORIES = tuple(CATEGORY_TABLE) + ("cpu_instant_event", "python_function")


def skipped_categories(keep_python: bool) -> frozenset[str]:
    return SKIPPED_CATEGORIES - {"python_function"} if keep_python else SKIPPED_CATEGORIES


@cache
def by_category(exact: bool, keep_python: bool) -> tuple[msgspec.json.Decoder, msgspec.json.Decoder]:
    """Decoders (of a list of events, of one event) that read each event's category first: an event
    of a skipped category is decoded no further (an empty struct that reads as such), one of a known
    category as an `Event` (`ExactEvent` when `exact`). An event of any other category, or without
    one, fails them: the caller then decodes its events as `Event`s (checks.decode_with)."""
    ts_type = msgspec.Raw if exact else int | float | None
    skipped = skipped_categories(keep_python)
    kinds = [msgspec.defstruct(f"Skipped_{cat}", [], tag_field="cat", tag=cat, gc=False,
                               namespace={"cat": cat, "ph": "", "name": "", "ts": None})
             for cat in sorted(skipped)]
    kinds += [msgspec.defstruct(f"Event_{cat}", _fields(ts_type), tag_field="cat", tag=cat, gc=False,
                                namespace={"cat": cat})
              for cat in READ_CATEGORIES if cat not in skipped]
    union = Union[tuple(kinds)]  # noqa: UP007 - a union of types made at run time
    return (msgspec.json.Decoder(list[union], strict=False),  # type: ignore[valid-type]
            msgspec.json.Decoder(union, strict=False))


MEMORY_EVENT = "[memory]"  # the instant ('i') event profile_memory writes for each allocation and free
# metadata ('M') events that name a timeline lane -> the kind of name kept
LANE_NAME_KIND = {"thread_name": "thread", "process_name": "process", "process_labels": "process_labels"}


def split(events: list, keep_python: bool) -> dict[str, list]:
    """Complete ('X') events, grouped by the table they go to, the '[memory]' instants, and the
    metadata events that name processes and threads."""
    buckets: dict[str, list] = {"kernels": [], "memops": [], "launches": [], "ops": [], "memory": [],
                                "lane_names": []}
    add = {cat: buckets[table].append for cat, table in CATEGORY_TABLE.items()}
    if keep_python:
        add["python_function"] = buckets["ops"].append
    memory, lane_name = buckets["memory"].append, buckets["lane_names"].append
    skipped = skipped_categories(keep_python)
    for e in events:
        put = add.get(e.cat)
        if put is not None and e.ph == "X":
            put(e)
        elif e.cat in skipped:
            continue
        elif e.ph == "i" and e.name == MEMORY_EVENT:
            memory(e)
        elif e.ph == "M" and e.name in LANE_NAME_KIND:
            lane_name(e)
    return buckets


def timestamps(events: list, exact: bool) -> list:
    """Start times in ns (None where missing or unreadable); `exact`: `ExactEvent`s, ts as text."""
    if exact:
        raw = list(map(_ts, events))
        fast = kineto_ns(raw)
        return fast if fast is not None else [to_ns(t) for t in raw]
    return [None if t is None else round(t * 1000) for t in map(_ts, events)]


_DIGIT_WEIGHTS = 10 ** np.arange(18, -1, -1, dtype=np.uint64)  # of up to 19 digits


def kineto_ns(raw: list) -> list | None:
    """`to_ns` of many timestamps at once when all are written as Kineto writes them, digits, a
    point and three decimals, all of one width (as in '1733000000000999.000'); else None."""
    if not raw or None in raw:
        return None
    texts = list(map(bytes, raw))
    width = len(texts[0])
    if not 5 <= width <= 20 or min(map(len, texts)) != width or max(map(len, texts)) != width:
        return None
    grid = np.frombuffer(b"".join(texts), np.uint8).reshape(-1, width)
    if not (grid[:, -4] == ord(".")).all():
        return None
    digits = np.delete(grid, width - 4, axis=1) - np.uint8(ord("0"))  # a byte below '0' wraps past 9
    if int(digits.max()) > 9:
        return None
    ns = digits.astype(np.uint64) @ _DIGIT_WEIGHTS[-(width - 1):]
    if int(ns.max()) >= 2**63:
        return None
    return ns.astype(np.int64).tolist()


def _durations(events: list) -> list[int]:
    return [round(d * 1000) for d in map(_dur, events)]


def _args(events: list) -> list:
    return [a if a is not None else NO_ARGS for a in map(attrgetter("args"), events)]


def _or_lane(values: list, lanes: list) -> list:
    """GPU events say device/stream in args; old traces only in pid/tid."""
    if None not in values:
        return values
    return [v if v is not None else (p if type(p) is int else None) for v, p in zip(values, lanes)]


@cache
def api_kind(cat: str, name: str) -> str:
    """'driver' for CUDA driver / HIP module APIs (cuLaunchKernelEx, hipExtModuleLaunchKernel)."""
    driver = cat == "cuda_driver" or (name.startswith("cu") and not name.startswith("cuda"))
    return "driver" if driver or name.startswith(("hipModule", "hipExtModule")) else "runtime"


def kernel_columns(events: list, ts: list) -> Columns:
    args = _args(events)
    gx, gy, gz = dims(arg_column(args, "grid"))
    bx, by, bz = dims(arg_column(args, "block"))
    return {
        "name": list(map(_name, events)),
        "device": _or_lane(arg_column(args, "device"), list(map(_pid, events))),
        "stream": _or_lane(arg_column(args, "stream"), list(map(_tid, events))),
        "ts_ns": ts, "dur_ns": _durations(events),
        "grid_x": gx, "grid_y": gy, "grid_z": gz, "block_x": bx, "block_y": by, "block_z": bz,
        **{c: arg_column(args, c) for c in (
            "registers_per_thread", "shared_mem_bytes", "blocks_per_sm", "warps_per_sm",
            "est_occupancy_pct", "correlation", "external_id")},
    }


def memop_columns(events: list, ts: list) -> Columns:
    args = _args(events)
    return {
        "kind": [MEMOP_KIND[c] for c in map(_cat, events)],
        "name": list(map(_name, events)),
        "device": _or_lane(arg_column(args, "device"), list(map(_pid, events))),
        "stream": _or_lane(arg_column(args, "stream"), list(map(_tid, events))),
        "ts_ns": ts, "dur_ns": _durations(events),
        **{c: arg_column(args, c) for c in ("bytes", "bandwidth_gbps", "correlation", "external_id")},
    }


def launch_columns(events: list, ts: list) -> Columns:
    args = _args(events)
    return {
        "name": list(map(_name, events)),
        "api_kind": [api_kind(c, n) for c, n in zip(map(_cat, events), map(_name, events))],
        "cbid": arg_column(args, "cbid"),
        "pid": list(map(_pid, events)), "tid": list(map(_tid, events)),
        "ts_ns": ts, "dur_ns": _durations(events),
        "correlation": arg_column(args, "correlation"), "external_id": arg_column(args, "external_id"),
    }


def _text(raw: Any) -> str | None:
    return None if raw is None else bytes(raw).decode("utf-8", "replace")


COLLECTIVE_ARGS = ("collective", "in_msg_nelems", "out_msg_nelems", "msg_dtype", "group_size")


def op_columns(events: list, ts: list, first_id: int) -> Columns:
    args = _args(events)
    names = list(map(_name, events))
    collective = {c: [None] * len(events) for c in COLLECTIVE_ARGS}
    # only these ops carry a collective's size: read their args, not every op's
    for i in [i for i, n in enumerate(names) if n == "record_param_comms" or n[:5] == "nccl:"]:
        for c in COLLECTIVE_ARGS:
            collective[c][i] = arg_column([args[i]], c)[0]
        if names[i][:5] == "nccl:" and collective["in_msg_nelems"][i] is None:
            _annotation_message(names[i], args[i], collective, i)
    return {
        "op_id": list(range(first_id, first_id + len(events))),
        "cat": [OP_CATEGORY.get(c, c) for c in map(_cat, events)],
        "name": names,
        "pid": list(map(_pid, events)), "tid": list(map(_tid, events)),
        "ts_ns": ts, "dur_ns": _durations(events),
        "external_id": arg_column(args, "external_id"),
        **{c: raw_text(arg_column(args, c)) for c in sorted(RAW_COLUMNS)},
        **collective,
    }


def memory_columns(events: list, ts: list) -> Columns:
    args = _args(events)
    return {
        "ts_ns": ts,
        "device_type": arg_column(args, "device_type"), "device": arg_column(args, "device_id"),
        "addr": arg_column(args, "addr"), "change_bytes": arg_column(args, "bytes"),
        "total_allocated_bytes": arg_column(args, "total_allocated_bytes"),
        "total_reserved_bytes": arg_column(args, "total_reserved_bytes"),
        "pid": list(map(_pid, events)), "tid": list(map(_tid, events)),
    }


def lane_name_columns(events: list) -> Columns:
    """Metadata events -> (kind, pid, tid, name); they need no timestamp. A process's rows have
    tid NULL; Kineto names a GPU's process by its device index and a stream's thread by its id."""
    args = _args(events)
    kinds = [LANE_NAME_KIND[e.name] for e in events]
    names = [n if k != "process_labels" else lab
             for k, n, lab in zip(kinds, arg_column(args, "lane_name"), arg_column(args, "lane_labels"))]
    return {
        "kind": kinds, "pid": list(map(_pid, events)),
        "tid": [t if k == "thread" else None for k, t in zip(kinds, map(_tid, events))],
        "name": [n.strip() if type(n) is str else None for n in names],
    }


def _annotation_message(name: str, args: Any, out: Columns, i: int) -> None:
    """A `nccl:<collective>` annotation recorded with shapes: its first input's element count and
    type are the message (`Input Dims` [[394241]], `Input type` ["float"])."""
    out["collective"][i] = out["collective"][i] or name[len("nccl:"):]
    try:
        raw_dims, raw_types = bytes(args.input_dims_0), bytes(args.input_types_0)
        shape = msgspec.json.decode(raw_dims) if raw_dims else None
        types = msgspec.json.decode(raw_types) if raw_types else None
    except msgspec.DecodeError:
        return
    if type(shape) is list and shape and type(shape[0]) is list and shape[0] \
            and all(type(d) is int and d >= 0 for d in shape[0]):
        n = 1
        for d in shape[0]:
            n *= d
        out["in_msg_nelems"][i] = n
        if type(types) is list and types and type(types[0]) is str:
            out["msg_dtype"][i] = out["msg_dtype"][i] or types[0]


BUILDERS: dict[str, Callable[..., Columns]] = {
    "kernels": kernel_columns, "memops": memop_columns, "launches": launch_columns, "memory": memory_columns,
}
