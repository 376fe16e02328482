"""The cost model over a stored run: each modelled op call with its kernels, time and roofline.

`op_calls(store, run_ids)` charges every kernel and copy to the op that owns it
(`sql/op_kernels.sql`: launch correlation id -> CPU op -> modelled ancestor), prices each owning op
call with `profiler.costmodel` from its recorded inputs, and rates it against the device's
datasheet peak for its precision on the engine its kernel ran on (`profiler.tensor_cores`).
`ops_table` aggregates calls of one op and shape (the `ops` command, the attention page);
`run_totals` sums one iteration of each run (the roofline, the findings).

Runs captured without `record_shapes` have no recorded inputs; when the run describes its own
attention shape (captured runs do), the inputs are inferred from it (`_inferred`) and the rows say
`shape_source = 'run shape'` instead of `'trace'`.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pandas as pd

from profiler import costmodel as cm
from profiler import gpus, kernel_names, queries, tensor_cores
from profiler.costmodel import OpCost

KINDS = ("attention", "gemm", "all")
CALL_COLUMNS = ["run_id", "op_id", "op", "backend", "kind", "shape", "dtype", "flops", "bytes", "kernel_ns",
                "kernels", "engine", "shape_source", "iteration", "ts_ns", "tflops", "tbps", "intensity",
                "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound", "pct_of_peak",
                "pct_of_bandwidth", "pct_of_roof", "peak_source"]
FLEX_KERNEL = "flex_attention"     # a compiled flex attention kernel has no op of its own


def _params(run_ids, **extra) -> dict:
    return {"run_ids": list(run_ids), **extra}


def charged_kernels(store, run_ids) -> pd.DataFrame:
    """run_id, kind, kernel, dur_ns, iteration, owner_op_id, backend_op (sql/op_kernels.sql)."""
    return store.query(queries.sql_text("op_kernels"), _params(
        run_ids, attention_ops=list(cm.ATTENTION), model_ops=[*cm.GEMMS, *cm.MEMORY],
        decomposed_ops=list(cm.DECOMPOSED)))


@lru_cache(maxsize=65536)
def _recorded(name: str, dims: str | None, types: str | None, concrete: str | None) -> OpCost | None:
    if not isinstance(dims, str) or not isinstance(types, str):
        return None
    try:
        return cm.op_cost(name, json.loads(dims), json.loads(types), json.loads(concrete if isinstance(concrete, str) else "[]"))
    except ValueError:
        return None


def _inferred(calls: pd.DataFrame, shape: dict) -> list[OpCost | None]:
    """Inputs of one run's calls (in time order) from the run's attention shape: attention ops
    take Q, K, V; GEMMs alternate Q K^T and P V (in the dtype their kernel ran: the math backend
    upcasts to fp32); elementwise ops between the two GEMMs act on the score matrix, before the
    first on Q (masked_fill / where / add on the mask once a triu / tril built it), after the
    second on the output."""
    b, h, n, d = (int(shape[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    dtype, causal = cm.TYPE_OF.get(str(shape["dtype"]), "c10::BFloat16"), bool(shape["causal"])
    out, gemms, score_type, masked, iteration = [], 0, None, False, object()
    for call in calls.itertuples():
        if call.iteration != iteration:
            gemms, score_type, masked, iteration = 0, None, False, call.iteration
        name = call.op
        if name in cm.ATTENTION or name == FLEX_KERNEL:
            backend = cm.ATTENTION.get(name, (None, None, "flex"))[2]
            out.append(cm.attention_cost([b, h, n, d], [b, h, n, d], [b, h, n, d], dtype, causal, backend=backend))
        elif name in cm.GEMMS:
            t = "float" if call.kernel_precision == "fp32" else dtype
            dims = [[b * h, n, d], [b * h, d, n]] if gemms % 2 == 0 else [[b * h, n, n], [b * h, n, d]]
            out.append(cm.gemm_cost("aten::bmm", dims, [t, t]))
            gemms, score_type = gemms + 1, t
        elif name in ("aten::triu", "aten::tril"):
            out.append(cm.memory_cost(name, [[n, n]], ["bool"]))
            masked = True
        elif name in cm.MEMORY:
            x, t = _elementwise_input(name, gemms, score_type or dtype, masked, (b, h, n, d))
            copy = name == "aten::copy_"      # a cast: read in the math dtype, write the run's
            out.append(cm.memory_cost(name, [x, x] if copy else [x], [dtype, t] if copy else [t]))
        else:
            out.append(None)
    return out


def _elementwise_input(name: str, gemms: int, dtype: str, masked: bool, shape: tuple) -> tuple[list, str]:
    b, h, n, d = shape
    if gemms % 2 == 1:
        return [b, h, n, n], dtype
    if gemms == 0 and masked and name in ("aten::where", "aten::masked_fill", "aten::add"):
        return [n, n], dtype
    return [b, h, n, d], dtype


def _calls(store, run_ids) -> pd.DataFrame:
    """One row per owning op call: run_id, op_id, op, backend_op, iteration, ts_ns, the recorded
    inputs, kernel_ns, kernels (names, longest first), kernel_precision, engine."""
    charged = charged_kernels(store, run_ids)
    flex = charged["owner_op_id"].isna() & charged["kernel"].str.contains(FLEX_KERNEL, regex=False)
    charged = charged.assign(owner=charged["owner_op_id"].astype("Int64"))
    charged.loc[flex, "owner"] = -1 - np.arange(int(flex.sum()))     # one call per flex kernel
    charged = charged[charged["owner"].notna()]
    if charged.empty:
        return pd.DataFrame()
    charged = charged.sort_values("dur_ns", ascending=False)
    grouped = charged.groupby(["run_id", "owner"], sort=False)
    calls = grouped.agg(kernel_ns=("dur_ns", "sum"), kernels=("kernel", lambda k: list(dict.fromkeys(k))),
                        backend_op=("backend_op", "first"), iteration=("iteration", "first"),
                        flex=("owner_op_id", lambda o: o.isna().all())).reset_index()
    ops = store.query(queries.sql_text("op_inputs"), _params(
        run_ids, op_ids=[int(i) for i in calls["owner"] if i >= 0]))
    calls = calls.merge(ops.drop(columns="iteration"), how="left", left_on=["run_id", "owner"],
                        right_on=["run_id", "op_id"])
    calls["op"] = calls["name"].where(~calls["flex"], FLEX_KERNEL)
    main = [tensor_cores.classify(k[0]) for k in calls["kernels"]]
    calls["engine"] = [m.engine for m in main]
    calls["kernel_precision"] = [m.precision for m in main]
    return calls.sort_values(["run_id", "iteration", "ts_ns"], na_position="last", ignore_index=True)


def _priced(calls: pd.DataFrame, shapes: pd.DataFrame) -> pd.DataFrame:
    costs = [_recorded(r.op, r.input_dims, r.input_types, r.concrete_inputs) for r in calls.itertuples()]
    source = ["trace" if c else None for c in costs]
    shape_of = shapes.set_index("run_id").to_dict("index")
    for run_id, rows in calls.groupby("run_id", sort=False):
        shape = shape_of.get(run_id)
        if shape is None or pd.isna(shape.get("seq_len")) or rows["input_dims"].notna().any():
            continue
        for i, cost in zip(rows.index, _inferred(rows, shape)):
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
    peaks = [getattr(device_of.get(r), "peaks", None) for r in frame["run_id"]]
    peak = [p.peak_tflops(e, t) if p else None for p, e, t in zip(peaks, frame["engine"], frame["dtype"])]
    bandwidth = [p.memory_gbps / 1e3 if p else None for p in peaks]       # TB/s
    out = frame.assign(tflops=frame["flops"] / seconds / 1e12, tbps=frame["bytes"] / seconds / 1e12,
                       intensity=frame["flops"] / frame["bytes"].where(frame["bytes"] > 0),
                       peak_tflops=np.array(peak, dtype=float), peak_tbps=np.array(bandwidth, dtype=float))
    ridge = out["peak_tflops"] / out["peak_tbps"]                              # FLOP/byte
    roof = np.minimum(out["peak_tflops"], out["intensity"] * out["peak_tbps"])
    return out.assign(ridge=ridge, roof_tflops=roof,
                      bound=np.where(ridge.isna(), None, np.where(out["intensity"] < ridge, "memory", "compute")),
                      pct_of_peak=100 * out["tflops"] / out["peak_tflops"],
                      pct_of_bandwidth=100 * out["tbps"] / out["peak_tbps"],
                      pct_of_roof=100 * out["tflops"] / roof, peak_source=[p.source if p else None for p in peaks])


def op_calls(store, run_ids) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work: run_id, op_id, op, backend, kind,
    shape, dtype, flops, bytes, kernel_ns, kernels, engine, shape_source, iteration, and `rate`'s
    columns (TFLOP/s and TB/s over the call's own kernel time)."""
    run_ids = list(run_ids)
    calls = _calls(store, run_ids)
    if not calls.empty:
        calls = _priced(calls, queries.run_shapes(store, run_ids))
    if calls.empty:
        return pd.DataFrame(columns=CALL_COLUMNS)
    devices = {r: _device(i) for r, i in queries.run_devices(store, run_ids).items()}
    return rate(calls, calls["kernel_ns"] / 1e9, devices)


def ops_table(store, run_ids, kind: str = "all") -> pd.DataFrame:
    """One row per (run, op, backend, shape, dtype): calls aggregated; flops and bytes per call,
    kernel_us_mean per call, tflops / tbps from that mean, pct_of_peak for the dtype on the engine
    its kernels ran on, intensity, bound, kernels (parsed: library, arch, instruction, tile)."""
    if kind not in KINDS:
        raise queries.QueryError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    calls = op_calls(store, run_ids)
    if kind != "all":
        calls = calls[calls["kind"] == kind]
    if calls.empty:
        return pd.DataFrame(columns=[*CALL_COLUMNS, "calls", "kernel_us_mean", "kernel_names"])
    keys = ["run_id", "op", "backend", "kind", "shape", "dtype", "engine", "shape_source"]
    table = calls.groupby(keys, dropna=False, sort=False).agg(
        calls=("op", "size"), flops=("flops", "first"), bytes=("bytes", "first"),
        kernel_ns=("kernel_ns", "sum"), kernel_names=("kernels", _names)).reset_index()
    table["kernel_us_mean"] = table["kernel_ns"] / table["calls"] / 1e3
    devices = {r: _device(i) for r, i in queries.run_devices(store, list(set(table["run_id"]))).items()}
    table = rate(table, table["kernel_us_mean"] / 1e6, devices)
    table["kernels"] = [" | ".join(f"{n} [{kernel_names.parse(n).summary}]" for n in names)
                        for names in table["kernel_names"]]
    return table.sort_values("kernel_ns", ascending=False, ignore_index=True)


def _names(lists) -> list[str]:
    return list(dict.fromkeys(n for names in lists for n in names))


def attention_in_trace(store, run_ids, top_gemms: int = 5) -> pd.DataFrame:
    """Every attention op of each run and its top GEMMs (by kernel time): `ops_table` rows plus
    share_of_gpu_pct, the op's kernel time per iteration over the run's GPU time per iteration
    (kernels + copies)."""
    run_ids = list(run_ids)
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
