"""The cost model over a stored run: each modelled op call with its kernels, time and roofline.

`op_calls(store, run_ids)` charges every kernel and copy to the op that owns it
(`sql/op_kernels.sql`: launch correlation id -> CPU op -> modelled ancestor), prices each owning op
call with `profiler.analysis.costmodel` from its recorded inputs, and rates it against the device's
datasheet peak for its precision on the engine its kernel ran on (`profiler.analysis.tensor_cores`).
`ops_table` aggregates calls of one op and shape (the `ops` command, the attention page);
`run_totals` sums one iteration of each run (the roofline, the findings).

Runs captured without `record_shapes` have no recorded inputs; when the run describes its own
attention shape (captured runs do), the inputs are inferred from it (`profiler.analysis.run_shape`) and the rows say
`shape_source = 'run shape'` instead of `'trace'`.

The model works on numpy columns ({name: array}, one row per index) and needs no pandas, so the
`ops` command starts without it (`ops_columns`); `op_calls` and `ops_table` hand the same columns
to the dashboard as DataFrames.
"""
from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from collections import OrderedDict, namedtuple
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from profiler.analysis import arrays, costmodel as cm, gpus, kernel_names, reads, run_shape, tensor_cores
from profiler.analysis.rating import rate, rated  # noqa: F401  (rate: the roofline's)
from profiler.analysis.costmodel import OpCost

if TYPE_CHECKING:  # pandas loads only where a DataFrame is asked for
    import pandas as pd

KINDS = ("attention", "gemm", "all")
KERNEL_COLUMNS = ["run_id", "op_id", "kernel_hash", "dur_ns"]
CALL_COLUMNS = ["run_id", "op_id", "op", "backend", "kind", "shape", "dtype", "flops", "bytes", "kernel_ns",
                "kernels", "engine", "shape_source", "iteration", "ts_ns", "tflops", "tbps", "intensity",
                "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound", "pct_of_peak",
                "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect"]       # of an empty op_calls / ops_table
CALL_ORDER = ["op_id", "kernel_ns", "iteration", "backend_id", "main_kernel", "op", "ts_ns", "op_iteration",
              "input_dims", "input_types", "concrete_inputs", "backend_op", "run_id", "engine",
              "kernel_precision", "kind", "flops", "bytes", "dtype", "shape", "backend", "shape_source",
              "tflops", "tbps", "intensity", "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound",
              "pct_of_peak", "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect"]  # of op_calls' rows
GROUP_KEYS = ["run_id", "op", "backend", "kind", "shape", "dtype", "engine", "shape_source"]
TABLE_COLUMNS = [*GROUP_KEYS, "flops", "bytes", "calls", "kernel_ns", "kernel_names", "kernel_us_mean",
                 "tflops", "tbps", "intensity", "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound",
                 "pct_of_peak", "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect", "kernels"]
FLEX_KERNEL, ATTENTION_KERNEL = run_shape.FLEX_KERNEL, run_shape.ATTENTION_KERNEL
# every op that can own a call or be its backend (sql/op_inputs.sql reads these)
MODEL_NAMES = sorted({*cm.ATTENTION, *cm.GEMMS, *cm.MEMORY, *cm.DECOMPOSED})
Call = namedtuple("Call", "op iteration kernel_precision")     # what run_shape.inferred_costs reads


def _params(run_ids, **extra) -> dict:
    return {"run_ids": list(run_ids), **extra}


ATTENTION, MODEL, DECOMPOSED = 1, 2, 3     # op families in the walk up the op tree


# ── the model ───────────────────────────────────────────────────────────────────────────────

def launched_work(store, run_ids) -> dict:
    """Every kernel and copy with the CPU op that launched it (sql/op_kernels.sql): run_id,
    launch_op_id, launch_ts_ns (-1: none), launch_pid, launch_tid (None: none), kernel_hash,
    dur_ns, iteration (float, NaN: none), flex."""
    got = reads.arrays(store, reads.sql_text("op_kernels"), _params(run_ids))
    out = {k: reads.column(got[k], -1).astype(np.int64) for k in ("launch_op_id", "launch_ts_ns")}
    out.update({k: reads.column(got[k]) for k in ("launch_pid", "launch_tid")})
    return {"run_id": reads.column(got["run_id"]), **out, "kernel_hash": reads.column(got["kernel_hash"], 0),
            "dur_ns": reads.column(got["dur_ns"], 0).astype(np.int64),
            "iteration": reads.column(got["iteration"], np.nan).astype(float),
            "flex": reads.column(got["flex"], False).astype(bool)}
def owners(parent: np.ndarray, family: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each launching op in `starts` (-1: none), the op the model charges (-1: none) and the
    innermost attention op beneath it (its backend; -1 when not attention). Walking up the
    parents: the outermost attention op owns everything beneath it, so SDPA owns its backend op,
    unless the innermost one is a decomposed backend (math), whose GEMMs and softmax are charged
    to themselves; otherwise the nearest modelled op owns it. (Found for every op at once by
    pointer jumping, in log2(depth) passes: a chain of ops a million deep costs 20, not a million.)"""
    none = np.full(len(starts), -1)
    if not len(family) or not len(starts):
        return none, none
    nearest = _first_up(parent, family == MODEL)
    attention = (family == ATTENTION) | (family == DECOMPOSED)
    inner = _first_up(parent, attention)
    above = np.where(attention & (parent >= 0), inner[np.maximum(parent, 0)], -1)  # the next one up
    outer = _last(np.where(above >= 0, above, np.arange(len(parent))))
    at = np.maximum(starts, 0)
    nearest, inner = np.where(starts >= 0, nearest[at], -1), np.where(starts >= 0, inner[at], -1)
    outer = np.where(inner >= 0, outer[np.maximum(inner, 0)], -1)
    fused = (outer >= 0) & (family[np.maximum(inner, 0)] != DECOMPOSED)
    return np.where(fused, outer, nearest), np.where(fused, inner, -1)


def _first_up(parent: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """For each op, the nearest of itself and its ancestors that is `marked`, or -1."""
    step = np.where(marked, np.arange(len(parent)), parent)  # a marked op, or -1, stays put
    return _last(step)


def _last(step: np.ndarray) -> np.ndarray:
    """Where following `step` from each index ends (a fixed point, or -1), by repeated squaring."""
    while True:
        ahead = np.where(step >= 0, step[np.maximum(step, 0)], -1)
        if np.array_equal(ahead, step):
            return step
        step = ahead


def _tree(store, run_id: str) -> dict:
    """parent_id, ts_ns, end_ns, family of every op of the run, indexed by op_id (sql/op_tree.sql)."""
    got = reads.arrays(store, reads.sql_text("op_tree"), {
        "run_id": run_id, "attention_ops": [o for o in cm.ATTENTION if o not in cm.DECOMPOSED],
        "model_ops": [*cm.GEMMS, *cm.MEMORY], "decomposed_ops": list(cm.DECOMPOSED)})
    op_id = np.asarray(got["op_id"], dtype=np.int64)
    size = int(op_id.max()) + 1 if len(op_id) else 0
    tree = {}
    for column, missing in (("parent_id", -1), ("ts_ns", 0), ("end_ns", 0), ("family", 0)):
        values = reads.column(got[column], missing)
        tree[column] = np.full(size, missing, dtype=values.dtype)
        tree[column][op_id] = values
    return tree


def launch_in_op(tree, work) -> np.ndarray:
    """True where the op with the launch's External id encloses the launch call (or no call was
    recorded). `work`: launch_op_id, launch_ts_ns, -1 for none."""
    start, end = np.asarray(tree["ts_ns"]), np.asarray(tree["end_ns"])
    ext, at = np.asarray(work["launch_op_id"]), np.asarray(work["launch_ts_ns"])
    if not len(start):
        return np.zeros(len(ext), dtype=bool)
    safe = np.maximum(ext, 0)
    return (ext >= 0) & ((at < 0) | ((start[safe] <= at) & (end[safe] >= at)))


def launching_ops(tree, work) -> np.ndarray:
    """The CPU op each kernel's launch call ran in (-1: none): the op with the launch's External
    id when it encloses the call (`launch_in_op`); else, walking up from the last op the
    launching thread started before the call (before_op_id, -1: none; `ops_before`), the
    innermost op that encloses it (older traces give the call its correlation id as External id)."""
    parent, end = np.asarray(tree["parent_id"]), np.asarray(tree["end_ns"])
    if not len(parent):
        return np.full(len(work["launch_op_id"]), -1)
    ext, at = np.asarray(work["launch_op_id"]), np.asarray(work["launch_ts_ns"])
    ok = launch_in_op(tree, work)
    cur = np.where(ok, ext, np.asarray(work["before_op_id"]))
    need = ~ok & (cur >= 0) & (at >= 0)
    if need.any():
        cur[need] = _enclosing(parent, end, cur[need], at[need])
    return np.where(ok | (at >= 0), cur, -1)


def _enclosing(parent: np.ndarray, end: np.ndarray, ops: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each op, the first of it and its ancestors that ends at or after `at`, or -1. By binary
    lifting: level k holds each op's 2^k-th ancestor and the latest end among it and the 2^k - 1
    above it, so a walk of d parents takes log2(d) steps, not d (a chain of ops a million deep)."""
    levels = [(parent, end)]
    while (levels[-1][0] >= 0).any() and len(levels) < 64:
        up, reach = levels[-1]
        above = np.maximum(up, 0)
        levels.append((np.where(up >= 0, up[above], -1), np.where(up >= 0, np.maximum(reach, reach[above]), reach)))
    cur = ops.copy()
    for up, reach in reversed(levels):  # skip each block of ops that all end before the call
        skip = (cur >= 0) & (reach[np.maximum(cur, 0)] < at)
        cur = np.where(skip, up[np.maximum(cur, 0)], cur)
    return cur


def ops_before(store, run_id: str, work: dict, need: np.ndarray) -> np.ndarray:
    """For the rows of `work` in `need`, the last CPU op their launching thread (launch_pid,
    launch_tid) started at or before the launch call (sql/thread_ops.sql); -1 elsewhere or none."""
    before = np.full(len(need), -1, dtype=np.int64)
    rows_of: dict[tuple, list[int]] = {}
    for i, p, t in zip(np.flatnonzero(need).tolist(), work["launch_pid"][need], work["launch_tid"][need]):
        if p is not None and t is not None:
            rows_of.setdefault((p, t), []).append(i)
    if not rows_of:
        return before
    got = reads.arrays(store, reads.sql_text("thread_ops"), {
        "run_id": run_id, "pids": sorted({p for p, _ in rows_of}), "tids": sorted({t for _, t in rows_of})})
    pid, tid, ts, ids = reads.column(got["pid"]), reads.column(got["tid"]), got["ts_ns"], got["op_id"]
    starts = np.flatnonzero(np.r_[True, (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])]) if len(ts) else np.array([], int)
    ends = np.r_[starts[1:], len(ts)]
    span = {(pid[a], tid[a]): (a, b) for a, b in zip(starts.tolist(), ends.tolist())}
    for thread, rows in rows_of.items():
        a, b = span.get(thread, (0, 0))
        if a == b:  # no CPU op on that thread: its launches keep -1
            continue
        at = work["launch_ts_ns"][rows]
        pos = np.searchsorted(ts[a:b], at, side="right") - 1     # of ops starting together, the last
        before[rows] = np.where(pos >= 0, ids[a:b][np.maximum(pos, 0)], -1)
    return before


def charged_kernels(store, run_id: str, work: dict | None = None, names: dict | None = None) -> dict:
    """`launched_work` of one run with op_id, the op the model charges each kernel to (-1 - n for
    the n-th kernel that is a call by itself: a flex kernel, or an attention kernel (by the
    engine classifier) no modelled op owns, e.g. flashinfer's or FlashAttention-4's), and
    backend_id (the attention backend op or -1); kernels no modelled op owns are left out.
    ``work``: the run's `launched_work`, when read already; ``names``: {kernel_hash: name}."""
    work = launched_work(store, [run_id]) if work is None else work
    names = _kernel_names(store, run_id) if names is None else names
    tree = _tree(store, run_id)
    need = ~launch_in_op(tree, work) & (work["launch_ts_ns"] >= 0)
    work["before_op_id"] = ops_before(store, run_id, work, need)
    parent, family = np.asarray(tree["parent_id"]), np.asarray(tree["family"])
    owner, backend = owners(parent, family, launching_ops(tree, work))
    attention = np.array([_kernel_op(names.get(h)) == "attention" for h in work["kernel_hash"].tolist()], dtype=bool)
    alone = work["flex"] | ((owner < 0) & attention)
    owner = np.where(alone, -1 - np.arange(len(alone)), owner)
    return arrays.take({**work, "op_id": owner, "backend_id": backend}, (owner >= 0) | alone)


@lru_cache(maxsize=4096)
def _kernel_op(name: str | None) -> str | None:
    """The classifier's op of a kernel ('attention', 'gemm', ...; vendor does not change it)."""
    return tensor_cores.classify(name).op if isinstance(name, str) else None


def _kernel_names(store, run_id: str) -> dict:
    got = reads.arrays(store, reads.sql_text("kernel_name_hashes"), {"run_id": run_id})
    return dict(zip(got["kernel_hash"].tolist(), got["kernel"].tolist()))


def _joined(values: np.ndarray, at: np.ndarray, found: np.ndarray) -> np.ndarray:
    """values[at] where found, else missing: NaN (ints become floats, as in a join) or None."""
    if found.all():
        return values[at]
    picked = values[at] if len(values) else np.zeros(len(at), dtype=values.dtype)
    if values.dtype.kind in "iuf":
        return np.where(found, picked.astype(float), np.nan)
    out = picked.astype(object)
    out[~found] = None
    return out


def charged_calls(store, run_id: str, kernels: dict | None = None, names: dict | None = None) -> dict:
    """One row per op call of one run that owns GPU work, in time order (iteration, ts_ns): op_id,
    kernel_ns, iteration, backend_id, main_kernel (its longest kernel), op, ts_ns, op_iteration,
    backend_op, and record_shapes' input_dims, input_types, concrete_inputs (JSON text, None when
    not recorded); {} when none."""
    kernels = charged_kernels(store, run_id) if kernels is None else kernels
    if not len(kernels["op_id"]):
        return {}
    calls = _per_op(kernels, _kernel_names(store, run_id) if names is None else names)
    calls = _with_inputs(store, run_id, calls)
    calls["run_id"] = arrays.objects([run_id] * len(calls["op_id"]))
    return arrays.take(calls, _time_order(calls["iteration"], calls["ts_ns"]))


def _per_op(kernels: dict, names: dict) -> dict:
    """The kernels summed per owning op (in order of first kernel): op_id, kernel_ns, iteration
    (the first kernel's that has one), backend_id, main_kernel (the first of the longest)."""
    group, first = arrays.first_appearance(kernels["op_id"])
    n, dur, it = len(first), kernels["dur_ns"], kernels["iteration"]
    longest = np.lexsort((np.arange(len(dur)), -dur, group))       # per group, longest first
    starts = np.flatnonzero(np.r_[True, np.diff(group[longest]) != 0])
    iteration, valid = np.full(n, np.nan), ~np.isnan(it)
    g_valid, first_valid = np.unique(group[valid], return_index=True)
    iteration[g_valid] = it[valid][first_valid]
    main = kernels["kernel_hash"][longest[starts]].tolist()
    return {"op_id": kernels["op_id"][first], "kernel_ns": arrays.sums(group, dur, n), "iteration": iteration,
            "backend_id": kernels["backend_id"][first], "main_kernel": arrays.objects([names.get(h) for h in main])}


def _rows_of(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The position of each of `ids` in `sorted_ids` (-1: not there)."""
    at = np.clip(np.searchsorted(sorted_ids, ids), 0, max(len(sorted_ids) - 1, 0))
    hit = sorted_ids[at] == ids if len(sorted_ids) else np.zeros(len(ids), dtype=bool)
    return np.where(hit, at, -1)


def _with_inputs(store, run_id: str, calls: dict) -> dict:
    """`calls` joined with their ops (sql/op_inputs.sql): op (flex_attention for a flex kernel),
    ts_ns, op_iteration, input_dims, input_types, concrete_inputs, backend_op; iteration is the
    op's where it has one."""
    op_id, backend_id = calls["op_id"], calls["backend_id"]
    got = reads.arrays(store, reads.sql_text("op_inputs"), {"run_id": run_id, "names": MODEL_NAMES})
    ops = {k: reads.column(v) for k, v in got.items()}
    ops["ts_ns"], ops["op_iteration"] = reads.column(got["ts_ns"], -1), reads.column(got["op_iteration"], np.nan)
    at, b_at = (_rows_of(np.asarray(got["op_id"]), ids) for ids in (op_id, backend_id))
    found, safe = at >= 0, np.maximum(at, 0)
    alone = np.array([FLEX_KERNEL if "flex_attention" in str(k) else ATTENTION_KERNEL for k in calls["main_kernel"]],
                     dtype=object)
    out = {**calls, "op": np.where(op_id >= 0, _joined(ops["op"], safe, found), alone).astype(object)}
    for c in ("ts_ns", "op_iteration", "input_dims", "input_types", "concrete_inputs"):
        out[c] = _joined(ops[c], safe, found)
    out["backend_op"] = _joined(ops["op"].astype(object), np.maximum(b_at, 0), b_at >= 0)
    op_it = out["op_iteration"].astype(float)
    iteration = np.where(np.isnan(op_it), calls["iteration"], op_it)
    out["iteration"] = iteration if np.isnan(iteration).any() else iteration.astype(np.int64)
    return out


def _time_order(iteration: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Rows by (iteration, ts_ns), missing last, ties in their order (a stable sort)."""
    keys = []
    for values in (iteration, ts):
        values = np.asarray(values)
        missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(len(values), bool)
        keys += [missing, np.where(missing, 0, values)]
    return np.lexsort((keys[3], keys[2], keys[1], keys[0]))


@lru_cache(maxsize=4096)
def _engine(kernel: str, vendor: str | None) -> tuple[str, str | None]:
    found = tensor_cores.classify(kernel, vendor)
    return found.engine, found.precision


def run_vendor(db, run_id: str, names) -> str | None:
    """The run's GPU vendor as the kernels page reads it: from the GPU name, else from
    vendor-only kernel name markers (`tensor_cores.vendor_of`)."""
    gpu_name = reads.run_devices(db, [run_id]).get(run_id, (None, None))[1]
    return tensor_cores.vendor_of(gpu_name, names)


@lru_cache(maxsize=65536)
def _recorded(name: str, dims: str | None, types: str | None, concrete: str | None) -> OpCost | None:
    if not isinstance(dims, str) or not isinstance(types, str):
        return None
    try:
        return cm.op_cost(name, json.loads(dims), json.loads(types), json.loads(concrete if isinstance(concrete, str) else "[]"))
    except ValueError:
        return None


def _calls(store, run_id: str, work: dict | None = None) -> tuple[dict, dict]:
    """(`charged_calls` of the run with the engine and precision of its longest kernel, the
    `charged_kernels` of the run: run_id, op_id, kernel_hash, dur_ns, and names: {hash: name})."""
    names = _kernel_names(store, run_id)
    kernels = charged_kernels(store, run_id, work, names)
    calls = charged_calls(store, run_id, kernels, names)
    kernels = {**{k: kernels[k] for k in KERNEL_COLUMNS}, "names": names}
    if not calls:
        return calls, kernels
    main = calls["main_kernel"]
    vendor = run_vendor(store, run_id, names.values())
    found = {k: _engine(k, vendor) for k in set(main.tolist())}
    calls["engine"] = arrays.objects([found[k][0] for k in main])
    calls["kernel_precision"] = arrays.objects([found[k][1] for k in main])
    return calls, kernels


def _priced(calls: dict, shape: dict | None) -> dict:
    """The calls the model prices (recorded inputs, else the run's shape), with kind, flops,
    bytes, dtype, shape, backend, shape_source."""
    n = arrays.rows(calls)
    costs: list[OpCost | None] = [None] * n
    dims = calls["input_dims"]
    for i in np.flatnonzero(np.array([d is not None for d in dims], dtype=bool)).tolist():
        costs[i] = _recorded(calls["op"][i], dims[i], calls["input_types"][i], calls["concrete_inputs"][i])
    source = ["trace" if c else None for c in costs]
    if shape is not None and shape.get("seq_len") is not None and any(d is None for d in dims):
        rows = [Call(*r) for r in zip(calls["op"].tolist(), calls["iteration"].tolist(), calls["kernel_precision"].tolist())]
        for i, cost in enumerate(run_shape.inferred_costs(rows, shape)):
            if cost is not None and costs[i] is None and dims[i] is None:   # recorded inputs win
                costs[i], source[i] = cost, "run shape"
    keep = np.array([c is not None for c in costs], dtype=bool)
    calls, costs = arrays.take(calls, keep), [c for c in costs if c]
    return {**calls, "kind": arrays.objects([c.kind for c in costs]), "flops": np.array([c.flops for c in costs]),
            "bytes": np.array([c.bytes for c in costs]), "dtype": arrays.objects([c.dtype for c in costs]),
            "shape": arrays.objects([c.shape for c in costs]),
            "backend": arrays.objects([_backend(c, b, o, k) for c, b, o, k in
                                       zip(costs, calls["backend_op"], calls["op"], calls["main_kernel"])]),
            "shape_source": arrays.objects([s for s, k in zip(source, keep) if k])}


def _backend(cost: OpCost, backend_op, op=None, kernel=None) -> str | None:
    if cost.kind != "attention":
        return None
    if op == ATTENTION_KERNEL:   # no op of its own: the kernel's library is the backend
        return kernel_names.parse(str(kernel)).library
    inner = cm.ATTENTION.get(backend_op, (None, None, None))[2] if isinstance(backend_op, str) else None
    return inner or cost.backend or "sdpa"


def _arch(device) -> str | None:
    """'sm90', 'sm100', ... of an NVIDIA device (None on AMD or unknown): the architecture that
    decides a kernel family's tensor-core instruction (`kernel_names.parse`)."""
    if getattr(device, "vendor", None) != "nvidia":
        return None
    return kernel_names.device_arch(device.compute_major, device.compute_minor)


def run_arch(store, run_id: str) -> str | None:
    """`_arch` of the device a run ran on."""
    return _arch(_device(reads.run_devices(store, [run_id]).get(run_id)))


def _device(info) -> gpus.Device | None:
    props, gpu_name = info or (None, None)
    try:
        return gpus.resolve_device(props, 0, gpu_name)
    except ValueError:
        return gpus.builtin_device(gpu_name)


def op_calls(store, run_ids) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work: run_id, op_id, op, backend, kind,
    shape, dtype, flops, bytes, kernel_ns, main_kernel (its longest), engine, shape_source,
    iteration, and `rated`'s columns (TFLOP/s and TB/s over the call's own kernel time)."""
    import pandas as pd

    with _session(store) as db:
        calls = _op_calls(db, list(run_ids))[0]
    return pd.DataFrame(calls, columns=CALL_ORDER) if calls else pd.DataFrame(columns=CALL_COLUMNS)


@contextmanager
def _session(store):
    """One connection for all the queries of a call (a Store opens one; a Session is one)."""
    if hasattr(store, "connect"):
        with reads.session(store) as db:
            yield db
    else:
        yield store


def _op_calls(db, run_ids: list) -> tuple[dict, list[dict]]:
    """(op_calls' columns, {} when none; the kernels charged to them, per run: run_id, op_id,
    kernel_hash, dur_ns, names); read-only."""
    computed = _compute_missing(db, run_ids)
    parts = [computed[r] if r in computed else _run_op_calls(db, r) for r in run_ids]
    return arrays.concat([c for c, _ in parts if arrays.rows(c)]), [k for _, k in parts]


def _compute_missing(db, run_ids: list) -> dict:
    """{run_id: op costs} of the runs not kept yet: their launched work, shapes and devices read
    once for all of them, then each run modelled; on up to APART_THREADS threads with a session
    each when ``db`` knows its store (the model's time is mostly queries, which run outside the
    interpreter lock)."""
    path = str(getattr(db, "path", ""))
    with _CACHE_LOCK:
        todo = [r for r in dict.fromkeys(run_ids) if (path, r) not in _CACHE]
    if not todo:
        return {}
    about = _about(db, todo, work=True)
    store = getattr(db, "store", None)
    threads = min(APART_THREADS, len(todo)) if store is not None else 1
    if threads == 1:
        return {r: _run_op_calls(db, r, about) for r in todo}

    def compute(share: list) -> dict:
        with reads.session(store) as own:
            return {r: _run_op_calls(own, r, about) for r in share}
    shares = [todo[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        return {r: part for found in pool.map(compute, shares) for r, part in found.items()}


# A run id is a hash of the trace's bytes, so a run's op costs never change: the last few runs'
# are kept per store file (a page opened again, or the roofline after the table, costs nothing).
_CACHE: OrderedDict[tuple[str, str], tuple[dict, dict]] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHED_RUNS = 16
APART_THREADS = 2  # sessions computing runs' op costs at once (each holds a connection)


def clear_cache() -> None:
    """Forget the kept op costs (benchmarks time the model, not the cache)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _about(db, run_ids: list, work: bool = False) -> tuple[dict, dict, dict]:
    """({run_id: its shape record}, {run_id: its device}, {run_id: its launched_work} when
    ``work``, else {}) of the runs, one query each."""
    launched = {}
    if work:
        every = launched_work(db, run_ids)
        launched = {r: arrays.take(every, every["run_id"] == r) for r in run_ids}
    return (reads.run_shape_records(db, run_ids),
            {r: _device(i) for r, i in reads.run_devices(db, run_ids).items()}, launched)


def _run_op_calls(db, run_id: str, about: tuple[dict, dict, dict] | None = None) -> tuple[dict, dict]:
    key = (str(getattr(db, "path", "")), run_id)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    calls, kernels = _calls(db, run_id, about[2].get(run_id) if about else None)
    if arrays.rows(calls):
        shapes, devices, _ = about or _about(db, [run_id])
        calls = _priced(calls, shapes.get(run_id))
    if arrays.rows(calls):
        calls = {**calls, **rated(calls["run_id"], calls["engine"], calls["dtype"], calls["flops"], calls["bytes"],
                                  calls["kernel_ns"] / 1e9, {run_id: devices.get(run_id)} if run_id in devices else {})}
    else:
        calls = {}
    with _CACHE_LOCK:
        _CACHE[key] = calls, kernels
        while len(_CACHE) > CACHED_RUNS:
            _CACHE.popitem(last=False)
    return calls, kernels


def ops_columns(store, run_ids, kind: str = "all") -> dict:
    """`ops_table` as numpy columns ({} when no op is modelled); needs no pandas."""
    if kind not in KINDS:
        raise reads.QueryError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    with _session(store) as db:
        return _ops_table(db, list(run_ids), kind)


def ops_table(store, run_ids, kind: str = "all") -> pd.DataFrame:
    """One row per (run, op, backend, shape, dtype): calls aggregated; flops and bytes per call,
    kernel_us_mean per call, tflops / tbps from that mean, pct_of_peak for the dtype on the engine
    its kernels ran on, intensity, bound, kernels (parsed: library, arch, instruction, tile)."""
    import pandas as pd

    table = ops_columns(store, run_ids, kind)
    if not table:
        return pd.DataFrame(columns=[*CALL_COLUMNS, "calls", "kernel_us_mean", "kernel_names"])
    return pd.DataFrame(table, columns=TABLE_COLUMNS)


def _ops_table(db, run_ids: list, kind: str) -> dict:
    calls, kernels = _op_calls(db, run_ids)
    if calls and kind != "all":
        calls = arrays.take(calls, calls["kind"] == kind)
    if not arrays.rows(calls):
        return {}
    group, first = arrays.groups_of(list(zip(*(calls[k].tolist() for k in GROUP_KEYS))))
    n = len(first)
    table = {k: calls[k][first] for k in [*GROUP_KEYS, "flops", "bytes"]}
    table["calls"] = np.bincount(group, minlength=n).astype(np.int64)
    table["kernel_ns"] = arrays.sums(group, calls["kernel_ns"], n)
    table["kernel_names"] = _kernel_lists(kernels, calls, group, n)
    table["kernel_us_mean"] = table["kernel_ns"] / table["calls"] / 1e3
    devices = {r: _device(i) for r, i in reads.run_devices(db, list(set(table["run_id"].tolist()))).items()}
    table.update(rated(table["run_id"], table["engine"], table["dtype"], table["flops"], table["bytes"],
                       table["kernel_us_mean"] / 1e6, devices))
    archs = [_arch(devices.get(r)) for r in table["run_id"].tolist()]
    table["kernels"] = arrays.objects([" | ".join(f"{n} [{kernel_names.parse(n, arch).summary}]" for n in names)
                                       for names, arch in zip(table["kernel_names"], archs)])
    return arrays.take(table, arrays.descending(table["kernel_ns"]))


def _kernel_lists(kernels: list[dict], calls: dict, group: np.ndarray, n: int) -> np.ndarray:
    """The distinct kernel names of each group of calls, longest-running first, by group."""
    pair_group, pair_hash, pair_dur, names = [], [], [], {}
    for part in kernels:
        if not len(part["op_id"]):
            continue
        run_id = part["run_id"][0]
        mine = np.flatnonzero(calls["run_id"] == run_id)
        ids = calls["op_id"][mine].astype(np.int64)
        order = np.argsort(ids, kind="stable")
        at = np.clip(np.searchsorted(ids[order], part["op_id"]), 0, max(len(ids) - 1, 0))
        hit = (ids[order][at] == part["op_id"]) if len(ids) else np.zeros(len(part["op_id"]), bool)
        pair_group.append(group[mine[order[at[hit]]]])
        pair_hash.append(part["kernel_hash"][hit])
        pair_dur.append(part["dur_ns"][hit])
        names.update(part["names"])
    out = arrays.objects([[] for _ in range(n)])
    if not pair_group:
        return out
    g, h, dur = np.concatenate(pair_group), np.concatenate(pair_hash), np.concatenate(pair_dur)
    hashes, h_code = np.unique(h, return_inverse=True)
    pair, first = arrays.first_appearance(g * len(hashes) + h_code.reshape(-1))
    sums = arrays.sums(pair, dur, len(first))
    for i in arrays.descending(sums).tolist():
        out[g[first[i]]].append(names.get(int(h[first[i]])))
    return out


def attention_in_trace(store, run_ids, top_gemms: int = 5) -> pd.DataFrame:
    """Every attention op of each run and its top GEMMs (by kernel time): `ops_table` rows plus
    share_of_gpu_pct, the op's kernel time per iteration over the run's summed kernel time per
    iteration (the metrics layer's kernel_sum_us_per_iter: the same denominator as the Kernels
    page's gpu_time_share_pct, so one kernel has one share everywhere). Kept per selection
    (profiler/analysis/kept.py)."""
    from profiler.analysis import kept

    run_ids = list(run_ids)
    return kept.value(store, ("attention_in_trace", top_gemms), run_ids,
                      lambda: _attention_in_trace(store, run_ids, top_gemms))


def _attention_in_trace(store, run_ids: list, top_gemms: int) -> pd.DataFrame:
    import pandas as pd

    from profiler.analysis import queries

    run_ids = list(run_ids)
    table = ops_table(store, run_ids)
    if table.empty:
        return table.assign(share_of_gpu_pct=pd.Series(dtype=float))
    gpu_us = queries.run_metrics(store, run_ids).set_index("run_id")["kernel_sum_us_per_iter"]
    iterations = queries.run_iterations(store, run_ids).groupby("run_id")["iteration"].nunique()
    us_per_iter = table["kernel_ns"] / 1e3 / table["run_id"].map(iterations).fillna(1)
    table["share_of_gpu_pct"] = 100 * us_per_iter / table["run_id"].map(gpu_us)
    gemms = table[table["kind"] == "gemm"].groupby("run_id", sort=False).head(top_gemms)
    return pd.concat([table[table["kind"] == "attention"], gemms], ignore_index=True)
