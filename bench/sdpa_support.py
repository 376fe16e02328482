"""Which mode and shape each forced SDPA backend accepts on this machine (the table behind
`SDPA_EFFICIENT` / `SDPA_CUDNN` in profiler/capture/variants.py).

    python -m bench.sdpa_support [--json-out FILE]

For each backend and each feature (GQA, causal decode of 1 and of 4 tokens, a sliding window and
packed lengths by an explicit mask, a train step, a GQA train step) it calls the capture's own
attention function once on a small bf16 shape and prints "ok" or the first line of the error.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path


import torch

from profiler.capture import attention_fns as fns
from profiler.capture.setting import Setting

CASES = {  # feature -> (setting changes, heads, kv heads, q len, kv len)
    "prefill": ({}, 8, 8, 256, 256),
    "gqa": ({"gqa": True}, 8, 2, 256, 256),
    "decode_q1": ({"mode": "decode"}, 8, 8, 1, 1024),
    "decode_q4": ({"mode": "decode"}, 8, 8, 4, 1024),
    "decode_q1_gqa": ({"mode": "decode", "gqa": True}, 8, 2, 1, 1024),
    "window": ({"window": 64}, 8, 8, 256, 256),
    "varlen": ({"varlen": (64, 192)}, 8, 8, 256, 256),
    "train": ({"mode": "train"}, 8, 8, 256, 256),
    "train_gqa": ({"mode": "train", "gqa": True}, 8, 2, 256, 256),
}


def attempt(backend: str | None, changes: dict, heads: int, kv_heads: int, q_len: int, kv_len: int) -> str:
    setting = replace(Setting(device="cuda", dtype="bf16", head_dim=64), **changes)
    train = setting.mode == "train"
    fn = fns.build_sdpa(backend)(setting)
    fn = fns.train_step(fn) if train else fn
    inputs = fns.make_inputs(2, heads, q_len, 64, "bf16", "cuda", kv_heads=kv_heads, kv_len=kv_len, train=train)
    try:
        fn(*inputs)
        torch.cuda.synchronize()
        return "ok"
    except Exception as exc:  # what the backend says is the result
        lines = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {lines[0][:160] if lines else ''}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args()
    found = {backend or "auto": {feature: attempt(backend, *case) for feature, case in CASES.items()}
             for backend in ("math", "efficient", "flash", "cudnn", None)}
    found["machine"] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                        "cudnn": torch.backends.cudnn.version()}
    text = json.dumps(found, indent=1)
    print(text)
    if args.json_out:
        args.json_out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
