"""The serving attention calls of a stored run priced from their step annotations (issue 37,
item 3): `sql/serving_attention_calls.sql` finds each call and the `execute_…` annotation around it,
`serving_steps` parses and prices it. `calls(store, run_id)`: one dict per call (op_id, op,
annotation, kind, flops, bytes, reason; flops None with a reason when it cannot be priced);
`annotations(store, run_id)`: {op_id: its annotation},
which the cost model (`op_pricing`) prices each call from with `serving_steps.cost`."""
from __future__ import annotations

from profiler.analysis.reads import reads, serving_steps
from profiler.analysis.reads.reads import sql_text
from profiler.vocab import attention

NO_ANNOTATION = "no serving step annotation (execute_…) encloses the call: the cached context is not in the trace"
NO_HEADS = "its inputs do not give the heads and head size ([tokens, heads, head size] first)"


def _params(run_id: str) -> dict:
    return {"run_id": run_id, "prefixes": list(attention.SERVING_OPS), "step": attention.SERVING_STEP}


def annotations(store, run_id: str) -> dict[int, str]:
    """{op_id: the step annotation enclosing it} of the run's serving attention calls in one
    (numpy, no pandas: the cost model reads it)."""
    got = store.arrays(sql_text("serving_attention_calls"), _params(run_id))
    return {int(i): a for i, a in zip(reads.column(got["op_id"]).tolist(), reads.column(got["annotation"]).tolist())
            if isinstance(a, str)}


def calls(store, run_id: str) -> list[dict]:
    df = store.query(sql_text("serving_attention_calls"), _params(run_id))
    out = []
    for r in df.itertuples(index=False):
        step = serving_steps.parse(r.annotation) if isinstance(r.annotation, str) else None
        got = serving_steps.price(step, r.input_dims, r.input_types) if step else None
        row = {"op_id": int(r.op_id), "op": r.op, "annotation": step.annotation if step else None,
               "kind": step.kind if step else None, "flops": None, "bytes": None,
               "reason": NO_ANNOTATION if step is None else NO_HEADS}
        out.append(row | (got or {}))
    return out

