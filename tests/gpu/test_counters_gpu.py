"""`capture --counters` on a CUDA GPU with Nsight Compute (deselected without a GPU, as in CI).

One small capture of three variants with counters, through the command line as a user runs it
(trace files only: a GPU machine may lack duckdb). Each warm run gets a raw CSV beside its trace;
the CSV is read back, every counted kernel is matched to a launch of the trace by the same code
that stores them, and the counters obey what the hardware allows.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.capture.counters import csv_beside, find_ncu
from profiler.parse.ncu import read_report
from profiler.storage.counters import match

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("sdpa_flash", "sdpa_cudnn", "naive")
# sm__warps_active is sampled: on the H200 a launch whose theoretical occupancy is 12.5 % read
# 12.58 % achieved (cuBLAS's sm80 fp32 GEMM, 2026-12-02); more than this above is a wrong join
SAMPLING_SLACK_PCT = 1.0


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    if find_ncu() is None:
        pytest.fail("Nsight Compute (ncu) is not installed on this GPU machine")
    out = tmp_path_factory.mktemp("counted")
    run = subprocess.run([sys.executable, "-m", "profiler", "capture", "--counters", "--no-ingest", "--no-cold",
                          "--variants", ",".join(VARIANTS), "--batch", "2", "--heads", "4", "--seq", "512",
                          "--out-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    return out, run.stdout


def _launches(trace: Path) -> list[tuple]:
    with gzip.open(trace, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    return sorted((e["name"], int(e["ts"] * 1000), *e["args"]["grid"], *e["args"]["block"]) for e in events)


def test_every_warm_run_has_counters_that_match_its_trace(captured):
    out, stdout = captured
    traces = sorted(out.glob("*_warm*.json.gz"))
    assert {t.name.split("_b2_")[0] for t in traces} == set(VARIANTS)
    for trace in traces:
        report = read_report(csv_beside(trace).read_bytes(), csv_beside(trace).name)
        pairs, unmatched = match(report.kernels, _launches(trace))
        assert not unmatched and len(pairs) == len(report.kernels) >= 1, trace.name
    assert stdout.count("s under ncu (not in the run's timings)") == len(VARIANTS)


def test_achieved_occupancy_never_exceeds_the_theoretical(captured):
    out, _ = captured
    for path in sorted(out.glob("*.ncu.csv")):
        for k in read_report(path.read_bytes(), path.name).kernels:
            achieved, theory = k.values["occupancy_achieved_pct"], k.values["occupancy_theoretical_ncu_pct"]
            assert 0 < achieved <= theory + SAMPLING_SLACK_PCT, (path.name, k.name, achieved, theory)
            assert 0 <= k.values["dram_throughput_pct"] <= 100 and k.values["ncu_duration_ns"] > 0
            assert k.limiter() is not None and k.values["registers_per_thread"] > 0
            assert k.values["local_load_instructions"] >= 0 and k.values["local_store_instructions"] >= 0


def test_flash_keeps_fewer_warps_than_cudnn_and_both_are_limited_by_registers_and_shared_memory(captured):
    out, _ = captured
    flash = _main_kernel(read_report(*_csv(out, "sdpa_flash")))
    cudnn = _main_kernel(read_report(*_csv(out, "sdpa_cudnn")))
    assert "flash_fwd" in flash.name and "cudnn" in cudnn.name
    assert flash.values["occupancy_theoretical_ncu_pct"] < cudnn.values["occupancy_theoretical_ncu_pct"]
    assert flash.limiter()[0] == "registers and shared memory"
    assert cudnn.values["tensor_pipe_active_pct"] > 0 and flash.values["tensor_pipe_active_pct"] > 0


def _main_kernel(report):
    """The kernel with the most time under ncu (at a small shape flash may add a combine kernel)."""
    return max(report.kernels, key=lambda k: k.values["ncu_duration_ns"])


def _csv(out: Path, variant: str) -> tuple[bytes, str]:
    [path] = out.glob(f"{variant}_b2_*.ncu.csv")
    return path.read_bytes(), path.name
