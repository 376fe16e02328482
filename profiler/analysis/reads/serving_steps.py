"""Attention cost from serving step annotations (issue 37, item 3): a pure model, no store.

vLLM (and SGLang where it writes one) annotates each engine step with its batch:
`execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)`
is a step of 8,192 tokens: 9 context (prefill) sequences with Σ new queries 8,155, Σ keys 8,430,
Σ sq² 7,475,785 and Σ sq·sk 7,671,310, and 37 generation (decode) sequences of one query each over
34,489 cached keys in all. Older vLLM writes `execute_context_1(888_788544)_generation_0(0)`: one
prefill of 888 tokens with Σ N² = 788,544 and no cache (sk = sq). `parse` reads both.

The attention op's Input Dims hold only the step's new tokens; the annotation holds what they
attend to. `price` prices one call of the op from it, with the heads and head size of its inputs:
- FLOPs = 4 · H_Q · d · (context Σ sq·sk − context Σ sq² / 2 + generation Σ sq·sk): QKᵀ and PV,
  2 FLOPs a multiply-add each; a context query attends causally (half of its own square), a
  generation query every cached key. The same sums as TraceLens's `InferenceAttention` model.
- bytes = Q and O (Σ sq of both parts · H_Q · d) + K and V (Σ sk of both parts · H_KV · d), each
  element of the input's dtype: every cached key and value read once.
A layer that attends a sliding window (the window is not in the trace) reads and multiplies
fewer keys: its figure is an upper bound (`UPPER_BOUND`).

`cost` gives the same figure as the cost model's `costmodel.OpCost` (kind 'attention', the shape
naming the annotation): `op_pricing` puts it in the cost rows (`shape_source` 'step annotation'),
so the Attention page, `ops`, `summary --json` and the roofline read this one definition.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from profiler.analysis.model.costmodel import PRECISION, OpCost
from profiler.analysis.reads.units import binary_size
from profiler.vocab import attention

STEP = re.compile(attention.SERVING_STEP)
SOURCE = "step annotation"    # the cost rows' shape_source of a call priced here
SUMS = re.compile(r"^sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)$")
OLD_SUMS = re.compile(r"^(\d+)_(\d+)$")      # older vLLM: tokens_ΣN², no cache
DTYPE_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "c10::Float8_e4m3fn": 1,
               "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2": 1, "c10::Float8_e5m2fnuz": 1}
UPPER_BOUND = "an upper bound if the layer attends a sliding window (its window is not in the trace)"


@dataclass(frozen=True)
class Sums:
    seqs: int
    sq: int     # Σ new queries
    sk: int     # Σ keys attended (cached and new)
    sqsq: int   # Σ sq²
    sqsk: int   # Σ sq·sk


@dataclass(frozen=True)
class StepBatch:
    annotation: str
    tokens: int | None
    context: Sums
    generation: Sums

    @property
    def kind(self) -> str:
        """'prefill', 'decode' or 'mixed' (both in one step)."""
        ctx, gen = self.context.seqs > 0, self.generation.seqs > 0
        return "mixed" if ctx and gen else "prefill" if ctx else "decode"


def _sums(seqs: int, text: str) -> Sums | None:
    if m := SUMS.match(text):
        return Sums(seqs, *(int(g) for g in m.groups()))
    if m := OLD_SUMS.match(text):
        n, nn = int(m[1]), int(m[2])
        return Sums(seqs, n, n, nn, nn)
    if text == "0":
        return Sums(seqs, 0, 0, 0, 0)
    return None


def parse(name: str) -> StepBatch | None:
    """The batch a step annotation states, or None when `name` is not one."""
    m = STEP.match(name.strip())
    if not m:
        return None
    ctx, gen = _sums(int(m[2]), m[3]), _sums(int(m[4]), m[5])
    if ctx is None or gen is None:
        return None
    return StepBatch(name.strip(), int(m[1]) if m[1] else None, ctx, gen)


@dataclass(frozen=True)
class Heads:
    q_heads: int
    kv_heads: int
    head_dim: int
    elem_bytes: int


def heads(dims_text: str | None, types_text: str | None) -> Heads | None:
    """Q heads and head size from the op's first input ([tokens, H_Q, d]); K/V heads the fewest
    heads among its other inputs of head size d (K, V or their caches: [.., H_KV, d]; an input of
    as many heads as Q is the output); the element size from the first input's dtype. None when
    the inputs do not say."""
    try:
        dims = ast.literal_eval(dims_text or "")
        types = ast.literal_eval(types_text or "[]")
    except (ValueError, SyntaxError):
        return None
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list) or len(dims[0]) != 3:
        return None
    _, hq, d = dims[0]
    kv = [x[-2] for x in dims[1:] if isinstance(x, list) and len(x) >= 3 and x[-1] == d]
    size = DTYPE_BYTES.get(types[0] if types else "", None)
    if not kv or size is None or not hq or not d:
        return None
    return Heads(int(hq), int(min(kv)), int(d), size)


def flops(step: StepBatch, h: Heads) -> float:
    c, g = step.context, step.generation
    return 4.0 * h.q_heads * h.head_dim * (c.sqsk - c.sqsq / 2 + g.sqsk)


def bytes_moved(step: StepBatch, h: Heads) -> float:
    c, g = step.context, step.generation
    return float(h.elem_bytes * h.head_dim * (2 * (c.sq + g.sq) * h.q_heads + 2 * (c.sk + g.sk) * h.kv_heads))


def backend(op: str | None) -> str | None:
    """The serving engine whose attention op `op` is (`attention.SERVING_OPS`), or None."""
    if not isinstance(op, str):
        return None
    return next((engine for prefix, engine in attention.SERVING_OPS.items() if op.startswith(prefix)), None)


def cost(step: StepBatch | None, op: str | None, dims_text: str | None, types_text: str | None) -> OpCost | None:
    """One call of the serving attention op `op` in `step` as the cost model's `OpCost`, or None
    when there is no step or its inputs do not give the heads. `shape` names the annotation."""
    h = heads(dims_text, types_text) if step is not None else None
    if h is None:
        return None
    c, g = step.context, step.generation
    kv = h.elem_bytes * h.head_dim * 2 * (c.sk + g.sk) * h.kv_heads
    types = ast.literal_eval(types_text)
    shape = (f"{step.kind}: {c.sq + g.sq:,} queries over {c.sk + g.sk:,} keys, {h.q_heads}/{h.kv_heads} heads "
             f"of {h.head_dim} (priced from the step annotation {step.annotation})")
    return OpCost("attention", round(flops(step, h)), round(bytes_moved(step, h)), PRECISION.get(types[0]), shape,
                  backend=backend(op), direction="forward", kv_bytes=kv, kv_group=h.q_heads // max(h.kv_heads, 1))


def price(step: StepBatch, dims_text: str | None, types_text: str | None) -> dict | None:
    """{flops, bytes, kind, annotation, reason} of one attention call of `step`, or None when its
    inputs do not give the heads."""
    h = heads(dims_text, types_text)
    if h is None:
        return None
    f, b = flops(step, h), bytes_moved(step, h)
    reason = (f"priced from the step annotation {step.annotation!r} ({step.kind}: "
              f"{step.context.sq + step.generation.sq:,} queries over {step.context.sk + step.generation.sk:,} "
              f"keys, {h.q_heads} Q / {h.kv_heads} K/V heads of {h.head_dim}): {f / 1e9:,.3f} GFLOP, "
              f"{binary_size(b)}; {UPPER_BOUND}")
    return {"flops": f, "bytes": b, "kind": step.kind, "annotation": step.annotation, "reason": reason}
