"""FlashAttention 4 in every mode and shape it is wired for (needs an sm90/sm100 GPU and the
flash-attn-4 package; deselected without a GPU, as in CI): prefill with GQA, decode of one token
against a KV cache, a train step (forward and backward), a sliding window and packed lengths.

Per run: the output (and in train, dq, dk, dv) passes the fp32 check; the kernel time per call
from the trace (the store's one definition, `timings.run_timings`) agrees within 5 % with an
event-timed loop outside the profiler (CUDA-graph replay where the call can be captured, else
back-to-back calls); TFLOP/s (the FLOPs the mask keeps, counted here by hand from the mask; a
train step at least 3x its forward) and decode's TB/s (the KV cache read once) stay at or under
the GPU's datasheet peaks. Set PROFILER_TEST_COMPILE_CACHE to keep compile caches between runs.
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
              pytest.mark.skipif(importlib.util.find_spec("flash_attn") is None,
                                 reason="the flash-attn-4 package is not installed")]

SHAPES = {  # name -> capture fields
    "prefill_gqa": dict(batch=4, heads=32, kv_heads=8, seq_lens=(2048,), head_dim=128),
    "decode": dict(mode="decode", batch=8, heads=32, kv_heads=8, seq_lens=(1,), kv_len=16384, head_dim=128),
    "train": dict(mode="train", batch=4, heads=16, seq_lens=(2048,), head_dim=64),
    "window": dict(batch=4, heads=16, seq_lens=(4096,), window=1024, head_dim=64),
    "varlen": dict(batch=1, heads=16, seq_lens=(4096,), varlen=(512, 1536, 1024, 1024), head_dim=64),
}
AGREE = 0.05


def _kept_pairs(shape) -> int:
    """(query, key) pairs the causal mask keeps per batch entry and head, by hand: a square of S
    keeps S(S+1)/2; a window of W keeps min(p + 1, W) keys at position p; packed lengths keep each
    sequence's own square."""
    if "varlen" in shape:
        return sum(n * (n + 1) // 2 for n in shape["varlen"])
    s = shape["seq_lens"][0]
    if "window" in shape:
        return sum(min(p + 1, shape["window"]) for p in range(s))
    return s * (s + 1) // 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("fa4")
    keep = os.environ.get("PROFILER_TEST_COMPILE_CACHE")
    store = Store(out / "store.duckdb")
    found = {}
    for name, shape in SHAPES.items():
        config = CaptureConfig(variants=("flash_attn_4",), dtype="bf16", device="cuda", cold=False, repeats=1,
                               timing_calls=20, isolate=False, out_dir=out / name,
                               compile_cache=Path(keep) if keep else None, **shape)
        outcomes = capture(config)
        assert [o.skipped for o in outcomes if o.path is None] == [], name
        result = ingest_outcomes(store, outcomes)[0]
        found[name] = (outcomes[0].meta, timings.run_timings(store, [result.run_id]).iloc[0])
    return found


def _peaks():
    import torch

    return skus.identify(torch.cuda.get_device_name()).device.peaks


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_passes_the_fp32_check(runs, name):
    meta = runs[name][0]
    assert meta["ok"] and meta["rel_error"] < meta["tolerance"], (name, meta["rel_error"])
    assert meta["mode"] == SHAPES[name].get("mode", "prefill")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_kernel_time_per_call_agrees_with_an_event_timed_loop(runs, name):
    meta, row = runs[name]
    timed = row["graph_us_per_call"] if meta["graph_us_per_call"] is not None else row["wall_us_per_call"]
    assert abs(row["kernel_us_per_call"] - timed) <= AGREE * timed, (name, row["kernel_us_per_call"], timed)


@pytest.mark.parametrize("name", ["prefill_gqa", "train", "window", "varlen"])
def test_tflops_stay_under_the_matrix_peak(runs, name):
    shape = SHAPES[name]
    flops = 4 * shape["batch"] * shape["heads"] * shape["head_dim"] * _kept_pairs(shape)
    flops *= 3 if name == "train" else 1
    tflops = flops / (runs[name][1]["kernel_us_per_call"] * 1e-6) / 1e12
    assert 0 < tflops <= _peaks().tflops["bf16"], (name, tflops)


def test_decode_tbps_stays_under_the_memory_peak(runs):
    shape = SHAPES["decode"]
    b, kv_heads, heads, d = shape["batch"], shape["kv_heads"], shape["heads"], shape["head_dim"]
    cache = 2 * b * kv_heads * shape["kv_len"] * d * 2  # K and V, bf16, read once
    q_out = 2 * b * heads * d * 2
    tbps = (cache + q_out) / (runs["decode"][1]["kernel_us_per_call"] * 1e-6) / 1e12
    assert 0 < tbps <= _peaks().memory_gbps / 1e3, tbps
