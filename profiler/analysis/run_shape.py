"""Op inputs inferred from a captured run's own attention shape, for traces without record_shapes.

Runs captured before captures recorded shapes (the shipped H200 samples) carry no `Input Dims`,
but describe their attention shape (batch, heads, seq_len, head_dim, dtype, causal). The ops of
an attention variant follow from it: `inferred_costs` prices them in time order.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from profiler.analysis import costmodel as cm
from profiler.analysis.costmodel import OpCost
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
    try:
        b, h, n, d = (int(shape[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    except (KeyError, TypeError, ValueError, OverflowError):
        return [None] * len(calls)
    if min(b, h, n, d) <= 0:
        return [None] * len(calls)
    dtype, causal = cm.TYPE_OF.get(str(shape["dtype"]), "c10::BFloat16"), bool(shape["causal"])
    kv = [b, _positive(shape.get("kv_heads"), h), _positive(shape.get("kv_len"), n), d]  # GQA, a KV cache
    window = _positive(shape.get("window"), 0)  # keys a query sees, its own included (0: none)
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
            out.append(cm.attention_cost([b, h, n, d], kv, kv, dtype, causal, backend=backend, backward=backward,
                                         bottom_right=kv[2] != n, window=window - 1 if window else None))
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


def _positive(value, default: int) -> int:
    try:
        got = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return got if got > 0 else default


def _elementwise_input(name: str, gemms: int, dtype: str, masked: bool, shape: tuple) -> tuple[list, str]:
    b, h, n, d = shape
    if gemms % 2 == 1:
        return [b, h, n, n], dtype
    if gemms == 0 and masked and name in ("aten::where", "aten::masked_fill", "aten::add"):
        return [n, n], dtype
    return [b, h, n, d], dtype
