"""A small CPU capture of every CPU-capable variant, landing in a real store as runs."""
from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest

from profiler.capture.recorder import capture, ingest_outcomes
from profiler.capture.config import CaptureConfig, CaptureError, TOLERANCE
from profiler.capture.variants import VARIANTS, Variant, availability
from profiler.capture.attention_fns import naive_attention
from profiler.cli.main import main
from profiler.storage.store import Store

CPU_CAPABLE = {a.name for a in availability(CaptureConfig(device="cpu", dtype="fp32", head_dim=16).setting())
               if a.available}
GPU_ONLY = set(VARIANTS) - CPU_CAPABLE


def _base(tmp_path, **changes) -> CaptureConfig:
    config = CaptureConfig(batch=1, heads=2, seq_lens=(32,), head_dim=16, dtype="fp32", device="cpu",
                           timing_calls=3, out_dir=tmp_path / "traces")
    return replace(config, **changes)


def _unscaled(setting):
    """A deliberately wrong variant: forgets the 1/sqrt(head_dim) scale."""
    return lambda q, k, v: naive_attention(q * q.shape[-1] ** 0.5, k, v, causal=setting.causal)


def _broken(setting):
    def attend(q, k, v):
        raise RuntimeError("no kernel image is available\nsecond line")
    return attend


EXTRA = (Variant("wrong_scale", "naive without the scale", (), _unscaled),
         Variant("broken", "raises on every call", (), _broken))


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("capture")
    reports = []
    outcomes = capture(_base(tmp), progress=lambda *report: reports.append(report), extra_variants=EXTRA)
    store = Store(tmp / "store.duckdb")
    results = ingest_outcomes(store, outcomes)
    return {(o.variant, o.cold): o for o in outcomes}, reports, store, results


def test_the_cpu_variants_include_the_compiled_ones():
    assert {"naive", "naive_compiled", "sdpa_math", "sdpa_flash", "flex"} <= CPU_CAPABLE
    assert GPU_ONLY == {"sdpa_efficient", "sdpa_cudnn", "hub_flash", "flashinfer_fa2", "flashinfer_fa3",
                        "flashinfer_decode", "flashinfer_decode_tc",
                        "flash_attn_4"}


@pytest.mark.slow  # a real torch capture
def test_every_cpu_variant_is_profiled_cold_and_warm(captured):
    runs = captured[0]
    for name in CPU_CAPABLE | {"wrong_scale"}:
        for cold in (True, False):
            outcome = runs[(name, cold)]
            assert outcome.skipped is None and outcome.path.name.endswith(".json.gz")
            assert outcome.path.read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.slow  # a real torch capture
def test_gpu_only_variants_are_skipped_with_their_reason(captured):
    runs = captured[0]
    for name in GPU_ONLY:
        assert runs[(name, True)].path is None and "needs CUDA" in runs[(name, False)].skipped


@pytest.mark.slow  # a real torch capture
def test_a_variant_that_fails_is_skipped_without_a_trace_and_others_go_on(captured):
    runs = captured[0]
    assert runs[("broken", False)].skipped == "RuntimeError: no kernel image is available"
    assert runs[("broken", True)].path is None
    assert not list(runs[("naive", True)].path.parent.glob("broken_*"))


@pytest.mark.slow  # a real torch capture
def test_the_trace_describes_itself_at_top_level(captured):
    outcome = captured[0][("sdpa_math", False)]
    with gzip.open(outcome.path, "rt") as f:
        meta = json.load(f)["attention_run"]
    assert meta == outcome.meta
    assert meta["variant"] == "sdpa_math" and meta["seq_len"] == 32 and meta["dtype"] == "fp32"
    assert meta["schedule"] == {"wait": 1, "warmup": 1, "active": 3} and meta["label"] == "attention:sdpa_math"
    assert meta["wall_us_per_call"] > 0 and meta["wall_calls"] == 3 and meta["wall_clock"] == "host clock"
    assert meta["graph_us_per_call"] is None and meta["graph_note"] == "CUDA graphs need a CUDA GPU"
    assert meta["device"] == "cpu" and meta["sweep"] is False and meta["ok"] is True
    assert meta["profile_memory"] is True and meta["repeats"] == 1 and meta["process"]["fresh"] is False


@pytest.mark.slow  # a real torch capture
def test_a_wrong_result_is_flagged_not_hidden(captured):
    meta = captured[0][("wrong_scale", False)].meta
    assert meta["ok"] is False and meta["rel_error"] > TOLERANCE["fp32"]
    assert captured[0][("naive", False)].meta["rel_error"] < TOLERANCE["fp32"]


@pytest.mark.slow  # a real torch capture
def test_runs_land_in_the_store_with_iterations_and_cpu_ops(captured):
    runs, _, store, results = captured
    assert len(results) == sum(o.path is not None for o in runs.values())
    df = store.query("SELECT t.variant, t.cold, t.seq_len, t.source, count(DISTINCT i.iteration) AS iters "
                     "FROM traces t JOIN iterations i USING (run_id) GROUP BY ALL")
    assert set(df["source"]) == {"captured"}
    assert set(df["variant"]) == CPU_CAPABLE | {"wrong_scale"}
    assert (df.loc[df["cold"], "iters"] == 1).all() and (df.loc[~df["cold"], "iters"] == 3).all()
    labels = store.query("SELECT count(*) AS n FROM ops o JOIN traces t USING (run_id) "
                         "WHERE t.variant = 'naive' AND NOT t.cold AND o.name = 'attention:naive'")
    assert labels["n"][0] == 3


@pytest.mark.slow  # a real torch capture
def test_cold_runs_keep_the_cold_call_and_no_check_of_ours(captured):
    store = captured[2]
    names = set(store.query("SELECT o.name FROM ops o JOIN traces t USING (run_id) "
                            "WHERE t.variant = 'naive_compiled' AND t.cold")["name"])
    assert "attention:naive_compiled" in names and "check_output" not in names
    meta = captured[0][("naive_compiled", True)].meta
    assert meta["wall_us_per_call"] > 0 and meta["wall_calls"] == 1 and meta["rel_error"] is not None


@pytest.mark.slow  # a real torch capture
def test_captures_record_memory_events_with_the_ops_that_made_them(captured):
    store = captured[2]
    rows = store.query("SELECT m.op_name, m.change_bytes FROM memory_events m JOIN traces t USING (run_id) "
                       "WHERE t.variant = 'naive' AND NOT t.cold AND m.change_bytes > 0")
    assert len(rows) > 0 and "aten::bmm" in set(rows["op_name"])


@pytest.mark.slow  # a real torch capture
def test_progress_moves_forward_to_one(captured):
    reports = captured[1]
    fractions = [fraction for _, fraction, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] == 0.0
    assert {variant for variant, _, _ in reports} >= set(VARIANTS)
    assert any("skipped" in message for _, _, message in reports)


@pytest.mark.slow  # a real torch capture
def test_a_sweep_shares_one_id_and_repeats_each_point_three_times(tmp_path):
    outcomes = capture(_base(tmp_path, variants=("naive",), seq_lens=(16, 32), cold=False, isolate=False))
    sweeps = {o.meta["sweep"] for o in outcomes}
    assert [(o.seq_len, o.repeat) for o in outcomes] == [(16, 0), (16, 1), (16, 2), (32, 0), (32, 1), (32, 2)]
    assert len(sweeps) == 1 and next(iter(sweeps)).startswith("sweep-")
    assert [o.name.rsplit("_", 1)[1] for o in outcomes[:3]] == ["r1", "r2", "r3"]
    assert len({o.path for o in outcomes}) == 6


def _fails_while_profiled(setting):
    """Works for the warm-up and timing calls (3 + 1 + 3 here), then fails inside the profiler."""
    calls = []

    def attend(q, k, v):
        calls.append(1)
        if len(calls) > 7:
            raise RuntimeError("illegal memory access")
        return naive_attention(q, k, v)
    return attend


@pytest.mark.slow  # a real torch capture
def test_a_failure_inside_a_profiled_cycle_drops_that_run_only(tmp_path):
    flaky = Variant("flaky", "fails once profiled", (), _fails_while_profiled)
    outcomes = capture(_base(tmp_path, variants=("naive",), seq_lens=(16, 32), cold=False, repeats=1),
                       extra_variants=(flaky,))
    by_key = {(o.variant, o.seq_len): o for o in outcomes}
    assert by_key[("flaky", 16)].skipped == "RuntimeError: illegal memory access"
    assert by_key[("naive", 32)].path.exists() and by_key[("naive", 32)].meta["ok"]
    assert sorted(p.name.split("_")[0] for p in (tmp_path / "traces").iterdir()) == ["naive", "naive"]
    with gzip.open(by_key[("naive", 32)].path, "rt") as f:
        steps = {e["name"] for e in json.load(f)["traceEvents"] if e["name"].startswith("ProfilerStep")}
    assert len(steps) == 3


@pytest.mark.parametrize("changes, words", [
    ({"variants": ("naive", "fast")}, "unknown variant 'fast'"),
    ({"dtype": "fp8"}, "dtype must be one of bf16, fp16, fp32"),
    ({"seq_lens": (0,)}, "seq_len 0 must be at least 1"),
    ({"variants": ()}, "no variants"),
    ({"device": "tpu"}, "device must be 'cuda' or 'cpu'"),
    ({"seq_lens": (1_000_000,)}, "seq_len 1000000 is too long here"),
    ({"repeats": 0}, "repeats must be at least 1"),
    ({"warmup_s": -1.0}, "warmup_s must not be negative"),
])
def test_bad_requests_are_clear_errors(tmp_path, changes, words):
    with pytest.raises(CaptureError, match=words):
        capture(_base(tmp_path, **changes))


@pytest.mark.slow  # a real torch capture
def test_cli_capture_ingests_and_summary_shows_the_variant(tmp_path, capsys):
    db = tmp_path / "cli.duckdb"
    args = ["capture", "--variants", "naive,sdpa_cudnn", "--batch", "1", "--heads", "2", "--seq", "16",
            "--head-dim", "8", "--dtype", "fp32", "--device", "cpu", "--timing-calls", "2",
            "--out-dir", str(tmp_path / "t"), "--db", str(db)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "skipped   sdpa_cudnn" in out and "captured 2 of 4 runs" in out
    assert main(["summary", "--db", str(db)]) == 0
    assert capsys.readouterr().out.count(" naive ") == 2


def test_cli_capture_of_nothing_runnable_fails(tmp_path, capsys):
    args = ["capture", "--variants", "sdpa_cudnn", "--device", "cpu", "--out-dir", str(tmp_path), "--no-ingest"]
    assert main(args) == 1
    assert "cuDNN attention needs CUDA" in capsys.readouterr().out


def test_cli_variants_json(capsys):
    assert main(["variants", "--json", "--device", "cpu"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(VARIANTS)
    assert {r["name"] for r in rows if not r["available"]} == GPU_ONLY


@pytest.mark.slow  # a real torch capture in a fresh process
def test_an_isolated_capture_runs_each_cold_shape_first_in_a_fresh_process_with_empty_caches(tmp_path):
    reports = []
    outcomes = capture(_base(tmp_path, variants=("naive", "sdpa_cudnn")), progress=lambda *r: reports.append(r))
    cold, warm = (next(o for o in outcomes if o.variant == "naive" and o.cold is c) for c in (True, False))
    process = cold.meta["process"]
    assert process["fresh"] and process["pid"] != __import__("os").getpid()
    assert set(process["caches"]) == {"cuda_compute_cache", "torchinductor", "triton", "flashinfer"}
    assert not any(c["warm"] for c in process["caches"].values())
    assert cold.meta["ran_before"] == [] and warm.meta["process"]["pid"] == process["pid"]
    assert cold.meta["ok"] and warm.meta["ok"]
    assert [o.skipped for o in outcomes if o.variant == "sdpa_cudnn"] == ["cuDNN attention needs CUDA"] * 2
    assert any("starting a fresh process" in message for _, _, message in reports)
    assert process["preloaded"] == ["torch._dynamo", "torch._inductor.compile_fx"]
    assert process["cuda_initialized_before_turn"] is False
    fractions = [f for _, f, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


@pytest.mark.slow  # a real torch capture
def test_captures_record_the_shapes_the_cost_model_reads(captured):
    import json

    from profiler.analysis.model import costmodel
    _, _, store, _ = captured
    row = store.query("SELECT t.batch, t.heads, t.seq_len, t.head_dim, o.input_dims, o.input_types "
                      "FROM ops o JOIN traces t USING (run_id) WHERE t.variant = 'naive' AND NOT t.cold "
                      "AND o.name = 'aten::bmm' ORDER BY o.ts_ns LIMIT 1").iloc[0]
    b, h, n, d = (int(row[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
    assert json.loads(row["input_dims"]) == [[b * h, n, d], [b * h, d, n]]      # Q @ K^T
    cost = costmodel.op_cost("aten::bmm", json.loads(row["input_dims"]), json.loads(row["input_types"]), [])
    assert cost.flops == 2 * b * h * n * n * d


def test_a_worker_preloads_its_variants_modules_and_leaves_failures_to_the_build():
    import sys

    from profiler.capture import worker
    sys.modules.pop("colorsys", None)
    assert worker.preload_modules(["colorsys", "no_such_module_here", "json"]) == ["colorsys", "json"]
    assert "colorsys" in sys.modules
    assert VARIANTS["naive_compiled"].preload
    assert VARIANTS["flashinfer_fa3"].preload == VARIANTS["flash_attn_4"].preload == ()  # their imports initialise CUDA
    assert VARIANTS["naive"].preload == ()


@pytest.mark.slow  # a real torch capture
def test_a_warm_run_warms_up_for_warmup_s_one_call_at_a_time(tmp_path):
    """On an H200, 3 warm-up calls left the first repeat of a decode 8-14 % slower under the profiler
    than in graph replay right after; 0.1 s of calls brought every repeat within 2 %."""
    calls = []

    def counting(setting):
        def attend(q, k, v):
            calls.append(1)
            return naive_attention(q, k, v, causal=setting.causal)
        return attend

    variant = Variant("counting", "naive, counting its calls", (), counting)
    quick = _base(tmp_path, variants=("naive",), cold=False, warmup_s=0.0)  # the extra variant runs too
    capture(quick, extra_variants=(variant,))
    plain = len(calls)
    calls.clear()
    outcomes = capture(replace(quick, warmup_s=0.3, out_dir=tmp_path / "long"), extra_variants=(variant,))
    assert {o.variant: o.meta["warmup_s"] for o in outcomes} == {"naive": 0.3, "counting": 0.3}
    assert len(calls) > plain + 3  # calls of well under a millisecond: many more than the 3 in 0.3 s
