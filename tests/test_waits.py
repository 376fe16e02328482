"""Issue 35, verdicts from who waits for whom, against independent counts over the raw JSON:
DLRM ranks wait in collectives for rank 7 (tests/test_truth_stragglers.py's raw_waits); graph
capture traces are described as captures; FlashAttention-4's training backward is one call per
iteration at its raw rate; a training run's forward rows say "train".
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json

import pytest

from profiler.analysis.findings import job_queries, verdict
from profiler.analysis.reads import run_queries
from profiler.cli import ops
from profiler.cli.main import main as cli_main
from profiler.storage import job_layout
from profiler.storage.jobs import job_ingest
from profiler.storage.store import Store
from tests.conftest import SAMPLES, SHARED_TRACES, trace_params
from tests.test_truth_stragglers import DLRM, raw_waits

CAPTURES = sorted((SHARED_TRACES / "graphs").glob("*/capture/*.json.gz")) if SHARED_TRACES.is_dir() else []
FA4_TRAIN = SAMPLES / "modes" / "train" / "flash_attn_4_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz"


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.delenv(job_layout.JOB_ROOT_ENV, raising=False)
    return Store(tmp_path / "store.duckdb")


def _events(path):
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return [e for e in (data if isinstance(data, list) else data["traceEvents"]) if e.get("ph") == "X"]


@pytest.mark.third_party
@pytest.mark.skipif(len(DLRM) != 7, reason="needs the 7 shared DLRM rank traces")
def test_dlrm_ranks_wait_in_collectives_for_rank_7(db):
    job_ingest.ingest_job(db, [str(p) for p in DLRM], "dlrm", engine="in-process")
    waits = job_queries.rank_waits(db, "dlrm")
    said = verdict.rank_wait_sentences(waits, job_queries.rank_iterations(db, "dlrm"), job_queries.stragglers(waits))
    raw = raw_waits(DLRM)
    late = max(raw, key=lambda r: (raw[r]["caused"], raw[r]["last"], -r))
    assert late == 7 and 7 not in said
    for rank, w in raw.items():
        if rank == late or w["wait"] <= 0:
            continue
        assert "for rank 7, the last to arrive" in said[rank]
        assert f"waits {float(w['wait']):,.1f} µs" in said[rank], said[rank]
    # the job command's report and text say the same sentences (the Job page prints them too:
    # tests/pages/test_job.py)
    report = job_queries.job_report(db, "dlrm")
    assert {w["rank"]: w["sentence"] for w in report["rank_waits"]} == said
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["job", "dlrm", "--db", str(db.path)]) == 0
    for sentence in said.values():
        assert sentence in out.getvalue()


@pytest.mark.third_party
@pytest.mark.parametrize("path", trace_params(CAPTURES, ids=lambda p: p.parent.parent.name))
def test_a_capture_trace_is_described_as_a_capture(db, path):
    captures = sum(1 for e in _events(path) if "begincapture" in str(e.get("name", "")).lower())
    assert captures > 0
    run = run_queries.run_metrics(db, [db.ingest(path).run_id]).iloc[0]
    assert run["bound"] == "capture" and run["capture_calls"] == captures
    text = verdict.bound_sentence(run, "c")
    assert text.startswith("c is a graph capture") and "CPU-bound" not in text


def test_fa4_backward_is_one_call_per_iteration_at_its_raw_rate(db):
    """The raw trace: each iteration's backward is 3 kernels (preprocess, main, postprocess) under
    one op; their time per iteration is the backward's time per call."""
    evs = _events(FA4_TRAIN)
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if str(e["name"]).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")
    bwd = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") == "kernel" and "flash_bwd" in e["name"])
    union, reach = 0.0, float("-inf")  # one call's GPU time: the union of its kernels
    for start, end in bwd:
        union += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    per_iter = union / len(steps)
    rows = ops.rows(db, db.ingest(FA4_TRAIN).run_id, "all")
    (back,) = [r for r in rows if r["flops"] > 0 and abs(r["kernel_us_mean"] - per_iter) < 0.01 * per_iter]
    assert back["calls"] == len(steps)
    assert back["tflops"] == pytest.approx(back["flops"] / (per_iter * 1e-6) / 1e12, rel=0.01)
    assert {r["mode"] for r in rows if r["kind"] == "attention"} == {"train"}


GPU_WAITS = SAMPLES.parent.parent / "tests" / "fixtures" / "gpu_waits"


def test_a_slow_dataloader_is_named_and_counted(db):
    """A real H100 trace (tests/fixtures/gpu_waits/record.py): each step's GPU idles while the host
    sits in the DataLoader's __next__; the idle split matches tests/test_metrics.py's independent
    count and the sentence names the annotation with its time."""
    from tests.test_metrics import independent

    path = GPU_WAITS / "slow_loader.pt.trace.json.gz"
    raw = independent(path)
    run = run_queries.run_metrics(db, [db.ingest(path).run_id]).iloc[0]
    n = len(raw["iterations"])
    want = sum(r["idle_input"] for r in raw["iterations"]) / n / 1e3
    assert raw["bound"] == run["bound"] == "input"
    assert run["idle_input_us_per_iter"] == pytest.approx(want, rel=1e-3)
    assert want > 0.9 * run["gpu_idle_us_per_iter"]
    loader = [e for e in _events(path) if "DataLoader" in str(e["name"]) and e.get("cat") == "user_annotation"]
    assert len(loader) == n
    text = verdict.bound_sentence(run, "loader")
    assert text.startswith("loader is input-bound") and "in the DataLoader (waiting for input)" in text
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__=" in text
    assert f"{run['idle_input_us_per_iter']:,.1f} µs" in text


def test_every_launching_thread_counts(db):
    """A real H100 training step: the forward launches from the main thread, the backward from
    autograd's thread. Both count: the recorded CPU time is the union over both (the independent
    count), launch time a part of it, and the sentence says two threads."""
    from tests.test_metrics import independent

    path = GPU_WAITS / "two_thread_train.pt.trace.json.gz"
    evs = _events(path)
    threads = {e["tid"] for e in evs if str(e.get("cat")).startswith("cuda_") and "aunch" in e["name"]}
    assert len(threads) == 2
    raw = independent(path)
    run_id = db.ingest(path).run_id
    got = run_queries.iteration_metrics(db, [run_id])
    assert [int(v) for v in got["cpu_busy_ns"]] == pytest.approx([r["cpu"] for r in raw["iterations"]], rel=1e-3)
    run = run_queries.run_metrics(db, [run_id]).iloc[0]
    assert run["launching_threads"] == 2
    assert run["launch_api_us_per_iter"] <= run["cpu_busy_us_per_iter"] <= run["wall_us_per_iter"]
    assert raw["bound"] == run["bound"]
    text = verdict.bound_sentence(run, "train")
    assert "2 launching threads" in text or "launches from 2 threads" in text


SDPA_MATH = SAMPLES / "default" / "sdpa_math_b8_h16_s1024_d64_bf16_causal_warm.json.gz"


def _union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _overlap(xs, ys) -> float:
    return sum(max(0.0, min(b, d) - max(a, c)) for a, b in xs for c, d in ys)


def test_sdpa_math_is_cpu_bound_and_says_its_synchronize_time_is_waiting_for_the_gpu(db):
    """The raw trace: per step the host waits ~2,071 µs in cudaDeviceSynchronize while the GPU runs
    the work queued before it; the GPU's idle time falls while the host runs the math path's ops
    (ones, tril, where, mul, matmul), not in the synchronize call. The verdict is 'cpu' and the
    sentence says the synchronize time is waiting for the GPU, with a figure the raw trace bounds."""
    evs = _events(SDPA_MATH)
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if str(e["name"]).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")
    gpu = _union((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    sync = _union((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver")
                  and "Synchronize" in str(e["name"]))
    ops = [(e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") == "cpu_op"]
    waiting = idle = in_ops = 0.0
    for a, b in steps:
        busy = [(max(x, a), min(y, b)) for x, y in gpu if y > a and x < b]
        gaps = [(x, y) for x, y in zip([a] + [e for _, e in busy], [s for s, _ in busy] + [b]) if y > x]
        waiting += _overlap([(max(x, a), min(y, b)) for x, y in sync if y > a and x < b], busy)
        idle += sum(y - x for x, y in gaps)
        in_ops += _overlap(_union((max(x, a), min(y, b)) for x, y in ops if y > a and x < b), gaps)
    n = len(steps)
    assert waiting / n > 1900 and _overlap(sync, gpu) > 0.9 * sum(b - a for a, b in sync)  # waiting for the GPU
    assert in_ops > 0.5 * idle   # the GPU idles while the host runs CPU ops
    run = run_queries.run_metrics(db, [db.ingest(SDPA_MATH).run_id]).iloc[0]
    assert run["bound"] == "cpu"
    text = verdict.bound_sentence(run, "m")
    said = float(text.split("at least ")[1].split(" µs of it while the GPU ran")[0].replace(",", ""))
    assert 0.9 * waiting / n <= said <= waiting / n + 0.1, (said, waiting / n)   # a lower bound, and close
    assert "waiting for the GPU, not a cause of its idle time" in text and "running other CPU ops" in text
