"""One figure, one definition: the runs, sweep, compare and kernels pages, `summary --json` and
`compare --json` all show the metrics layer's GPU work per iteration (what one step launched:
profiler/storage/sql/step_work.sql), busy share and verdict of the same run, and they agree
exactly."""
from __future__ import annotations

import json

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SAMPLES
from tests.pages.conftest import tables_with
from tests.conftest import ingest_all

SWEEP = [SAMPLES / "sweep" / f"{v}_b8_h16_s{n}_d64_bf16_causal_warm_r1.json.gz"
         for v in ("flex", "sdpa_flash") for n in (512, 1024)]


def _sweep(path) -> list[str]:
    store = Store(path)
    return ingest_all(store, SWEEP)


@pytest.fixture
def sweep_store(tmp_path, monkeypatch, template_store):
    """(store file, run ids of SWEEP in order): a copy of a store built once per test process."""
    path = tmp_path / "sweep.duckdb"
    ids = template_store("same-figure-sweep", _sweep, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return path, list(ids)


def test_every_view_shows_the_same_gpu_work(pages, sweep_store, capsys):
    path, ids = sweep_store
    flex, flash = ids[1], ids[3]                          # both at L = 1024
    seen: dict[str, float] = {}

    at = pages.open("runs")
    pages.assert_clean(at)
    catalog = next(t for t in tables_with(at, "shape")).set_index("run_id")
    seen["runs"] = catalog.loc[flex, "gpu_work_us_per_iter"]

    at = pages.open("sweep", runs=",".join(ids))
    pages.assert_clean(at)
    (series,) = tables_with(at, "timeline")
    seen["sweep"] = series.set_index(["variant", "x"]).loc[("flex", 1024), "us_per_call"]  # per call = GPU busy

    at = pages.open("compare", runs=f"{flex},{flash}")
    pages.assert_clean(at)
    (metrics,) = tables_with(at, "side")
    seen["compare"] = metrics.set_index("run_id").loc[flex, "gpu_work_us_per_iter"]

    at = pages.open("kernels", runs=f"{flex},{flash}")
    pages.assert_clean(at)
    (breakdown,) = tables_with(at, "carried_pct")
    seen["kernels"] = breakdown.set_index("run_id").loc[flex, "gpu_work_us_per_iter"]

    assert main(["summary", "--json", "--db", str(path)]) == 0
    summary = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    seen["summary --json"] = summary[flex]["gpu_work_us_per_iter"]

    assert main(["compare", flex, flash, "--json", "--db", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    seen["compare --json"] = report["metrics"]["a"]["gpu_work_us_per_iter"]
    (gpu,) = [e for e in report["evidence"] if e["kind"] == "gpu_time"]
    seen["compare --json finding"] = gpu["gpu_work_us_per_iter"][flex]

    assert seen["runs"] > 0 and len(set(seen.values())) == 1, seen
    # the busy share and the verdict agree as well
    assert catalog.loc[flex, "gpu_busy_pct"] == summary[flex]["gpu_busy_pct"] == \
        report["metrics"]["a"]["gpu_busy_pct"] == breakdown.set_index("run_id").loc[flex, "gpu_busy_pct"]
    assert catalog.loc[flex, "bound"] == summary[flex]["bound"] == report["metrics"]["a"]["bound"]
