"""The process Nsight Compute watches: one warm call of one variant, and nothing else counted.

    python -m profiler.capture.counted '{"variant": "sdpa_flash", "mode": "decode", "batch": 8,
        "heads": 16, "kv_heads": 2, "seq_len": 1, "kv_len": 8192, "head_dim": 64, "dtype": "bf16",
        "causal": true, "window": null, "varlen": null, "warmup_calls": 3, "seed": 0}'

The request is the trace's own workload (`profiler.capture.counters.request`: every mode and
shape a capture runs: prefill with GQA, decode against the KV cache, a train step's forward and
backward, a sliding window, packed lengths), built by `workload` exactly as the recorder builds
it: the variant's ``build`` for the same `Setting`, the same inputs (same seed, so the same
numbers), and a train step wrapped by ``train_step``. It runs ``warmup_calls`` calls with the
profiler range closed (compiles, plans and caches happen there), then opens the range
(``cudaProfilerStart``) around exactly one call. `ncu` runs with ``--profile-from-start off``, so
only that call's kernels are counted (profiler/capture/counters.py). Prints one JSON line:
``{"ok": true}`` or ``{"ok": false, "reason": ...}``. With ``"cold": true`` in the request no call
runs before the range: the counted call is the process's first, as in a cold run (the L2 check,
profiler/capture/l2check.py), after L2 was flushed the cold run's way when ``"flush_l2"`` says so.
"""
from __future__ import annotations

import json
import sys

import torch

from profiler.capture.attention_fns import make_inputs, train_step
from profiler.capture.record import flush_l2
from profiler.capture.setting import Setting
from profiler.capture.variants import get_variant


def setting_of(request: dict, device: str) -> Setting:
    heads, kv_heads = request["heads"], request.get("kv_heads") or request["heads"]
    varlen = request.get("varlen")
    return Setting(device=device, dtype=request["dtype"], head_dim=request["head_dim"], causal=request["causal"],
                   mode=request.get("mode", "prefill"), gqa=kv_heads != heads, window=request.get("window"),
                   varlen=tuple(varlen) if varlen else None)


def workload(request: dict, device: str = "cuda"):
    """(fn, inputs) of the request, as the recorder makes them (raises what the variant raises)."""
    setting = setting_of(request, device)
    variant = get_variant(request["variant"])
    reason = variant.why_not(setting)
    if reason:
        raise RuntimeError(reason)
    fn = variant.build(setting)
    if setting.mode == "train":
        fn = train_step(fn)
    inputs = make_inputs(request["batch"], request["heads"], request["seq_len"], request["head_dim"],
                         request["dtype"], device, request.get("seed", 0), kv_heads=request.get("kv_heads"),
                         kv_len=request.get("kv_len"), train=setting.mode == "train")
    return fn, inputs


def counted_call(request: dict) -> None:
    """Build, warm up, and run one call inside the profiler range."""
    fn, inputs = workload(request, "cuda")
    for _ in range(0 if request.get("cold") else max(1, request.get("warmup_calls", 3))):
        fn(*inputs)
    if request.get("cold") and request.get("flush_l2"):   # as the cold run did (record.flush_l2)
        flush_l2("cuda")
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
