"""Counters for every mode through one path: the request the counted process builds is the trace's
own workload (prefill with GQA, decode against the KV cache, a train step, a window, packed
lengths), the ncu command asks for every metric the import reads, the workload runs on the CPU
at a tiny size, and an export of each mode's kernels joins the shipped H200 sample of that mode.

The expected workload is read from each sample's own "attention_run" object and file name; the
expected join from the trace JSON (its first profiled step's kernels), not from the code under test.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest

from profiler.capture import counters
from profiler.capture.config import CaptureConfig, RunOutcome, run_name
from profiler.parse.ncu import METRICS
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parent.parent
MODES = ROOT / "data" / "samples" / "modes"
NCU_SAMPLE = ROOT / "data" / "samples" / "default" / "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.ncu.csv"
SAMPLES = {
    "decode": MODES / "decode" / "sdpa_flash_decode_b8_h32_kv8_s1_L8192_d128_bf16_causal_warm.json.gz",
    "prefill_gqa": MODES / "prefill_gqa" / "sdpa_auto_b4_h32_kv8_s2048_d128_bf16_causal_warm.json.gz",
    "train": MODES / "train" / "sdpa_flash_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
    "window": MODES / "window" / "flex_b4_h16_s4096_w1024_d64_bf16_causal_warm.json.gz",
    "varlen": MODES / "varlen" / "flex_b1_h16_s4096_v512x1536x1024x1024_d64_bf16_causal_warm.json.gz",
}


def _doc(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _config(meta: dict, device: str = "cpu") -> CaptureConfig:
    """The capture config the sample's metadata describes."""
    return CaptureConfig(variants=(meta["variant"],), batch=meta["batch"], heads=meta["heads"],
                         seq_lens=(meta["seq_len"],), head_dim=meta["head_dim"], dtype=meta["dtype"],
                         causal=meta["causal"], device=device, mode=meta["mode"],
                         kv_heads=meta["kv_heads"] if meta["kv_heads"] != meta["heads"] else None,
                         kv_len=meta["kv_len"] if meta["kv_len"] != meta["seq_len"] else None,
                         window=meta["window"], varlen=tuple(meta["varlen"]) if meta["varlen"] else None,
                         repeats=1)


@pytest.mark.parametrize("mode", SAMPLES)
def test_the_request_is_the_traces_own_workload(mode):
    meta = _doc(SAMPLES[mode])["attention_run"]
    config = _config(meta)
    outcome = RunOutcome(meta["variant"], meta["seq_len"], False, "x")
    assert run_name(config, meta["variant"], meta["seq_len"], False) + ".json.gz" == SAMPLES[mode].name
    request = counters.request(config, outcome)
    assert set(request) == set(counters.REQUEST_KEYS)
    for key in ("variant", "mode", "batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "dtype",
                "causal", "window", "varlen", "warmup_calls"):
        assert request[key] == meta[key], key


def test_the_command_counts_one_call_with_every_metric_read_and_states_its_settings(tmp_path):
    meta = _doc(SAMPLES["decode"])["attention_run"]
    request = counters.request(_config(meta), RunOutcome(meta["variant"], 1, False, "x"))
    cmd = counters.command("/opt/ncu", tmp_path / "r.ncu-rep", request, list(METRICS.values()))
    assert cmd[:3] == ["/opt/ncu", "--profile-from-start", "off"]
    assert cmd[cmd.index("--clock-control") + 1] == "none" and cmd[cmd.index("--cache-control") + 1] == "all"
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(METRICS.values())
    assert cmd[-3:-1] == ["-m", "profiler.capture.counted"] and json.loads(cmd[-1]) == request


@pytest.mark.parametrize("mode, extra", [
    ("prefill", {}), ("prefill", {"kv_heads": 2}), ("decode", {"seq_len": 1, "kv_len": 24, "kv_heads": 2}),
    ("train", {}), ("prefill", {"window": 4}), ("prefill", {"varlen": [8, 8], "batch": 1, "seq_len": 16})])
def test_the_counted_workload_builds_and_runs_on_the_cpu(mode, extra):
    from profiler.capture.counted import workload

    request = {"variant": "naive", "mode": mode, "batch": 2, "heads": 4, "kv_heads": 4, "seq_len": 16,
               "kv_len": None, "head_dim": 8, "dtype": "fp32", "causal": True, "window": None, "varlen": None,
               "warmup_calls": 1, "seed": 0, **extra}
    fn, inputs = workload(request, "cpu")
    out = fn(*inputs)
    assert tuple(out.shape) == (request["batch"], 4, request["seq_len"], 8)
    assert inputs[1].shape[1] == request["kv_heads"] and inputs[1].shape[2] == (request["kv_len"] or request["seq_len"])
    if mode == "train":
        assert len(inputs) == 4 and all(t.grad is not None for t in inputs[:3])


def _first_step_kernels(doc: dict) -> list[dict]:
    """The kernels launched in the trace's first profiled step, in time order (one call)."""
    events = doc["traceEvents"]
    steps = sorted((e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: (e["ts"], e["name"]))
    corr = {e["args"]["correlation"]: e["ts"] for e in events
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    first, second = steps[0]["ts"], (steps[1]["ts"] if len(steps) > 1 else float("inf"))
    return [k for k in kernels if first <= corr.get(k["args"]["correlation"], -1) < second]


def _export_of(kernels: list[dict]) -> bytes:
    """An ncu raw export (the shipped header and units) with one row per kernel, in order."""
    header, units, row = list(csv.reader(NCU_SAMPLE.open(newline="")))[:3]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows([header, units])
    for i, k in enumerate(kernels):
        cells = list(row)
        cells[header.index("ID")] = str(i)
        cells[header.index("Kernel Name")] = k["name"]
        cells[header.index("Grid Size")] = "({}, {}, {})".format(*k["args"]["grid"])
        cells[header.index("Block Size")] = "({}, {}, {})".format(*k["args"]["block"])
        writer.writerow(cells)
    return out.getvalue().encode()


@pytest.mark.parametrize("mode", SAMPLES)
def test_an_export_of_each_modes_call_joins_its_sample(mode, tmp_path):
    doc = _doc(SAMPLES[mode])
    kernels = _first_step_kernels(doc)
    assert kernels, mode
    export = tmp_path / f"{mode}.ncu.csv"
    export.write_bytes(_export_of(kernels))
    store = Store(tmp_path / "s.duckdb")
    run = store.ingest(SAMPLES[mode], name=mode).run_id
    attached = store.attach_counters(run, export)
    assert (attached.matched, attached.unmatched) == (len(kernels), ())
    assert attached.device_check == "same GPU: NVIDIA H200, 132 SMs"
    stored = store.query("SELECT ts_ns, name FROM kernel_counters WHERE run_id = ? ORDER BY report_id", [run])
    assert stored["ts_ns"].tolist() == [round(k["ts"] * 1000) for k in kernels]
    if mode == "train":   # a train step counts its backward too
        assert any("bwd" in k["name"] or "backward" in k["name"] for k in kernels)
