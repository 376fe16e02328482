"""Compare's aligned kernel sequence for single-kernel variants (issue 40): each strip's cell is
labelled with its kernel's short name, not left a blank block. Real H200 samples (sdpa_flash and
sdpa_cudnn at the default shape: one attention kernel per step), the count checked against the raw
trace JSON."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa

from profiler.storage.store import Store
from tests.pages.conftest import ROOT
from tests.conftest import ingest_all

DEFAULT = ROOT / "data" / "samples" / "default"
FILES = [DEFAULT / f"{v}_b8_h16_s1024_d64_bf16_causal_warm.json.gz" for v in ("sdpa_flash", "sdpa_cudnn")]


GPU_WORK = ("kernel", "gpu_memset", "gpu_memcpy")


def _raw_gpu_work_per_step(path) -> tuple[float, float, set[str]]:
    """(kernels per step, GPU work items per step, their names) from the raw JSON."""
    events = json.load(gzip.open(path))["traceEvents"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    work = [e for e in events if e.get("cat") in GPU_WORK]
    kernels = [e for e in work if e["cat"] == "kernel"]
    return len(kernels) / len(steps), len(work) / len(steps), {e["name"] for e in work}


def _build(path):
    store = Store(path)
    return ingest_all(store, FILES, source="captured")


def test_single_kernel_variants_show_named_cells(pages, tmp_path, monkeypatch, template_store):
    db = tmp_path / "pair.duckdb"
    ids = template_store("single-kernel-pair", _build, db)
    monkeypatch.setenv("PROFILER_DB", str(db))
    expected = [_raw_gpu_work_per_step(f) for f in FILES]
    assert [k for k, _, _ in expected] == [1.0, 1.0]       # one kernel per step in each raw trace
    at = pages.open("compare", runs=",".join(ids))
    pages.assert_clean(at)
    chart = next(c for c in at.get("vega_lite_chart") if "one iteration, aligned" in c.proto.spec)
    spec = json.loads(chart.proto.spec)
    labels = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert labels and labels[0]["encoding"]["text"]["field"] == "short"
    rows = [r for d in chart.proto.datasets for r in pa.ipc.open_stream(d.data.data).read_all().to_pylist()]
    labels_of = {r["run"] for r in rows}
    assert len(labels_of) == 2
    flash, cudnn = expected
    # one cell per item of GPU work of one step (flash: a memset and its kernel; cuDNN: its kernel)
    assert len(rows) == flash[1] + cudnn[1]
    for row in rows:
        assert row["name"] in flash[2] | cudnn[2]
        assert row["short"] and row["short"].split("<")[0].rstrip("…") in row["name"]   # its short name
