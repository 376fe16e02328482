"""A run's CPU op tree and where each kernel's launch sits in it: the walk the cost model charges
kernels by (profiler/analysis/reads/op_charges.py).

`op_trees` reads every op's parent, start, end and family (`sql/op_tree.sql`), indexed by op_id;
`launching_ops` finds the op each launch call ran in (the op with the launch's External id when it
encloses the call, else the innermost op of the launching thread around it: `ops_before`,
`enclosing_ops`); `owners` walks up from there to the op the model charges. Every walk is done
for all ops at once by pointer jumping (log2 of the tree's depth passes). Numpy columns, no pandas.
"""
from __future__ import annotations

import numpy as np

from profiler.analysis.model import costmodel as cm, graph_owners
from profiler.analysis.reads import reads
from profiler.vocab import attention
from profiler.storage.session import StoreHandle

ATTENTION, MODEL, DECOMPOSED = 1, 2, 3     # op families in the walk up the op tree (sql/op_tree.sql)


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




def op_trees(store: StoreHandle, run_ids) -> dict[str, dict]:
    """{run_id: `op_tree` of the run} for many runs in one read."""
    got = store.arrays(reads.sql_text("op_tree"), {
        "run_ids": [str(r) for r in run_ids], "attention_ops": [o for o in cm.ATTENTION if o not in cm.DECOMPOSED],
        "model_ops": [*cm.GEMMS, *cm.MEMORY], "decomposed_ops": list(cm.DECOMPOSED),
        "serving_prefixes": list(attention.SERVING_OPS)})
    return {r: _tree(part) for r, part in reads.by_run(got, run_ids).items()}


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
    return reads.by_run(got, list(threads))


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
