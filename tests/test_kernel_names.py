"""One parser of kernel names, on names from the H200 samples and the H100 Qwen trace."""
from __future__ import annotations

import pytest

from profiler.analysis.model.kernel_names import parse

CUDNN = ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
         "cga1x1x1_kernel0_0")
FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
         "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, "
         "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)")
EFFICIENT = ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
             "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)")
MATH_GEMM = ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
             "aligna4_alignc4_execute_kernel__5x_cublas")
FA4 = ("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm90FlashAttentionForwardSm90_object_at__tensor0000o1110"
       "1213_tensor0000o11101213_tensor0000o11101213_tensor0000o11101213_None_None_None_None__0")  # flash-attn-4 on the H200 (data/samples/default/flash_attn_4_*)
HOPPER_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
               "execute_segment_k_off_kernel__5x_cublas")


@pytest.mark.parametrize("name,library,arch,arch_from,instruction,tile", [
    (CUDNN, "cuDNN", "sm90", "name", "wgmma", "64x128x64"),
    (FLASH, "FlashAttention-2 (PyTorch)", "sm80", "FlashAttention-2 kernels use the sm80 mma.sync path",
     "mma", "128x128"),
    (FA4, "FlashAttention-4 (CuTe DSL)", "sm90", "name", "wgmma", None),
    (EFFICIENT, "memory-efficient attention (PyTorch, CUTLASS)", "sm80", "name", "mma", "64x64"),
    (MATH_GEMM, "cuBLAS", "sm80", "name", "ffma", "128x128x8"),
    (HOPPER_GEMM, "cuBLAS", "sm90", "name", "wgmma", "128x128x64"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "cuBLAS", "sm90", "name", "wgmma", "256x128"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_"
     "nn_align1::Params)", "CUTLASS", "sm80", "name", "ffma", "128x32"),
    ("triton_tem_fused_flex_attention_0", "Triton", None, None, None, None),
    ("volta_sgemm_64x32_sliced1x4_tn", "cuBLAS", "sm70", "name", "ffma", "64x32"),   # V100 DLRM trace
    ("void at::native::triu_tril_kernel<bool, int, true, 8, false>(at::cuda::detail::TensorInfo<bool, int>, "
     "at::cuda::detail::TensorInfo<bool const, int>, long, long, int)", "PyTorch native", None, None, None, None),
])
def test_real_kernel_names(name, library, arch, arch_from, instruction, tile):
    facts = parse(name)
    assert (facts.library, facts.arch, facts.arch_from, facts.instruction, facts.tile) == (
        library, arch, arch_from, instruction, tile)


def test_summary_reads_as_one_line():
    assert parse(CUDNN).summary == "cuDNN, sm90, wgmma, tile 64x128x64"
