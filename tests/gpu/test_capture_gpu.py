"""GPU capture (needs a CUDA GPU; deselected on a machine without one, as in CI).

One small capture of every variant, cold and warm, then each story of the walkthrough is checked
in the trace files themselves (no store here: the GPU machine has no duckdb).
"""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.capture import CaptureConfig, capture  # noqa: E402
from profiler.variants import VARIANTS  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    config = CaptureConfig(batch=2, heads=4, seq_lens=(512,), head_dim=64, dtype="bf16", device="cuda",
                           timing_calls=5, out_dir=out)
    outcomes = capture(config)
    return {(o.variant, o.cold): o for o in outcomes}


def _trace(outcome) -> dict:
    with gzip.open(outcome.path, "rt") as f:
        return json.load(f)


def _events(outcome, cat: str) -> list[dict]:
    return [e for e in _trace(outcome)["traceEvents"] if e.get("cat") == cat]


def _kernel_names(outcome) -> list[str]:
    return [e["name"] for e in _events(outcome, "kernel")]


def test_every_variant_but_the_hub_one_ran_cold_and_warm(runs):
    profiled = {v for (v, cold), o in runs.items() if o.path is not None}
    assert profiled == set(VARIANTS) - {"hub_flash"}
    assert all(cold in (True, False) for _, cold in runs)


def test_hub_flash_is_skipped_with_a_reason(runs):
    reason = runs[("hub_flash", False)].skipped
    assert reason and ("kernels" in reason or "hub" in reason)


@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - {"hub_flash"}))
def test_trace_carries_its_run_metadata_at_top_level(runs, variant):
    for cold in (True, False):
        meta = _trace(runs[(variant, cold)])["attention_run"]
        assert meta["variant"] == variant and meta["cold"] is cold
        assert meta["device"] == "cuda" and meta["seq_len"] == 512 and meta["dtype"] == "bf16"
        assert meta["cuda_ms_median"] > 0 and meta["peak_mem_bytes"] > 0
        assert meta["ok"], f"{variant} rel error {meta['rel_error']}"


def test_naive_copies_the_scores_and_inplace_does_not(runs):
    def copies(variant):
        return [e for e in _events(runs[(variant, False)], "gpu_memcpy") if "DtoD" in e["name"]]
    assert copies("naive")
    assert not copies("naive_inplace")


def test_math_backend_runs_many_kernels_including_softmax(runs):
    names = _kernel_names(runs[("sdpa_math", False)])
    per_step = len(names) / 3
    assert per_step >= 8
    assert any("softmax" in n for n in names)


@pytest.mark.parametrize("variant, needle", [("sdpa_efficient", "fmha"), ("sdpa_flash", "flash_fwd"),
                                             ("flex", "flex_attention")])
def test_fused_backends_run_only_their_attention_kernels(runs, variant, needle):
    names = _kernel_names(runs[(variant, False)])
    assert len(names) >= 3 and all(needle in n for n in names)  # flash may split into splitkv + combine


def test_cold_trace_check_adds_no_gpu_kernels(runs):
    assert _kernel_names(runs[("sdpa_flash", True)]) and all(
        "flash_fwd" in n for n in _kernel_names(runs[("sdpa_flash", True)]))


def test_cudnn_kernels_are_launched_through_the_driver(runs):
    outcome = runs[("sdpa_cudnn", False)]
    kernels = {e["args"]["correlation"]: e["name"] for e in _events(outcome, "kernel")}
    launches = [e for e in _events(outcome, "cuda_driver") if e["name"] == "cuLaunchKernelEx"]
    launched = [kernels[e["args"]["correlation"]] for e in launches if e["args"]["correlation"] in kernels]
    assert any("cudnn" in name for name in launched)


def test_cold_cudnn_call_spends_longer_on_the_cpu_than_a_warm_one(runs):
    cold = runs[("sdpa_cudnn", True)].meta["cold_wall_ms"]
    warm_calls_us = [e["dur"] for e in _events(runs[("sdpa_cudnn", False)], "user_annotation")
                     if e["name"] == "attention:sdpa_cudnn"]
    assert len(warm_calls_us) == 3 and cold > 10 * max(warm_calls_us) / 1000
    assert runs[("sdpa_auto", True)].meta["ran_before"][-1] == "sdpa_cudnn"
