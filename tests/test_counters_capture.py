"""`capture --counters` where counters cannot be read: one line says why and the capture goes on;
how a failed run under ncu is told in one line (from ncu's own messages); and the two ncu runs of
one call joined into one report (checked on the committed H100 exports)."""
from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.capture import counters
from profiler.parse.ncu import METRIC_RUNS, METRICS, read_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_H100 = ROOT / "data" / "samples_h100"


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
    got = counters.collect({"variant": "sdpa_flash"}, tmp_path / "x.ncu.csv", [["m"]])
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


def _export(rows: list[list[str]], keep) -> str:
    """A raw CSV holding the columns of `rows` whose header name `keep` accepts."""
    cols = [i for i, name in enumerate(rows[0]) if keep(name)]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([[r[i] for i in cols] for r in rows])
    return out.getvalue()


@pytest.mark.parametrize("sample", sorted(SAMPLES_H100.rglob("*.ncu.csv"))[:6], ids=lambda p: p.name[:40])
def test_two_runs_of_metrics_join_into_the_report_one_run_gives(sample):
    """A real H100 export cut as ncu's two runs would write it (the first run's metrics and every
    other column; the identity columns and the second run's metrics), joined: the same report."""
    rows = list(csv.reader(io.StringIO(sample.read_text())))
    second = set(METRIC_RUNS[1])
    ident = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
             "Grid Size", "Device", "CC"}
    joined, why = counters.join_reports(_export(rows, lambda n: n not in second),
                                        _export(rows, lambda n: n in ident or n in second))
    assert why is None
    whole, parts = read_report(sample.read_bytes(), sample.name), read_report(joined.encode(), sample.name)
    assert len(parts.kernels) == len(whole.kernels) > 0
    for a, b in zip(whole.kernels, parts.kernels):
        assert (a.name, a.values) == (b.name, b.values)


def test_runs_that_counted_different_kernels_are_not_joined():
    sample = sorted(SAMPLES_H100.rglob("*.ncu.csv"))[0]
    rows = list(csv.reader(io.StringIO(sample.read_text())))
    other = [*rows[:2], *[[*r[:4], "another kernel", *r[5:]] for r in rows[2:]]]
    text, why = counters.join_reports(_export(rows, lambda n: True), _export(other, lambda n: True))
    assert text == "" and why == "the two ncu runs over the same call counted different kernels"


def test_the_metric_runs_ask_for_every_metric_once_occupancy_in_a_run_of_its_own():
    asked = [m for run in METRIC_RUNS for m in run]
    assert sorted(asked) == sorted(METRICS.values()) and len(set(asked)) == len(asked)
    assert METRICS["occupancy_achieved_pct"] in METRIC_RUNS[0] and len(METRIC_RUNS[0]) == 4
