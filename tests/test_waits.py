"""Issue 35, verdicts from who waits for whom, against independent counts over the raw JSON:
DLRM ranks wait in collectives for rank 7 (tests/test_truth_stragglers.py's raw_waits); graph
capture traces are described as captures; FlashAttention-4's training backward is one call per
iteration at its raw rate; a training run's forward rows say "train".
"""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis import findings, job_queries, queries, verdict
from profiler.cli import ops
from profiler.storage import job_ingest, jobs
from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES
from tests.test_truth_stragglers import DLRM, raw_waits

CAPTURES = sorted((SHARED_TRACES / "graphs").glob("*/capture/*.json.gz")) if SHARED_TRACES.is_dir() else []
FA4_TRAIN = SAMPLES / "modes" / "train" / "flash_attn_4_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz"


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.delenv(jobs.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _events(path):
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return [e for e in (data if isinstance(data, list) else data["traceEvents"]) if e.get("ph") == "X"]


@pytest.mark.third_party
@pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")
def test_dlrm_ranks_wait_in_collectives_for_rank_7(db):
    job_ingest.ingest_job(db, [str(p) for p in DLRM], "dlrm", engine="in-process")
    waits = job_queries.rank_waits(db, "dlrm")
    said = verdict.rank_wait_sentences(waits, job_queries.rank_iterations(db, "dlrm"), job_queries.stragglers(waits))
    raw = raw_waits(DLRM)
    late = max(raw, key=lambda r: (raw[r]["caused"], raw[r]["last"], -r))
    assert late == 7 and 7 not in said
    for rank, w in raw.items():
        if rank == late or w["wait"] <= 0:
            continue
        assert "for rank 7, the last to arrive" in said[rank]
        assert f"waits {float(w['wait']):,.1f} µs" in said[rank], said[rank]


@pytest.mark.third_party
@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.parent.parent.name)
def test_a_capture_trace_is_described_as_a_capture(db, path):
    captures = sum(1 for e in _events(path) if "begincapture" in str(e.get("name", "")).lower())
    assert captures > 0
    run = queries.run_metrics(db, [db.ingest(path).run_id]).iloc[0]
    assert run["bound"] == "capture" and run["capture_calls"] == captures
    text = findings.bound_sentence(run, "c")
    assert text.startswith("c is a graph capture") and "CPU-bound" not in text


def test_fa4_backward_is_one_call_per_iteration_at_its_raw_rate(db):
    """The raw trace: each iteration's backward is 3 kernels (preprocess, main, postprocess) under
    one op; their time per iteration is the backward's time per call."""
    evs = _events(FA4_TRAIN)
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if str(e["name"]).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")
    bwd = [e for e in evs if e.get("cat") == "kernel" and "flash_bwd" in e["name"]]
    per_iter = sum(e["dur"] for e in bwd) / len(steps)
    rows = ops.rows(db, db.ingest(FA4_TRAIN).run_id, "all")
    (back,) = [r for r in rows if r["flops"] > 0 and abs(r["kernel_us_mean"] - per_iter) < 0.01 * per_iter]
    assert back["calls"] == len(steps)
    assert back["tflops"] == pytest.approx(back["flops"] / (per_iter * 1e-6) / 1e12, rel=0.01)
    assert {r["mode"] for r in rows if r["kind"] == "attention"} == {"train"}
