"""Attention page: the attention ops of a run with the cost model's numbers, the roofline, and
the empty state for a run without modelled ops."""
from __future__ import annotations

import pytest

from tests.pages.conftest import FLASH, NAIVE


def test_attention_op_row_and_roofline(pages, page_store, run_ids):
    at = pages.open("attention", runs=f"{run_ids[FLASH]},{run_ids[NAIVE]}")
    pages.assert_clean(at)
    tables = [df.value for df in at.dataframe if "share_of_gpu_pct" in df.value.columns]
    flash = tables[0].iloc[0]
    assert (flash["op"], flash["backend"], flash["shape"]) == (
        "aten::scaled_dot_product_attention", "flash", "2x4x256x64 causal")
    assert flash["flops"] == 4 * 64 * (2 * 4 * 256 * 257 // 2)
    assert flash["kernel_us_mean"] == pytest.approx(150.5)
    assert len(at.get("vega_lite_chart")) == 1                  # the roofline
    at.toggle[0].set_value(True).run()                           # one point per op
    pages.assert_clean(at)


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("attention")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)


def test_fp32_gemm_finding_on_the_math_sample(pages, page_store):
    from tests.conftest import SAMPLES
    run = page_store.ingest(SAMPLES / "default" / "sdpa_math_b8_h16_s1024_d64_bf16_causal_warm.json.gz").run_id
    at = pages.open("attention", runs=run)
    pages.assert_clean(at)
    assert any("in fp32 on CUDA cores" in t.value for t in at.text)
    (table,) = [df.value for df in at.dataframe if "share_of_gpu_pct" in df.value.columns]
    assert set(table["engine"]) == {"CUDA core"} and set(table["dtype"]) == {"fp32"}


@pytest.mark.third_party
def test_attention_in_the_qwen_h100_trace(pages, page_store):
    from tests.conftest import SHARED_TRACES
    run = page_store.ingest(SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz").run_id
    at = pages.open("attention", runs=run)
    pages.assert_clean(at)
    (table,) = [df.value for df in at.dataframe if "share_of_gpu_pct" in df.value.columns]
    sdpa = table[table["kind"] == "attention"].iloc[0]
    assert (sdpa["backend"], sdpa["shape"], sdpa["shape_source"]) == ("flash", "16x16x559x64 causal", "trace")
    assert sdpa["calls"] >= 24 and 0 < sdpa["share_of_gpu_pct"] < 100 and 0 < sdpa["pct_of_peak"] < 100
    assert (table["kind"] == "gemm").sum() == 5                  # the top GEMMs by kernel time
    (totals,) = [df.value for df in at.dataframe if "bytes_per_iter" in df.value.columns]
    assert totals.loc[0, "tflops"] < totals.loc[0, "roof_tflops"]
