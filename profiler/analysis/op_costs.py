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
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import pandas as pd

from profiler.analysis import costmodel as cm, gpus, kept, kernel_names, queries, run_shape, tensor_cores
from profiler.analysis.costmodel import OpCost

KINDS = ("attention", "gemm", "all")
KERNEL_COLUMNS = ["run_id", "op_id", "kernel", "dur_ns"]
CALL_COLUMNS = ["run_id", "op_id", "op", "backend", "kind", "shape", "dtype", "flops", "bytes", "kernel_ns",
                "kernels", "engine", "shape_source", "iteration", "ts_ns", "tflops", "tbps", "intensity",
                "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound", "pct_of_peak",
                "pct_of_bandwidth", "pct_of_roof", "peak_source"]
FLEX_KERNEL = run_shape.FLEX_KERNEL


def _params(run_ids, **extra) -> dict:
    return {"run_ids": list(run_ids), **extra}


ATTENTION, MODEL, DECOMPOSED = 1, 2, 3     # op families in the walk up the op tree


def launched_work(store, run_ids) -> pd.DataFrame:
    """Every kernel and copy with the CPU op that launched it (sql/op_kernels.sql): run_id,
    launch_op_id, kernel, dur_ns, iteration, flex."""
    return store.query(queries.sql_text("op_kernels"), _params(run_ids))


def owners(parent: np.ndarray, family: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each launching op in `starts` (-1: none), the op the model charges (-1: none) and the
    innermost attention op beneath it (its backend; -1 when not attention). Walking up the
    parents: the outermost attention op owns everything beneath it, so SDPA owns its backend op,
    unless the innermost one is a decomposed backend (math), whose GEMMs and softmax are charged
    to themselves; otherwise the nearest modelled op owns it."""
    cur = starts.copy() if len(family) else np.full(len(starts), -1)
    nearest, inner, outer = (np.full(len(starts), -1) for _ in range(3))
    if not len(family):
        return nearest, inner
    while (live := cur >= 0).any():
        f = np.where(live, family[np.maximum(cur, 0)], 0)
        nearest = np.where((nearest < 0) & (f == MODEL), cur, nearest)
        inner = np.where((inner < 0) & (f != MODEL) & (f > 0), cur, inner)
        outer = np.where((f == ATTENTION) | (f == DECOMPOSED), cur, outer)
        cur = np.where(live, parent[np.maximum(cur, 0)], -1)
    fused = (outer >= 0) & (family[np.maximum(inner, 0)] != DECOMPOSED)
    return np.where(fused, outer, nearest), np.where(fused, inner, -1)


def _trees(store, run_ids: list[str]) -> pd.DataFrame:
    """run_id, op_id (= row within its run), parent_id, ts_ns, end_ns, family of every op of the
    runs (sql/op_tree.sql), one run after the other."""
    return store.query(queries.sql_text("op_tree"), {
        "run_ids": list(run_ids), "attention_ops": [o for o in cm.ATTENTION if o not in cm.DECOMPOSED],
        "model_ops": [*cm.GEMMS, *cm.MEMORY], "decomposed_ops": list(cm.DECOMPOSED)})


def launching_ops(tree: pd.DataFrame, work: pd.DataFrame) -> np.ndarray:
    """The CPU op each kernel's launch call ran in (-1: none): the op with the launch's External
    id when it encloses the call (or no call was recorded); else, walking up from the last op the
    launching thread started before the call, the innermost op that encloses it (older traces
    give the call its correlation id as External id)."""
    parent, start, end = (tree[c].to_numpy() for c in ("parent_id", "ts_ns", "end_ns"))
    if not len(parent):
        return np.full(len(work), -1)
    ext = work["launch_op_id"].fillna(-1).astype(np.int64).to_numpy()
    at = work["launch_ts_ns"].fillna(-1).astype(np.int64).to_numpy()
    safe = np.maximum(ext, 0)
    ok = (ext >= 0) & ((at < 0) | ((start[safe] <= at) & (end[safe] >= at)))
    cur = np.where(ok, ext, work["before_op_id"].fillna(-1).astype(np.int64).to_numpy())
    need = ~ok & (cur >= 0) & (at >= 0)
    while need.any():
        need &= end[np.maximum(cur, 0)] < at
        cur = np.where(need, parent[np.maximum(cur, 0)], cur)
        need &= cur >= 0
    return np.where(ok | (at >= 0), cur, -1)


def charged_kernels(store, run_id: str) -> pd.DataFrame:
    """`launched_work` of one run with op_id, the op the model charges each kernel to (-1 - n for
    the n-th flex kernel, a call by itself), and backend_id (the attention backend op or -1);
    kernels no modelled op owns are left out."""
    return _charged_kernels(store, [run_id])[run_id]


def _charged_kernels(store, run_ids: list[str]) -> dict[str, pd.DataFrame]:
    """`charged_kernels` of each run, read with one query per table for all of them."""
    work = launched_work(store, run_ids)
    names = store.query(queries.sql_text("kernel_name_hashes"), {"run_ids": list(run_ids)})
    work["kernel"] = work["kernel_hash"].map(dict(zip(names["kernel_hash"], names["kernel"])))
    work_of, tree_of, none = _split(work, keep_run_id=True), _split(_trees(store, run_ids)), work.iloc[0:0]
    out = {}
    for run_id in run_ids:
        work = work_of.get(run_id, none)
        tree = tree_of.get(run_id, pd.DataFrame(columns=["parent_id", "ts_ns", "end_ns", "family"]))
        parent, family = tree["parent_id"].to_numpy(np.int64), tree["family"].to_numpy(np.int64)
        owner, backend = owners(parent, family, launching_ops(tree, work))
        flex = work["flex"].to_numpy(bool)
        owner = np.where(flex, -1 - np.arange(len(work)), owner)
        out[run_id] = work.assign(op_id=owner, backend_id=backend)[(owner >= 0) | flex]
    return out


def _split(frame: pd.DataFrame, keep_run_id: bool = False) -> dict[str, pd.DataFrame]:
    """{run_id: its rows (index from 0)}."""
    return {r: (rows if keep_run_id else rows.drop(columns="run_id")).reset_index(drop=True)
            for r, rows in frame.groupby("run_id", sort=False)} if len(frame) else {}


def charged_calls(store, run_id: str, kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per op call of one run that owns GPU work: op_id, op, backend_op, iteration, ts_ns,
    kernel_ns, main_kernel (its longest kernel), and record_shapes' input_dims, input_types,
    concrete_inputs (JSON text, NULL when not recorded)."""
    kernels = charged_kernels(store, run_id) if kernels is None else kernels
    return _charged_calls(store, {run_id: kernels.assign(run_id=run_id)})


def _charged_calls(store, kernels_of: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """`charged_calls` of each run, one run after the other (in ``kernels_of``'s order), computed
    for all of them at once: one query for their inputs."""
    kernels = pd.concat(list(kernels_of.values()), ignore_index=True)
    by_op = kernels.groupby(["run_id", "op_id"], sort=False)
    calls = by_op.agg(kernel_ns=("dur_ns", "sum"), iteration=("iteration", "first"),
                      backend_id=("backend_id", "first")).reset_index()
    calls["main_kernel"] = kernels.loc[by_op["dur_ns"].idxmax().to_numpy(), "kernel"].to_numpy()
    wanted = pd.concat([calls[["run_id", "op_id"]],
                        calls[["run_id", "backend_id"]].rename(columns={"backend_id": "op_id"})])
    wanted = wanted[wanted["op_id"] >= 0].drop_duplicates()
    ops = store.query(queries.sql_text("op_inputs"), {"run_ids": [str(r) for r in wanted["run_id"]],
                                                      "op_ids": [int(i) for i in wanted["op_id"]]})
    ops = ops.astype({c: object for c in ("op", "input_dims", "input_types", "concrete_inputs")})
    calls = calls.merge(ops, on=["run_id", "op_id"], how="left")
    backends = ops[["run_id", "op_id", "op"]].rename(columns={"op_id": "backend_id", "op": "backend_op"})
    calls = calls.merge(backends, on=["run_id", "backend_id"], how="left")
    calls["op"] = calls["op"].where(calls["op_id"] >= 0, FLEX_KERNEL)
    calls["iteration"] = calls["op_iteration"].fillna(calls["iteration"])
    order = {r: i for i, r in enumerate(kernels_of)}
    calls = calls.assign(_run=calls["run_id"].map(order)).sort_values(
        ["_run", "iteration", "ts_ns"], na_position="last", kind="stable", ignore_index=True)
    return calls.drop(columns="_run")


@lru_cache(maxsize=4096)
def _engine(kernel: str) -> tuple[str, str | None]:
    found = tensor_cores.classify(kernel)
    return found.engine, found.precision


@lru_cache(maxsize=65536)
def _recorded(name: str, dims: str | None, types: str | None, concrete: str | None) -> OpCost | None:
    if not isinstance(dims, str) or not isinstance(types, str):
        return None
    try:
        return cm.op_cost(name, json.loads(dims), json.loads(types), json.loads(concrete if isinstance(concrete, str) else "[]"))
    except ValueError:
        return None


def _calls(store, run_ids) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(`charged_calls` of each run with the engine and precision of its longest kernel, the
    `charged_kernels` of each run)."""
    kernels_of = _charged_kernels(store, list(run_ids)) if run_ids else {}
    kernels = list(kernels_of.values())
    calls = _charged_calls(store, kernels_of) if kernels_of else pd.DataFrame()
    if calls.empty:
        return calls, pd.DataFrame(columns=KERNEL_COLUMNS)
    main = calls["main_kernel"].to_numpy(dtype=object)
    found = {k: _engine(k) for k in set(main)}
    calls = calls.assign(engine=[found[k][0] for k in main], kernel_precision=[found[k][1] for k in main])
    return calls, pd.concat(kernels, ignore_index=True)[KERNEL_COLUMNS]


def _priced(calls: pd.DataFrame, shapes: pd.DataFrame) -> pd.DataFrame:
    recorded = calls[calls["input_dims"].notna()]
    columns = (recorded[c].to_numpy(dtype=object) for c in ("op", "input_dims", "input_types", "concrete_inputs"))
    costs: list[OpCost | None] = [None] * len(calls)
    for i, args in zip(calls.index.get_indexer(recorded.index), zip(*columns)):
        costs[i] = _recorded(*args)
    source = ["trace" if c else None for c in costs]
    shape_of = shapes.set_index("run_id").to_dict("index")
    for run_id, rows in calls.groupby("run_id", sort=False):
        shape = shape_of.get(run_id)
        if shape is None or pd.isna(shape.get("seq_len")) or rows["input_dims"].notna().any():
            continue
        for i, cost in zip(rows.index, run_shape.inferred_costs(rows, shape)):
            if cost is not None and costs[i] is None:
                costs[i], source[i] = cost, "run shape"
    keep = [c is not None for c in costs]
    calls, costs = calls[keep].reset_index(drop=True), [c for c in costs if c]
    return calls.assign(
        kind=[c.kind for c in costs], flops=[c.flops for c in costs], bytes=[c.bytes for c in costs],
        dtype=[c.dtype for c in costs], shape=[c.shape for c in costs],
        backend=[_backend(c, b) for c, b in zip(costs, calls["backend_op"])],
        shape_source=[s for s, k in zip(source, keep) if k])


def _backend(cost: OpCost, backend_op) -> str | None:
    if cost.kind != "attention":
        return None
    inner = cm.ATTENTION.get(backend_op, (None, None, None))[2] if isinstance(backend_op, str) else None
    return inner or cost.backend or "sdpa"


def _device(info) -> gpus.Device | None:
    props, gpu_name = info or (None, None)
    try:
        return gpus.resolve_device(props, 0, gpu_name)
    except ValueError:
        return gpus.builtin_device(gpu_name)


def rate(frame: pd.DataFrame, seconds: pd.Series, device_of: dict) -> pd.DataFrame:
    """Achieved TFLOP/s and TB/s over `seconds`, intensity, the engine's datasheet peak for the
    precision, the ridge point, bound, % of peak and % of the roof. `frame` needs run_id,
    flops, bytes, engine, dtype; `device_of` maps run_id to its `Device` (or None)."""
    keys = list(zip(frame["run_id"].to_numpy(object), frame["engine"].to_numpy(object),
                    frame["dtype"].to_numpy(object)))
    looked = {k: _peak(device_of.get(k[0]), k[1], k[2]) for k in set(keys)}   # a few distinct keys
    peak, bandwidth, source = ([looked[k][i] for k in keys] for i in range(3))
    out = frame.assign(tflops=frame["flops"] / seconds / 1e12, tbps=frame["bytes"] / seconds / 1e12,
                       intensity=frame["flops"] / frame["bytes"].where(frame["bytes"] > 0),
                       peak_tflops=np.array(peak, dtype=float), peak_tbps=np.array(bandwidth, dtype=float))
    ridge = out["peak_tflops"] / out["peak_tbps"]                              # FLOP/byte
    roof = np.minimum(out["peak_tflops"], out["intensity"] * out["peak_tbps"])
    return out.assign(ridge=ridge, roof_tflops=roof,
                      bound=np.where(ridge.isna(), None, np.where(out["intensity"] < ridge, "memory", "compute")),
                      pct_of_peak=100 * out["tflops"] / out["peak_tflops"],
                      pct_of_bandwidth=100 * out["tbps"] / out["peak_tbps"],
                      pct_of_roof=100 * out["tflops"] / roof, peak_source=source)


def _peak(device, engine, dtype) -> tuple[float | None, float | None, str | None]:
    """(peak TFLOP/s of the engine at the dtype, bandwidth TB/s, the datasheet) of a device."""
    peaks = getattr(device, "peaks", None)
    if peaks is None:
        return None, None, None
    return peaks.peak_tflops(engine, dtype if isinstance(dtype, str) else None), peaks.memory_gbps / 1e3, peaks.source


def op_calls(store, run_ids) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work: run_id, op_id, op, backend, kind,
    shape, dtype, flops, bytes, kernel_ns, main_kernel (its longest), engine, shape_source,
    iteration, and `rate`'s columns (TFLOP/s and TB/s over the call's own kernel time)."""
    with _session(store) as db:
        return _op_calls(db, list(run_ids))[0]


@contextmanager
def _session(store):
    """One connection for all the queries of a call (a Store opens one; a Session is one)."""
    if hasattr(store, "connect"):
        with queries.session(store) as db:
            yield db
    else:
        yield store


def _op_calls(db, run_ids: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(op_calls, the kernels charged to them: run_id, op_id, kernel, dur_ns); read-only frames."""
    parts = _runs_op_calls(db, run_ids)
    calls = [parts[r][0] for r in run_ids if not parts[r][0].empty]
    kernels = [parts[r][1] for r in run_ids if not parts[r][1].empty]
    return (pd.concat(calls, ignore_index=True) if calls else pd.DataFrame(columns=CALL_COLUMNS),
            pd.concat(kernels, ignore_index=True) if kernels else pd.DataFrame(columns=KERNEL_COLUMNS))


# A run id is a hash of the trace's bytes, so a run's op costs never change: the last few runs'
# are kept per store file (a page opened again, or the roofline after the table, costs nothing).
_CACHE: OrderedDict[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame]] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHED_RUNS = 16


def clear_cache() -> None:
    """Forget the kept op costs (benchmarks time the model, not the cache)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _runs_op_calls(db, run_ids: list) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """{run_id: (its op calls, its charged kernels)}: kept ones from the cache, the others
    computed together (one query per table for all of them)."""
    path = str(getattr(db, "path", ""))
    found = {}
    with _CACHE_LOCK:
        for run_id in dict.fromkeys(run_ids):
            if (path, run_id) in _CACHE:
                _CACHE.move_to_end((path, run_id))
                found[run_id] = _CACHE[(path, run_id)]
    missing = [r for r in dict.fromkeys(run_ids) if r not in found]
    if not missing:
        return found
    calls, kernels = _calls(db, missing)
    if not calls.empty:
        calls = _priced(calls, queries.run_shapes(db, missing))
    devices = {r: _device(i) for r, i in queries.run_devices(db, missing).items()} if not calls.empty else {}
    rated = rate(calls, calls["kernel_ns"] / 1e9, devices) if not calls.empty else calls
    calls_of, kernels_of = _split(rated, keep_run_id=True), _split(kernels, keep_run_id=True)
    for run_id in missing:
        run_calls = calls_of.get(run_id)
        result = (pd.DataFrame(columns=CALL_COLUMNS) if run_calls is None else run_calls,
                  kernels_of.get(run_id, pd.DataFrame(columns=KERNEL_COLUMNS)))
        found[run_id] = result
        with _CACHE_LOCK:
            _CACHE[(path, run_id)] = result
            while len(_CACHE) > CACHED_RUNS:
                _CACHE.popitem(last=False)
    return found


def ops_table(store, run_ids, kind: str = "all") -> pd.DataFrame:
    """One row per (run, op, backend, shape, dtype): calls aggregated; flops and bytes per call,
    kernel_us_mean per call, tflops / tbps from that mean, pct_of_peak for the dtype on the engine
    its kernels ran on, intensity, bound, kernels (parsed: library, arch, instruction, tile)."""
    if kind not in KINDS:
        raise queries.QueryError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    with _session(store) as db:
        return _ops_table(db, list(run_ids), kind)


def _ops_table(db, run_ids: list, kind: str) -> pd.DataFrame:
    calls, kernels = _op_calls(db, run_ids)
    if kind != "all":
        calls = calls[calls["kind"] == kind]
    if calls.empty:
        return pd.DataFrame(columns=[*CALL_COLUMNS, "calls", "kernel_us_mean", "kernel_names"])
    keys = ["run_id", "op", "backend", "kind", "shape", "dtype", "engine", "shape_source"]
    calls = calls.assign(group=calls.groupby(keys, dropna=False, sort=False).ngroup())
    by_group = calls.groupby("group")     # (not agg(engine=...): pandas takes `engine` as its own)
    table = by_group[[*keys, "flops", "bytes"]].first().join(
        by_group.agg(calls=("op", "size"), kernel_ns=("kernel_ns", "sum")))
    table["kernel_names"] = _kernel_lists(kernels, calls).reindex(table.index).to_list()
    table = table.reset_index(drop=True)
    table["kernel_us_mean"] = table["kernel_ns"] / table["calls"] / 1e3
    devices = {r: _device(i) for r, i in queries.run_devices(db, list(set(table["run_id"]))).items()}
    table = rate(table, table["kernel_us_mean"] / 1e6, devices)
    table["kernels"] = [" | ".join(f"{n} [{kernel_names.parse(n).summary}]" for n in names)
                        for names in table["kernel_names"]]
    return table.sort_values("kernel_ns", ascending=False, ignore_index=True)


def _kernel_lists(kernels: pd.DataFrame, calls: pd.DataFrame) -> pd.Series:
    """The distinct kernel names of each group of calls, longest-running first, by group."""
    mine = kernels.merge(calls[["run_id", "op_id", "group"]].astype({"op_id": "int64"}), on=["run_id", "op_id"])
    order = mine.groupby(["group", "kernel"], sort=False)["dur_ns"].sum().reset_index()
    return order.sort_values("dur_ns", ascending=False).groupby("group", sort=False)["kernel"].agg(list)


def attention_in_trace(store, run_ids, top_gemms: int = 5) -> pd.DataFrame:
    """Every attention op of each run and its top GEMMs (by kernel time): `ops_table` rows plus
    share_of_gpu_pct, the op's kernel time per iteration over the run's GPU time per iteration
    (kernels + copies). Kept per selection (profiler/analysis/kept.py)."""
    run_ids = list(run_ids)
    return kept.value(store, ("attention_in_trace", top_gemms), run_ids,
                      lambda: _attention_in_trace(store, run_ids, top_gemms))


def _attention_in_trace(store, run_ids: list, top_gemms: int) -> pd.DataFrame:
    table = ops_table(store, run_ids)
    if table.empty:
        return table.assign(share_of_gpu_pct=pd.Series(dtype=float))
    per_iter = queries.iteration_cpu_gpu(store, run_ids)
    gpu_us = (per_iter["gpu_kernel_us"] + per_iter["gpu_memop_us"]).groupby(per_iter["run_id"]).mean()
    iterations = queries.run_iterations(store, run_ids).groupby("run_id")["iteration"].nunique()
    us_per_iter = table["kernel_ns"] / 1e3 / table["run_id"].map(iterations).fillna(1)
    table["share_of_gpu_pct"] = 100 * us_per_iter / table["run_id"].map(gpu_us)
    gemms = table[table["kind"] == "gemm"].groupby("run_id", sort=False).head(top_gemms)
    return pd.concat([table[table["kind"] == "attention"], gemms], ignore_index=True)
