"""Capture modes and shapes on the CPU (issue 24): prefill with GQA, decode against a KV cache, a
train step, a sliding window and packed lengths, each captured, ingested and checked in the store
and in the trace's own ops; the mask against a brute-force definition; the per-mode availability;
the store's migration of runs captured before modes existed."""
from __future__ import annotations

import json
import random
from dataclasses import replace

import duckdb
import pandas as pd
import pytest
import torch

from profiler.capture import masks
from profiler.capture.recorder import capture, ingest_outcomes
from profiler.capture.config import CaptureConfig, CaptureError, run_name, validate
from profiler.capture.variants import availability_by_mode
from profiler.capture.attention_fns import make_inputs, naive_attention
from profiler.capture.setting import Setting
from profiler.cli.main import main
from profiler.storage.store import Store
from profiler.storage.migrations import SCHEMA_VERSION
from tests.conftest import SAMPLES

PLAIN = ("naive", "naive_inplace", "sdpa_math", "sdpa_auto", "sdpa_flash")
MASK_ONLY = {"window", "varlen"}  # cases that need an explicit mask, which sdpa_flash does not take
CASES = {  # name -> (config changes, variants)
    "prefill_gqa": (dict(heads=4, kv_heads=2), PLAIN + ("flex",)),
    "decode_q1": (dict(mode="decode", heads=4, kv_heads=1, seq_lens=(1,), kv_len=48), PLAIN + ("flex",)),
    "decode_q4": (dict(mode="decode", seq_lens=(4,), kv_len=48), PLAIN),
    "train": (dict(mode="train", heads=4, kv_heads=2), PLAIN),
    "window": (dict(window=8), PLAIN),
    "varlen": (dict(varlen=(8, 24), batch=1), PLAIN),
}


def _config(tmp_path, name: str) -> CaptureConfig:
    changes, variants = CASES[name]
    base = CaptureConfig(variants=variants, batch=2, heads=2, seq_lens=(32,), head_dim=16, dtype="fp32",
                         device="cpu", cold=False, repeats=1, timing_calls=2, isolate=False,
                         out_dir=tmp_path / name)
    return replace(base, **changes)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("modes")
    store = Store(tmp / "store.duckdb")
    found = {}
    for name in CASES:
        config = _config(tmp, name)
        outcomes = capture(config)
        ran = [o for o in outcomes if o.path is not None]
        results = ingest_outcomes(store, ran)
        found[name] = (config, outcomes, {o.variant: r.run_id for o, r in zip(ran, results)})
    return store, found


def _stored(store, run_id) -> dict:
    return store.query('SELECT mode, batch, heads, kv_heads, seq_len, kv_len, "window", varlen, run_meta '
                       "FROM traces WHERE run_id = ?", [run_id]).iloc[0].to_dict()


@pytest.mark.slow  # a real torch capture
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_mode_runs_its_cpu_variants_correctly_and_is_stored_with_its_shape(captured, name):
    store, found = captured
    config, outcomes, ids = found[name]
    expected = set(CASES[name][1]) - ({"sdpa_flash"} if name in MASK_ONLY else set())
    assert set(ids) == expected, [(o.variant, o.skipped) for o in outcomes if o.skipped]
    for variant, run_id in ids.items():
        row = _stored(store, run_id)
        meta = json.loads(row["run_meta"])
        assert meta["ok"], (variant, meta["rel_error"])
        assert row["mode"] == config.mode and row["heads"] == config.heads
        assert row["kv_heads"] == (config.kv_heads or config.heads)
        assert row["seq_len"] == (sum(config.varlen) if config.varlen else config.seq_lens[0])
        assert row["kv_len"] == (config.kv_len or row["seq_len"])
        assert (None if pd.isna(row["window"]) else row["window"]) == config.window
        assert row["varlen"] == (",".join(map(str, config.varlen)) if config.varlen else None)


def _attention_input_dims(store, run_id) -> list:
    dims = store.query("SELECT input_dims FROM ops WHERE run_id = ? AND name IN "
                       "('aten::scaled_dot_product_attention', 'aten::_scaled_dot_product_flash_attention_for_cpu')",
                       [run_id])["input_dims"]
    return [json.loads(d) for d in dims]


@pytest.mark.slow  # a real torch capture
@pytest.mark.parametrize("name", ["decode_q1", "decode_q4"])
def test_a_decode_trace_has_fewer_queries_than_keys(captured, name):
    store, found = captured
    config, _, ids = found[name]
    dims = _attention_input_dims(store, ids["sdpa_math"])
    assert dims, "no SDPA op recorded"
    q, k = dims[0][0], dims[0][1]
    assert q[2] == config.seq_lens[0] and k[2] == config.kv_len and q[2] != k[2]
    assert k[1] == (config.kv_heads or config.heads) and q[1] == config.heads


@pytest.mark.slow  # a real torch capture
def test_a_train_trace_holds_the_backward_and_the_gradients_are_checked(captured):
    store, found = captured
    _, outcomes, ids = found["train"]
    for variant, run_id in ids.items():
        backward = store.query("SELECT count(*) AS n FROM ops WHERE run_id = ? AND name LIKE '%Backward%'",
                               [run_id])["n"][0]
        assert backward > 0, variant
    metas = {o.variant: o.meta for o in outcomes if o.meta}
    for variant, meta in metas.items():
        assert set(meta["grad_rel_error"]) == {"dq", "dk", "dv"}
        assert meta["rel_error"] == max([meta["rel_error"], *meta["grad_rel_error"].values()])
    forward = store.query("SELECT count(*) AS n FROM ops o JOIN traces t USING (run_id) "
                          "WHERE t.mode = 'window' AND o.name LIKE '%Backward%'")["n"][0]
    assert forward == 0


@pytest.mark.slow  # a real torch capture
def test_a_prefill_of_gqa_repeats_kv_in_naive_and_in_the_math_backend(captured):
    """naive spreads K/V to the query heads by repeat_interleave; so does SDPA's math backend
    inside its op for enable_gqa (seen here): neither saves K/V traffic."""
    store, found = captured
    _, _, ids = found["prefill_gqa"]
    count = lambda run_id: store.query("SELECT count(*) AS n FROM ops WHERE run_id = ? "
                                       "AND name = 'aten::repeat_interleave'", [run_id])["n"][0]
    assert count(ids["naive"]) > 0 and count(ids["sdpa_math"]) > 0


@pytest.mark.slow  # a real torch capture
def test_a_window_or_packing_skips_sdpa_flash_with_its_reason(captured):
    for name in MASK_ONLY:
        skipped = {o.variant: o.skipped for o in captured[1][name][1] if o.skipped}
        assert set(skipped) == {"sdpa_flash"} and "takes no explicit mask" in skipped["sdpa_flash"]


# ---- the mask, against a definition written out loop by loop -------------------------------

def _brute(spec: masks.MaskSpec) -> torch.Tensor:
    docs = []
    for i, n in enumerate(spec.varlen or ()):
        docs += [i] * n
    out = torch.zeros(spec.q_len, spec.kv_len, dtype=torch.bool)
    for i in range(spec.q_len):
        p = i + spec.kv_len - spec.q_len  # the query's position: bottom-right
        for j in range(spec.kv_len):
            ok = True
            if spec.causal and j > p:
                ok = False
            if spec.window is not None:
                distance = p - j if spec.causal else abs(p - j)
                if distance >= spec.window:
                    ok = False
            if spec.varlen is not None and docs[i] != docs[j]:
                ok = False
            out[i, j] = ok
    return out


def test_the_dense_mask_is_the_brute_force_definition():
    rng = random.Random(7)
    specs = [masks.MaskSpec(1, 9), masks.MaskSpec(4, 9), masks.MaskSpec(6, 6, window=3),
             masks.MaskSpec(6, 6, causal=False, window=2), masks.MaskSpec(10, 10, varlen=(3, 7)),
             masks.MaskSpec(10, 10, window=2, varlen=(4, 6))]
    for _ in range(20):
        kv = rng.randint(1, 12)
        specs.append(masks.MaskSpec(rng.randint(1, kv), kv, rng.random() < 0.7,
                                    rng.choice([None, 1, 3, 5])))
    for spec in specs:
        assert torch.equal(spec.dense("cpu"), _brute(spec)), spec


def test_one_decoded_token_sees_every_key_and_naive_agrees_with_the_unmasked_reference():
    spec = masks.MaskSpec(1, 16)
    assert spec.everything and spec.dense("cpu").all()
    q, k, v = make_inputs(1, 4, 1, 8, "fp32", "cpu", kv_heads=2, kv_len=16)
    masked = naive_attention(q, k, v, spec=spec)
    by_hand = torch.softmax(q @ k.repeat_interleave(2, 1).transpose(-2, -1) / 8 ** 0.5, -1) @ v.repeat_interleave(2, 1)
    assert torch.allclose(masked, by_hand, atol=1e-6)


# ---- availability per mode, config checks, names --------------------------------------------

def test_variants_say_per_mode_why_they_cannot_run():
    by_mode = availability_by_mode(Setting(device="cpu", dtype="fp32", head_dim=16, window=8))
    rows = {mode: {a.name: a for a in rows} for mode, rows in by_mode.items()}
    assert rows["train"]["flex"].reason == "flex attention has no backward on the CPU (a train step needs CUDA)"
    assert rows["prefill"]["flex"].available
    assert "takes no explicit mask" in rows["prefill"]["sdpa_flash"].reason
    cuda = availability_by_mode(Setting(device="cuda", gqa=True, mode="train"))
    names = {a.name: a for a in cuda["train"]}
    assert "needs CUDA" not in names["sdpa_efficient"].reason


def test_cli_variants_json_lists_every_mode(capsys):
    assert main(["variants", "--json", "--device", "cpu", "--window", "8"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows["flex"]["modes"]) == {"prefill", "decode", "train"}
    assert rows["flex"]["modes"]["train"]["available"] is False and rows["flex"]["available"] is True
    assert rows["sdpa_flash"]["modes"]["decode"]["available"] is False


@pytest.mark.parametrize("changes, words", [
    (dict(mode="decode"), "decode needs the KV cache length"),
    (dict(heads=4, kv_heads=3), "must be a multiple of kv_heads"),
    (dict(varlen=(8, 8)), "batch must be 1"),
    (dict(varlen=(8, 8), batch=1, mode="decode", kv_len=64), "for prefill and train"),
    (dict(seq_lens=(64,), kv_len=32), "longer than the keys"),
    (dict(mode="sideways"), "mode must be one of"),
    (dict(window=0), "window must be at least 1"),
])
def test_bad_mode_requests_are_clear_errors(tmp_path, changes, words):
    config = replace(_config(tmp_path, "prefill_gqa"), **changes)
    with pytest.raises(CaptureError, match=words):
        validate(config)


def test_cli_sweeps_one_axis_at_a_time(tmp_path, capsys):
    code = main(["capture", "--device", "cpu", "--variants", "naive", "--kv-len", "32,64", "--seq", "8,16",
                 "--no-ingest", "--out-dir", str(tmp_path)])
    assert code == 2 and "one axis at a time" in capsys.readouterr().err


def test_names_keep_plain_prefill_as_before_and_name_every_new_field():
    plain = CaptureConfig(batch=8, heads=16, head_dim=64)
    assert run_name(plain, "naive", 1024, False) == "naive_b8_h16_s1024_d64_bf16_causal_warm"
    decode = replace(plain, mode="decode", kv_heads=4, kv_len=8192)
    assert run_name(decode, "flex", 1, False) == "flex_decode_b8_h16_kv4_s1_L8192_d64_bf16_causal_warm"
    packed = replace(plain, batch=1, mode="train", window=128, varlen=(256, 768))
    assert run_name(packed, "naive", 1024, True) == "naive_train_b1_h16_s1024_w128_v256x768_d64_bf16_causal_cold"


# ---- the store: runs captured before modes ---------------------------------------------------

def test_a_store_from_before_modes_gets_the_columns_and_their_defaults(tmp_path):
    path = tmp_path / "old.duckdb"
    store = Store(path)
    sample = sorted((SAMPLES / "default").glob("sdpa_flash_*warm.json.gz"))[0]
    run_id = store.ingest(sample).run_id
    con = duckdb.connect(str(path))
    for column in ("mode", "kv_heads", "kv_len", '"window"', "varlen"):
        con.execute(f"ALTER TABLE traces DROP COLUMN {column}")
    con.execute("UPDATE store_meta SET value = '6' WHERE key = 'schema_version'")
    con.close()
    upgraded = Store(path)
    assert upgraded.schema_version() == SCHEMA_VERSION
    row = _stored(upgraded, run_id)
    assert (row["mode"], row["kv_heads"], row["kv_len"], row["varlen"]) == ("prefill", 16, 1024, None)


def test_a_sweep_over_another_axis_shares_one_id_and_repeats_each_point_three_times():
    from profiler.capture.config import sweep_points

    points = sweep_points(CaptureConfig(mode="decode", kv_len=1024), "kv_len", (1024, 4096, 16384))
    assert [p.kv_len for p in points] == [1024, 4096, 16384]
    assert len({p.sweep for p in points}) == 1 and str(points[0].sweep).startswith("sweep-")
    assert {p.repeats for p in points} == {3}
    with pytest.raises(CaptureError, match="sweep axis"):
        sweep_points(CaptureConfig(), "dtype", (1, 2))


@pytest.mark.slow  # a real torch capture in a fresh process
def test_an_isolated_worker_carries_the_mode_and_packed_lengths(tmp_path):
    config = CaptureConfig(variants=("naive",), batch=1, heads=2, head_dim=8, dtype="fp32", device="cpu",
                           mode="train", varlen=(4, 12), window=3, cold=False, repeats=1, timing_calls=2,
                           out_dir=tmp_path)
    (outcome,) = capture(config)
    assert outcome.path is not None and outcome.meta["process"]["fresh"] is True
    meta = outcome.meta
    assert (meta["mode"], meta["varlen"], meta["window"], meta["seq_len"], meta["kv_len"]) == ("train", [4, 12], 3, 16, 16)
    assert meta["ok"] and set(meta["grad_rel_error"]) == {"dq", "dk", "dv"}
