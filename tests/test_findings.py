"""Findings on fixture runs built to contain each story, ingested into a real store.

`run_math.json` (fp32 math attention, 2 iterations of 200 µs): per iteration two CUDA-core fp32
xmma GEMMs (8 µs each), a softmax (6 µs), a 32 MiB DtoD copy (10 µs) from aten::clone under
aten::masked_fill, aten::_safe_softmax; 180 µs of CPU op self time -> CPU-bound.
`run_cudnn.json` (bf16 cuDNN SDPA, 2 iterations of 100 µs): per iteration one cuDNN SDPA kernel
(80 µs, 131 KB shared memory, reported 0 %) launched with cuLaunchKernelEx and a 1-block fill
kernel (2 µs, reported 0 %); 30 µs of CPU op self time; the GPU idles 18 % of the iteration.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.analysis.reads import kernel_queries
from profiler.analysis.findings.findings import MAX_FINDINGS, compare_findings, run_findings
from profiler.errors import UnknownRunError
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"


def _math_and_cudnn(path) -> tuple[str, str]:
    store = Store(path)
    return (store.ingest(FIXTURES / "run_math.json", source="captured").run_id,
            store.ingest(FIXTURES / "run_cudnn.json", source="captured").run_id)


@pytest.fixture
def runs(db_path, template_store):
    """(store, math run id, cuDNN run id): a copy of a store ingested once per test process."""
    math, cudnn = template_store("math-and-cudnn-captured", _math_and_cudnn, db_path)
    return Store(db_path), math, cudnn


def _by_kind(findings):
    out = {}
    for f in findings:
        out.setdefault(f.kind, []).append(f)
    return out


def test_memcpy_present_in_one_run_only(runs):
    store, math, cudnn = runs
    (memcpy,) = _by_kind(compare_findings(store, math, cudnn, limit=None))["memcpy"]
    (copy,) = memcpy.evidence["memops"]
    assert copy["run_id"] == math and memcpy.impact_us == 10.0
    assert copy["bytes_per_iter"] == 33554432 and copy["calls_per_iter"] == 1
    assert "32.0 MiB" in memcpy.text and "device to device" in memcpy.text


def test_cuda_core_gemms(runs):
    store, math, cudnn = runs
    (cuda,) = _by_kind(compare_findings(store, math, cudnn, limit=None))["cuda_core_math"]
    ev = cuda.evidence["runs"][math]
    assert list(cuda.evidence["runs"]) == [math]
    assert ev["kernels"][0].startswith("sm80_xmma_gemm_f32f32_f32f32_f32")
    assert ev["gpu_time_share_pct"] == pytest.approx(100 * 16 / 22)  # 2×8 of 22 µs
    assert "fp32" in cuda.text and "CUDA cores" in cuda.text and "72.7%" in cuda.text


def test_zero_occupancy_explained(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn, limit=None))
    (zero,) = kinds["zero_occupancy"]
    (ev,) = zero.evidence["kernels"]
    assert ev["run_id"] == cudnn and ev["kernel"].startswith("cudnn_generated_fort_native_sdpa")
    # 134144 + 1024 B -> 1 block per SM; 168 regs × 384 threads -> 1 block: 384 / 2048 threads
    assert (ev["occupancy_theoretical_pct"], ev["blocks_per_sm"]) == (18.75, 1)
    assert ev["occupancy_limiter"] == "registers + shared memory"
    assert "131.0 KiB" in zero.text and "48.0 KiB" in zero.text and "18.8%" in zero.text
    assert "a tensor-core attention kernel in fp16/bf16" in zero.text
    (tiny,) = [f for f in run_findings(store, cudnn) if f.kind == "tiny_grid"]
    assert len(tiny.evidence["kernels"]) == 1 and "FillFunctor" in tiny.evidence["kernels"][0]


def test_verdicts_state_their_numbers(runs):
    store, math, cudnn = runs
    (bound,) = _by_kind(compare_findings(store, math, cudnn, limit=None))["bound"]
    ev = bound.evidence["runs"]
    # math: 200 µs steps, 32 µs of GPU work, the launching thread's ops and calls cover 130 µs
    # (its 180 µs "attention::math" annotation is a label, not recorded CPU time), never in a sync
    assert ev[math]["bound"] == "cpu" and ev[math]["gpu_busy_us_per_iter"] == 32
    assert (ev[math]["gpu_busy_pct"], ev[math]["gpu_idle_pct"]) == (16.0, 84.0)
    assert ev[math]["cpu_busy_us_per_iter"] == 130
    assert ev[cudnn]["gpu_busy_us_per_iter"] == 82 and ev[cudnn]["gpu_idle_pct"] == 18.0
    assert "runs work 16.0% of it (all of it launched in the iteration) and is idle 84.0%" in bound.text and bound.impact_us == 168.0
    # cudnn: 18 µs idle over 6 recorded CPU events per step: 3 µs each, the profiler's own cost
    assert ev[cudnn]["profiler_overhead_likely"] and not ev[math]["profiler_overhead_likely"]
    assert "profiler's own overhead may be the cause" in bound.text


def test_launch_api_and_cpu_ops_in_one_run_only(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn, limit=None))
    (launch,) = kinds["launch_api"]
    assert launch.evidence["apis"] == {math: {"cudaMemcpyAsync": 1.0}, cudnn: {"cuLaunchKernelEx": 1.0}}
    (cpu_ops,) = kinds["cpu_ops"]
    ops = cpu_ops.evidence["ops"]
    assert {"aten::masked_fill", "aten::_safe_softmax", "aten::clone"} <= set(ops[math])
    assert "aten::_scaled_dot_product_cudnn_attention" in ops[cudnn]


def test_counts_and_gpu_time(runs):
    store, math, cudnn = runs
    kinds = _by_kind(compare_findings(store, math, cudnn, limit=None))
    (count,) = _by_kind(run_findings(store, math))["kernels_per_iteration"]
    assert count.evidence["kernels_per_iter"] == {math: 3.0}
    (gpu,) = kinds["gpu_time"]
    assert gpu.evidence["gpu_work_us_per_iter"] == {math: 32.0, cudnn: 82.0}
    assert gpu.evidence["ratio"] == pytest.approx(82 / 32, abs=1e-3)
    assert "launches 32.0 µs of GPU work per iteration against 82.0 µs" in gpu.text
    assert gpu.text.endswith("(2.6× faster).")


def test_findings_are_sentences_with_json_evidence(runs):
    store, math, cudnn = runs
    for finding in compare_findings(store, math, cudnn) + run_findings(store, math):
        assert finding.text.endswith(".") and len(finding.text) < 1200
        json.dumps(finding.evidence, allow_nan=False)
        assert "nan" not in finding.text.lower().replace("nanosecond", "")


def test_findings_ranked_by_impact_capped_and_grouped(runs):
    store, math, cudnn = runs
    found = compare_findings(store, math, cudnn)
    assert len(found) <= MAX_FINDINGS and len({f.kind for f in found}) == len(found)
    assert [f.kind for f in found[:2]] == ["gpu_time", "kernel_delta"]
    impacts = [f.impact_us for f in found[2:]]
    assert impacts == sorted(impacts, reverse=True)
    (delta,) = _by_kind(found)["kernel_delta"]   # the largest GPU-time change is always named
    assert delta.evidence["kernel"].startswith("cudnn_generated") and delta.evidence["us_delta"] == 80


def test_unknown_run_is_a_clear_error(runs):
    store, math, _ = runs
    with pytest.raises(UnknownRunError, match="run nosuchrun is not in the store"):
        compare_findings(store, math, "nosuchrun")


@pytest.mark.third_party
def test_real_h100_trace_zero_occupancy_gemm(db_path):
    store = Store(db_path)
    run = store.ingest(SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").run_id
    (zero,) = [f for f in run_findings(store, run) if f.kind == "zero_occupancy"]
    gemm = [k for k in zero.evidence["kernels"] if k["kernel"].startswith("sm90_xmma_gemm_bf16bf16")]
    assert gemm, zero.text
    # 231424 B + 1 KB reserved fills the 228 KB SM: one 384-thread block (12 warps of 64) per SM, as
    # Nsight Compute counts theoretical occupancy (per SM: its usual grid of 120 blocks leaves 12 of
    # 132 SMs empty, which lowers the GPU's average, not an SM's occupancy). The finding states the
    # Kernels table's figure (one figure: issue 35)
    assert gemm[0]["blocks_per_sm"] == 1
    details = kernel_queries.kernel_details(store, [run]).set_index("kernel")
    table = float(details.loc[gemm[0]["kernel"], "theory_occupancy_pct"])
    assert gemm[0]["occupancy_theoretical_pct"] == pytest.approx(table)
    assert table == pytest.approx(100 * 12 / 64) and f"{table:.1f}% theoretical occupancy" in zero.text
    assert gemm[0]["engine"] == "tensor core"


def test_runs_within_five_percent_read_as_about_the_same(db_path):
    store = Store(db_path)
    base = json.loads((Path(__file__).parent / "fixtures" / "tiny_naive.json").read_text())
    a = store.ingest(json.dumps(base).encode(), "a.json").run_id
    b = store.ingest(json.dumps(dict(base, traceName="copy")).encode(), "b.json").run_id
    texts = [f.text for f in compare_findings(store, a, b) if f.kind == "gpu_time"]
    assert len(texts) == 1 and "about the same GPU work per iteration" in texts[0]
    assert "×" not in texts[0]


def test_a_modest_gain_reads_as_a_percentage(db_path):
    store = Store(db_path)
    fixtures = Path(__file__).parent / "fixtures"
    naive = store.ingest(fixtures / "tiny_naive.json").run_id
    inplace = store.ingest(fixtures / "tiny_inplace.json").run_id
    (gpu,) = [f for f in compare_findings(store, naive, inplace) if f.kind == "gpu_time"]
    # per iteration: naive 30.125 + 4 + 10 (memcpy) + 25 over 2 steps = 34.5625 µs (the 1 µs memset
    # has no launch call in the trace: launched before profiling, carried, not the step's own);
    # in-place lacks the 10 µs copy: 29.5625 µs, so 14% less GPU time
    assert gpu.text.endswith("(14% less GPU time).") and "29.6 µs" in gpu.text
