"""Op inputs inferred from a captured run's own attention shape, for traces without record_shapes.

Runs captured before captures recorded shapes (the shipped H200 samples) carry no `Input Dims`,
but describe their attention shape (batch, heads, seq_len, head_dim, dtype, causal; K/V heads, KV
length, window and mode where they have them). The ops of
an attention variant follow from it: `inferred_costs` prices them in time order.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from profiler.analysis.model import costmodel as cm
from profiler.analysis.model.costmodel import OpCost
from profiler.vocab import attention

FLEX_KERNEL = attention.FLEX     # a compiled flex attention kernel has no op of its own (sql)
ATTENTION_KERNEL = attention.UNOWNED_KERNEL   # an attention kernel no modelled op owns (flashinfer, FA4)


def inferred_costs(calls: Sequence, shape: dict) -> list[OpCost | None]:
    """Inputs of one run's calls (in time order) from the run's attention shape (each call has op, iteration,
    kernel_precision and kernel attributes): attention ops (K and V of the run's K/V heads and
    length, causal aligned bottom-right, its sliding window) (a backward op, or a kernel alone whose name
    says backward: `attention.BACKWARD_KERNEL`, priced as the backward pass)
    take Q, K, V; GEMMs alternate Q K^T and P V (in the dtype their kernel ran: the math backend
    upcasts to fp32); elementwise ops between the two GEMMs act on the score matrix, before the
    first on Q (masked_fill / where / add on the mask once a triu / tril built it), after the
    second on the output. A shape with a missing or unusable size prices nothing (all None)."""
    sizes = _sizes(shape)
    if sizes is None:
        return [None] * len(calls)
    b, h, n, d, dtype, _ = sizes
    out, gemms, score_type, masked, iteration = [], 0, None, False, object()
    for call in calls:
        if call.iteration != iteration:
            gemms, score_type, masked, iteration = 0, None, False, call.iteration
        name = call.op
        if name in cm.ATTENTION or name in (FLEX_KERNEL, ATTENTION_KERNEL):
            backend = cm.ATTENTION.get(name, (None, None, "flex" if name == FLEX_KERNEL else None))[2]
            backward = name in attention.BACKWARD or (
                name in (FLEX_KERNEL, ATTENTION_KERNEL)
                and re.search(attention.BACKWARD_KERNEL, str(getattr(call, "kernel", "")), re.IGNORECASE) is not None)
            out.append(_attention_call(shape, sizes, backend, backward))
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


def shape_work(shape: dict) -> tuple[int, int] | None:
    """(FLOPs, bytes) of the attention a run's shape asks for, whatever computes it: one forward
    call over Q, K and V of the shape (and, in a training run, its backward too), priced with the
    run's mask (causal, window, packed lengths) as a fused kernel reads and writes it. Every variant
    of that shape has this work to do at the least, so at one shape it rates runs in the order of
    their times; a run's own modelled ops (the roofline) add what it does beyond it, e.g. the math
    backend's full score matrix. None when a size is missing or unusable."""
    sizes = _sizes(shape)
    if sizes is None:
        return None
    passes = (False, True) if shape.get("mode") == "train" else (False,)
    costs = [with_run_mask(_attention_call(shape, sizes, None, backward), shape) for backward in passes]
    return sum(c.flops for c in costs), sum(c.bytes for c in costs)


def _sizes(shape: dict) -> tuple | None:
    """(batch, heads, seq_len, head_dim, op dtype, causal) of a run's shape; None when a size is
    missing or unusable."""
    try:
        b, h, n, d = (int(shape[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if min(b, h, n, d) <= 0:
        return None
    return b, h, n, d, cm.TYPE_OF.get(str(shape["dtype"]), "c10::BFloat16"), bool(shape["causal"])


def _attention_call(shape: dict, sizes: tuple, backend: str | None, backward: bool) -> OpCost:
    """One attention call over the run's Q, K and V (`_attention_inputs`), causal aligned
    bottom-right when the keys outnumber the queries, with the run's sliding window (its keys a
    query sees, its own included)."""
    b, h, n, d, dtype, causal = sizes
    q, kv, decode = _attention_inputs(shape, b, h, n, d)
    window = _size(shape, "window", 0)
    return cm.attention_cost(q, kv, kv, dtype, causal, backend=backend, backward=backward,
                             bottom_right=decode or kv[2] != n, window=window - 1 if window else None)


def _size(shape: dict, key: str, default: int) -> int:
    try:
        value = int(shape.get(key) or 0)
    except (TypeError, ValueError, OverflowError):
        return default
    return value if value > 0 else default


def _attention_inputs(shape: dict, b: int, h: int, n: int, d: int) -> tuple[list, list, bool]:
    """Q's and K's (and V's) dims and whether the queries are the last of the keys (decode: new
    tokens against a KV cache) from the run's shape: K/V heads and KV length where it records them
    (GQA, decode), else the query heads and length."""
    return [b, h, n, d], [b, _size(shape, "kv_heads", h), _size(shape, "kv_len", n), d], shape.get("mode") == "decode"


def packed_lengths(shape: dict | None) -> tuple[int, ...] | None:
    """The packed sequences' lengths a run records (varlen '512,1536,...'), None without."""
    text = str((shape or {}).get("varlen") or "")
    try:
        docs = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        return None
    return docs if docs and min(docs) > 0 else None


def with_run_mask(cost: OpCost | None, shape: dict | None) -> OpCost | None:
    """An attention call over the run's whole sequence, priced with the mask the run records when it
    has a sliding window or packed lengths: neither an explicit mask's inputs (only its dims are in
    the trace) nor a compiled flex kernel say which pairs they keep. The capture's window W keeps
    the W keys ending at the query (the model's window: W - 1 keys before the diagonal); packed
    lengths keep each query's own sequence (causal within it when the run is causal)."""
    if cost is None or cost.kind != "attention" or cost.mask is None or not shape:
        return cost
    docs, window = packed_lengths(shape), _size(shape, "window", 0)
    mask = cost.mask
    if not (docs or window) or (mask.seq_q, mask.seq_kv) != (_size(shape, "seq_len", -1), _size(shape, "kv_len", -1)):
        return cost
    kept = replace(mask, causal=bool(shape.get("causal")), window=window - 1 if window else None, docs=docs)
    text = cost.shape.replace(f" window {mask.window}", "") if mask.window is not None else cost.shape
    text += (" causal" if kept.causal and " causal" not in text else "") + (f" window {window}" if window else "")
    text += f" packed {'+'.join(map(str, docs))}" if docs else ""
    return replace(cost, mask=kept, flops=cost.flops_per_pair * kept.pairs(), shape=text)


def _elementwise_input(name: str, gemms: int, dtype: str, masked: bool, shape: tuple) -> tuple[list, str]:
    b, h, n, d = shape
    if gemms % 2 == 1:
        return [b, h, n, n], dtype
    if gemms == 0 and masked and name in ("aten::where", "aten::masked_fill", "aten::add"):
        return [n, n], dtype
    return [b, h, n, d], dtype
