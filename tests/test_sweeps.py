"""Sweeps over any axis, per mode (`profiler.analysis.findings.sweeps`): the axis found, the throughput per
mode, the spread of the repeats and the crossovers named, checked against an independent
computation on the real H200 samples and on CPU captures swept over each axis."""
from __future__ import annotations

import itertools
import json
import statistics

import pandas as pd
import pytest

from profiler.analysis.findings import findings, sweeps
from profiler.analysis.reads import queries, run_queries
from profiler.present import curve_charts
from profiler.storage.store import Store
from tests import raw_trace
from tests.cli_run import cli
from tests.conftest import SAMPLES, ingest_all

SEQ_VARIANTS = ("flex", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flash_attn_4")
DECODE = SAMPLES / "modes" / "decode"


@pytest.fixture(scope="module")
def h200(tmp_path_factory):
    """The H200 length sweep of five fused variants (4 lengths x 3 repeats) and the decode samples
    (KV cache 8192 and 32768, one run each), in one store."""
    store = Store(tmp_path_factory.mktemp("sweeps") / "s.duckdb")
    files = [p for v in SEQ_VARIANTS for p in sorted((SAMPLES / "sweep").glob(f"{v}_b8_*.json.gz"))]
    files += sorted(DECODE.glob("*.json.gz"))
    ids = dict(zip(files, ingest_all(store, files, source="captured")))
    with store.session() as db:
        points = sweeps.sweep_points(db, list(ids.values()))
    return store, ids, points


def _trace_tflops(path) -> tuple[str, int, float]:
    """(variant, length, TFLOP/s) from the raw trace alone: 4·B·H·D FLOPs for each of the L(L+1)/2
    causal query-key pairs, per step, over the GPU time (kernels, sets, copies) of the profiled steps."""
    trace = raw_trace.load(path)
    meta = trace["attention_run"]
    gpu_us = raw_trace.us_per_step(trace["traceEvents"], raw_trace.GPU_WORK)
    length = meta["seq_len"]
    flops = 4 * meta["batch"] * meta["heads"] * meta["head_dim"] * length * (length + 1) // 2
    return meta["variant"], length, flops / gpu_us / 1e6


def _kept(values: list) -> list:
    """The repeats left once outliers (over 5 % and 3 MADs from the median, fewer than half) are set aside."""
    m = statistics.median(values)
    mad = statistics.median(abs(v - m) for v in values)
    far = [v for v in values if abs(v - m) > max(0.05 * m, 3 * mad)] if len(values) >= 3 else []
    return [v for v in values if v not in far] if 2 * len(far) < len(values) else values


def _independent_crossings(raw: dict) -> set:
    """(leader, trailer, length from which it leads) by a plain walk over the repeats' rates: two
    points tie when their ranges overlap or their medians differ by less than the larger spread;
    a lead that changes through ties is a crossing."""
    def state(a, b):
        ka, kb = _kept(raw[a]), _kept(raw[b])
        ma, mb = statistics.median(ka), statistics.median(kb)
        noise = max((max(k) - min(k)) / statistics.median(k) for k in (ka, kb))
        if min(ka) <= max(kb) and min(kb) <= max(ka) or abs(ma - mb) / min(ma, mb) < noise:
            return 0
        return 1 if ma > mb else -1

    found = set()
    names = sorted({v for v, _ in raw})
    lengths = sorted({n for _, n in raw})
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            last = 0
            for n in lengths:
                side = state((a, n), (b, n))
                if side and last and side != last:
                    found.add((a, b, n) if side > 0 else (b, a, n))
                last = side or last
    return found


def test_a_length_sweep_and_a_kv_cache_sweep_are_found_apart_by_mode(h200):
    _, _, points = h200
    curves = sweeps.sweep_curves(points)
    by_axis = {axis: part for axis, part in curves.groupby("axis")}
    assert set(by_axis) == {"seq_len", "kv_len"}
    prefill, decode = by_axis["seq_len"], by_axis["kv_len"]
    assert set(prefill["mode"]) == {"prefill"} and set(prefill["metric"]) == {"tflops"}
    assert set(decode["mode"]) == {"decode"} and set(decode["metric"]) == {"tbps"}    # never mixed
    assert sorted(prefill["x"].unique()) == [512, 1024, 2048, 4096]
    assert sorted(decode["x"].unique()) == [8192, 32768]
    assert set(prefill["runs"]) == {3} and set(decode["runs"]) == {1}
    assert set(prefill["variant"]) == set(SEQ_VARIANTS)
    assert (prefill["min"] <= prefill["median"]).all() and (prefill["median"] <= prefill["max"]).all()
    # the run a point opens is one of its repeats
    runs = points.groupby(["sweep", "variant", "x"])["run_id"].agg(set)
    assert all(r.run_id in runs[r.sweep, r.variant, r.x] for r in curves.itertuples())
    assert sweeps.sweep_title(points, decode["sweep"].iloc[0]) == (
        "decode: KV cache length sweep (batch 8, heads 32, K/V heads 8, queries 1, head dim 128, bf16, causal)")


def test_length_sweep_throughput_and_crossovers_match_the_raw_traces(h200):
    _, ids, points = h200
    curves = sweeps.sweep_curves(points)
    prefill = curves[curves["axis"] == "seq_len"].set_index(["variant", "x"])
    raw: dict = {}
    for path in ids:
        if path.parent.name == "sweep":
            variant, length, tflops = _trace_tflops(path)
            raw.setdefault((variant, length), []).append(tflops)
    medians = {k: statistics.median(v) for k, v in raw.items()}
    assert set(medians) == set(prefill.index)
    for key, value in medians.items():
        assert prefill.loc[key, "median"] == pytest.approx(value, rel=1e-3), key
    crossed = sweeps.crossovers(curves)
    got = {(r.leader, r.trailer, r.x_hi) for r in crossed.itertuples() if r.axis == "seq_len"}
    assert got == _independent_crossings(raw)
    assert got, "the H200 length sweep has variants that swap the lead"
    assert ("sdpa_flash", "flex", 1024) in got
    text = crossed.set_index(["leader", "trailer"]).loc[("sdpa_flash", "flex"), "text"]
    assert text.startswith("sdpa_flash overtakes flex for prefill from 1k tokens: ")


def test_the_kv_cache_sweep_reads_the_cache_bandwidth_of_each_run(h200):
    store, _, points = h200
    decode = points[points["axis"] == "kv_len"]
    with store.session() as db:
        ops = queries.run_shapes(db, list(decode["run_id"]))
    assert set(ops["mode"]) == {"decode"}
    # TB/s >= the KV cache alone (2·B·H_kv·L·D·2 bytes) over the GPU busy time: the modelled bytes
    # hold the cache, and the modelled kernel time is at most the busy time
    for row in decode.itertuples():
        cache = 2 * 8 * 8 * row.kv_len * 128 * 2
        assert row.value >= cache / (row.gpu_work_us_per_iter * 1e-6) / 1e12 * 0.99, row.variant
        assert row.value <= 4.8, "above the H200's HBM bandwidth"


def test_crossover_words_per_axis():
    assert sweeps.from_words("kv_len", "decode", 8192) == "from a KV cache of 8k"
    assert sweeps.from_words("seq_len", "prefill", 2048) == "from 2k tokens"
    assert sweeps.from_words("window", "prefill", 512) == "from a window of 512"
    assert sweeps.from_words("head_dim", "train", 128) == "from a head dim of 128"
    assert sweeps.from_words("kv_heads", "prefill", 8) == "from 8 K/V heads"
    assert sweeps.amount("kv_len", 1536) == "1.5k" and sweeps.amount("kv_len", 1000) == "1,000"


def test_a_lead_that_changes_through_a_tie_is_a_crossover():
    rows = [("a", 1, 10.0, 9.9, 10.1), ("a", 2, 10.0, 9.9, 10.1), ("a", 4, 10.0, 9.9, 10.1),
            ("b", 1, 8.0, 7.9, 8.1), ("b", 2, 10.05, 9.95, 10.1), ("b", 4, 12.0, 11.9, 12.1)]   # a tie at 2
    curves = pd.DataFrame([dict(sweep="s", axis="window", mode="prefill", metric="tflops", variant=v, x=x,
                                median=m, min=lo, max=hi, repeats=3) for v, x, m, lo, hi in rows])
    crossed = sweeps.crossovers(curves)
    assert list(zip(crossed["leader"], crossed["trailer"], crossed["x_lo"], crossed["x_hi"])) == [("b", "a", 1, 4)]
    assert crossed["ties"].iloc[0] == [2]
    assert crossed["text"].iloc[0] == ("b overtakes a for prefill from a window of 4: 12.00 against 10.00 TFLOP/s "
                                       "at 4 (20.0 % ahead; noise floor 2.0 %), where a led at 1 (10.00 against "
                                       "8.00 TFLOP/s); tied at 2 (10.05 against 10.00 TFLOP/s, within the "
                                       "repeats' spread).")
    assert sweeps.crossovers(curves, min_gap=0.5).empty      # 20-25 % apart: closer than a 50 % gap


def test_sweep_findings_read_the_one_crossover_function(h200):
    store, ids, _ = h200
    sweep_ids = [i for p, i in ids.items() if p.parent.name == "sweep"]
    with store.session() as db:
        found = findings.sweep_findings(db, sweep_ids)
        crossed = sweeps.crossovers(sweeps.sweep_curves(sweeps.sweep_points(db, sweep_ids)))
    assert [f.text for f in found] == list(crossed["text"])
    assert {f.kind for f in found} == {"crossover"}
    json.dumps([f.evidence for f in found], allow_nan=False)


def test_curve_chart_shape_keys_are_the_queries_keys():
    assert curve_charts.SWEEP_SHAPE == [k for k in queries.SHAPE_KEYS if k != "variant"]
    assert curve_charts.timeline_link("abc123") == "/timeline?runs=abc123"


def test_every_point_of_the_chart_links_to_its_runs_timeline(h200):
    _, _, points = h200
    curves = sweeps.sweep_curves(points)
    sweep = curves[curves["axis"] == "kv_len"]["sweep"].iloc[0]
    mine = curves[curves["sweep"] == sweep]
    spec = curve_charts.sweep_chart(mine, points[points["sweep"] == sweep], sweeps.crossovers(mine)).to_dict()
    linked = [layer for layer in spec["layer"] if "href" in layer.get("encoding", {})]
    assert len(linked) == 2                               # the repeats' dots and the medians' points
    for layer in linked:
        for row in spec["datasets"][layer["data"]["name"]]:
            assert row["timeline"] == f"/timeline?runs={row['run_id']}"
    table = curve_charts.sweep_table(mine, "http://host:8501")
    assert all(t == f"http://host:8501/timeline?runs={r}" for t, r in zip(table["timeline"], table["run_id"]))


AXIS_CAPTURES = {   # axis -> the capture flags of a small CPU sweep over it
    "kv_len": ["--mode", "decode", "--kv-len", "32,128"],
    "window": ["--seq", "64", "--window", "8,32"],
    "head_dim": ["--seq", "32", "--head-dim", "8,16"],
    "kv_heads": ["--seq", "32", "--kv-heads", "1,4"],
}


@pytest.mark.slow  # 12 CPU captures (the command line in this process: tests/cli_run.py)
@pytest.mark.parametrize("axis", list(AXIS_CAPTURES))
def test_a_cpu_capture_swept_over_an_axis_is_found_on_that_axis(axis, tmp_path):
    db = tmp_path / "cpu.duckdb"
    args = ["capture", "--device", "cpu", "--variants", "naive,sdpa_math", "--batch", "1", "--heads", "4",
            "--dtype", "fp32", "--no-cold", "--no-isolate", "--timing-calls", "1", "--repeats", "3",
            "--out-dir", str(tmp_path), "--db", str(db), *AXIS_CAPTURES[axis]]
    if axis != "head_dim":
        args += ["--head-dim", "8"]
    done = cli(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    store = Store(db)
    with store.session() as s:
        ids = list(run_queries.run_catalog(s)["run_id"])
        points = sweeps.sweep_points(s, ids)
        curves = sweeps.sweep_curves(points)
        shapes = queries.run_shapes(s, ids)
    assert len(ids) == 12
    assert set(points["axis"]) == {axis}
    values = sorted(shapes[axis].unique())
    assert sorted(curves["x"].unique()) == values and len(values) == 2
    assert set(curves["runs"]) == {3} and set(curves["variant"]) == {"naive", "sdpa_math"}
    assert set(curves["metric"]) == {"tbps" if axis == "kv_len" else "tflops"}
    for row in sweeps.crossovers(curves).itertuples():     # noisy on a shared CPU: whatever crosses is named
        assert sweeps.from_words(axis, row.mode, row.x_hi) in row.text


def _raw_step_us(path) -> tuple[dict, float]:
    """(the run's own shape record, GPU µs per profiled step: its kernels, sets and copies) from the
    raw trace alone."""
    trace = raw_trace.load(path)
    return trace["attention_run"], raw_trace.us_per_step(trace["traceEvents"], raw_trace.GPU_WORK)


def test_the_decode_sweep_rates_the_faster_run_higher_naive_and_math_included(tmp_path):
    """Every run of the H200 decode sweep (8 variants, naive and math among them, KV cache 1k-64k)
    is rated by the bytes its shape reads and writes (Q, K, V, the output), not by what its own ops
    move: naive and math write a score matrix, which made them read fast while running 15-34x
    slower. So at each point the variants rank as their GPU times do, and each run's TB/s times its
    time is the shape's bytes, from the raw traces alone."""
    store = Store(tmp_path / "d.duckdb")
    files = sorted((SAMPLES / "modes" / "decode_sweep").glob("*.json.gz"))
    ids = dict(zip(ingest_all(store, files, source="captured"), files))
    with store.session() as db:
        points = sweeps.sweep_points(db, list(ids))
    decode = points[points["axis"] == "kv_len"]
    assert {"naive", "sdpa_math"} <= set(decode["variant"]) and len(set(decode["variant"])) == 8
    raw_us, by_point = {}, {}
    for row in decode.itertuples():
        meta, us = _raw_step_us(ids[row.run_id])
        b, h, kv, d, n = meta["batch"], meta["heads"], meta["kv_heads"], meta["head_dim"], meta["kv_len"]
        shape_bytes = 2 * (2 * b * h * 1 * d + 2 * b * kv * n * d)      # bf16: Q and O, K and V
        assert row.value * us * 1e6 == pytest.approx(shape_bytes, rel=0.02), (row.variant, n)
        raw_us[row.run_id] = us
        by_point.setdefault(row.x, {}).setdefault(row.variant, []).append(row.run_id)
    for x, variants in by_point.items():
        median_us = {v: statistics.median(raw_us[r] for r in runs) for v, runs in variants.items()}
        median_rate = decode[decode["x"] == x].groupby("variant")["value"].median()
        for a, b in itertools.permutations(median_us, 2):  # ties within 2 % (streams overlap) aside
            if median_us[a] * 1.02 < median_us[b]:
                assert median_rate[a] > median_rate[b], (x, a, b)
        assert median_rate.idxmin() == max(median_us, key=median_us.get), x   # the slowest rates lowest
        if {"naive", "sdpa_math"} & set(median_us):
            assert median_rate.idxmin() in ("naive", "sdpa_math"), x
