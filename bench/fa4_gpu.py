"""FlashAttention 4 in every shape of data/samples/modes/ (prefill with GQA, decode against 8k and
32k caches, a train step, a sliding window, packed lengths), captured in this one process on a
CUDA GPU with the flash-attn-4 package: the traces of data/samples/modes/*/flash_attn_4_*.

    python -m bench.fa4_gpu OUT_DIR

Prints one line per run (ok, relative error, kernel-free timings: CUDA events and graph replay)
or why it was skipped. Needs neither the store nor its packages (DuckDB): the traces are
ingested elsewhere (tests/test_fa4_samples.py reads them)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from profiler.capture.recorder import capture
from profiler.capture.config import CaptureConfig

DECODE_SWEEP = "sweep-20261203T191146Z"  # the sweep id of modes/decode/ (its 8k and 32k caches)
SHAPES = {  # folder -> capture fields: modes_gpu.sh's shapes
    "prefill_gqa": dict(batch=4, heads=32, kv_heads=8, seq_lens=(2048,), head_dim=128),
    "decode": dict(mode="decode", batch=8, heads=32, kv_heads=8, seq_lens=(1,), head_dim=128),
    "train": dict(mode="train", batch=8, heads=16, seq_lens=(1024,), head_dim=64),
    "window": dict(batch=4, heads=16, seq_lens=(4096,), window=1024, head_dim=64),
    "varlen": dict(batch=1, heads=16, seq_lens=(4096,), varlen=(512, 1536, 1024, 1024), head_dim=64),
}


def main(out: Path) -> None:
    for folder, shape in SHAPES.items():
        kv_lens = (8192, 32768) if folder == "decode" else (None,)
        for kv_len in kv_lens:
            started = time.perf_counter()
            config = CaptureConfig(variants=("flash_attn_4",), dtype="bf16", device="cuda", cold=False, repeats=1,
                                   isolate=False, out_dir=out / folder, kv_len=kv_len,
                                   sweep=DECODE_SWEEP if kv_len else False, **shape)
            for o in capture(config):
                m = o.meta or {}
                print(folder, kv_len, o.path.name if o.path else None, o.skipped, m.get("ok"), m.get("rel_error"),
                      m.get("wall_us_per_call"), m.get("graph_us_per_call"), f"{time.perf_counter() - started:.1f}s",
                      flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
