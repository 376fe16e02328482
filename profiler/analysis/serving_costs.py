"""The serving attention calls of a stored run priced from their step annotations (issue 37,
item 3): `sql/serving_attention_calls.sql` finds each call and the `execute_…` annotation around it,
`serving_steps` parses and prices it. `calls(store, run_id)`: one dict per call (op_id, op,
annotation, kind, flops, bytes, reason; flops None with a reason when it cannot be priced);
`priced(store, run_id)`: {op_id: reason} of those priced, which `unmodelled` gives as the op's
reason in place of "not among them"."""
from __future__ import annotations

from profiler.analysis import serving_steps
from profiler.analysis.reads import sql_text

NO_ANNOTATION = "no serving step annotation (execute_…) encloses the call: the cached context is not in the trace"
NO_HEADS = "its inputs do not give the heads and head size ([tokens, heads, head size] first)"


def calls(store, run_id: str) -> list[dict]:
    df = store.query(sql_text("serving_attention_calls"), {"run_id": run_id})
    out = []
    for r in df.itertuples(index=False):
        step = serving_steps.parse(r.annotation) if isinstance(r.annotation, str) else None
        got = serving_steps.price(step, r.input_dims, r.input_types) if step else None
        row = {"op_id": int(r.op_id), "op": r.op, "annotation": step.annotation if step else None,
               "kind": step.kind if step else None, "flops": None, "bytes": None,
               "reason": NO_ANNOTATION if step is None else NO_HEADS}
        out.append(row | (got or {}))
    return out


def priced(store, run_id: str) -> dict[int, str]:
    """{op_id: the priced figure's sentence} of the run's serving attention calls that have one."""
    return {c["op_id"]: c["reason"] for c in calls(store, run_id) if c["flops"] is not None}
