"""Cost-model findings on the H200 samples, checked against plain-json counts and hand formulas."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.findings import findings, why
from tests.conftest import SAMPLES

B, H, N, D, BF16 = 8, 16, 1024, 64, 2


def _events(variant: str) -> list[dict]:
    path = SAMPLES / "default" / f"{variant}_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
    return json.load(gzip.open(path))["traceEvents"]


def _launching_ops(events: list[dict]) -> list[str]:
    """Plain json: names of the CPU ops of the first ProfilerStep whose External id a launch carries."""
    step = min((e for e in events if e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
    launched = {e["args"].get("External id") for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    ops = [e for e in events if e.get("cat") == "cpu_op" and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
           and e["args"].get("External id") in launched]
    return [e["name"] for e in sorted(ops, key=lambda e: e["ts"])]


def _finding(found, kind):
    (one,) = [f for f in found if f.kind == kind]
    return one


def test_naive_bytes_and_score_matrix(sample_store):
    store, ids = sample_store
    launching = _launching_ops(_events("naive"))
    assert launching == ["aten::bmm", "aten::mul", "aten::fill_", "aten::triu", "aten::copy_",
                         "aten::masked_fill_", "aten::_softmax", "aten::bmm"]
    score, qkv = B * H * N * N * BF16, B * H * N * D * BF16
    gemm = 2 * qkv + score                      # two operands read, result written
    # mul, copy_, masked_fill_, _softmax read and write the score matrix; triu reads and writes
    # the bool mask that fill_ wrote
    naive = 2 * gemm + 4 * 2 * score + 2 * N * N + N * N
    flash = 4 * qkv
    found = _finding(why.compare(store, ids["naive"], ids["sdpa_flash"]), "bytes_moved")
    assert found.evidence["bytes_per_iter"] == {ids["naive"]: naive, ids["sdpa_flash"]: flash}
    assert found.evidence["score_matrix"]["bytes"] == score
    assert f"{naive / flash:.1f}x" in found.text and "8×16×1024×1024 bf16 score matrix" in found.text
    assert found.evidence["page"] == "attention"


def test_math_gemms_fp32_on_cuda_cores(sample_store):
    store, ids = sample_store
    events = _events("sdpa_math")
    gemm_us = [e["dur"] for e in events if e.get("cat") == "kernel" and "xmma_gemm_f32f32" in e["name"]]
    flops = len(gemm_us) * 2 * (B * H) * N * N * D            # each GEMM: 2 M N K per batch entry
    found = _finding(why.one_run(store, ids["sdpa_math"]), "fp32_cuda_core_gemm")
    assert found.evidence["tflops"] == pytest.approx(flops / (sum(gemm_us) * 1e-6) / 1e12, rel=1e-6)
    assert found.evidence["peak_tflops"] == 66.9
    assert "2 GEMMs per iteration in fp32 on CUDA cores" in found.text
    assert all("ffma" in k for k in found.evidence["kernel_facts"])


def test_cudnn_wgmma_sm90_against_flash_sm80(sample_store):
    store, ids = sample_store
    found = _finding(findings.compare_findings(store, ids["sdpa_cudnn"], ids["sdpa_flash"]), "kernel_arch")
    assert "cuDNN, sm90, wgmma" in found.text and "FlashAttention-2 (PyTorch), sm80, mma" in found.text
    assert "cudnn_generated" in found.evidence["kernels"][ids["sdpa_cudnn"]]
    # same bytes: no bytes finding between two fused kernels
    assert not [f for f in why.compare(store, ids["sdpa_cudnn"], ids["sdpa_flash"]) if f.kind == "bytes_moved"]


@pytest.mark.third_party
def test_a_model_trace_with_fused_attention_has_no_score_matrix(tmp_path):
    # Qwen's MLP also writes a tensor that a mul re-reads and a GEMM reads, but through 2-D weights
    from profiler.analysis.reads import op_costs
    from profiler.storage.store import Store
    from tests.conftest import SHARED_TRACES
    store = Store(tmp_path / "q.duckdb")
    run = store.ingest(SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").run_id
    assert why.score_matrix(op_costs.op_calls(store, [run])) is None
