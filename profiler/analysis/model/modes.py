"""What an op call and a run are doing: 'prefill', 'decode' or 'train'. The one definition that
`ops`, the roofline and the findings read.

* An attention call: a backward op is **train**; a forward whose queries are fewer than its keys
  (a few new tokens against a KV cache) is **decode**; any other forward is **prefill**.
* A run: **train** when it has a backward attention call or autograd ran a backward pass in it
  (an `autograd::engine::evaluate_function:` op: the math backend's backward is plain GEMMs);
  else **decode** when an attention call is decode; else **prefill** when it has attention
  calls; else the mode the run declares (a captured run's own record: the naive path and the
  math backend have no attention op, only GEMMs and a softmax; a run captured before modes existed
  declares none but was a forward pass, prefill); else None (no attention, no backward, no record).
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


def run_mode(op_modes: Iterable[str | None], backward_ops: int = 0, declared: str | None = None) -> str | None:
    """The mode of a run from its attention calls' modes, its count of autograd backward ops and
    the mode it declares (`declared_mode`)."""
    modes = set(op_modes)
    if "train" in modes or backward_ops > 0:
        return "train"
    for mode in ("decode", "prefill"):
        if mode in modes:
            return mode
    return declared if declared in MODES else None


def declared_mode(shape: dict | None) -> str | None:
    """The mode a captured run records (its shape record's `mode`); a captured attention shape
    without one is a forward pass: prefill. None for a run that describes no shape."""
    if not shape or shape.get("seq_len") is None:
        return None
    return shape.get("mode") if shape.get("mode") in MODES else "prefill"
