"""Which keys each query attends to in a capture's shape: the one definition of the mask.

Positions are aligned bottom-right: the last query sits at the last key, so query ``i`` of ``q_len``
is at position ``p = i + kv_len - q_len`` (decode: the new tokens come after the KV cache). Then

- causal: query ``p`` sees keys ``j <= p``;
- a sliding window ``W``: keys ``p - W < j`` too (the W keys that end at the query); without the
  causal mask, ``|p - j| < W``;
- packed lengths (``varlen``): the sequences are laid end to end (offsets are their cumulative
  sums) and a query sees keys of its own sequence only (a block-diagonal mask).

``keep(q_idx, kv_idx)`` is the predicate over index tensors (flex attention's mask_mod reads it);
``dense`` gives it as a (q_len, kv_len) bool matrix (True: attends) for naive and SDPA's masks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class MaskSpec:
    q_len: int
    kv_len: int
    causal: bool = True
    window: int | None = None
    varlen: tuple[int, ...] | None = None

    @property
    def offset(self) -> int:
        return self.kv_len - self.q_len

    @property
    def plain_causal(self) -> bool:
        """Causal over a square: what `is_causal` and a triu mask mean without help."""
        return self.causal and self.offset == 0 and self.window is None and self.varlen is None

    @property
    def everything(self) -> bool:
        """Every query sees every key (no mask at all): full attention, or causal decode of one
        token (it comes after every key of the cache)."""
        if self.window is not None or self.varlen is not None:
            return False
        return not self.causal or (self.q_len == 1 and self.kv_len >= 1)

    def documents(self, device) -> torch.Tensor:
        """The sequence each packed token belongs to (0, 0, ..., 1, 1, ...)."""
        lengths = torch.tensor(self.varlen, device=device)
        return torch.repeat_interleave(torch.arange(len(self.varlen), device=device), lengths)

    def mask_mod(self, device):
        """keep(b, h, q_idx, kv_idx) for flex attention (and, over broadcast indices, `dense`)."""
        docs = self.documents(device) if self.varlen is not None else None
        offset, causal, window = self.offset, self.causal, self.window

        def keep(b, h, q_idx, kv_idx):
            p = q_idx + offset
            ok = (q_idx >= 0) & (kv_idx >= 0)  # every pair, broadcast over both indices
            if causal:
                ok = ok & (kv_idx <= p)
            if window is not None:
                ok = ok & (p - kv_idx < window)
                if not causal:
                    ok = ok & (kv_idx - p < window)
            if docs is not None:
                ok = ok & (docs[q_idx] == docs[kv_idx])
            return ok
        return keep

    def dense(self, device) -> torch.Tensor:
        q_idx = torch.arange(self.q_len, device=device)[:, None]
        kv_idx = torch.arange(self.kv_len, device=device)[None, :]
        return self.mask_mod(device)(None, None, q_idx, kv_idx)
