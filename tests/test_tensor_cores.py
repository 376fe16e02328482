"""Engine classifier on real kernel names (NVIDIA and AMD) and on today's kernels named in the
issue. `top30_kernels.csv` holds the 30 kernels with the most GPU time of every trace in
../shared/traces and data/samples, each checked by hand against the rules (the CSV is the
expected value, not the classifier's output)."""
from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from profiler.analysis.model import tensor_cores
from profiler.analysis.model.tensor_cores import (AMD, COMM, CUDA, MATRIX_AMD, NVIDIA, TENSOR, UNKNOWN, VECTOR_AMD,
                                   classify, classify_frame, vendor_of)
from tests.conftest import HAVE_SHARED, SAMPLES, SHARED_TRACES

TOP30 = Path(__file__).parent / "fixtures" / "analysis" / "top30_kernels.csv"
TABLE = Path(__file__).parent / "fixtures" / "analysis" / "kernel_names.csv"
H200_TABLE = Path(__file__).parent / "fixtures" / "analysis" / "h200_kernel_names.csv"


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


REAL = _rows(TABLE) + _rows(H200_TABLE)  # shared third-party traces + our H200 captures


@pytest.mark.parametrize("row", REAL, ids=[f"{r['trace'][:12]}:{r['name'][:50]}" for r in REAL])
def test_real_kernel_names(row):
    got = classify(row["name"], AMD if "amd" in row["trace"] else NVIDIA)
    assert (got.engine, got.precision or "", got.op) == (row["engine"], row["precision"], row["op"])


def test_real_table_covers_every_story():
    engines = {(r["engine"], r["op"]) for r in REAL}
    assert {(TENSOR, "attention"), (TENSOR, "gemm"), (CUDA, "gemm"), (CUDA, "conv"),
            (COMM, "communication"), (CUDA, "other"), (MATRIX_AMD, "gemm"),
            (VECTOR_AMD, "other")} <= engines
    assert len(REAL) > 250
    assert {(TENSOR, "bf16", "gemm"), (CUDA, "fp32", "gemm"), (TENSOR, "fp16/bf16", "attention"),
            (UNKNOWN, "", "attention")} <= {(r["engine"], r["precision"], r["op"]) for r in REAL}


# Kernel names of today's libraries, as they appear in public profiles (issue 5's list).
MODERN = [
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", TENSOR, "bf16", "gemm"),
    ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopB_NNT", TENSOR, "fp16", "gemm"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4"
     "_alignc4_execute_kernel__51a_cublas", CUDA, "fp32", "gemm"),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_stage3_warpsize2x2x1_tensor16x8x8"
     "_execute_kernel__5x_cublas", TENSOR, "tf32", "gemm"),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", TENSOR, "bf16", "gemm"),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", TENSOR, "fp16", "gemm"),
    ("cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4", TENSOR, "tf32", "gemm"),
    ("cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f16_128x128x64_1x1x1_0_tnn_align8_warpspecialized",
     TENSOR, "fp16", "gemm"),
    ("volta_h884gemm_128x128_ldg8_nn", TENSOR, "fp16", "gemm"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64",
     TENSOR, "bf16", "conv"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", TENSOR, "fp32", "attention"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm50(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm50, true, 64, 64, 64, true, true>::Params)", CUDA, "fp32", "attention"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
     "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
     TENSOR, "bf16", "attention"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, "
     "false, false, cutlass::half_t, pytorch_flash::Flash_kernel_traits<128, 128, 64, 4, "
     "cutlass::half_t> >, false, false, false, false, true, true, false, false>(pytorch_flash::"
     "Flash_fwd_params)", TENSOR, "fp16", "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
     TENSOR, "fp16/bf16", "attention"),
    ("triton_tem_fused_mm_0", UNKNOWN, None, "gemm"),
    ("triton_poi_fused_add_mul_0", CUDA, None, "other"),
    ("bmm_MxE4m3_MxE4m3_Fp32_t128x256x256u2_s4_et128x64_m256x256x64_c2x1x1_rM_TNT_bN_ieee",
     TENSOR, "fp8", "gemm"),
    ("bmm_E2m1_E2m1_Bfloat16_MxE2m1_t256x128x256_s3_cga2x1x1", TENSOR, "fp4", "gemm"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::tfloat32_t, "
     "cutlass::arch::Sm90>>", TENSOR, "tf32", "gemm"),
    ("sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cluster2x1x1_tcgen05",
     TENSOR, "bf16", "gemm"),
    ("void tensorrt_llm::multimem_all_reduce_kernel<__nv_bfloat16, 8>(AllReduceParams)", COMM,
     None, "communication"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", COMM, None,
     "communication"),
    ("void sm90_fp8_gemm_1d2d_impl<128, 128>(float*)", UNKNOWN, None, "other"),
]
# (name, vendor, engine, precision, op): AMD libraries, and vendor-neutral names on AMD.
AMD_NAMES = [
    ("Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", MATRIX_AMD, "fp16", "gemm"),
    ("Cijk_Ailk_Bjlk_SB_MT64x64x8_SN_GRVW4", VECTOR_AMD, "fp32", "gemm"),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::half_t>>",
     MATRIX_AMD, "fp16", "gemm"),
    ("igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x4x1_1x4x1x32",
     MATRIX_AMD, "fp16", "conv"),
    ("igemm_bwd_gtc_nchw_fp32_bx0_ex1_bt64x64x16_lt8x8_lw2x2_lr2x2_ta1x1x4x1_1x16x1x16",
     VECTOR_AMD, "fp32", "conv"),
    ("SubTensorOpWithScalar1d", VECTOR_AMD, None, "other"),
    ("attn_fwd", MATRIX_AMD, None, "attention"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", VECTOR_AMD,
     None, "other"),
    ("triton_poi_fused_add_0", VECTOR_AMD, None, "other"),
    ("rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)", COMM, None, "communication"),
    ("kernel_7", UNKNOWN, None, "other"),
]


@pytest.mark.parametrize("name,engine,precision,op", AMD_NAMES, ids=[m[0][:40] for m in AMD_NAMES])
def test_amd_kernel_names_are_never_cuda_cores(name, engine, precision, op):
    got = classify(name, AMD)
    assert (got.engine, got.precision, got.op) == (engine, precision, op)
    assert "CUDA" not in got.engine


def test_vendor_from_gpu_name_else_name_markers():
    assert vendor_of("AMD Instinct MI300X") == vendor_of("AMD Radeon Graphics") == AMD
    assert vendor_of("NVIDIA H200") == vendor_of("Tesla V100-SXM2-32GB") == NVIDIA
    assert vendor_of(None, ["volta_scudnn_128x64_relu_medium_nn_v1"]) == NVIDIA
    assert vendor_of(None, ["Cijk_Ailk_Bjlk_SB_MT64x64x8"]) == AMD
    assert vendor_of(None, ["void at::native::vectorized_elementwise_kernel<4>"]) is None
    # with no vendor known, a vector kernel is neither a CUDA core nor an AMD ALU
    assert classify("void at::native::reduce_kernel<512>", None).engine == tensor_cores.VECTOR_ANY


def _top30() -> list[dict]:
    return _rows(TOP30)


def test_top30_fixture_covers_every_trace_and_sample():
    traces = {r["trace"] for r in _top30()}
    samples = {str(p.relative_to(SAMPLES)) for p in SAMPLES.glob("*/*.json.gz")}
    assert samples <= traces
    if HAVE_SHARED:
        assert {p.name for p in SHARED_TRACES.glob("*.json*")} <= traces
    for trace in traces:
        ranks = [int(r["rank"]) for r in _top30() if r["trace"] == trace]
        assert ranks == list(range(1, len(ranks) + 1)) and len(ranks) <= 30


@pytest.mark.parametrize("row", _top30(), ids=[f"{r['trace'][:24]}#{r['rank']}" for r in _top30()])
def test_top30_kernels_by_gpu_time(row):
    got = classify(row["name"], row["vendor"] or None)
    assert (got.engine, got.precision or "", got.op) == (row["engine"], row["precision"], row["op"])


def test_sql_and_python_agree_on_communication(tmp_path):
    import duckdb

    names = [r["name"] for r in REAL + _top30()] + [m[0] for m in MODERN + AMD_NAMES]
    con = duckdb.connect()
    sql = tensor_cores.COMMUNICATION
    got = con.execute("SELECT n, regexp_matches(n, ?) FROM unnest(?::VARCHAR[]) t(n)", [sql, names]).fetchall()
    for name, in_sql in got:
        assert in_sql == (classify(name).engine == COMM), name
    windows_sql = (Path(tensor_cores.__file__).parents[2] / "storage" / "sql" / "windows.sql").read_text()
    assert f"'{sql}'" in windows_sql   # is_communication lives in the metrics layer's windows module


@pytest.mark.parametrize("name,engine,precision,op", MODERN, ids=[m[0][:40] for m in MODERN])
def test_modern_kernel_names(name, engine, precision, op):
    got = classify(name, NVIDIA)
    assert (got.engine, got.precision, got.op) == (engine, precision, op)
    assert got.rule


def test_classify_frame_adds_columns_per_row():
    df = pd.DataFrame({"name": ["volta_sgemm_64x64_nn", "nvjet_tst_1", "volta_sgemm_64x64_nn"],
                       "dur_ns": [1, 2, 3]})
    out = classify_frame(df)
    assert list(out["tc_engine"]) == [CUDA, TENSOR, CUDA]
    assert list(out["dur_ns"]) == [1, 2, 3]



def test_classify_frame_on_no_kernels_keeps_its_columns():
    import pandas as pd

    from profiler.analysis.model.tensor_cores import classify_frame

    out = classify_frame(pd.DataFrame({"name": []}))
    assert out.empty and list(out.columns) == ["name", "tc_engine", "tc_precision", "tc_op", "tc_rule"]
