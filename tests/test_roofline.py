"""Roofline of the H200 samples from the op-level cost model (the sweeps: tests/test_sweeps.py)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from profiler.analysis.model.gpus import builtin_device
from profiler.analysis.reads.roofline import ceilings, roofline_table

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


@pytest.mark.third_party
def test_op_costs_of_real_traces_read_at_once_equal_each_read_alone(real_and_samples):
    """Third-party traces (older Kineto: launches that the op with their External id does not
    enclose, so the model looks up each thread's ops): read for all runs at once, as alone."""
    from profiler.analysis.model import arrays
    from profiler.analysis.reads import op_costs, op_pricing
    from tests.conftest import real_traces

    store, ids = real_and_samples    # a copy of a store of every real trace (tests/conftest.py)
    runs = [ids[p] for p in real_traces()]
    with store.session() as db:
        known = op_pricing.about(db, runs, work=True)
        together = op_costs.op_calls(db, runs)
        alone = [op_pricing.run_op_calls(db, r)[0] for r in runs]
    assert sum(known.read[r].threads is not None for r in runs) >= 5    # the threads' ops read, in one query
    alone = pd.DataFrame(arrays.concat([c for c in alone if arrays.rows(c)]), columns=op_costs.CALL_ORDER)
    assert len(together) == len(alone) > 1000
    pd.testing.assert_frame_equal(together.reset_index(drop=True), alone.reset_index(drop=True))


def test_op_costs_read_for_many_runs_at_once_equal_each_run_read_alone(sample_store):
    """The model reads every run's ops, names and threads in one query each (`op_pricing.about`);
    the priced calls are the same as when each run is read by itself."""
    from profiler.analysis.model import arrays
    from profiler.analysis.reads import op_costs, op_pricing

    store, ids = sample_store
    runs = list(ids.values())
    store.cache.clear()
    with store.session() as db:
        together = op_costs.op_calls(db, runs)
        alone = [op_pricing.run_op_calls(db, r)[0] for r in runs]     # no `known`: its own queries
    store.cache.clear()
    alone = pd.DataFrame(arrays.concat([c for c in alone if arrays.rows(c)]), columns=op_costs.CALL_ORDER)
    assert len(runs) >= 2 and len(together) == len(alone) > 0
    pd.testing.assert_frame_equal(together.reset_index(drop=True), alone.reset_index(drop=True))
