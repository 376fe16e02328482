"""Where and how an attention variant would run (`Setting`), and the types of its parts.

Only the capture layer imports torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from profiler.capture.masks import MaskSpec

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# prefill: a forward over the whole sequence; decode: a few query tokens against a KV cache;
# train: forward and backward, with gradients for q, k and v
MODES = ("prefill", "decode", "train")

AttentionFn = Callable[..., torch.Tensor]  # fn(q, k, v) -> out (train: fn(q, k, v, grad_out))


@dataclass(frozen=True)
class Setting:
    """Where and how a variant would run: enough to decide availability and to build it."""

    device: str = "cuda"  # 'cuda' | 'cpu'
    dtype: str = "bf16"  # a key of DTYPES
    head_dim: int = 64
    causal: bool = True
    mode: str = "prefill"  # a name of MODES
    gqa: bool = False  # fewer KV heads than query heads (k and v shaped with kv_heads)
    window: int | None = None  # a sliding window of this many keys (masks.py)
    varlen: tuple[int, ...] | None = None  # packed sequences of these lengths, batch 1

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def spec(self, q_len: int, kv_len: int) -> MaskSpec:
        """The mask of one call of this setting, from its query and key lengths."""
        return MaskSpec(q_len, kv_len, self.causal, self.window, self.varlen)


Check = Callable[[Setting], "str | None"]
Builder = Callable[[Setting], AttentionFn]
