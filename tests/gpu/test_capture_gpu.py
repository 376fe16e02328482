"""GPU capture (needs a CUDA GPU; deselected on a machine without one, as in CI).

One small capture of every variant, cold and warm, each variant in its own fresh processes; then
each story of the walkthrough is checked in the trace files themselves (no store here: a GPU
machine may lack duckdb). Set PROFILER_TEST_COMPILE_CACHE to a folder to keep flashinfer's and
the compilers' builds between test runs (a first flashinfer build takes minutes).
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from profiler.capture.recorder import capture
from profiler.capture.config import CaptureConfig
from profiler.capture.variants import VARIANTS, availability
from profiler.capture.setting import Setting

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def runnable():
    return {a.name for a in availability(Setting(device="cuda")) if a.available}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    keep = os.environ.get("PROFILER_TEST_COMPILE_CACHE")
    config = CaptureConfig(batch=2, heads=4, seq_lens=(512,), head_dim=64, dtype="bf16", device="cuda",
                           timing_calls=5, out_dir=out, compile_cache=Path(keep) if keep else None)
    outcomes = capture(config)
    return {(o.variant, o.cold): o for o in outcomes}


def _trace(outcome) -> dict:
    with gzip.open(outcome.path, "rt") as f:
        return json.load(f)


def _events(outcome, cat: str) -> list[dict]:
    return [e for e in _trace(outcome)["traceEvents"] if e.get("cat") == cat]


def _kernel_names(outcome) -> list[str]:
    return [e["name"] for e in _events(outcome, "kernel")]


def _gpu_memory(outcome) -> list[dict]:
    return [e["args"] for e in _trace(outcome)["traceEvents"]
            if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]


def test_every_available_variant_ran_cold_and_warm(runs, runnable):
    profiled = {v for (v, cold), o in runs.items() if o.path is not None}
    assert profiled == runnable
    assert {"naive", "sdpa_flash", "sdpa_cudnn", "flex"} <= runnable


def test_missing_kernel_packages_say_which_package_and_how_to_install(runs, runnable):
    for name in {"hub_flash", "flash_attn_4", "flashinfer_fa2", "flashinfer_fa3"} - runnable:
        reason = runs[(name, False)].skipped
        assert "package is not installed" in reason and "requirements-kernels.txt" in reason


@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - {"hub_flash", "flash_attn_4"}))
def test_trace_carries_its_run_metadata_and_timings(runs, runnable, variant):
    if variant not in runnable:
        pytest.skip(f"{variant} is not installed here")
    for cold in (True, False):
        meta = _trace(runs[(variant, cold)])["attention_run"]
        assert meta["variant"] == variant and meta["cold"] is cold
        assert meta["device"] == "cuda" and meta["seq_len"] == 512 and meta["dtype"] == "bf16"
        assert meta["ok"], f"{variant} rel error {meta['rel_error']}"
        assert meta["wall_us_per_call"] > 0 and meta["wall_calls"] == (1 if cold else 5)
        assert meta["process"]["fresh"] is True


def test_cold_runs_hold_no_work_of_ours(runs, runnable):
    """No check, and every copy in a cold trace was launched inside the variant's own call (a
    compiler may copy to the host; our check never runs in a profiled cycle)."""
    for name in runnable:
        events = _trace(runs[(name, True)])["traceEvents"]
        assert "check_output" not in {e.get("name") for e in events}
        (call,) = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == f"attention:{name}"]
        launches = {e["args"].get("correlation"): e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
        for copy in (e for e in events if e.get("cat") == "gpu_memcpy"):
            launch = launches[copy["args"]["correlation"]]
            assert call["ts"] <= launch["ts"] <= call["ts"] + call["dur"], (name, copy["name"])


def test_each_cold_run_is_its_own_fresh_process_with_empty_caches(runs, runnable):
    pids = [runs[(name, True)].meta["process"]["pid"] for name in runnable]
    assert len(set(pids)) == len(pids)
    if not os.environ.get("PROFILER_TEST_COMPILE_CACHE"):
        for name in runnable:
            caches = runs[(name, True)].meta["process"]["caches"]
            assert not any(c["warm"] for c in caches.values()), (name, caches)
    for name in runnable:  # the compute cache is always private and empty
        compute = runs[(name, True)].meta["process"]["caches"]["cuda_compute_cache"]
        assert compute["warm"] is False and "ComputeCache" not in compute["path"]
    for name in runnable:  # imports ahead of the turn never touch the GPU another worker measures on
        assert runs[(name, True)].meta["process"]["cuda_initialized_before_turn"] is False, name


def test_warm_runs_have_graph_replay_where_the_variant_allows(runs):
    for name in ("sdpa_flash", "sdpa_cudnn", "naive"):
        meta = runs[(name, False)].meta
        assert meta["graph_us_per_call"] > 0 and meta["graph_calls"] == 5, meta["graph_note"]
        assert meta["graph_us_per_call"] <= meta["wall_us_per_call"] * 1.5


def test_memory_events_show_naive_holding_the_scores_and_flash_not(runs):
    def peak(name):
        return max(a["Total Allocated"] for a in _gpu_memory(runs[(name, False)]))
    scores = 2 * 4 * 512 * 512 * 2  # batch × heads × L² bf16
    assert peak("naive") >= 8 * peak("sdpa_flash")
    assert max(a["Bytes"] for a in _gpu_memory(runs[("naive", False)])) >= scores


def test_naive_copies_the_scores_and_inplace_does_not(runs):
    def copies(variant):
        return [e for e in _events(runs[(variant, False)], "gpu_memcpy") if "DtoD" in e["name"]]
    assert copies("naive")
    assert not copies("naive_inplace")


def test_math_backend_runs_many_kernels_including_softmax(runs):
    names = _kernel_names(runs[("sdpa_math", False)])
    assert len(names) / 3 >= 8
    assert any("softmax" in n for n in names)


@pytest.mark.parametrize("variant, needle", [("sdpa_efficient", "fmha"), ("sdpa_flash", "flash_fwd"),
                                             ("flex", "flex_attention")])
def test_fused_backends_run_only_their_attention_kernels(runs, variant, needle):
    names = _kernel_names(runs[(variant, False)])
    assert len(names) >= 3 and all(needle in n for n in names)


def test_flashinfer_runs_its_own_prefill_kernel(runs, runnable):
    for name in {"flashinfer_fa2", "flashinfer_fa3"} & runnable:
        names = _kernel_names(runs[(name, False)])
        assert any("Prefill" in n or "prefill" in n for n in names), names


def test_cudnn_kernels_are_launched_through_the_driver(runs):
    outcome = runs[("sdpa_cudnn", False)]
    kernels = {e["args"]["correlation"]: e["name"] for e in _events(outcome, "kernel")}
    launches = [e for e in _events(outcome, "cuda_driver") if e["name"] == "cuLaunchKernelEx"]
    launched = [kernels[e["args"]["correlation"]] for e in launches if e["args"]["correlation"] in kernels]
    assert any("cudnn" in name for name in launched)


def test_cold_cudnn_call_spends_longer_on_the_cpu_than_a_warm_one(runs):
    cold = runs[("sdpa_cudnn", True)].meta["wall_us_per_call"]
    warm_calls_us = [e["dur"] for e in _events(runs[("sdpa_cudnn", False)], "user_annotation")
                     if e["name"] == "attention:sdpa_cudnn"]
    assert len(warm_calls_us) == 3 and cold > 10 * max(warm_calls_us)
