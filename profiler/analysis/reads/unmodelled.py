"""The GPU time the cost model gives no FLOPs or bytes, with the true reason, per op.

`op_costs` prices the op calls it can; every other kernel and copy is listed here by the CPU op
that launched it (the innermost op enclosing its launch call, `op_tree.launching_ops`), with
one reason (`reason`), so no output claims a cause that is not the real one:

* **op not modelled**: the op is none of `costmodel.MODELLED` (e.g. vLLM's
  `vllm::unified_attention_with_output`, whose Input Dims hold the new tokens' Q, K, V but not
  the cached context each query attends to, or `vllm::moe_forward`, whose block-scaled `bmm_Mx…`
  GEMMs multiply by expert weights its inputs do not hold);
* **dims missing**: a modelled op whose call recorded no Input Dims (traces without
  `record_shapes`) and no captured run shape to infer them from;
* **dtype unknown**: the dims are there but an input tensor's element type is none the model
  knows the size of (`costmodel.DTYPE_BYTES`);
* **inputs unreadable**: dims and dtypes are there but not of the arity / rank the op takes;
* **no launching op**: no CPU op encloses the launch (launched before the trace window, or
  from code outside any op).

A serving engine's attention call (vLLM's unified attention, SGLang's paged attention) inside a
serving step annotation is priced by the cost model from it (`serving_steps.cost`) and is not
listed here; one outside every annotation, or whose inputs do not give its heads, is listed with
that reason (`serving_costs.NO_ANNOTATION`, `NO_HEADS`) in place of "not among them".
"""
from __future__ import annotations

import json

import numpy as np

from profiler.analysis.model import arrays, costmodel as cm
from profiler.analysis.reads import op_charges, op_costs, op_tree, reads, serving_costs, serving_steps
from profiler.storage.session import StoreHandle

OP_NOT_MODELLED, DIMS_MISSING, DTYPE_UNKNOWN = "op not modelled", "dims missing", "dtype unknown"
UNREADABLE, NO_OP = "inputs unreadable", "no launching op"


# Ops not modelled because their recorded inputs cannot give the work, and why.
WHY_NOT = {
    "vllm::unified_attention_with_output":
        "its Input Dims hold the new tokens' Q, K, V; the cached context each query attends to is not among them",
    "vllm::moe_forward":
        "its Input Dims hold the tokens and the router's logits; the experts' weights each GEMM multiplies "
        "by, and how many tokens each expert got, are not among them",
}


def reason(op: str | None, dims: str | None, types: str | None) -> str:
    """Why one call of `op` (its Input Dims and Input type as JSON text, None when not
    recorded) has no cost."""
    if not isinstance(op, str):
        return NO_OP
    if op not in cm.MODELLED:
        return f"{OP_NOT_MODELLED} ({WHY_NOT[op]})" if op in WHY_NOT else OP_NOT_MODELLED
    if not isinstance(dims, str) or not isinstance(types, str):
        return DIMS_MISSING
    try:
        pairs = list(zip(json.loads(dims), json.loads(types)))
    except ValueError:
        return UNREADABLE
    unknown = sorted({t for d, t in pairs if d and t and t not in cm.DTYPE_BYTES and t != "Scalar"})
    if unknown:
        return f"{DTYPE_UNKNOWN} ({', '.join(unknown)})"
    signatures = cm.ATTENTION.get(op, (None, None))[1]
    if isinstance(signatures, dict) and len(pairs) not in signatures:
        return f"{UNREADABLE} (a {op} of {len(pairs)} inputs: which one is causal is not known)"
    return UNREADABLE


def unmodelled(store: StoreHandle, run_id: str) -> list[dict]:
    """One row per (op, reason) of the run's GPU work that has no cost, most GPU time first:
    op (None: no launching op), reason, calls (kernels and copies), kernel_ns."""
    with store.session() as db:
        work = op_charges.launched_work(db, [run_id])
        names = op_charges.kernel_name_map(db, run_id)
        charged = op_charges.charged_kernels(db, run_id, {k: v.copy() for k, v in work.items()}, names)
        priced = op_costs.op_call_columns(db, [run_id])[0]
        done = set(priced["op_id"].tolist()) if priced else set()
        rows = _dropped(db, run_id, charged, done) + _unowned(db, run_id, work, charged, done)
    merged: dict[tuple, list[int]] = {}
    for op, why, ns in rows:
        calls_ns = merged.setdefault((op, why), [0, 0])
        calls_ns[0] += 1
        calls_ns[1] += int(ns)
    out = [{"op": op, "reason": why, "calls": c, "kernel_ns": ns} for (op, why), (c, ns) in merged.items()]
    return sorted(out, key=lambda r: -r["kernel_ns"])


def _dropped(db, run_id: str, charged: dict, done: set) -> list[tuple]:
    """Kernels charged to a modelled op whose call the model could not price (`done`: the
    op_ids it priced)."""
    calls = op_charges.charged_calls(db, run_id, charged)
    if not calls:
        return []
    out, steps = [], None
    for i in range(arrays.rows(calls)):
        if int(calls["op_id"][i]) in done or int(calls["op_id"][i]) < 0:   # < 0: by launching op
            continue
        if serving_steps.backend(calls["op"][i]):
            steps = serving_costs.annotations(db, run_id) if steps is None else steps
            why = serving_costs.NO_HEADS if int(calls["op_id"][i]) in steps else serving_costs.NO_ANNOTATION
        else:
            why = reason(calls["op"][i], calls["input_dims"][i], calls["input_types"][i])
        out.append((calls["op"][i], why, calls["kernel_ns"][i]))
    return out


def _unowned(db, run_id: str, work: dict, charged: dict, done: set) -> list[tuple]:
    """Kernels and copies no modelled op owns (flex and attention kernels priced by themselves
    aside), by their launching op."""
    tree = op_tree.op_tree(db, run_id)
    work["before_op_id"] = op_tree.ops_before(db, run_id, work, op_tree.needs_thread_ops(tree, work))
    launching = op_tree.launching_ops(tree, work)
    owner, _ = op_tree.owners(np.asarray(tree["parent_id"]), np.asarray(tree["family"]), launching)
    rest = (owner < 0) & ~_alone(work, charged, done)
    ids = sorted({int(i) for i in launching[rest] if i >= 0})
    got = db.arrays("SELECT op_id, name FROM ops WHERE run_id = $run_id AND op_id IN (SELECT unnest($ids))",
                       {"run_id": run_id, "ids": ids}) if ids else {"op_id": [], "name": []}
    op_name = dict(zip(np.asarray(got["op_id"]).tolist(), np.asarray(reads.column(got["name"]), dtype=object).tolist()))
    return [(op_name.get(int(i)), reason(op_name.get(int(i)), None, None), ns)
            for i, ns in zip(launching[rest].tolist(), work["dur_ns"][rest].tolist())]


def _alone(work: dict, charged: dict, done: set) -> np.ndarray:
    """Rows of `work` the model priced as calls by themselves (flex and owner-less attention
    kernels), matched by (kernel_hash, launch time, duration)."""
    mine = np.array([i < 0 and i in done for i in charged["op_id"].tolist()], dtype=bool)
    keys = set(zip(charged["kernel_hash"][mine].tolist(), charged["launch_ts_ns"][mine].tolist(),
                   charged["dur_ns"][mine].tolist()))
    return np.array([k in keys for k in zip(work["kernel_hash"].tolist(), work["launch_ts_ns"].tolist(),
                                            work["dur_ns"].tolist())], dtype=bool)


def lines(rows: list[dict], limit: int = 8) -> list[str]:
    """Text lines for the CLI and the pages: GPU time, op and the reason."""
    out = [f"{r['kernel_ns'] / 1e3:>10.1f} µs in {r['calls']:>4d} kernels/copies  "
           f"{r['op'] or '(no op)'}: {r['reason']}" for r in rows[:limit]]
    if len(rows) > limit:
        out.append(f"{'':>10s}    … and {len(rows) - limit} more ops")
    return out


def sentence(store: StoreHandle, run_id: str, limit: int = 3) -> str:
    """Why a run's GPU time has no cost, in one sentence for a page (the heaviest ops first)."""
    rows = unmodelled(store, run_id)
    if not rows:
        return "The run launched no GPU work."
    parts = [f"{r['op'] or '(no op)'} ({r['kernel_ns'] / 1e3:,.1f} µs): {r['reason']}" for r in rows[:limit]]
    more = f"; and {len(rows) - limit} more ops" if len(rows) > limit else ""
    return "Not modelled: " + "; ".join(parts) + more + "."
