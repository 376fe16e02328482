""""What does moving to the H200 buy for decode?": the H100 and H200 samples' decode runs at a
32k KV cache ranked together (`rank --compare-gpus`), each GPU's measured ceilings kept with
`ceilings FILE`, every figure checked against the raw trace JSON and the ceilings' own files."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = sorted([*(DATA / "samples_h100" / "decode_sweep").glob("*L32768*.json.gz"),
                 *(DATA / "samples_H200" / "decode_sweep").glob("*L32768*.json.gz")])
CEILINGS = {"NVIDIA H100 80GB HBM3": DATA / "samples_h100" / "ceilings_2.json",
            "NVIDIA H200": DATA / "samples_H200" / "measure" / "ceilings_2.json"}


def _raw(path: Path) -> tuple[str, str, float]:
    """(variant, GPU, GPU µs per call): kernels, copies and sets over the profiled steps, one call each."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    gpu = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    device = next(d["name"] for d in doc["deviceProperties"])
    return doc["attention_run"]["variant"], device, gpu / len(steps)


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("move") / "store.duckdb")
    assert len(TRACES) == 4
    assert main(["ingest", "--db", db, *map(str, TRACES)]) == 0
    assert main(["ceilings", "--db", db, *map(str, CEILINGS.values())]) == 0
    return db


def _rank(db, capsys, *extra) -> dict:
    capsys.readouterr()
    assert main(["rank", "--db", db, "--kv-len", "32768", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_both_gpus_ranked_together_with_the_raw_traces_times(ranked, capsys):
    got = _rank(ranked, capsys, "--compare-gpus", "--json")
    rows = got["runs"]
    assert len(rows) == 4 and [r["rank"] for r in rows] == [1, 2, 3, 4]   # the same kernels on another GPU: a rival
    assert not any(r["same_kernels_as"] for r in rows)
    raw = {(v, d): us for v, d, us in map(_raw, TRACES)}
    for r in rows:
        assert r["label"].endswith(" on " + r["device"])                     # each row names its GPU
        assert r["us_per_call"] == pytest.approx(raw[(r["variant"], r["device"])], rel=1e-6)
    assert "NVIDIA H100 80GB HBM3" in got["set"] and "NVIDIA H200" in got["set"]
    h200 = {r["variant"]: r for r in rows if r["device"] == "NVIDIA H200"}
    h100 = {r["variant"]: r for r in rows if r["device"] != "NVIDIA H200"}
    for variant in ("sdpa_cudnn", "sdpa_flash"):                             # what the move buys: ~1.4x
        assert h100[variant]["us_per_call"] / h200[variant]["us_per_call"] == pytest.approx(
            raw[(variant, "NVIDIA H100 80GB HBM3")] / raw[(variant, "NVIDIA H200")])
        assert h100[variant]["us_per_call"] / h200[variant]["us_per_call"] > 1.3
    assert rows[0]["device"] == "NVIDIA H200"


def test_each_row_is_rated_against_its_own_gpus_measured_bandwidth(ranked, capsys):
    rows = _rank(ranked, capsys, "--compare-gpus", "--json")["runs"]
    for r in rows:
        measured = json.loads(CEILINGS[r["device"]].read_text())
        memory = max(c["value"] for c in measured["ceilings"] if c["what"] in ("hbm_read", "hbm_copy"))
        assert r["roof_bound"] == "memory"
        share = 100 * r["tbps"] / memory
        if share <= 100:
            assert r["pct_of_measured_roof"] == pytest.approx(share)
            assert r["pct_of_measured_bandwidth"] == pytest.approx(share)
        else:                                            # above what was measured: in doubt, not shown
            assert r["pct_of_measured_roof"] is None


def test_the_text_table_shows_the_measured_column_and_without_compare_gpus_each_gpu_apart(ranked, capsys):
    capsys.readouterr()
    assert main(["rank", "--db", ranked, "--kv-len", "32768", "--compare-gpus"]) == 0
    out = capsys.readouterr().out
    assert "% meas" in out and out.count(" on NVIDIA H") >= 4
    apart = _rank(ranked, capsys, "--json")
    assert len(apart["sets"]) == 2 and all(len(s["runs"]) == 2 for s in apart["sets"])
    assert all(" on NVIDIA" not in r["label"] for s in apart["sets"] for r in s["runs"])


def test_ceilings_lists_what_is_kept_and_refuses_what_is_not_a_measurement(ranked, capsys, tmp_path):
    capsys.readouterr()
    assert main(["ceilings", "--db", ranked]) == 0
    out = capsys.readouterr().out
    for gpu, path in CEILINGS.items():
        assert gpu in out
        bf16 = next(c["value"] for c in json.loads(path.read_text())["ceilings"] if c["what"] == "gemm_bf16")
        assert f"{bf16:10,.2f} TFLOP/s" in out
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps({"device": "cpu", "gpu_name": "CPU x86_64", "stack": "torch", "ceilings": []}))
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"device": "cuda", "gpu_name": "X"}))
    text = tmp_path / "notes.txt"
    text.write_text("first run:")
    assert main(["ceilings", "--db", ranked, str(cpu), str(partial), str(text), str(tmp_path / "none.json")]) == 1
    out = capsys.readouterr().out
    assert f"FAILED  {cpu}: ceilings measured on CPU x86_64 are not a GPU's: not kept" in out
    assert f"FAILED  {partial}: not a ceilings measurement: it has no stack, ceilings" in out
    assert f"FAILED  {text}: not a ceilings measurement: not JSON" in out
    assert f"FAILED  {tmp_path / 'none.json'}: no such file" in out
    assert main(["ceilings", "--db", ranked]) == 0 and "NVIDIA H200" in capsys.readouterr().out   # still kept
