"""Kernel families and the edit-distance alignment of kernel sequences."""
from __future__ import annotations

import random
from functools import lru_cache

import pandas as pd
import pytest

from profiler.analysis.model.diff import align, align_kernel_sequences, family_delta, kernel_family

FLASH = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, "
         "4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, "
         "cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>"
         "(pytorch_flash::Flash_fwd_params)")
GEMM_A = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute"
GEMM_B = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute"
SOFTMAX = ("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, "
           "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)")
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<c10::BFloat16, "
       "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
       "std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<c10::BFloat16>, std::array<char*, 2ul>)")
COPY = "Memcpy DtoD (Device -> Device)"


@pytest.mark.parametrize("name,family", [
    ("volta_sgemm_64x32_sliced1x4_nn", "volta_sgemm"),
    ("volta_sgemm_128x64_nt", "volta_sgemm"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", "nvjet_tst"),
    (GEMM_A, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
    (FLASH, "flash_fwd_kernel"),
    (SOFTMAX, "softmax_warp_forward"),
    (MUL, "vectorized_elementwise_kernel[MulFunctor]"),
    (COPY, "Memcpy DtoD"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_"
     "128x32_8x5_nn_align1::Params)", "Kernel2[cutlass_80_simt_sgemm]"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor"
     "<float, 2, 2, 0>, std::plus<float>, float>(int)", "multi_tensor_apply_kernel[BinaryOpListAlphaFunctor]"),
])
def test_kernel_family(name, family):
    assert kernel_family(name) == family


@lru_cache(maxsize=None)
def _distance(a: tuple, b: tuple) -> int:
    """Reference edit distance by plain recursion (independent of the module's table)."""
    if not a or not b:
        return len(a) + len(b)
    return min(_distance(a[1:], b[1:]) + (a[0] != b[0]), _distance(a[1:], b) + 1, _distance(a, b[1:]) + 1)


def _cost(a, b, pairs) -> int:
    return sum(1 if i is None or j is None else int(a[i] != b[j]) for i, j in pairs)


def _is_alignment(a, b, pairs) -> bool:
    left = [i for i, _ in pairs if i is not None]
    right = [j for _, j in pairs if j is not None]
    return left == list(range(len(a))) and right == list(range(len(b)))


def test_align_classic_example():
    pairs = align(list("kitten"), list("sitting"))
    assert _is_alignment("kitten", "sitting", pairs) and _cost("kitten", "sitting", pairs) == 3


def test_align_is_minimal_on_random_sequences():
    rng = random.Random(5)
    for _ in range(60):
        a = tuple(rng.choice("abcd") for _ in range(rng.randint(0, 9)))
        b = tuple(rng.choice("abcd") for _ in range(rng.randint(0, 9)))
        pairs = align(list(a), list(b))
        assert _is_alignment(a, b, pairs)
        assert _cost(a, b, pairs) == _distance(a, b), (a, b)


def test_long_sequences_use_anchors_and_stay_valid():
    rng = random.Random(7)
    a = [rng.choice("abcdefgh") for _ in range(900)]
    b = a[:300] + ["x", "y"] + a[310:]
    pairs = align(a, b)
    assert _is_alignment(a, b, pairs)
    assert _cost(a, b, pairs) <= 12  # 10 removed, 2 inserted: at worst no substitution


def _seq(names):
    return pd.DataFrame({"seq": range(len(names)), "name": names,
                         "dur_us": [10.0 * (k + 1) for k in range(len(names))]})


def test_align_math_sdpa_against_flash():
    math_run = _seq([COPY, GEMM_A, MUL, SOFTMAX, GEMM_A])
    flash_run = _seq([GEMM_B, FLASH])
    out = align_kernel_sequences(math_run, flash_run)
    assert list(out["status"]).count("same family") == 1  # GEMM_A ~ GEMM_B: same family
    assert out.loc[out["name_a"] == COPY, "status"].item() == "only in a"
    assert len(out) == 5 and out["name_b"].dropna().tolist() == [GEMM_B, FLASH]
    assert (out["status"] == "replaced").sum() == 1


def test_align_identical_runs_is_all_same():
    out = align_kernel_sequences(_seq([GEMM_A, SOFTMAX]), _seq([GEMM_A, SOFTMAX]))
    assert out["status"].tolist() == ["same", "same"]
    assert out["dur_us_b"].tolist() == [10.0, 20.0]


def test_family_delta_sums_per_family():
    delta = pd.DataFrame({"kernel": [GEMM_A, GEMM_B, COPY], "calls_a": [2.0, 0.0, 1.0],
                          "calls_b": [0.0, 2.0, 0.0], "us_a": [50.0, 0.0, 5.0],
                          "us_b": [0.0, 30.0, 0.0]})
    out = family_delta(delta).set_index("family")
    gemm = out.loc["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"]
    assert (gemm["kernels"], gemm["calls_delta"], gemm["us_delta"], gemm["presence"]) == (2, 0.0, -20.0, "both")
    assert out.loc["Memcpy DtoD", "presence"] == "only in a"


def test_a_copy_is_never_paired_with_a_compute_kernel():
    from profiler.analysis.model.diff import align, substitution_cost

    # naive (copy + elementwise) vs flash (one kernel): the copy is 'only in a', the kernels pair up
    assert align(["Memcpy DtoD", "elementwise_kernel"], ["flash_fwd_kernel"]) == [(0, None), (1, 0)]
    assert substitution_cost("Memcpy DtoD", "flash_fwd_kernel") == 2
    assert substitution_cost("gemm", "flash_fwd_kernel") == 1
    assert substitution_cost("Memset", "Memcpy DtoD") == 1
