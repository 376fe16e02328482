"""The run finder over the 401 shipped H200 runs (profiler/present/run_filters.py,
profiler/analysis/findings/repeats.py): the text search matches the words of the labels the app shows,
each filter keeps what its column says, "one run per variant" picks the median repeat, and sorting
is stable. The expected runs are read from each sample file's own `attention_run` object and its
raw events (tests/raw_trace.py), not from the store."""
from __future__ import annotations

import gzip
import json
import statistics

import pandas as pd
import pytest

from profiler.analysis.findings import repeats, timings
from profiler.analysis.reads import run_queries
from profiler.capture.samples import SAMPLES_DIR, sample_files
from profiler.present import charts, run_filters
from tests import raw_trace


@pytest.fixture(scope="module")
def catalog(shipped_samples):
    store = shipped_samples    # every sample, as a new store holds them (tests/conftest.py)
    runs = timings.catalog_with_timings(store, run_queries.run_catalog(store))
    labels = charts.label_map(run_queries.run_labels(store, list(runs["run_id"])))
    return run_filters.finder_columns(runs, labels)


@pytest.fixture(scope="module")
def metas() -> dict[str, dict]:
    """{sample file name: its attention_run object}, read from the files."""
    out = {}
    for path in sample_files():
        with gzip.open(path, "rt") as f:
            out[path.name] = {**json.load(f)["attention_run"], "path": path}
    return out


def _names(rows: pd.DataFrame) -> set[str]:
    return set(rows["name"].str.replace(r"\.json\.gz$", "", regex=True))


def _stem(name: str) -> str:
    return name.removesuffix(".json.gz")


def test_the_store_holds_every_sample(catalog, metas):
    assert len(catalog) == len(metas) == len(sample_files(SAMPLES_DIR))


def test_label_words_find_decode_kv32768_gqa(catalog, metas):
    found = run_filters.apply(catalog, run_filters.RunFilter(text="decode KV=32768 GQA 32/8"))
    want = {_stem(n) for n, m in metas.items() if m.get("mode") == "decode" and m.get("kv_len") == 32768
            and m["heads"] == 32 and m.get("kv_heads") == 8}
    assert want and _names(found) == want
    assert all("decode KV=32768" in label and "GQA 32/8" in label for label in found["label"])


def test_a_number_ends_where_it_ends(catalog, metas):
    found = run_filters.apply(catalog, run_filters.RunFilter(text="l=1024 warm"))
    want = {_stem(n) for n, m in metas.items() if m["seq_len"] == 1024 and not m["cold"]
            and m.get("mode", "prefill") != "decode" and not m.get("varlen")}
    assert want and _names(found) == want      # L=10240 or a packed 1024+... would be wrong


@pytest.mark.parametrize("key,field,value", [("mode", "mode", "train"), ("kv", "kv_len", "8192"),
                                             ("kvh", "kv_heads", "8"), ("window", "window", "1024"),
                                             ("temp", "cold", "cold"), ("repeat", "repeat", "3")])
def test_each_filter_keeps_what_its_column_says(catalog, metas, key, field, value):
    found = run_filters.apply(catalog, run_filters.RunFilter(**{key: (value,)}))

    def meta_value(m):
        if field == "cold":
            return "cold" if m["cold"] else "warm"
        if field == "repeat":
            return str(m["repeat"] + 1)
        return str(m.get(field) if m.get(field) is not None else {"kv_len": m["seq_len"], "kv_heads": m["heads"],
                                                                   "mode": "prefill", "window": 0}[field])
    want = {_stem(n) for n, m in metas.items() if meta_value(m) == value}
    assert want and _names(found) == want


def test_choices_offer_every_value_in_numeric_order(catalog):
    offered = run_filters.choices(catalog)
    assert offered["mode"] == ["decode", "prefill", "train"]
    assert offered["kv"] == sorted(offered["kv"], key=int) and "32768" in offered["kv"]
    assert offered["temp"] == ["cold", "warm"] and offered["repeat"] == ["1", "2", "3"]


def _raw_gpu_us_per_step(path) -> float:
    events = raw_trace.load(path)["traceEvents"]
    return raw_trace.us_per_step(events, cats=raw_trace.GPU_WORK, inside_steps=True)


def test_one_run_per_variant_is_the_median_repeat(catalog, metas):
    default = run_filters.apply(catalog, run_filters.RunFilter(text="L=1024 warm", mode=("prefill",),
                                                               heads=("16",), dim=("64",)))
    picked = repeats.median_repeats(default)
    chosen = default.set_index("run_id").loc[picked]
    assert chosen["variant"].is_unique and set(chosen["variant"]) == set(default["variant"])
    for variant, group in metas_by_variant(metas).items():
        times = {_stem(n): _raw_gpu_us_per_step(m["path"]) for n, m in group.items()}
        median = statistics.median(times.values())
        best = min(abs(t - median) for t in times.values())
        pick = _stem(chosen.loc[chosen["variant"] == variant, "name"].iloc[0])
        assert abs(times[pick] - median) == pytest.approx(best, rel=0.02, abs=0.5), (variant, pick, times)


def metas_by_variant(metas) -> dict[str, dict]:
    """The warm default-shape prefill samples (B8 H16 L1024 D64 bf16 causal), per variant."""
    out: dict[str, dict] = {}
    for name, m in metas.items():
        if (m["batch"], m["heads"], m["seq_len"], m["head_dim"], m["dtype"], m["causal"], m["cold"]) == \
                (8, 16, 1024, 64, "bf16", True, False) and m.get("mode", "prefill") == "prefill" \
                and m.get("kv_heads", 16) == 16 and not m.get("window") and not m.get("varlen"):
            out.setdefault(m["variant"], {})[name] = m
    return out


def test_sorting_is_stable_and_filters_do_not_reorder(catalog):
    by_speed = run_filters.sort_rows(catalog, "fastest")
    assert list(by_speed["gpu_us_per_call"].dropna()) == sorted(catalog["gpu_us_per_call"].dropna())
    ties = by_speed[by_speed.duplicated("gpu_us_per_call", keep=False)]
    for _, group in ties.groupby("gpu_us_per_call"):     # ties keep the catalog's order
        assert list(group.index) == sorted(group.index)
    narrowed = run_filters.apply(by_speed, run_filters.RunFilter(mode=("decode",)))
    assert list(narrowed["run_id"]) == [r for r in by_speed["run_id"] if r in set(narrowed["run_id"])]


def test_filters_round_trip_through_the_url():
    f = run_filters.RunFilter(variant=("flex",), mode=("decode",), kv=("32768",), temp=("warm",),
                              repeat=("2",), text="GQA 32/8")
    assert run_filters.from_params(run_filters.to_params(f).get) == f
