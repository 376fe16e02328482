"""Sweep page on real H200 captures shipped in data/samples: a length sweep (prefill, 3 repeats a
point) and a KV cache sweep (decode)."""
from __future__ import annotations

import pytest

from profiler.analysis.findings import sweeps
from profiler.storage.store import Store
from tests.pages.conftest import ROOT, tables_with

SWEEP = ROOT / "data" / "samples" / "sweep"
DECODE = ROOT / "data" / "samples" / "modes" / "decode"


def _sweep(path) -> dict[str, str]:
    store = Store(path)
    names = [f"{v}_b8_h16_s{s}_d64_bf16_causal_warm_r{r}.json.gz"
             for v in ("flex", "sdpa_flash") for s in (512, 1024) for r in (1, 2, 3)]
    ids = {n: store.ingest(SWEEP / n, source="captured").run_id for n in names}
    ids["naive"] = store.ingest(SWEEP / "naive_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz").run_id
    for v in ("sdpa_flash", "sdpa_cudnn"):
        for kv in (8192, 32768):
            name = f"{v}_decode_b8_h32_kv8_s1_L{kv}_d128_bf16_causal_warm.json.gz"
            ids[name] = store.ingest(DECODE / name, source="captured").run_id
    return ids


@pytest.fixture
def sweep_store(tmp_path, monkeypatch, template_store):
    """flex and sdpa_flash at L=512 and 1024, three runs each (they cross over there), one naive
    run, and sdpa_flash and sdpa_cudnn decoding against KV caches of 8192 and 32768: a copy of a
    store built once per test process."""
    path = tmp_path / "sweep.duckdb"
    ids = template_store("sweep-page", _sweep, path)
    monkeypatch.setenv("PROFILER_DB", str(path))
    return Store(path), dict(ids)


def test_a_section_per_sweep_with_its_axis_crossover_and_timeline_links(pages, sweep_store):
    store, ids = sweep_store
    at = pages.open("sweep")
    pages.assert_clean(at)
    heads = [h.value for h in at.subheader]
    assert heads[:2] == [
        "decode: KV cache length sweep (batch 8, heads 32, K/V heads 8, queries 1, head dim 128, bf16, causal)",
        "prefill: sequence length sweep (batch 8, heads 16, K/V heads 16, head dim 64, bf16, causal)"]
    assert "Peak memory against sequence length" in heads
    decode, prefill = tables_with(at, "timeline")
    assert sorted(zip(decode["variant"], decode["x"])) == [
        ("sdpa_cudnn", 8192), ("sdpa_cudnn", 32768), ("sdpa_flash", 8192), ("sdpa_flash", 32768)]
    assert sorted(zip(prefill["variant"], prefill["x"])) == [
        ("flex", 512), ("flex", 1024), ("sdpa_flash", 512), ("sdpa_flash", 1024)]   # naive: one length
    assert set(prefill["runs"]) == {3} and set(decode["runs"]) == {1}
    for table in (decode, prefill):
        assert all(link == f"/timeline?runs={run}" for link, run in zip(table["timeline"], table["run_id"]))
    with store.session() as db:
        crossed = sweeps.crossovers(sweeps.sweep_curves(sweeps.sweep_points(db, list(ids.values()))))
    text = pages.texts(at)
    assert "every captured run in the store" in text
    assert list(crossed["axis"]) == ["seq_len"]       # cuDNN leads FlashAttention at both KV lengths
    for sentence in crossed["text"]:
        assert sentence in text
    assert "No two variants swap the lead in TB/s over this sweep, ties passed through." in text
    assert "sdpa_flash overtakes flex for prefill from 1k tokens" in text
    assert len(at.get("vega_lite_chart")) == 3  # a chart per sweep, peak memory


def test_sweep_of_the_selected_runs_only(pages, sweep_store):
    _, ids = sweep_store
    flex = [i for n, i in ids.items() if n.startswith("flex")]
    at = pages.open("sweep", runs=",".join(flex))
    pages.assert_clean(at)
    (table,) = tables_with(at, "timeline")
    assert set(table["variant"]) == {"flex"}
    assert "the variants of the 6 selected runs" in pages.texts(at)
    assert "No two variants swap the lead in TFLOP/s" in pages.texts(at)


def test_selecting_runs_at_one_point_narrows_the_sweep_to_their_variants(pages, sweep_store):
    _, ids = sweep_store
    picked = [ids["flex_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"],
              ids["sdpa_flash_b8_h16_s512_d64_bf16_causal_warm_r1.json.gz"]]
    at = pages.open("sweep", runs=",".join(picked))
    pages.assert_clean(at)
    (table,) = tables_with(at, "timeline")
    # both variants at both lengths, every warm capture of them (not the two picked runs only)
    assert sorted(zip(table["variant"], table["x"])) == [
        ("flex", 512), ("flex", 1024), ("sdpa_flash", 512), ("sdpa_flash", 1024)]
    assert set(table["runs"]) == {3}
    assert "the variants of the 2 selected runs" in pages.texts(at)
    assert "sdpa_flash overtakes flex for prefill from 1k tokens" in pages.texts(at)


def test_no_sweep_says_how_to_make_one(pages, page_store):
    at = pages.open("sweep")
    assert not at.exception
    assert "No sweep here" in at.info[0].value


@pytest.fixture
def same_kernel_store(tmp_path, monkeypatch):
    """sdpa_auto (SDPA's own choice: cuDNN here), sdpa_cudnn and flash_attn_4 at L=1024 and 4096,
    three repeats each: cuDNN leads at 1k, FA4 at 4k."""
    store = Store(tmp_path / "same.duckdb")
    names = [f"{v}_b8_h16_s{s}_d64_bf16_causal_warm_r{r}.json.gz"
             for v in ("sdpa_auto", "sdpa_cudnn", "flash_attn_4") for s in (1024, 4096) for r in (1, 2, 3)]
    ids = {n: store.ingest(SWEEP / n, source="captured").run_id for n in names}
    monkeypatch.setenv("PROFILER_DB", str(store.path))
    return store, ids


def test_the_page_names_a_same_kernel_variant_and_agrees_with_rank_json(pages, same_kernel_store):
    """The Sweep page names sdpa_auto as running cuDNN's kernels and never as a rival; at each
    length its table's time per call (median, least, most) and its leader are `rank --json`'s."""
    import contextlib
    import io
    import json

    from profiler.cli.main import main

    store, ids = same_kernel_store
    at = pages.open("sweep")
    pages.assert_clean(at)
    (table,) = tables_with(at, "timeline")
    text = pages.texts(at)
    auto = table[table["variant"] == "sdpa_auto"]
    assert list(auto["same_kernels_as"]) == ["sdpa_cudnn", "sdpa_cudnn"]
    assert table[table["variant"] != "sdpa_auto"]["same_kernels_as"].isna().all()
    assert "sdpa_auto runs the same kernels as sdpa_cudnn at 1k, 4k: named with it, not ranked as its rival there." in text
    assert "flash_attn_4 overtakes sdpa_cudnn for prefill from " in text
    assert "overtakes sdpa_auto" not in text and "sdpa_auto overtakes" not in text
    assert "over sdpa_auto" not in text
    for x in (1024, 4096):
        runs = [ids[n] for n in ids if f"_s{x}_" in n]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["rank", *runs, "--json", "--db", str(store.path)]) == 0
        got = json.loads(out.getvalue())
        by_variant = {r["variant"]: r for r in got["runs"]}
        for row in table[table["x"] == x].itertuples():
            ranked = by_variant[row.variant]
            assert (row.us_per_call, row.us_min, row.us_max, row.repeats) == pytest.approx(
                (ranked["us_per_call"], ranked["us_min"], ranked["us_max"], ranked["repeats"]))
            shown = row.same_kernels_as if isinstance(row.same_kernels_as, str) else None   # an empty cell
            assert shown == ranked["same_kernels_as"]
        winner = next(r["variant"] for r in got["runs"] if r["rank"] == 1 and not r["same_kernels_as"])
        assert f"{sweeps.amount('seq_len', x)} {winner}" in text     # "Leaders: 1k sdpa_cudnn …; 4k flash_attn_4 …"
    assert "1k sdpa_cudnn" in text and "4k flash_attn_4" in text
