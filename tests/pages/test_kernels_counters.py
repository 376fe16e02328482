"""Kernels and Runs pages with Nsight Compute counters attached (the H200 samples' exports): the
achieved occupancy sits beside the reported and theoretical values, ncu's limiter beside ours,
and a run without counters looks as it did before."""
from __future__ import annotations

import csv

import pytest

from profiler.parse.ncu import METRICS
from profiler.storage.store import Store
from tests.test_counters import _csv, _trace

COUNTER_COLUMNS = ("occupancy_achieved_pct", "ncu_limiter_text", "dram_throughput_pct")


def _counted(path) -> dict[str, str]:
    store = Store(path)
    ids = {v: store.ingest(_trace(v), name=v).run_id for v in ("sdpa_flash", "sdpa_cudnn", "flex")}
    for variant in ("sdpa_flash", "sdpa_cudnn"):
        store.attach_counters(ids[variant], _csv(variant))
    return ids


@pytest.fixture
def counted_store(tmp_path, monkeypatch, template_store):
    """(store, {variant: run id}): flash and cuDNN with their counters attached, and flex; a copy
    of a store built once per test process."""
    path = tmp_path / "counted.duckdb"
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    ids = template_store("counted-flash-cudnn-flex", _counted, path)
    return Store(path), dict(ids)


def _first_row(variant: str) -> dict:
    with _csv(variant).open(newline="") as f:
        header, _units, row, *_ = csv.reader(f)
    cells = dict(zip(header, row))
    return {key: float(cells[metric].replace(",", "")) for key, metric in METRICS.items() if metric in cells}


def _shown_columns(at) -> set[str]:
    (frame,) = [df for df in at.dataframe if "kernel" in df.value.columns]
    return set(frame.proto.column_order)


def _kernel_table(at):
    (table,) = [df.value for df in at.dataframe if "kernel" in df.value.columns]
    return table


def test_achieved_occupancy_beside_reported_and_theoretical(pages, counted_store):
    store, ids = counted_store
    at = pages.open("kernels", runs=f"{ids['sdpa_flash']},{ids['sdpa_cudnn']}")
    pages.assert_clean(at)
    table = _kernel_table(at).set_index("run_id")
    for variant in ("sdpa_flash", "sdpa_cudnn"):
        row, expected = table.loc[ids[variant]], _first_row(variant)
        assert row["occupancy_achieved_pct"] == expected["occupancy_achieved_pct"]
        assert row["dram_throughput_pct"] == expected["dram_throughput_pct"]
        assert row["theory_occupancy_pct"] == expected["occupancy_theoretical_ncu_pct"]   # ours agrees with ncu
    assert table.loc[ids["sdpa_cudnn"], "est_occupancy_pct"] == 0.0                    # Kineto's estimate
    assert table.loc[ids["sdpa_flash"], "ncu_limiter_text"] == "registers and shared memory (2 blocks per SM each)"
    assert "Hardware counters (Nsight Compute, one warm call counted" in pages.texts(at)
    assert set(COUNTER_COLUMNS) <= _shown_columns(at)


def test_a_run_without_counters_shows_no_counter_columns(pages, counted_store):
    store, ids = counted_store
    at = pages.open("kernels", runs=ids["flex"])
    pages.assert_clean(at)
    table = _kernel_table(at)
    assert table["occupancy_achieved_pct"].isna().all()
    assert not set(COUNTER_COLUMNS) & _shown_columns(at) and "theory_occupancy_pct" in _shown_columns(at)
    assert "Hardware counters" not in pages.texts(at)
