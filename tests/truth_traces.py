"""Traces for the issue 21 tests (classes 3-5): the real ones used, and fixtures built from
the kernel names, shapes and devices the issue names."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES

MI250 = SHARED_TRACES / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
QWEN = SHARED_TRACES / "tracelens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
V100 = SHARED_TRACES / "hta__ns_resolution__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
SAMPLE_RUNS = ("flashinfer_fa2_b8_h16_s1024_d64_bf16_causal_warm", "flashinfer_fa3_b8_h16_s1024_d64_bf16_causal_cold",
               "flash_attn_4_b8_h16_s1024_d64_bf16_causal_warm", "flex_b8_h16_s1024_d64_bf16_causal_cold")


def sample_store(folder: Path) -> tuple[Store, dict]:
    store = Store(folder / "samples.duckdb")
    return store, {n: store.ingest(SAMPLES / "default" / f"{n}.json.gz").run_id for n in SAMPLE_RUNS}


def real_store(folder: Path) -> tuple[Store, dict]:
    store = Store(folder / "real.duckdb")
    return store, {p.name: store.ingest(p).run_id for p in (MI250, QWEN, V100) if p.is_file()}


def raw(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    return data if isinstance(data, dict) else {"traceEvents": data}


def event(cat, name, ts, dur, ext=None, corr=None, **args):
    out = {"ph": "X", "cat": cat, "name": name, "pid": 1 if cat != "kernel" else 0, "tid": 1 if cat != "kernel" else 7,
           "ts": ts, "dur": dur, "args": dict(args)}
    if ext is not None:
        out["args"]["External id"] = ext
    if corr is not None:
        out["args"]["correlation"] = corr
    if cat == "kernel":
        out["args"].update({"device": 0, "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1]})
    return out


def op(ext, name, ts, kernel, kernel_dur, dims=None, types=None):
    """A CPU op launching one kernel: op, launch call, kernel."""
    args = {} if dims is None else {"Input Dims": dims, "Input type": types}
    return [event("cpu_op", name, ts, 10, ext, **args), event("cuda_runtime", "cudaLaunchKernel", ts + 1, 2, ext, ext, cbid=211),
            event("kernel", kernel, ts + 20, kernel_dur, ext, ext)]


def write(tmp_path, name, events, device=None) -> Path:
    path = tmp_path / name
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000,
            "args": {"External id": 999}}
    body = {"traceEvents": [step, *events], **({"deviceProperties": [device]} if device else {})}
    path.write_text(json.dumps(body))
    return path


B200 = {"id": 0, "name": "NVIDIA B200", "totalGlobalMem": 191_503_974_400, "computeMajor": 10, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "numSms": 148, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448,
        "sharedMemPerMultiprocessor": 233472}
FMHA = "fmhaSm100aKernel_QkvBfloat16OBfloat16H64PagedKvCausalP32VarSeqQ128Kv128PersistentContext"
BMM = "bmm_MxE2m1_MxE2m1_Bfloat16_t128x256x256u2_s4_et128x64_m256x256x64_c2x1x1_rM_TNT_bN_ieee"

