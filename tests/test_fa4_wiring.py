"""FlashAttention 4's wiring that runs on a CPU (the kernels need an sm90/sm100 GPU): its
``window_size`` against the capture's mask (masks.py), and what the variant says it can run in
each mode. The kernels themselves run in tests/gpu/test_fa4_gpu.py."""
from __future__ import annotations

import pytest
import torch

from profiler.capture.attention_fns import fa_window
from profiler.capture.masks import MaskSpec
from profiler.capture.variants import availability_by_mode
from profiler.capture.setting import Setting


def _fa_keeps(q_len: int, kv_len: int, causal: bool, window: tuple) -> torch.Tensor:
    """FlashAttention's own rule, written out: query i sits at p = i + kv_len - q_len (bottom
    right) and keeps key j when p - left <= j <= p + right; causal caps right at 0; None: no bound."""
    left, right = window
    if causal:
        right = 0 if right is None else min(right, 0)
    keep = torch.zeros(q_len, kv_len, dtype=torch.bool)
    for i in range(q_len):
        p = i + kv_len - q_len
        lo = 0 if left is None else max(0, p - left)
        hi = kv_len - 1 if right is None else min(kv_len - 1, p + right)
        keep[i, lo:hi + 1] = True
    return keep


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("q_len, kv_len", [(20, 20), (4, 20), (1, 9)])
@pytest.mark.parametrize("w", [None, 1, 3, 8])
def test_the_window_size_keeps_the_keys_of_the_captures_mask(causal, q_len, kv_len, w):
    setting = Setting(window=w, causal=causal)
    spec = MaskSpec(q_len, kv_len, causal, window=w)
    assert torch.equal(_fa_keeps(q_len, kv_len, causal, fa_window(setting)), spec.dense("cpu"))


def test_the_window_size_in_numbers():
    assert fa_window(Setting()) == (None, None)
    assert fa_window(Setting(window=1024)) == (1023, 0)
    assert fa_window(Setting(window=1024, causal=False)) == (1023, 1023)


def test_flash_attn_4_runs_every_mode_and_shape_the_hub_kernel_does_not():
    for extra in ({}, {"gqa": True}, {"window": 1024}, {"varlen": (512, 1536)}):
        by_mode = availability_by_mode(Setting(device="cuda", dtype="bf16", head_dim=128, **extra))
        for mode, rows in by_mode.items():
            reasons = {a.name: a.reason for a in rows}
            assert "not wired" not in reasons["flash_attn_4"], (mode, extra, reasons["flash_attn_4"])
            hub_refused = mode == "train" or "window" in extra or "varlen" in extra
            assert ("not wired" in reasons["hub_flash"]) == hub_refused, (mode, extra, reasons["hub_flash"])
