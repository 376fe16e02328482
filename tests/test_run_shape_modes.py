"""flex's compiled kernels have no op: their calls are priced from the run's own shape, which must
read the mode's sizes (K/V heads, KV length, window) and count only the attention template
kernel, not the pointwise and reduction kernels inductor fused around it (real H200 samples)."""
from __future__ import annotations

import pytest

from profiler.analysis import op_costs
from profiler.storage.store import Store
from tests.conftest import SAMPLES

MODES = SAMPLES / "modes"


@pytest.fixture(scope="module")
def flex_runs(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("flex-modes") / "s.duckdb")
    files = {"decode": MODES / "decode" / "flex_decode_b8_h32_kv8_s1_L8192_d128_bf16_causal_warm.json.gz",
             "train": MODES / "train" / "flex_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
             "window": MODES / "window" / "flex_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz",
             "gqa": MODES / "prefill_gqa" / "flex_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz"}
    ids = {k: store.ingest(p, source="captured").run_id for k, p in files.items()}
    with store.session() as db:
        calls = op_costs.op_calls(db, list(ids.values()))
    return {k: calls[calls["run_id"] == r] for k, r in ids.items()}


def _attention(calls):
    return calls[calls["kind"] == "attention"]


def test_flex_decode_reads_the_kv_cache_once_a_step(flex_runs):
    calls = _attention(flex_runs["decode"])
    assert len(calls) == calls["iteration"].nunique() == 3           # one call a step, not 4 kernels
    b, h, hk, kv, d = 8, 32, 8, 8192, 128
    assert set(calls["mode"]) == {"decode"}
    assert set(calls["bytes"]) == {2 * (2 * b * h * d + 2 * b * hk * kv * d)}   # q, out; K and V of the cache
    assert set(calls["flops"]) == {4 * b * h * d * kv}                          # the one query sees every key


def test_flex_train_prices_one_forward_and_one_backward_a_step(flex_runs):
    calls = _attention(flex_runs["train"])
    per_step = calls.groupby("iteration")["shape"].agg(sorted)
    assert all(s == ["8x16x1024x64 causal", "8x16x1024x64 causal backward"] for s in per_step)


def test_flex_window_and_gqa_take_the_runs_window_and_kv_heads(flex_runs):
    window = _attention(flex_runs["window"]).iloc[0]
    n, w = 4096, 1024
    pairs = sum(min(i, w) + 1 for i in range(n))                  # each query: itself and w keys before it
    assert window["flops"] == 4 * 4 * 16 * 64 * pairs
    gqa = _attention(flex_runs["gqa"]).iloc[0]
    assert gqa["kv_group"] == 4
    assert gqa["kv_bytes"] == 2 * (2 * 4 * 8 * 2048 * 128)
