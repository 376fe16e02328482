"""`rank` and `check` on the H200 samples: the order and the margins are computed again from the
trace JSON (kernel time of each ProfilerStep, averaged over the steps), independently of the store."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store
from tests import raw_trace

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "data" / "samples" / "default"
VARIANTS = ("naive", "sdpa_flash", "sdpa_cudnn", "flash_attn_4")


def _trace(variant: str, kind: str = "warm") -> Path:
    return DEFAULT / f"{variant}_b8_h16_s1024_d64_bf16_causal_{kind}.json.gz"


def _kernel_us_per_step(variant: str, cats=("kernel",)) -> float:
    """Kernel time (with `cats`, of those GPU events) inside the ProfilerStep windows over the number
    of steps, from the raw JSON."""
    return raw_trace.us_per_step(raw_trace.load(_trace(variant))["traceEvents"], cats, inside_steps=True)


def _gpu_us_per_step(variant: str) -> float:
    """The GPU time of a step: its kernels, copies and sets (one stream: none overlap)."""
    return _kernel_us_per_step(variant, raw_trace.GPU_WORK)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("rank") / "store.duckdb")
    ids = {v: store.ingest(_trace(v), name=v).run_id for v in VARIANTS}
    ids["naive_cold"] = store.ingest(_trace("naive", "cold"), name="naive cold").run_id
    return store, ids


def test_rank_orders_any_number_of_runs_by_time_per_call(store, capsys):
    store, ids = store
    assert main(["rank", *(ids[v] for v in VARIANTS), "--json", "--db", str(store.path)]) == 0
    got = json.loads(capsys.readouterr().out)
    truth = sorted(VARIANTS, key=_gpu_us_per_step)
    assert [r["run_id"] for r in got["runs"]] == [ids[v] for v in truth]
    assert [r["rank"] for r in got["runs"]] == [1, 2, 3, 4]
    for row, variant in zip(got["runs"], truth):
        assert row["gpu_us_per_call"] == pytest.approx(_gpu_us_per_step(variant), rel=1e-9)
        assert row["kernel_us_per_call"] == pytest.approx(_kernel_us_per_step(variant), rel=1e-9)
        assert row["times_fastest"] == pytest.approx(_gpu_us_per_step(variant) / _gpu_us_per_step(truth[0]))
    naive = next(r for r in got["runs"] if r["run_id"] == ids["naive"])
    with gzip.open(_trace("naive", "cold"), "rt") as f:
        assert naive["cold_us"] == json.load(f)["attention_run"]["wall_us_per_call"]   # its cold run's first call
    assert naive["roof_bound"] == "memory" and got["runs"][0]["roof_bound"] == "compute"
    first, second = truth[0], truth[1]
    ratio = _gpu_us_per_step(second) / _gpu_us_per_step(first)
    assert got["sentence"].startswith(f"{first} bf16 L=1024 · {ids[first][:6]} is fastest at "
                                      f"{_gpu_us_per_step(first):,.1f} µs per call, {ratio:.2f}× faster than {second} ")
    assert got["evidence"]["winner"] == ids[first] and got["evidence"]["cause"] is not None


def test_rank_names_the_architecture_when_it_differs(store, capsys):
    store, ids = store
    assert main(["rank", ids["sdpa_flash"], ids["sdpa_cudnn"], "--db", str(store.path)]) == 0
    sentence = capsys.readouterr().out.splitlines()[0]
    assert sentence.startswith("sdpa_cudnn bf16 L=1024 · ") and " is fastest " in sentence
    assert "Why:" in sentence and "sm90" in sentence and "sm80" in sentence


@pytest.mark.slow  # a subprocess
def test_check_fails_a_regression_and_passes_an_improvement(store):
    store, ids = store
    flash, naive = ids["sdpa_flash"], ids["naive"]
    slower = 100 * (_gpu_us_per_step("naive") / _gpu_us_per_step("sdpa_flash") - 1)
    fail = subprocess.run([sys.executable, "-m", "profiler", "check", flash, naive, "--db", str(store.path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert fail.returncode == 1
    lines = fail.stdout.splitlines()
    assert lines[0] == (f"FAIL: {naive} is {slower:.1f}% slower than {flash} ({_gpu_us_per_step('naive'):,.1f} vs "
                        f"{_gpu_us_per_step('sdpa_flash'):,.1f} µs per call; at most 5% slower is allowed)")
    assert lines[1].startswith("  ratio ") and "one run a side: the noise is not measured" in lines[1]
    assert lines[2].startswith("  grew:") and "masked_fill" in fail.stdout   # naive's out-of-place mask
    ok = subprocess.run([sys.executable, "-m", "profiler", "check", naive, flash, "--max-slowdown", "2%", "--json",
                         "--db", str(store.path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0
    got = json.loads(ok.stdout)
    assert got["failed"] is False and got["slowdown_pct"] < 0 and got["max_slowdown_pct"] == 2.0


def test_check_bounds_are_percentages_and_a_tiny_change_passes(store):
    store, ids = store
    assert main(["check", ids["naive"], ids["naive_cold"], "--max-slowdown", "5%", "--db", str(store.path)]) == 0
    with pytest.raises(SystemExit):
        main(["check", ids["naive"], ids["naive"], "--max-slowdown", "fast", "--db", str(store.path)])
    assert main(["check", "no-such-run", ids["naive"], "--db", str(store.path)]) == 2   # refused: cannot judge


def test_the_out_of_place_masks_memcpy_counts_in_the_ranking(tmp_path, capsys):
    """naive and naive_inplace launch the same kernels; naive's out-of-place masked_fill adds a
    full-size Memcpy. Ranked by kernels alone they tie (943 and 944 µs); by their GPU time per call,
    copies included, the in-place path wins by the Memcpy, as the raw traces say."""
    store = Store(tmp_path / "s.duckdb")
    ids = {v: store.ingest(_trace(v), name=v).run_id for v in ("naive", "naive_inplace")}
    assert main(["rank", ids["naive"], ids["naive_inplace"], "--json", "--db", str(store.path)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in got["runs"]] == [ids["naive_inplace"], ids["naive"]]
    copy_us = _kernel_us_per_step("naive", ("gpu_memcpy",))
    assert copy_us > 100  # the 256 MiB score matrix copied once a call
    margin = _gpu_us_per_step("naive") / _gpu_us_per_step("naive_inplace")
    assert got["runs"][1]["times_fastest"] == pytest.approx(margin, rel=1e-6) and margin > 1.1
    assert abs(_kernel_us_per_step("naive") / _kernel_us_per_step("naive_inplace") - 1) < 0.01
