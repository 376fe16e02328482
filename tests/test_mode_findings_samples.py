"""The findings that explain a mode (`mode_findings`) on the real H200 samples of data/samples/modes,
each against a computation made here from the raw trace file and the shape it records: decode's
TB/s and share of the H200's 4.8 TB/s, the math backward's probability matrix, and which variants
profit from GQA."""
from __future__ import annotations

import gzip
import json
import math

import pytest

from profiler.analysis.findings import findings
from profiler.storage.store import Store
from tests import raw_trace
from tests.conftest import SAMPLES, ingest_all

MODES = SAMPLES / "modes"
H200_TBPS = 4.8
SIZE = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2}
FILES = {
    "decode_cudnn": MODES / "decode" / "sdpa_cudnn_decode_b8_h32_kv8_s1_L32768_d128_bf16_causal_warm.json.gz",
    "decode_flash": MODES / "decode" / "sdpa_flash_decode_b8_h32_kv8_s1_L32768_d128_bf16_causal_warm.json.gz",
    "train_math": MODES / "train" / "sdpa_math_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
    "train_flash": MODES / "train" / "sdpa_flash_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
    **{f"gqa_{v}": MODES / "prefill_gqa" / f"{v}_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz"
       for v in ("naive", "sdpa_math", "sdpa_flash", "flex")},
}


def _trace(name: str) -> dict:
    with gzip.open(FILES[name], "rt") as f:
        return json.load(f)


def _steps(trace: dict) -> int:
    return len(raw_trace.steps(trace["traceEvents"]))


@pytest.fixture(scope="module")
def store_ids(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("mode-findings") / "s.duckdb")
    return store, dict(zip(FILES, ingest_all(store, list(FILES.values()), source="captured")))


def _kind(found, kind):
    return next(f for f in found if f.kind == kind)


def test_decode_names_the_variant_reading_the_cache_closest_to_hbm_bandwidth(store_ids):
    store, ids = store_ids
    found = _kind(findings.compare_findings(store, ids["decode_cudnn"], ids["decode_flash"], limit=None),
                  "decode_bandwidth")
    expected = {}
    for name in ("decode_cudnn", "decode_flash"):
        trace = _trace(name)
        meta = trace["attention_run"]
        b, h, hk, kv, d = meta["batch"], meta["heads"], meta["kv_heads"], meta["kv_len"], meta["head_dim"]
        nbytes = 2 * (2 * b * hk * kv * d) + 2 * (2 * b * h * 1 * d)     # bf16 K and V once; Q and O
        kernel_s = sum(e["dur"] for e in trace["traceEvents"] if e.get("cat") == "kernel") * 1e-6 / _steps(trace)
        expected[ids[name]] = nbytes / kernel_s / 1e12
    runs = found.evidence["runs"]
    for run, tbps in expected.items():
        assert runs[run]["tbps"] == pytest.approx(tbps, rel=1e-3)
        assert runs[run]["pct_of_bandwidth"] == pytest.approx(100 * tbps / H200_TBPS, rel=1e-3)
        assert f"{100 * tbps / H200_TBPS:.0f} % of the 4.80 TB/s HBM bandwidth" in found.text
    assert found.evidence["winner"] == max(expected, key=expected.get) == ids["decode_cudnn"]
    assert "memory-bound" in found.text and "reads the cache closest to the memory bandwidth" in found.text


def test_the_math_backward_keeps_the_probability_matrix_and_a_fused_one_does_not(store_ids):
    store, ids = store_ids
    found = _kind(findings.run_findings(store, ids["train_math"]), "probability_matrix")
    softmax = next(e for e in _trace("train_math")["traceEvents"]
                   if e.get("cat") == "cpu_op" and e["name"] == "aten::_softmax")
    dims, kind = softmax["args"]["Input Dims"][0], softmax["args"]["Input type"][0]
    assert len(dims) == 4 and dims[2] == dims[3] == 1024
    matrix = math.prod(dims) * SIZE[kind]                           # 8x16x1024x1024 fp32: 512 MiB
    assert found.evidence["runs"][ids["train_math"]]["matrix_bytes"] == matrix
    assert f"{matrix / 2**20:,.1f} MiB per call" in found.text
    assert not [f for f in findings.run_findings(store, ids["train_flash"]) if f.kind == "probability_matrix"]


def test_gqa_says_which_variants_profit(store_ids):
    store, ids = store_ids
    for variant in ("naive", "sdpa_math", "sdpa_flash", "flex"):
        name = f"gqa_{variant}"
        trace = _trace(name)
        meta = trace["attention_run"]
        expands = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == "aten::copy_"
                   and len((e["args"].get("Input Dims") or [[]])[0]) == 5]
        copies_k_v = any(e["name"] == "aten::repeat_interleave" for e in trace["traceEvents"])
        found = _kind(findings.run_findings(store, ids[name]), "gqa_bytes")
        evidence = found.evidence["runs"][ids[name]]
        assert evidence["profits"] is (not copies_k_v), variant
        assert evidence["kv_group"] == meta["heads"] // meta["kv_heads"] == 4
        if copies_k_v:   # each copy reads and writes (batch, kv heads, group, keys, dim)
            moved = sum(2 * math.prod(e["args"]["Input Dims"][0]) * SIZE[e["args"]["Input type"][0]]
                        for e in expands) / _steps(trace)
            assert evidence["expand_bytes_per_iter"] == moved
            assert "does not profit" in found.text
        else:
            b, hk, n, d = meta["batch"], meta["kv_heads"], meta["seq_len"], meta["head_dim"]
            assert evidence["kv_bytes"] == 2 * b * hk * n * d * 2 and evidence["kv_bytes_without_gqa"] == 4 * evidence["kv_bytes"]
    assert {v for v in ("naive", "sdpa_math", "sdpa_flash", "flex")
            if _kind(findings.run_findings(store, ids[f"gqa_{v}"]), "gqa_bytes").evidence["runs"][ids[f"gqa_{v}"]]["profits"]} \
        == {"sdpa_flash", "flex"}
    pair = _kind(findings.compare_findings(store, ids["gqa_naive"], ids["gqa_sdpa_flash"], limit=None), "gqa_bytes")
    assert pair.text.endswith(f"Profit from GQA: {pair.text.split(' uses GQA')[0].split('; ')[-1]}; not: "
                              f"{pair.text.split(' copies K and V')[0]}.")
