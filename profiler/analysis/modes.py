"""What an op call and a run are doing: 'prefill', 'decode' or 'train'. The one definition that
`ops`, the roofline and the findings read.

* An attention call: a backward op is **train**; a forward whose queries are fewer than its keys
  (a few new tokens against a KV cache) is **decode**; any other forward is **prefill**.
* A run: **train** when it has a backward attention call or autograd ran a backward pass in it
  (an `autograd::engine::evaluate_function:` op: the math backend's backward is plain GEMMs);
  else **decode** when an attention call is decode; else **prefill** when it has attention
  calls; else None (no attention and no backward: no mode).
* Any other call (a GEMM, a softmax) takes its run's mode.
"""
from __future__ import annotations

from collections.abc import Iterable

MODES = ("prefill", "decode", "train")
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function:"   # sql/run_backward_ops.sql reads it


def op_mode(cost) -> str | None:
    """The mode of one priced call (`costmodel.OpCost`); None when it is not attention."""
    mask = getattr(cost, "mask", None)
    if cost is None or cost.kind != "attention" or mask is None:
        return None
    if cost.direction == "backward":
        return "train"
    return "decode" if mask.seq_q < mask.seq_kv else "prefill"


def run_mode(op_modes: Iterable[str | None], backward_ops: int = 0) -> str | None:
    """The mode of a run from its attention calls' modes and its count of autograd backward ops."""
    modes = set(op_modes)
    if "train" in modes or backward_ops > 0:
        return "train"
    if "decode" in modes:
        return "decode"
    return "prefill" if "prefill" in modes else None
