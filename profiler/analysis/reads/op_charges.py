"""Which op call each kernel and copy of a stored run is charged to: the first half of the cost
model (profiler/analysis/reads/op_costs.py prices and rates the calls found here).

`launched_work` reads every kernel and copy with the CPU op that launched it
(`sql/op_kernels.sql`: launch correlation id -> CPU op), `charged_kernels` walks up the op tree
(profiler/analysis/reads/op_tree.py) to the modelled op that owns each one, and `charged_calls` sums them per owning call, joined with the
op's recorded inputs. Numpy columns ({name: array}), no pandas.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from profiler.analysis.model import arrays, costmodel as cm, run_shape, tensor_cores
from profiler.analysis.reads import reads
from profiler.analysis.reads.op_tree import launching_ops, needs_thread_ops, op_tree, ops_before, owners
from profiler.vocab import attention
from profiler.storage.session import StoreHandle

FLEX_KERNEL, ATTENTION_KERNEL = run_shape.FLEX_KERNEL, run_shape.ATTENTION_KERNEL
# every op that can own a call or be its backend (sql/op_inputs.sql reads these)
MODEL_NAMES = sorted({*cm.ATTENTION, *cm.GEMMS, *cm.MEMORY, *cm.DECOMPOSED})


def _params(run_ids, **extra) -> dict:
    return {"run_ids": list(run_ids), **extra}


def launched_work(store: StoreHandle, run_ids) -> dict:
    """Every kernel and copy with the CPU op that launched it (sql/op_kernels.sql): run_id,
    launch_op_id, launch_ts_ns (-1: none), launch_pid, launch_tid (None: none), kernel_hash,
    dur_ns, iteration (float, NaN: none), flex."""
    got = store.arrays(reads.sql_text("op_kernels"), _params(run_ids))
    out = {k: reads.column(got[k], -1).astype(np.int64) for k in ("launch_op_id", "launch_ts_ns")}
    out.update({k: reads.column(got[k]) for k in ("launch_pid", "launch_tid")})
    return {"run_id": reads.column(got["run_id"]), **out, "kernel_hash": reads.column(got["kernel_hash"], 0),
            "ts_ns": reads.column(got["ts_ns"], 0).astype(np.int64),
            "dur_ns": reads.column(got["dur_ns"], 0).astype(np.int64),
            "iteration": reads.column(got["iteration"], np.nan).astype(float),
            "flex": reads.column(got["flex"], False).astype(bool),
            "replayed": reads.column(got["replayed"], False).astype(bool)}


def charged_kernels(store: StoreHandle, run_id: str, work: dict | None = None, names: dict | None = None,
                    tree: dict | None = None, threads: dict | None = None) -> dict:
    """`launched_work` of one run (a run with none: `cpu_work`) with op_id, the op the model charges each kernel to (negative
    for a call no modelled op owns, `alone_calls`: a flex kernel, or the attention kernels (by the
    engine classifier) one op invocation launched, e.g. flashinfer's or FlashAttention-4's), and
    backend_id (the attention backend op or -1); kernels no modelled op owns are left out.
    ``work``: the run's `launched_work`, when read already; ``names``: {kernel_hash: name};
    ``tree``, ``threads``: its `op_tree` and `thread_ops`, when read already."""
    work = launched_work(store, [run_id]) if work is None else work
    names = kernel_name_map(store, run_id) if names is None else names
    tree = op_tree(store, run_id) if tree is None else tree
    if not len(work["kernel_hash"]):
        return cpu_work(store, tree, run_id)
    need = needs_thread_ops(tree, work)
    work["before_op_id"] = ops_before(store, run_id, work, need, threads)
    parent, family = np.asarray(tree["parent_id"]), np.asarray(tree["family"])
    launched_by = launching_ops(tree, work)
    owner, backend = owners(parent, family, launched_by)
    attention = np.array([_kernel_op(names.get(h)) == "attention" for h in work["kernel_hash"].tolist()], dtype=bool)
    alone = work["flex"] | ((owner < 0) & attention)
    owner = np.where(alone, alone_calls(work["flex"], launched_by, len(parent)), owner)
    return arrays.take({**work, "op_id": owner, "backend_id": backend}, (owner >= 0) | alone)


def alone_calls(flex: np.ndarray, launched_by: np.ndarray, n_ops: int) -> np.ndarray:
    """The call id (negative) of each kernel that is a call by itself: the attention kernels one op
    invocation launched form one call (FlashAttention-4's backward: preprocess, main and
    postprocess kernels under one FlashAttnFuncBackward: one call, not three), -1 - that op's id;
    a flex kernel, or one launched outside every op, is a call of its own, -1 - n_ops - its row."""
    rows = np.arange(len(flex))
    grouped = ~flex & (launched_by >= 0)
    return np.where(grouped, -1 - launched_by, -1 - n_ops - rows)


def cpu_work(store: StoreHandle, tree: dict, run_id: str) -> dict:
    """A run without GPU work (recorded on the CPU): each op with no child stands for a kernel,
    charged by `owners` as a kernel it launched would be; an owner with an owner of its kind
    (GEMM or not) for a child is dropped (it would launch no kernel of its own), and each owning call is timed by its own
    duration (one row per call, kernel_hash 0: no kernel)."""
    parent, family = np.asarray(tree["parent_id"]), np.asarray(tree["family"])
    has_child = np.zeros(len(parent), dtype=bool)
    has_child[parent[parent >= 0]] = True
    owner, backend = owners(parent, family, np.flatnonzero(~has_child))
    is_owner = np.zeros(len(parent), dtype=bool)
    is_owner[owner[owner >= 0]] = True
    # an owner whose child is an owner of its own kind (matmul calling bmm, softmax calling
    # _softmax, clone calling copy_) launches nothing itself on a GPU: its time is its child's,
    # charged once; a GEMM whose CPU code clones its operands keeps its own
    gemm = np.zeros(len(parent), dtype=bool)
    ids = op_inputs(store, [run_id], list(cm.GEMMS))[str(run_id)]["op_id"]
    gemm[np.asarray(ids, dtype=np.int64)] = True
    child = np.flatnonzero(is_owner & (parent >= 0))
    up = parent[child]
    is_owner[up[is_owner[up] & (gemm[up] == gemm[child])]] = False
    keep = (owner >= 0) & is_owner[np.maximum(owner, 0)]
    _, first = arrays.first_appearance(owner[keep])
    op_id, backend_id = owner[keep][first], backend[keep][first]
    n = len(op_id)
    none = np.full(n, -1, dtype=np.int64)
    return {"run_id": arrays.objects([run_id] * n), "launch_op_id": none, "launch_ts_ns": none,
            "launch_pid": arrays.objects([None] * n), "launch_tid": arrays.objects([None] * n),
            "kernel_hash": np.zeros(n, dtype=np.int64), "ts_ns": np.asarray(tree["ts_ns"])[op_id].astype(np.int64),
            "dur_ns": (np.asarray(tree["end_ns"])[op_id] - np.asarray(tree["ts_ns"])[op_id]).astype(np.int64),
            "iteration": np.full(n, np.nan), "flex": np.zeros(n, dtype=bool), "before_op_id": none,
            "op_id": op_id.astype(np.int64), "backend_id": backend_id.astype(np.int64)}


@lru_cache(maxsize=4096)
def _kernel_op(name: str | None) -> str | None:
    """The classifier's op of a kernel ('attention', 'gemm', ...; vendor does not change it)."""
    return tensor_cores.classify(name).op if isinstance(name, str) else None


def kernel_name_maps(store: StoreHandle, run_ids) -> dict[str, dict]:
    """{run_id: `kernel_name_map` of the run} for many runs in one read."""
    got = store.arrays(reads.sql_text("kernel_name_hashes"), {"run_ids": [str(r) for r in run_ids]})
    return {r: dict(zip(part["kernel_hash"].tolist(), part["kernel"].tolist())) for r, part in reads.by_run(got, run_ids).items()}


def kernel_name_map(store: StoreHandle, run_id: str) -> dict:
    """{kernel_hash: kernel name} of the run's kernels."""
    return kernel_name_maps(store, [run_id])[str(run_id)]


def op_inputs(store: StoreHandle, run_ids, names=MODEL_NAMES) -> dict[str, dict]:
    """{run_id: sql/op_inputs.sql's columns of the run (by op_id)}: its ops named in ``names``,
    and with the default names the serving engines' attention ops (`attention.SERVING_OPS`)."""
    serving = list(attention.SERVING_OPS) if names is MODEL_NAMES else []
    got = store.arrays(reads.sql_text("op_inputs"), {"run_ids": [str(r) for r in run_ids], "names": list(names),
                                                   "serving_prefixes": serving})
    return reads.by_run(got, run_ids)


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


def charged_calls(store: StoreHandle, run_id: str, kernels: dict | None = None, names: dict | None = None,
                  inputs: dict | None = None) -> dict:
    """One row per op call of one run that owns GPU work, in time order (iteration, ts_ns): op_id,
    kernel_ns, iteration, backend_id, main_kernel (its longest kernel), op, ts_ns, op_iteration,
    backend_op, and record_shapes' input_dims, input_types, concrete_inputs (JSON text, None when
    not recorded); {} when none. ``inputs``: the run's `op_inputs`, when read already."""
    kernels = charged_kernels(store, run_id) if kernels is None else kernels
    if not len(kernels["op_id"]):
        return {}
    calls = _per_op(kernels, kernel_name_map(store, run_id) if names is None else names)
    calls = _with_inputs(op_inputs(store, [run_id])[str(run_id)] if inputs is None else inputs, calls)
    calls["run_id"] = arrays.objects([run_id] * len(calls["op_id"]))
    return arrays.take(calls, _time_order(calls["iteration"], calls["ts_ns"]))


def _per_op(kernels: dict, names: dict) -> dict:
    """The kernels of each owning op (in order of first kernel): op_id, kernel_ns (the GPU time of
    the call: the union of the kernels it launched, so kernels of one call that overlap on two
    streams count once), iteration (the first kernel's that has one), backend_id, main_kernel
    (the first of the longest)."""
    group, first = arrays.first_appearance(kernels["op_id"])
    n, dur, it = len(first), kernels["dur_ns"], kernels["iteration"]
    longest = np.lexsort((np.arange(len(dur)), -dur, group))       # per group, longest first
    starts = np.flatnonzero(np.r_[True, np.diff(group[longest]) != 0])
    iteration, valid = np.full(n, np.nan), ~np.isnan(it)
    g_valid, first_valid = np.unique(group[valid], return_index=True)
    iteration[g_valid] = it[valid][first_valid]
    main = kernels["kernel_hash"][longest[starts]].tolist()
    union = arrays.unions(group, kernels["ts_ns"], kernels["ts_ns"] + dur, n)
    return {"op_id": kernels["op_id"][first], "kernel_ns": union, "iteration": iteration,
            "backend_id": kernels["backend_id"][first], "main_kernel": arrays.objects([names.get(h) for h in main])}


def _rows_of(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The position of each of `ids` in `sorted_ids` (-1: not there)."""
    at = np.clip(np.searchsorted(sorted_ids, ids), 0, max(len(sorted_ids) - 1, 0))
    hit = sorted_ids[at] == ids if len(sorted_ids) else np.zeros(len(ids), dtype=bool)
    return np.where(hit, at, -1)


def _with_inputs(got: dict, calls: dict) -> dict:
    """`calls` joined with their ops (``got``: the run's `op_inputs`): op (flex_attention for a flex kernel),
    ts_ns, op_iteration, input_dims, input_types, concrete_inputs, backend_op; iteration is the
    op's where it has one."""
    op_id, backend_id = calls["op_id"], calls["backend_id"]
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
