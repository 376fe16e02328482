"""The cost of flashinfer's attention kernels, which no op of their own owns, priced from the run's
shape: on the shipped H200 samples, its decode against a paged KV cache reads the cache of its
K/V heads and length (the same FLOPs and bytes as cuDNN's op, priced from its recorded inputs, and
as the hand formula), and its windowed prefill keeps the window's pairs only."""
from __future__ import annotations

import json

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SAMPLES

DECODE = SAMPLES / "modes" / "decode_sweep"
B, H, H_KV, D, L = 8, 32, 8, 128, 8192


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("fi_costs") / "store.duckdb")
    ids = {}
    for name, path in {
        "fi": DECODE / f"flashinfer_decode_tc_decode_b{B}_h{H}_kv{H_KV}_s1_L{L}_d{D}_bf16_causal_warm_r2.json.gz",
        "cudnn": DECODE / f"sdpa_cudnn_decode_b{B}_h{H}_kv{H_KV}_s1_L{L}_d{D}_bf16_causal_warm_r2.json.gz",
        "window": SAMPLES / "modes" / "window" / "flashinfer_fa2_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz",
    }.items():
        ids[name] = store.ingest(path).run_id
    return store, ids


def _attention(store, run_id, capsys) -> dict:
    assert main(["ops", run_id, "--json", "--db", str(store.path)]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["kind"] == "attention"]
    assert len(rows) == 1, rows
    return rows[0]


def test_flashinfer_decode_reads_the_kv_cache_like_cudnn_and_the_hand_formula(store, capsys):
    db, ids = store
    fi, cudnn = _attention(db, ids["fi"], capsys), _attention(db, ids["cudnn"], capsys)
    assert fi["shape_source"] == "run shape" and cudnn["shape_source"] == "trace"
    assert fi["mode"] == cudnn["mode"] == "decode" and fi["backend"] == "flashinfer"
    cache = 2 * B * H_KV * L * D * 2            # K and V, bf16
    q_out = 2 * B * H * 1 * D * 2
    assert fi["bytes"] == cudnn["bytes"] == cache + q_out
    assert fi["flops"] == cudnn["flops"] == 4 * B * H * L * D  # one query sees every key: 2 matmuls of 2·D a pair


def test_flashinfer_window_prices_only_the_windows_pairs(store, capsys):
    db, ids = store
    row = _attention(db, ids["window"], capsys)
    n, w = 4096, 1024
    pairs = w * (w + 1) // 2 + (n - w) * w       # query p sees min(p + 1, w) keys
    assert row["flops_useful"] == 4 * 4 * 16 * 64 * pairs
