"""`python -m profiler compare`: findings and aligned kernel diff, as text and JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"
ROOT = Path(__file__).resolve().parent.parent


def _math_and_cudnn(path) -> tuple[str, str]:
    store = Store(path)
    return store.ingest(FIXTURES / "run_math.json").run_id, store.ingest(FIXTURES / "run_cudnn.json").run_id


@pytest.fixture
def store_runs(db_path, template_store):
    """(store file, math run id, cuDNN run id): a copy of a store ingested once per test process."""
    math, cudnn = template_store("math-and-cudnn-uploaded", _math_and_cudnn, db_path)
    return db_path, math, cudnn


def test_json_output(store_runs, capsys):
    db, math, cudnn = store_runs
    assert main(["compare", math[:6], cudnn, "--json", "--db", str(db)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["run_a"], report["run_b"]) == (math, cudnn)
    assert any("32.0 MiB" in f for f in report["findings"])
    assert len(report["evidence"]) == len(report["findings"])
    kernels = {k["family"]: k for k in report["kernels"]}
    sdpa = kernels["cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"]
    assert (sdpa["presence"], sdpa["calls_a"], sdpa["calls_b"], sdpa["us_b"]) == ("only in b", 0, 1, 80)
    assert sdpa["tensor_cores"] == "tensor core" and sdpa["precision"] == "fp16/bf16"
    assert sdpa["occupancy_reported_pct"] == {"a": None, "b": 0.0}
    assert sdpa["occupancy_theoretical_pct"]["b"] == 18.75
    assert sdpa["occupancy_limiter"]["b"] == "registers + shared memory"
    gemm = kernels["sm80_xmma_gemm_f32f32_f32f32_f32_nn_n"]
    assert (gemm["tensor_cores"], gemm["calls_a"], gemm["us_a"]) == ("CUDA core", 2, 16)
    assert kernels["Memcpy DtoD"]["tensor_cores"] is None
    statuses = [slot["status"] for slot in report["alignment"]]
    assert statuses == ["only in a", "only in a", "replaced", "replaced"]


def test_text_output(store_runs, capsys):
    db, math, cudnn = store_runs
    assert main(["compare", math, cudnn, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Findings:" in out and "is CPU-bound: in its 200.0 µs iteration" in out
    assert "Kernels per iteration" in out and "Iteration 0 aligned by kernel family" in out


def test_unknown_and_same_run_are_clear_errors(store_runs, capsys):
    db, math, _ = store_runs
    assert main(["compare", "zzz", math, "--db", str(db)]) == 2
    assert "no run 'zzz' in the store" in capsys.readouterr().err
    assert main(["compare", math, math, "--db", str(db)]) == 2
    assert "compare needs two different runs" in capsys.readouterr().err


@pytest.mark.slow  # a subprocess
def test_module_entry_point_without_traceback(store_runs):
    db, math, cudnn = store_runs
    env = dict(os.environ, PROFILER_DB=str(db))
    ok = subprocess.run([sys.executable, "-m", "profiler", "compare", math, cudnn, "--json"],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["run_b"] == cudnn
    bad = subprocess.run([sys.executable, "-m", "profiler", "compare", math[:1], "nope"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
