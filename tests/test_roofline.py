"""Roofline: attention FLOPs and bytes from shape, checked by hand; achieved vs datasheet peak."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from profiler.gpus import builtin_device
from profiler.roofline import (AttentionShape, RooflineError, attention_flops, attention_min_bytes,
                               roofline_frame, roofline_point, roofline_table,
                               crossovers, sweep_table)
from profiler.findings import sweep_findings
from profiler.store import Store
from tests.conftest import SHARED_TRACES

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"

H200 = builtin_device("NVIDIA H200")


def test_flops_non_causal_by_hand():
    # 2 matmuls * 2 FLOPs * (2*4*1024*1024 scores) * 64 = 4 * 8,388,608 * 64
    shape = AttentionShape(2, 4, 1024, 64, "bfloat16", causal=False)
    assert attention_flops(shape) == 2_147_483_648


def test_causal_counts_the_lower_triangle_with_diagonal():
    shape = AttentionShape(1, 1, 4, 8, "float16", causal=True)
    assert attention_flops(shape) == 4 * (4 + 3 + 2 + 1) * 8  # rows see 1, 2, 3, 4 keys
    rect = AttentionShape(1, 1, 3, 8, "float16", causal=True, seq_len_kv=5)
    assert attention_flops(rect) == 4 * (1 + 2 + 3) * 8


def test_min_bytes_reads_qkv_and_writes_o_once():
    shape = AttentionShape(2, 4, 1024, 64, "bfloat16", causal=True)
    assert attention_min_bytes(shape) == 4 * (2 * 4 * 1024 * 64) * 2
    fp32 = AttentionShape(2, 4, 1024, 64, "torch.float32", causal=True)
    assert attention_min_bytes(fp32) == 2 * attention_min_bytes(shape)


def test_point_against_h200_datasheet():
    shape = AttentionShape(2, 4, 1024, 64, "bfloat16", causal=False)
    point = roofline_point(shape, gpu_time_ns=100_000, device=H200)
    assert point.achieved_tflops == pytest.approx(2_147_483_648 / 1e-4 / 1e12)
    assert point.achieved_gbps == pytest.approx(4_194_304 / 1e-4 / 1e9)
    assert point.peak_tflops == 989.4 and point.peak_gbps == 4800
    intensity = 2_147_483_648 / 4_194_304  # 512 FLOP/byte: above the ridge (989.4/4.8 = 206)
    assert point.intensity_flop_per_byte == intensity
    assert point.bound == "compute" and point.bound_tflops == 989.4
    assert point.pct_of_bound == pytest.approx(100 * point.achieved_tflops / 989.4)
    assert "datasheet" in point.peak_source


def test_memory_bound_when_intensity_is_low():
    shape = AttentionShape(1, 1, 16, 64, "float32", causal=False)
    point = roofline_point(shape, 1000, H200)
    assert point.bound == "memory"
    assert point.bound_tflops == pytest.approx(point.intensity_flop_per_byte * 4800 / 1e3)


def test_unknown_device_gives_numbers_without_peaks():
    point = roofline_point(AttentionShape(1, 1, 16, 64, "float16", False), 1000, None)
    assert point.peak_tflops is None and point.pct_of_bound is None and point.achieved_tflops > 0


@pytest.mark.parametrize("kwargs,message", [
    (dict(batch=0), "batch must be a positive integer"),
    (dict(dtype="int4"), "unknown dtype 'int4'"),
])
def test_bad_shapes_raise_clear_errors(kwargs, message):
    base = dict(batch=1, heads=1, seq_len=16, head_dim=64, dtype="float16", causal=False) | kwargs
    with pytest.raises(RooflineError, match=message):
        AttentionShape(**base)
    with pytest.raises(RooflineError, match="GPU time must be positive"):
        roofline_point(AttentionShape(1, 1, 16, 64, "float16", False), 0, H200)


def test_frame_keeps_bad_runs_as_error_rows():
    runs = pd.DataFrame([
        dict(trace_id="a", variant="flash", batch=1, heads=2, seq_len=128, head_dim=64,
             dtype="bfloat16", causal=True, gpu_time_ns=5000),
        dict(trace_id="b", variant="math", batch=None, heads=2, seq_len=128, head_dim=64,
             dtype="bfloat16", causal=True, gpu_time_ns=5000),
    ])
    out = roofline_frame(runs, lambda run: H200).set_index("trace_id")
    assert out.loc["a", "flops"] == 4 * 2 * (128 * 129 // 2) * 64
    assert out.loc["b", "error"].startswith("run b:")


@pytest.mark.third_party
def test_roofline_table_from_the_store(db_path):
    store = Store(db_path)
    cudnn = store.ingest(FIXTURES / "run_cudnn.json").trace_id
    amd = store.ingest(SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz").trace_id
    out = roofline_table(store, [cudnn, amd]).set_index("trace_id")
    # 4 × 8 heads × 512 × 513 / 2 scores × 4 × 64 in 82 µs (80 µs SDPA + 2 µs fill) per iteration
    flops = 4 * (4 * 8 * 512 * 513 // 2) * 64
    assert out.loc[cudnn, "flops"] == flops and out.loc[cudnn, "gpu_time_ns"] == 82_000
    assert out.loc[cudnn, "achieved_tflops"] == pytest.approx(flops / 82e-6 / 1e12)
    assert out.loc[cudnn, "peak_tflops"] == 989.4 and out.loc[cudnn, "precision"] == "bf16"
    assert "has no attention shape" in out.loc[amd, "error"]


def _sweep_trace(variant: str, seq_len: int, kernel_us: float, cold: bool = False) -> bytes:
    """A minimal captured trace: one iteration of 500 µs with one kernel and one 5 µs CPU op."""
    meta = {"variant": variant, "batch": 1, "heads": 8, "seq_len": seq_len, "head_dim": 64,
            "dtype": "bfloat16", "causal": False, "cold": cold}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 100, "dur": 500, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::attention", "pid": 1, "tid": 1, "ts": 101,
         "dur": 5, "args": {"External id": 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 102, "dur": 2, "args": {"External id": 2, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": f"{variant}_kernel", "pid": 0, "tid": 7, "ts": 110,
         "dur": kernel_us, "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 2}},
    ]
    return json.dumps({"schemaVersion": 1, "attention_run": meta, "traceEvents": events}).encode()


@pytest.fixture
def sweep_store(db_path):
    store = Store(db_path)
    ids = [store.ingest(_sweep_trace(v, n, us), name=f"{v}-{n}").trace_id for v, n, us in [
        ("math", 256, 10.0), ("math", 1024, 100.0), ("math", 4096, 900.0),
        ("flash", 256, 20.0), ("flash", 1024, 40.0), ("flash", 4096, 200.0),
        ("flash2", 256, 20.5), ("flash2", 1024, 39.9), ("flash2", 4096, 200.0)]]  # a tie in noise
    ids.append(store.ingest(_sweep_trace("flash", 256, 99.0, cold=True), name="cold").trace_id)
    return store, ids


def test_sweep_table_and_crossover(sweep_store):
    store, ids = sweep_store
    sweep = sweep_table(store, ids)
    assert len(sweep) == 9  # the cold run is left out
    flash = sweep[sweep["variant"] == "flash"].set_index("seq_len")
    assert flash.loc[256, "gpu_busy_us_per_iter"] == 20.0 and flash.loc[256, "cpu_busy_us_per_iter"] == 5.0
    crossed = crossovers(sweep)  # math crosses flash and flash2; flash vs flash2 is within 5 %
    assert sorted(zip(crossed["variant_a"], crossed["variant_b"])) == [("flash", "math"), ("flash2", "math")]
    cross = crossed[crossed["variant_a"] == "flash"].iloc[0]
    assert (cross["seq_len_lo"], cross["seq_len_hi"]) == (256, 1024)
    assert (cross["faster_below"], cross["faster_above"]) == ("math", "flash")
    assert len(crossovers(sweep, min_gap=0.0)) == 3


def test_sweep_finding_sentence(sweep_store):
    store, ids = sweep_store
    finding = [f for f in sweep_findings(store, ids) if f.evidence["variant_a"] == "flash"][0]
    assert finding.kind == "crossover"
    assert finding.text == ("math is faster at L=256 (10.0 vs 20.0 µs GPU busy per iteration) but flash "
                            "is faster at L=1024 (40.0 vs 100.0 µs): they cross over between "
                            "these lengths.")
    json.dumps(finding.evidence, allow_nan=False)
