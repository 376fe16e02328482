"""Findings on fixture runs built to contain each story, ingested into a real store.

`run_math.json` (fp32 math attention, 2 iterations of 200 µs): per iteration two CUDA-core fp32
xmma GEMMs (8 µs each), a softmax (6 µs), a 32 MiB DtoD copy (10 µs) from aten::clone under
aten::masked_fill, aten::_safe_softmax; 180 µs of CPU op self time -> CPU-bound.
`run_cudnn.json` (bf16 cuDNN SDPA, 2 iterations of 100 µs): per iteration one cuDNN SDPA kernel
(80 µs, 131 KB shared memory, reported 0 %) launched with cuLaunchKernelEx and a 1-block fill
kernel (2 µs, reported 0 %); 30 µs of CPU op self time -> GPU-bound.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.errors import UnknownRunError
from profiler.findings import compare_findings, run_findings
from profiler.store import Store
from tests.conftest import SHARED_TRACES

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"


@pytest.fixture
def runs(db_path):
    store = Store(db_path)
    math = store.ingest(FIXTURES / "run_math.json", source="captured").trace_id
    cudnn = store.ingest(FIXTURES / "run_cudnn.json", source="captured").trace_id
    return store, math, cudnn


def _by_kind(findings):
    out = {}
    for f in findings:
        out.setdefault(f.kind, []).append(f)
    return out


def test_memcpy_present_in_one_run_only(runs):
    store, math, cudnn = runs
    (memcpy,) = _by_kind(compare_findings(store, math, cudnn))["memcpy"]
    assert memcpy.evidence["run_id"] == math
    assert memcpy.evidence["bytes_per_iter"] == 33554432 and memcpy.evidence["calls_per_iter"] == 1
    assert "32.0 MiB" in memcpy.text and "device to device" in memcpy.text


def test_cuda_core_gemms(runs):
    store, math, cudnn = runs
    (cuda,) = _by_kind(compare_findings(store, math, cudnn))["cuda_core_math"]
    assert cuda.evidence["run_id"] == math
    assert cuda.evidence["kernels"][0].startswith("sm80_xmma_gemm_f32f32_f32f32_f32")
    assert cuda.evidence["gpu_time_share_pct"] == pytest.approx(100 * 16 / 22)  # 2×8 of 22 µs
    assert "fp32" in cuda.text and "CUDA cores" in cuda.text


def test_zero_occupancy_explained(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn))
    (zero,) = kinds["zero_occupancy"]
    ev = zero.evidence
    assert ev["run_id"] == cudnn and ev["kernel"].startswith("cudnn_generated_fort_native_sdpa")
    # 134144 + 1024 B -> 1 block per SM; 168 regs × 384 threads -> 1 block: 384 / 2048 threads
    assert (ev["occupancy_theoretical_pct"], ev["blocks_per_sm"]) == (18.75, 1)
    assert ev["occupancy_limiter"] == "registers + shared memory"
    assert "131 KB" in zero.text and "tensor-core attention kernel in fp16/bf16" in zero.text
    (tiny,) = kinds["tiny_grid"]
    assert len(tiny.evidence["kernels"]) == 1 and "FillFunctor" in tiny.evidence["kernels"][0]


def test_cpu_bound_and_gpu_bound(runs):
    store, math, cudnn = runs
    bound = {f.evidence["run_id"]: f for f in _by_kind(compare_findings(store, math, cudnn))["cpu_bound"]}
    assert bound[math].evidence["cpu_bound"] and bound[math].evidence["cpu_op_us_per_iter"] == 180
    assert bound[math].evidence["gpu_us_per_iter"] == 32 and "busy only 16%" in bound[math].text
    assert not bound[cudnn].evidence["cpu_bound"] and bound[cudnn].evidence["gpu_us_per_iter"] == 82


def test_launch_api_and_cpu_ops_in_one_run_only(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn))
    apis = {f.evidence["run_id"]: f.evidence["apis"] for f in kinds["launch_api"]}
    assert apis == {math: {"cudaMemcpyAsync": 1.0}, cudnn: {"cuLaunchKernelEx": 1.0}}
    ops = {f.evidence["run_id"]: f.evidence["ops"] for f in kinds["cpu_ops"]}
    assert {"aten::masked_fill", "aten::_safe_softmax", "aten::clone"} <= set(ops[math])
    assert "aten::_scaled_dot_product_cudnn_attention" in ops[cudnn]


def test_counts_and_gpu_time(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn))
    (count,) = kinds["kernels_per_iteration"]
    assert count.evidence["kernels_per_iter"] == {math: 3.0, cudnn: 2.0}
    (gpu,) = kinds["gpu_time"]
    assert gpu.evidence["gpu_us_per_iter"] == {math: 32.0, cudnn: 82.0}
    assert gpu.evidence["ratio"] == pytest.approx(82 / 32, abs=1e-3)
    assert "needs 32.0 µs of GPU time per iteration against 82.0 µs" in gpu.text
    assert gpu.text.endswith("(2.6× faster).")


def test_findings_are_sentences_with_json_evidence(runs):
    store, math, cudnn = runs
    for finding in compare_findings(store, math, cudnn) + run_findings(store, math):
        assert finding.text.endswith(".") and len(finding.text) < 600
        json.dumps(finding.evidence)


def test_unknown_run_is_a_clear_error(runs):
    store, math, _ = runs
    with pytest.raises(UnknownRunError, match="run nosuchrun is not in the store"):
        compare_findings(store, math, "nosuchrun")


@pytest.mark.third_party
def test_real_h100_trace_zero_occupancy_gemm(db_path):
    store = Store(db_path)
    run = store.ingest(SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").trace_id
    zero = [f for f in run_findings(store, run) if f.kind == "zero_occupancy"]
    gemm = [f for f in zero if f.evidence["kernel"].startswith("sm90_xmma_gemm_bf16bf16")]
    assert gemm, [f.text for f in zero]
    # 231424 B + 1 KB reserved fills the 228 KB SM: one 384-thread block; its usual grid of 120
    # blocks leaves 12 of 132 SMs empty: 120 / 132 × 384 / 2048
    assert gemm[0].evidence["blocks_per_sm"] == 1
    assert gemm[0].evidence["occupancy_theoretical_pct"] == pytest.approx(100 * 120 / 132 * 384 / 2048)
    assert gemm[0].evidence["tensor_cores"] == "tensor core"


def test_runs_within_five_percent_read_as_about_the_same(db_path):
    store = Store(db_path)
    base = json.loads((Path(__file__).parent / "fixtures" / "tiny_naive.json").read_text())
    a = store.ingest(json.dumps(base).encode(), "a.json").trace_id
    b = store.ingest(json.dumps(dict(base, traceName="copy")).encode(), "b.json").trace_id
    texts = [f.text for f in compare_findings(store, a, b) if f.kind == "gpu_time"]
    assert len(texts) == 1 and "about the same GPU time per iteration" in texts[0]
    assert "×" not in texts[0]


def test_a_modest_gain_reads_as_a_percentage(db_path):
    store = Store(db_path)
    fixtures = Path(__file__).parent / "fixtures"
    naive = store.ingest(fixtures / "tiny_naive.json").trace_id
    inplace = store.ingest(fixtures / "tiny_inplace.json").trace_id
    (gpu,) = [f for f in compare_findings(store, naive, inplace) if f.kind == "gpu_time"]
    # per iteration: naive 30.125 + 4 + 10 (memcpy) + 25 + 1 (memset) over 2 steps = 35.0625 µs;
    # in-place lacks the 10 µs copy: 30.0625 µs, so 14% less GPU time
    assert gpu.text.endswith("(14% less GPU time).") and "30.1 µs" in gpu.text
