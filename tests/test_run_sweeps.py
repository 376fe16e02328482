"""What a sweep varies (`sweeps.swept`), one definition for the Sweep page and the runs page's "group
sweeps": on the real H200 decode KV cache sweep (data/samples/modes/decode_sweep) and length sweep
(data/samples/sweep), the axis and each run's value are checked against the trace files' own
attention_run headers (which of their shape fields differ), and the runs page groups each sweep
together in order of that value."""
from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from profiler.analysis.reads import queries
from profiler.analysis.findings import sweeps
from profiler.storage.store import Store
from tests.conftest import SAMPLES
from tests.pages.conftest import pages, tables_with  # noqa: F401 (the page driver fixture)
from tests.conftest import ingest_all

DECODE = sorted((SAMPLES / "modes" / "decode_sweep").glob("flex_decode_*.json.gz"))      # 6 KV lengths x 3
LENGTH = sorted((SAMPLES / "sweep").glob("sdpa_flash_b8_*.json.gz"))                     # 4 lengths x 3
ONE_POINT = SAMPLES / "modes" / "prefill_gqa" / "flex_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz"
# the shape fields of a header, and what a header from before modes means by the missing ones
FIELDS = ("mode", "batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "window", "varlen", "dtype", "causal")


def _header(path) -> dict:
    with gzip.open(path, "rt") as f:
        meta = json.load(f)["attention_run"]
    defaults = {"mode": "prefill", "kv_heads": meta["heads"], "kv_len": meta["seq_len"], "window": None, "varlen": None}
    return {k: str(meta.get(k, defaults.get(k))) for k in FIELDS}


def _varied(paths) -> dict[str, list[int]]:
    """{field: each file's value} of the header fields that differ between the files."""
    headers = [_header(p) for p in paths]
    return {k: [int(h[k]) if h[k].isdigit() else h[k] for h in headers]
            for k in FIELDS if len({h[k] for h in headers}) > 1}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("run-sweeps") / "s.duckdb")
    files = [*DECODE, *LENGTH, ONE_POINT]
    ids = dict(zip(files, ingest_all(store, files, source="captured")))
    return store, ids


def test_the_decode_sweep_varies_the_kv_cache_length(store):
    db, ids = store
    assert set(_varied(DECODE)) == {"kv_len"}              # the headers: only the cache length differs
    shapes = queries.run_shapes(db, [ids[p] for p in DECODE])
    axis, values = sweeps.swept(shapes)
    assert axis == "kv_len"
    assert list(values) == _varied(DECODE)["kv_len"]
    assert sorted(set(values)) == [1024, 4096, 8192, 16384, 32768, 65536]


def test_the_length_sweep_varies_the_sequence_length_its_keys_follow(store):
    db, ids = store
    varied = _varied(LENGTH)
    assert set(varied) == {"seq_len", "kv_len"} and varied["seq_len"] == varied["kv_len"]   # prefill: keys = queries
    axis, values = sweeps.swept(queries.run_shapes(db, [ids[p] for p in LENGTH]))
    assert axis == "seq_len" and list(values) == varied["seq_len"]


def test_runs_that_are_no_one_sweep_vary_nothing(store):
    db, ids = store
    repeats = queries.run_shapes(db, [ids[p] for p in DECODE[:3]])      # one KV length, three repeats
    assert len(set(_varied(DECODE[:3]))) == 0 and sweeps.swept(repeats)[0] is None
    mixed = queries.run_shapes(db, [ids[DECODE[0]], ids[LENGTH[0]]])   # decode and prefill: mode differs
    assert "mode" in _varied([DECODE[0], LENGTH[0]]) and sweeps.swept(mixed)[0] is None
    both = queries.run_shapes(db, [ids[p] for p in LENGTH]).assign(head_dim=[64, 128] * 6)   # two axes at once
    assert sweeps.swept(both)[0] is None


def test_sweep_members_put_each_run_on_its_one_axis(store):
    db, ids = store
    shapes = queries.run_shapes(db, list(ids.values()))
    members = sweeps.sweep_members(shapes).set_index("run_id")
    assert ids[ONE_POINT] not in members.index and members.index.is_unique
    for paths, axis in ((DECODE, "kv_len"), (LENGTH, "seq_len")):
        mine = members.loc[[ids[p] for p in paths]]
        assert set(mine["axis"]) == {axis} and mine["sweep"].nunique() == 1
        assert list(mine["x"]) == _varied(paths)[axis]


@pytest.fixture
def runs_page(store, tmp_path, monkeypatch):
    db, ids = store
    path = tmp_path / "page.duckdb"
    path.write_bytes(db.path.read_bytes())
    monkeypatch.setenv("PROFILER_DB", str(path))
    monkeypatch.setenv("PROFILER_SEED", "0")
    return ids


def test_the_runs_page_groups_each_sweep_by_the_axis_it_varies(pages, runs_page):  # noqa: F811 (the imported fixture)
    ids = runs_page
    at = pages.open("runs", sweeps="1")
    pages.assert_clean(at)
    table = next(t for t in tables_with(at, "variant") if "sweep" in t.columns)
    assert list(table.columns).count("swept") == 1
    for paths, axis, words in ((DECODE, "kv_len", "over KV cache length"), (LENGTH, "seq_len", "over sequence length")):
        rows = table[table["run_id"].isin([ids[p] for p in paths])]
        truth = dict(zip((ids[p] for p in paths), _varied(paths)[axis]))
        assert rows["sweep"].nunique() == 1 and rows["sweep"].iloc[0].endswith(words)
        assert [truth[r] for r in rows["run_id"]] == list(rows["swept"])          # each run's own value
        assert list(rows["swept"]) == sorted(truth.values())                      # in order of it
        positions = table.index.get_indexer(rows.index)
        assert list(positions) == list(range(positions[0], positions[0] + len(paths)))   # together
    decode = table[table["run_id"] == ids[DECODE[0]]]["sweep"].iloc[0]
    assert decode == "flex · decode · B8 · H32/8 · D128 · Q1 · bf16 · causal · warm · over KV cache length"
    alone = table[table["run_id"] == ids[ONE_POINT]]
    assert pd.isna(alone["swept"].iloc[0])
    assert alone["sweep"].iloc[0] == "flex · prefill · B4 · H32/8 · D128 · L2048 · bf16 · causal · warm"
