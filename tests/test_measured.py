"""Measured, not assumed: ceilings measured per GPU and stack (the code path runs on the CPU at tiny
sizes and never claims a GPU's numbers), rates against them, the measurement record of a captured
run (without NVML it says so), and the warnings when compared runs were measured differently.

Runs with records are the shipped H200 samples with a record written into their JSON here, so
each expected warning follows from the record the test wrote, not from the code under test.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from profiler.cli.main import main
from profiler.errors import StoreError
from profiler.storage import ceilings as kept
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "default" / "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.json.gz"


# ── ceilings ────────────────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def cpu_measured():
    from profiler.capture import ceilings

    return ceilings.measure("cpu", shapes=((64, 64, 64), (32, 128, 64)), hbm_bytes=2**20, calls=2, repeats=2)


def test_on_the_cpu_the_ceilings_say_cpu_and_skip_fp8(cpu_measured):
    m = cpu_measured
    assert m.device == "cpu" and m.gpu_name.startswith("CPU") and "torch" in m.stack
    whats = {c.what: c for c in m.ceilings}
    assert {"gemm_bf16", "hbm_read", "hbm_copy"} <= set(whats) and "gemm_fp8" in m.skipped
    for c in m.ceilings:
        points = c.detail["per_point"]
        assert c.value == max(p["median"] for p in points) > 0     # sustained: the median loop
        assert all(p["best"] >= p["median"] >= p["worst"] > 0 for p in points)
    copy = whats["hbm_copy"].detail["per_point"][0]
    assert copy["moved"] == 2 * copy["bytes"] == 2 * 2**20        # a copy reads and writes


def test_a_cpu_measurement_is_never_kept_as_a_gpus(cpu_measured, tmp_path):
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(StoreError, match="not a GPU's: not kept"):
        kept.keep(store, cpu_measured.to_json())
    assert kept.latest(store) == {}


def _gpu_measurement(gpu: str = "NVIDIA H200", stack: str = "driver 1; torch 2") -> dict:
    """A measurement as capture.ceilings.measure would return it on a GPU (values chosen here)."""
    def c(what, value, unit):
        return {"what": what, "value": value, "unit": unit, "detail": {"per_point": [{"best": value, "worst": value * 0.98}]}}
    return {"device": "cuda", "gpu_name": gpu, "stack": stack, "skipped": {}, "seconds": 1.0,
            "ceilings": [c("gemm_bf16", 780.0, "TFLOP/s"), c("gemm_fp16", 790.0, "TFLOP/s"),
                         c("hbm_read", 4.1, "TB/s"), c("hbm_copy", 4.3, "TB/s")]}


def test_kept_per_gpu_and_stack_the_latest_stack_read_back(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    assert kept.keep(store, _gpu_measurement(stack="old")) == 4
    assert kept.keep(store, _gpu_measurement(stack="new")) == 4
    assert kept.keep(store, _gpu_measurement(stack="new")) == 4          # measured again: replaced
    assert kept.has(store, "NVIDIA H200", "new") and not kept.has(store, "NVIDIA H100", "new")
    entry = kept.latest(store)["NVIDIA H200"]
    assert entry["stack"] == "new" and entry["gemm_bf16"] == 780.0 and entry["memory"] == 4.3   # the larger
    assert store.query("SELECT count(*) AS n FROM gpu_ceilings")["n"][0] == 8


def test_rates_are_shown_against_the_measured_ceiling_too():
    from profiler.analysis.model import rating

    frame = pd.DataFrame({"run_id": ["a", "b", "c"], "engine": ["tensor core", "CUDA core", "tensor core"],
                          "dtype": ["bf16", "fp32", "bf16"], "tflops": [559.0, 10.0, 900.0], "tbps": [2.0, 4.43, 1.0]})
    entry = {"gemm_bf16": 783.0, "memory": 4.8, "stack": "s"}
    got = rating.against_measured(frame, {"a": entry, "b": entry, "c": entry})
    assert got["pct_of_measured_peak"][0] == pytest.approx(100 * 559 / 783)       # 71 %
    assert np.isnan(got["pct_of_measured_peak"][1])                              # no GEMM ceiling for CUDA cores
    assert got["pct_of_measured_bandwidth"][1] == pytest.approx(100 * 4.43 / 4.8)
    assert np.isnan(got["pct_of_measured_peak"][2])                              # above the measured ceiling: in doubt


def test_the_roofline_draws_the_measured_ceiling(tmp_path):
    from profiler.analysis.reads import roofline

    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(SAMPLE).run_id
    kept.keep(store, _gpu_measurement())
    roof = roofline.roofline_table(store, [run])
    row = roof.iloc[0]
    assert row["measured_tflops"] == 780.0 and row["measured_tbps"] == 4.3
    assert row["pct_of_measured_peak"] == pytest.approx(100 * row["tflops"] / 780.0)
    assert row["pct_of_peak"] < row["pct_of_measured_peak"]                       # the datasheet is higher
    lines = roofline.ceilings(roof)
    measured = lines[lines["ceiling"] == "measured bf16 GEMM"]
    assert measured["tflops"].max() == 780.0
    assert measured["tflops"].min() == pytest.approx(measured["intensity"].min() * 4.3)


# ── the record ──────────────────────────────────────────────────────────────────────────────

def test_a_cpu_record_says_no_gpu_was_sampled():
    from profiler.capture import record

    got = record.build("cpu", None)
    assert got["gpu"]["samples"] == 0 and got["gpu"]["note"].startswith("a CPU run")
    assert got["versions"]["torch"] and got["l2_flushed"] is False and got["other_processes"] == []
    assert record.flush_l2("cpu") is False                   # no L2 of a GPU to evict on the CPU


def test_cold_runs_flush_l2_unless_asked_not_to_and_the_l2_check_does_the_same():
    import argparse

    from profiler.capture import counters
    from profiler.capture.config import CaptureConfig, RunOutcome
    from profiler.cli import capture as capture_cli

    parser = argparse.ArgumentParser()
    capture_cli.register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["capture", "--device", "cpu"]).flush_l2 is True
    assert parser.parse_args(["capture", "--no-flush-l2"]).flush_l2 is False
    assert CaptureConfig().flush_l2 is True
    for flush in (True, False):
        request = counters.request(CaptureConfig(device="cpu", flush_l2=flush), RunOutcome("naive", 1024, True, "x"))
        assert request["flush_l2"] is flush                  # the counted cold call flushes as the run did


def test_without_nvml_or_nvidia_smi_the_sampler_says_so(monkeypatch):
    from profiler.capture import nvml

    monkeypatch.setattr(nvml, "_pynvml", lambda: None)
    monkeypatch.setattr(nvml, "_smi", lambda: None)
    summary = nvml.Sampler(0).start().stop()
    assert summary["samples"] == 0 and summary["note"].startswith("no NVML here")
    assert nvml.other_processes(0) is None and nvml.driver_version() is None


def test_samples_become_min_mean_max_and_throttle_reasons_in_nvmls_words():
    from profiler.capture import nvml

    sampler = nvml.Sampler(0)
    sampler.source = "nvml"
    sampler.samples = [{"t": 0, "sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "power_w": 400, "temp_c": 50, "reasons": 0x0},
                       {"t": 1, "sm_clock_mhz": 1700, "mem_clock_mhz": 3201, "power_w": 700, "temp_c": 60, "reasons": 0x4 | 0x1}]
    got = sampler.summary()
    assert got["sm_clock_mhz"] == {"min": 1700, "mean": 1840, "max": 1980}
    assert got["throttle_reasons"] == ["gpu_idle", "sw_power_cap"] and got["throttled"] and not got["clocks_locked"]


@pytest.mark.slow  # a CPU capture by the command, in a process of its own
def test_a_cpu_capture_writes_its_record_and_measures_no_ceiling(tmp_path):
    done = subprocess.run([sys.executable, "-m", "profiler", "capture", "--device", "cpu", "--no-cold", "--no-isolate",
                           "--variants", "naive", "--batch", "1", "--heads", "1", "--seq", "32", "--timing-calls", "1",
                           "--out-dir", str(tmp_path / "t"), "--db", str(tmp_path / "s.duckdb")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ceilings  not measured: a CPU capture (ceilings are a GPU's)" in done.stdout.splitlines()
    [trace] = list((tmp_path / "t").glob("*.json.gz"))
    with gzip.open(trace, "rt") as f:
        rec = json.load(f)["attention_run"]["record"]
    assert rec["gpu"]["note"].startswith("a CPU run") and rec["versions"]["torch"]
    assert Store(tmp_path / "s.duckdb").query("SELECT count(*) AS n FROM gpu_ceilings")["n"][0] == 0


# ── warnings when runs were measured differently ────────────────────────────────────────────

def _with_record(tmp_path: Path, name: str, sm_mhz: float, torch_version: str, reasons: list[str],
                 others: list | None = None) -> Path:
    with gzip.open(SAMPLE, "rt") as f:
        doc = json.load(f)
    gpu = {"source": "nvml", "samples": 10, "sm_clock_mhz": {"min": sm_mhz, "mean": sm_mhz, "max": sm_mhz},
           "throttle_reasons": reasons, "throttled": "sw_power_cap" in reasons,
           "clocks_locked": "applications_clocks_setting" in reasons}
    doc["attention_run"]["record"] = {"gpu": gpu, "versions": {"torch": torch_version, "cuda": "13.0"},
                                      "l2_flushed": False, "other_processes": others or []}
    doc["attention_run"]["variant_note"] = name   # a different file: a different run id
    path = tmp_path / f"{name}.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def _measured(path) -> dict[str, str]:
    store = Store(path)
    ids = {n: store.ingest(_with_record(path.parent, n, *args), name=n).run_id for n, args in {
        "fast": (1980.0, "2.11.0", []), "slow": (1755.0, "2.10.0", ["sw_power_cap"], [{"pid": 42, "used_mib": 900}]),
        "near": (1950.0, "2.11.0", [])}.items()}
    ids["plain"] = store.ingest(SAMPLE, name="plain").run_id
    return ids


@pytest.fixture
def measured_runs(tmp_path, template_store):
    """(store, {name: run id}): the sample with three measurement records and as it is; a copy of
    a store ingested once per test process."""
    ids = template_store("measured-records", _measured, tmp_path / "s.duckdb")
    return Store(tmp_path / "s.duckdb"), dict(ids)


def test_runs_measured_differently_warn_each_reason(measured_runs):
    from profiler.analysis.findings import conditions

    store, ids = measured_runs
    said = conditions.warnings(store, [ids["fast"], ids["slow"]])
    spread = 100 * (1980 - 1755) / 1755
    assert any(f"({spread:.1f} % apart, more than 5 %)" in s for s in said)
    assert any("was throttled while measured (sw_power_cap)" in s for s in said)
    assert any("other versions of torch" in s and "2.10.0" in s and "2.11.0" in s for s in said)
    assert any("shared the GPU with 1 other process (pid 42)" in s for s in said)
    assert conditions.warnings(store, [ids["fast"], ids["near"]]) == []            # 1.5 % apart: comparable
    assert any("has no measurement record" in s for s in conditions.warnings(store, [ids["fast"], ids["plain"]]))
    assert conditions.warnings(store, [ids["plain"]]) == []                        # no records at all: nothing to say


def test_the_record_table_and_the_timing_check(measured_runs):
    from profiler.analysis.findings import conditions, timings

    store, ids = measured_runs
    table = conditions.record_table(store, [ids["slow"], ids["plain"]]).set_index("run_id")
    assert table.loc[ids["slow"], "sm_clock_mhz"] == 1755.0 and table.loc[ids["slow"], "throttled"]
    assert table.loc[ids["plain"], "sampled"].startswith("no measurement record")
    with gzip.open(SAMPLE, "rt") as f:
        meta = json.load(f)["attention_run"]
    kernel = timings.run_timings(store, [ids["plain"]])["kernel_us_per_call"][0]
    check = conditions.timing_check(store, [ids["plain"]]).iloc[0]
    assert check["kernel_vs_wall_pct"] == pytest.approx(100 * (kernel - meta["wall_us_per_call"]) / meta["wall_us_per_call"])
    assert check["kernel_vs_graph_pct"] == pytest.approx(100 * (kernel - meta["graph_us_per_call"]) / meta["graph_us_per_call"])


def test_compare_rank_and_check_print_the_warnings_on_stderr(measured_runs, capsys):
    store, ids = measured_runs
    for argv in (["compare", ids["fast"], ids["slow"]], ["rank", ids["fast"], ids["slow"]],
                 ["check", ids["fast"], ids["slow"], "--max-slowdown", "50"]):
        main([*argv, "--db", str(store.path)])
        err = capsys.readouterr().err
        assert "warning: The runs ran at different SM clocks" in err and "warning: " in err, argv
