"""Issue 35: the GPU time of one op invocation is the union of the kernels it launched, not their
sum. A hand-written trace: one aten::mm call launches two GEMM kernels on two streams that overlap
for 10 µs (30 µs and 20 µs long): the call's time is 40 µs, checked by hand."""
from __future__ import annotations

import json

import pytest

from profiler.cli import ops
from profiler.storage.store import Store

DEVICE = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000, "computeMajor": 9,
          "computeMinor": 0, "numSms": 132}


def _kernel(stream: int, ts: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": stream,
            "ts": ts, "dur": dur, "args": {"External id": 3, "device": 0, "stream": stream,
                                           "correlation": corr, "grid": [132, 1, 1], "block": [128, 1, 1]}}


def _launch(ts: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": ts,
            "dur": 2.0, "args": {"External id": 3, "cbid": 211, "correlation": corr}}


def _trace() -> bytes:
    mm = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": 1002.0, "dur": 10.0,
          "args": {"External id": 3, "Input Dims": [[512, 512], [512, 512]],
                   "Input type": ["c10::BFloat16", "c10::BFloat16"]}}
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100,
            "ts": 1000.0, "dur": 100.0, "args": {"External id": 1}}
    events = [step, mm, _launch(1003.0, 11), _launch(1006.0, 12),
              _kernel(7, 1020.0, 30.0, 11), _kernel(8, 1040.0, 20.0, 12)]
    return json.dumps({"schemaVersion": 1, "deviceProperties": [DEVICE], "traceEvents": events}).encode()


def test_one_call_is_the_union_of_its_kernels(tmp_path):
    path = tmp_path / "two_streams.json"
    path.write_bytes(_trace())
    db = Store(tmp_path / "store.duckdb")
    rows = [r for r in ops.rows(db, db.ingest(path).run_id, "all") if r["op"] == "aten::mm"]
    assert len(rows) == 1 and rows[0]["calls"] == 1
    assert rows[0]["kernel_us_mean"] == pytest.approx(40.0)  # [1020, 1060): not 30 + 20 = 50


def test_unions_at_absurd_timestamps_are_exact_and_never_recurse():
    """Intervals too far apart to shift into one sorted run (a crafted trace's timestamps) are
    measured per group in exact integers: the same lengths as a brute-force union."""
    import numpy as np

    from profiler.analysis.model.arrays import unions
    groups = np.array([0, 0, 0, 1, 1])
    starts = np.array([-2 ** 61, 0, 5, 2 ** 61, 2 ** 61 + 3])
    ends = np.array([-2 ** 61 + 7, 10, 12, 2 ** 61 + 4, 2 ** 61 + 9])
    assert unions(groups, starts, ends, 2).tolist() == [7 + 12, 9]
