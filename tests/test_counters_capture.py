"""`capture --counters` where counters cannot be read: one line says why and the capture goes on;
and how a failed run under ncu is told in one line (from ncu's own messages)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from profiler.capture import counters

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # a subprocess
def test_on_the_cpu_the_capture_goes_on_without_counters(tmp_path):
    done = subprocess.run([sys.executable, "-m", "profiler", "capture", "--counters", "--device", "cpu",
                           "--no-cold", "--no-isolate", "--variants", "naive", "--batch", "1", "--heads", "1",
                           "--seq", "32", "--timing-calls", "1", "--out-dir", str(tmp_path / "traces"),
                           "--db", str(tmp_path / "store.duckdb")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "counters  not collected: hardware counters need a CUDA GPU; this capture runs on the CPU" in lines
    assert any("ingested" in line and "naive_b1_h1_s32" in line for line in lines)   # the run was still stored
    assert "Traceback" not in done.stdout + done.stderr
    assert not list((tmp_path / "traces").glob("*.ncu.csv"))


def test_without_ncu_the_reason_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv(counters.NCU_ENV, str(tmp_path / "no-such-ncu"))
    assert counters.find_ncu() is None
    assert counters.why_not("cuda").startswith("Nsight Compute (ncu) is not installed here")
    got = counters.collect({"variant": "sdpa_flash"}, tmp_path / "x.ncu.csv", ["m"])
    assert got.csv_path is None and got.reason.startswith("Nsight Compute (ncu) is not installed")


def test_why_a_run_under_ncu_left_no_report_is_one_line():
    def ran(stdout: str, stderr: str = "", code: int = 1) -> str:
        return counters.ncu_failure(subprocess.CompletedProcess([], code, stdout, stderr))
    # ncu's own words on a machine that keeps the counters from users, and when nothing ran
    assert "does not let ncu read the GPU's performance counters" in ran(
        "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
        "to access NVIDIA GPU Performance Counters on the target device 0.\n")
    assert ran("==WARNING== No kernels were profiled.\n", code=0) == "ncu counted no kernel in the call"
    assert ran('{"ok": false, "reason": "RuntimeError: no cuDNN here"}\n') == \
        "the variant did not run: RuntimeError: no cuDNN here"
    assert ran("", "==ERROR== The application returned an error code (1).\n") == \
        "The application returned an error code (1)."


def test_counters_go_beside_their_trace():
    trace = Path("/data/traces/sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm_20261202T074112Z.json.gz")
    assert counters.csv_beside(trace) == trace.with_name(
        "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm_20261202T074112Z.ncu.csv")
