"""The process Nsight Compute watches: one warm call of one variant, and nothing else counted.

    python -m profiler.capture.counted '{"variant": "sdpa_flash", "batch": 8, "heads": 16,
                                         "seq_len": 1024, "head_dim": 64, "dtype": "bf16",
                                         "causal": true, "warmup_calls": 3, "seed": 0}'

It builds the variant, makes the capture's inputs (same seed, so the same numbers), runs
``warmup_calls`` calls with the profiler range closed (compiles, plans and caches happen there),
then opens the range (``cudaProfilerStart``) around exactly one call. `ncu` runs with
``--profile-from-start off``, so only that call's kernels are counted (profiler/capture/counters.py).
Prints one JSON line: ``{"ok": true}`` or ``{"ok": false, "reason": ...}``.
"""
from __future__ import annotations

import json
import sys

import torch

from profiler.capture.variants import Setting, get_variant, make_inputs


def counted_call(request: dict) -> None:
    """Build, warm up, and run one call inside the profiler range (raises what the variant raises)."""
    setting = Setting(device="cuda", dtype=request["dtype"], head_dim=request["head_dim"],
                      causal=request["causal"])
    variant = get_variant(request["variant"])
    reason = variant.why_not(setting)
    if reason:
        raise RuntimeError(reason)
    fn = variant.build(setting)
    inputs = make_inputs(request["batch"], request["heads"], request["seq_len"], request["head_dim"],
                         request["dtype"], "cuda", request.get("seed", 0))
    for _ in range(max(1, request.get("warmup_calls", 3))):
        fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main(argv: list[str]) -> int:
    try:
        counted_call(json.loads(argv[0]))
    except Exception as exc:  # noqa: BLE001 - the parent reads the reason; never a traceback
        lines = str(exc).strip().splitlines()
        print(json.dumps({"ok": False, "reason": f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"}))
        return 1
    print(json.dumps({"ok": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
