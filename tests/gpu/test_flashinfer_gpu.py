"""flashinfer in the modes it is wired for (needs a CUDA GPU and the flashinfer-python package;
deselected without a GPU, as in CI).

- decode against a paged KV cache (flashinfer_decode, and flashinfer_decode_tc with its tensor-core kernel): the output passes the fp32 check, the kernel
  time per call from the trace (the store's one definition, `timings.run_timings`) agrees within
  5 % with an event-timed loop outside the profiler (CUDA-graph replay where the call can be
  captured, else back-to-back calls), and the TB/s (the KV cache read once, q read and the output
  written once, written out by hand here) stays at or under the GPU's datasheet bandwidth;
- its prefill with a sliding window and with packed lengths (flashinfer_fa2) passes the check.
Set PROFILER_TEST_COMPILE_CACHE to a folder to keep flashinfer's JIT builds between runs.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from profiler.analysis.model import skus
from profiler.analysis.findings import timings
from profiler.capture.recorder import capture, ingest_outcomes
from profiler.capture.config import CaptureConfig
from profiler.storage.store import Store

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(importlib.util.find_spec("flashinfer") is None,
                                 reason="the flashinfer-python package is not installed")]

DECODE = dict(batch=8, heads=32, kv_heads=8, seq_lens=(1,), kv_len=16384, head_dim=128)
SHAPES = {  # name -> (variant, capture fields)
    "decode": ("flashinfer_decode", dict(mode="decode", **DECODE)),
    "decode_tc": ("flashinfer_decode_tc", dict(mode="decode", **DECODE)),
    "decode_q4": ("flashinfer_decode", dict(mode="decode", **{**DECODE, "seq_lens": (4,)})),  # its paged prefill
    "window": ("flashinfer_fa2", dict(batch=4, heads=16, seq_lens=(4096,), window=1024, head_dim=64)),
    "varlen": ("flashinfer_fa2", dict(batch=1, heads=16, seq_lens=(4096,), varlen=(512, 1536, 1024, 1024),
                                      head_dim=64)),
}
AGREE = 0.05


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("flashinfer")
    keep = os.environ.get("PROFILER_TEST_COMPILE_CACHE")
    store = Store(out / "store.duckdb")
    found = {}
    for name, (variant, shape) in SHAPES.items():
        config = CaptureConfig(variants=(variant,), dtype="bf16", device="cuda", cold=False, repeats=1,
                               timing_calls=20, isolate=False, out_dir=out / name,
                               compile_cache=Path(keep) if keep else None, **shape)
        outcomes = capture(config)
        assert [o.skipped for o in outcomes if o.path is None] == [], name
        result = ingest_outcomes(store, outcomes)[0]
        row = timings.run_timings(store, [result.run_id]).set_index("run_id").loc[result.run_id]
        found[name] = (outcomes[0].meta, row)
    return found


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_flashinfer_shape_passes_the_fp32_check(runs, name):
    meta = runs[name][0]
    assert meta["ok"] and meta["rel_error"] < meta["tolerance"], (name, meta["rel_error"])
    assert meta["variant"] == SHAPES[name][0]


@pytest.mark.parametrize("name", ["decode", "decode_tc"])
def test_decode_kernel_time_per_call_agrees_with_an_event_timed_loop(runs, name):
    meta, row = runs[name]
    timed = row["graph_us_per_call"] if meta["graph_us_per_call"] is not None else row["wall_us_per_call"]
    assert abs(row["kernel_us_per_call"] - timed) <= AGREE * timed, (row["kernel_us_per_call"], timed)


@pytest.mark.parametrize("name", ["decode", "decode_tc"])
def test_decode_tbps_stays_under_the_memory_peak(runs, name):
    b, kv_heads, heads, d = DECODE["batch"], DECODE["kv_heads"], DECODE["heads"], DECODE["head_dim"]
    cache = 2 * b * kv_heads * DECODE["kv_len"] * d * 2  # K and V, bf16, read once
    q_out = 2 * b * heads * DECODE["seq_lens"][0] * d * 2
    import torch

    peak_tbps = skus.identify(torch.cuda.get_device_name()).device.peaks.memory_gbps / 1e3
    tbps = (cache + q_out) / (runs[name][1]["kernel_us_per_call"] * 1e-6) / 1e12
    assert 0 < tbps <= peak_tbps, (tbps, peak_tbps)
