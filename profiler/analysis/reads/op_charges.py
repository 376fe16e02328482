"""Which op call each kernel and copy of a stored run is charged to: the first half of the cost
model (profiler/analysis/reads/op_costs.py prices and rates the calls found here).

`launched_work` reads every kernel and copy with the CPU op that launched it
(`sql/op_kernels.sql`: launch correlation id -> CPU op), `charged_kernels` walks up the op tree to
the modelled op that owns each one, and `charged_calls` sums them per owning call, joined with the
op's recorded inputs. Numpy columns ({name: array}), no pandas.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from profiler.analysis.model import arrays, costmodel as cm, graph_owners, run_shape, tensor_cores
from profiler.analysis.reads import reads
from profiler.vocab import attention
from profiler.storage.session import StoreHandle

FLEX_KERNEL, ATTENTION_KERNEL = run_shape.FLEX_KERNEL, run_shape.ATTENTION_KERNEL
# every op that can own a call or be its backend (sql/op_inputs.sql reads these)
MODEL_NAMES = sorted({*cm.ATTENTION, *cm.GEMMS, *cm.MEMORY, *cm.DECOMPOSED})
ATTENTION, MODEL, DECOMPOSED = 1, 2, 3     # op families in the walk up the op tree


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


def by_run(got: dict, run_ids) -> dict[str, dict]:
    """A read of many runs ({column: array} with run_id) split by run: {run_id: its other columns,
    its rows in the read's order}, every one of ``run_ids`` (empty columns for a run with no row)."""
    at = arrays.rows_of_each(reads.column(got["run_id"]), [str(r) for r in run_ids])
    return {r: {k: v[rows] for k, v in got.items() if k != "run_id"} for r, rows in at.items()}


def op_trees(store: StoreHandle, run_ids) -> dict[str, dict]:
    """{run_id: `op_tree` of the run} for many runs in one read."""
    got = store.arrays(reads.sql_text("op_tree"), {
        "run_ids": [str(r) for r in run_ids], "attention_ops": [o for o in cm.ATTENTION if o not in cm.DECOMPOSED],
        "model_ops": [*cm.GEMMS, *cm.MEMORY], "decomposed_ops": list(cm.DECOMPOSED),
        "serving_prefixes": list(attention.SERVING_OPS)})
    return {r: _tree(part) for r, part in by_run(got, run_ids).items()}


def op_tree(store: StoreHandle, run_id: str) -> dict:
    """parent_id, ts_ns, end_ns, family of every op of the run, indexed by op_id (sql/op_tree.sql)."""
    return op_trees(store, [run_id])[str(run_id)]


def _tree(got: dict) -> dict:
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
    graph = graph_owners.replayed(work, len(ext))   # a joined graph replay: its captured op owns it
    return (ext >= 0) & ((at < 0) | graph | ((start[safe] <= at) & (end[safe] >= at)))


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
        cur[need] = enclosing_ops(parent, end, cur[need], at[need])
    return np.where(ok | (at >= 0), cur, -1)


def enclosing_ops(parent: np.ndarray, end: np.ndarray, ops: np.ndarray, at: np.ndarray) -> np.ndarray:
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


def _threads(work: dict, need: np.ndarray) -> dict[tuple, list[int]]:
    """{(launch_pid, launch_tid): the rows of `work` in `need` launched from that thread}."""
    rows_of: dict[tuple, list[int]] = {}
    for i, p, t in zip(np.flatnonzero(need).tolist(), work["launch_pid"][need], work["launch_tid"][need]):
        if p is not None and t is not None:
            rows_of.setdefault((p, t), []).append(i)
    return rows_of


def needs_thread_ops(tree: dict, work: dict) -> np.ndarray:
    """The rows of `work` whose launching op `ops_before` looks up (the op with the launch's
    External id does not enclose the call)."""
    return ~launch_in_op(tree, work) & (work["launch_ts_ns"] >= 0)


def thread_ops(store: StoreHandle, runs: dict) -> dict[str, dict]:
    """{run_id: sql/thread_ops.sql's rows of the run} for ``runs`` ({run_id: (its op_tree, its
    launched_work)}) in one read; a run none of whose launches needs them is left out."""
    threads = {r: _threads(work, needs_thread_ops(tree, work)) for r, (tree, work) in runs.items()}
    threads = {r: t for r, t in threads.items() if t}
    if not threads:
        return {}
    got = store.arrays(reads.sql_text("thread_ops"), {
        "run_ids": list(threads), "pids": sorted({p for t in threads.values() for p, _ in t}),
        "tids": sorted({q for t in threads.values() for _, q in t})})
    return by_run(got, list(threads))


def ops_before(store: StoreHandle, run_id: str, work: dict, need: np.ndarray, got: dict | None = None) -> np.ndarray:
    """For the rows of `work` in `need`, the last CPU op their launching thread (launch_pid,
    launch_tid) started at or before the launch call (sql/thread_ops.sql; ``got``: the run's rows
    of it, when read already); -1 elsewhere or none."""
    before = np.full(len(need), -1, dtype=np.int64)
    rows_of = _threads(work, need)
    if not rows_of:
        return before
    if got is None:
        got = store.arrays(reads.sql_text("thread_ops"), {
            "run_ids": [run_id], "pids": sorted({p for p, _ in rows_of}), "tids": sorted({t for _, t in rows_of})})
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
    return {r: dict(zip(part["kernel_hash"].tolist(), part["kernel"].tolist())) for r, part in by_run(got, run_ids).items()}


def kernel_name_map(store: StoreHandle, run_id: str) -> dict:
    """{kernel_hash: kernel name} of the run's kernels."""
    return kernel_name_maps(store, [run_id])[str(run_id)]


def op_inputs(store: StoreHandle, run_ids, names=MODEL_NAMES) -> dict[str, dict]:
    """{run_id: sql/op_inputs.sql's columns of the run (by op_id)}: its ops named in ``names``,
    and with the default names the serving engines' attention ops (`attention.SERVING_OPS`)."""
    serving = list(attention.SERVING_OPS) if names is MODEL_NAMES else []
    got = store.arrays(reads.sql_text("op_inputs"), {"run_ids": [str(r) for r in run_ids], "names": list(names),
                                                   "serving_prefixes": serving})
    return by_run(got, run_ids)


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
