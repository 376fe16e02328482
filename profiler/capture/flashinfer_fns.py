"""flashinfer's attention as `fn(q, k, v) -> out` over (batch, heads, seq, dim) tensors: its batch
prefill over ragged tensors (FA2 or FA3 backend) and its batch decode against a paged KV cache.

The masks are the capture's (masks.py): causal aligned bottom-right (flashinfer's own alignment
when a query is shorter than its keys), a sliding window of W keys through ``window_left = W - 1``
(the query's own key and the W - 1 before it), packed lengths through ragged offsets (indptr) of
the queries and keys, each sequence attending to itself only. A plan is built on the first call of
a shape (the cold call pays it and, on first use, the JIT compile of the kernel), never inside a
warm call. The layouts come from `paged.py` (pure torch).
"""
from __future__ import annotations

import torch

from profiler.capture import paged
from profiler.capture.setting import AttentionFn, Builder, Setting

WORKSPACE_BYTES = 128 << 20  # flashinfer's recommended split-k workspace


def window_left(s: Setting) -> int:
    """flashinfer's left window (-1: none) for the setting's sliding window of W keys."""
    return -1 if s.window is None else s.window - 1


def _tokens(t: torch.Tensor) -> torch.Tensor:
    """(b, h, n, d) -> (b·n, h, d): a copy unless n is 1."""
    return t.transpose(1, 2).reshape(-1, t.shape[1], t.shape[-1])


def _workspace() -> torch.Tensor:
    return torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")


def build_flashinfer(backend: str) -> Builder:
    """flashinfer's batch prefill over ragged (tokens, heads, dim) tensors. Every call converts
    (batch, heads, seq, dim) to that layout and back, so the traces show three input copies next to
    the attention kernel. Packed lengths (batch 1) give the offsets of the sequences; otherwise
    every sequence of the batch has the same length."""
    def build(s: Setting) -> AttentionFn:
        import flashinfer

        wrapper = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(_workspace(), kv_layout="NHD", backend=backend)
        planned: list[tuple] = []

        def attend(q, k, v):
            b, h, n, d = q.shape
            kv_len = k.shape[-2]
            key = (b, h, n, kv_len, k.shape[1], d, q.dtype)
            if key not in planned:
                if s.varlen is not None:
                    qo = kv = paged.indptr(s.varlen)
                else:
                    qo, kv = paged.indptr([n] * b), paged.indptr([kv_len] * b)
                wrapper.plan(qo, kv, h, k.shape[1], d, causal=s.causal, window_left=window_left(s),
                             q_data_type=q.dtype)
                planned[:] = [key]
            out = wrapper.run(_tokens(q), _tokens(k), _tokens(v))
            return out.view(b, n, h, d).transpose(1, 2)
        return attend
    return build


def build_flashinfer_decode(tensor_cores: bool) -> Builder:
    """flashinfer's decode against a paged KV cache (`paged.PAGE_SIZE` tokens a page): one query
    token per sequence through ``BatchDecodeWithPagedKVCacheWrapper`` (its CUDA-core decode kernel,
    or with ``tensor_cores`` its tensor-core kernel, which flashinfer advises for GQA groups of 4
    and more); a longer query (several tokens per step) through
    ``BatchPrefillWithPagedKVCacheWrapper`` over the same cache, causal within the step. The cache
    is paged from the k and v the call gets, once per cache (as a server's cache is already paged),
    so a warm call reads the cache and writes the output only."""
    return lambda s: _decode(s, tensor_cores)


def _decode(s: Setting, tensor_cores: bool) -> AttentionFn:
    import flashinfer

    decode = flashinfer.BatchDecodeWithPagedKVCacheWrapper(_workspace(), kv_layout="NHD",
                                                           use_tensor_cores=tensor_cores)
    prefill = flashinfer.BatchPrefillWithPagedKVCacheWrapper(_workspace(), kv_layout="NHD")
    state: dict = {}

    def attend(q, k, v):
        b, h, n, d = q.shape
        key = (k.data_ptr(), v.data_ptr(), k._version, v._version, tuple(k.shape), h, n, q.dtype)
        if state.get("key") != key:
            cache = paged.page_kv(k, v)
            common = {"window_left": window_left(s), "q_data_type": q.dtype}
            if n == 1:
                decode.plan(cache.indptr, cache.indices, cache.last_page_len, h, k.shape[1], d,
                            cache.page_size, **common)
            else:
                prefill.plan(paged.indptr([n] * b, q.device), cache.indptr, cache.indices, cache.last_page_len,
                             h, k.shape[1], d, cache.page_size, causal=s.causal, **common)
            state.update(key=key, cache=cache.cache, wrapper=decode if n == 1 else prefill)
        out = state["wrapper"].run(_tokens(q), state["cache"])
        return out.view(b, n, h, d).transpose(1, 2)
    return attend
