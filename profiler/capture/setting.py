"""Where and how an attention variant would run (`Setting`), and the types of its parts.

Only the capture layer imports torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

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
