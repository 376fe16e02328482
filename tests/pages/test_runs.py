"""Runs page: catalog from a real store, selection <-> ?runs=, rename, delete, empty state."""
from __future__ import annotations

import functools
import shutil
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from profiler.analysis.reads import run_queries
from profiler.capture import samples
from profiler.capture.samples import sample_files
from profiler.present.ui import session
from profiler.storage import catalog
from tests.pages.conftest import FLASH, NAIVE, ROCM


def _catalog(at):
    return next(df.value for df in at.dataframe if "variant" in df.value.columns)


def test_catalog_lists_every_run_with_its_metadata(pages, page_store, run_ids):
    at = pages.open("runs")
    pages.assert_clean(at)
    table = _catalog(at).set_index("run_id")
    assert set(table.index) == set(run_ids.values())
    flash = table.loc[run_ids[FLASH]]
    assert (flash["variant"], flash["shape"], flash["dtype"]) == ("sdpa_flash", "2×4×256×64", "bf16")
    assert flash["gpu_name"] == "NVIDIA H200" and flash["iterations"] == 2
    # hand-computed from the fixture: one 150.5 µs kernel per step
    assert flash["kernels_per_iter"] == 1 and flash["gpu_busy_us_per_iter"] == 150.5
    assert 0 < flash["gpu_busy_pct"] <= 100 and flash["bound"] in {"gpu", "cpu", "sync", "launch", "annotation", "unrecorded"}
    if ROCM in run_ids:  # the third-party ROCm upload, where present
        rocm = table.loc[run_ids[ROCM]]
        assert rocm["source"] == "uploaded" and pd.isna(rocm["variant"])
    assert f"{len(run_ids)} runs in the store" in pages.texts(at)
    # the line a first visit shows before the table's modules load is gone once the table is drawn
    assert "their table is on its way" not in pages.texts(at)


def test_selection_comes_from_the_url_and_offers_the_analysis_pages(pages, page_store, run_ids):
    runs = f"{run_ids[FLASH]},{run_ids[NAIVE]}"
    at = pages.open("runs", runs=runs)
    pages.assert_clean(at)
    assert at.query_params["runs"] == runs
    assert "**2 selected.**" in pages.texts(at)
    shared = [c.value for c in at.code]
    assert any(v.endswith(f"/?runs={runs}") for v in shared), shared


def test_selecting_rows_writes_the_url(pages, page_store, run_ids):
    at = pages.open("runs")
    frame = next(df for df in at.dataframe if "variant" in df.value.columns)
    table, key = frame.value, frame.key
    naive_row = list(table["run_id"]).index(run_ids[NAIVE])
    at.session_state[key] = {"selection": {"rows": [naive_row], "columns": [], "cells": []}}
    at.run()
    pages.assert_clean(at)
    assert at.query_params["runs"] == run_ids[NAIVE]


def test_rename_changes_the_name_everywhere(pages, page_store, run_ids):
    at = pages.open("runs", runs=run_ids[FLASH])
    at.text_input(key="rename_to").input("flash after the fix")
    next(b for b in at.button if b.label == "Rename").click()
    at.run()
    pages.assert_clean(at)
    labels = run_queries.run_labels(page_store, [run_ids[FLASH]])
    assert labels["name"].tolist() == ["flash after the fix"]
    assert "flash after the fix" in set(_catalog(at)["name"])


def test_rename_to_blank_is_a_plain_error(pages, page_store, run_ids):
    at = pages.open("runs", runs=run_ids[FLASH])
    at.text_input(key="rename_to").input("   ")
    next(b for b in at.button if b.label == "Rename").click()
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["A run name cannot be empty."]


def _keep(page_store, name: str, run_id: str) -> Path:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "pages" / name
    with open(fixture, "rb") as f:
        return catalog.keep_trace(f, Path(page_store.path).parent / "traces", run_id)


def test_one_selected_run_offers_its_original_trace(pages, page_store, run_ids):
    _keep(page_store, FLASH, run_ids[FLASH])
    at = pages.open("runs", runs=run_ids[FLASH])
    pages.assert_clean(at)
    button = next(b for b in at.get("download_button") if "trace" in b.proto.label)
    assert button.proto.label == "Download the trace (.json.gz, opens in ui.perfetto.dev)"
    at = pages.open("runs", runs=run_ids[NAIVE])  # nothing kept for this one
    assert "This server has no copy of this run's original trace" in pages.texts(at)


def test_delete_needs_confirmation_then_removes_the_runs(pages, page_store, run_ids):
    kept = _keep(page_store, FLASH, run_ids[FLASH])
    at = pages.open("runs", runs=f"{run_ids[FLASH]},{run_ids[NAIVE]}")
    delete = next(b for b in at.button if b.label == "Delete")
    assert delete.disabled
    at.checkbox[0].check().run()
    next(b for b in at.button if b.label == "Delete").click().run()
    pages.assert_clean(at)
    left = set(run_queries.run_catalog(page_store)["run_id"])
    assert run_ids[FLASH] not in left and run_ids[NAIVE] not in left and len(left) == len(run_ids) - 2
    assert not kept.exists(), "the kept trace goes with the run"
    assert run_queries.run_metrics(page_store, [run_ids[FLASH], run_ids[NAIVE]]).empty  # and its metrics
    assert "runs" not in at.query_params


def test_empty_store_points_to_profile_and_upload(pages, empty_store):
    at = pages.open("runs")
    pages.assert_clean(at)
    assert "The store has no runs yet" in pages.texts(at)
    assert {p.label for p in at.get("page_link")} >= {"Profile attention variants", "Upload traces"}


def test_a_new_store_opens_with_every_shipped_sample_at_once(pages, empty_store, monkeypatch):
    """A store not made yet is the shipped samples' store unpacked (data/samples.duckdb.gz): the
    first page lists every sample, with no seeding behind it."""
    monkeypatch.delenv("PROFILER_SEED")
    assert not empty_store.path.exists()
    at = pages.open("runs")
    pages.assert_clean(at)
    assert not at.get("progress")
    table = _catalog(at)
    assert len(table) == len(sample_files()) > 0
    assert set(table["source"]) == {"captured"} and set(table["gpu_name"]) == {"NVIDIA H200"}


def _some_samples(folder: Path, every: int = 10) -> Path:
    """Every `every`-th shipped sample (and its counters), in `folder` as in data/samples."""
    for path in sample_files()[::every]:
        for part in (path, samples.counters_file(path)):
            if part.is_file():
                dest = folder / part.relative_to(samples.SAMPLES_DIR)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(part, dest)
    return folder


@pytest.mark.slow  # ingests a tenth of the shipped samples behind the page (test_samples.py: all of them)
def test_without_a_matching_shipped_store_the_samples_are_seeded(pages, empty_store, monkeypatch, tmp_path):
    monkeypatch.delenv("PROFILER_SEED")
    monkeypatch.setattr(samples, "SHIPPED", empty_store.path.with_name("absent.duckdb.gz"))
    some = _some_samples(tmp_path / "samples")
    monkeypatch.setattr(session, "seed_in_background", functools.partial(samples.seed_in_background, samples_dir=some))
    at = pages.open("runs")  # the first page comes at once; the samples load behind it
    pages.assert_clean(at)
    assert "Loading the shipped H200 sample runs" in str([p.proto.text for p in at.get("progress")])
    deadline = time.monotonic() + 600
    while "Loading the shipped H200 sample runs" in str([p.proto.text for p in at.get("progress")]):
        assert time.monotonic() < deadline, "seeding did not finish in 600 s"
        time.sleep(0.5)
        at.run()
        pages.assert_clean(at)
    table = _catalog(at)
    assert len(table) == len(sample_files(some)) > 30
    assert set(table["source"]) == {"captured"} and set(table["gpu_name"]) == {"NVIDIA H200"}


def test_unknown_runs_in_a_link_are_named(pages, page_store, run_ids):
    at = pages.open("kernels", runs=f"{run_ids[FLASH]},0000000000000000")
    assert not at.exception
    assert "0000000000000000" in pages.texts(at)


def test_bad_link_parameter_is_a_warning_not_a_crash(pages, page_store):
    at = pages.open("runs", iter="two")
    assert not at.exception
    assert "iter: 'two' is not an integer" in pages.texts(at)


def test_selected_runs_get_plain_language_findings(pages, page_store, run_ids):
    at = pages.open("runs", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}")
    assert "launches 1 kernel(s) per iteration" not in pages.texts(at)    # on request only
    at.toggle[-1].set_value(True).run()
    pages.assert_clean(at)
    assert at.query_params["findings"] == "1"
    text = pages.texts(at)
    # each fixture run launches one kernel per ProfilerStep (hand-written fixtures)
    assert text.count("launches 1 kernel(s) per iteration") == 2


def test_no_findings_without_a_selection(pages, page_store):
    at = pages.open("runs")
    assert "What stands out in each selected run" not in [t.label for t in at.toggle]


def test_the_preload_waits_while_a_page_is_drawn(monkeypatch):
    """ui.preload's steps wait until no page is being drawn (app.py runs each page in
    ui.page_run) and none has begun or ended for QUIET_S: its imports and reads would slow that page."""
    from profiler.present import ui

    monkeypatch.setattr(ui.session, "QUIET_S", 0.3)
    quiet = threading.Event()
    waiter = threading.Thread(target=lambda: (ui.session._wait_until_quiet(), quiet.set()), daemon=True)
    with ui.page_run("upload"):  # a page that does not hold the store: no store needed here
        waiter.start()
        time.sleep(0.8)
        assert not quiet.is_set()  # still drawing, well past QUIET_S
    ended = time.monotonic()
    waiter.join(10)
    assert quiet.is_set() and time.monotonic() - ended >= 0.25
