"""The cold-vs-warm finding on the H200 samples: cuDNN's first call names the plan build and its
time, checked against a computation from the trace JSON written here, and counts nothing of ours."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.findings import findings
from profiler.analysis.reads import units
from profiler.capture.samples import SAMPLES_DIR
from profiler.storage.store import Store

OP = "aten::_cudnn_attention_forward"


def _path(variant: str, cold: bool):
    return SAMPLES_DIR / "default" / f"{variant}_b8_h16_s1024_d64_bf16_causal_{'cold' if cold else 'warm'}.json.gz"


def _self_us_per_iteration(path, name: str) -> float:
    """Self time of the `name` CPU ops (their span minus their direct children's), per ProfilerStep."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    steps = sum(e["name"].startswith("ProfilerStep#") for e in ops)

    def inside(child, parent):
        return (child is not parent and child["tid"] == parent["tid"] and parent["ts"] <= child["ts"]
                and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"])
    total = 0.0
    for op in (o for o in ops if o["name"] == name):
        kids = [c for c in ops if inside(c, op)]
        direct = [c for c in kids if not any(inside(c, k) for k in kids)]
        total += op["dur"] - sum(c["dur"] for c in direct)
    return total / steps


@pytest.fixture(scope="module")
def cudnn(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("cold") / "store.duckdb")
    cold, warm = (store.ingest(_path("sdpa_cudnn", c), source="captured").run_id for c in (True, False))
    return store, cold, warm


def test_cudnn_cold_start_names_the_plan_build_and_its_time(cudnn):
    store, cold, warm = cudnn
    (finding,) = [f for f in findings.compare_findings(store, warm, cold) if f.kind == "cold_start"]
    extra_us = _self_us_per_iteration(_path("sdpa_cudnn", True), OP) - _self_us_per_iteration(
        _path("sdpa_cudnn", False), OP)
    assert finding.evidence["top_op"] == OP
    assert finding.evidence["top_extra_us"] == pytest.approx(extra_us, rel=1e-6)
    assert extra_us > 500_000  # the plan build: most of a second on this H200
    assert f"{units.duration(extra_us)} more CPU time is spent in {OP}: the plan build" in finding.text
    with gzip.open(_path("sdpa_cudnn", True), "rt") as f:
        meta = json.load(f)["attention_run"]
    assert f"the first call takes {units.duration(meta['wall_us_per_call'])}" in finding.text


def test_the_cold_run_holds_no_copy_or_check_of_ours(cudnn):
    store, cold, _ = cudnn
    names = set(store.query("SELECT name FROM ops WHERE run_id = ?", [cold])["name"])
    assert "check_output" not in names
    copies = store.query("SELECT name FROM memops WHERE run_id = ? AND name LIKE 'Memcpy DtoH%'", [cold])
    assert copies.empty


def test_flash_attn_4_cold_start_names_its_kernel_compile(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    cold, warm = (store.ingest(_path("flash_attn_4", c), source="captured").run_id for c in (True, False))
    (finding,) = [f for f in findings.compare_findings(store, warm, cold) if f.kind == "cold_start"]
    op = finding.evidence["top_op"]
    extra_us = _self_us_per_iteration(_path("flash_attn_4", True), op) - _self_us_per_iteration(
        _path("flash_attn_4", False), op)
    assert finding.evidence["top_extra_us"] == pytest.approx(extra_us, rel=1e-6)
    assert extra_us > 1_000_000  # the JIT compile of its CuTe DSL kernel: seconds on this H200
    assert finding.evidence["cause"] == "FlashAttention 4 compiling its CuTe DSL kernel on first use"
