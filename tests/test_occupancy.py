"""Occupancy calculator: hand-computed cases, and every reported value in the real traces."""
from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import pytest

from profiler.analysis.model.gpus import builtin_device, device_from_trace, resolve_device
from profiler.analysis.model.occupancy import Launch, kineto_estimate_pct, occupancy

from tests.conftest import HAVE_SHARED, ROOT, SAMPLES, SHARED_TRACES, real_traces

# third-party traces (when present), then our own H200 captures (data/samples)
TRACE_FILES = [str(p) for p in real_traces()] + sorted(
    str(p.relative_to(ROOT)) for p in SAMPLES.rglob("*.json*"))

V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 98304, "numSms": 80, "sharedMemPerBlockOptin": 98304}
H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
        "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536,
        "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}


def test_warp_limited_full_occupancy():
    result = occupancy(Launch(128, 16, 0, 17888), device_from_trace(H100))
    # warps: 64 per SM / 4 per block = 16 blocks; registers allow 32; shared memory (1 KB
    # reserved) 228; block limit 32 -> 16 blocks * 128 threads / 2048 = 100 %
    assert result.block_limits == {"warps": 16, "registers": 32, "shared memory": 228, "blocks": 32}
    assert (result.occupancy_pct, result.limiter) == (100.0, "warps")


def test_register_limited():
    result = occupancy(Launch(256, 128, 0, 10_000), device_from_trace(V100))
    # 128 regs * 32 = 4096 per warp; 16384 per sub-partition -> 4 warps * 4 = 16 warps; 8 per block
    assert result.block_limits["registers"] == 2
    assert (result.occupancy_pct, result.limiter) == (25.0, "registers")


def test_shared_memory_granularity_differs_by_architecture():
    launch = Launch(64, 16, 10_000, 100_000)
    volta = occupancy(launch, device_from_trace(V100))   # ceil(10000, 256) = 10240 -> 98304 // 10240
    hopper = occupancy(launch, device_from_trace(H100))  # ceil(10000 + 1024, 128) = 11136 -> 20
    assert (volta.active_blocks_per_sm, volta.limiter) == (9, "shared memory")
    assert volta.occupancy_pct == pytest.approx(28.125)
    assert (hopper.active_blocks_per_sm, hopper.occupancy_pct) == (20, 62.5)


def test_opt_in_shared_memory_is_zero_for_kineto_but_not_in_reality():
    launch = Launch(128, 32, 100_000, 1000)
    real = occupancy(launch, device_from_trace(H100))  # 101120 allocated -> 2 blocks per SM
    assert (real.active_blocks_per_sm, real.limiter, real.occupancy_pct) == (2, "shared memory", 12.5)
    assert kineto_estimate_pct(launch, device_from_trace(H100)) == 0
    assert occupancy(launch, device_from_trace(H100), optin=False).occupancy_pct == 0.0


def test_grid_too_small_lowers_the_average_not_the_theoretical_per_sm():
    """As Nsight Compute defines it, theoretical occupancy is per SM from the limiter (16 blocks of
    4 warps here: 100 %); 66 blocks on 132 SMs average 0.5 blocks per SM over the GPU (3.125 %)."""
    result = occupancy(Launch(128, 16, 0, 66), device_from_trace(H100))
    assert (result.blocks_per_sm, result.limiter, result.occupancy_pct) == (0.5, "warps", 100.0)
    assert result.grid_limited and result.grid_average_pct == 3.125
    assert kineto_estimate_pct(Launch(128, 16, 0, 66), device_from_trace(H100)) == 3


def test_block_limit_and_tied_limiters():
    tiny = occupancy(Launch(32, 16, 0, 100_000), device_from_trace(H100))
    assert (tiny.active_blocks_per_sm, tiny.limiter, tiny.occupancy_pct) == (32, "blocks", 50.0)
    tied = occupancy(Launch(1024, 32, 0, 100_000), device_from_trace(H100))
    assert tied.limiter == "warps + registers"


def test_block_that_cannot_fit_registers_reads_zero_with_reason():
    result = occupancy(Launch(1024, 255, 0, 1000), device_from_trace(H100))
    assert (result.occupancy_pct, result.limiter) == (0.0, "registers")
    assert "does not fit" in result.reason


def test_not_computable_says_why():
    assert "not in the built-in table" in occupancy(Launch(128, 16, 0, 1), None).reason
    amd = builtin_device("AMD Instinct MI300X")
    assert occupancy(Launch(256, 0, 0, 1), amd).occupancy_pct is None
    assert "registers" in occupancy(Launch(128, None, 0, 1), device_from_trace(H100)).reason


def test_builtin_table_matches_real_device_properties():
    for props in (V100, H100):
        real, table = device_from_trace(props), builtin_device(props["name"])
        for field in ("num_sms", "shared_mem_per_sm_bytes", "shared_mem_per_block_optin_bytes",
                      "regs_per_sm", "max_threads_per_sm", "compute_major"):
            assert getattr(real, field) == getattr(table, field), (props["name"], field)
    assert builtin_device("NVIDIA H200").peaks.memory_gbps > builtin_device("H100 80GB HBM3").peaks.memory_gbps
    assert resolve_device(None, 0, "NVIDIA L4").name == "NVIDIA L4"
    assert builtin_device("Some Unknown Accelerator") is None


def test_trace_list_has_captured_traces():
    assert sum(1 for f in TRACE_FILES if f.startswith("data/samples")) >= 50


@pytest.mark.third_party
def test_trace_list_has_third_party_traces():
    assert HAVE_SHARED and sum(1 for f in TRACE_FILES if f.startswith(str(SHARED_TRACES))) >= 5


@lru_cache(maxsize=None)
def _trace(name: str):
    path = Path(name) if Path(name).is_absolute() else ROOT / name
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def _kernels(doc):
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    return [e for e in events if str(e.get("cat", "")).lower() == "kernel"]


def _launch(args) -> Launch:
    (bx, by, bz), (gx, gy, gz) = args["block"], args["grid"]
    return Launch(bx * by * bz, args["registers per thread"], args["shared memory"], gx * gy * gz)


@pytest.mark.parametrize("name", TRACE_FILES, ids=[Path(f).name[:40] for f in TRACE_FILES])
def test_every_reported_occupancy_in_real_traces(name):
    doc = _trace(name)
    props = [] if isinstance(doc, list) else doc.get("deviceProperties", [])
    reported = [k for k in _kernels(doc) if k["args"].get("est. achieved occupancy %")]
    if not reported:  # ROCm and 2020-era traces carry no occupancy at all; some captures only 0s
        assert {k["args"].get("est. achieved occupancy %") for k in _kernels(doc)} <= {None, 0}
        return
    for kernel in reported:
        args = kernel["args"]
        device = resolve_device(props, args["device"], None)
        launch, want = _launch(args), args["est. achieved occupancy %"]
        assert kineto_estimate_pct(launch, device) == want, kernel["name"]
        assert abs(occupancy(launch, device).grid_average_pct - want) <= 0.5 + 1e-6, kernel["name"]   # Kineto averages over the GPU


@pytest.mark.parametrize("name", TRACE_FILES, ids=[Path(f).name[:40] for f in TRACE_FILES])
def test_zero_reported_occupancy_is_explained(name):
    doc = _trace(name)
    props = [] if isinstance(doc, list) else doc.get("deviceProperties", [])
    for kernel in _kernels(doc):
        args = kernel["args"]
        if args.get("est. achieved occupancy %") != 0:
            continue
        device = resolve_device(props, args["device"], None)
        launch = _launch(args)
        assert kineto_estimate_pct(launch, device) == 0, kernel["name"]
        real = occupancy(launch, device)
        assert real.occupancy_pct > 0, kernel["name"]  # every such kernel really ran with warps
        assert real.grid_limited or launch.shared_mem_bytes > device.shared_mem_per_block_bytes
