"""Roofline of the H200 samples from the op-level cost model; the sequence-length sweep."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from profiler.analysis.findings import sweep_findings
from profiler.analysis.gpus import builtin_device
from profiler.analysis.roofline import ceilings, crossovers, roofline_table, sweep_table
from profiler.storage.store import Store
from tests.conftest import SHARED_TRACES

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"

H200 = builtin_device("NVIDIA H200")


@pytest.mark.parametrize("name", ["sdpa_flash", "naive", "sdpa_math", "sdpa_cudnn", "flex"])
def test_every_sample_point_sits_below_its_roof(sample_store, name):
    store, ids = sample_store
    roof = roofline_table(store, [ids[name]]).iloc[0]
    assert 0 < roof["tflops"] <= roof["roof_tflops"]
    assert roof["roof_tflops"] == pytest.approx(min(roof["peak_tflops"], roof["intensity"] * 4.8))  # H200 4.8 TB/s


def test_naive_sits_far_left_of_flash(sample_store):
    store, ids = sample_store
    roof = roofline_table(store, [ids["naive"], ids["sdpa_flash"]]).set_index("run_id")
    naive, flash = roof.loc[ids["naive"]], roof.loc[ids["sdpa_flash"]]
    assert naive["bytes_per_iter"] >= 10 * flash["bytes_per_iter"]
    assert naive["intensity"] * 10 < flash["intensity"]
    lines = ceilings(roof.reset_index())
    assert set(lines["ceiling"]) == {"bf16 tensor core", "fp32 CUDA core"}
    assert lines.groupby("ceiling")["tflops"].max().to_dict() == {"bf16 tensor core": 989.4, "fp32 CUDA core": 66.9}


def _sweep_trace(variant: str, seq_len: int, kernel_us: float, cold: bool = False) -> bytes:
    """A minimal captured trace: one iteration of 500 µs with one kernel and one 5 µs CPU op."""
    meta = {"variant": variant, "batch": 1, "heads": 8, "seq_len": seq_len, "head_dim": 64,
            "dtype": "bfloat16", "causal": False, "cold": cold}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 100, "dur": 500, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::attention", "pid": 1, "tid": 1, "ts": 101,
         "dur": 5, "args": {"External id": 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 102, "dur": 2, "args": {"External id": 2, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": f"{variant}_kernel", "pid": 0, "tid": 7, "ts": 110,
         "dur": kernel_us, "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 2}},
    ]
    return json.dumps({"schemaVersion": 1, "attention_run": meta, "traceEvents": events}).encode()


@pytest.fixture
def sweep_store(db_path):
    store = Store(db_path)
    ids = [store.ingest(_sweep_trace(v, n, us), name=f"{v}-{n}").run_id for v, n, us in [
        ("math", 256, 10.0), ("math", 1024, 100.0), ("math", 4096, 900.0),
        ("flash", 256, 20.0), ("flash", 1024, 40.0), ("flash", 4096, 200.0),
        ("flash2", 256, 20.5), ("flash2", 1024, 39.9), ("flash2", 4096, 200.0)]]  # a tie in noise
    ids.append(store.ingest(_sweep_trace("flash", 256, 99.0, cold=True), name="cold").run_id)
    return store, ids


def test_sweep_table_and_crossover(sweep_store):
    store, ids = sweep_store
    sweep = sweep_table(store, ids)
    assert len(sweep) == 9  # the cold run is left out
    flash = sweep[sweep["variant"] == "flash"].set_index("seq_len")
    assert flash.loc[256, "gpu_busy_us_per_iter"] == 20.0 and flash.loc[256, "cpu_busy_us_per_iter"] == 5.0
    crossed = crossovers(sweep)  # math crosses flash and flash2; flash vs flash2 is within 5 %
    assert sorted(zip(crossed["variant_a"], crossed["variant_b"])) == [("flash", "math"), ("flash2", "math")]
    cross = crossed[crossed["variant_a"] == "flash"].iloc[0]
    assert (cross["seq_len_lo"], cross["seq_len_hi"]) == (256, 1024)
    assert (cross["faster_below"], cross["faster_above"]) == ("math", "flash")
    assert len(crossovers(sweep, min_gap=0.0)) == 3


def test_sweep_finding_sentence(sweep_store):
    store, ids = sweep_store
    finding = [f for f in sweep_findings(store, ids) if f.evidence["variant_a"] == "flash"][0]
    assert finding.kind == "crossover"
    assert finding.text == ("math is faster at L=256 (10.0 vs 20.0 µs GPU busy per iteration) but flash "
                            "is faster at L=1024 (40.0 vs 100.0 µs): they cross over between "
                            "these lengths.")
    json.dumps(finding.evidence, allow_nan=False)


def test_op_costs_computed_on_threads_equal_one_after_the_other(sample_store, monkeypatch):
    from profiler.analysis import op_costs

    store, ids = sample_store
    runs = list(ids.values())
    store.cache.clear()
    with store.session() as db:  # runs computed on threads, a session each
        apart = op_costs.op_calls(db, runs)
    store.cache.clear()
    monkeypatch.setattr(op_costs, "APART_THREADS", 1)  # one run after the other, on this session
    with store.session() as db:
        serial = op_costs.op_calls(db, runs)
    store.cache.clear()
    assert len(runs) >= 2 and not apart.empty
    assert apart.equals(serial)
