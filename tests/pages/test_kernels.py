"""Kernels page on the fixture store: per-run tables, chart, search filter in the URL, empty state."""
from __future__ import annotations

import pytest

from tests.pages.conftest import FLASH, NAIVE, ROCM, param as _param, shown


def _tables(at):
    """The kernel table split per run, in the selected order (not the roofline table)."""
    (table,) = [df.value for df in at.dataframe if "kernel" in df.value.columns]
    return [table[table["run_id"] == run].reset_index(drop=True) for run in at.query_params["runs"].split(",")]


def test_one_table_per_run_with_per_iteration_numbers(pages, page_store, run_ids):
    at = pages.open("kernels", runs=f"{run_ids[FLASH]},{run_ids[NAIVE]}")
    pages.assert_clean(at)
    flash, naive = _tables(at)
    row = flash.iloc[0]
    assert "flash_fwd_kernel" in row["kernel"]
    # the fixture: one 150.5 µs kernel per ProfilerStep, 2 steps, 98,304 B of shared memory
    assert (row["calls_per_iter"], row["us_per_iter"], row["gpu_time_share_pct"]) == (1.0, 150.5, 100.0)
    assert (row["grid"], row["shared_mem_bytes"], row["est_occupancy_pct"]) == ("16×32×1", 98304, 0.0)
    # the fixture records no block size, so the calculator says why it cannot run
    assert row["occupancy_limiter"] == "unknown" and row["tc_engine"] == "tensor core"
    assert naive["kernel"].tolist() == ["void at::native::elementwise_kernel<128, 2>"]
    assert naive["name"].tolist() == ["elementwise_kernel<128, 2>"]  # short, the full name beside it
    assert len(at.get("vega_lite_chart")) == 2                  # top kernels + roofline
    assert len(at.get("download_button")) == 1


def test_folded_sections_are_read_and_sent_only_when_opened(pages, page_store, run_ids):
    """Over 2 runs the kernel table and the roofline are folded: closed, the page sends neither;
    opened, each is there, and one run opens both."""
    runs = f"{run_ids[FLASH]},{run_ids[NAIVE]}"
    at = pages.open("kernels", runs=runs, opened=())
    pages.assert_clean(at)
    assert [shown(e.label).split(":")[0] for e in at.expander] == ["Kernel table", "Roofline"]
    assert not [df for df in at.dataframe if "kernel" in df.value.columns or "roof_tflops" in df.value.columns]
    assert len(at.get("vega_lite_chart")) == 1 and not at.get("download_button")   # the kernel time chart only
    at.session_state["kernels-table"] = True   # the user unfolds the kernel table: the page runs again
    at.run()
    pages.assert_clean(at)
    assert len(_tables(at)) == 2 and len(at.get("download_button")) == 1
    assert len(at.get("vega_lite_chart")) == 1                  # the roofline still folded
    one = pages.open("kernels", runs=run_ids[FLASH], opened=())
    assert len(one.get("vega_lite_chart")) == 2 and len(_tables(one)) == 1


def test_search_filters_tables_and_is_kept_in_the_url(pages, page_store, run_ids):
    at = pages.open("kernels", runs=f"{run_ids[FLASH]},{run_ids[NAIVE]}")
    at.text_input[0].input("FLASH").run()
    pages.assert_clean(at)
    flash, naive = _tables(at)
    assert len(flash) == 1 and naive.empty
    assert _param(at, "q") == ["FLASH"]


@pytest.mark.third_party
def test_query_params_restore_the_search(pages, page_store, run_ids):
    at = pages.open("kernels", runs=run_ids[ROCM], q="hipLaunch-none")
    pages.assert_clean(at)
    assert at.text_input[0].value == "hipLaunch-none"
    assert "No kernels match." in pages.texts(at)


@pytest.mark.third_party
def test_rocm_run_without_registers_still_renders(pages, page_store, run_ids):
    at = pages.open("kernels", runs=run_ids[ROCM])
    pages.assert_clean(at)
    (table,) = _tables(at)
    assert len(table) > 0 and table["registers_per_thread"].isna().all()


def test_a_run_without_kernels_says_so(pages, page_store, run_ids):
    with page_store.connect() as con:
        con.execute("DELETE FROM kernels WHERE run_id = ?", [run_ids[FLASH]])
    at = pages.open("kernels", runs=run_ids[FLASH])
    pages.assert_clean(at)
    assert "The selected runs recorded no GPU kernels." in pages.texts(at)


def test_no_runs_selected_shows_the_empty_state(pages, empty_store):
    at = pages.open("kernels")
    pages.assert_clean(at)
    assert "No runs selected" in pages.texts(at)
    assert not at.dataframe


@pytest.mark.third_party
def test_roofline_for_captured_runs_and_uploads_with_shapes(pages, page_store, run_ids):
    at = pages.open("kernels", runs=f"{run_ids[FLASH]},{run_ids[ROCM]}")
    pages.assert_clean(at)
    (roof,) = [df.value for df in at.dataframe if "roof_tflops" in df.value.columns]
    roof = roof.set_index("run_id")
    assert roof.loc[run_ids[FLASH], "run"].endswith(run_ids[FLASH][:6])   # the run's label, as in every table
    # causal 2×4×256×64: 4 FLOPs × 64 × (2·4·256·257/2) score elements in 150.5 µs per step
    flops = 4 * 64 * (2 * 4 * 256 * 257 // 2)
    assert roof.loc[run_ids[FLASH], "tflops"] == pytest.approx(flops / 150.5e-6 / 1e12)
    # the ROCm upload recorded shapes: its GEMMs are priced from the trace (fp32 on MFMA)
    assert roof.loc[run_ids[ROCM], "flops_per_iter"] > 0 and roof.loc[run_ids[ROCM], "dtype"] == "fp32"
    assert len(at.get("vega_lite_chart")) == 2                  # top kernels + roofline


def test_roofline_empty_state_without_modelled_ops(pages, page_store, run_ids):
    with page_store.connect() as con:   # the run's ops and shape gone: nothing the model can price
        con.execute("DELETE FROM ops WHERE run_id = ?", [run_ids[FLASH]])
        con.execute("UPDATE traces SET seq_len = NULL WHERE run_id = ?", [run_ids[FLASH]])
    at = pages.open("kernels", runs=run_ids[FLASH])
    pages.assert_clean(at)
    assert "No roofline" in pages.texts(at)
    assert "no launching op" in pages.texts(at)          # the real reason, not "needs record_shapes"
