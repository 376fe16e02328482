"""The attention variants a capture can profile, and whether each can run here.

Each variant is a name (the public vocabulary: CLI, URLs, UI), a sentence, a list of checks that
say why it cannot run in a given setting, and a ``build`` that turns a setting into an attention
function ``fn(q, k, v) -> out`` over tensors shaped (batch, heads, seq_len, head_dim).
``build`` runs once per shape, outside every timing and profile, so one-time setup (a block mask,
a compiled wrapper, a kernel download) never lands inside a measured call.

The checks are in `variant_checks.py`, the attention functions and their builders in `attention_fns.py`,
`Setting` in `setting.py`. Only the capture layer (this module, the recorder and its parts)
imports torch.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from profiler.capture import attention_fns as fns, flashinfer_fns, variant_checks as checks
from profiler.capture.setting import MODES, Builder, Check, Setting
from profiler.errors import VariantError

# the parts, importable from here as before: inputs, the reference and the error of a run


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    checks: tuple[Check, ...]
    build: Builder
    # modules its build imports; a fresh capture process imports them while it waits for its
    # turn on the GPU, so the turn is not spent importing. Only modules whose import leaves the
    # GPU alone (the imports of flashinfer and flash_attn.cute initialise CUDA, seen on an H200,
    # so they are not preloaded)
    preload: tuple[str, ...] = ()

    def why_not(self, setting: Setting) -> str | None:
        """None when the variant can run in ``setting``, else the first reason it cannot."""
        for check in self.checks:
            reason = check(setting)
            if reason:
                return reason
        return None


@dataclass(frozen=True)
class Availability:
    name: str
    available: bool
    reason: str  # '' when available


# ---- what each variant cannot do, per mode and shape (checks.cannot) ----------------------
NO_MASK = "takes no explicit mask, which a sliding window or packed lengths need here"
NOT_WIRED_YET = "is not wired into this capture yet"
# what each forced SDPA backend refuses, measured on an H200 with torch 2.11 (bench/sdpa_support.py;
# data/samples/MANIFEST.md): efficient has no GQA, flash no explicit mask, cuDNN took every case
SDPA_EFFICIENT = {"gqa": "has no grouped-query attention (enable_gqa): PyTorch finds no kernel for fewer K/V heads"}
SDPA_CUDNN: dict[str, str] = {}
# flashinfer runs GQA, decode, a (left) sliding window and packed lengths (flashinfer_fns.py);
# it has no backward
FLASHINFER = {"train": "has no backward (forward only: no train step)"}
FLASHINFER_DECODE = "reads a paged KV cache: decode mode only (flashinfer_fa2 and flashinfer_fa3 run prefill)"
# the hub kernel is fetched at run time, and no GPU machine here reaches the hub: its modes beyond
# the forward prefill were never run, so they are not offered
NOT_WIRED = {"train": f"with a backward {NOT_WIRED_YET}", "window": f"with a sliding window {NOT_WIRED_YET}",
             "varlen": f"with packed lengths {NOT_WIRED_YET}"}


# ---- the registry -------------------------------------------------------------------------

def _flashinfer_checks(gpu: Check, mode: Check | None = None) -> tuple[Check, ...]:
    """flashinfer's checks; ``mode``: a variant's own mode check, right after CUDA's."""
    return (checks.needs_cuda("flashinfer"), *((mode,) if mode else ()), checks.needs_half("flashinfer"),
            checks.head_dim_in((64, 128, 256), "flashinfer"), checks.cannot("flashinfer", **FLASHINFER),
            checks.window_needs_causal("flashinfer"),
            checks.package_installed("flashinfer", "flashinfer-python"), checks.cuda_present, gpu)


def _decode_checks(name: str) -> tuple[Check, ...]:
    return _flashinfer_checks(checks.needs_sm80("flashinfer"), checks.only_in_mode("decode", name, FLASHINFER_DECODE))


def _registry() -> dict[str, Variant]:
    """In capture order: the forced SDPA backends run before sdpa_auto, so the cold call of
    sdpa_cudnn (not sdpa_auto's, which picks cuDNN on Hopper) pays for building cuDNN's plan."""
    flash, eff, cudnn = "FlashAttention (sdpa_flash)", "memory-efficient attention", "cuDNN attention"
    items = [
        Variant("naive", "matmul, scale, out-of-place masked_fill, softmax, matmul",
                (checks.cuda_present,), fns.build_naive(inplace=False)),
        Variant("naive_inplace", "naive with an in-place masked_fill_",
                (checks.cuda_present,), fns.build_naive(inplace=True)),
        Variant("naive_compiled", "naive under torch.compile",
                (checks.cuda_present, checks.compiler_present), fns.build_naive_compiled, fns.COMPILER_MODULES),
        Variant("sdpa_math", "SDPA forced to the math backend",
                (checks.cuda_present,), fns.build_sdpa("math")),
        Variant("sdpa_efficient", "SDPA forced to the memory-efficient (cutlass fmha) backend",
                (checks.needs_cuda(eff), checks.cannot(eff, **SDPA_EFFICIENT), checks.cuda_present),
                fns.build_sdpa("efficient")),
        Variant("sdpa_flash", "SDPA forced to the FlashAttention backend",
                (checks.needs_half(flash, cuda_only=True), checks.head_dim_at_most(256, flash),
                 checks.cannot(flash, window=NO_MASK, varlen=NO_MASK), checks.cuda_present,
                 checks.needs_sm80(flash)),
                fns.build_sdpa("flash")),
        Variant("sdpa_cudnn", "SDPA forced to the cuDNN backend",
                (checks.needs_cuda(cudnn), checks.needs_half(cudnn), checks.head_dim_at_most(128, cudnn),
                 checks.cannot(cudnn, **SDPA_CUDNN), checks.cuda_present,
                 checks.needs_sm80(cudnn)), fns.build_sdpa("cudnn")),
        Variant("sdpa_auto", "F.scaled_dot_product_attention, backend chosen by PyTorch",
                (checks.cuda_present,), fns.build_sdpa(None)),
        Variant("flex", "FlexAttention (compiled) with a block mask: causal, sliding window, documents of packed lengths",
                (checks.cuda_present, checks.compiler_present, checks.backward_on_cuda_only("flex attention")),
                fns.build_flex,
                fns.COMPILER_MODULES + ("torch.nn.attention.flex_attention",)),
        Variant("flashinfer_fa2", "flashinfer batch prefill, FA2 backend (JIT-compiled on first use)",
                _flashinfer_checks(checks.needs_sm80("flashinfer")), flashinfer_fns.build_flashinfer("fa2")),
        Variant("flashinfer_fa3", "flashinfer batch prefill, FA3 backend for Hopper (JIT-compiled on first use)",
                _flashinfer_checks(checks.needs_sm("flashinfer's FA3 backend", (9,))),
                flashinfer_fns.build_flashinfer("fa3")),
        Variant("flashinfer_decode", "flashinfer batch decode against a paged KV cache of 16-token pages, CUDA-core "
                "kernel (a query of several tokens: its paged prefill over the same cache; JIT-compiled on first use)",
                _decode_checks("flashinfer_decode"), flashinfer_fns.build_flashinfer_decode(tensor_cores=False)),
        Variant("flashinfer_decode_tc", "flashinfer_decode with its tensor-core decode kernel (use_tensor_cores, "
                "advised for GQA groups of 4 and more)",
                _decode_checks("flashinfer_decode_tc"), flashinfer_fns.build_flashinfer_decode(tensor_cores=True)),
        Variant("flash_attn_4", "FlashAttention 4 (CuTe DSL, the flash-attn-4 package)",
                (checks.needs_cuda("FlashAttention 4"), checks.needs_half("FlashAttention 4"),
                 checks.package_installed("flash_attn.cute", "flash-attn-4", " (it also needs nvidia-cutlass-dsl)"),
                 checks.cuda_present, checks.needs_sm("FlashAttention 4", (9, 10))),
                fns.build_flash_attn_4),
        Variant("hub_flash", f"flash-attn from the Hugging Face kernel hub ({fns.HUB_FLASH_REPO})",
                (checks.needs_cuda("the hub flash kernel"), checks.needs_half("the hub flash kernel"),
                 checks.cannot("the hub flash kernel", **NOT_WIRED), checks.kernels_installed,
                 checks.cuda_present), fns.build_hub_flash, ("kernels",)),
    ]
    return {v.name: v for v in items}


VARIANTS: dict[str, Variant] = _registry()


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def get_variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise VariantError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None


def availability(setting: Setting | None = None) -> list[Availability]:
    """Every variant, in registry order, with whether it can run in ``setting`` and why not."""
    setting = setting or Setting(device=default_device())
    rows = []
    for variant in VARIANTS.values():
        reason = variant.why_not(setting)
        rows.append(Availability(variant.name, reason is None, reason or ""))
    return rows


def availability_by_mode(setting: Setting | None = None) -> dict[str, list[Availability]]:
    """{mode: availability(setting in that mode)} for every mode of setting.MODES."""
    setting = setting or Setting(device=default_device())
    return {mode: availability(replace(setting, mode=mode)) for mode in MODES}
