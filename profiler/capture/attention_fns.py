"""The attention functions the variants run, `fn(q, k, v) -> out` over (batch, heads, seq_len,
head_dim) tensors, each made by a builder from a `Setting`; and the fp32 reference they are checked
against, the inputs and the error.

A builder runs once per shape, outside every timing and profile, so one-time setup (a block
mask, a compiled wrapper, a kernel download) never lands inside a measured call.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from profiler.capture.setting import DTYPES, AttentionFn, Builder, Setting
from profiler.errors import VariantError
from profiler.vocab.attention import SDPA_BACKENDS

HUB_FLASH_REPO = "kernels-community/flash-attn2"  # exposes the flash-attn 2 API (flash_attn_func)
FLASHINFER_WORKSPACE_BYTES = 128 << 20  # flashinfer's recommended split-k workspace


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


def build_naive(inplace: bool) -> Builder:
    return lambda s: (lambda q, k, v: naive_attention(q, k, v, causal=s.causal, inplace=inplace))


def build_naive_compiled(s: Setting) -> AttentionFn:
    def naive(q, k, v):
        return naive_attention(q, k, v, causal=s.causal)
    return torch.compile(naive)


def build_sdpa(name: str | None) -> Builder:
    """SDPA forced onto one backend (a name of vocab.attention.SDPA_BACKENDS), or left to choose."""
    backend = None if name is None else getattr(SDPBackend, SDPA_BACKENDS[name])

    def build(s: Setting) -> AttentionFn:
        def attend(q, k, v):
            if backend is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)
        return attend
    return build


def build_flex(s: Setting) -> AttentionFn:
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


def build_hub_flash(s: Setting) -> AttentionFn:
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


def build_flashinfer(backend: str) -> Builder:
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


def build_flash_attn_4(s: Setting) -> AttentionFn:
    from flash_attn.cute import flash_attn_func

    def attend(q, k, v):  # FlashAttention 4 takes (batch, seq, heads, dim)
        out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=s.causal)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(1, 2)
    return attend


# what torch.compile's first call imports; a profiled first call imports them too (~800 modules,
# seconds), so every capture process preloads them
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.compile_fx")
