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

from profiler.capture.masks import MaskSpec
from profiler.capture.setting import DTYPES, AttentionFn, Builder, Setting
from profiler.errors import VariantError
from profiler.vocab.attention import SDPA_BACKENDS

HUB_FLASH_REPO = "kernels-community/flash-attn2"  # exposes the flash-attn 2 API (flash_attn_func)


def _scale(q: torch.Tensor) -> float:
    return q.shape[-1] ** -0.5


def _causal_mask(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1)


def _spread(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """K or V with fewer heads than q (GQA/MQA) repeated to q's heads: each KV head serves a
    group of heads // kv_heads consecutive query heads."""
    if t.shape[1] == q.shape[1]:
        return t
    return t.repeat_interleave(q.shape[1] // t.shape[1], dim=1)


def naive_attention(q, k, v, causal: bool = True, inplace: bool = False, spec: MaskSpec | None = None,
                    allowed: torch.Tensor | None = None):
    """Scores, mask, softmax, matmul. ``spec`` (masks.py) says which keys each query sees when the
    mask is not the plain causal square; ``allowed`` is its dense mask, if already built."""
    k, v = _spread(q, k), _spread(q, v)
    spec = spec or MaskSpec(q.shape[-2], k.shape[-2], causal)
    scores = torch.matmul(q, k.transpose(-2, -1)) * _scale(q)
    if spec.plain_causal:
        mask = _causal_mask(q, k)
    elif spec.everything:
        mask = None
    else:
        mask = ~(allowed if allowed is not None else spec.dense(q.device))
    if mask is not None:
        scores = scores.masked_fill_(mask, float("-inf")) if inplace else scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def reference_attention(q, k, v, causal: bool = True, spec: MaskSpec | None = None) -> torch.Tensor:
    """The fp32 reference every variant's output is checked against."""
    return naive_attention(q.float(), k.float(), v.float(), causal=causal, spec=spec)


def reference_train(q, k, v, grad, spec: MaskSpec) -> tuple[torch.Tensor, ...]:
    """(out, dq, dk, dv) of the fp32 reference: the output and the gradients a train step must give."""
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    out = naive_attention(*leaves, spec=spec)
    out.backward(grad.float())
    return (out.detach(),) + tuple(t.grad for t in leaves)


def make_inputs(batch: int, heads: int, seq_len: int, head_dim: int, dtype: str, device: str,
                seed: int = 0, kv_heads: int | None = None, kv_len: int | None = None,
                train: bool = False) -> tuple[torch.Tensor, ...]:
    """q shaped (batch, heads, seq_len, head_dim), k and v (batch, kv_heads, kv_len, head_dim),
    standard normal, reproducible; for a train step also the output's gradient (q's shape) and
    q, k, v made leaves that want gradients."""
    gen = torch.Generator(device=device).manual_seed(seed)
    kv_shape = (batch, kv_heads or heads, kv_len or seq_len, head_dim)
    shapes = [(batch, heads, seq_len, head_dim), kv_shape, kv_shape] + [(batch, heads, seq_len, head_dim)] * train
    made = [torch.randn(shape, generator=gen, device=device, dtype=DTYPES[dtype]) for shape in shapes]
    if train:
        for t in made[:3]:
            t.requires_grad_()
    return tuple(made)


def train_step(attend: AttentionFn) -> AttentionFn:
    """One training step of the attention: forward, then ``out.backward(grad)``, inside the call
    (so a profiled call holds the backward kernels). q, k, v get fresh gradients each call (no
    accumulation); the output is returned detached."""
    def step(q, k, v, grad):
        q.grad = k.grad = v.grad = None
        out = attend(q, k, v)
        out.backward(grad)
        return out.detach()
    return step


def relative_error(out: torch.Tensor, reference: torch.Tensor) -> float | None:
    """||out - ref|| / ||ref|| in fp32, on the reference's device (the capture keeps it on the CPU,
    so a check inside a profiled cycle adds one copy and no GPU kernels); None when the output is
    not finite or has the wrong shape."""
    if out is None or out.shape != reference.shape:
        return None
    diff = out.to(reference.device).float() - reference
    err = (torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(reference)).item()
    return err if err == err and err != float("inf") else None


class _Masks:
    """Dense masks per (q_len, kv_len), built on the first (cold) call of a shape, never inside a
    warm call."""

    def __init__(self, s: Setting):
        self.s, self.made = s, {}

    def __call__(self, q, k) -> tuple[MaskSpec, torch.Tensor | None]:
        spec = self.s.spec(q.shape[-2], k.shape[-2])
        if spec.plain_causal or spec.everything:
            return spec, None
        key = (spec.q_len, spec.kv_len)
        if key not in self.made:
            self.made[key] = spec.dense(q.device)
        return spec, self.made[key]


def build_naive(inplace: bool) -> Builder:
    def build(s: Setting) -> AttentionFn:
        masks = _Masks(s)

        def attend(q, k, v):
            spec, allowed = masks(q, k)
            return naive_attention(q, k, v, causal=s.causal, inplace=inplace, spec=spec, allowed=allowed)
        return attend
    return build


def build_naive_compiled(s: Setting) -> AttentionFn:
    masks = _Masks(s)

    def naive(q, k, v, allowed):
        return naive_attention(q, k, v, causal=s.causal, spec=s.spec(q.shape[-2], k.shape[-2]), allowed=allowed)
    compiled = torch.compile(naive)
    return lambda q, k, v: compiled(q, k, v, masks(q, k)[1])


def build_sdpa(name: str | None) -> Builder:
    """SDPA forced onto one backend (a name of vocab.attention.SDPA_BACKENDS), or left to choose.
    GQA through ``enable_gqa``; a causal mask over a square through ``is_causal``; a causal one
    with more keys than queries through ``causal_lower_right`` (bottom-right, masks.py), except for
    one query (it sees every key: no mask); a window or packed lengths through an explicit mask."""
    backend = None if name is None else getattr(SDPBackend, SDPA_BACKENDS[name])

    def build(s: Setting) -> AttentionFn:
        masks = _Masks(s)
        extra = {"enable_gqa": True} if s.gqa else {}

        def call(q, k, v):
            spec, allowed = masks(q, k)
            if spec.plain_causal or (spec.everything and not s.causal):
                return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal, **extra)
            if spec.everything:
                return F.scaled_dot_product_attention(q, k, v, **extra)
            if spec.window is None and spec.varlen is None:
                from torch.nn.attention.bias import causal_lower_right
                mask = causal_lower_right(spec.q_len, spec.kv_len)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **extra)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, **extra)

        def attend(q, k, v):
            if backend is None:
                return call(q, k, v)
            with sdpa_kernel(backend):
                return call(q, k, v)
        return attend
    return build


def build_flex(s: Setting) -> AttentionFn:
    """Flex attention, compiled, with a block mask of the setting's mask (causal, sliding window,
    document mask for packed lengths); GQA through ``enable_gqa``."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled = torch.compile(flex_attention)
    masks: dict[tuple[int, int], object] = {}
    extra = {"enable_gqa": True} if s.gqa else {}

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def attend(q, k, v):
        spec = s.spec(q.shape[-2], k.shape[-2])
        if spec.everything:
            return compiled(q, k, v, **extra)
        key = (q.shape[-2], k.shape[-2])
        if key not in masks:  # built on the first (cold) call of a shape, like the compile itself
            mod = causal if spec.plain_causal else spec.mask_mod(q.device)
            masks[key] = create_block_mask(mod, None, None, key[0], key[1], device=q.device.type)
        return compiled(q, k, v, block_mask=masks[key], **extra)
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


def fa_window(s: Setting) -> tuple[int | None, int | None]:
    """FlashAttention's ``window_size`` (left, right) for the setting's sliding window of W keys
    (masks.py): the query's own key and the W - 1 before it, and with the causal mask nothing
    after it; without it, W - 1 on either side. (None, None): no window."""
    if s.window is None:
        return (None, None)
    return (s.window - 1, 0 if s.causal else s.window - 1)


def build_flash_attn_4(s: Setting) -> AttentionFn:
    """FlashAttention 4 over its (batch, seq, heads, dim) layout, as views (no copy): GQA natively
    (fewer K/V heads), causal aligned bottom-right (its own alignment, the capture's), a sliding
    window through ``window_size`` (`fa_window`), packed lengths through `flash_attn_varlen_func`'s
    cumulative offsets over the (tokens, heads, dim) of batch 1, and the backward of a train step
    through its autograd Function."""
    from flash_attn.cute import flash_attn_func, flash_attn_varlen_func

    from profiler.capture import paged

    window = fa_window(s)
    offsets: dict = {}

    def attend(q, k, v):
        if s.varlen is None:
            out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=s.causal,
                                  window_size=window)
            out = out[0] if isinstance(out, tuple) else out
            return out.transpose(1, 2)
        if q.device not in offsets:  # made on the first (cold) call, never inside a warm one
            offsets[q.device] = paged.indptr(s.varlen, q.device)
        cu, longest = offsets[q.device], max(s.varlen)
        out = flash_attn_varlen_func(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1),
                                     cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=longest, max_seqlen_k=longest,
                                     causal=s.causal, window_size=window)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(0, 1).unsqueeze(0)
    return attend


# what torch.compile's first call imports; a profiled first call imports them too (~800 modules,
# seconds), so every capture process preloads them
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.compile_fx")
