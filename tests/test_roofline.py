"""Roofline of the H200 samples from the op-level cost model (the sweeps: tests/test_sweeps.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from profiler.analysis.gpus import builtin_device
from profiler.analysis.roofline import ceilings, roofline_table

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
