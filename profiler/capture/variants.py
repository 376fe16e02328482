"""The attention variants a capture can profile, and whether each can run here.

Each variant is a name (the public vocabulary: CLI, URLs, UI), a sentence, a list of checks that
say why it cannot run in a given setting, and a ``build`` that turns a setting into an attention
function ``fn(q, k, v) -> out`` over tensors shaped (batch, heads, seq_len, head_dim).
``build`` runs once per shape, outside every timing and profile, so one-time setup (a block mask,
a compiled wrapper, a kernel download) never lands inside a measured call.

Only the capture layer (this module, the recorder and its parts) imports torch.
"""
from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from profiler.errors import VariantError
from profiler.vocab.attention import SDPA_BACKENDS

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
HUB_FLASH_REPO = "kernels-community/flash-attn2"  # exposes the flash-attn 2 API (flash_attn_func)
FLASHINFER_WORKSPACE_BYTES = 128 << 20  # flashinfer's recommended split-k workspace
KERNELS_EXTRA = "requirements-kernels.txt"  # the optional kernel packages, pinned

AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Setting:
    """Where and how a variant would run: enough to decide availability and to build it."""

    device: str = "cuda"  # 'cuda' | 'cpu'
    dtype: str = "bf16"  # a key of DTYPES
    head_dim: int = 64
    causal: bool = True

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


Check = Callable[[Setting], "str | None"]
Builder = Callable[[Setting], AttentionFn]


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


# ---- checks -------------------------------------------------------------------------------

def _cuda_present(s: Setting) -> str | None:
    if s.device == "cuda" and not torch.cuda.is_available():
        return "CUDA was asked for but torch sees no CUDA GPU"
    return None


def _needs_cuda(what: str) -> Check:
    return lambda s: None if s.device == "cuda" else f"{what} needs CUDA"


def _needs_half(what: str, cuda_only: bool = False) -> Check:
    def check(s: Setting) -> str | None:
        if s.dtype in ("bf16", "fp16") or (cuda_only and s.device != "cuda"):
            return None
        where = " on CUDA" if cuda_only else ""
        return f"{what} needs bf16 or fp16{where}, not {s.dtype}"
    return check


def _needs_sm80(what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        return None if major >= 8 else f"{what} needs an sm80+ GPU, this one is sm{major}{minor}"
    return check


def _head_dim_at_most(limit: int, what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or (s.head_dim <= limit and s.head_dim % 8 == 0):
            return None
        return f"{what} on CUDA needs a head dim that is a multiple of 8 and at most {limit}, not {s.head_dim}"
    return check


def _compiler_present(s: Setting) -> str | None:
    if s.device == "cuda":
        return None if importlib.util.find_spec("triton") else "torch.compile on CUDA needs triton"
    from torch._inductor import config

    cxx = config.cpp.cxx[0] if isinstance(config.cpp.cxx, tuple) else config.cpp.cxx
    return None if shutil.which(cxx or "g++") else f"torch.compile on CPU needs a C++ compiler ({cxx})"


def _kernels_installed(s: Setting) -> str | None:
    if importlib.util.find_spec("kernels") is None:
        return (f"the `kernels` package is not installed (it fetches the kernel from the Hugging Face hub; "
                f"pip install -r {KERNELS_EXTRA})")
    return None


def _module_present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or fails to import
        return False


def _package_installed(module: str, package: str, note: str = "") -> Check:
    def check(s: Setting) -> str | None:
        if _module_present(module):
            return None
        return f"the `{package}` package is not installed{note} (pip install -r {KERNELS_EXTRA})"
    return check


def _needs_sm(what: str, majors: tuple[int, ...]) -> Check:
    def check(s: Setting) -> str | None:
        if s.device != "cuda" or not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        names = " or ".join(f"sm{m}0" for m in majors)
        return None if major in majors else f"{what} needs an {names} GPU, this one is sm{major}{minor}"
    return check


def _head_dim_in(allowed: tuple[int, ...], what: str) -> Check:
    def check(s: Setting) -> str | None:
        if s.head_dim in allowed:
            return None
        return f"{what} supports head dims {', '.join(map(str, allowed))}, not {s.head_dim}"
    return check


# ---- attention functions ------------------------------------------------------------------

def _scale(q: torch.Tensor) -> float:
    return q.shape[-1] ** -0.5


def _causal_mask(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1)


def naive_attention(q, k, v, causal: bool = True, inplace: bool = False):
    scores = torch.matmul(q, k.transpose(-2, -1)) * _scale(q)
    if causal:
        mask = _causal_mask(q, k)
        scores = scores.masked_fill_(mask, float("-inf")) if inplace else scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def reference_attention(q, k, v, causal: bool = True) -> torch.Tensor:
    """The fp32 reference every variant's output is checked against."""
    return naive_attention(q.float(), k.float(), v.float(), causal=causal)


def make_inputs(batch: int, heads: int, seq_len: int, head_dim: int, dtype: str, device: str,
                seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v shaped (batch, heads, seq_len, head_dim), standard normal, reproducible."""
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (batch, heads, seq_len, head_dim)
    return tuple(torch.randn(shape, generator=gen, device=device, dtype=DTYPES[dtype]) for _ in range(3))


def relative_error(out: torch.Tensor, reference: torch.Tensor) -> float | None:
    """||out - ref|| / ||ref|| in fp32, on the reference's device (the capture keeps it on the CPU,
    so a check inside a profiled cycle adds one copy and no GPU kernels); None when the output is
    not finite or has the wrong shape."""
    if out.shape != reference.shape:
        return None
    diff = out.to(reference.device).float() - reference
    err = (torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(reference)).item()
    return err if err == err and err != float("inf") else None


def _build_naive(inplace: bool) -> Builder:
    return lambda s: (lambda q, k, v: naive_attention(q, k, v, causal=s.causal, inplace=inplace))


def _build_naive_compiled(s: Setting) -> AttentionFn:
    def naive(q, k, v):
        return naive_attention(q, k, v, causal=s.causal)
    return torch.compile(naive)


def _build_sdpa(name: str | None) -> Builder:
    """SDPA forced onto one backend (a name of vocab.attention.SDPA_BACKENDS), or left to choose."""
    backend = None if name is None else SDPBackend[SDPA_BACKENDS[name]]

    def build(s: Setting) -> AttentionFn:
        def attend(q, k, v):
            if backend is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)
        return attend
    return build


def _build_flex(s: Setting) -> AttentionFn:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled = torch.compile(flex_attention)
    masks: dict[tuple[int, int], object] = {}

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def attend(q, k, v):
        if not s.causal:
            return compiled(q, k, v)
        key = (q.shape[-2], k.shape[-2])
        if key not in masks:  # built on the first (cold) call of a shape, like the compile itself
            masks[key] = create_block_mask(causal, None, None, key[0], key[1], device=q.device.type)
        return compiled(q, k, v, block_mask=masks[key])
    return attend


def _build_hub_flash(s: Setting) -> AttentionFn:
    from kernels import get_kernel

    try:
        module = get_kernel(HUB_FLASH_REPO)
    except Exception as exc:  # the hub raises many types: offline, DNS, HTTP, missing build
        raise VariantError(f"the kernel hub is unreachable or has no build for this machine "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") from exc

    if not hasattr(module, "flash_attn_func"):
        raise VariantError(f"the hub kernel {HUB_FLASH_REPO} has no flash_attn_func")

    def attend(q, k, v):  # the hub kernel takes (batch, seq, heads, dim)
        out = module.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=s.causal)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(1, 2)
    return attend


def _build_flashinfer(backend: str) -> Builder:
    """flashinfer's batch prefill over ragged (tokens, heads, dim) tensors. Its plan is built on
    the first call of a shape (the cold call pays it and, on first use, the JIT compile of the
    kernel); every call converts (batch, heads, seq, dim) to that layout and back, so the traces
    show three input copies next to the attention kernel."""
    def build(s: Setting) -> AttentionFn:
        import flashinfer

        workspace = torch.empty(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
        wrapper = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(workspace, kv_layout="NHD", backend=backend)
        planned: list[tuple] = []

        def tokens(t: torch.Tensor) -> torch.Tensor:  # (b, h, n, d) -> (b*n, h, d)
            return t.transpose(1, 2).reshape(-1, t.shape[1], t.shape[-1])

        def attend(q, k, v):
            b, h, n, d = q.shape
            key = (b, h, n, k.shape[-2], d, q.dtype)
            if key not in planned:
                qo = torch.arange(0, (b + 1) * n, n, dtype=torch.int32)
                kv = torch.arange(0, (b + 1) * k.shape[-2], k.shape[-2], dtype=torch.int32)
                wrapper.plan(qo, kv, h, k.shape[1], d, causal=s.causal, q_data_type=q.dtype)
                planned[:] = [key]
            out = wrapper.run(tokens(q), tokens(k), tokens(v))
            return out.view(b, n, h, d).transpose(1, 2)
        return attend
    return build


def _build_flash_attn_4(s: Setting) -> AttentionFn:
    from flash_attn.cute import flash_attn_func

    def attend(q, k, v):  # FlashAttention 4 takes (batch, seq, heads, dim)
        out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=s.causal)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(1, 2)
    return attend


# what torch.compile's first call imports; a profiled first call imports them too (~800 modules,
# seconds), so every capture process preloads them
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.compile_fx")


# ---- the registry -------------------------------------------------------------------------

def _registry() -> dict[str, Variant]:
    """In capture order: the forced SDPA backends run before sdpa_auto, so the cold call of
    sdpa_cudnn (not sdpa_auto's, which picks cuDNN on Hopper) pays for building cuDNN's plan."""
    flash, eff, cudnn = "FlashAttention (sdpa_flash)", "memory-efficient attention", "cuDNN attention"
    items = [
        Variant("naive", "matmul, scale, out-of-place masked_fill, softmax, matmul",
                (_cuda_present,), _build_naive(inplace=False)),
        Variant("naive_inplace", "naive with an in-place masked_fill_",
                (_cuda_present,), _build_naive(inplace=True)),
        Variant("naive_compiled", "naive under torch.compile",
                (_cuda_present, _compiler_present), _build_naive_compiled, COMPILER_MODULES),
        Variant("sdpa_math", "SDPA forced to the math backend",
                (_cuda_present,), _build_sdpa("math")),
        Variant("sdpa_efficient", "SDPA forced to the memory-efficient (cutlass fmha) backend",
                (_needs_cuda(eff), _cuda_present), _build_sdpa("efficient")),
        Variant("sdpa_flash", "SDPA forced to the FlashAttention backend",
                (_needs_half(flash, cuda_only=True), _head_dim_at_most(256, flash), _cuda_present,
                 _needs_sm80(flash)),
                _build_sdpa("flash")),
        Variant("sdpa_cudnn", "SDPA forced to the cuDNN backend",
                (_needs_cuda(cudnn), _needs_half(cudnn), _head_dim_at_most(128, cudnn), _cuda_present,
                 _needs_sm80(cudnn)), _build_sdpa("cudnn")),
        Variant("sdpa_auto", "F.scaled_dot_product_attention, backend chosen by PyTorch",
                (_cuda_present,), _build_sdpa(None)),
        Variant("flex", "FlexAttention (compiled) with a causal block mask",
                (_cuda_present, _compiler_present), _build_flex,
                COMPILER_MODULES + ("torch.nn.attention.flex_attention",)),
        Variant("flashinfer_fa2", "flashinfer batch prefill, FA2 backend (JIT-compiled on first use)",
                (_needs_cuda("flashinfer"), _needs_half("flashinfer"), _head_dim_in((64, 128, 256), "flashinfer"),
                 _package_installed("flashinfer", "flashinfer-python"), _cuda_present, _needs_sm80("flashinfer")),
                _build_flashinfer("fa2")),
        Variant("flashinfer_fa3", "flashinfer batch prefill, FA3 backend for Hopper (JIT-compiled on first use)",
                (_needs_cuda("flashinfer"), _needs_half("flashinfer"), _head_dim_in((64, 128, 256), "flashinfer"),
                 _package_installed("flashinfer", "flashinfer-python"), _cuda_present,
                 _needs_sm("flashinfer's FA3 backend", (9,))),
                _build_flashinfer("fa3")),
        Variant("flash_attn_4", "FlashAttention 4 (CuTe DSL, the flash-attn-4 package)",
                (_needs_cuda("FlashAttention 4"), _needs_half("FlashAttention 4"),
                 _package_installed("flash_attn.cute", "flash-attn-4", " (it also needs nvidia-cutlass-dsl)"),
                 _cuda_present, _needs_sm("FlashAttention 4", (9, 10))),
                _build_flash_attn_4),
        Variant("hub_flash", f"flash-attn from the Hugging Face kernel hub ({HUB_FLASH_REPO})",
                (_needs_cuda("the hub flash kernel"), _needs_half("the hub flash kernel"), _kernels_installed,
                 _cuda_present), _build_hub_flash, ("kernels",)),
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
