"""flex's compiled kernels have no op: their calls are priced from the run's own shape, which must
read the mode's sizes (K/V heads, KV length, window) and count only the attention template
kernel, not the pointwise and reduction kernels inductor fused around it; an explicit mask's
window or packed lengths come from the run's shape too (real H200 samples, hand formulas)."""
from __future__ import annotations

import json

import pytest

from profiler.analysis.reads import op_costs
from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SAMPLES, ingest_all

MODES = SAMPLES / "modes"


@pytest.fixture(scope="module")
def flex_runs(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("flex-modes") / "s.duckdb")
    files = {"decode": MODES / "decode" / "flex_decode_b8_h32_kv8_s1_L8192_d128_bf16_causal_warm.json.gz",
             "train": MODES / "train" / "flex_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
             "window": MODES / "window" / "flex_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz",
             "gqa": MODES / "prefill_gqa" / "flex_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz"}
    ids = dict(zip(files, ingest_all(store, list(files.values()), source="captured")))
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
    pairs = sum(min(i + 1, w) for i in range(n))                  # each query: the w keys ending at it
    assert window["flops"] == 4 * 4 * 16 * 64 * pairs
    gqa = _attention(flex_runs["gqa"]).iloc[0]
    assert gqa["kv_group"] == 4
    assert gqa["kv_bytes"] == 2 * (2 * 4 * 8 * 2048 * 128)


VARLEN = (512, 1536, 1024, 1024)


@pytest.mark.parametrize("variant", ["flex", "sdpa_efficient", "sdpa_cudnn"])
def test_packed_lengths_make_only_each_sequences_causal_block_useful(variant, tmp_path, capsys):
    """`ops --json`: flops_useful = the sum over the packed sequences of each one's causal FLOPs,
    4·B·H·D per kept pair, L(L+1)/2 pairs a sequence; issued FLOPs are at least that."""
    db = tmp_path / "s.duckdb"
    path = MODES / "varlen" / f"{variant}_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm.json.gz"
    run = Store(db).ingest(path, source="captured").run_id
    assert main(["ops", run, "--kind", "attention", "--json", "--db", str(db)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    useful = 4 * 1 * 16 * 64 * sum(n * (n + 1) // 2 for n in VARLEN)
    assert row["flops_useful"] == row["flops"] == useful
    assert useful <= row["flops_issued"] < 4 * 16 * 64 * 4096 * 4097 // 2        # fewer than one causal square
    assert row["shape"].endswith("causal packed 512+1536+1024+1024")
    assert row["mode"] == "prefill"


def test_an_explicit_window_mask_is_priced_with_the_runs_window(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    path = MODES / "window" / "sdpa_efficient_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz"
    run = Store(db).ingest(path, source="captured").run_id
    assert main(["ops", run, "--kind", "attention", "--json", "--db", str(db)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["flops_useful"] == 4 * 4 * 16 * 64 * sum(min(i + 1, 1024) for i in range(4096))
    assert "window 1024" in row["shape"]
