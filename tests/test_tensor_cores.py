"""Tensor-core classifier on real kernel names and on today's kernels named in the issue."""
from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from profiler.tensor_cores import CUDA, TENSOR, UNKNOWN, classify, classify_frame

TABLE = Path(__file__).parent / "fixtures" / "analysis" / "kernel_names.csv"
H200_TABLE = Path(__file__).parent / "fixtures" / "analysis" / "h200_kernel_names.csv"


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


REAL = _rows(TABLE) + _rows(H200_TABLE)  # shared third-party traces + our H200 captures


@pytest.mark.parametrize("row", REAL, ids=[f"{r['trace'][:12]}:{r['name'][:50]}" for r in REAL])
def test_real_kernel_names(row):
    got = classify(row["name"])
    assert (got.engine, got.precision or "", got.op) == (row["engine"], row["precision"], row["op"])


def test_real_table_covers_every_story():
    engines = {(r["engine"], r["op"]) for r in REAL}
    assert {(TENSOR, "attention"), (TENSOR, "gemm"), (CUDA, "gemm"), (CUDA, "conv"),
            (CUDA, "communication"), (CUDA, "other")} <= engines
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
    ("Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", TENSOR, "fp16", "gemm"),
    ("Cijk_Ailk_Bjlk_SB_MT64x64x8_SN_GRVW4", CUDA, "fp32", "gemm"),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::half_t>>", TENSOR,
     "fp16", "gemm"),
]


@pytest.mark.parametrize("name,engine,precision,op", MODERN, ids=[m[0][:40] for m in MODERN])
def test_modern_kernel_names(name, engine, precision, op):
    got = classify(name)
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

    from profiler.tensor_cores import classify_frame

    out = classify_frame(pd.DataFrame({"name": []}))
    assert out.empty and list(out.columns) == ["name", "tc_engine", "tc_precision", "tc_op", "tc_rule"]
