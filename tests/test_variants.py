"""The variant registry: names, availability reasons, and the attention math on the CPU."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from profiler.capture.variants import VARIANTS, availability, get_variant
from profiler.capture.attention_fns import make_inputs, naive_attention, reference_attention, relative_error
from profiler.capture.setting import Setting
from profiler.errors import VariantError

PUBLIC_NAMES = {"naive", "naive_inplace", "naive_compiled", "sdpa_auto", "sdpa_math", "sdpa_efficient",
                "sdpa_flash", "sdpa_cudnn", "flex", "hub_flash", "flashinfer_fa2", "flashinfer_fa3",
                "flashinfer_decode", "flashinfer_decode_tc", "flash_attn_4"}
CPU = Setting(device="cpu", dtype="fp32", head_dim=32)


def test_registry_holds_exactly_the_public_names():
    assert set(VARIANTS) == PUBLIC_NAMES
    assert all(v.description for v in VARIANTS.values())


def test_forced_backends_are_captured_before_sdpa_auto():
    order = list(VARIANTS)
    assert order.index("sdpa_cudnn") < order.index("sdpa_auto")


def test_on_the_cpu_the_gpu_only_variants_say_they_need_cuda():
    rows = {a.name: a for a in availability(CPU)}
    for name in ("sdpa_efficient", "sdpa_cudnn", "hub_flash"):
        assert not rows[name].available and "needs CUDA" in rows[name].reason
    for name in ("naive", "naive_inplace", "sdpa_auto", "sdpa_math", "sdpa_flash"):
        assert rows[name].available and rows[name].reason == ""


@pytest.mark.parametrize("setting, variant, words", [
    (Setting(device="cuda", dtype="fp32"), "sdpa_flash", "bf16 or fp16 on CUDA"),
    (Setting(device="cuda", dtype="bf16", head_dim=76), "sdpa_flash", "multiple of 8"),
    (Setting(device="cuda", dtype="bf16", head_dim=256), "sdpa_cudnn", "at most 128"),
    (Setting(device="cuda", dtype="fp16"), "hub_flash", "`kernels` package is not installed"),
    (Setting(device="cuda", dtype="bf16"), "flashinfer_fa2",
     "the `flashinfer-python` package is not installed (pip install -r requirements-kernels.txt)"),
    (Setting(device="cuda", dtype="bf16", head_dim=96), "flashinfer_fa3", "supports head dims 64, 128, 256, not 96"),
    (Setting(device="cuda", dtype="fp32"), "flashinfer_fa3", "flashinfer needs bf16 or fp16, not fp32"),
    (Setting(device="cuda", dtype="bf16"), "flash_attn_4", "the `flash-attn-4` package is not installed"),
    (Setting(device="cpu", dtype="bf16"), "flash_attn_4", "FlashAttention 4 needs CUDA"),
])
def test_static_reasons_name_the_problem(setting, variant, words):
    assert words in get_variant(variant).why_not(setting)


def test_asking_for_cuda_says_whether_a_gpu_is_there():
    reason = get_variant("naive").why_not(Setting(device="cuda"))
    assert reason is None if torch.cuda.is_available() else "no CUDA GPU" in reason


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(VariantError, match="unknown variant 'fast'.*naive_inplace"):
        get_variant("fast")


def test_naive_matches_sdpa_math_and_inplace_matches_naive():
    q, k, v = make_inputs(2, 3, 40, 16, "fp32", "cpu", seed=1)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(naive_attention(q, k, v), expected, atol=1e-5)
    assert torch.equal(naive_attention(q, k, v, inplace=True), naive_attention(q, k, v))
    assert not torch.allclose(naive_attention(q, k, v, causal=False), expected, atol=1e-3)


def test_inputs_are_reproducible_and_shaped():
    a, b = make_inputs(1, 2, 8, 4, "bf16", "cpu", seed=7), make_inputs(1, 2, 8, 4, "bf16", "cpu", seed=7)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert a[0].shape == (1, 2, 8, 4) and a[0].dtype == torch.bfloat16
    assert not torch.equal(a[0], a[1])


def test_relative_error_flags_wrong_shapes_and_non_finite_outputs():
    q, k, v = make_inputs(1, 2, 16, 8, "fp32", "cpu")
    ref = reference_attention(q, k, v)
    assert relative_error(ref.clone(), ref) == 0.0
    assert relative_error(ref[..., :4], ref) is None
    assert relative_error(torch.full_like(ref, float("nan")), ref) is None
    assert 0.5 < relative_error(torch.zeros_like(ref), ref) <= 1.0 + 1e-6


@pytest.mark.parametrize("name", ["naive", "naive_inplace", "sdpa_auto", "sdpa_math", "sdpa_flash"])
def test_cpu_variants_agree_with_the_reference(name):
    q, k, v = make_inputs(1, 2, 24, 16, "fp32", "cpu", seed=3)
    out = get_variant(name).build(CPU)(q, k, v)
    assert relative_error(out, reference_attention(q, k, v)) < 1e-5
