"""Graph mode's command line and config (issue 37): `capture --cuda-graph` is refused where it cannot
run, with one sentence; the flag survives the trip to a worker process; the capture-side trace's
name. The capture itself needs a GPU: tests/gpu/test_graph_capture_gpu.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from profiler.cli.main import main

torch = pytest.importorskip("torch")


def test_graph_mode_on_the_cpu_or_in_train_is_refused(tmp_path, capsys):
    assert main(["capture", "--cuda-graph", "--device", "cpu", "--variants", "sdpa_math", "--no-ingest",
                 "--out-dir", str(tmp_path)]) == 2  # a usage error, as the other bad options
    assert "--cuda-graph needs --device cuda and a forward mode" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_flag_reaches_the_worker_and_the_capture_trace_sits_beside_the_replay():
    from profiler.capture import graphed, worker
    from profiler.capture.config import CaptureConfig

    config = CaptureConfig(variants=("sdpa_math",), device="cpu", cuda_graph=True)
    assert worker.config_from_json(worker.config_to_json(config)).cuda_graph is True
    replay = Path("/x/sdpa_flash_b8_warm_20260101T000000Z.json.gz")
    assert graphed.capture_path(replay).name == "sdpa_flash_b8_warm_20260101T000000Z.capture.json.gz"
