"""The layouts flashinfer reads, built from the (batch, heads, seq, dim) tensors every variant gets:
cumulative offsets of packed sequences (indptr) and a paged KV cache. Pure torch, so they run and
are tested on a CPU.

A paged cache holds K and V in pages of ``page_size`` tokens, one tensor shaped
(pages, 2, page_size, kv_heads, head_dim) (flashinfer's NHD layout: ``[:, 0]`` keys, ``[:, 1]``
values). Sequence ``i`` owns the pages ``indices[indptr[i]:indptr[i + 1]]``, in order, and its last
page holds ``last_page_len[i]`` tokens (1 to page_size).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from profiler.errors import CaptureError

PAGE_SIZE = 16  # tokens per page of the decode cache


def indptr(lengths: Sequence[int], device="cpu") -> torch.Tensor:
    """[0, l0, l0 + l1, ...] as int32: where each packed sequence starts, and the total at the end."""
    offsets = [0]
    for length in lengths:
        offsets.append(offsets[-1] + int(length))
    return torch.tensor(offsets, dtype=torch.int32, device=device)


@dataclass(frozen=True)
class PagedKV:
    cache: torch.Tensor  # (pages, 2, page_size, kv_heads, head_dim)
    indptr: torch.Tensor  # int32 (batch + 1,): each sequence's first entry in ``indices``
    indices: torch.Tensor  # int32 (pages,): the page numbers of every sequence, in order
    last_page_len: torch.Tensor  # int32 (batch,): tokens in each sequence's last page
    page_size: int


def page_kv(k: torch.Tensor, v: torch.Tensor, page_size: int = PAGE_SIZE,
            order: torch.Tensor | None = None) -> PagedKV:
    """K and V shaped (batch, kv_heads, kv_len, head_dim) laid into pages. Page ``j`` of sequence
    ``i`` (the tokens ``j·page_size`` onwards) is stored at slot ``order[i·P + j]`` of the cache
    (P pages per sequence); without ``order`` the pages are stored in sequence order. The padding
    of each last page is zeros and is never read."""
    if k.shape != v.shape or k.dim() != 4:
        raise CaptureError(f"k and v must share one (batch, kv_heads, kv_len, head_dim) shape, not "
                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    batch, kv_heads, kv_len, head_dim = k.shape
    per_seq = -(-kv_len // page_size)
    pad = per_seq * page_size - kv_len
    both = torch.stack([k, v], dim=1)  # (b, 2, h, L, d)
    if pad:
        both = torch.nn.functional.pad(both, (0, 0, 0, pad))
    # (b, 2, h, P, ps, d) -> (b, P, 2, ps, h, d) -> (b·P, 2, ps, h, d)
    pages = both.view(batch, 2, kv_heads, per_seq, page_size, head_dim).permute(0, 3, 1, 4, 2, 5)
    pages = pages.reshape(batch * per_seq, 2, page_size, kv_heads, head_dim)
    n = batch * per_seq
    slots = torch.arange(n, device=k.device) if order is None else order.to(k.device)
    if sorted(slots.tolist()) != list(range(n)):
        raise CaptureError(f"order must be a permutation of the {n} pages")
    cache = torch.empty_like(pages)
    cache[slots] = pages
    last = kv_len - (per_seq - 1) * page_size
    return PagedKV(cache=cache, indptr=indptr([per_seq] * batch, k.device),
                   indices=slots.to(torch.int32), page_size=page_size,
                   last_page_len=torch.full((batch,), last, dtype=torch.int32, device=k.device))


def gather_kv(paged: PagedKV) -> tuple[torch.Tensor, torch.Tensor]:
    """The inverse of `page_kv` read through the page table: K and V shaped (batch, kv_heads,
    kv_len, head_dim); every sequence must have the same length."""
    keys, values = [], []
    for i in range(len(paged.last_page_len)):
        start, end = int(paged.indptr[i]), int(paged.indptr[i + 1])
        pages = paged.cache[paged.indices[start:end].long()]  # (n, 2, ps, h, d)
        tokens = pages.permute(1, 0, 2, 3, 4).reshape(2, -1, *pages.shape[-2:])  # (2, n·ps, h, d)
        tokens = tokens[:, :(end - start - 1) * paged.page_size + int(paged.last_page_len[i])]
        keys.append(tokens[0].transpose(0, 1))
        values.append(tokens[1].transpose(0, 1))
    return torch.stack(keys), torch.stack(values)
