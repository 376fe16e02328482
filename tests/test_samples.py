"""The shipped H200 samples: seeding an empty store, and the walkthrough's stories in the data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler import errors
from profiler.capture.samples import SAMPLES_DIR, sample_files, sample_name, seed_if_empty
from profiler.storage.store import Store
from tests import raw_trace
from tests.test_batch_ingest import _rows

@pytest.fixture(scope="module")
def seeded(seeded_samples) -> tuple[Store, int, list]:
    """An empty store seeded from every sample (tests/conftest.py: seeded once per test process,
    copied per module): the store, how many were added, the progress fractions reported."""
    return seeded_samples


def _one(store: Store, sql: str, params=None):
    return store.query(sql, params).iloc[0, 0]


def _run_view(store: Store) -> str:
    """The samples of default/ and sweep/: plain prefills of multi-head attention (modes/ holds the rest)."""
    return ("(SELECT *, CASE WHEN run_meta->>'sweep' = 'false' THEN NULL ELSE run_meta->>'sweep' END AS sweep_id "
            "FROM traces WHERE mode = 'prefill' AND kv_heads = heads AND kv_len = seq_len AND \"window\" IS NULL "
            "AND varlen IS NULL)")


def _run_id(store: Store, variant: str, cold: bool = False) -> str:
    sql = f"SELECT run_id FROM {_run_view(store)} WHERE variant = ? AND cold = ? AND sweep_id IS NULL"
    ids = store.query(sql, [variant, cold])["run_id"].tolist()
    assert len(ids) == 1, f"{variant} cold={cold}: {ids}"
    return ids[0]


def test_samples_are_small_gzip_traces():
    files = sample_files()
    assert len(files) >= 50
    assert sum(f.stat().st_size for f in files) < 5 * 2**20
    assert all(f.read_bytes()[:2] == b"\x1f\x8b" for f in files)


def test_seeding_an_empty_store_ingests_every_sample_once(seeded):
    store, added, reports = seeded
    assert added == len(sample_files())
    assert _one(store, "SELECT count(*) FROM traces WHERE source = 'captured' AND variant IS NOT NULL") == added
    assert reports[-1] == 1.0 and reports == sorted(reports)
    assert seed_if_empty(store) == 0


def test_a_store_that_has_traces_is_not_seeded(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    store.ingest(sample_files()[0], source="uploaded")
    assert seed_if_empty(store) == 0
    assert _one(store, "SELECT count(*) FROM traces") == 1


def test_a_missing_samples_folder_is_a_clear_error(tmp_path):
    with pytest.raises(errors.ProfilerError, match="does not exist"):
        seed_if_empty(Store(tmp_path / "store.duckdb"), samples_dir=tmp_path / "nowhere")


def test_every_sample_describes_an_h200_run_that_passed_its_check(seeded):
    store = seeded[0]
    metas = [json.loads(m) for m in store.query("SELECT run_meta FROM traces")["run_meta"]]
    assert {m["device_name"] for m in metas} == {"NVIDIA H200"}
    assert all(m["ok"] and m["rel_error"] < m["tolerance"] for m in metas)
    assert {m["variant"] for m in metas} == {"naive", "naive_inplace", "naive_compiled", "sdpa_math",
                                             "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto", "flex",
                                             "flashinfer_fa2", "flashinfer_fa3", "flashinfer_decode",
                                             "flashinfer_decode_tc", "flash_attn_4"}


def test_naive_copies_the_scores_and_naive_inplace_does_not(seeded):
    store = seeded[0]
    sql = "SELECT count(*) FROM memops WHERE run_id = ? AND name LIKE 'Memcpy DtoD%'"
    assert _one(store, sql, [_run_id(store, "naive")]) == 3  # one per active step
    assert _one(store, sql, [_run_id(store, "naive_inplace")]) == 0


def test_math_backend_runs_about_twenty_kernels_with_fp32_gemms(seeded):
    store = seeded[0]
    tid = _run_id(store, "sdpa_math")
    per_iter = store.query("SELECT iteration, count(*) AS n FROM kernels WHERE run_id = ? "
                           "AND iteration IS NOT NULL GROUP BY 1", [tid])["n"]
    assert len(per_iter) == 3 and per_iter.between(15, 30).all()
    assert _one(store, "SELECT count(*) FROM kernels WHERE run_id = ? AND name LIKE '%gemm_f32f32%'", [tid]) >= 3
    assert _one(store, "SELECT count(*) FROM ops WHERE run_id = ? AND name = 'aten::_safe_softmax'", [tid]) == 3


@pytest.mark.parametrize("variant, pattern", [("sdpa_efficient", "fmha_cutlass%"),
                                              ("sdpa_flash", "%flash_fwd_kernel%"),
                                              ("flex", "triton_tem_fused_flex_attention%")])
def test_fused_variants_run_one_kernel_per_call(seeded, variant, pattern):
    store = seeded[0]
    tid = _run_id(store, variant)
    names = store.query("SELECT name FROM kernels WHERE run_id = ? AND iteration IS NOT NULL", [tid])["name"]
    assert len(names) == 3 and names.str.match(pattern.replace("%", ".*")).all()


def test_cudnn_kernels_are_launched_by_culaunchkernelex(seeded):
    store = seeded[0]
    launches = store.query("SELECT api, target_name FROM launch_targets WHERE run_id = ? AND target_kind = 'kernel'",
                           [_run_id(store, "sdpa_cudnn")])
    assert len(launches) == 3
    assert (launches["api"] == "cuLaunchKernelEx").all()
    assert launches["target_name"].str.startswith("cudnn_generated").all()


def test_cold_cudnn_call_pays_for_its_plan(seeded):
    store = seeded[0]
    meta = lambda cold: json.loads(_one(store, "SELECT run_meta FROM traces WHERE run_id = ?",
                                        [_run_id(store, "sdpa_cudnn", cold)]))
    assert meta(True)["wall_us_per_call"] > 1000 * meta(False)["wall_us_per_call"]
    assert meta(True)["wall_calls"] == 1 and meta(False)["wall_calls"] == 20


def test_every_cold_sample_ran_first_in_a_fresh_process_with_empty_caches(seeded):
    store = seeded[0]
    metas = [json.loads(m) for m in store.query("SELECT run_meta FROM traces WHERE cold")["run_meta"]]
    assert len(metas) == len({m["variant"] for m in metas}) == 12
    for meta in metas:
        assert meta["process"]["fresh"] and meta["ran_before"] == []
        assert not any(cache["warm"] for cache in meta["process"]["caches"].values()), meta["variant"]
    assert len({m["process"]["pid"] for m in metas}) == 12


def test_cold_samples_hold_no_check_of_ours(seeded):
    store = seeded[0]
    checks = _one(store, "SELECT count(*) FROM ops o JOIN traces t USING (run_id) "
                         "WHERE t.cold AND o.name = 'check_output'")
    copies = store.query(
        "SELECT t.variant, lt.target_name, lt.api_ts_ns BETWEEN o.ts_ns AND o.ts_ns + o.dur_ns AS inside "
        "FROM launch_targets lt JOIN traces t USING (run_id) "
        "JOIN ops o ON o.run_id = lt.run_id AND o.cat = 'user_annotation' AND o.name = 'attention:' || t.variant "
        "WHERE t.cold AND lt.target_kind = 'memcpy'")
    assert checks == 0
    assert copies["inside"].all()  # every copy in a cold run is the variant's own
    assert not copies["target_name"].str.startswith("Memcpy DtoH").any() or set(
        copies.loc[copies["target_name"].str.startswith("Memcpy DtoH"), "variant"]) == {"naive_compiled"}


def test_the_sweep_covers_four_lengths_three_times_and_naive_time_grows_with_them(seeded):
    store = seeded[0]
    rows = store.query(f"SELECT seq_len, (run_meta->>'wall_us_per_call')::DOUBLE AS us FROM {_run_view(store)} "
                       "WHERE variant = 'naive' AND sweep_id IS NOT NULL ORDER BY seq_len")
    assert rows["seq_len"].value_counts().to_dict() == {512: 3, 1024: 3, 2048: 3, 4096: 3}
    assert rows.groupby("seq_len")["us"].median().is_monotonic_increasing


def test_samples_dir_is_inside_the_repository():
    assert SAMPLES_DIR == Path(__file__).resolve().parent.parent / "data" / "samples"


MODE_SAMPLES = {  # folder of data/samples/modes -> (mode, kv_heads, kv_lens, window, varlen)
    "prefill_gqa": ("prefill", 8, {2048}, None, None),
    "decode": ("decode", 8, {8192, 32768}, None, None),
    "decode_sweep": ("decode", 8, {1024, 4096, 8192, 16384, 32768, 65536}, None, None),
    "train": ("train", 16, {1024}, None, None),
    "window": ("prefill", 16, {4096}, 1024, None),
    "varlen": ("prefill", 16, {4096}, None, "512,1536,1024,1024"),
}


def test_the_mode_samples_are_stored_with_their_mode_and_shape(seeded):
    store = seeded[0]
    for folder, (mode, kv_heads, kv_lens, window, varlen) in MODE_SAMPLES.items():
        names = [sample_name(p) for p in sorted((SAMPLES_DIR / "modes" / folder).glob("*.json.gz"))]
        assert len(names) >= 6, folder
        rows = store.query('SELECT name, mode, kv_heads, kv_len, "window", varlen, seq_len, run_meta FROM traces '
                           "WHERE name IN (SELECT unnest($names))", {"names": names})
        assert len(rows) == len(names)
        assert set(rows["mode"]) == {mode} and set(rows["kv_heads"]) == {kv_heads}, folder
        assert set(rows["kv_len"]) == kv_lens and set(rows["window"].fillna(-1)) == {window or -1}
        assert set(rows["varlen"].fillna("")) == {varlen or ""}
        assert all(json.loads(m)["ok"] for m in rows["run_meta"]), folder


def test_a_decode_sample_has_one_query_against_its_kv_cache_and_train_samples_run_a_backward(seeded):
    store = seeded[0]
    decode = store.query("SELECT seq_len, kv_len FROM traces WHERE mode = 'decode'")
    assert (decode["seq_len"] == 1).all() and (decode["kv_len"] >= 1024).all()
    backward = store.query("SELECT t.variant, count(o.name) AS n FROM traces t LEFT JOIN ops o ON o.run_id = t.run_id "
                           "AND o.name LIKE '%Backward%' WHERE t.mode = 'train' GROUP BY t.variant")
    assert len(backward) == 8 and (backward["n"] > 0).all(), backward  # 7 PyTorch variants and FlashAttention 4


def test_a_batch_stores_exactly_what_one_ingest_per_file_stores(tmp_path):
    """Store.ingest_many (the seeding's batches) against Store.ingest per file, on real samples:
    every stored table and the metrics layer hold the same rows for every run."""
    files = [f for f in sample_files() if "default" in f.parts][:6]
    one, many = Store(tmp_path / "one.duckdb"), Store(tmp_path / "many.duckdb")
    singles = [one.ingest(f, name=sample_name(f), source="captured") for f in files]
    batch = many.ingest_many([(f, sample_name(f)) for f in files], source="captured")
    assert [r.run_id for r in batch] == [r.run_id for r in singles]
    assert [(r.events, r.kernels, r.duplicate) for r in batch] == [(r.events, r.kernels, False) for r in singles]
    tables = one.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                       "AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'store_%' "
                       "AND table_name NOT LIKE 'counter%'")["table_name"]
    with_rows = 0
    with many.session() as many_db, one.session() as one_db:  # one open file each for every read
        for table in tables:
            if "run_id" not in one_db.query(f"SELECT * FROM {table} LIMIT 0").columns:
                continue
            for r in singles:
                got = _rows(many_db, table, r.run_id)
                assert got == _rows(one_db, table, r.run_id), (table, r.name)
                with_rows += bool(got)
    assert with_rows >= 6 * 5  # traces, ops, kernels, launches, metrics at least, for every run


def test_a_batch_says_which_runs_were_already_stored(tmp_path):
    files = sample_files()[:3]
    store = Store(tmp_path / "store.duckdb")
    store.ingest(files[1], source="captured")
    got = store.ingest_many([(files[0], None), (files[1], None), (files[2], None), (files[0], "again")],
                            source="captured")
    assert [r.duplicate for r in got] == [False, True, False, True]
    assert _one(store, "SELECT count(*) FROM traces") == 3
    assert _one(store, "SELECT count(DISTINCT run_id) FROM stored_iteration_metrics") == 3


def test_a_bad_file_in_a_batch_is_named_and_nothing_of_the_batch_is_written(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    store = Store(tmp_path / "store.duckdb")
    with pytest.raises(errors.TraceError, match="broken.json"):
        store.ingest_many([(sample_files()[0], None), (bad, None)], source="captured")
    assert _one(store, "SELECT count(*) FROM traces") == 0


def test_the_decode_sweep_repeats_each_point_three_times_and_reads_the_cache_under_the_hbm_peak(seeded):
    """data/samples/modes/decode_sweep: one sweep id over the KV length, 3 warm runs per point; the
    TB/s written out here (K and V of the cache read once, q read and the output written once, bf16)
    from the store's kernel time per call stays under the H200's 4.8 TB/s and grows with the cache."""
    from profiler.analysis.findings import timings

    store = seeded[0]
    names = [sample_name(p) for p in sorted((SAMPLES_DIR / "modes" / "decode_sweep").glob("*.json.gz"))]
    rows = store.query("SELECT run_id, variant, kv_len, run_meta->>'sweep' AS sweep FROM traces "
                       "WHERE name IN (SELECT unnest($names))", {"names": names})
    assert set(rows["sweep"]) == {"decode-kv-sweep"}
    points = rows.groupby(["variant", "kv_len"]).size()
    assert (points == 3).all() and len(points) == 6 * 6 + 4 + 2, points  # 6 full-range variants, naive, math
    kernel = timings.run_timings(store, rows["run_id"].tolist()).set_index("run_id")["kernel_us_per_call"]
    rows["tbps"] = [(2 * 8 * 8 * L * 128 * 2 + 2 * 8 * 32 * 128 * 2) / (kernel[r] * 1e-6) / 1e12
                    for r, L in zip(rows["run_id"], rows["kv_len"])]
    assert (rows["tbps"] > 0).all() and (rows["tbps"] <= 4.8).all()
    median = rows.groupby(["variant", "kv_len"])["tbps"].median()
    for variant in ("sdpa_flash", "sdpa_cudnn", "flashinfer_decode", "flashinfer_decode_tc", "flash_attn_4"):
        assert median[variant].is_monotonic_increasing, variant  # launch costs weigh less on longer caches
    assert median["sdpa_cudnn"][65536] > 4.0 and median["flashinfer_decode_tc"][65536] > median["flashinfer_decode"][65536]


def test_a_page_over_every_sample_run_is_kept_whole_between_visits(seeded, monkeypatch):
    """The Sweep page's points over every shipped run (about 5 kept entries a run) stay in the
    store's cache: a second visit prices no run's ops again. With room for 1,024 entries the first
    visit evicted its own entries, and every visit computed them again (3.3-4.6 s against 1.1 s)."""
    from profiler.analysis.reads import op_pricing, run_queries
    from profiler.analysis.findings import sweeps
    from profiler.storage import run_cache

    store = seeded[0]
    every = list(run_queries.run_catalog(store)["run_id"])
    first = sweeps.sweep_points(store, every)
    priced = []
    real = op_pricing.run_op_calls
    monkeypatch.setattr(op_pricing, "run_op_calls", lambda *a, **k: priced.append(a[1]) or real(*a, **k))
    again = sweeps.sweep_points(store, every)
    assert priced == [] and again.equals(first)
    assert len(every) > 300 and len(store.cache) <= run_cache.MAX_ENTRIES // 4   # room for the other pages


def test_the_train_sweep_repeats_each_point_three_times_and_names_its_crossover(seeded):
    """data/samples/modes/train_sweep: a train step (forward and backward) over 512-4096 tokens,
    five variants, 3 warm runs per point in one sweep id. TFLOP/s written out here (forward 4 D,
    backward 10 D FLOPs per kept pair of the causal square) from each run's raw kernel time stays
    under the H200's 989 dense bf16 TFLOP/s; the Sweep page's crossover is the one the medians
    computed here show (flex leads sdpa_flash at 512, sdpa_flash leads from 1024)."""
    import statistics

    from profiler.analysis.findings import sweeps

    store = seeded[0]
    files = sorted((SAMPLES_DIR / "modes" / "train_sweep").glob("*.json.gz"))
    rows = store.query("SELECT run_id, variant, seq_len, mode, run_meta->>'sweep' AS sweep FROM traces "
                       "WHERE name IN (SELECT unnest($names))", {"names": [sample_name(p) for p in files]})
    assert set(rows["sweep"]) == {"train-len-sweep"} and set(rows["mode"]) == {"train"}
    points = rows.groupby(["variant", "seq_len"]).size()
    assert (points == 3).all() and len(points) == 5 * 4, points
    kernel_us = {}
    for path in files:
        trace = raw_trace.load(path)
        meta = trace["attention_run"]
        kernel_us.setdefault((meta["variant"], meta["seq_len"]), []).append(raw_trace.us_per_step(trace["traceEvents"]))
    median = {k: statistics.median(v) for k, v in kernel_us.items()}
    for (variant, length), us in median.items():
        tflops = 14 * 8 * 16 * 64 * length * (length + 1) // 2 / (us * 1e-6) / 1e12
        assert 0 < tflops <= 989, (variant, length, tflops)
    assert all(min(median, key=lambda k: median[k] if k[1] == n else float("inf"))[0] == "flash_attn_4"
               for n in (512, 1024, 2048, 4096))
    assert median[("flex", 512)] < median[("sdpa_flash", 512)] and median[("flex", 1024)] > median[("sdpa_flash", 1024)]
    crossings = sweeps.crossovers(sweeps.sweep_curves(sweeps.sweep_points(store, rows["run_id"].tolist())))
    assert [(c.leader, c.trailer, c.x_lo, c.x_hi) for c in crossings.itertuples()] == [("sdpa_flash", "flex", 512, 1024)]
