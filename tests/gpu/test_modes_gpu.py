"""GPU capture of every mode (needs a CUDA GPU; deselected without one, as in CI).

One capture per mode on the GPU (prefill with GQA, decode of one token against a KV cache, a
train step), ingested into a store; then, per run:
- the kernel time per call from the trace (the store's one definition, `timings.run_timings`)
  agrees within 5 % with an event-timed loop outside the profiler (graph replay where the variant
  can be captured in a CUDA graph, else back-to-back calls);
- decode's TB/s (the KV cache and q, out read or written once) and prefill's and train's TFLOP/s
  (the FLOPs the causal mask keeps; a train step at least 3× the forward's: its backward has at
  least dV, dP, dQ and dK) stay at or under the GPU's datasheet peaks (`skus`).
The FLOPs and bytes here are written out by hand, independent of the cost model.
Set PROFILER_TEST_COMPILE_CACHE to a folder to keep compile caches between runs.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from profiler.analysis.model import skus
from profiler.analysis.findings import timings
from profiler.capture.recorder import capture, ingest_outcomes
from profiler.capture.config import CaptureConfig
from profiler.storage.store import Store

pytestmark = pytest.mark.gpu

FUSED = ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_auto", "flex")
SHAPES = {  # mode -> capture fields
    "prefill": dict(batch=4, heads=32, kv_heads=8, seq_lens=(2048,), head_dim=128),
    "decode": dict(batch=8, heads=32, kv_heads=8, seq_lens=(1,), kv_len=16384, head_dim=128),
    "train": dict(batch=4, heads=16, seq_lens=(2048,), head_dim=64),
}
AGREE = 0.05


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("modes")
    keep = os.environ.get("PROFILER_TEST_COMPILE_CACHE")
    store = Store(out / "store.duckdb")
    found = {}
    for mode, shape in SHAPES.items():
        config = CaptureConfig(variants=("naive",) + FUSED, mode=mode, dtype="bf16", device="cuda", cold=False,
                               repeats=1, timing_calls=20, isolate=False, out_dir=out / mode,
                               compile_cache=Path(keep) if keep else None, **shape)
        outcomes = [o for o in capture(config) if o.path is not None]
        results = ingest_outcomes(store, outcomes)
        table = timings.run_timings(store, [r.run_id for r in results]).set_index("run_id")
        for o, r in zip(outcomes, results):
            found[(mode, o.variant)] = (o.meta, table.loc[r.run_id])
    return found


def _peaks():
    import torch

    return skus.identify(torch.cuda.get_device_name()).device.peaks


def test_every_mode_ran_its_fused_variants_correctly(runs):
    for mode in SHAPES:
        ran = {v for (m, v) in runs if m == mode}
        assert {"sdpa_auto", "flex"} <= ran, (mode, ran)
        for variant in ran:
            meta = runs[(mode, variant)][0]
            assert meta["mode"] == mode and meta["ok"], (mode, variant, meta["rel_error"])


@pytest.mark.parametrize("mode", sorted(SHAPES))
def test_kernel_time_per_call_agrees_with_an_event_timed_loop(runs, mode):
    checked = 0
    for (m, variant), (meta, row) in runs.items():
        if m != mode or variant not in FUSED:
            continue
        timed = row["graph_us_per_call"] if meta["graph_us_per_call"] is not None else row["wall_us_per_call"]
        kernel = row["kernel_us_per_call"]
        assert abs(kernel - timed) <= AGREE * timed, (variant, kernel, timed)
        checked += 1
    assert checked >= 2


def _useful_flops(shape) -> float:
    """Forward FLOPs the causal mask keeps: 2 matmuls of 2·D per kept (query, key) pair."""
    s, heads, d = shape["seq_lens"][0], shape["heads"], shape["head_dim"]
    return 4 * shape["batch"] * heads * d * s * (s + 1) / 2


@pytest.mark.parametrize("mode", ["prefill", "train"])
def test_tflops_stay_under_the_matrix_peak(runs, mode):
    peak = _peaks().tflops["bf16"]
    flops = _useful_flops(SHAPES[mode]) * (3 if mode == "train" else 1)
    for (m, variant), (meta, row) in runs.items():
        if m == mode:
            tflops = flops / (row["kernel_us_per_call"] * 1e-6) / 1e12
            assert 0 < tflops <= peak, (variant, tflops, peak)


def test_decode_tbps_stays_under_the_memory_peak(runs):
    shape = SHAPES["decode"]
    b, kv_heads, heads, d = shape["batch"], shape["kv_heads"], shape["heads"], shape["head_dim"]
    cache = 2 * b * kv_heads * shape["kv_len"] * d * 2  # K and V, bf16, read once
    q_out = 2 * b * heads * shape["seq_lens"][0] * d * 2
    peak_tbps = _peaks().memory_gbps / 1e3
    for (m, variant), (meta, row) in runs.items():
        if m == "decode":
            tbps = (cache + q_out) / (row["kernel_us_per_call"] * 1e-6) / 1e12
            assert 0 < tbps <= peak_tbps, (variant, tbps, peak_tbps)
