"""The cost model over a stored run: each modelled op call with its kernels, time and roofline.

`op_calls(store, run_ids)` charges every kernel and copy to the op that owns it
(profiler/analysis/reads/op_charges.py: launch correlation id -> CPU op -> modelled ancestor), prices each
owning op call with `profiler.analysis.model.costmodel` from its recorded inputs, and rates it against the
device's datasheet peak for its precision on the engine its kernel ran on
(profiler/analysis/reads/op_pricing.py). `ops_table` aggregates calls of one op and shape (the `ops`
command, the attention page); `run_totals` sums one iteration of each run (the roofline, the findings).

Runs captured without `record_shapes` have no recorded inputs; when the run describes its own
attention shape (captured runs do), the inputs are inferred from it (`profiler.analysis.model.run_shape`) and the rows say
`shape_source = 'run shape'` instead of `'trace'`.

Each run's op costs are kept in the store's cache of per-run results (`store.cache`, keyed by run
id and stamp: profiler/storage/run_cache.py), so a page opened again, or the roofline after the
table, costs nothing, and a run deleted and ingested again is modelled afresh.

The model works on numpy columns ({name: array}, one row per index) and needs no pandas, so the
`ops` command starts without it (`ops_columns`); `op_calls` and `ops_table` hand the same columns
to the dashboard as DataFrames. `store`: a `Store` or a `Session`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from profiler.analysis.model import arrays, kernel_names
from profiler.analysis.reads import op_pricing, reads
from profiler import errors
# the model's parts, named here by their callers
from profiler.analysis.model.rating import rated
from profiler.storage.session import StoreHandle

if TYPE_CHECKING:  # pandas loads only where a DataFrame is asked for
    import pandas as pd

KINDS = ("attention", "gemm", "all")
CALL_COLUMNS = ["run_id", "op_id", "op", "backend", "kind", "mode", "shape", "dtype", "flops", "flops_useful",
                "flops_issued", "kv_bytes", "kv_group", "bytes", "kernel_ns",
                "kernels", "engine", "shape_source", "iteration", "ts_ns", "tflops", "tbps", "intensity",
                "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound", "pct_of_peak",
                "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect"]       # of an empty op_calls / ops_table
CALL_ORDER = ["op_id", "kernel_ns", "iteration", "backend_id", "main_kernel", "op", "ts_ns", "op_iteration",
              "input_dims", "input_types", "concrete_inputs", "backend_op", "run_id", "engine",
              "kernel_precision", "kind", "flops", "mode", "flops_useful", "flops_issued", "kv_bytes", "kv_group", "bytes", "dtype", "shape",
              "backend", "shape_source",
              "tflops", "tbps", "intensity", "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound",
              "pct_of_peak", "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect"]  # of op_calls' rows
GROUP_KEYS = ["run_id", "op", "backend", "kind", "mode", "shape", "dtype", "engine", "shape_source"]
TABLE_COLUMNS = [*GROUP_KEYS, "flops", "flops_useful", "flops_issued", "bytes", "calls", "kernel_ns", "kernel_names", "kernel_us_mean",
                 "tflops", "tbps", "intensity", "peak_tflops", "peak_tbps", "ridge", "roof_tflops", "bound",
                 "pct_of_peak", "pct_of_bandwidth", "pct_of_roof", "peak_source", "suspect", "kernels"]


def op_calls(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per modelled op call that launched GPU work: run_id, op_id, op, backend, kind,
    shape, dtype, flops, bytes, kernel_ns, main_kernel (its longest), engine, shape_source,
    iteration, and `rated`'s columns (TFLOP/s and TB/s over the call's own kernel time)."""
    import pandas as pd

    with store.session() as db:
        calls = op_call_columns(db, list(run_ids))[0]
    return pd.DataFrame(calls, columns=CALL_ORDER) if calls else pd.DataFrame(columns=CALL_COLUMNS)


def op_call_columns(db, run_ids: list) -> tuple[dict, list[dict]]:
    """(op_calls' columns, {} when none; the kernels charged to them, per run: run_id, op_id,
    kernel_hash, dur_ns, names); read-only. Each run's part is kept in the store's cache."""
    parts = db.cache.per_run(db, "op_costs", run_ids, lambda todo: _compute(db, todo), _nbytes)
    parts = [parts[str(r)] for r in run_ids]
    return arrays.concat([c for c, _ in parts if arrays.rows(c)]), [k for _, k in parts]


def _nbytes(part: tuple[dict, dict]) -> int:
    """The bytes of a run's op costs as the cache counts them (the arrays, shallow)."""
    calls, kernels = part
    return sum(v.nbytes for d in (calls, kernels) for v in d.values() if isinstance(v, np.ndarray))


def _compute(db, run_ids: list) -> dict:
    """{run_id: op costs} of runs not kept yet: everything the model reads of them (launched work,
    kernel names, op trees, op inputs, threads' ops, backward ops, shapes, devices) read once for
    all of them (`op_pricing.about`: a few queries, not a few per run), then each run modelled in
    numpy. (Read run by run, the queries were the cost: 155 runs took ~3 s on an idle machine, ~12 s
    on a busy one, the most of a `rank` over thousands of runs.)"""
    known = op_pricing.about(db, run_ids, work=True)
    return {r: op_pricing.run_op_calls(db, r, known) for r in run_ids}


def ops_columns(store: StoreHandle, run_ids, kind: str = "all") -> dict:
    """`ops_table` as numpy columns ({} when no op is modelled); needs no pandas."""
    if kind not in KINDS:
        raise errors.QueryError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    with store.session() as db:
        return _ops_table(db, list(run_ids), kind)


def ops_table(store: StoreHandle, run_ids, kind: str = "all") -> pd.DataFrame:
    """One row per (run, op, backend, shape, dtype): calls aggregated; flops and bytes per call,
    kernel_us_mean per call, tflops / tbps from that mean, pct_of_peak for the dtype on the engine
    its kernels ran on, intensity, bound, kernels (parsed: library, arch, instruction, tile)."""
    import pandas as pd

    table = ops_columns(store, run_ids, kind)
    if not table:
        return pd.DataFrame(columns=[*CALL_COLUMNS, "calls", "kernel_us_mean", "kernel_names"])
    return pd.DataFrame(table, columns=TABLE_COLUMNS)


def _ops_table(db, run_ids: list, kind: str) -> dict:
    calls, kernels = op_call_columns(db, run_ids)
    if calls and kind != "all":
        calls = arrays.take(calls, calls["kind"] == kind)
    if not arrays.rows(calls):
        return {}
    group, first = arrays.groups_of(list(zip(*(calls[k].tolist() for k in GROUP_KEYS))))
    n = len(first)
    table = {k: calls[k][first] for k in [*GROUP_KEYS, "flops", "flops_useful", "flops_issued", "bytes"]}
    table["calls"] = np.bincount(group, minlength=n).astype(np.int64)
    table["kernel_ns"] = arrays.sums(group, calls["kernel_ns"], n)
    table["kernel_names"] = _kernel_lists(kernels, calls, group, n)
    table["kernel_us_mean"] = table["kernel_ns"] / table["calls"] / 1e3
    devices = {r: op_pricing.device_of(i) for r, i in reads.run_devices(db, list(set(table["run_id"].tolist()))).items()}
    table.update(rated(table["run_id"], table["engine"], table["dtype"], table["flops"], table["bytes"],
                       table["kernel_us_mean"] / 1e6, devices))
    archs = [op_pricing.arch_of(devices.get(r)) for r in table["run_id"].tolist()]
    table["kernels"] = arrays.objects([" | ".join(f"{n} [{kernel_names.parse(n, arch).summary}]" for n in names
                                                  if isinstance(n, str))
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


def attention_in_trace(store: StoreHandle, run_ids, top_gemms: int = 5) -> pd.DataFrame:
    """Every attention op of each run and its top GEMMs (by kernel time): `ops_table` rows plus
    share_of_gpu_pct, the op's kernel time per iteration over the run's summed kernel time per
    iteration (the metrics layer's kernel_sum_us_per_iter: the same denominator as the Kernels
    page's gpu_time_share_pct, so one kernel has one share everywhere). Kept per selection
    (profiler/analysis/reads/kept.py)."""
    from profiler.analysis.reads import kept

    run_ids = list(run_ids)
    return kept.value(store, ("attention_in_trace", top_gemms), run_ids,
                      lambda: _attention_in_trace(store, run_ids, top_gemms))


def _attention_in_trace(store, run_ids: list, top_gemms: int) -> pd.DataFrame:
    import pandas as pd

    from profiler.analysis.reads import run_queries

    run_ids = list(run_ids)
    table = ops_table(store, run_ids)
    if table.empty:
        return table.assign(share_of_gpu_pct=pd.Series(dtype=float))
    gpu_us = run_queries.run_metrics(store, run_ids).set_index("run_id")["kernel_sum_us_per_iter"]
    iterations = run_queries.run_iterations(store, run_ids).groupby("run_id")["iteration"].nunique()
    us_per_iter = table["kernel_ns"] / 1e3 / table["run_id"].map(iterations).fillna(1)
    table["share_of_gpu_pct"] = 100 * us_per_iter / table["run_id"].map(gpu_us)
    gemms = table[table["kind"] == "gemm"].groupby("run_id", sort=False).head(top_gemms)
    return pd.concat([table[table["kind"] == "attention"], gemms], ignore_index=True)
