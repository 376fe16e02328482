"""The warm-up check of data/samples/MANIFEST.md ("Decode sweep over the KV length"): decode runs of 3
repeats captured with warmup_s=0 and 0.1, each repeat's kernel time per call from the trace against
its CUDA-graph replay. Needs a CUDA GPU (and flashinfer-python for its variants).
Usage: python -m bench.warmup_gpu [VARIANT ...] (default: sdpa_flash sdpa_cudnn)
"""
import sys
import tempfile
import time
from pathlib import Path

from profiler.analysis.findings import timings
from profiler.capture.recorder import capture, ingest_outcomes
from profiler.capture.config import CaptureConfig
from profiler.storage.store import Store

out = Path(tempfile.mkdtemp(prefix="warmup-"))
for ws in (0.0, 0.1):
    store = Store(out / f"s{ws}.duckdb")
    for variant in sys.argv[1:] or ("sdpa_flash", "sdpa_cudnn"):
        for L in (16384, 32768, 65536):
            t = time.time()
            config = CaptureConfig(variants=(variant,), mode="decode", batch=8, heads=32, kv_heads=8, seq_lens=(1,),
                                   kv_len=L, head_dim=128, dtype="bf16", device="cuda", cold=False,
                                   repeats=3, timing_calls=20, isolate=False, out_dir=out / f"{ws}{variant}{L}",
                                   warmup_s=ws, compile_cache=out / "cc")
            outs = [o for o in capture(config) if o.path is not None]
            res = ingest_outcomes(store, outs)
            tab = timings.run_timings(store, [r.run_id for r in res]).set_index("run_id")
            for o, r in zip(outs, res):
                row = tab.loc[r.run_id]
                k, g = row["kernel_us_per_call"], row["graph_us_per_call"]
                print(f"warmup_s={ws} {variant} L={L} repeat={o.meta.get('repeat')} kernel={k:.1f} graph={g:.1f} "
                      f"diff={100 * (k - g) / g:+.1f}%", flush=True)
            print("  took", round(time.time() - t, 1), "s", flush=True)
