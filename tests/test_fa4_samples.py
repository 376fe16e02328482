"""FlashAttention 4 on the H200, as shipped in data/samples/modes/ (bench/fa4_gpu.py captured them):
prefill with GQA, decode against 8k and 32k caches, a train step, a sliding window and packed
lengths. Each against what is computed here from the raw trace file and the shape it records:
kernel time per call (the kernels' durations over the profiled steps), the graph-replay time the
capture measured outside the profiler, FLOPs of the kept (query, key) pairs by hand, the decode
cache's bytes, and the H200's datasheet peaks."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.findings import timings
from profiler.cli.main import main
from profiler.storage.store import Store
from tests import raw_trace
from tests.conftest import SAMPLES, ingest_all

MODES = SAMPLES / "modes"
FILES = {
    "prefill_gqa": MODES / "prefill_gqa" / "flash_attn_4_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz",
    "decode_8k": MODES / "decode" / "flash_attn_4_decode_b8_h32_kv8_s1_L8192_d128_bf16_causal_warm.json.gz",
    "decode_32k": MODES / "decode" / "flash_attn_4_decode_b8_h32_kv8_s1_L32768_d128_bf16_causal_warm.json.gz",
    "train": MODES / "train" / "flash_attn_4_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
    "window": MODES / "window" / "flash_attn_4_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz",
    "varlen": MODES / "varlen" / "flash_attn_4_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm.json.gz",
}
H200_BF16_TFLOPS, H200_TBPS = 989.0, 4.8   # dense bf16 tensor-core and HBM3e datasheet peaks
BF16 = 2


def _trace(name: str) -> dict:
    with gzip.open(FILES[name], "rt") as f:
        return json.load(f)


def _kernel_us_per_call(trace: dict) -> float:
    """Kernel time summed over the trace, per profiled step (one call each)."""
    return raw_trace.us_per_step(trace["traceEvents"])


def _kept_pairs(meta: dict) -> int:
    """(query, key) pairs the mask keeps, per batch entry and query head."""
    if meta.get("varlen"):
        return sum(n * (n + 1) // 2 for n in meta["varlen"])
    if meta.get("mode") == "decode":
        return meta["seq_len"] * meta["kv_len"]           # one query sees the whole cache
    s, w = meta["seq_len"], meta.get("window")
    return sum(min(p + 1, w) for p in range(s)) if w else s * (s + 1) // 2


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("fa4-samples") / "s.duckdb")
    return store, dict(zip(FILES, ingest_all(store, list(FILES.values()), source="captured")))


def _attention_rows(store, run_id, capsys) -> list[dict]:
    assert main(["ops", run_id, "--json", "--db", str(store.path)]) == 0
    return [r for r in json.loads(capsys.readouterr().out) if r["kind"] == "attention"]


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_run_passed_its_check_and_its_kernel_time_agrees_with_graph_replay(stored, name):
    store, ids = stored
    trace = _trace(name)
    meta = trace["attention_run"]
    assert meta["variant"] == "flash_attn_4" and meta["device_name"] == "NVIDIA H200"
    assert meta["ok"] and meta["rel_error"] < meta["tolerance"]
    row = timings.run_timings(store, [ids[name]]).iloc[0]
    by_hand = _kernel_us_per_call(trace)
    assert row["kernel_us_per_call"] == pytest.approx(by_hand, rel=1e-6)
    assert abs(by_hand - meta["graph_us_per_call"]) <= 0.05 * meta["graph_us_per_call"], (by_hand, meta["graph_us_per_call"])


@pytest.mark.parametrize("name", ["prefill_gqa", "window", "varlen", "decode_8k", "decode_32k"])
def test_forward_flops_and_bytes_by_hand(stored, capsys, name):
    store, ids = stored
    meta = _trace(name)["attention_run"]
    (row,) = _attention_rows(store, ids[name], capsys)
    b, h, hk, d = meta["batch"], meta["heads"], meta.get("kv_heads") or meta["heads"], meta["head_dim"]
    assert row["mode"] == meta["mode"] and row["engine"] == "tensor core"
    assert row["flops_useful"] == row["flops"] == 4 * b * h * d * _kept_pairs(meta)
    assert row["flops_issued"] >= row["flops_useful"]
    if meta["mode"] == "decode":   # the K/V cache read once with its own (fewer) heads, plus q and out
        assert row["bytes"] == 2 * b * hk * meta["kv_len"] * d * BF16 + 2 * b * h * d * BF16


def test_the_train_step_prices_its_backward_as_five_matmuls_per_kept_pair(stored, capsys):
    store, ids = stored
    meta = _trace("train")["attention_run"]
    rows = _attention_rows(store, ids["train"], capsys)
    forward = next(r for r in rows if r["op"] == "FlashAttnFunc")
    backward = next(r for r in rows if r["mode"] == "train")
    matmul = 2 * meta["batch"] * meta["heads"] * meta["head_dim"] * _kept_pairs(meta)  # one product over the kept pairs
    assert forward["flops"] == 2 * matmul                       # QK^T and PV
    assert backward["flops"] == 5 * matmul                      # QK^T again, dV, dP, dQ, dK


@pytest.mark.parametrize("name", sorted(FILES))
def test_rates_stay_under_the_h200_peaks(name):
    trace = _trace(name)
    meta = trace["attention_run"]
    seconds = _kernel_us_per_call(trace) * 1e-6
    b, h, hk, d = meta["batch"], meta["heads"], meta.get("kv_heads") or meta["heads"], meta["head_dim"]
    flops = 4 * b * h * d * _kept_pairs(meta) * (3.5 if meta["mode"] == "train" else 1)
    assert 0 < flops / seconds / 1e12 <= H200_BF16_TFLOPS
    if meta["mode"] == "decode":
        tbps = (2 * b * hk * meta["kv_len"] * d * BF16 + 2 * b * h * d * BF16) / seconds / 1e12
        assert 2.0 < tbps <= H200_TBPS, tbps   # the cache streams at a large share of HBM bandwidth
