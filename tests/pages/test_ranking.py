"""Ranking any number of runs on the runs and compare pages, and finding runs with the runs table's
filters, on real H200 samples. The order and the margins are computed again from the trace JSON
(kernel time inside the ProfilerStep windows over the number of steps), independently of the store."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from profiler.present import run_filters
from profiler.storage.store import Store
from tests.pages.conftest import tables_with
from tests.test_rank import DEFAULT, VARIANTS, _gpu_us_per_step, _trace

OTHER_SHAPE = DEFAULT.parent / "sweep" / "sdpa_flash_b8_h16_s2048_d64_bf16_causal_warm_r1.json.gz"


@pytest.fixture(scope="module")
def sample_store_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("rank-pages") / "template.duckdb"
    store = Store(path)
    ids = {v: store.ingest(_trace(v), name=f"{v}_b8_h16_s1024_d64_bf16_causal_warm").run_id for v in VARIANTS}
    ids["flash_2048"] = store.ingest(OTHER_SHAPE, name=OTHER_SHAPE.name.removesuffix(".json.gz")).run_id
    return path, ids


@pytest.fixture
def samples(sample_store_template, tmp_path, monkeypatch):
    template, ids = sample_store_template
    path = tmp_path / "store.duckdb"
    path.write_bytes(template.read_bytes())
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    return dict(ids)


def _truth():
    return sorted(VARIANTS, key=_gpu_us_per_step)


def _check_ranked(at, pages, ids):
    (ranked,) = tables_with(at, "times_fastest")
    truth = _truth()
    assert list(ranked["run_id"]) == [ids[v] for v in truth]          # the 2048 run is not among them
    assert list(ranked["rank"]) == [1, 2, 3, 4]
    for (_, row), variant in zip(ranked.iterrows(), truth):
        assert row["us_per_call"] == pytest.approx(_gpu_us_per_step(variant), rel=1e-9)   # one run: its own time
        assert row["interval"] == f"{row['us_per_call']:,.1f}–{row['us_per_call']:,.1f} µs" and row["repeats"] == 1
        assert row["times_fastest"] == pytest.approx(_gpu_us_per_step(variant) / _gpu_us_per_step(truth[0]))
    naive = ranked.set_index("run_id").loc[ids["naive"]]
    assert naive["roof_bound"] == "memory" and naive["rate"].endswith(" TB/s")
    assert ranked.iloc[0]["rate"].endswith(" TFLOP/s")
    ratio = _gpu_us_per_step(truth[1]) / _gpu_us_per_step(truth[0])
    text = pages.texts(at)
    assert (f"{truth[0]} bf16 L=1024 · {ids[truth[0]][:6]} is fastest at {_gpu_us_per_step(truth[0]):,.1f} µs "
            f"per call, {ratio:.2f}× faster than {truth[1]} bf16 L=1024") in text
    assert "B=8 H=16 L=1024 D=64 bf16 causal, warm, NVIDIA H200** · 4 runs" in text
    helps = [h.proto.help for h in at.subheader]  # the method note sits in the ranking heading's help
    assert any("ranked only against groups of the same mode" in h and "are tied" in h for h in helps)
    assert "Not ranked, one variant alone in its workload: prefill B=8 H=16 L=2048" in text


def test_runs_page_ranks_the_selected_runs_within_their_shape(pages, samples):
    runs = ",".join([samples[v] for v in VARIANTS] + [samples["flash_2048"]])
    at = pages.open("runs", runs=runs)
    pages.assert_clean(at)
    _check_ranked(at, pages, samples)


def test_compare_ranks_n_runs_and_measures_each_against_the_baseline(pages, samples):
    runs = [samples[v] for v in VARIANTS] + [samples["flash_2048"]]
    at = pages.open("compare", runs=",".join(runs), a=samples["sdpa_flash"])
    pages.assert_clean(at)
    _check_ranked(at, pages, samples)
    (metrics,) = tables_with(at, "times_baseline")
    ratio = metrics.set_index("run_id")["times_baseline"]
    for variant in VARIANTS:
        want = _gpu_us_per_step(variant) / _gpu_us_per_step("sdpa_flash")
        assert ratio[samples[variant]] == pytest.approx(want, rel=1e-9)
    assert pd.isna(ratio[samples["flash_2048"]])                       # another shape: not comparable
    assert at.selectbox[0].value == samples["sdpa_flash"]
    assert samples["sdpa_flash"] not in at.selectbox[1].options and len(at.selectbox[1].options) == 4


def _catalog(at) -> pd.DataFrame:
    return next(t for t in tables_with(at, "variant") if "shape" in t.columns)


def test_runs_filters_come_from_the_url_and_keep_hidden_selections(pages, samples):
    at = pages.open("runs", runs=samples["naive"], variant="sdpa_flash,sdpa_cudnn")
    pages.assert_clean(at)
    shown = _catalog(at)
    assert set(shown["variant"]) == {"sdpa_flash", "sdpa_cudnn"} and len(shown) == 3
    assert "3 of 5 runs in the store shown" in pages.texts(at)
    assert at.query_params["runs"] == samples["naive"]               # naive is filtered out, still selected
    at = pages.open("runs", len="2048")
    assert list(_catalog(at)["run_id"]) == [samples["flash_2048"]]
    at = pages.open("runs", text="CUDNN")
    assert list(_catalog(at)["run_id"]) == [samples["sdpa_cudnn"]]
    at = pages.open("runs", sweeps="1", variant="sdpa_flash")
    sweep = _catalog(at)
    assert list(sweep["seq_len"]) == [1024, 2048] and sweep["sweep"].nunique() == 1
    assert list(sweep["swept"]) == [1024, 2048] and sweep["sweep"].iloc[0].endswith(" · over sequence length")


def test_filter_widgets_write_the_url(pages, samples):
    at = pages.open("runs")
    (variant,) = [m for m in at.multiselect if m.label == "variant"]
    variant.select("naive").run()
    pages.assert_clean(at)
    assert at.query_params["variant"] == "naive"
    assert list(_catalog(at)["variant"]) == ["naive"]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "run_id": ["a", "b", "c", "d"], "name": ["x_s2048", "x_s512", "Upload.json", "y_s512"],
        "variant": ["x", "x", None, "y"], "batch": [8, 8, math.nan, 8], "heads": [16, 16, math.nan, 16],
        "seq_len": [2048, 512, math.nan, 512], "head_dim": [64, 64, math.nan, 64],
        "mode": ["prefill", "prefill", None, "prefill"], "kv_heads": [16, 16, math.nan, 16],
        "kv_len": [2048, 512, math.nan, 512], "window": [0, 0, math.nan, 0], "varlen": ["", "", None, ""],
        "dtype": ["bf16", "bf16", None, "fp16"], "causal": [True, True, None, True],
        "cold": [False, False, None, False], "gpu_name": ["H200", "H200", "MI250", "H200"],
        "source": ["captured", "captured", "uploaded", "captured"]})


def test_filters_choices_and_sweeps_on_a_hand_made_catalog():
    runs = _frame()
    offered = run_filters.choices(runs)
    assert offered["len"] == ["512", "2048"] and offered["device"] == ["H200", "MI250"]
    assert offered["variant"] == ["x", "y"]
    keep = run_filters.apply(runs, run_filters.RunFilter(len=("512",), dtype=("bf16",)))
    assert list(keep["run_id"]) == ["b"]
    assert list(run_filters.apply(runs, run_filters.RunFilter(text="upload"))["run_id"]) == ["c"]
    both = run_filters.RunFilter(source=("uploaded", "captured"))
    assert list(run_filters.apply(runs, both)["run_id"]) == list("abcd")
    grouped = run_filters.with_sweeps(runs)
    assert list(grouped["run_id"]) == ["c", "b", "a", "d"]   # "no shape: …" sorts first; x's sweep shortest first
    by_id = grouped.set_index("run_id")
    assert by_id.loc["b", "sweep"] == "x · prefill · B8 · H16 · D64 · bf16 · causal · warm · over sequence length"
    assert by_id.loc["a", "sweep"] == by_id.loc["b", "sweep"] and list(by_id.loc[["b", "a"], "swept"]) == [512, 2048]
    assert by_id.loc["d", "sweep"] == "y · prefill · B8 · H16 · D64 · L512 · fp16 · causal · warm"   # one point
    assert pd.isna(by_id.loc["d", "swept"]) and pd.isna(by_id.loc["c", "swept"])
    f = run_filters.RunFilter(variant=("x", "y"), text="s512")
    assert run_filters.from_params(run_filters.to_params(f).get) == f
